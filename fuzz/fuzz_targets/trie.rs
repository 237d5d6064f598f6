//! Differential fuzzing of the path trie: arbitrary grants and spelled
//! paths, normalised, must get the same decision from `PathTrie::check` as
//! from the naive `policy::reference::check`, and nothing may panic.
#![no_main]

#[path = "../cases/trie_case.rs"]
mod trie_case;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(why) = trie_case::check(&trie_case::decode(data)) {
        panic!("{why}");
    }
});
