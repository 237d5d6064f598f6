//! The run's processes as `/proc` shows them, for the supervisor used
//! without a PID namespace: every process that descends from it (a child
//! subreaper, so orphans stay in its tree), stopped until a pass finds
//! none running or new, then killed, and its own zombies reaped, all of
//! them each round. Signals go through a pidfd opened on the process seen,
//! so a PID freed and reused meanwhile is never signalled.

use std::collections::HashSet;
use std::os::fd::{FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::Signal;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

/// One process, from `/proc/<pid>/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Proc {
    pub pid: i32,
    pub ppid: i32,
    /// The state letter (`R`, `S`, `D`, `T`, `t`, `Z`, ...).
    pub state: u8,
    pub threads: u32,
    /// Start time in clock ticks since boot: with the PID, names one
    /// process across PID reuse.
    pub start: u64,
}

impl Proc {
    /// Dead, not yet reaped: it can neither run nor fork.
    pub(super) fn is_zombie(&self) -> bool {
        matches!(self.state, b'Z' | b'X' | b'x')
    }

    /// Stopped or dead, every thread of it.
    fn is_halted(&self) -> bool {
        if self.threads > 1 {
            return threads_halted(self.pid);
        }
        self.is_zombie() || matches!(self.state, b'T' | b't')
    }
}

/// Reads `/proc/<pid>/stat`. The command name (field 2) may hold spaces
/// and parentheses, so the fields are read after the last `)`.
pub(super) fn stat(pid: i32) -> Option<Proc> {
    stat_at(&format!("/proc/{pid}/stat"), pid)
}

fn stat_at(path: &str, pid: i32) -> Option<Proc> {
    let text = std::fs::read_to_string(path).ok()?;
    let after_name = &text[text.rfind(')')? + 1..];
    // Fields from 3 on: state, ppid, ... num_threads (20), ... starttime (22).
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    Some(Proc {
        pid,
        state: *fields.first()?.as_bytes().first()?,
        ppid: fields.get(1)?.parse().ok()?,
        threads: fields.get(17)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// Whether every thread of `pid` is stopped or dead (a group stop reaches
/// the threads one by one, and a thread group whose leader has exited
/// shows a zombie leader while its other threads run).
fn threads_halted(pid: i32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return true;
    };
    tasks.filter_map(Result::ok).all(|task| {
        let tid = task.file_name().to_str().and_then(|t| t.parse().ok());
        let path = format!("/proc/{pid}/task/{}/stat", tid.unwrap_or(0));
        stat_at(&path, pid).is_none_or(|t| matches!(t.state, b'T' | b't' | b'Z' | b'X' | b'x'))
    })
}

/// The PIDs `/proc` lists, in its order (ascending).
fn pids() -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .collect()
}

/// Every process descending from `root`, in one pass over `/proc`.
/// `found` is called on each as soon as it is known to be one: a parent
/// usually has a lower PID than its child, so most are acted on while the
/// pass reads on (a process that lives a millisecond is caught alive).
pub(super) fn descendants(root: i32, mut found: impl FnMut(&Proc)) -> Vec<Proc> {
    let mut ours: HashSet<i32> = HashSet::from([root]);
    let mut out = Vec::new();
    let mut undecided = Vec::new();
    for pid in pids() {
        let Some(p) = stat(pid) else { continue };
        if ours.contains(&p.ppid) && pid != root {
            ours.insert(pid);
            found(&p);
            out.push(p);
        } else {
            undecided.push(p);
        }
    }
    // Children listed before their parents (PIDs wrapped around).
    loop {
        let (mine, rest): (Vec<Proc>, Vec<Proc>) =
            undecided.into_iter().partition(|p| ours.contains(&p.ppid));
        if mine.is_empty() {
            return out;
        }
        for p in mine {
            ours.insert(p.pid);
            found(&p);
            out.push(p);
        }
        undecided = rest;
    }
}

/// Sends `sig` to the process `seen` names, if it is still that process:
/// a pidfd pins it, then its start time is read again. Without pidfds
/// (Linux < 5.3), plain `kill`.
pub(super) fn signal(seen: &Proc, sig: Signal) {
    // SAFETY: pidfd_open takes a PID and flags and touches no memory.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, seen.pid, 0) };
    if fd < 0 {
        if Errno::last() == Errno::ENOSYS {
            let _ = nix::sys::signal::kill(Pid::from_raw(seen.pid), sig);
        }
        return;
    }
    // SAFETY: the kernel just returned this descriptor, owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    if stat(seen.pid).is_some_and(|now| now.start == seen.start) {
        use std::os::fd::AsRawFd;
        let null = std::ptr::null::<libc::siginfo_t>();
        // SAFETY: a valid pidfd, a signal number, no siginfo, no flags.
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                fd.as_raw_fd(),
                sig as i32,
                null,
                0,
            )
        };
    }
}

