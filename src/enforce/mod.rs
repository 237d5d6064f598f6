//! The part that enforces: the gate the bindings call before every path or
//! process operation, the Landlock domain the process installs on itself,
//! and the launch of confined child processes.
//!
//! The platform line: `linux` (the kernel layer) is built only for Linux
//! with the default `kernel` feature (`cfg(kernel_layer)`, set by
//! build.rs); everything else here is the interpreter layer every OS gets.
//! Without the kernel layer, `interpreter_only` stands in for its domain.

pub mod beneath;
pub mod child;
mod error;
pub mod host;
#[cfg(not(kernel_layer))]
mod interpreter_only;
#[cfg(kernel_layer)]
pub mod leftovers;
#[cfg(kernel_layer)]
pub mod linux;

#[cfg(not(kernel_layer))]
pub use interpreter_only::{platform, Domain, ReexecState};
#[cfg(kernel_layer)]
pub use linux::{
    capabilities, jail, landlock, limits, network, process, reexec, seccomp, survivors,
    unix_sockets, untraceable,
};

pub use child::{ChildStdio, ConfinedChild, ConfinedCommand, RawStream};
pub use error::EnforceError;
#[cfg(kernel_layer)]
pub use linux::{
    install_on_self, probe_landlock, reexec_scrubbed, take_reexec_state, ChildRestriction, Domain,
    Enforcement, JailPlan, JailStatus, JailUnavailable, LandlockRequest, LandlockStatus,
    ReexecState, SyscallGuard, SyscallGuardStatus, Unavailable, Unenforced, UsernsRequest,
    ViewInputs,
};
pub mod gate;
