//! Facts about the calling process that the kernel layer must check before
//! it acts: chiefly that no other thread exists yet, since Landlock and
//! seccomp restrict only the calling thread, and `unshare(CLONE_NEWNS)`
//! refuses a process whose threads share its filesystem state.

use std::fs;

/// The number of threads of the calling process, from `/proc/self/status`
/// (`None` when it cannot be read).
pub fn thread_count() -> Option<usize> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
}

/// Whether the caller is (as far as can be told) the only thread.
pub fn is_single_threaded() -> bool {
    thread_count().is_none_or(|n| n <= 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_at_least_this_thread() {
        assert!(thread_count().is_some_and(|n| n >= 1));
    }
}
