//! `magus check [SPELL...]`, and the check that `magus run` and `magus test`
//! make before running anything: the spell checker of `buzz::check` over
//! each spell and every file it imports. Nothing runs; imported files are
//! read through the gate of the spell's own policy (the workspace's and
//! its `spells:` section), as a run would read them.

use super::spells::{spell_files, SpellReader};
use super::{declare, GlobalArgs, EXIT_CANNOT_RUN, EXIT_DENIED};
use crate::bindings::{self, DiagnosticSink, Session};
use crate::buzz::{Interpreter, Program};
use crate::diag::{Code, Diagnostic, Renderer, Severity, Verbosity};
use crate::enforce::gate::Gate;
use crate::enforce::Domain;
use crate::policy::Policy;
use std::cell::Cell;
use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use std::rc::Rc;

/// Exit status of `magus check` when a spell has errors.
pub use crate::sandbox::exit::CHECK_FAILED as EXIT_CHECK_FAILED;

/// `magus check`: checks the named spells (every spell of the workspace
/// when none is named); 0 when all are clean, 2 when any is not.
pub(super) fn check(global: &GlobalArgs, env: &[(OsString, OsString)], names: &[String]) -> i32 {
    // On the interpreter's large stack, as a run checks: the checker's
    // recursion follows the spell's nesting.
    let checked = crate::buzz::stack::run_on_interpreter_stack(|| check_all(global, env, names));
    checked.unwrap_or_else(|e| {
        let d = Diagnostic::error(format!("cannot start the checker thread: {e}"));
        Renderer::new(global.message_format).emit(&d);
        super::EXIT_CONFIG
    })
}

fn check_all(global: &GlobalArgs, env: &[(OsString, OsString)], names: &[String]) -> i32 {
    let renderer = Renderer::new(global.message_format);
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
                sink(&e.diagnostic);
                status = EXIT_CHECK_FAILED;
                continue;
            }
        };
        // Each spell under its own policy: the workspace's and its section.
        let spell = crate::policy::spell_name(&workspace, name);
        let policy = declared.for_spell(spell.as_deref()).resolve(env).policy;
        let session = checking_session(policy, sink.clone());
        let interpreter = checking_interpreter(&file, &session);
        if !spell_is_clean(&interpreter, &file, &source, &sink) {
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
pub(super) fn plural(n: usize, word: &str) -> String {
    match n {
        1 => format!("1 {word}"),
        _ => format!("{n} {word}s"),
    }
}

/// The session of a check: the gate of `policy` (imports are read through
/// it), and a domain that confines nothing, since nothing runs.
pub(crate) fn checking_session(policy: Policy, sink: DiagnosticSink) -> Rc<Session> {
    let workspace = policy.workspace().to_path_buf();
    let gate = Gate::new(Rc::new(policy), workspace);
    #[cfg(kernel_layer)]
    let domain = Domain::unconfined(crate::enforce::Unavailable::ForcedOff);
    #[cfg(not(kernel_layer))]
    let domain = Domain::interpreter_only();
    Rc::new(Session::new(gate, domain, Vec::new(), Vec::new(), sink))
}

/// An interpreter with the modules and loader a run has, used only for
/// its tables.
pub(crate) fn checking_interpreter(file: &Path, session: &Rc<Session>) -> Interpreter {
    Interpreter::new(file, bindings::modules(session))
        .with_loader(bindings::source_loader(session))
        .with_libraries(bindings::libraries())
}

/// Parses and checks one spell, saying every error; true when it may run.
pub(crate) fn spell_is_clean(
    interpreter: &Interpreter,
    file: &Path,
    source: &str,
    sink: &DiagnosticSink,
) -> bool {
    match crate::buzz::parse(file, source) {
        Ok(program) => program_is_clean(interpreter, &program, source, sink),
        Err(e) => {
            sink(&e.to_diagnostic());
            false
        }
    }
}

/// Checks a parsed spell, saying every error; true when it may run.
pub(super) fn program_is_clean(
    interpreter: &Interpreter,
    program: &Program,
    source: &str,
    sink: &DiagnosticSink,
) -> bool {
    refusal(interpreter, program, source, sink).is_none()
}

/// Checks a parsed spell before a run, saying every finding; the exit
/// status that stops the run, or `None` when it may go on: 124 when the
/// sandbox denied reading an imported file (as the run would have been
/// stopped), else 126 (the spell cannot run).
pub(crate) fn refusal(
    interpreter: &Interpreter,
    program: &Program,
    source: &str,
    sink: &DiagnosticSink,
) -> Option<i32> {
    let report = interpreter.check(program, source);
    let diagnostics = report.diagnostics();
    for d in &diagnostics {
        sink(d);
    }
    if report.is_clean() {
        return None;
    }
    let denied = diagnostics
        .iter()
        .any(|d| matches!(d.code, Some(Code::Mgs2001 | Code::Mgs2002 | Code::Mgs2007)));
    Some(if denied { EXIT_DENIED } else { EXIT_CANNOT_RUN })
}
