//! The jail (docs/jail.md): once per run, before Landlock, magus enters new
//! user, IPC, PID and mount namespaces and a filesystem view compiled from
//! the policy, so children see only what is granted: no user's sockets in
//! `/tmp` or `/run/user`, no other terminal, nothing to stat or chmod
//! outside the grants. Plan ([`plan`]) then apply ([`apply`]), as
//! bubblewrap does; [`reaper`] holds the processes that wait.
//!
//! Why at startup and not per child: Landlock refuses every `mount(2)` to a
//! restricted process, and one jail for the run keeps spawning cheap.

pub(crate) mod ahead;
mod apply;
mod by_descriptor;
mod cores;
pub(crate) mod gitconfig;
pub(crate) mod host_paths;
pub(crate) mod plan;
pub(crate) mod protect;
mod reaper;
mod sweep;
mod userns;

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{openat2, OFlag, OpenHow, ResolveFlag, AT_FDCWD};
use nix::sched::{unshare, CloneFlags};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, ForkResult};

pub use plan::{JailPlan, ViewInputs};
pub(crate) use reaper::{
    asked_to_end, forget_forward_target, forward_signals_to, stop_forwarding_signals,
};
pub use userns::UsernsRequest;
pub(crate) use userns::USERNS_VAR;

use super::process::is_single_threaded;
use crate::diag::OutputOptions;
use crate::enforce::limits::LimitsPlan;

/// Whether magus and its children live in the jail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JailStatus {
    /// In the namespaces, with the plan's view applied.
    Entered { user_namespace: UserNamespace },
    /// Not jailed: children see the host's filesystem (Landlock still
    /// checks opens) and, without a PID namespace, every process.
    Unavailable { reason: JailUnavailable },
}

/// Whether a user namespace holds the jail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserNamespace {
    /// Root on a kernel that refused one: the view is built all the same,
    /// but its mounts are not locked (children hold no capability to
    /// change them, and the syscall guard refuses `mount`).
    NotNeeded,
    /// Created, the caller's ids mapped to themselves.
    Created,
}

/// Why there is no jail.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JailUnavailable {
    /// Another thread already exists; namespaces need a lone thread.
    #[error("another thread was already running")]
    ThreadsRunning,
    /// `MAGUS_SANDBOX_USERNS=0`.
    #[error("user namespaces turned off by MAGUS_SANDBOX_USERNS=0")]
    UsernsForcedOff,
    /// `unshare` was refused (user namespaces disabled or restricted).
    #[error("user namespaces are refused: {}", .0.desc())]
    Unshare(Errno),
    /// Writing the user namespace's id maps failed.
    #[error("cannot map ids in a user namespace: {}", .0.desc())]
    IdMap(Errno),
    /// `fork` failed.
    #[error("fork failed: {}", .0.desc())]
    Fork(Errno),
    /// The jail's own mount namespace was refused.
    #[error("mount namespace refused: {}", .0.desc())]
    MountNamespace(Errno),
    /// One step of the view failed.
    #[error("cannot {step}: {}", .errno.desc())]
    Step { step: String, errno: Errno },
    /// The namespace's first process died before reporting.
    #[error("the namespace's init process died during setup")]
    ReaperLost,
}

impl JailUnavailable {
    /// Whether the run can go on without the jail: the namespaces were
    /// refused (as on a machine without them). A view that fails once PID
    /// 1 builds it ends the run instead: the policy asked for it, and
    /// going on without it would hide that.
    pub fn leaves_process_usable(&self) -> bool {
        matches!(
            self,
            Self::ThreadsRunning | Self::UsernsForcedOff | Self::Unshare(_)
        )
    }
}

/// Magus proper, just inside the jail: PID 1 is still building the view.
/// The order is in the types: work that reads no path may run now, and
/// Landlock's rules for what the view binds are made through
/// [`Building::open_on_host`]; then [`Building::wait_until_built`], then
/// [`Built::wait_until_sealed`] before any spell code or child runs.
#[must_use = "magus proper must wait until PID 1 has built and sealed the view"]
pub(crate) struct Building {
    user_namespace: UserNamespace,
    reports: reaper::Reports,
}

impl Building {
    /// Whether a user namespace holds the jail.
    pub(crate) fn user_namespace(&self) -> UserNamespace {
        self.user_namespace
    }

