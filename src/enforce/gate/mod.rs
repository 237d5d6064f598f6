//! The interpreter-level gate: every path a spell names is made absolute,
//! normalised, checked on the policy's trie and then opened *beneath* the
//! granted root that allowed it ([`super::beneath`]), so what the check saw
//! is what the operation touches.
//!
//! The gate also refuses what Landlock cannot express: writes to the
//! workspace's protected paths (`magus.yaml`, `magus.lock`, `.git/**`, in
//! any case and by device and inode, see [`noted`]), writes that would
//! make a directory a git repository ([`repository`]), and reads of other
//! processes' `/proc/<pid>` entries. It never prints;
//! denials are [`Denial`] values that the bindings turn into `SandboxError`.
//!
//! Authority is chosen once, when the gate is made: a sandboxed run gets the
//! [`confined`] backend, which can only reach the file system through
//! handles of granted roots; a run with the sandbox off gets [`ambient`],
//! the one module that calls `std::fs` on spelled paths. No gated call can
//! fall through to ambient authority, because a `Gate` holds only one.

mod ambient;
mod confined;
mod denial;
mod denial_diagnostic;
mod foresee;
mod fs_ops;
#[cfg(all(test, unix))]
mod names_tests;
mod noted;
mod program;
mod repository;
#[cfg(all(test, windows))]
mod windows_tests;

pub use denial::GateError;
pub(crate) use denial::{Denial, DenialReason, FsOp, Protection};
pub(crate) use denial_diagnostic::{allow_entry_in, shown_path, yaml_key};
pub(crate) use foresee::PathUse;
pub(crate) use program::HiddenPrograms;

use crate::policy::Policy;
use crate::policy::SandboxState;
use ambient::Ambient;
use confined::Confined;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// How `write` treats an existing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// Replace its contents.
    Truncate,
    /// Add at its end.
    Append,
}

/// The gate of one run. It is single-threaded, like the interpreter.
#[derive(Debug)]
pub struct Gate {
    policy: Rc<Policy>,
    cwd: PathBuf,
    backend: Backend,
    /// `PATH` directories the jail hides, as they were at start-up.
    hidden: HiddenPrograms,
}

/// The one authority a gate holds for its whole life.
#[derive(Debug)]
enum Backend {
    /// Sandbox on: every path checked, every open beneath a granted root.
    Confined(Confined),
    /// Sandbox off: spelled paths go straight to the operating system.
    Ambient(Ambient),
}

#[deny(missing_docs)] // re-exported by the crate: public API
impl Gate {
    /// A gate over `policy`, resolving relative paths against `cwd`.
    /// Whether it confines is decided here, once, from the policy's state.
    pub fn new(policy: Rc<Policy>, cwd: PathBuf) -> Gate {
        let backend = match policy.state() {
            SandboxState::On => Backend::Confined(Confined::new(Rc::clone(&policy), &cwd)),
            SandboxState::Off => Backend::Ambient(Ambient),
        };
        Gate {
            policy,
            cwd,
            backend,
            hidden: HiddenPrograms::default(),
        }
    }

    /// This gate, looking programs up as the user's `PATH` named them
    /// before the jail hid the ungranted directories.
    pub(crate) fn with_hidden_programs(mut self, hidden: HiddenPrograms) -> Gate {
        self.hidden = hidden;
        self
    }

    /// The policy this gate enforces.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The directory relative paths are resolved against.
    pub fn current_directory(&self) -> &Path {
        &self.cwd
    }

    /// Whether the gate checks anything at all.
    pub fn is_on(&self) -> bool {
        matches!(self.backend, Backend::Confined(_))
    }

    /// The whole content of a file.
    pub fn read(&self, spelled: &str) -> Result<Vec<u8>, GateError> {
        self.read_with(spelled, <[u8]>::to_vec)
    }

    /// The whole content of a file, lent to `with`: what it makes of the
    /// bytes (a Buzz string, say) is built from the gate's read buffer,
    /// with no owned copy of the file in between.
    pub fn read_with<T>(
        &self,
        spelled: &str,
        with: impl FnOnce(&[u8]) -> T,
    ) -> Result<T, GateError> {
        match &self.backend {
            Backend::Confined(c) => c.read_with(spelled, with),
            Backend::Ambient(a) => a.read(spelled).map(|bytes| with(&bytes)),
        }
    }

    /// A file opened for reading as [`Gate::read`] would open it, for a
    /// caller that bounds how much it reads (a spell file).
    pub(crate) fn open_file(&self, spelled: &str) -> Result<std::fs::File, GateError> {
        match &self.backend {
            Backend::Confined(c) => c.open_file(spelled),
            Backend::Ambient(a) => a.open_file(spelled),
        }
    }

    /// Creates or truncates (or appends to) a file and writes `data`.
    pub fn write(&self, spelled: &str, data: &[u8], mode: WriteMode) -> Result<(), GateError> {
        match &self.backend {
            Backend::Confined(c) => c.write(spelled, data, mode),
            Backend::Ambient(a) => a.write(spelled, data, mode),
        }
    }

    /// Whether the path exists. Asking is a read: an ungranted path is
    /// denied rather than reported missing, so a spell cannot probe for
    /// secrets.
    pub fn exists(&self, spelled: &str) -> Result<bool, GateError> {
        match &self.backend {
            Backend::Confined(c) => c.exists(spelled),
            Backend::Ambient(a) => a.exists(spelled),
        }
    }

    /// The names in a directory, sorted.
    pub fn list(&self, spelled: &str) -> Result<Vec<String>, GateError> {
        let mut names = match &self.backend {
            Backend::Confined(c) => c.list(spelled),
            Backend::Ambient(a) => a.list(spelled),
        }?;
        names.sort();
        Ok(names)
    }

    /// Creates a directory and its missing parents, like `mkdir -p`.
    pub fn make_directory(&self, spelled: &str) -> Result<(), GateError> {
        match &self.backend {
            Backend::Confined(c) => c.make_directory(spelled),
            Backend::Ambient(a) => a.make_directory(spelled),
        }
    }

    /// Removes a file, a symlink or an empty directory.
    pub fn delete(&self, spelled: &str) -> Result<(), GateError> {
        match &self.backend {
            Backend::Confined(c) => c.delete(spelled),
            Backend::Ambient(a) => a.delete(spelled),
        }
    }

    /// Renames `from` to `to`. Both ends are checked before anything
    /// happens, so a denied move leaves the source as it was.
    pub fn rename(&self, from: &str, to: &str) -> Result<(), GateError> {
        match &self.backend {
            Backend::Confined(c) => c.rename(from, to),
            Backend::Ambient(a) => a.rename(from, to),
        }
    }

    /// Copies the content of file `from` to `to` (created or truncated).
    pub fn copy(&self, from: &str, to: &str) -> Result<(), GateError> {
        match &self.backend {
            Backend::Confined(c) => c.copy(from, to),
            Backend::Ambient(a) => a.copy(from, to),
        }
    }
}
