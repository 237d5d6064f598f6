//! The processes of the jail: the original magus waits outside, the
//! namespace's PID 1 builds the view and then reaps, and magus proper
//! carries on as PID 2 inside. Both waiters only pass signals on and exit
//! with magus's status (death by signal `n` becomes `128 + n`).
//!
//! `sandbox.limits` hook in here (see `enforce::limits`): PID 1 caps the
//! namespace's PIDs before it forks magus ([`become_init`]), and arms the
//! wall-time alarm whose ring ends the run ([`reap_and_exit`],
//! [`wait_and_exit`]).

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicI32, Ordering};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sched::{unshare, CloneFlags};
use nix::sys::signal::{
    sigaction, sigprocmask, SaFlags, SigAction, SigHandler, SigSet, SigmaskHow, Signal,
};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, pipe2, read, write, ForkResult, Pid};

use super::apply::{apply, detach_host_root, StepFailure};
use super::plan::JailPlan;
use super::sweep::Sweep;
use super::{JailUnavailable, Meanwhile};
use crate::enforce::linux::terminal::TerminalModes;

/// What PID 1 reports through the pipe: a stage byte, a step index and an
/// errno.
const REPORT_LEN: usize = 9;
const OK: u8 = 0;
const MOUNT_NAMESPACE: u8 = 1;
const STEP: u8 = 2;
const FORK: u8 = 3;

/// Forks the namespace's PID 1 (the caller has unshared the PID
/// namespace). Returns in magus proper (PID 2) once the view is built; the
/// original process runs `meanwhile` while PID 1 builds it, and never
/// returns on success: it waits and exits.
pub(super) fn start(
    plan: &JailPlan,
    meanwhile: Option<Meanwhile<'_>>,
) -> Result<(), JailUnavailable> {
    let (report_rx, report_tx) = pipe2(OFlag::O_CLOEXEC).map_err(JailUnavailable::Fork)?;
    // Before any child can write in a git directory, or change the
    // terminal's mode.
    let sweep = Sweep::before(plan);
    let terminal = TerminalModes::note();
    // Without a socket pair, magus proper does that work itself.
    let handoff = meanwhile.and_then(|work| Some((work, UnixStream::pair().ok()?)));
    // Until the original knows whom to pass them to, the forwarded signals
    // wait (blocked) instead of killing it while magus runs on.
    let unblocked = block_forwarded();
    // SAFETY: the caller checked the process is single-threaded, so the
    // child may run arbitrary code after fork.
    let forked = unsafe { fork() };
    match forked {
        Ok(ForkResult::Parent { child }) => {
            drop(report_tx);
            if let Some((work, (ours, theirs))) = handoff {
                drop(theirs);
                work(ours);
            }
            let after = (&sweep, &terminal);
            let result = outer_wait_or_fail(child, &report_rx, plan, &unblocked, after);
            restore_mask(&unblocked);
            result
        }
        Ok(ForkResult::Child) => {
            restore_mask(&unblocked);
            drop(report_rx);
            become_init(report_tx, plan, handoff.map(|(_, (_, theirs))| theirs));
            Ok(())
        }
        Err(errno) => {
            restore_mask(&unblocked);
            Err(JailUnavailable::Fork(errno))
        }
    }
}

const FORWARDED: [Signal; 4] = [
    Signal::SIGTERM,
    Signal::SIGINT,
    Signal::SIGHUP,
    Signal::SIGQUIT,
];

/// Blocks [`FORWARDED`]; returns the mask to restore.
fn block_forwarded() -> SigSet {
    let mut set = SigSet::empty();
    for sig in FORWARDED {
        set.add(sig);
    }
    let mut old = SigSet::empty();
    let _ = sigprocmask(SigmaskHow::SIG_BLOCK, Some(&set), Some(&mut old));
    old
}

fn restore_mask(old: &SigSet) {
    let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(old), None);
}

/// In the original process: wait for PID 1's report; on success wait for
/// the namespace to end (PID 1's exit ends every process in it), sweep,
/// put the terminal's mode back, and exit with its status (never returns).
fn outer_wait_or_fail(
    init: Pid,
    report: &OwnedFd,
    plan: &JailPlan,
    mask: &SigSet,
    (sweep, terminal): (&Sweep, &TerminalModes),
) -> Result<(), JailUnavailable> {
    let mut buf = [0u8; REPORT_LEN];
    let n = read_full(report, &mut buf);
    if n == REPORT_LEN && buf[0] == OK {
        install_forwarding(init);
        restore_mask(mask);
        let code = wait_for(init, init);
        sweep.after();
        terminal.restore();
        exit_now(code);
    }
    let _ = waitpid(init, None);
    if n < REPORT_LEN {
        return Err(JailUnavailable::ReaperLost);
    }
    let index = u32::from_le_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
    let errno = Errno::from_raw(i32::from_le_bytes([buf[5], buf[6], buf[7], buf[8]]));
    Err(match buf[0] {
        MOUNT_NAMESPACE => JailUnavailable::MountNamespace(errno),
        STEP => JailUnavailable::Step {
            step: plan
                .steps()
                .get(index)
                .map_or_else(|| format!("step {index}"), ToString::to_string),
            errno,
        },
        _ => JailUnavailable::Fork(errno),
    })
}

