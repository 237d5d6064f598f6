//! No survivors without a PID namespace (docs/survivors.md; with one, the
//! kernel kills what is left when its init exits). Where user namespaces
//! are refused, magus forks a supervisor, a child subreaper, so every
//! orphan of the run is re-parented to it; it bounds the run's processes
//! (`cgroup`, `watch`), and when magus ends, the wall time runs out or it
//! is asked to end, it stops and kills them all (`tree`), then sweeps
//! what the run left behind (`crate::enforce::leftovers`) and removes the
//! run's own temporary directory (`super::run_temp`).

mod cgroup;
mod tree;
mod watch;

use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::signal::{kill, sigprocmask, SigSet, SigmaskHow, Signal};
use nix::sys::time::TimeSpec;
use nix::unistd::{fork, getpid, pipe2, read, write, ForkResult, Pid};

use self::cgroup::RunCgroup;
use self::tree::Reaped;
use self::watch::Watch;
use super::limits::{self, BoundSource, LimitsPlan};
use super::process::is_single_threaded;
use super::run_temp::RunTemp;
use super::terminal::TerminalModes;
use crate::diag::{Diagnostic, OutputOptions, Renderer};
use crate::enforce::leftovers::{self, Watch as Leftovers};

/// Why the supervisor could not be set up (the run goes on without it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum SupervisorError {
    #[error("another thread was already running")]
    ThreadsRunning,
    #[error("cannot become a child subreaper: {}", .0.desc())]
    Subreaper(Errno),
    #[error("fork failed: {}", .0.desc())]
    Fork(Errno),
}

/// Forks: returns in the child, which carries on as magus; the parent
/// becomes the supervisor and never returns. Call on the lone main thread.
///
/// The supervisor makes a cgroup of the run's own where this user may and
/// moves magus proper into it, which costs the kernel an RCU grace period
/// (~10 ms): it does so while magus sets up, and magus waits for it only
/// before its first child ([`wait_until_placed`]): threads move with the
/// process, a child started before would not.
pub(crate) fn supervise_without_pid_namespace(
    left: Leftovers,
    run_temp: Option<&RunTemp>,
    output: OutputOptions,
    plan: &LimitsPlan,
) -> Result<(), SupervisorError> {
    if !is_single_threaded() {
        return Err(SupervisorError::ThreadsRunning);
    }
    nix::sys::prctl::set_child_subreaper(true).map_err(SupervisorError::Subreaper)?;
    let terminal = TerminalModes::note();
    let (placed_rx, placed_tx) = pipe2(OFlag::O_CLOEXEC).map_err(SupervisorError::Fork)?;
    // SAFETY: single-threaded (checked above), so the child may run
    // arbitrary code after fork.
    match unsafe { fork() }.map_err(SupervisorError::Fork)? {
        ForkResult::Child => {
            drop(placed_tx);
            let _ = nix::sys::prctl::set_child_subreaper(false);
            let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
            PLACED.store(placed_rx.into_raw_fd(), Ordering::Relaxed);
            // Counted by the supervisor until it says a cgroup holds it.
            limits::held_by_supervisor(plan.limits());
            Ok(())
        }
        ForkResult::Parent { child } => {
            drop(placed_rx);
            let left = Left {
                leftovers: &left,
                run_temp,
            };
            supervise(child, &terminal, placed_tx, left, output, plan)
        }
    }
}

/// What the supervisor cleans up once every process of the run is gone.
struct Left<'a> {
    leftovers: &'a Leftovers,
    run_temp: Option<&'a RunTemp>,
}

impl Left<'_> {
    /// Removes the run's temporary directory (first: with `$TMPDIR` in
    /// the workspace, nothing in it is worth setting aside), saying if it
    /// could not, then sweeps what the run left behind.
    fn clean(&self, output: OutputOptions) {
        if let Some(run_temp) = self.run_temp {
            if let Err(e) = run_temp.discard() {
                let warning = Diagnostic::warning(format!(
                    "cannot remove the run's temporary directory `{}`: {e}",
                    run_temp.path().display()
                ));
                Renderer::for_output(output).emit(&warning);
            }
        }
        leftovers::report::sweep_and_say(self.leftovers, output);
    }
}

