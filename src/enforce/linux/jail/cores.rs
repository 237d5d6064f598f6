//! Where the jail's start-up runs: on two cores at once, where there are
//! two. The namespace helper (`super::ahead`) works while the original
//! plans the view, and magus proper sets itself up (capabilities, the
//! syscall guard, Landlock's first rules) while PID 1 builds the view.
//!
//! Left to itself, the scheduler often put the new process on its
//! parent's core, busy, with the other idle: it then waited for the
//! parent to block (for magus proper, the whole view, about a
//! millisecond; half the runs on two cores). So the parent moves it off
//! its own core before it has run ([`elsewhere`]). Magus proper takes the
//! whole mask back ([`restore`]) once the view is built, before any child
//! inherits it; a `taskset` or cpuset around magus is kept throughout.

use nix::sched::{sched_getaffinity, sched_getcpu, sched_setaffinity, CpuSet};
use nix::unistd::Pid;

/// The CPUs magus proper may use, noted by PID 1 before it forks it (the
/// forked copy carries it into magus proper).
pub(super) struct Allowed(Option<CpuSet>);

/// Moves `child` (forked, not yet run) to the CPUs the caller may use but
/// the one it is on. Where that is the only one, it stays.
pub(super) fn elsewhere(child: Pid) {
    let (Ok(here), Ok(mut others)) = (sched_getcpu(), sched_getaffinity(Pid::from_raw(0))) else {
        return;
    };
    if others.unset(here).is_err() {
        return;
    }
    let any_other = (0..CpuSet::count()).any(|cpu| others.is_set(cpu).unwrap_or(false));
    if any_other {
        let _ = sched_setaffinity(child, &others);
    }
}

/// In PID 1, before it forks magus proper: the mask [`restore`] gives
/// back.
pub(super) fn note() -> Allowed {
    Allowed(sched_getaffinity(Pid::from_raw(0)).ok())
}

/// In magus proper: the CPUs it had before [`elsewhere`] moved it.
pub(super) fn restore(allowed: Allowed) {
    if let Allowed(Some(mask)) = allowed {
        let _ = sched_setaffinity(Pid::from_raw(0), &mask);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In a forked child, so the test runner's threads keep their CPUs.
    #[test]
    fn a_moved_process_gets_its_whole_mask_back() {
        let before = sched_getaffinity(Pid::from_raw(0)).unwrap();
        let count = (0..CpuSet::count())
            .filter(|&c| before.is_set(c).unwrap())
            .count();
        // SAFETY: the child makes system calls and `_exit`s; the forking
        // thread's state is all it needs.
        match unsafe { nix::unistd::fork() }.unwrap() {
            nix::unistd::ForkResult::Child => {
                let allowed = note();
                elsewhere(Pid::from_raw(0));
                let moved = sched_getaffinity(Pid::from_raw(0)).unwrap();
                let fewer = (0..CpuSet::count())
                    .filter(|&c| moved.is_set(c).unwrap())
                    .count();
                restore(allowed);
                let back = sched_getaffinity(Pid::from_raw(0)).unwrap();
                let ok = (count < 2 || fewer == count - 1) && back == before;
                // SAFETY: _exit is always safe.
                unsafe { libc::_exit(if ok { 0 } else { 1 }) }
            }
            nix::unistd::ForkResult::Parent { child } => {
                let status = nix::sys::wait::waitpid(child, None).unwrap();
                assert_eq!(status, nix::sys::wait::WaitStatus::Exited(child, 0));
            }
        }
    }
}