pub(super) fn read_full(fd: &OwnedFd, buf: &mut [u8]) -> usize {
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

/// In PID 1: a mount namespace of its own (so a failure leaves the
/// original's untouched), the view, then fork magus proper, report, and
/// reap. Returns only in the grandchild, which carries on as magus (and
/// keeps `handoff`, the far end of the original's [`Meanwhile`]).
fn become_init(report: OwnedFd, plan: &JailPlan, handoff: Option<UnixStream>) {
    if let Err(errno) = unshare(CloneFlags::CLONE_NEWNS) {
        fail(&report, MOUNT_NAMESPACE, 0, errno);
    }
    // `sandbox.limits.processes`: cap this namespace's PIDs before magus
    // proper is forked (a no-op unless declared), and before the view
    // makes `/proc` read-only. The sysctls act on the writer's own PID
    // namespace whichever `/proc` they are reached through.
    crate::enforce::limits::in_new_pid_namespace();
    if let Err(StepFailure { index, errno }) = apply(plan) {
        fail(&report, STEP, index, errno);
    }
    // If the waiting original is killed, take the whole namespace down.
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    let (sealed_rx, sealed_tx) = match pipe2(OFlag::O_CLOEXEC) {
        Ok(pair) => pair,
        Err(errno) => fail(&report, FORK, 0, errno),
    };
    // SAFETY: still single-threaded.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            drop(report);
            drop(sealed_tx);
            let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
            super::expect_sealed(sealed_rx);
            if let Some(end) = handoff {
                super::expect_handoff(end);
            }
        }
        Ok(ForkResult::Parent { child }) => {
            drop(sealed_rx);
            drop(handoff);
            // Before the report: the original forwards here from then on.
            install_forwarding(child);
            send_report(&report, OK, 0, Errno::UnknownErrno);
            drop(report);
            let sealed = detach_host_root().err().map_or(0, |errno| errno as i32);
            let _ = write(&sealed_tx, &sealed.to_le_bytes());
            drop(sealed_tx);
            reap_and_exit(child);
        }
        Err(errno) => fail(&report, FORK, 0, errno),
    }
}

fn fail(report: &OwnedFd, stage: u8, index: usize, errno: Errno) -> ! {
    send_report(report, stage, index, errno);
    // SAFETY: _exit is always safe; nothing of this process is needed.
    unsafe { libc::_exit(1) }
}

fn send_report(fd: &OwnedFd, stage: u8, index: usize, errno: Errno) {
    let mut buf = [stage; REPORT_LEN];
    buf[1..5].copy_from_slice(&u32::try_from(index).unwrap_or(u32::MAX).to_le_bytes());
    buf[5..9].copy_from_slice(&(errno as i32).to_le_bytes());
    let _ = write(fd, &buf);
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
pub(crate) fn forward_signals_to(target: Pid) {
    install_forwarding(target);
}

fn install_forwarding(target: Pid) {
    FORWARD_TO.store(target.as_raw(), Ordering::Relaxed);
    let action = SigAction::new(
        SigHandler::SigAction(forward),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for sig in FORWARDED {
        // SAFETY: the handler only loads an atomic and calls kill.
        let _ = unsafe { sigaction(sig, &action) };
    }
}

/// PID 1: reap every orphan; when magus ends, exit with its status, which
/// makes the kernel kill whatever is left in the namespace.
fn reap_and_exit(magus: Pid) -> ! {
    install_forwarding(magus);
    // It keeps its capabilities and the host's network namespace, so
    // never let a child trace it (`crate::enforce::untraceable`).
    let _ = crate::enforce::untraceable::refuse_tracing();
    // `sandbox.limits.wall_time`: the alarm interrupts the wait below.
    crate::enforce::limits::arm_deadline();
    wait_and_exit(Pid::from_raw(-1), magus)
}

/// Waits on `which` until `main` ends, then `_exit`s with its status.
fn wait_and_exit(which: Pid, main: Pid) -> ! {
    exit_now(wait_for(which, main))
}

/// Waits on `which` until `main` ends; returns its status.
fn wait_for(which: Pid, main: Pid) -> i32 {
    if which == main {
        install_forwarding(main);
    }
    loop {
        // A ring between two waits is seen here (and rings again, see
        // `limits::on_alarm`, in case it came just after this check).
        if crate::enforce::limits::over_time() {
            crate::enforce::limits::exit_over_time()
        }
        match waitpid(which, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == main => return code,
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == main => return 128 + sig as i32,
            // Only PID 1 arms the alarm; its exit kills the whole namespace.
            Err(Errno::EINTR) if crate::enforce::limits::over_time() => {
                crate::enforce::limits::exit_over_time()
            }
            Err(Errno::EINTR) | Ok(_) => continue,
            Err(_) => return 1,
        }
    }
}

fn exit_now(code: i32) -> ! {
    // SAFETY: _exit skips atexit handlers and stdio flushing, which belong
    // to magus proper, not to its waiters.
    unsafe { libc::_exit(code) }
}