/// The run's bound in tasks: the declared or default count, and magus
/// proper's own threads.
fn bound(plan: &LimitsPlan) -> u32 {
    let (count, _) = limits::supervised_processes(plan.limits());
    count.saturating_add(plan.own_tasks())
}

/// The length of what the supervisor writes on the `placed` pipe.
const PLACED_LEN: usize = 5;

/// What the supervisor tells magus proper once it is placed: whether a
/// `pids` cgroup holds the run (1 or 0), then the default bound it holds,
/// little-endian, or 0 where `processes` is declared.
fn placed_message(bounded: bool, plan: &LimitsPlan) -> [u8; PLACED_LEN] {
    let default = match limits::supervised_processes(plan.limits()) {
        (count, BoundSource::Default) => count,
        (_, BoundSource::Declared) => 0,
    };
    let [a, b, c, d] = default.to_le_bytes();
    [u8::from(bounded), a, b, c, d]
}

/// In magus proper: the read end of the pipe the supervisor writes once it
/// has moved magus into the run's cgroup; -1 once read (or never made).
/// Global: the spawn path waits on it before the first child
/// ([`wait_until_placed`]), and holds no run value.
static PLACED: AtomicI32 = AtomicI32::new(-1);

/// In magus proper, before it starts a child: waits until the supervisor
/// has moved it into the run's cgroup (at once after the first time, and
/// where there is no supervisor), and notes whether a `pids` cgroup now
/// holds the process bound.
pub(crate) fn wait_until_placed() {
    let fd = PLACED.swap(-1, Ordering::Relaxed);
    if fd < 0 {
        return;
    }
    // SAFETY: the descriptor was stored by this process and taken once.
    let placed = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut said = [0u8; PLACED_LEN];
    let got = loop {
        match read(&placed, &mut said) {
            Err(Errno::EINTR) => continue,
            other => break other,
        }
    };
    if let (Ok(PLACED_LEN), Some(default)) = (got, in_pids_cgroup(said)) {
        limits::placed_in_pids_cgroup(default);
    }
}

/// Reads [`placed_message`]: `None` where no `pids` cgroup holds the run,
/// else the default bound it holds (`None` inside where declared).
fn in_pids_cgroup(said: [u8; PLACED_LEN]) -> Option<Option<u32>> {
    let [bounded, a, b, c, d] = said;
    let default = u32::from_le_bytes([a, b, c, d]);
    (bounded == 1).then_some((default > 0).then_some(default))
}

/// How the wait for magus ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// Magus ended with this status (and is reaped).
    Magus(i32),
    OverTime,
    /// The run holds more tasks than its bound.
    OverProcesses,
    /// `SIGTERM` or `SIGINT`, and magus did not end within [`GRACE`].
    AskedToEnd(Signal),
    /// No child left, magus's status never seen.
    Lost,
}

/// How long magus has to end by itself once the supervisor is asked to
/// end (magus got the signal too: passed on, or from the terminal).
const GRACE: Duration = Duration::from_millis(500);

/// Waits for magus (forwarding the signals sent to this process), then
/// stops and kills every descendant, puts the terminal's mode back and
/// exits with magus's status, or as the limit or signal that ended it.
fn supervise(
    magus: Pid,
    terminal: &TerminalModes,
    placed: OwnedFd,
    left: Left<'_>,
    output: OutputOptions,
    plan: &LimitsPlan,
) -> ! {
    // Outside the syscall guard and any network namespace: a child that
    // traced it would connect out for it (`super::untraceable`).
    if super::untraceable::refuse_tracing().is_err() {
        let _ = kill(magus, Signal::SIGKILL);
    }
    super::jail::forward_signals_to(magus);
    // Where no pids cgroup holds the bound, the supervisor counts.
    let tasks = bound(plan);
    let mut cgroup = RunCgroup::make(tasks);
    let bounded = cgroup.adopt(magus);
    let _ = write(&placed, &placed_message(bounded, plan));
    drop(placed);
    let me = getpid().as_raw();
    let mut watch = (!bounded).then(|| Watch::new(tasks, me, magus.as_raw()));
    let end = || {
        super::jail::forget_forward_target();
        end_run(&cgroup);
        left.clean(output);
        terminal.restore();
    };
    let mask = block_wakeups();
    limits::arm_deadline(plan);
    let ending = wait_for_magus(magus, &mask, watch.as_mut());
    end();
    match ending {
        Ending::Magus(code) => exit_now(code),
        Ending::OverTime => limits::exit_over_time(plan),
        Ending::OverProcesses => limits::exit_over_processes(plan),
        Ending::AskedToEnd(sig) => exit_now(128 + sig as i32),
        Ending::Lost => exit_now(1),
    }
}

