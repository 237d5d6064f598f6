//! The part that enforces: the gate the bindings call before every path or
//! process operation, the Landlock domain the process installs on itself,
//! and the launch of confined child processes.

pub mod beneath;
pub mod capabilities;
pub mod child;
mod error;
pub mod landlock;
pub mod pidns;
pub mod process;
pub mod proxy;
pub mod reexec;
pub mod seccomp;

pub use child::{ChildStdio, ConfinedChild, ConfinedCommand};
pub use error::EnforceError;
pub use landlock::{
    install_on_self, ChildRestriction, Domain, Enforcement, LandlockRequest, LandlockStatus,
    Unavailable, Unenforced,
};
pub use pidns::{
    enter_private_pid_namespace, pid_isolation, probe_private_pid_namespace, PidIsolation,
    PidIsolationUnavailable,
};
pub use reexec::{reexec_scrubbed, take_reexec_state, ReexecState};
pub use seccomp::{SyscallGuard, SyscallGuardStatus};
pub mod gate;
