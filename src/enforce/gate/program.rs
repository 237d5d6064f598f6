//! Resolving the program a spell launches, and checking it may be executed.
//!
//! The lookup follows the shell: a name with a `/` is a path, any other
//! name is searched on the *scrubbed* `PATH` the child will see, first match
//! wins. The match is then resolved to its real file, because that is what
//! Landlock checks on `execve`, and refused with MGS2007 when ungranted.

use super::{Denial, DenialReason, FsOp, Gate, GateError};
use crate::policy::{Access, NormalPath};
use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Where a program name was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramLookup {
    /// The path the program was found at (what `sh.which` returns).
    pub found: PathBuf,
    /// Its real, symlink-free path (what is executed and checked).
    pub real: PathBuf,
}

impl Gate {
    /// Finds `program` on `path_var` (the child's `PATH`), without checking.
    pub fn which(&self, program: &str, path_var: Option<&OsStr>) -> Option<PathBuf> {
        if program.is_empty() {
            return None;
        }
        if program.contains('/') {
            let abs = self.cwd.join(program);
            return is_executable(&abs).then_some(abs);
        }
        std::env::split_paths(path_var?)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join(program))
            .find(|candidate| is_executable(candidate))
    }

    /// Finds `program` and checks that the sandbox lets it run.
    pub fn resolve_program(
        &self,
        program: &str,
        path_var: Option<&OsStr>,
    ) -> Result<ProgramLookup, GateError> {
        let op = FsOp::Exec;
        if self.is_on() {
            self.refuse_unseen(program, path_var)?;
        }
        let found = self.which(program, path_var).ok_or_else(|| {
            let e = std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "program not found on the sandboxed PATH",
            );
            GateError::io(op, program, e)
        })?;
        let real = std::fs::canonicalize(&found).map_err(|e| GateError::io(op, program, e))?;
        if self.is_on() && !self.may_execute(&real) {
            let leads_to = (real != found).then(|| real.clone());
            let denial = Denial::new(
                op,
                Access::Execute,
                program,
                &found,
                leads_to,
                DenialReason::NotGranted,
            );
            return Err(denial.into());
        }
        Ok(ProgramLookup { found, real })
    }
}

impl Gate {
    /// In the jail an ungranted program does not exist in magus's view
    /// either, so "not found" would hide the reason: a path spelled with a
    /// `/` is checked before it is looked for, and a bare name that no
    /// granted `PATH` directory holds is refused at the first ungranted
    /// one (where, outside the jail, it would have been found).
    fn refuse_unseen(&self, program: &str, path_var: Option<&OsStr>) -> Result<(), GateError> {
        let candidate = if program.contains('/') {
            Some(self.cwd.join(program))
        } else if self.which(program, path_var).is_none() {
            std::env::split_paths(path_var.unwrap_or_default())
                .filter(|dir| dir.is_absolute() && !dir.exists())
                .map(|dir| dir.join(program))
                .find(|candidate| !self.may_execute(candidate))
        } else {
            None
        };
        let Some(candidate) = candidate else {
            return Ok(());
        };
        let Ok(real) = crate::enforce::beneath::resolve_existing_prefix(&candidate) else {
            return Ok(());
        };
        if self.may_execute(&real) {
            return Ok(());
        }
        let leads_to = (real != candidate).then(|| real.clone());
        let reason = DenialReason::NotGranted;
        let denial = Denial::new(
            FsOp::Exec,
            Access::Execute,
            program,
            &candidate,
            leads_to,
            reason,
        );
        Err(denial.into())
    }

    /// Whether the policy lets the program at `real` (a resolved path)
    /// run; a path the kernel did not hand back in normal form does not.
    fn may_execute(&self, real: &Path) -> bool {
        NormalPath::new(real)
            .is_ok_and(|real| self.policy.check(&real, Access::Execute).is_allowed())
    }
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
