//! No survivors without a PID namespace (DESIGN §6a). With one, the
//! namespace's init exiting makes the kernel kill every process left in it.
//! Without one (user namespaces refused), magus forks a supervisor that
//! is a child subreaper (`PR_SET_CHILD_SUBREAPER`): every orphan of the run,
//! `setsid` and double forks included, is re-parented to it, and when
//! magus ends (or the wall time runs out) it kills them until none is left,
//! then sweeps what the run left behind (`crate::enforce::leftovers`).

use nix::errno::Errno;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, getpid, ForkResult, Pid};

use super::limits;
use super::process::is_single_threaded;
use super::terminal::TerminalModes;
use crate::enforce::leftovers::{self, Watch};

/// Why the supervisor could not be set up (the run goes on without it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SupervisorError {
    #[error("another thread was already running")]
    ThreadsRunning,
    #[error("cannot become a child subreaper: {}", .0.desc())]
    Subreaper(Errno),
    #[error("fork failed: {}", .0.desc())]
    Fork(Errno),
}

/// Forks: returns in the child, which carries on as magus; the parent
/// becomes the supervisor and never returns. Call on the lone main thread.
pub fn supervise_without_pid_namespace(watch: Watch) -> Result<(), SupervisorError> {
    if !is_single_threaded() {
        return Err(SupervisorError::ThreadsRunning);
    }
    nix::sys::prctl::set_child_subreaper(true).map_err(SupervisorError::Subreaper)?;
    let terminal = TerminalModes::note();
    // SAFETY: single-threaded (checked above), so the child may run
    // arbitrary code after fork.
    match unsafe { fork() }.map_err(SupervisorError::Fork)? {
        ForkResult::Child => {
            let _ = nix::sys::prctl::set_child_subreaper(false);
            let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
            Ok(())
        }
        ForkResult::Parent { child } => supervise(child, &terminal, &watch),
    }
}

/// Waits for magus (forwarding the signals sent to this process), then
/// kills every descendant, puts the terminal's mode back and exits with
/// magus's status.
fn supervise(magus: Pid, terminal: &TerminalModes, watch: &Watch) -> ! {
    let end = || {
        kill_descendants();
        leftovers::report::emit(&watch.after());
        terminal.restore();
    };
    // Outside the syscall guard and any network namespace: a child that
    // traced it would connect out for it (`super::untraceable`).
    if super::untraceable::refuse_tracing().is_err() {
        let _ = kill(magus, Signal::SIGKILL);
    }
    super::jail::forward_signals_to(magus);
    limits::arm_deadline();
    let status = loop {
        // A ring between two waits (see `limits::on_alarm`).
        if limits::over_time() {
            end();
            limits::exit_over_time()
        }
        match waitpid(Pid::from_raw(-1), None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == magus => break code,
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == magus => break 128 + sig as i32,
            Err(Errno::EINTR) if limits::over_time() => {
                end();
                limits::exit_over_time()
            }
            Err(Errno::ECHILD) => break 1,
            _ => continue,
        }
    };
    end();
    // SAFETY: _exit skips atexit handlers, which belong to magus proper.
    unsafe { libc::_exit(status) }
}

/// Kills this process's children until it has none: each killed one's
/// own children are re-parented here (subreaper) and killed next round.
pub fn kill_descendants() {
    loop {
        for child in children_of(getpid()) {
            let _ = kill(child, Signal::SIGKILL);
        }
        match waitpid(Pid::from_raw(-1), None) {
            Err(Errno::ECHILD) => return,
            Err(Errno::EINTR) | Ok(_) => continue,
            Err(_) => return,
        }
    }
}

/// The processes whose parent is `parent`, from `/proc/<pid>/stat`.
fn children_of(parent: Pid) -> Vec<Pid> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| parent_of(pid) == Some(parent.as_raw()))
        .map(Pid::from_raw)
        .collect()
}

/// Field 4 of `/proc/<pid>/stat`, read after the last `)` because the
/// command name in field 2 may hold spaces and parentheses.
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_of_this_process_is_read_from_proc() {
        let me = std::process::id() as i32;
        let parent = nix::unistd::getppid().as_raw();
        assert_eq!(parent_of(me), Some(parent));
        assert_eq!(parent_of(-5), None);
    }
}
