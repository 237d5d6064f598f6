//! Denials found before the run: each `fs.*`, `sh.*` and gated `buzz:`
//! call whose path or program the source settles is put to the very gate
//! the run would use (`Gate::foresee`, `Gate::resolve_program`), and
//! what it refuses is said with the run's own code and help; the spell's
//! own imported files are looked at too (`imports`). Also what
//! those calls need granted, for `magus sandbox suggest` (see `suggest`).
//! docs/check.md describes both.

mod calls;
mod imports;
mod suggest;
mod table;

pub(crate) use calls::{calls, Call, Span};
pub(crate) use suggest::{suggest, Suggestion};
pub(crate) use table::Gated;

use super::Session;
use crate::buzz::Program;
use crate::diag::{Diagnostic, Location, Severity, SourceKind};
use crate::enforce::gate::{Denial, GateError};

/// The denials the literal calls of `program` would meet under
/// `session`'s gate, as diagnostics at the calls: errors where nothing
/// would catch them, warnings where the spell may. None with the sandbox
/// off.
pub(crate) fn denials(program: &Program, session: &Session) -> Vec<Diagnostic> {
    if !session.gate().is_on() {
        return Vec::new();
    }
    let mut found = denials_in(program, &calls(program), session);
    for file in imports::imported(program, session) {
        found.extend(denials_in(&file, &calls::calls_in(&file, false), session));
    }
    found
}

/// The diagnostics of the denials `calls` of `file` would meet.
fn denials_in(file: &Program, calls: &[Call], session: &Session) -> Vec<Diagnostic> {
    calls
        .iter()
        .filter_map(|call| {
            let (denial, at) = call
                .checks
                .iter()
                .find_map(|(g, at)| Some((foreseen(g, session)?, *at)))?;
            Some(diagnostic(call, &denial, at, session, file))
        })
        .collect()
}

/// The denial the run would meet for `gated`, if the gate settles it now.
fn foreseen(gated: &Gated, session: &Session) -> Option<Denial> {
    match gated {
        Gated::Path { op, usage, spelled } => session.gate().foresee(*op, *usage, spelled),
        Gated::Program(program) => {
            let path = session.child_path();
            match session.gate().resolve_program(program, path.as_deref()) {
                Err(GateError::Denied(denial)) => Some(denial),
                _ => None,
            }
        }
        Gated::Variable(_) => None,
    }
}

/// The run's diagnostic for `denial`, at the call, as an error when the
/// call is fatal and a warning otherwise.
fn diagnostic(
    call: &Call,
    denial: &Denial,
    at: Span,
    session: &Session,
    program: &Program,
) -> Diagnostic {
    let mut d = session
        .denial_diagnostic(denial)
        .with_location(Location {
            kind: SourceKind::Spell,
            file: program.file.clone(),
            line: at.line,
            column: at.column,
        })
        .with_span(at.width);
    if call.fatal {
        d.notes.push(
            "found before the run: no `try` around this call catches the `SandboxError`, \
             so the run would stop here, after what the lines before it did; nothing was run"
                .to_string(),
        );
    } else {
        d.severity = Severity::Warning;
        d.notes.push(
            "found before the run: the spell may catch this `SandboxError` (a `try` \
             around the call or around a call of its function)"
                .to_string(),
        );
    }
    d
}

#[cfg(all(test, unix))]
mod corpus_tests;
#[cfg(all(test, unix))]
mod tests;
