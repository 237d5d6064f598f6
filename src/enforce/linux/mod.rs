//! The Linux kernel layer: the jail (namespaces and the view), Landlock,
//! the seccomp syscall guard, capabilities, the network namespace (the
//! host-filtering proxy it leads to is `crate::proxy`), sandbox limits, the survivor supervisor, the
//! user's terminal put back as found, and the scrubbed re-exec. Everything here speaks to Linux-only system calls;
//! the rest of `enforce` (the gate, child launch) is the interpreter layer.

// The moved modules still say `super::error`; the enforce-wide error type
// stays outside the kernel layer.
use super::error;

pub(crate) mod capabilities;
pub(crate) mod handover;
pub(crate) mod jail;
pub(crate) mod landlock;
pub(crate) mod limits;
pub(crate) mod network;
pub(crate) mod openat2_beneath;
pub(crate) mod process;
pub(crate) mod reexec;
pub(crate) mod run_temp;
pub(crate) mod seccomp;
pub(crate) mod survivors;
pub(crate) mod terminal;
pub(crate) mod unix_sockets;
pub(crate) mod untraceable;

// The kernel layer's API, re-exported by `crate::enforce`.
pub(crate) use ::landlock::RulesetError;
pub use jail::{JailPlan, UsernsRequest, ViewInputs};
pub(crate) use jail::{JailStatus, JailUnavailable};
pub(crate) use landlock::probe as probe_landlock;
pub use landlock::{Domain, LandlockRequest, Unavailable};
// Only the benches and the kernel harness install a bare domain.
#[cfg(feature = "internals")]
pub use landlock::install_on_self;
pub(crate) use landlock::{ChildRestriction, LandlockStatus, Unenforced};
pub(crate) use reexec::ReexecState;
pub use reexec::{reexec_scrubbed, take_reexec_state};
pub use seccomp::SyscallGuard;
