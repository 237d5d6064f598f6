//! The run's process bound where no `pids` cgroup holds it: the supervisor
//! counts its descendants' tasks and ends the run past the bound. Counting
//! reads `/proc` once per process, so it runs at most once a second, and
//! only while the whole machine holds more tasks than the bound (one line
//! of `/proc/loadavg`), since the run alone cannot exceed it otherwise.
//! Reactive: a fork past the bound succeeds until the next count.

use std::time::{Duration, Instant};

use super::tree;

/// How often the supervisor wakes to look, and how often it may count.
pub(super) const TICK: Duration = Duration::from_millis(100);
const COUNT_EVERY: Duration = Duration::from_secs(1);

/// The bound and when the run's tasks were last counted.
#[derive(Debug)]
pub(super) struct Watch {
    bound: u64,
    counted: Option<Instant>,
    /// The supervisor's children born before magus proper: the `hosts`
    /// proxy, forked before the supervisor where there is no jail. It
    /// serves the run from outside `limits.processes` (its clients are
    /// bounded on their own), so its threads are not the run's.
    outside: Vec<(i32, u64)>,
}

impl Watch {
    /// Watches for more than `bound` tasks among the descendants of
    /// `root` (the supervisor), but for those of its children that exist
    /// already and are not `magus`.
    pub(super) fn new(bound: u32, root: i32, magus: i32) -> Watch {
        let outside = tree::descendants(root, |_| {})
            .into_iter()
            .filter(|p| p.ppid == root && p.pid != magus)
            .map(|p| (p.pid, p.start))
            .collect();
        Watch {
            bound: u64::from(bound),
            counted: None,
            outside,
        }
    }

    /// Whether the run's tasks (the descendants of `root`, a zombie
    /// counting one) exceed the bound.
    pub(super) fn over(&mut self, root: i32) -> bool {
        if machine_tasks().is_some_and(|n| n <= self.bound) {
            return false;
        }
        if self.counted.is_some_and(|at| at.elapsed() < COUNT_EVERY) {
            return false;
        }
        self.counted = Some(Instant::now());
        let count: u64 = tree::descendants(root, |_| {})
            .iter()
            .filter(|p| !self.outside.contains(&(p.pid, p.start)))
            .map(|p| u64::from(p.threads.max(1)))
            .sum();
        count > self.bound
    }
}

/// Every task (thread) on the machine, zombies included: the denominator
/// of the fourth field of `/proc/loadavg` (`running/total`).
fn machine_tasks() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    parse_loadavg(&text)
}

fn parse_loadavg(text: &str) -> Option<u64> {
    let field = text.split_whitespace().nth(3)?;
    field.split_once('/')?.1.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machines_task_count_is_the_fourth_fields_denominator() {
        assert_eq!(parse_loadavg("0.92 0.80 0.44 1/92 13667\n"), Some(92));
        assert_eq!(parse_loadavg("0.92 0.80"), None);
        assert!(machine_tasks().is_some_and(|n| n >= 1));
    }

    #[test]
    fn a_run_under_its_bound_is_left_alone() {
        let me = std::process::id() as i32;
        assert!(!Watch::new(u32::MAX, me, 0).over(me));
    }
}
