//! Resolving the program a spell launches, and checking it may be executed.
//!
//! The lookup follows the shell: a name with a `/` is a path, any other
//! name is searched on the *scrubbed* `PATH` the child will see, first match
//! wins. The match is then resolved to its real file, because that is what
//! Landlock checks on `execve`, and refused with MGS2007 when ungranted.

use super::{Backend, Denial, DenialReason, FsOp, Gate, GateError};
use crate::policy::Access;
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
        let found = self.which(program, path_var).ok_or_else(|| {
            let e = std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "program not found on the sandboxed PATH",
            );
            GateError::io(op, program, e)
        })?;
        let real = std::fs::canonicalize(&found).map_err(|e| GateError::io(op, program, e))?;
        let allowed = match &self.backend {
            Backend::Confined(confined) => confined.may_execute(&real),
            Backend::Ambient(_) => true,
        };
        if !allowed {
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

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
