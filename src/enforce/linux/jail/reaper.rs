//! The processes of the jail: the original magus waits outside (and does
//! what magus proper asks of it there, `super::Outside`), the namespace's
//! PID 1 builds the view and then reaps, and magus proper carries on as
//! PID 2 inside. Both waiters only pass signals on and exit
//! with magus's status (death by signal `n` becomes `128 + n`); PID 1
//! ends every other process of the namespace first and tells the
//! original, which need not wait for PID 1's own exit.
//!
//! `sandbox.limits` hook in here (see `enforce::limits`): PID 1 caps the
//! namespace's PIDs before it forks magus ([`become_init`]), and arms the
//! wall-time alarm whose ring ends the run ([`reap_and_exit`],
//! [`wait_for`]).

use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sched::{unshare, CloneFlags};
use nix::sys::signal::{
    sigaction, sigprocmask, SaFlags, SigAction, SigHandler, SigSet, SigmaskHow, Signal,
};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, pipe2, read, write, ForkResult, Pid};

use super::apply::{apply, detach_host_root, StepFailure};
use super::plan::JailPlan;
use super::sweep::Sweep;
use super::{JailUnavailable, Outside};
use crate::diag::OutputOptions;
use crate::enforce::leftovers::{self, Watch};
use crate::enforce::limits::{self, LimitsPlan};
use crate::enforce::linux::terminal::TerminalModes;

/// What PID 1 reports through the pipe: a stage byte, a step index and an
/// errno.
const REPORT_LEN: usize = 9;
const OK: u8 = 0;
const MOUNT_NAMESPACE: u8 = 1;
const STEP: u8 = 2;
const FORK: u8 = 3;
const IPC_NAMESPACE: u8 = 4;

/// Forks the namespace's PID 1, in a new PID namespace, handing it the
/// network namespace to join (`network`, made ahead). Returns in magus
/// proper (PID 2) before the view is built, with the pipes PID 1 reports
/// on (see `super::Building`); the original process never returns on
/// success: it serves `outside` (see `super::Outside`), waits and exits.
/// PID 1 holds `limits` (the namespace's PID bound, the wall time).
pub(super) fn start(
    plan: &JailPlan,
    network: Option<OwnedFd>,
    outside: Vec<Box<dyn Outside>>,
    output: OutputOptions,
    limits: &LimitsPlan,
) -> Result<Reports, JailUnavailable> {
    let (report_rx, report_tx) = pipe2(OFlag::O_CLOEXEC).map_err(JailUnavailable::Fork)?;
    // Before any child can write in a git directory, or change the
    // terminal's mode.
    let sweep = Sweep::before(plan);
    // The binds hold the protected paths by their spelling; on a
    // case-insensitive disk (FUSE, a casefolded directory) another
    // spelling reaches the same file around them, so their contents are
    // noted here too and put back after the run.
    let watch = Watch::before(plan.leftovers.clone());
    let terminal = TerminalModes::note();
    // Until the original knows whom to pass them to, the forwarded signals
    // wait (blocked) instead of killing it while magus runs on.
    let unblocked = block_forwarded();
    // SAFETY: the caller checked the process is single-threaded.
    let forked = unsafe { fork_as_init() };
    match forked {
        Ok(ForkResult::Parent { child }) => {
            drop(report_tx);
            super::host_paths::forget();
            // Held until this process exits: the namespace's teardown (a
            // kernel worker's ~0.75 ms of CPU) then follows the run
            // instead of racing its last steps when PID 1 exits.
            let _network = network;
            let after = (&sweep, &watch, &terminal);
            let failed =
                outer_wait_or_fail(child, &report_rx, plan, &unblocked, after, outside, output);
            restore_mask(&unblocked);
            Err(failed)
        }
        Ok(ForkResult::Child) => {
            restore_mask(&unblocked);
            drop(report_rx);
            drop(outside);
            Ok(become_init(report_tx, plan, network, limits))
        }
        // Out of processes or memory; anything else is the PID namespace
        // refused (as `unshare` would have been).
        Err(errno @ (Errno::EAGAIN | Errno::ENOMEM)) => {
            restore_mask(&unblocked);
            Err(JailUnavailable::Fork(errno))
        }
        Err(errno) => {
            restore_mask(&unblocked);
            Err(JailUnavailable::Unshare(errno))
        }
    }
}

