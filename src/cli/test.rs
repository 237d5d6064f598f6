//! `magus test`: the report of the spells' `test "name" { }` blocks. The
//! sandbox start-up is `magus run`'s (see `run.rs`); this file only runs
//! the tests (those whose name holds `--filter`'s text, when given) and
//! prints one line per test, paths relative to the workspace, and the
//! closing `N passed, N failed` line.

use super::EXIT_SPELL_FAILED;
use crate::bindings::DiagnosticSink;
use crate::buzz::{test_names, BuzzError, Interpreter, Program, TestOutcome};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Which tests run, and how their files are named.
pub(super) struct TestRun<'a> {
    /// The workspace root, which file names are printed relative to.
    pub workspace: &'a Path,
    /// Only tests whose name contains this text run.
    pub filter: Option<&'a str>,
}

impl TestRun<'_> {
    fn keeps(&self, name: &str) -> bool {
        self.filter.is_none_or(|f| name.contains(f))
    }

    /// `file` relative to the workspace when it lies inside it.
    fn shown(&self, file: &Path) -> String {
        file.strip_prefix(self.workspace)
            .unwrap_or(file)
            .display()
            .to_string()
    }
}

/// What the tests came to.
#[derive(Default)]
struct Count {
    passed: usize,
    failed: usize,
    filtered: usize,
}

/// Runs the tests of `spells` that `run` keeps; exit status 0 only if
/// all passed.
pub(super) fn run_tests(
    spells: &[(PathBuf, String)],
    run: &TestRun<'_>,
    interpreter: impl Fn(&Path) -> Interpreter,
    sink: &DiagnosticSink,
) -> i32 {
    // Checked before anything runs (issue #14): one bad spell runs nothing.
    let clean = spells.iter().fold(true, |clean, (file, source)| {
        crate::sandbox::spell_checker::spell_is_clean(&interpreter(file), file, source, sink)
            && clean
    });
    if !clean {
        say("0 passed, 0 failed (the check found errors; nothing ran)");
        return super::EXIT_CANNOT_RUN;
    }
    let mut count = Count::default();
    for (file, source) in spells {
        match crate::buzz::parse(file, source) {
            Ok(program) => {
                let make = || interpreter(file);
                run_spell(file, &program, run, make, &mut count, sink)
            }
            Err(e) => before_tests(run, file, &e, &mut count, sink),
        }
    }
    closing(run, &count, sink);
    if count.failed == 0 {
        0
    } else {
        EXIT_SPELL_FAILED
    }
}

/// The kept tests of one spell; a spell none of whose tests is kept does
/// not run at all (its top level included).
fn run_spell(
    file: &Path,
    program: &Program,
    run: &TestRun<'_>,
    interpreter: impl FnOnce() -> Interpreter,
    count: &mut Count,
    sink: &DiagnosticSink,
) {
    let (kept, skipped): (Vec<&str>, Vec<&str>) = test_names(program).partition(|n| run.keeps(n));
    count.filtered += skipped.len();
    if kept.is_empty() {
        return;
    }
    match interpreter().run_tests_where(program, |n| run.keeps(n)) {
        Ok(outcomes) => {
            for outcome in &outcomes {
                report(run, file, outcome, sink);
            }
            let ok = outcomes.iter().filter(|o| o.passed()).count();
            count.passed += ok;
            count.failed += outcomes.len() - ok;
        }
        Err(e) => before_tests(run, file, &e, count, sink),
    }
}

fn before_tests(
    run: &TestRun<'_>,
    file: &Path,
    e: &BuzzError,
    count: &mut Count,
    sink: &DiagnosticSink,
) {
    say(&format!("FAIL {} (before its tests ran)", run.shown(file)));
    sink(&e.to_diagnostic());
    count.failed += 1;
}

/// `N passed, N failed`, with `, N filtered out` under `--filter`; a
/// filter that kept nothing is said, since it is most likely a typo.
fn closing(run: &TestRun<'_>, count: &Count, sink: &DiagnosticSink) {
    let Some(filter) = run.filter else {
        say(&format!("{} passed, {} failed", count.passed, count.failed));
        return;
    };
    say(&format!(
        "{} passed, {} failed, {} filtered out",
        count.passed, count.failed, count.filtered
    ));
    if count.passed + count.failed == 0 {
        let d = crate::diag::Diagnostic::warning(format!("no test name contains `{filter}`"))
            .with_help("`--filter TEXT` runs the tests whose name holds TEXT (case matters)");
        sink(&d);
    }
}

