//! The Buzz error values the bindings raise: `SandboxError` for denials,
//! `FileSystemError` and `ExecError` for ordinary failures. Each carries a
//! diagnostic that is shown when the spell does not catch it.

use crate::buzz::{Raise, Value};
use crate::diag::Diagnostic;
use crate::enforce::gate::{Denial, FsOp, GateError};
use std::path::Path;

/// Type name of a sandbox denial, as spells `catch` it.
pub(crate) const SANDBOX_ERROR: &str = "SandboxError";
/// Type name of a filesystem failure that is not a denial.
pub(crate) const FILE_SYSTEM_ERROR: &str = "FileSystemError";
/// Type name of a process-launch failure that is not a denial.
pub(crate) const EXEC_ERROR: &str = "ExecError";

/// The Buzz error for a gate failure.
#[cold]
pub(super) fn raise_gate(error: GateError, home: Option<&Path>) -> Raise {
    match error {
        GateError::Denied(denial) => raise_denial(&denial, home),
        GateError::Io {
            op: FsOp::Exec,
            spelled,
            source,
        } => raise_exec(&spelled, &source.to_string()),
        other => raise_fs(&other),
    }
}

#[cold]
fn raise_denial(denial: &Denial, home: Option<&Path>) -> Raise {
    raise_denial_as(denial, denial.to_diagnostic(home))
}

/// The Buzz error for a denial, shown uncaught as `diagnostic`.
#[cold]
pub(super) fn raise_denial_as(denial: &Denial, diagnostic: Diagnostic) -> Raise {
    let value = Value::record(
        SANDBOX_ERROR,
        vec![
            ("code", Value::str(denial.code().as_str())),
            ("op", Value::str(denial.op.as_str())),
            ("path", Value::str(denial.spelled.as_str())),
            ("message", Value::str(denial.message())),
        ],
    );
    Raise::with_diagnostic(value, diagnostic)
}

#[cold]
fn raise_fs(error: &GateError) -> Raise {
    let (op, path) = match error {
        GateError::InvalidPath { op, spelled, .. }
        | GateError::Raced { op, spelled }
        | GateError::Io { op, spelled, .. } => (op.as_str(), spelled.as_str()),
        _ => ("", ""),
    };
    let message = error.to_string();
    let value = Value::record(
        FILE_SYSTEM_ERROR,
        vec![
            ("op", Value::str(op)),
            ("path", Value::str(path)),
            ("message", Value::str(message.as_str())),
        ],
    );
    let diagnostic = Diagnostic::error(message).with_path(path);
    Raise::with_diagnostic(value, diagnostic)
}

/// The Buzz error for a launch that failed for a reason other than a denial.
#[cold]
pub(super) fn raise_exec(program: &str, message: &str) -> Raise {
    let text = format!("cannot run `{program}`: {message}");
    let value = Value::record(
        EXEC_ERROR,
        vec![
            ("program", Value::str(program)),
            ("message", Value::str(text.as_str())),
        ],
    );
    Raise::with_diagnostic(value, Diagnostic::error(text))
}
