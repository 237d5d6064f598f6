//! The jail (docs/jail.md): once per run, before Landlock, magus enters new
//! user, IPC, PID and mount namespaces and a filesystem view compiled from
//! the policy, so children see only what is granted: no user's sockets in
//! `/tmp` or `/run/user`, no other terminal, nothing to stat or chmod
//! outside the grants. Plan ([`plan`]) then apply ([`apply`]), as
//! bubblewrap does; [`reaper`] holds the processes that wait.
//!
//! Why at startup and not per child: Landlock refuses every `mount(2)` to a
//! restricted process, and one jail for the run keeps spawning cheap.

pub mod ahead;
mod apply;
mod by_descriptor;
mod cores;
pub(crate) mod gitconfig;
pub mod host_paths;
pub mod plan;
pub mod protect;
mod reaper;
mod sweep;
mod userns;

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use nix::errno::Errno;
use nix::fcntl::{openat2, OFlag, OpenHow, ResolveFlag, AT_FDCWD};
use nix::sched::{unshare, CloneFlags};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, ForkResult};

pub use plan::{BindAccess, BindWhy, IfMissing, JailPlan, Step, ViewInputs};
pub use protect::CarveReason;
pub(crate) use reaper::{
    asked_to_end, forget_forward_target, forward_signals_to, stop_forwarding_signals,
};
pub use userns::{UsernsRequest, USERNS_VAR};

use super::process::is_single_threaded;

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

static STATUS: OnceLock<JailStatus> = OnceLock::new();

/// In magus proper: where PID 1 says the host's root is detached.
static SEALED: Mutex<Option<OwnedFd>> = Mutex::new(None);

/// In magus proper: where PID 1 says the view is built.
static BUILT: Mutex<Option<OwnedFd>> = Mutex::new(None);

fn expect_built(from_init: OwnedFd) {
    if let Ok(mut built) = BUILT.lock() {
        *built = Some(from_init);
    }
}

/// Waits until PID 1 has built the view (magus proper is forked before
/// it, see `reaper::become_init`), then moves this process's working
/// directory, still the host directory magus started in, to the view's
/// root, and closes the host's root ([`open_on_host`]). Call before
/// anything that reads a path; without a jail of this run's own it
/// returns at once. Where PID 1 failed, this process ends
/// at once and says nothing: the original process names the failing step.
pub fn wait_until_built() {
    forget_host_root();
    let Some(fd) = BUILT.lock().ok().and_then(|mut b| b.take()) else {
        return;
    };
    let mut buf = [0u8; 4];
    let built = reaper::read_full(&fd, &mut buf) == buf.len() && i32::from_le_bytes(buf) == 0;
    if !built || nix::unistd::chdir("/").is_err() {
        // SAFETY: _exit is always safe; the original reports the failure.
        unsafe { libc::_exit(1) }
    }
    cores::restore();
}

/// In magus proper, until [`open_on_host`]'s caller is done: the host's
/// root, as the jail's mount namespace had it before the view.
static HOST_ROOT: Mutex<Option<OwnedFd>> = Mutex::new(None);

fn open_host_root() -> Option<OwnedFd> {
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS);
    openat2(AT_FDCWD, "/", how).ok()
}

fn expect_host_root(root: Option<OwnedFd>) {
    if let Ok(mut slot) = HOST_ROOT.lock() {
        *slot = root;
    }
}

/// In magus proper, before [`wait_until_built`]: opens `path` (absolute,
/// free of links, as a grant's path is) beneath the host's root as the
/// jail's namespace had it before PID 1 moved its root, so that Landlock's
/// rules for what the view binds can be made while the view is built (a
/// bind shows the host's inode, and a rule follows the inode). `None`
/// without a jail of this run's own, after [`forget_host_root`], or where
/// the path does not open that way (a link on it): the caller then opens
/// it in the view.
pub fn open_on_host(path: &Path) -> Option<OwnedFd> {
    let slot = HOST_ROOT.lock().ok()?;
    let root = slot.as_ref()?;
    let relative = path.strip_prefix("/").ok()?;
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS);
    match relative.as_os_str().is_empty() {
        true => root.try_clone().ok(),
        false => openat2(root.as_fd(), relative, how).ok(),
    }
}

/// Whether [`open_on_host`] can open anything (this run has a jail of its
/// own, and its host root is still held).
pub fn host_root_held() -> bool {
    HOST_ROOT.lock().is_ok_and(|slot| slot.is_some())
}

