//! `magus test`: the report of the spells' `test "name" { }` blocks. The
//! sandbox start-up is `magus run`'s (see `run.rs`); this file only runs
//! the tests and prints one line per test and the closing
//! `N passed, N failed` line.

use super::EXIT_SPELL_FAILED;
use crate::bindings::DiagnosticSink;
use crate::buzz::{BuzzError, Interpreter, TestOutcome};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Runs every test of `spells`; exit status 0 only if all passed.
pub(super) fn run_tests(
    spells: &[(PathBuf, String)],
    interpreter: impl Fn(&Path) -> Interpreter,
    sink: &DiagnosticSink,
) -> i32 {
    // Checked before anything runs (issue #14): one bad spell runs nothing.
    let clean = spells.iter().fold(true, |clean, (file, source)| {
        super::checking::spell_is_clean(&interpreter(file), file, source, sink) && clean
    });
    if !clean {
        say("0 passed, 0 failed (the check found errors; nothing ran)");
        return super::EXIT_CANNOT_RUN;
    }
    let (mut passed, mut failed) = (0usize, 0usize);
    for (file, source) in spells {
        let outcomes = crate::buzz::parse(file, source)
            .and_then(|program| interpreter(file).run_tests(&program));
        match outcomes {
            Ok(outcomes) => {
                for outcome in &outcomes {
                    report(file, outcome, sink);
                }
                let ok = outcomes.iter().filter(|o| o.passed()).count();
                passed += ok;
                failed += outcomes.len() - ok;
            }
            Err(e) => {
                say(&format!("FAIL {} (before its tests ran)", file.display()));
                sink(&e.to_diagnostic());
                failed += 1;
            }
        }
    }
    say(&format!("{passed} passed, {failed} failed"));
    if failed == 0 {
        0
    } else {
        EXIT_SPELL_FAILED
    }
}

/// `ok   file: name`, or `FAIL file: name: file:line:col: message` with the
/// full diagnostic on stderr.
fn report(file: &Path, outcome: &TestOutcome, sink: &DiagnosticSink) {
    match &outcome.failure {
        None => say(&format!("ok   {}: {}", file.display(), outcome.name)),
        Some(error) => {
            say(&format!(
                "FAIL {}: {}: {}",
                file.display(),
                outcome.name,
                located(error)
            ));
            sink(&error.to_diagnostic());
        }
    }
}

fn located(error: &BuzzError) -> String {
    match error.site() {
        Some(site) => format!(
            "{}:{}:{}: {}",
            site.file.display(),
            site.line,
            site.column,
            error.message()
        ),
        None => error.message(),
    }
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}
