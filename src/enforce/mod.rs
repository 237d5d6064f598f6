//! The part that enforces: the gate the bindings call before every path or
//! process operation, the Landlock domain the process installs on itself,
//! and the launch of confined child processes.
//!
//! The platform line: `linux` (the kernel layer) is built only for Linux
//! with the default `kernel` feature (`cfg(kernel_layer)`, set by
//! build.rs); everything else here is the interpreter layer every OS gets.
//! Without the kernel layer, `interpreter_only` stands in for its domain.

pub(crate) mod beneath;
pub(crate) mod child;
mod error;
pub(crate) mod host;
#[cfg(not(kernel_layer))]
mod interpreter_only;
#[cfg(kernel_layer)]
pub(crate) mod leftovers;
#[cfg(kernel_layer)]
pub(crate) mod linux;

#[cfg(not(kernel_layer))]
pub(crate) use interpreter_only::{platform, Domain, ReexecState};
#[cfg(kernel_layer)]
pub(crate) use linux::{
    capabilities, jail, landlock, limits, network, process, run_temp, seccomp, survivors, terminal,
    unix_sockets, untraceable,
};

pub(crate) use child::ConfinedChild;
pub(crate) use child::RawStream;
pub use child::{ChildStdio, ConfinedCommand};
pub use error::EnforceError;
#[cfg(all(kernel_layer, feature = "internals"))]
pub use linux::install_on_self;
#[cfg(kernel_layer)]
pub(crate) use linux::probe_landlock;
#[cfg(kernel_layer)]
pub use linux::{
    reexec_scrubbed, take_reexec_state, Domain, JailPlan, LandlockRequest, SyscallGuard,
    Unavailable, UsernsRequest, ViewInputs,
};
#[cfg(kernel_layer)]
pub(crate) use linux::{
    ChildRestriction, JailStatus, JailUnavailable, LandlockStatus, ReexecState, Unenforced,
};
pub(crate) mod gate;
