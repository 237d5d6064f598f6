//! The part that enforces: the gate the bindings call before every path or
//! process operation, the Landlock domain the process installs on itself,
//! and the launch of confined child processes.

pub mod beneath;
pub mod child;
mod error;
pub mod linux;

pub use linux::{
    capabilities, jail, landlock, limits, network, process, proxy, reexec, seccomp, survivors,
};

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
