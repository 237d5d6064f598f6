//! No capabilities, root included (docs/design.md): before any spell runs,
//! magus locks its securebits (root gains nothing at `execve`, set-uid
//! gives nothing) and empties every capability set, bounding and ambient
//! too, so no child ever holds one — not `CAP_DAC_READ_SEARCH` (file
//! handles), not `CAP_CHOWN`/`CAP_FOWNER` (metadata outside the grants),
//! not `CAP_SYS_RAWIO` (`/proc/kcore`), not `CAP_SYS_ADMIN` (mounts), not
//! `CAP_NET_ADMIN`/`CAP_NET_RAW` (the host's addresses, routes, sniffing).
//! Inside the jail these are the user namespace's capabilities; without
//! one they are root's own.

use super::error::EnforceError;
use caps::{CapSet, Capability};

/// The securebits set and locked: root is not special at `execve`, a
/// set-uid switch keeps no capability, none can be kept or raised ambient.
const LOCKED_SECUREBITS: libc::c_int = libc::SECBIT_NOROOT
    | libc::SECBIT_NOROOT_LOCKED
    | libc::SECBIT_NO_SETUID_FIXUP
    | libc::SECBIT_NO_SETUID_FIXUP_LOCKED
    | libc::SECBIT_KEEP_CAPS_LOCKED
    | libc::SECBIT_NO_CAP_AMBIENT_RAISE
    | libc::SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;

/// How far the drop went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CapabilityDrop {
    /// Every set empty, bounding included, securebits locked.
    Complete,
    /// The process held no `CAP_SETPCAP` (an ordinary user outside a user
    /// namespace): its sets are emptied, but the bounding set and the
    /// securebits stay as they were. Such a process has no capability to
    /// regain, and `no_new_privs` (set by the syscall guard) stops set-uid
    /// and file capabilities from giving any.
    BoundingKept,
}

/// Empties every capability set of the calling thread. Call it while the
/// process has one thread (capabilities are per thread), after the jail is
/// built and before the syscall guard and Landlock.
pub(crate) fn drop_all_capabilities() -> Result<CapabilityDrop, EnforceError> {
    let complete = has_setpcap()?;
    if complete {
        lock_securebits()?;
        drop_whole_bounding_set()?;
    }
    // One `PR_CAP_AMBIENT_CLEAR_ALL`, not a lower per capability.
    if caps::runtime::ambient_set_supported().is_ok() {
        clear(CapSet::Ambient)?;
    }
    // Clearing the permitted set clears the effective one with it.
    for set in [CapSet::Inheritable, CapSet::Permitted] {
        clear(set)?;
    }
    Ok(match complete {
        true => CapabilityDrop::Complete,
        false => CapabilityDrop::BoundingKept,
    })
}

fn has_setpcap() -> Result<bool, EnforceError> {
    let set = CapSet::Effective;
    let capability = Capability::CAP_SETPCAP;
    caps::has_cap(None, set, capability).map_err(|e| failure(set, Some(capability), e.to_string()))
}

/// `prctl(PR_SET_SECUREBITS)`: neither `nix` nor `caps` wraps it.
fn lock_securebits() -> Result<(), EnforceError> {
    // SAFETY: PR_SET_SECUREBITS takes one integer argument and touches no
    // memory of ours.
    let rc = unsafe { libc::prctl(libc::PR_SET_SECUREBITS, LOCKED_SECUREBITS as libc::c_ulong) };
    if rc == 0 {
        return Ok(());
    }
    Err(EnforceError::DropCapability {
        capability: "securebits".into(),
        set: "securebits",
        reason: std::io::Error::last_os_error().to_string(),
    })
}

/// Drops every capability this kernel knows from the bounding set, by
/// number until the kernel says `EINVAL` (past `CAP_LAST_CAP`): one call
/// each (`caps`' helpers read the set before each change, three calls a
/// capability), and none is missed that is newer than the `caps` crate.
fn drop_whole_bounding_set() -> Result<(), EnforceError> {
    for index in 0..64 {
        // SAFETY: PR_CAPBSET_DROP takes one integer argument and touches
        // no memory of ours.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, index as libc::c_ulong) } == 0 {
            continue;
        }
        let error = std::io::Error::last_os_error();
        if error.raw_os_error() == Some(libc::EINVAL) && index > 0 {
            return Ok(());
        }
        return Err(EnforceError::DropCapability {
            capability: format!("capability {index}"),
            set: set_name(CapSet::Bounding),
            reason: error.to_string(),
        });
    }
    Ok(())
}

fn clear(set: CapSet) -> Result<(), EnforceError> {
    caps::clear(None, set).map_err(|e| failure(set, None, e.to_string()))
}

fn failure(set: CapSet, capability: Option<Capability>, reason: String) -> EnforceError {
    EnforceError::DropCapability {
        capability: capability.map_or_else(|| "all".to_string(), |c| c.to_string()),
        set: set_name(set),
        reason,
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
