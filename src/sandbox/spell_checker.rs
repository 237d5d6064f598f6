//! The spell checker of `buzz::check` over a spell and every file it
//! imports, as `magus check` and the check before every run make it:
//! nothing runs, and imported files are read through the gate of the
//! workspace's policy, as a run would read them. With a session, also the
//! denials that gate would give the spell's literal calls
//! (`bindings::foresee`, docs/check.md).

use super::exit::{CANNOT_RUN, DENIED};
use crate::bindings::{self, DiagnosticSink, Session};
use crate::buzz::{Interpreter, Program};
use crate::diag::{Code, Diagnostic};
use crate::enforce::gate::Gate;
use crate::enforce::Domain;
use crate::policy::{Policy, SandboxState};
use std::ffi::OsString;
use std::path::Path;
use std::rc::Rc;

/// The session of a check: the gate of `policy` (imports are read through
/// it, literal calls put to it), the environment a run's children would
/// get from `env` (`PATH` finds the programs), and a domain that confines
/// nothing, since nothing runs.
pub(crate) fn checking_session(
    policy: Policy,
    env: &[(OsString, OsString)],
    sink: DiagnosticSink,
) -> Rc<Session> {
    let child_env = match policy.state() {
        SandboxState::On => policy.child_env(env).vars,
        SandboxState::Off => env.to_vec(),
    };
    let workspace = policy.workspace().to_path_buf();
    let gate = Gate::new(Rc::new(policy), workspace);
    #[cfg(kernel_layer)]
    let domain = Domain::unconfined(crate::enforce::Unavailable::ForcedOff);
    #[cfg(not(kernel_layer))]
    let domain = Domain::interpreter_only();
    Rc::new(Session::new(gate, domain, child_env, Vec::new(), sink))
}

/// An interpreter with the modules and loader a run has, used only for
/// its tables.
pub(crate) fn checking_interpreter(file: &Path, session: &Rc<Session>) -> Interpreter {
    Interpreter::new(file, bindings::modules(session))
        .with_loader(bindings::source_loader(session))
        .with_libraries(bindings::libraries())
}

/// Parses and checks one spell, saying every error; true when its tests
/// may run (`magus test`: its `main`, where a denial found before the
/// run would stop it, does not run).
pub(crate) fn spell_is_clean(
    interpreter: &Interpreter,
    file: &Path,
    source: &str,
    sink: &DiagnosticSink,
) -> bool {
    match crate::buzz::parse(file, source) {
        Ok(program) => refusal(interpreter, None, &program, source, sink).is_none(),
        Err(e) => {
            sink(&e.to_diagnostic());
            false
        }
    }
}

/// [`spell_is_clean`], and the denials `session`'s gate would give the
/// spell's literal calls; true when it may run.
pub(crate) fn spell_and_calls_are_clean(
    interpreter: &Interpreter,
    session: &Session,
    file: &Path,
    source: &str,
    sink: &DiagnosticSink,
) -> bool {
    match crate::buzz::parse(file, source) {
        Ok(program) => refusal(interpreter, Some(session), &program, source, sink).is_none(),
        Err(e) => {
            sink(&e.to_diagnostic());
            false
        }
    }
}

/// Checks a parsed spell before a run, saying every finding (with
/// `calls`, also the denials its gate would give the spell's literal
/// calls); the exit status that stops the run, or `None` when it may go
/// on: 124 when the sandbox denied reading an imported file or would deny
/// a call nothing catches (as the run would have been stopped), else 126
/// (the spell cannot run).
pub(crate) fn refusal(
    interpreter: &Interpreter,
    calls: Option<&Session>,
    program: &Program,
    source: &str,
    sink: &DiagnosticSink,
) -> Option<i32> {
    let report = interpreter.check(program, source);
    let mut diagnostics = report.diagnostics();
    if let Some(session) = calls {
        diagnostics.extend(bindings::foresee::denials(program, session));
    }
    for d in &diagnostics {
        sink(d);
    }
    if report.is_clean() && !diagnostics.iter().any(Diagnostic::is_error) {
        return None;
    }
    let denied = diagnostics
        .iter()
        .any(|d| matches!(d.code, Some(Code::Mgs2001 | Code::Mgs2002 | Code::Mgs2007)));
    Some(if denied { DENIED } else { CANNOT_RUN })
}
