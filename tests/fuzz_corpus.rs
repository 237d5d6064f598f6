//! Replays the fuzz corpora (`fuzz/corpus/`) through the fuzz targets' own
//! cases (`fuzz/cases/`), as one test binary with a module per target:
//! `config` (the config loader), `trie` (the trie against its naive
//! reference), `run` (the Buzz parser, checker and interpreter, over the
//! `parse` and `run` corpora) and, with the kernel layer, `proxy` (its
//! request readers).

#[path = "fuzz_corpus/config.rs"]
mod config;
#[cfg(kernel_layer)]
#[path = "fuzz_corpus/proxy.rs"]
mod proxy;
#[path = "fuzz_corpus/run.rs"]
mod run;
#[path = "fuzz_corpus/trie.rs"]
mod trie;