/// How long the stop passes may go on before the kill goes ahead anyway
/// (a process in uninterruptible sleep stops only when it wakes).
const STOP_BUDGET: Duration = Duration::from_secs(2);

/// Stops every descendant of `root` (`SIGSTOP`, which it cannot catch),
/// pass after pass, until a pass finds each one stopped or dead and none
/// that the previous pass did not: then none can fork any more. Reaps
/// `root`'s own zombies each pass. Returns whether it got there within
/// [`STOP_BUDGET`].
pub(super) fn stop_all(root: i32) -> bool {
    let start = Instant::now();
    let mut last: Option<HashSet<i32>> = None;
    loop {
        reap_pending(None);
        let procs = descendants(root, |p| {
            if !p.is_zombie() {
                signal(p, Signal::SIGSTOP);
            }
        });
        let alive: HashSet<i32> = procs
            .iter()
            .filter(|p| !p.is_zombie())
            .map(|p| p.pid)
            .collect();
        let halted = procs
            .iter()
            .filter(|p| !p.is_zombie())
            .all(|p| stat(p.pid).is_none_or(|now| now.is_halted()));
        if halted && last.as_ref() == Some(&alive) {
            return true;
        }
        if start.elapsed() > STOP_BUDGET {
            return false;
        }
        last = Some(alive);
    }
}

/// Kills every descendant of `root` and reaps until it has no child left:
/// a killed process's children (and zombies) come to `root`, a child
/// subreaper, and are killed and reaped in the next round.
pub(super) fn kill_all(root: i32) {
    loop {
        descendants(root, |p| {
            if !p.is_zombie() {
                signal(p, Signal::SIGKILL);
            }
        });
        match waitpid(Pid::from_raw(-1), None) {
            Err(Errno::ECHILD) => return,
            Err(Errno::EINTR) => continue,
            Ok(_) => {
                if reap_pending(None) == Reaped::NoChildLeft {
                    return;
                }
            }
            Err(_) => return,
        }
    }
}

/// What [`reap_pending`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reaped {
    /// `main` ended with this status (`128 + n` for signal `n`).
    Main(i32),
    /// Children remain, none of them waiting to be reaped.
    Running,
    NoChildLeft,
}

/// Reaps every zombie child waiting now, not one: thousands may be. When
/// `main` is among them, says so with its status (the others are reaped
/// all the same).
pub(super) fn reap_pending(main: Option<Pid>) -> Reaped {
    let mut seen = Reaped::Running;
    loop {
        match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) if Some(pid) == main => seen = Reaped::Main(code),
            Ok(WaitStatus::Signaled(pid, sig, _)) if Some(pid) == main => {
                seen = Reaped::Main(128 + sig as i32)
            }
            Ok(WaitStatus::StillAlive) => return seen,
            Ok(_) | Err(Errno::EINTR) => continue,
            Err(Errno::ECHILD) if seen == Reaped::Running => return Reaped::NoChildLeft,
            Err(_) => return seen,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_read_from_proc() {
        let me = std::process::id() as i32;
        let p = stat(me).unwrap();
        assert_eq!(p.ppid, nix::unistd::getppid().as_raw());
        assert!(p.threads >= 1 && p.start > 0, "{p:?}");
        assert!(!p.is_zombie());
        assert_eq!(stat(-5), None);
    }

    #[test]
    fn a_name_with_spaces_and_parentheses_does_not_shift_the_fields() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stat");
        let line = "42 (a) (b c) S 7 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 3 0 12345 0 0";
        std::fs::write(&path, line).unwrap();
        let p = stat_at(path.to_str().unwrap(), 42).unwrap();
        assert_eq!((p.state, p.ppid, p.threads, p.start), (b'S', 7, 3, 12345));
    }
}
