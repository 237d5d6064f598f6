//! The Linux kernel layer: the jail (namespaces and the view), Landlock,
//! the seccomp syscall guard, capabilities, the network namespace (the
//! host-filtering proxy it leads to is `crate::proxy`), sandbox limits, the survivor supervisor, the
//! user's terminal put back as found, and the scrubbed re-exec. Everything here speaks to Linux-only system calls;
//! the rest of `enforce` (the gate, child launch) is the interpreter layer.

// The moved modules still say `super::error`; the enforce-wide error type
// stays outside the kernel layer.
use super::error;

pub mod capabilities;
pub mod handover;
pub mod jail;
pub mod landlock;
pub mod limits;
pub mod network;
pub mod openat2_beneath;
pub mod process;
pub mod reexec;
pub mod seccomp;
pub mod survivors;
pub mod terminal;
pub mod unix_sockets;
pub mod untraceable;

// The kernel layer's API, re-exported by `crate::enforce`.
pub use ::landlock::RulesetError;
pub use jail::{JailPlan, JailStatus, JailUnavailable, UsernsRequest, ViewInputs};
pub use landlock::{
    install_on_self, probe as probe_landlock, ChildRestriction, Domain, Enforcement,
    LandlockRequest, LandlockStatus, Unavailable, Unenforced,
};
pub use reexec::{reexec_scrubbed, take_reexec_state, ReexecState};
pub use seccomp::{SyscallGuard, SyscallGuardStatus};
