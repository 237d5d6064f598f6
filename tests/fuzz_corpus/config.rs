//! Replays the config fuzz corpus (`fuzz/corpus/config/`) through the same
//! check the `config` fuzz target runs: `parse_config` must load or give a
//! positioned `ConfigError`, never panic.

#[path = "../../fuzz/cases/config_case.rs"]
mod config_case;

use std::path::Path;

#[test]
fn every_config_corpus_file_loads_or_errors_in_place() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/config");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let result = std::panic::catch_unwind(|| config_case::check(&bytes));
        match result {
            Ok(Ok(())) => {}
            Ok(Err(why)) => panic!("{}: {why}", path.display()),
            Err(_) => panic!("the config loader panicked on {}", path.display()),
        }
        count += 1;
    }
    assert!(count >= 50, "corpus has only {count} files");
}