/// Blocks what wakes the supervisor (a child's end, the wall-time alarm,
/// the forwarded signals) outside its waits, so none lands between a
/// check and the wait; returns the mask to wait with.
fn block_wakeups() -> SigSet {
    let mut set = SigSet::empty();
    for sig in [
        Signal::SIGCHLD,
        Signal::SIGALRM,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ] {
        set.add(sig);
    }
    // A handler, so that a child's end interrupts the wait (SIGCHLD's
    // default is to be discarded).
    let wake = nix::sys::signal::SigAction::new(
        nix::sys::signal::SigHandler::Handler(on_child),
        nix::sys::signal::SaFlags::empty(),
        SigSet::empty(),
    );
    // SAFETY: the handler does nothing.
    let _ = unsafe { nix::sys::signal::sigaction(Signal::SIGCHLD, &wake) };
    let mut old = SigSet::empty();
    let _ = sigprocmask(SigmaskHow::SIG_BLOCK, Some(&set), Some(&mut old));
    old
}

extern "C" fn on_child(_: libc::c_int) {}

/// Reaps every zombie each round (orphans of the run come here by the
/// thousand) until magus's own status is seen, or a limit or signal ends
/// the wait.
fn wait_for_magus(magus: Pid, mask: &SigSet, mut watch: Option<&mut Watch>) -> Ending {
    let me = getpid().as_raw();
    let mut asked: Option<Instant> = None;
    loop {
        match tree::reap_pending(Some(magus)) {
            Reaped::Main(code) => return Ending::Magus(code),
            Reaped::NoChildLeft => return Ending::Lost,
            Reaped::Running => {}
        }
        if limits::over_time() {
            return Ending::OverTime;
        }
        if let Some(sig) = super::jail::asked_to_end() {
            if asked.get_or_insert_with(Instant::now).elapsed() >= GRACE {
                return Ending::AskedToEnd(sig);
            }
        }
        if watch.as_deref_mut().is_some_and(|w| w.over(me)) {
            return Ending::OverProcesses;
        }
        let timeout = (asked.is_some() || watch.is_some()).then(|| TimeSpec::from(watch::TICK));
        let _ = nix::poll::ppoll(&mut [], timeout, Some(*mask));
    }
}

/// Ends every process of the run: `cgroup.kill` where there is one, then
/// every descendant stopped until none runs (so a child forking every
/// millisecond cannot keep ahead), killed, and reaped; the cgroup goes.
fn end_run(cgroup: &RunCgroup) {
    let me = getpid().as_raw();
    if cgroup.can_kill() {
        cgroup.kill();
    }
    tree::stop_all(me);
    tree::kill_all(me);
    cgroup.remove();
}

fn exit_now(code: i32) -> ! {
    // SAFETY: _exit skips atexit handlers, which belong to magus proper.
    unsafe { libc::_exit(code) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Limits;

    #[test]
    fn the_placed_message_carries_the_default_bound_only_where_none_is_declared() {
        let declared = LimitsPlan::new(
            Limits {
                processes: Some(64),
                ..Limits::default()
            },
            String::new(),
        );
        assert_eq!(in_pids_cgroup(placed_message(true, &declared)), Some(None));
        assert_eq!(in_pids_cgroup(placed_message(false, &declared)), None);
        let default = LimitsPlan::default();
        let (count, _) = limits::supervised_processes(default.limits());
        let said = in_pids_cgroup(placed_message(true, &default));
        assert_eq!(said, Some(Some(count)));
        assert!(count > 0);
    }
}
