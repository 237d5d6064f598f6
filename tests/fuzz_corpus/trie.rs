//! Replays the trie fuzz corpus (`fuzz/corpus/trie/`) through the same
//! differential check the `trie` fuzz target runs: the trie and the naive
//! reference must agree on every decoded path, without panicking.

#[path = "../../fuzz/cases/trie_case.rs"]
mod trie_case;

use std::path::Path;

#[test]
fn every_trie_corpus_case_agrees_with_the_reference() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/trie");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let result = std::panic::catch_unwind(|| trie_case::check(&trie_case::decode(&bytes)));
        match result {
            Ok(Ok(())) => {}
            Ok(Err(why)) => panic!("{}: {why}", path.display()),
            Err(_) => panic!("panicked on {}", path.display()),
        }
        count += 1;
    }
    assert!(count >= 20, "corpus has only {count} files");
}

#[test]
fn decoding_reads_grants_base_and_paths() {
    // 1 grant: rw, depth 2, names `a`/`ab`; base depth 1 `b`; two paths.
    let case = trie_case::decode(&[1, 1, 2, 0, 1, 1, 3, 0, 1, 0xff, 10]);
    assert_eq!(case.grants.len(), 1);
    assert_eq!(case.grants[0].path, Path::new("/a/ab"));
    assert_eq!(case.base, Path::new("/b"));
    assert_eq!(case.spelled, vec![b"/a".to_vec(), b"..".to_vec()]);
}
