//! The private PID namespace magus and all its children live in (DESIGN
//! §6): a fresh `/proc` that shows only magus's own tree, so no child reads
//! the user's shell's `/proc/<pid>/environ`, root included.
//!
//! Why at startup and not per child: Landlock refuses every `mount(2)` to a
//! restricted process, even in a new mount namespace (checked on 6.18,
//! ABI 7: `EPERM`), so a child spawned by the already-landlocked magus could
//! never mount its own `/proc`. Instead, right after the scrubbing re-exec
//! and before Landlock, magus unshares PID + mount (+ user when not root)
//! namespaces; its child becomes PID 1 (a reaper that mounts `/proc` and
//! waits) and the grandchild carries on as magus. See [`enter_private_pid_namespace`].

use std::fmt;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::OnceLock;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, getegid, geteuid, pipe2, read, write, ForkResult, Pid};

use super::process::is_single_threaded;

/// Whether magus and its children see a private `/proc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PidIsolation {
    /// A private PID namespace with its own `/proc`.
    PrivateNamespace { user_namespace: UserNamespace },
    /// Children can see every process of the machine in `/proc`.
    Unavailable { reason: PidIsolationUnavailable },
}

/// Whether a user namespace was needed to get the PID namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserNamespace {
    /// Root: no user namespace; the uid stays real root.
    NotNeeded,
    /// Unprivileged: the uid and gid are mapped to themselves.
    Created,
}

/// Why the private PID namespace could not be set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PidIsolationUnavailable {
    /// Another thread already exists; namespaces need a lone thread.
    ThreadsRunning,
    /// `unshare` was refused (no privilege, user namespaces disabled...).
    Unshare(Errno),
    /// Writing the user namespace's id maps failed.
    IdMap(Errno),
    /// `fork` failed.
    Fork(Errno),
    /// Making the mounts private, or mounting `/proc`, failed.
    Mount(Errno),
    /// The namespace's first process died before reporting.
    ReaperLost,
}

impl fmt::Display for PidIsolationUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ThreadsRunning => f.write_str("another thread was already running"),
            Self::Unshare(e) => write!(f, "unshare of PID/mount namespaces refused: {}", e.desc()),
            Self::IdMap(e) => write!(f, "cannot map ids in a user namespace: {}", e.desc()),
            Self::Fork(e) => write!(f, "fork failed: {}", e.desc()),
            Self::Mount(e) => write!(f, "cannot mount a private /proc: {}", e.desc()),
            Self::ReaperLost => f.write_str("the namespace's init process died during setup"),
        }
    }
}

static ISOLATION: OnceLock<PidIsolation> = OnceLock::new();

/// What [`enter_private_pid_namespace`] achieved, once it has run.
pub fn pid_isolation() -> Option<PidIsolation> {
    ISOLATION.get().copied()
}

/// Moves magus into a private PID namespace with its own `/proc`.
///
/// Call once, on the lone main thread, after [`super::reexec`] (the
/// processes created here keep the environment they have) and before
/// Landlock. On success it returns in a grandchild (PID 2 of the new
/// namespace) while the original process and the namespace's PID 1 only
/// wait and exit with magus's status (death by signal `n` becomes
/// `128 + n`); `SIGTERM`, `SIGINT`, `SIGHUP` and `SIGQUIT` sent to either
/// with `kill` are passed on. When it cannot, it returns `Unavailable` in
/// the original process, which goes on unisolated.
pub fn enter_private_pid_namespace() -> PidIsolation {
    let result = match try_enter() {
        Ok(user_namespace) => PidIsolation::PrivateNamespace { user_namespace },
        Err(reason) => PidIsolation::Unavailable { reason },
    };
    let _ = ISOLATION.set(result);
    result
}

fn try_enter() -> Result<UserNamespace, PidIsolationUnavailable> {
    if !is_single_threaded() {
        return Err(PidIsolationUnavailable::ThreadsRunning);
    }
    let user_namespace = unshare_namespaces()?;
    let (report_rx, report_tx) = pipe2(OFlag::O_CLOEXEC).map_err(PidIsolationUnavailable::Fork)?;
    // SAFETY: the process is single-threaded (checked above), so the child
    // may run arbitrary code after fork.
    match unsafe { fork() }.map_err(PidIsolationUnavailable::Fork)? {
        ForkResult::Parent { child } => {
            drop(report_tx);
            outer_wait_or_fail(child, &report_rx)?;
            Ok(user_namespace)
        }
        ForkResult::Child => {
            drop(report_rx);
            become_init(report_tx);
            Ok(user_namespace)
        }
    }
}