    /// Opens `path` (absolute, free of links, as a grant's path is)
    /// beneath the host's root as the jail's namespace had it before PID 1
    /// moved its root, so that Landlock's rules for what the view binds
    /// can be made while the view is built (a bind shows the host's inode,
    /// and a rule follows the inode). `None` where the root could not be
    /// opened, or the path does not open that way (a link on it): the
    /// caller then opens it in the view.
    pub(crate) fn open_on_host(&self, path: &Path) -> Option<OwnedFd> {
        let root = self.reports.host_root.as_ref()?;
        let relative = path.strip_prefix("/").ok()?;
        let how = OpenHow::new()
            .flags(OFlag::O_PATH | OFlag::O_CLOEXEC)
            .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS);
        match relative.as_os_str().is_empty() {
            true => root.try_clone().ok(),
            false => openat2(root.as_fd(), relative, how).ok(),
        }
    }

    /// Whether [`Building::open_on_host`] can open anything.
    pub(crate) fn host_root_held(&self) -> bool {
        self.reports.host_root.is_some()
    }

    /// Waits until PID 1 has built the view (magus proper is forked before
    /// it, see `reaper::become_init`), then moves this process's working
    /// directory, still the host directory magus started in, to the view's
    /// root, and closes the host's root: once the rules are made, magus
    /// proper holds nothing of the host's tree (PID 1 detaches it from the
    /// view). Where PID 1 failed, this process ends at once and says
    /// nothing: the original process names the failing step.
    pub(crate) fn wait_until_built(self) -> Built {
        let reaper::Reports {
            built,
            sealed,
            host_root,
            allowed,
        } = self.reports;
        drop(host_root);
        let mut buf = [0u8; 4];
        let ok = reaper::read_full(&built, &mut buf) == buf.len() && i32::from_le_bytes(buf) == 0;
        if !ok || nix::unistd::chdir("/").is_err() {
            // SAFETY: _exit is always safe; the original reports the failure.
            unsafe { libc::_exit(1) }
        }
        cores::restore(allowed);
        Built { sealed }
    }
}

/// Magus proper in the built view; PID 1 is detaching the host's root.
#[must_use = "no spell code or child may run before the view is sealed"]
pub(crate) struct Built {
    sealed: OwnedFd,
}

impl Built {
    /// Waits until PID 1 has detached the host's root from the view (the
    /// last step of the plan, done while this process drops its
    /// capabilities and installs the syscall guard and Landlock). Call
    /// before any spell code or child runs.
    pub(crate) fn wait_until_sealed(self) -> Result<(), JailUnavailable> {
        let mut buf = [0u8; 4];
        if reaper::read_full(&self.sealed, &mut buf) < buf.len() {
            return Err(JailUnavailable::ReaperLost);
        }
        match i32::from_le_bytes(buf) {
            0 => Ok(()),
            raw => Err(JailUnavailable::Step {
                step: "detach the host's root".to_string(),
                errno: Errno::from_raw(raw),
            }),
        }
    }
}

fn open_host_root() -> Option<OwnedFd> {
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS);
    openat2(AT_FDCWD, "/", how).ok()
}

/// Moves magus into the jail of `plan`, and waits until the view is
/// built (for the kernel test harness, which builds the sandbox piece by
/// piece; a run waits for the seal too, see [`Built`]).
///
/// Call once, on the lone main thread, after the scrubbing re-exec and
/// before capabilities are dropped, the syscall guard and Landlock. On
/// success it returns in magus proper (PID 2 of the new namespace), inside
/// the view; the original process only waits and exits with magus's
/// status. When it cannot, it returns `Unavailable` in the original
/// process, which goes on with the host's view.
#[cfg_attr(not(feature = "internals"), allow(dead_code))]
pub fn enter(plan: &JailPlan, request: UsernsRequest) -> JailStatus {
    let made = ahead::Made::default();
    let limits = LimitsPlan::default();
    let entered = enter_with(plan, request, made, None, OutputOptions::default(), &limits);
    let entered = entered.map(|building| {
        let user_namespace = building.user_namespace();
        // Returns once the view is built, as it always has: PID 1 seals it
        // (detaches the host's root) while the caller drops capabilities
        // and installs the guard and Landlock, which `enter`'s callers (the
        // kernel test harness) do next and do not wait for. The seal's pipe
        // stays open for the life of the process: PID 1 writes to it.
        std::mem::forget(building.wait_until_built());
        user_namespace
    });
    match entered {
        Ok(user_namespace) => JailStatus::Entered { user_namespace },
        Err(reason) => JailStatus::Unavailable { reason },
    }
}

/// [`enter`], joining the namespaces made ahead (`made`, see [`ahead`])
/// instead of making them, with the original serving `outside` while it
/// waits, and returning in magus proper *before* the view is built, as a
/// [`Building`]: the caller may do work that reads no path (join a network
/// namespace, drop capabilities, install the syscall guard), and must
/// wait on it before anything that does. Where it fails, `outside` has
/// been dropped unserved.
pub(crate) fn enter_with(
    plan: &JailPlan,
    request: UsernsRequest,
    made: ahead::Made,
    outside: Option<Box<dyn Outside>>,
    output: OutputOptions,
    limits: &LimitsPlan,
) -> Result<Building, JailUnavailable> {
    if !is_single_threaded() {
        return Err(JailUnavailable::ThreadsRunning);
    }
    let user_namespace = userns::enter(request, made.user)?;
    // Without it magus proper only misses what the view hides: it says
    // "not found" where the host has a file, as a nested run does.
    let answering = host_paths::pair().ok();
    let services: Vec<Box<dyn Outside>> = outside
        .into_iter()
        .chain(answering.map(|a| Box::new(a) as Box<dyn Outside>))
        .collect();
    // PID 1 joins the network namespace before it forks magus proper, so
    // magus proper and every child are born in it; the original stays in
    // the host's. PID 1 holds `limits` (the PID bound, the wall time).
    let started = reaper::start(plan, made.network, services, output, limits);
    if started.is_err() {
        host_paths::forget();
    }
    Ok(Building {
        user_namespace,
        reports: started?,
    })
}

