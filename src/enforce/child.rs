//! Launch of a confined child (DESIGN §6, §7): a program, its arguments,
//! exactly the environment the caller computed, a working directory and a
//! stdio choice become a running [`ConfinedChild`] that, between clone and
//! exec, enters a further nested Landlock domain, so it cannot trace or
//! read the memory of magus (Landlock's ptrace scoping). The launch is a
//! vfork-style clone ([`vfork`]) prepared entirely in the parent ([`prepare`]).
//!
//! The other protections are process-wide and inherited, not per child:
//! the terminal guard ([`super::seccomp`]) is installed on magus at startup
//! and survives every clone and exec, and the private PID namespace
//! ([`super::pidns`]) is entered before Landlock because a landlocked
//! process may not mount a `/proc`.

mod handle;
mod prepare;
mod vfork;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

pub use self::handle::ConfinedChild;
use self::prepare::Prepared;
use super::error::EnforceError;
use super::landlock::Domain;

/// Where one standard stream of the child goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChildStdio {
    /// Shares magus's stream (the user's terminal, usually).
    #[default]
    Inherit,
    /// A pipe magus reads or writes.
    Piped,
    /// `/dev/null`.
    Null,
}

/// A child process to start inside a nested Landlock domain.
///
/// `program` should be the path the caller resolved on the scrubbed `PATH`
/// (and checked against the exec allowlist); a bare name is looked up on
/// the `PATH` of `env`, as `std::process::Command` does.
#[derive(Debug, Clone)]
pub struct ConfinedCommand {
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    cwd: Option<PathBuf>,
    stdio: [ChildStdio; 3],
}

impl ConfinedCommand {
    /// A command with no arguments, an empty environment, magus's working
    /// directory and inherited stdio.
    pub fn new(program: impl AsRef<Path>) -> Self {
        ConfinedCommand {
            program: program.as_ref().to_path_buf(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
            stdio: [ChildStdio::Inherit; 3],
        }
    }

    /// Appends arguments (not including `argv[0]`).
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    /// The child's whole environment; nothing of magus's is inherited.
    pub fn env(mut self, env: Vec<(OsString, OsString)>) -> Self {
        self.env = env;
        self
    }

    /// The child's working directory.
    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.cwd = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Where stdin, stdout and stderr go.
    pub fn stdio(mut self, stdin: ChildStdio, stdout: ChildStdio, stderr: ChildStdio) -> Self {
        self.stdio = [stdin, stdout, stderr];
        self
    }

    /// Starts the child in a domain nested in `domain` (or unconfined by
    /// Landlock when `domain` confines nothing) and returns once it has
    /// exec'd. A failure before the exec (no such program, not executable,
    /// bad working directory, a refused restriction) is
    /// [`EnforceError::Spawn`] carrying the child's errno.
    pub fn spawn(&self, domain: &Domain) -> Result<ConfinedChild, EnforceError> {
        let restriction = domain.child_restriction()?;
        let prepared = Prepared::new(self)?;
        let pid = vfork::clone_and_exec(&prepared, &restriction).map_err(|source| {
            EnforceError::Spawn {
                program: self.program.clone(),
                source,
            }
        })?;
        // The child's ends of the streams close in `new`: magus keeps its own.
        Ok(ConfinedChild::new(pid, prepared.stdio))
    }
}