/// Unshares the mount namespace (inside a user namespace when not root),
/// makes its mounts private, and only then the PID namespace.
///
/// The order matters: a process already inside a Landlock domain (a magus
/// started by a spell, or under another sandbox) may not mount at all, and
/// once the PID namespace is unshared every later fork depends on its first
/// process, which must mount `/proc`. Trying the mount first makes that
/// refusal a clean `Mount` error instead of a namespace whose forks fail.
fn unshare_namespaces() -> Result<UserNamespace, PidIsolationUnavailable> {
    let user_namespace = unshare_mount_namespace()?;
    let none: Option<&str> = None;
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)
        .map_err(PidIsolationUnavailable::Mount)?;
    unshare(CloneFlags::CLONE_NEWPID).map_err(PidIsolationUnavailable::Unshare)?;
    Ok(user_namespace)
}

fn unshare_mount_namespace() -> Result<UserNamespace, PidIsolationUnavailable> {
    if geteuid().is_root() && unshare(CloneFlags::CLONE_NEWNS).is_ok() {
        return Ok(UserNamespace::NotNeeded);
    }
    let (uid, gid) = (geteuid(), getegid());
    let flags = CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWUSER;
    unshare(flags).map_err(PidIsolationUnavailable::Unshare)?;
    map_ids(uid.as_raw(), gid.as_raw()).map_err(PidIsolationUnavailable::IdMap)?;
    Ok(UserNamespace::Created)
}

/// Maps the caller's uid and gid to themselves, so files it creates keep
/// their owner and `id` reads the same inside.
fn map_ids(uid: u32, gid: u32) -> Result<(), Errno> {
    let write = |file: &str, text: String| {
        std::fs::write(file, text).map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(0)))
    };
    write("/proc/self/setgroups", "deny".to_owned())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1\n"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1\n"))
}

/// In the original process: wait for PID 1's report; on success wait for
/// the namespace to end and exit with its status (never returns).
fn outer_wait_or_fail(init: Pid, report: &OwnedFd) -> Result<(), PidIsolationUnavailable> {
    let mut buf = [0u8; 5];
    let n = read_full(report, &mut buf);
    if n == 5 && buf[0] == 0 {
        wait_and_exit(init, init);
    }
    let _ = waitpid(init, None);
    if n < 5 {
        return Err(PidIsolationUnavailable::ReaperLost);
    }
    let errno = Errno::from_raw(i32::from_le_bytes([buf[1], buf[2], buf[3], buf[4]]));
    Err(match buf[0] {
        1 => PidIsolationUnavailable::Mount(errno),
        _ => PidIsolationUnavailable::Fork(errno),
    })
}

fn read_full(fd: &OwnedFd, buf: &mut [u8]) -> usize {
    let mut got = 0;
    while got < buf.len() {
        match read(fd, &mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(Errno::EINTR) => continue,
            Err(_) => break,
        }
    }
    got
}

/// In PID 1 of the new namespace: mount `/proc`, fork magus proper, report,
/// and reap. Returns only in the grandchild, which carries on as magus.
fn become_init(report: OwnedFd) {
    if let Err(errno) = private_proc() {
        send_report(&report, 1, errno);
        // SAFETY: _exit is always safe; nothing of this process is needed.
        unsafe { libc::_exit(1) };
    }
    // `sandbox.limits.processes`: cap this namespace's PIDs before magus
    // proper is forked (a no-op unless declared).
    super::limits::in_new_pid_namespace();
    // If the waiting original is killed, take the whole namespace down.
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    // SAFETY: still single-threaded.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            drop(report);
            let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
        }
        Ok(ForkResult::Parent { child }) => {
            send_report(&report, 0, Errno::UnknownErrno);
            drop(report);
            reap_and_exit(child);
        }
        Err(errno) => {
            send_report(&report, 2, errno);
            // SAFETY: as above.
            unsafe { libc::_exit(1) };
        }
    }
}

fn send_report(fd: &OwnedFd, stage: u8, errno: Errno) {
    let e = (errno as i32).to_le_bytes();
    let _ = write(fd, &[stage, e[0], e[1], e[2], e[3]]);
}

