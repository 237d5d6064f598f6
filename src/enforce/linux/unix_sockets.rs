//! Unix sockets where magus has no jail (user namespaces refused): the
//! user's tmux server, ssh-agent and session bus listen on pathname
//! sockets that no view hides and that Landlock before ABI 9 cannot
//! scope. There children may create no unix socket (`socket(AF_UNIX)`,
//! a datagram `socketpair`), unless `magus.yaml` grants a socket by name.
//! Decided once per run ([`decide`]); each child adds the filter.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use seccompiler::{BpfProgram, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompRule};

use super::error::EnforceError;
use super::landlock::{LandlockStatus, Unenforced};
use crate::policy::{Grant, GrantSource};

/// What children may do with unix sockets in this run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UnixSockets {
    /// Nothing to add: the jail's view holds only the granted sockets, or
    /// Landlock refuses every pathname socket outside the grants
    /// (`resolve_unix`, ABI 9) and every abstract one made outside
    /// (scoping, ABI 6).
    Confined,
    /// `socket(AF_UNIX, ..)` and `socketpair(AF_UNIX, SOCK_DGRAM, ..)`
    /// fail with `EPERM` for every child; stream and seqpacket pairs,
    /// which reach no path, stay.
    Refused,
    /// `magus.yaml` grants this socket. Seccomp cannot read the path a
    /// socket connects to, so granting one opens every socket the user
    /// can reach.
    OpenedBy(PathBuf),
}

/// The rule for a run: `jailed` when this run or an enclosing one has the
/// jail; `landlock` as installed; `grants` the resolved policy's.
pub(crate) fn decide(jailed: bool, landlock: &LandlockStatus, grants: &[Grant]) -> UnixSockets {
    if jailed || landlock_confines(landlock) {
        return UnixSockets::Confined;
    }
    match granted_socket(grants) {
        Some(path) => UnixSockets::OpenedBy(path),
        None => UnixSockets::Refused,
    }
}

/// Whether Landlock alone keeps children from sockets outside the grants.
fn landlock_confines(landlock: &LandlockStatus) -> bool {
    match landlock {
        LandlockStatus::Enforced { unenforced, .. } => !unenforced.iter().any(|u| {
            matches!(
                u,
                Unenforced::FsRight {
                    name: "resolve_unix",
                    ..
                } | Unenforced::Scope {
                    name: "abstract unix socket",
                    ..
                }
            )
        }),
        LandlockStatus::Unavailable { .. } => false,
    }
}

/// The first `allow:` entry of `magus.yaml` that is a unix socket now.
/// Built-in grants never count: only a socket the user named opens them.
fn granted_socket(grants: &[Grant]) -> Option<PathBuf> {
    grants
        .iter()
        .filter(|g| matches!(g.source, GrantSource::Config { .. }))
        .map(|g| g.path.as_path())
        .find(|path| is_socket(path))
        .map(Path::to_path_buf)
}

fn is_socket(path: &Path) -> bool {
    path.symlink_metadata()
        .is_ok_and(|m| m.file_type().is_socket())
}

/// The children's filter, set once before any child starts. Global: each
/// child installs it between clone and exec, where it may not allocate or
/// lock, and every launch site reaches it.
static FOR_CHILDREN: OnceLock<BpfProgram> = OnceLock::new();

impl UnixSockets {
    /// Makes every child started from now on refuse unix sockets, where
    /// the rule says so. Call before the spell's first launch.
    pub(crate) fn install_for_children(&self) -> Result<(), EnforceError> {
        if *self != UnixSockets::Refused {
            return Ok(());
        }
        let program = refusing_program()?;
        // A second call (never made) would keep the first program: the same.
        let _ = FOR_CHILDREN.set(program);
        Ok(())
    }
}

