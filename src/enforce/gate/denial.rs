//! What the gate answers when it says no, and how that reads to a user.
//!
//! A [`Denial`] carries everything the diagnostic needs: the operation, the
//! path as spelled, where it really leads, and why. The suggested fix is the
//! exact `magus.yaml` entry that would allow it, or the statement that no
//! entry can (protected paths, other processes).

use crate::diag::{Code, Diagnostic};
use crate::policy::{Access, Mode, PathError};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// The spell-level operation a gate call serves; it is the `op` field of
/// `SandboxError`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsOp {
    Read,
    Write,
    Append,
    Exists,
    List,
    MakeDirectory,
    Copy,
    Move,
    Delete,
    Exec,
}

impl FsOp {
    /// The name of the binding, as spells call it.
    pub fn as_str(self) -> &'static str {
        match self {
            FsOp::Read => "read",
            FsOp::Write => "write",
            FsOp::Append => "append",
            FsOp::Exists => "exists",
            FsOp::List => "list",
            FsOp::MakeDirectory => "makeDirectory",
            FsOp::Copy => "copy",
            FsOp::Move => "move",
            FsOp::Delete => "delete",
            FsOp::Exec => "exec",
        }
    }
}

impl fmt::Display for FsOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a path was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenialReason {
    /// No grant covers the path with the needed rights.
    NotGranted,
    /// `magus.yaml`, `magus.lock` or anything under `.git` in the workspace.
    Protected,
    /// `/proc/<pid>` of another process.
    ForeignProcess,
}

/// A refusal by the gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub op: FsOp,
    pub access: Access,
    /// The path as the spell wrote it.
    pub spelled: String,
    /// The absolute, normalised path that was checked.
    pub checked: PathBuf,
    /// Where the path really leads, when a symlink made it differ.
    pub leads_to: Option<PathBuf>,
    pub reason: DenialReason,
}

impl Denial {
    pub fn new(
        op: FsOp,
        access: Access,
        spelled: &str,
        checked: &Path,
        leads_to: Option<PathBuf>,
        reason: DenialReason,
    ) -> Denial {
        Denial {
            op,
            access,
            spelled: spelled.to_string(),
            checked: checked.to_path_buf(),
            leads_to,
            reason,
        }
    }

    /// MGS2001 for reads, MGS2002 for writes, MGS2007 for launches.
    pub fn code(&self) -> Code {
        match self.access {
            Access::Read => Code::Mgs2001,
            Access::Write => Code::Mgs2002,
            Access::Execute => Code::Mgs2007,
        }
    }

    /// The one-line message, also the `message` field of `SandboxError`.
    pub fn message(&self) -> String {
        let verb = match self.access {
            Access::Read => "read of",
            Access::Write => "write to",
            Access::Execute => "launch of",
        };
        let why = match self.reason {
            DenialReason::NotGranted => "denied by the sandbox",
            DenialReason::Protected => "denied: it is a protected path",
            DenialReason::ForeignProcess => "denied: it belongs to another process",
        };
        match &self.leads_to {
            Some(real) => format!(
                "{verb} `{}` (which leads to `{}`) {why}",
                self.spelled,
                real.display()
            ),
            None => format!("{verb} `{}` {why}", self.spelled),
        }
    }

    /// The diagnostic shown when the spell does not catch the error.
    /// `home` lets the suggested entry use `~`.
    pub fn to_diagnostic(&self, home: Option<&Path>) -> Diagnostic {
        let real = self.leads_to.as_deref().unwrap_or(&self.checked);
        let mut d = Diagnostic::error(self.message())
            .with_code(self.code())
            .with_path(self.spelled.clone())
            .with_label(format!("`{}` denied here", self.op));
        if let Some(real) = &self.leads_to {
            d = d.with_note(format!(
                "`{}` is a symlink into `{}`",
                self.spelled,
                real.display()
            ));
        }
        if self.checked.as_os_str() != self.spelled.as_str() && self.leads_to.is_none() {
            d = d.with_note(format!("checked as `{}`", self.checked.display()));
        }
        d.with_help(self.fix(real, home))
    }

    fn fix(&self, real: &Path, home: Option<&Path>) -> String {
        match self.reason {
            DenialReason::Protected => "a spell may not change the sandbox policy or git hooks; \
                 no magus.yaml entry can allow this"
                .to_string(),
            DenialReason::ForeignProcess => "reading another process's /proc entries is never \
                 allowed; no magus.yaml entry can allow this"
                .to_string(),
            DenialReason::NotGranted => allow_entry(real, self.access.needed_mode(), home),
        }
    }
}

/// The `magus.yaml` lines that would grant `path` with `mode`; for a
/// credential store, why no such lines are offered instead.
pub fn allow_entry(path: &Path, mode: Mode, home: Option<&Path>) -> String {
    if let Some(store) = crate::diag::credential_store(path, home) {
        return crate::diag::credential_help(&store);
    }
    let shown = match home.and_then(|h| path.strip_prefix(h).ok()) {
        Some(rest) if rest.as_os_str().is_empty() => "~".to_string(),
        Some(rest) => format!("~/{}", rest.display()),
        None => path.display().to_string(),
    };
    format!(
        "to allow it, add to magus.yaml (only if you trust this spell with it):\n\
         sandbox:\n  allow:\n    - path: {shown}\n      mode: {mode}"
    )
}

/// What a gated call can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GateError {
    /// The sandbox refused the operation.
    #[error("{}", .0.message())]
    Denied(Denial),
    /// The path cannot name a file at all (NUL byte, too long, empty).
    #[error("invalid path `{}` in {op}: {source}", spelled.escape_debug())]
    InvalidPath {
        op: FsOp,
        spelled: String,
        source: PathError,
    },
    /// A symlink changed between two checks of the same call.
    #[error("`{spelled}` changed while {op} was opening it; nothing was done")]
    Raced { op: FsOp, spelled: String },
    /// The operating system refused or failed.
    #[error("{op} `{spelled}`: {source}")]
    Io {
        op: FsOp,
        spelled: String,
        source: io::Error,
    },
}

impl GateError {
    pub(crate) fn io(op: FsOp, spelled: &str, source: io::Error) -> GateError {
        GateError::Io {
            op,
            spelled: spelled.to_string(),
            source,
        }
    }
}

impl From<Denial> for GateError {
    fn from(denial: Denial) -> Self {
        GateError::Denied(denial)
    }
}