/// Work the original process does for magus proper while it waits
/// outside the jail, in the host's network and PID namespaces, which no
/// process of the jail can reach: forking the host-filtering proxy when
/// the spell starts its first program (`crate::proxy::Launcher`),
/// and saying what the host holds at a path ([`host_paths`]).
pub(crate) trait Outside {
    /// Readable when magus proper asks for something.
    fn requests(&self) -> BorrowedFd<'_>;
    /// Answers what was asked; `false` once nothing more will be.
    fn serve(&mut self) -> bool;
}

/// Whether [`enter`] could make the namespaces here, asked in a throw-away
/// child so this process changes nothing (for `magus sandbox check`). The
/// view itself is not tried: a failing step shows only at `magus run`.
pub(crate) fn probe(request: UsernsRequest) -> JailStatus {
    if !is_single_threaded() {
        let reason = JailUnavailable::ThreadsRunning;
        return JailStatus::Unavailable { reason };
    }
    // SAFETY: single-threaded (checked above); the child only makes
    // syscalls and `_exit`s.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            let others = CloneFlags::CLONE_NEWPID | CloneFlags::CLONE_NEWIPC;
            let code = match userns::enter(request, None) {
                Ok(_) if unshare(others).is_err() => 2,
                Ok(_) if unshare(CloneFlags::CLONE_NEWNS).is_err() => 3,
                Ok(UserNamespace::NotNeeded) => 0,
                Ok(UserNamespace::Created) => 1,
                Err(JailUnavailable::UsernsForcedOff) => 4,
                Err(_) => 2,
            };
            // SAFETY: _exit is always safe.
            unsafe { libc::_exit(code) }
        }
        Ok(ForkResult::Parent { child }) => probe_verdict(waitpid(child, None)),
        Err(errno) => JailStatus::Unavailable {
            reason: JailUnavailable::Fork(errno),
        },
    }
}

fn probe_verdict(status: nix::Result<WaitStatus>) -> JailStatus {
    let reason = match status {
        Ok(WaitStatus::Exited(_, 0)) => {
            let user_namespace = UserNamespace::NotNeeded;
            return JailStatus::Entered { user_namespace };
        }
        Ok(WaitStatus::Exited(_, 1)) => {
            let user_namespace = UserNamespace::Created;
            return JailStatus::Entered { user_namespace };
        }
        Ok(WaitStatus::Exited(_, 3)) => JailUnavailable::MountNamespace(Errno::EPERM),
        Ok(WaitStatus::Exited(_, 4)) => JailUnavailable::UsernsForcedOff,
        _ => JailUnavailable::Unshare(Errno::EPERM),
    };
    JailStatus::Unavailable { reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    /// The host's root opens grants only while the view is built: a
    /// [`Built`] holds no descriptor of it. The control: while building,
    /// a host path opens. In a child, so the test runner keeps its
    /// directory (waiting for "built" moves it to `/`).
    #[test]
    fn the_host_root_is_let_go_once_the_view_is_built() {
        // SAFETY: the child makes system calls and `_exit`s.
        match unsafe { fork() }.expect("fork") {
            ForkResult::Child => {
                // SAFETY: _exit is always safe.
                unsafe { libc::_exit(host_root_in_child()) }
            }
            ForkResult::Parent { child } => {
                let status = waitpid(child, None).expect("wait");
                assert_eq!(status, WaitStatus::Exited(child, 0));
            }
        }
    }

    fn host_root_in_child() -> i32 {
        let (built_rx, built_tx) = nix::unistd::pipe().expect("pipe");
        let (sealed_rx, _sealed_tx) = nix::unistd::pipe().expect("pipe");
        let _ = nix::unistd::write(&built_tx, &0i32.to_le_bytes());
        let host_root = open_host_root();
        let raw = host_root.as_ref().map(|fd| fd.as_raw_fd());
        // SAFETY: F_GETFD only reads the descriptor's flags.
        let open = |raw: Option<i32>| {
            raw.is_some_and(|fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } != -1)
        };
        let building = Building {
            user_namespace: UserNamespace::NotNeeded,
            reports: reaper::Reports {
                built: built_rx,
                sealed: sealed_rx,
                host_root,
                allowed: cores::note(),
            },
        };
        if !open(raw) || building.open_on_host(Path::new("/usr")).is_none() {
            return 1;
        }
        let _built = building.wait_until_built();
        match open(raw) {
            true => 2,
            false => 0,
        }
    }
}
