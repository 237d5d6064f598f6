//! Replays the parser's and the interpreter's fuzz corpora
//! (`fuzz/corpus/parse/`, `fuzz/corpus/run/`) through the same case the
//! `run` fuzz target runs: every program that parses and checks clean runs
//! with no natives and the memory and step budgets on, and must end in a
//! status or a Buzz error, never a panic.

#[path = "../../fuzz/cases/run_case.rs"]
mod run_case;

use run_case::Reached;
use std::path::Path;

/// Each corpus file's path and how far it got.
fn replay(dir: &str) -> Vec<(String, Reached)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            let name = path.display().to_string();
            match std::panic::catch_unwind(|| run_case::run(&bytes)) {
                Ok(reached) => (name, reached),
                Err(_) => panic!("the interpreter panicked on {name}"),
            }
        })
        .collect()
}

#[test]
fn every_parse_corpus_program_runs_or_errors_without_panicking() {
    let reached = replay("fuzz/corpus/parse");
    let ran = reached
        .iter()
        .filter(|(_, r)| matches!(r, Reached::Ran(_)))
        .count();
    // Most of the corpus is the test programs, which check clean and run.
    assert!(ran >= 50, "only {ran} of {} programs ran", reached.len());
}

#[test]
fn every_run_corpus_program_ends_within_its_budgets() {
    let reached = replay("fuzz/corpus/run");
    assert!(
        reached.len() >= 10,
        "corpus has only {} files",
        reached.len()
    );
    for (name, how) in &reached {
        // Each seed runs away (loops, recurses or grows without end), so
        // each must have run and been stopped by a limit.
        let Reached::Ran(Err(error)) = how else {
            panic!("{name} did not run into a limit: {how:?}");
        };
        let limits = [
            "step limit",
            "memory limit",
            "too many fibers",
            "stack",
            "nested",
        ];
        assert!(
            limits.iter().any(|l| error.contains(l)),
            "{name} ended in an error no limit gave: {error}"
        );
    }
}
