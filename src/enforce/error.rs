//! The one error type of the kernel layer: what can fail while building the
//! Landlock ruleset, the seccomp filter, the PID namespace, the re-exec and
//! the launch of a confined child. Syscall variants carry the OS error and,
//! where there is one, the path. Nothing here is rendered for users.

use std::io;
use std::path::PathBuf;

/// A failure of the kernel layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
// Most variants are the kernel layer's; without it only the launch fails.
#[cfg_attr(not(kernel_layer), allow(dead_code))]
pub enum EnforceError {
    /// Another thread already runs: a restriction of this thread alone
    /// would leave it unconfined.
    #[error("{count} threads are running; confine the process before starting any")]
    ThreadsRunning { count: usize },
    /// A granted path could not be opened to become a Landlock rule.
    #[error("cannot open granted path {path} for Landlock: {source}")]
    OpenGrant { path: PathBuf, source: io::Error },
    /// The Landlock ruleset could not be built or installed.
    #[cfg(kernel_layer)]
    #[error("landlock: {source}")]
    Landlock {
        #[from]
        source: super::linux::RulesetError,
    },
    /// The ruleset descriptor could not be duplicated for a child.
    #[error("cannot duplicate the Landlock ruleset for a child: {source}")]
    DupRuleset { source: io::Error },
    /// The seccomp program could not be compiled.
    #[cfg(kernel_layer)]
    #[error("cannot build the seccomp filter: {source}")]
    SeccompBuild {
        #[from]
        source: seccompiler::BackendError,
    },
    /// The seccomp program could not be installed.
    #[error("cannot install the seccomp filter: {source}")]
    SeccompInstall { source: io::Error },
    /// A capability could not be dropped from one of the process's sets.
    #[error("cannot drop {capability} from the {set} set: {reason}")]
    DropCapability {
        capability: String,
        set: &'static str,
        reason: String,
    },
    /// The running architecture has no seccomp support in this build.
    #[error("seccomp filtering is not supported on {arch}")]
    SeccompArch { arch: &'static str },
    /// `execve` of magus itself failed.
    #[error("cannot re-execute {path}: {source}")]
    Reexec { path: PathBuf, source: io::Error },
    /// The process already re-executed itself; doing it again would loop.
    #[error("magus already re-executed itself with a scrubbed environment")]
    ReexecLoop,
    /// An argument or environment entry holds a NUL byte.
    #[error("{what} contains a NUL byte")]
    NulByte { what: &'static str },
    /// A confined child could not be started.
    #[error("cannot start {program}: {source}")]
    Spawn { program: PathBuf, source: io::Error },
}
