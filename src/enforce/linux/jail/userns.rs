//! The jail's user namespace (for root too, so every mount copied from
//! the host is locked and cannot be peeled off), entered by the original
//! process. The others are made with the jail's first process
//! (`super::reaper`): PID by the `clone` that forks it, so the original
//! stays in the host's (the proxy it may fork later must not live in the
//! jail's); IPC (no System V object of the user's session is reachable)
//! and mount by PID 1 itself, so a failed view leaves the original's
//! mounts untouched.

use nix::errno::Errno;
use nix::sched::{setns, unshare, CloneFlags};
use nix::unistd::{getegid, geteuid};
use std::os::fd::OwnedFd;

use super::{JailUnavailable, UserNamespace};

/// The testing override: `MAGUS_SANDBOX_USERNS=0` behaves as a machine
/// that refuses user namespaces (the jail's and the network's).
pub(crate) const USERNS_VAR: &str = "MAGUS_SANDBOX_USERNS";

/// Whether magus may try a user namespace at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsernsRequest {
    /// Use one where the kernel allows it.
    Allowed,
    /// `MAGUS_SANDBOX_USERNS=0`: behave as on a machine that refuses them
    /// (for testing the fallback).
    ForcedOff,
}

impl UsernsRequest {
    /// `MAGUS_SANDBOX_USERNS=0` forces the fallback; anything else allows.
    pub fn from_env_value(value: Option<&std::ffi::OsStr>) -> Self {
        match value {
            Some(v) if v == "0" => UsernsRequest::ForcedOff,
            _ => UsernsRequest::Allowed,
        }
    }
}

/// Enters a user namespace of its own (when allowed): the one made
/// `ahead` (see `super::ahead`) where there is one. Root falls back to no
/// user namespace when the kernel refuses one (the mounts are then not
/// locked, but children hold no capability to peel them).
pub(super) fn enter(
    request: UsernsRequest,
    ahead: Option<OwnedFd>,
) -> Result<UserNamespace, JailUnavailable> {
    if request == UsernsRequest::ForcedOff {
        return Err(JailUnavailable::UsernsForcedOff);
    }
    match ahead {
        Some(made) if setns(&made, CloneFlags::CLONE_NEWUSER).is_ok() => Ok(UserNamespace::Created),
        _ => enter_user_namespace(),
    }
}

fn enter_user_namespace() -> Result<UserNamespace, JailUnavailable> {
    let (uid, gid) = (geteuid(), getegid());
    match unshare(CloneFlags::CLONE_NEWUSER) {
        Ok(()) => {
            map_ids(uid.as_raw(), gid.as_raw()).map_err(JailUnavailable::IdMap)?;
            Ok(UserNamespace::Created)
        }
        Err(_) if uid.is_root() => Ok(UserNamespace::NotNeeded),
        Err(errno) => Err(JailUnavailable::Unshare(errno)),
    }
}

/// Maps the caller's uid and gid to themselves (root to root), so files it
/// creates keep their owner and `id` reads the same inside. Only one id is
/// mapped: every other owner shows as the overflow id, and nobody inside
/// can become it.
fn map_ids(uid: u32, gid: u32) -> Result<(), Errno> {
    let write = |file: &str, text: String| {
        std::fs::write(file, text).map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(0)))
    };
    write("/proc/self/setgroups", "deny".to_owned())?;
    write("/proc/self/uid_map", to_itself(uid))?;
    write("/proc/self/gid_map", to_itself(gid))
}

/// The line of `uid_map` or `gid_map` that maps `id` to itself (the
/// helper of `super::ahead` writes the same).
pub(super) fn to_itself(id: u32) -> String {
    format!("{id} {id} 1\n")
}

#[cfg(test)]
mod tests {
    use super::UsernsRequest;

    #[test]
    fn the_override_reads_only_zero() {
        let read = |v: Option<&str>| UsernsRequest::from_env_value(v.map(std::ffi::OsStr::new));
        assert_eq!(read(Some("0")), UsernsRequest::ForcedOff);
        assert_eq!(read(Some("1")), UsernsRequest::Allowed);
        assert_eq!(read(None), UsernsRequest::Allowed);
    }
}