/// `ok   file: name`, or `FAIL file: name: file:line:col: message` with the
/// full diagnostic on stderr.
fn report(run: &TestRun<'_>, file: &Path, outcome: &TestOutcome, sink: &DiagnosticSink) {
    match &outcome.failure {
        None => say(&format!("ok   {}: {}", run.shown(file), outcome.name)),
        Some(error) => {
            say(&format!(
                "FAIL {}: {}: {}",
                run.shown(file),
                outcome.name,
                located(run, error)
            ));
            sink(&error.to_diagnostic());
        }
    }
}

fn located(run: &TestRun<'_>, error: &BuzzError) -> String {
    match error.site() {
        Some(site) => format!(
            "{}:{}:{}: {}",
            run.shown(&site.file),
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

/// `magus test` over spells whose policies differ: the sandbox confines
/// the whole process and cannot be undone, so each spell with its own
/// `spells:` section is tested by a `magus test` of its own, and the
/// spells without one together. `None` when one process serves them all
/// (no section among them, or a single spell), and `magus test` goes on
/// as usual. Each process prints its own results and closing line; the
/// status is the first that is not 0.
pub(super) fn in_processes_per_policy(
    global: &super::GlobalArgs,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    spells: &[String],
    filter: Option<&str>,
) -> Option<i32> {
    let declared = match super::declare(global, env, None) {
        Ok(declared) => declared,
        Err(status) => return Some(status),
    };
    let (root, config) = declared.workspace_and_config();
    let config = config.filter(|c| !c.spells.is_empty())?;
    let named = match spells.is_empty() {
        true => crate::policy::spell_names(root),
        false => spells.to_vec(),
    };
    let groups = groups_by_policy(root, config, named);
    if groups.len() < 2 {
        return None;
    }
    let status = groups
        .iter()
        .map(|group| test_in_process(global, root, group, filter))
        .fold(0, |first, status| if first == 0 { status } else { first });
    Some(status)
}

/// The spells with a section each alone, then the others together.
fn groups_by_policy(
    root: &Path,
    config: &crate::policy::config::ConfigFile,
    names: Vec<String>,
) -> Vec<Vec<String>> {
    let (own, shared): (Vec<String>, Vec<String>) = names.into_iter().partition(|name| {
        crate::policy::spell_name(root, name).is_some_and(|n| config.spell(&n).is_some())
    });
    let mut groups: Vec<Vec<String>> = own.into_iter().map(|n| vec![n]).collect();
    if !shared.is_empty() {
        groups.push(shared);
    }
    groups
}

/// `magus test` of `spells` in a new process, with this one's options.
fn test_in_process(
    global: &super::GlobalArgs,
    root: &Path,
    spells: &[String],
    filter: Option<&str>,
) -> i32 {
    use clap::ValueEnum;
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return cannot_start(global, &e),
    };
    let mut command = std::process::Command::new(exe);
    command.arg("--workspace").arg(root);
    for (flag, value) in [
        (
            "--message-format",
            global.message_format.to_possible_value(),
        ),
        ("--color", global.color.to_possible_value()),
    ] {
        if let Some(value) = value {
            command.arg(flag).arg(value.get_name());
        }
    }
    command.args(global.quiet.then_some("--quiet"));
    command.args(global.verbose.then_some("--verbose"));
    command.arg("test");
    if let Some(filter) = filter {
        command.arg("--filter").arg(filter);
    }
    command.arg("--").args(spells);
    match command.status() {
        Ok(status) => status.code().unwrap_or(super::EXIT_CANNOT_RUN),
        Err(e) => cannot_start(global, &e),
    }
}

fn cannot_start(global: &super::GlobalArgs, e: &std::io::Error) -> i32 {
    let d = crate::diag::Diagnostic::error(format!("cannot start magus for a spell's tests: {e}"));
    global.renderer().emit(&d);
    super::EXIT_CANNOT_RUN
}
