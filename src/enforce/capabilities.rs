//! The capabilities through which a root child would read files past
//! Landlock, without opening them: kernel memory (`/proc/kcore`, which
//! holds the page cache), port I/O, modules, BPF, perf events, `kexec` and
//! device nodes. magus drops them from every set of its own before any
//! spell runs, so no child has them: after `execve` a root process gets
//! its bounding and inheritable sets, nothing more. The syscall guard
//! refuses most of the same calls too; this also covers `/proc/kcore`,
//! which is an `open` the guard cannot tell apart. The network ones
//! (`CAP_NET_ADMIN`, `CAP_NET_RAW`) go too: no setting lets a child change
//! the host's addresses and routes, or sniff with packet sockets.

use super::error::EnforceError;
use caps::{CapSet, Capability};

/// The capabilities dropped.
pub const DROPPED: [Capability; 8] = [
    // /proc/kcore, /dev/mem and port I/O.
    Capability::CAP_SYS_RAWIO,
    Capability::CAP_SYS_MODULE,
    // Device nodes.
    Capability::CAP_MKNOD,
    // BPF programs and perf events read kernel memory.
    Capability::CAP_BPF,
    Capability::CAP_PERFMON,
    // kexec: a new kernel.
    Capability::CAP_SYS_BOOT,
    // The host network: addresses, routes, firewall, sniffing (DESIGN §6b).
    Capability::CAP_NET_ADMIN,
    Capability::CAP_NET_RAW,
];

/// Whether the bounding set could shrink too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapabilityDrop {
    /// Dropped from every set, bounding included: no descendant can regain
    /// them.
    Complete,
    /// Without `CAP_SETPCAP` the bounding set stays; the other sets were
    /// emptied of them. A non-root child cannot gain them anyway
    /// (`no_new_privs` is set).
    BoundingKept,
}

/// Drops [`DROPPED`] from the calling thread's ambient, inheritable,
/// bounding, effective and permitted sets, in the order the kernel allows.
/// Call it while the process has one thread (capabilities are per thread).
pub fn drop_kernel_capabilities() -> Result<CapabilityDrop, EnforceError> {
    let supported = caps::runtime::thread_all_supported();
    let bounding = match has(CapSet::Effective, Capability::CAP_SETPCAP)? {
        true => CapabilityDrop::Complete,
        false => CapabilityDrop::BoundingKept,
    };
    let ambient = caps::runtime::ambient_set_supported().is_ok();
    for capability in DROPPED.iter().filter(|c| supported.contains(c)) {
        if ambient {
            drop_from(CapSet::Ambient, *capability)?;
        }
        drop_from(CapSet::Inheritable, *capability)?;
        if bounding == CapabilityDrop::Complete {
            drop_from(CapSet::Bounding, *capability)?;
        }
        drop_from(CapSet::Effective, *capability)?;
        drop_from(CapSet::Permitted, *capability)?;
    }
    Ok(bounding)
}

fn has(set: CapSet, capability: Capability) -> Result<bool, EnforceError> {
    caps::has_cap(None, set, capability).map_err(|e| failure(set, capability, e))
}

fn drop_from(set: CapSet, capability: Capability) -> Result<(), EnforceError> {
    caps::drop(None, set, capability).map_err(|e| failure(set, capability, e))
}

fn failure(set: CapSet, capability: Capability, error: caps::errors::CapsError) -> EnforceError {
    EnforceError::DropCapability {
        capability: capability.to_string(),
        set: set_name(set),
        reason: error.to_string(),
    }
}

fn set_name(set: CapSet) -> &'static str {
    match set {
        CapSet::Ambient => "ambient",
        CapSet::Bounding => "bounding",
        CapSet::Effective => "effective",
        CapSet::Inheritable => "inheritable",
        CapSet::Permitted => "permitted",
    }
}
