//! What the gate answers when it says no: a [`Denial`] carries everything
//! the diagnostic needs (the operation, the path as spelled, where it
//! really leads, and why) as facts. How that reads to a user, the sentence
//! and the `magus.yaml` lines that would allow it, is built beside it
//! (`denial_diagnostic.rs`); `diag` only renders it.

use crate::diag::Code;
use crate::policy::{Access, PathError, WinPathError, WinRefusal};
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
    /// The operation a write in `mode` serves.
    pub fn of_write(mode: super::WriteMode) -> FsOp {
        match mode {
            super::WriteMode::Truncate => FsOp::Write,
            super::WriteMode::Append => FsOp::Append,
        }
    }

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
    /// `magus.yaml`, `magus.lock` or anything under `.git` in the workspace
    /// (in any case, or by device and inode), or a name that would make
    /// its directory a git repository ([`Denial::protection`] says so).
    Protected,
    /// `/proc/<pid>` of another process.
    ForeignProcess,
    /// A Windows spelling the path model refuses (UNC, device, stream,
    /// reserved name, ...): no grant can allow it.
    WindowsPath(WinRefusal),
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
    /// Where the path really leads, when a symlink made it differ (or the
    /// protected or hidden file it is, when its name did not say so).
    pub leads_to: Option<PathBuf>,
    pub reason: DenialReason,
    /// What makes a [`DenialReason::Protected`] path protected, when its
    /// own name does not say it (boxed: a gate error stays small on the
    /// paths where nothing is refused).
    pub protection: Option<Box<Protection>>,
}

/// Why a path is protected when its name alone does not say it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Protection {
    /// Git would take `dir` for a repository once the path was written:
    /// it holds these (git's spellings) already.
    Repository {
        dir: PathBuf,
        holds: Vec<&'static str>,
    },
    /// The directory holds `store`, a credential store the sandbox hides:
    /// moved, the store would stand where nothing hides it (a red-team
    /// run moved `~/.config/gh` aside and read `hosts.yml`); removed, it
    /// would be gone.
    HoldsStore { store: PathBuf },
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
            protection: None,
        }
    }

    /// This denial, saying what makes the path protected.
    pub fn protected_by(mut self, protection: Protection) -> Denial {
        self.protection = Some(Box::new(protection));
        self
    }

    /// MGS2001 for reads, MGS2002 for writes, MGS2007 for launches.
    pub fn code(&self) -> Code {
        match self.access {
            Access::Read => Code::Mgs2001,
            Access::Write => Code::Mgs2002,
            Access::Execute => Code::Mgs2007,
        }
    }
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
        /// The operation the spell called.
        op: FsOp,
        /// The path as the spell spelled it.
        spelled: String,
        /// Why it names no file.
        source: PathError,
    },
    /// A symlink changed between two checks of the same call.
    #[error("`{spelled}` changed while {op} was opening it; nothing was done")]
    Raced {
        /// The operation the spell called.
        op: FsOp,
        /// The path as the spell spelled it.
        spelled: String,
    },
    /// The operating system refused or failed.
    #[error("{op} `{spelled}`: {source}")]
    Io {
        /// The operation the spell called.
        op: FsOp,
        /// The path as the spell spelled it.
        spelled: String,
        /// The operating system's error.
        source: io::Error,
    },
}

impl GateError {
    /// Why `spelled` gives no policy path: a path that names nothing
    /// (empty, NUL, too long) is invalid; one the Windows model refuses is
    /// a denial, with the code of the operation (MGS2001, MGS2002, MGS2007).
    pub(crate) fn of_spelling(
        op: FsOp,
        access: Access,
        spelled: &str,
        error: WinPathError,
    ) -> GateError {
        match error {
            WinPathError::Invalid(source) => GateError::InvalidPath {
                op,
                spelled: spelled.to_string(),
                source,
            },
            WinPathError::Refused { kind, .. } => {
                let reason = DenialReason::WindowsPath(kind);
                Denial::new(op, access, spelled, Path::new(spelled), None, reason).into()
            }
        }
    }

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Code;

    /// A refused Windows spelling is a denial with the operation's code
    /// and a reason no `magus.yaml` entry can lift; an invalid one is not.
    #[test]
    fn windows_refusals_are_denials_by_operation() {
        let refused = |kind| WinPathError::Refused {
            kind,
            spelled: String::new(),
        };
        let cases = [
            (FsOp::Read, Access::Read, WinRefusal::Unc, Code::Mgs2001),
            (
                FsOp::Write,
                Access::Write,
                WinRefusal::Stream,
                Code::Mgs2002,
            ),
            (
                FsOp::Exec,
                Access::Execute,
                WinRefusal::Reserved,
                Code::Mgs2007,
            ),
        ];
        for (op, access, kind, code) in cases {
            match GateError::of_spelling(op, access, "x", refused(kind)) {
                GateError::Denied(d) => {
                    assert_eq!(
                        (d.code(), d.reason),
                        (code, DenialReason::WindowsPath(kind))
                    );
                    assert!(d.message().contains(kind.why()), "{}", d.message());
                    let help = d.to_diagnostic(None).to_string();
                    assert!(help.contains("no magus.yaml entry"), "{help}");
                }
                other => panic!("{kind:?}: {other:?}"),
            }
        }
        let invalid = GateError::of_spelling(FsOp::Read, Access::Read, "", PathError::Empty.into());
        assert!(
            matches!(invalid, GateError::InvalidPath { .. }),
            "{invalid:?}"
        );
    }
}
