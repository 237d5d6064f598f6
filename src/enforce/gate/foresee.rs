//! What the gate would answer for a path, asked before the run: the same
//! checks the confined backend makes before it opens anything (the trie,
//! protected and hidden paths, other processes' `/proc`, a symlinked
//! ancestor resolved), and nothing after them. Nothing is created,
//! written or read; only a granted root's directory may be opened.

use super::confined::Confined;
use super::{Backend, Denial, FsOp, Gate, GateError};
use crate::policy::Access;
use std::borrow::Cow;

/// How a call uses a path, as the confined backend checks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathUse {
    /// Read, list, ask whether it exists (`Access::Read`).
    Read,
    /// Create, write or append, make a directory (`Access::Write`).
    Write,
    /// Remove or rename away: the entry and its directory must both be
    /// writable.
    Remove,
}

impl Gate {
    /// The denial the run would meet for `op` on `spelled` used as
    /// `usage`, when the gate's own checks already settle it; `None` when
    /// they let it through, when it would fail for another reason (a
    /// missing root, a bad spelling), or when the sandbox is off. A denial
    /// that depends on what the run finds on disk then (a name completing
    /// a repository, a protected file by another name) is not foreseen.
    pub fn foresee(&self, op: FsOp, usage: PathUse, spelled: &str) -> Option<Denial> {
        let Backend::Confined(confined) = &self.backend else {
            return None;
        };
        match confined.foresee(op, usage, spelled) {
            Err(GateError::Denied(denial)) => Some(denial),
            _ => None,
        }
    }
}

impl Confined {
    /// The checks [`Confined::open`] and `open_parent` make first, in
    /// their order.
    fn foresee(&self, op: FsOp, usage: PathUse, spelled: &str) -> Result<(), GateError> {
        match usage {
            PathUse::Read => self.locate(spelled, Access::Read, op).map(drop),
            PathUse::Write => self.locate(spelled, Access::Write, op).map(drop),
            PathUse::Remove => {
                let abs = self.absolute(spelled, Access::Write, op)?;
                let Some(parent) = abs.parent() else {
                    return Ok(());
                };
                self.locate_abs(spelled, Cow::Borrowed(&abs), Access::Write, op)?;
                self.locate_abs(spelled, Cow::Owned(parent), Access::Write, op)
                    .map(drop)
            }
        }
    }
}