/// What magus proper holds of PID 1 while it builds the view: the pipes
/// it says "built" and "sealed" on, the host's root (to open grants by
/// while the view is built) and the CPUs to take back.
pub(super) struct Reports {
    pub built: OwnedFd,
    pub sealed: OwnedFd,
    pub host_root: Option<OwnedFd>,
    pub allowed: super::cores::Allowed,
}

/// `fork`, the child being the first process of a new PID namespace.
///
/// Not `unshare(CLONE_NEWPID)` and `fork`: that would put every later
/// child of the original in the jail's namespace, the proxy it may fork
/// (`super::Outside`) included. glibc's `fork` takes no flags, so this is
/// the system call itself, as bubblewrap makes it. The child's copy of
/// glibc's thread descriptor keeps the parent's thread id: glibc reads it
/// only as the owner of its locks, the same throughout this child, which
/// starts no thread (`raise` asks the kernel, since glibc 2.34).
///
/// # Safety
///
/// As `fork`: the process must be single-threaded.
unsafe fn fork_as_init() -> Result<ForkResult, Errno> {
    let flags = (libc::CLONE_NEWPID | libc::SIGCHLD) as libc::c_ulong;
    let none: libc::c_ulong = 0;
    // SAFETY: without CLONE_VM or a new stack the child runs on a copy of
    // the caller's memory, as after `fork`; the caller's contract covers
    // the rest.
    let pid = unsafe { libc::syscall(libc::SYS_clone, flags, none, none, none, none) };
    match pid {
        -1 => Err(Errno::last()),
        0 => Ok(ForkResult::Child),
        pid => Ok(ForkResult::Parent {
            child: Pid::from_raw(pid as libc::pid_t),
        }),
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
/// put the terminal's mode back, and exit with its status (never returns);
/// on failure, why.
fn outer_wait_or_fail(
    init: Pid,
    report: &OwnedFd,
    plan: &JailPlan,
    mask: &SigSet,
    (sweep, watch, terminal): (&Sweep, &Watch, &TerminalModes),
    outside: Vec<Box<dyn Outside>>,
    output: OutputOptions,
) -> JailUnavailable {
    let mut buf = [0u8; REPORT_LEN];
    let n = read_full(report, &mut buf);
    if n == REPORT_LEN && buf[0] == OK {
        install_forwarding(init);
        restore_mask(mask);
        serve_until_reported(report, outside);
        let code = wait_for_end(init, report);
        sweep.after();
        leftovers::report::sweep_and_say(watch, output);
        terminal.restore();
        exit_now(code);
    }
    let _ = waitpid(init, None);
    if n < REPORT_LEN {
        return JailUnavailable::ReaperLost;
    }
    let index = u32::from_le_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
    let errno = Errno::from_raw(i32::from_le_bytes([buf[5], buf[6], buf[7], buf[8]]));
    match buf[0] {
        MOUNT_NAMESPACE => JailUnavailable::MountNamespace(errno),
        IPC_NAMESPACE => JailUnavailable::Unshare(errno),
        STEP => JailUnavailable::Step {
            step: plan
                .steps()
                .get(index)
                .map_or_else(|| format!("step {index}"), ToString::to_string),
            errno,
        },
        _ => JailUnavailable::Fork(errno),
    }
}

/// In the original process, once PID 1 has built the view: does what
/// magus proper asks of each of `outside` until PID 1's last report is
/// there (or PID 1 is gone); a service that is done is dropped.
fn serve_until_reported(report: &OwnedFd, mut outside: Vec<Box<dyn Outside>>) {
    while !outside.is_empty() {
        let Some((reported, asked)) = poll_services(report, &outside) else {
            return;
        };
        let mut index = 0;
        outside.retain_mut(|service| {
            let keep = !asked[index] || service.serve();
            index += 1;
            keep
        });
        if reported {
            return;
        }
    }
}

/// Waits until PID 1 reports or a service is asked something: whether
/// the report is there, and which services were asked. `None` when
/// polling fails for good.
fn poll_services(report: &OwnedFd, outside: &[Box<dyn Outside>]) -> Option<(bool, Vec<bool>)> {
    loop {
        let mut fds = vec![PollFd::new(report.as_fd(), PollFlags::POLLIN)];
        fds.extend(
            outside
                .iter()
                .map(|s| PollFd::new(s.requests(), PollFlags::POLLIN)),
        );
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => {}
            Err(Errno::EINTR) => continue,
            Err(_) => return None,
        }
        let ready: Vec<bool> = fds
            .iter()
            .map(|fd| fd.revents().is_some_and(|r| !r.is_empty()))
            .collect();
        return Some((ready[0], ready[1..].to_vec()));
    }
}

/// In the original process: magus's status, as PID 1 reports it once
/// every other process of the namespace has ended ([`end_namespace`]),
/// or, where PID 1 ended without reporting (the wall-time limit, a
/// signal), its exit status. Either way PID 1 is reaped before this
/// returns, although its exit (the kernel tearing down the view's ~90
/// mounts) costs a few tenths of a millisecond: a process this one does
/// not reap takes its CPU time, and that of magus proper, which it
/// reaped, out of the caller's `wait4`/`getrusage` (`time magus run`
/// would show the jail's start-up and not the spell).
fn wait_for_end(init: Pid, report: &OwnedFd) -> i32 {
    let mut code = [0u8; 4];
    let reported = read_full(report, &mut code) == code.len();
    let exited = wait_for(init, init, None);
    if reported {
        i32::from_le_bytes(code)
    } else {
        exited
    }
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

/// In PID 1: the network namespace made ahead, IPC and mount namespaces
/// of its own (so a failure leaves the original's untouched), then fork
/// magus proper, build the view, report,
/// and reap. Returns only in the grandchild, which carries on as magus.
///
/// Magus proper is forked before the view is built, into the same mount
/// namespace, so that the set-up that needs no file (the network
/// namespace, dropping capabilities, the syscall guard) runs on the other
/// core meanwhile; it waits for the view before anything that reads a
/// path (`super::wait_until_built`). Each `pivot_root` of the plan moves
/// its root with PID 1's; it holds nothing of the host's but its working
/// directory, which it leaves for the view's root once built.
fn become_init(
    report: OwnedFd,
    plan: &JailPlan,
    network: Option<OwnedFd>,
    limits: &LimitsPlan,
) -> Reports {
    super::ahead::join_network(network);
    if let Err(errno) = unshare(CloneFlags::CLONE_NEWIPC) {
        fail(&report, IPC_NAMESPACE, 0, errno);
    }
    if let Err(errno) = unshare(CloneFlags::CLONE_NEWNS) {
        fail(&report, MOUNT_NAMESPACE, 0, errno);
    }
    // `sandbox.limits.processes`: cap this namespace's PIDs before magus
    // proper is forked (a no-op unless declared), and before the view
    // makes `/proc` read-only. The sysctls act on the writer's own PID
    // namespace whichever `/proc` they are reached through.
    limits::in_new_pid_namespace(limits);
    // If the waiting original is killed, take the whole namespace down.
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    let pipes = pipe2(OFlag::O_CLOEXEC).and_then(|built| Ok((built, pipe2(OFlag::O_CLOEXEC)?)));
    let ((built_rx, built_tx), (sealed_rx, sealed_tx)) = match pipes {
        Ok(pairs) => pairs,
        Err(errno) => fail(&report, FORK, 0, errno),
    };
    // Before the plan moves this namespace's root: magus proper opens the
    // grants the view binds through it while the view is built.
    let host_root = super::open_host_root();
    let allowed = super::cores::note();
    // SAFETY: still single-threaded.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            drop(report);
            drop(built_tx);
            drop(sealed_tx);
            let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
            Reports {
                built: built_rx,
                sealed: sealed_rx,
                host_root,
                allowed,
            }
        }
        Ok(ForkResult::Parent { child }) => {
            super::cores::elsewhere(child);
            super::host_paths::forget();
            drop(built_rx);
            drop(sealed_rx);
            drop(host_root);
            // Before the report: the original forwards here from then on.
            install_forwarding(child);
            // A failure ends PID 1, and with it magus proper (its
            // parent-death signal), which has run no code of the spell.
            if let Err(StepFailure { index, errno }) = apply(plan) {
                fail(&report, STEP, index, errno);
            }
            let _ = write(&built_tx, &0i32.to_le_bytes());
            drop(built_tx);
            send_report(&report, OK, 0, Errno::UnknownErrno);
            let sealed = detach_host_root().err().map_or(0, |errno| errno as i32);
            let _ = write(&sealed_tx, &sealed.to_le_bytes());
            drop(sealed_tx);
            reap_and_exit(child, report, limits);
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

/// The process signals are passed on to, for the forwarding handler; 0
/// once it is reaped (its PID may then name another process). Global:
/// the forwarding signal handler reads it.
static FORWARD_TO: AtomicI32 = AtomicI32::new(0);

/// The last `SIGTERM` or `SIGINT` received, however sent (0 for none):
/// the supervisor without a PID namespace ends the run on it. Global: the
/// signal handler writes it.
static ASKED_TO_END: AtomicI32 = AtomicI32::new(0);

/// Passes a signal on when a process sent it with `kill`; signals the
/// terminal raises (`SI_KERNEL`) already reach magus through its process
/// group, so they are not doubled.
extern "C" fn forward(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    if sig == libc::SIGTERM || sig == libc::SIGINT {
        ASKED_TO_END.store(sig, Ordering::Relaxed);
    }
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

/// From now on the forwarded signals go nowhere: call once the target is
/// reaped, before its PID can be handed to another process.
pub(crate) fn forget_forward_target() {
    FORWARD_TO.store(0, Ordering::Relaxed);
}

/// The `SIGTERM` or `SIGINT` this process received since it began to
/// forward, if any.
pub(crate) fn asked_to_end() -> Option<Signal> {
    Signal::try_from(ASKED_TO_END.load(Ordering::Relaxed)).ok()
}

/// Gives [`FORWARDED`] their default action back, in a process forked by
/// one that passes them on (the proxy, forked by the original).
pub(crate) fn stop_forwarding_signals() {
    let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
    for sig in FORWARDED {
        // SAFETY: the default action installs no handler.
        let _ = unsafe { sigaction(sig, &default) };
    }
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

/// PID 1: reap every orphan; when magus ends, end every other process of
/// the namespace, tell the original, and exit with magus's status (the
/// kernel would kill whatever is left at this exit all the same).
fn reap_and_exit(magus: Pid, report: OwnedFd, limits: &LimitsPlan) -> ! {
    install_forwarding(magus);
    // It keeps its capabilities, so never let a child trace it (`crate::enforce::untraceable`).
    let _ = crate::enforce::untraceable::refuse_tracing();
    // `sandbox.limits.wall_time`: the alarm interrupts the wait below.
    limits::arm_deadline(limits);
    let code = wait_for(Pid::from_raw(-1), magus, Some(limits));
    end_namespace();
    let _ = write(&report, &code.to_le_bytes());
    exit_now(code)
}

/// Kills every process of the namespace but this one and reaps them all,
/// orphans included, so that when it returns no process of the run is
/// left but PID 1. `kill(-1)` reaches every process of the namespace (a
/// `fork` racing it fails: the kernel adds the child under the lock the
/// kill walks under, and a parent with a pending kill cannot fork); each
/// one's children come to PID 1 when it dies, so `ECHILD` means none is
/// left. The wall-time alarm may ring meanwhile: the wait goes on.
fn end_namespace() {
    // SAFETY: kill has no memory effects; -1 never includes the caller.
    unsafe { libc::kill(-1, libc::SIGKILL) };
    loop {
        match waitpid(Pid::from_raw(-1), None) {
            Err(Errno::ECHILD) => return,
            Err(Errno::EINTR) | Ok(_) => continue,
            Err(_) => return,
        }
    }
}

/// Waits on `which` until `main` ends; returns its status. `armed` where
/// this process armed the wall-time alarm (only PID 1 does: its exit
/// kills the whole namespace).
fn wait_for(which: Pid, main: Pid, armed: Option<&LimitsPlan>) -> i32 {
    if which == main {
        install_forwarding(main);
    }
    loop {
        // A ring interrupts the wait (`EINTR`), and one between two waits
        // is seen here too (it rings again, see `limits::on_alarm`, in
        // case it came just after this check).
        if let Some(plan) = armed.filter(|_| limits::over_time()) {
            limits::exit_over_time(plan)
        }
        match waitpid(which, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == main => {
                forget_forward_target();
                return code;
            }
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == main => {
                forget_forward_target();
                return 128 + sig as i32;
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
