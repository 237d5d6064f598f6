//! The part that enforces: the gate the bindings call before every path or
//! process operation, the Landlock domain the process installs on itself,
//! and the launch of confined child processes.

pub mod beneath;
pub mod capabilities;
pub mod child;
mod error;
pub mod jail;
pub mod landlock;
pub mod limits;
pub mod network;
pub mod process;
pub mod proxy;
pub mod reexec;
pub mod seccomp;
pub mod survivors;

pub use child::{ChildStdio, ConfinedChild, ConfinedCommand};
pub use error::EnforceError;
pub use jail::{JailPlan, JailStatus, JailUnavailable, UsernsRequest, ViewInputs};
pub use landlock::{
    install_on_self, ChildRestriction, Domain, Enforcement, LandlockRequest, LandlockStatus,
    Unavailable, Unenforced,
};
pub use reexec::{reexec_scrubbed, take_reexec_state, ReexecState};
pub use seccomp::{SyscallGuard, SyscallGuardStatus};
pub mod gate;
