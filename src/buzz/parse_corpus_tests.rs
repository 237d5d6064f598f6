//! Replays the parser fuzz corpus (`fuzz/corpus/parse/`) through
//! `crate::buzz::parse`: every input must give `Ok` or `Err`, never
//! a panic. Runs on the default test thread stack (2 MiB), which is smaller
//! than the main thread the parser is meant for.

use std::path::Path;

#[test]
fn every_corpus_file_parses_or_errors_without_panicking() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/parse");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let source = String::from_utf8_lossy(&bytes);
        let result = std::panic::catch_unwind(|| crate::buzz::parse(&path, &source).map(drop));
        assert!(result.is_ok(), "parser panicked on {}", path.display());
        count += 1;
    }
    assert!(count >= 30, "corpus has only {count} files");
}

#[test]
fn oversized_sources_are_refused() {
    let source = format!("final s = \"{}\";", "x".repeat(16 << 20));
    let err = crate::buzz::parse(Path::new("big.buzz"), &source).unwrap_err();
    assert!(err.message().contains("limit"), "{err}");
}

#[test]
fn a_ten_megabyte_string_literal_parses() {
    let source = format!("final s = \"{}\";", "x".repeat(10 << 20));
    assert!(crate::buzz::parse(Path::new("big.buzz"), &source).is_ok());
}