/// Closes the host's root: once the rules are made, magus proper must
/// hold nothing of the host's tree (PID 1 detaches it from the view).
/// [`wait_until_built`] does it.
fn forget_host_root() {
    if let Ok(mut slot) = HOST_ROOT.lock() {
        slot.take();
    }
}

fn expect_sealed(from_init: OwnedFd) {
    if let Ok(mut sealed) = SEALED.lock() {
        *sealed = Some(from_init);
    }
}

/// Waits until PID 1 has detached the host's root from the view (the
/// last step of the plan, done while this process drops its capabilities
/// and installs the syscall guard and Landlock). Call before any spell
/// code or child runs; without a jail of this run's own it returns at once.
pub fn wait_until_sealed() -> Result<(), JailUnavailable> {
    let Some(fd) = SEALED.lock().ok().and_then(|mut s| s.take()) else {
        return Ok(());
    };
    let mut buf = [0u8; 4];
    if reaper::read_full(&fd, &mut buf) < buf.len() {
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

/// What [`enter`] achieved, once it has run.
pub fn jail_status() -> Option<&'static JailStatus> {
    STATUS.get()
}

/// Moves magus into the jail of `plan`.
///
/// Call once, on the lone main thread, after the scrubbing re-exec and
/// before capabilities are dropped, the syscall guard and Landlock. On
/// success it returns in magus proper (PID 2 of the new namespace), inside
/// the view; the original process only waits and exits with magus's
/// status. When it cannot, it returns `Unavailable` in the original
/// process, which goes on with the host's view.
pub fn enter(plan: &JailPlan, request: UsernsRequest) -> JailStatus {
    let status = enter_with(plan, request, ahead::Made::default(), None);
    wait_until_built();
    status
}

/// [`enter`], joining the namespaces made ahead (`made`, see [`ahead`])
/// instead of making them, with the original serving `outside` while it
/// waits, and returning in magus proper *before* the view is built: the
/// caller may do work that reads no path (join a network namespace, drop
/// capabilities, install the syscall guard), and must call
/// [`wait_until_built`] before anything that does. Where it returns
/// `Unavailable`, `outside` has been dropped unserved.
pub fn enter_with(
    plan: &JailPlan,
    request: UsernsRequest,
    made: ahead::Made,
    outside: Option<Box<dyn Outside>>,
) -> JailStatus {
    let result = match try_enter(plan, request, made, outside) {
        Ok(user_namespace) => JailStatus::Entered { user_namespace },
        Err(reason) => JailStatus::Unavailable { reason },
    };
    let _ = STATUS.set(result.clone());
    result
}

/// Work the original process does for magus proper while it waits
/// outside the jail, in the host's network and PID namespaces, which no
/// process of the jail can reach: forking the host-filtering proxy when
/// the spell starts its first program (`crate::proxy::Launcher`),
/// and saying what the host holds at a path ([`host_paths`]).
pub trait Outside {
    /// Readable when magus proper asks for something.
    fn requests(&self) -> BorrowedFd<'_>;
    /// Answers what was asked; `false` once nothing more will be.
    fn serve(&mut self) -> bool;
}

fn try_enter(
    plan: &JailPlan,
    request: UsernsRequest,
    made: ahead::Made,
    outside: Option<Box<dyn Outside>>,
) -> Result<UserNamespace, JailUnavailable> {
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
    // the host's.
    let started = reaper::start(plan, made.network, services);
    if started.is_err() {
        host_paths::forget();
    }
    started?;
    Ok(user_namespace)
}

/// Whether [`enter`] could make the namespaces here, asked in a throw-away
/// child so this process changes nothing (for `magus sandbox check`). The
/// view itself is not tried: a failing step shows only at `magus run`.
pub fn probe(request: UsernsRequest) -> JailStatus {
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

    /// The host's root opens grants only until the view is built: after
    /// [`wait_until_built`] no descriptor of it is held, and nothing opens
    /// through it. The control: while held, a host path opens.
    #[test]
    fn the_host_root_is_let_go_once_the_view_is_built() {
        expect_host_root(open_host_root());
        assert!(host_root_held());
        assert!(open_on_host(Path::new("/usr")).is_some(), "the control");
        wait_until_built();
        assert!(!host_root_held());
        assert!(open_on_host(Path::new("/usr")).is_none());
    }
}
