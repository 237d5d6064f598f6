//! `magus check [SPELL...]`: the library's spell checker
//! (`crate::sandbox::spell_checker`) over the named spells, every finding
//! said, and a closing count. Each spell is checked under its own policy
//! (the workspace's and its `spells:` section). Nothing runs.

use super::{declare, GlobalArgs};
use crate::bindings::DiagnosticSink;
use crate::diag::{Diagnostic, Severity, Verbosity};
use crate::sandbox::spell_checker::{
    checking_interpreter, checking_session, spell_and_calls_are_clean,
};
use crate::sandbox::spell_reader::{spell_files, SpellReader};
use std::cell::Cell;
use std::ffi::OsString;
use std::io::Write;
use std::rc::Rc;

/// Exit status of `magus check` when a spell has errors.
pub(super) use crate::sandbox::exit::CHECK_FAILED as EXIT_CHECK_FAILED;

/// `magus check`: checks the named spells (every spell of the workspace
/// when none is named); 0 when all are clean, 2 when any is not.
pub(super) fn check(global: &GlobalArgs, env: &[(OsString, OsString)], names: &[String]) -> i32 {
    // On the interpreter's large stack, as a run checks: the checker's
    // recursion follows the spell's nesting.
    let checked = crate::buzz::stack::run_on_interpreter_stack(|| check_all(global, env, names));
    checked.unwrap_or_else(|e| {
        let d = Diagnostic::error(format!("cannot start the checker thread: {e}"));
        global.renderer().emit(&d);
        super::EXIT_CONFIG
    })
}

fn check_all(global: &GlobalArgs, env: &[(OsString, OsString)], names: &[String]) -> i32 {
    let renderer = global.renderer();
    let declared = match declare(global, env, None) {
        Ok(declared) => declared,
        Err(status) => return status,
    };
    let startup = declared.clone().resolve(env);
    let workspace = startup.policy.workspace().to_path_buf();
    let names = if names.is_empty() {
        let mut all = spell_files(&workspace.join("spells"));
        all.sort();
        all.into_iter().map(|(name, _)| name).collect()
    } else {
        names.to_vec()
    };
    let tally = Rc::new(Cell::new(Tally::default()));
    let counted = tally.clone();
    let sink: DiagnosticSink = Rc::new(move |d: &Diagnostic| {
        counted.set(counted.get().add(d.severity));
        renderer.emit(d);
    });
    let reader = SpellReader::new(&startup.policy);
    let mut status = 0;
    for name in &names {
        let (file, source) = match reader.read_spell(name) {
            Ok(found) => found,
            Err(e) => {
                sink(e.diagnostic());
                status = EXIT_CHECK_FAILED;
                continue;
            }
        };
        // Each spell under its own policy: the workspace's and its section.
        let spell = crate::policy::spell_name(&workspace, name);
        let policy = declared.for_spell(spell.as_deref()).resolve(env).policy;
        let session = checking_session(policy, env, sink.clone());
        let interpreter = checking_interpreter(&file, &session);
        if !spell_and_calls_are_clean(&interpreter, &session, &file, &source, &sink) {
            status = EXIT_CHECK_FAILED;
        }
    }
    if global.verbosity() != Verbosity::Quiet {
        let _ = writeln!(std::io::stdout(), "{}", tally.get().summary(names.len()));
    }
    status
}

/// What a check found, for its closing line.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    errors: usize,
    warnings: usize,
}

impl Tally {
    fn add(self, severity: Severity) -> Tally {
        match severity {
            Severity::Error => Tally {
                errors: self.errors + 1,
                ..self
            },
            Severity::Warning => Tally {
                warnings: self.warnings + 1,
                ..self
            },
            Severity::Note => self,
        }
    }

    /// `checked 10 spells, no problems`, or what was found.
    fn summary(self, spells: usize) -> String {
        let checked = format!("checked {}", plural(spells, "spell"));
        let mut found = Vec::new();
        if self.errors > 0 {
            found.push(plural(self.errors, "error"));
        }
        if self.warnings > 0 {
            found.push(plural(self.warnings, "warning"));
        }
        match found.is_empty() {
            true => format!("{checked}, no problems"),
            false => format!("{checked}: {}", found.join(", ")),
        }
    }
}

/// `1 spell`, `2 spells`.
fn plural(n: usize, word: &str) -> String {
    match n {
        1 => format!("1 {word}"),
        _ => format!("{n} {word}s"),
    }
}