/// `socket(AF_UNIX, ..)` of any type, and datagram `socketpair`s: the
/// kernel sends a datagram to the path `sendto` names even on a connected
/// socket, so a datagram pair reaches `/dev/log`, journald and any
/// datagram server. Stream and seqpacket pairs ignore or refuse an
/// address and cannot connect again, so they reach nothing outside.
/// `EPERM`, as the guard's other refusals: glibc's nscd lookup and
/// systemd's NSS modules take any failure as "no service" and go on with
/// `/etc/passwd` and DNS.
fn refusing_program() -> Result<BpfProgram, EnforceError> {
    let unix = || arg_is(0, libc::AF_UNIX as u64);
    let dgram = SeccompCondition::new(
        1,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK),
        libc::SOCK_DGRAM as u64,
    )?;
    let rules = [
        (libc::SYS_socket, vec![SeccompRule::new(vec![unix()?])?]),
        (
            libc::SYS_socketpair,
            vec![SeccompRule::new(vec![unix()?, dgram])?],
        ),
    ];
    super::seccomp::compile(rules.into_iter().collect(), libc::EPERM)
}

/// The type bits of `socket`'s second argument (the rest are
/// `SOCK_NONBLOCK` and `SOCK_CLOEXEC`).
const SOCK_TYPE_MASK: u64 = 0xf;

/// `arg == value`, on the low 32 bits (the family is an `int`).
fn arg_is(arg: u8, value: u64) -> Result<SeccompCondition, EnforceError> {
    Ok(SeccompCondition::new(
        arg,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Eq,
        value,
    )?)
}

/// Adds the refusal to the calling process where the run's rule refuses
/// unix sockets (nothing otherwise). For the child between clone and
/// exec: reads a value set before any child existed, allocates nothing.
pub(crate) fn apply_to_child() -> Result<(), libc::c_int> {
    match FOR_CHILDREN.get() {
        Some(program) => {
            super::seccomp::apply(program).map_err(|e| e.raw_os_error().unwrap_or(libc::EINVAL))
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::enforce::Unavailable;
    use crate::policy::Mode;

    fn enforced(unenforced: Vec<Unenforced>) -> LandlockStatus {
        LandlockStatus::Enforced { abi: 7, unenforced }
    }

    const NO_RESOLVE_UNIX: Unenforced = Unenforced::FsRight {
        name: "resolve_unix",
        since_abi: 9,
    };

    fn grant(path: &Path, source: GrantSource) -> Grant {
        Grant {
            path: path.to_path_buf(),
            mode: Mode::Rw,
            source,
        }
    }

    fn config() -> GrantSource {
        GrantSource::Config {
            spelled: "x".into(),
            line: 1,
            column: 1,
            spell: None,
        }
    }

    #[test]
    fn without_a_jail_or_resolve_unix_children_get_no_unix_socket() {
        let lacking = enforced(vec![NO_RESOLVE_UNIX]);
        assert_eq!(decide(false, &lacking, &[]), UnixSockets::Refused);
        let absent = LandlockStatus::Unavailable {
            reason: Unavailable::ForcedOff,
        };
        assert_eq!(decide(false, &absent, &[]), UnixSockets::Refused);
        assert_eq!(decide(true, &lacking, &[]), UnixSockets::Confined);
        assert_eq!(decide(false, &enforced(vec![]), &[]), UnixSockets::Confined);
        let no_scope = Unenforced::Scope {
            name: "abstract unix socket",
            since_abi: 6,
        };
        assert_eq!(
            decide(false, &enforced(vec![no_scope]), &[]),
            UnixSockets::Refused
        );
    }

    /// Only a socket that `magus.yaml` names opens them: not a directory,
    /// not a built-in grant of a socket.
    #[test]
    fn a_socket_named_in_the_policy_opens_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let lacking = enforced(vec![NO_RESOLVE_UNIX]);
        let builtin = [grant(&path, GrantSource::Builtin("test"))];
        assert_eq!(decide(false, &lacking, &builtin), UnixSockets::Refused);
        let the_dir = [grant(dir.path(), config())];
        assert_eq!(decide(false, &lacking, &the_dir), UnixSockets::Refused);
        let named = [grant(dir.path(), config()), grant(&path, config())];
        assert_eq!(
            decide(false, &lacking, &named),
            UnixSockets::OpenedBy(path.clone())
        );
    }

    #[test]
    fn the_refusing_program_compiles() {
        assert!(refusing_program().unwrap().len() > 4);
    }
}