/// Private mount propagation (so the new `/proc` does not leak back to the
/// host namespace), then a `/proc` of this PID namespace.
fn private_proc() -> Result<(), Errno> {
    let none: Option<&str> = None;
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    mount(Some("proc"), "/proc", Some("proc"), flags, none)
}

/// The process signals are passed on to, for the forwarding handler.
static FORWARD_TO: AtomicI32 = AtomicI32::new(0);

/// Passes a signal on when a process sent it with `kill`; signals the
/// terminal raises (`SI_KERNEL`) already reach magus through its process
/// group, so they are not doubled.
extern "C" fn forward(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    let target = FORWARD_TO.load(Ordering::Relaxed);
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let from_process = !info.is_null() && unsafe { (*info).si_code } <= 0;
    if target > 0 && from_process {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(target, sig) };
    }
}

/// Passes `SIGTERM`, `SIGINT`, `SIGHUP` and `SIGQUIT` sent to this
/// process with `kill` on to `target` (also for `survivors`' supervisor).
pub(super) fn forward_signals_to(target: Pid) {
    install_forwarding(target);
}

fn install_forwarding(target: Pid) {
    FORWARD_TO.store(target.as_raw(), Ordering::Relaxed);
    let action = SigAction::new(
        SigHandler::SigAction(forward),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for sig in [
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ] {
        // SAFETY: the handler only loads an atomic and calls kill.
        let _ = unsafe { sigaction(sig, &action) };
    }
}

/// PID 1: reap every orphan; when magus ends, exit with its status, which
/// makes the kernel kill whatever is left in the namespace.
fn reap_and_exit(magus: Pid) -> ! {
    install_forwarding(magus);
    // `sandbox.limits.wall_time`: the alarm interrupts the wait below.
    super::limits::arm_deadline();
    wait_and_exit(Pid::from_raw(-1), magus)
}

/// Waits on `which` until `main` ends, then `_exit`s with its status.
fn wait_and_exit(which: Pid, main: Pid) -> ! {
    if which == main {
        install_forwarding(main);
    }
    loop {
        match waitpid(which, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == main => exit_now(code),
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == main => exit_now(128 + sig as i32),
            // Only PID 1 arms the alarm; its exit kills the whole namespace.
            Err(Errno::EINTR) if super::limits::over_time() => super::limits::exit_over_time(),
            Err(Errno::EINTR) | Ok(_) => continue,
            Err(_) => exit_now(1),
        }
    }
}

fn exit_now(code: i32) -> ! {
    // SAFETY: _exit skips atexit handlers and stdio flushing, which belong
    // to magus proper, not to its waiters.
    unsafe { libc::_exit(code) }
}

/// Whether [`enter_private_pid_namespace`] would succeed here, asked in a
/// throw-away child so this process changes nothing (for `magus sandbox
/// check`). The child unshares the namespaces and exits; `/proc` is not
/// mounted, so a `Mount` failure can only show at `magus run`.
pub fn probe_private_pid_namespace() -> PidIsolation {
    if !is_single_threaded() {
        let reason = PidIsolationUnavailable::ThreadsRunning;
        return PidIsolation::Unavailable { reason };
    }
    // SAFETY: single-threaded (checked above); the child only makes
    // syscalls and `_exit`s.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            let code = match unshare_namespaces() {
                Ok(UserNamespace::NotNeeded) => 0,
                Ok(UserNamespace::Created) => 1,
                Err(_) => 2,
            };
            // SAFETY: _exit is always safe.
            unsafe { libc::_exit(code) }
        }
        Ok(ForkResult::Parent { child }) => probe_verdict(waitpid(child, None)),
        Err(errno) => PidIsolation::Unavailable {
            reason: PidIsolationUnavailable::Fork(errno),
        },
    }
}

fn probe_verdict(status: nix::Result<WaitStatus>) -> PidIsolation {
    match status {
        Ok(WaitStatus::Exited(_, 0)) => PidIsolation::PrivateNamespace {
            user_namespace: UserNamespace::NotNeeded,
        },
        Ok(WaitStatus::Exited(_, 1)) => PidIsolation::PrivateNamespace {
            user_namespace: UserNamespace::Created,
        },
        _ => PidIsolation::Unavailable {
            reason: PidIsolationUnavailable::Unshare(Errno::EPERM),
        },
    }
}
