//! Facts about the calling process that the kernel layer must check before
//! it acts: chiefly that no other thread exists yet, since Landlock and
//! seccomp restrict only the calling thread, and `unshare(CLONE_NEWNS)`
//! refuses a process whose threads share its filesystem state. Also the
//! descriptors magus inherited, which must not reach a child.

use nix::fcntl::{fcntl, FcntlArg, FdFlag};
use std::fs;
use std::io::{self, Read};
use std::os::fd::BorrowedFd;

/// The number of threads of the calling process, from `/proc/self/status`
/// (`None` when it cannot be read).
pub(crate) fn thread_count() -> Option<usize> {
    // One read of a page: `read_to_string` starts at 32 bytes and doubles,
    // eight reads of a file the kernel formats ~1.5 KiB of.
    let mut status = Vec::with_capacity(4096);
    fs::File::open("/proc/self/status")
        .and_then(|mut file| file.read_to_end(&mut status))
        .ok()?;
    std::str::from_utf8(&status)
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
}

/// Whether the caller is (as far as can be told) the only thread.
pub(crate) fn is_single_threaded() -> bool {
    thread_count().is_none_or(|n| n <= 1)
}

/// Marks every descriptor above stderr close-on-exec.
///
/// A parent may start magus holding a descriptor open on a secret
/// (`3< ~/.ssh/id_rsa`, or one it simply forgot to mark): Landlock checks
/// opens, not reads of what is already open, so a child that inherited it
/// could read it. magus keeps its own copies (its gate never reads by
/// descriptor number); only stdin, stdout and stderr reach a child.
pub(crate) fn close_inherited_on_exec() -> io::Result<()> {
    // SAFETY: close_range only changes descriptor flags; no memory is involved.
    let done = unsafe { libc::close_range(3, libc::c_uint::MAX, libc::CLOSE_RANGE_CLOEXEC as i32) };
    if done == 0 {
        return Ok(());
    }
    let error = io::Error::last_os_error();
    match error.raw_os_error() {
        // Before Linux 5.11 (no CLOSE_RANGE_CLOEXEC), or 5.9 (no call).
        Some(libc::EINVAL) | Some(libc::ENOSYS) => mark_each_on_exec(),
        _ => Err(error),
    }
}

/// The fallback: every descriptor listed in `/proc/self/fd`, one by one.
fn mark_each_on_exec() -> io::Result<()> {
    // The listing's own descriptor shows up too; it is close-on-exec already.
    for entry in fs::read_dir("/proc/self/fd")? {
        let name = entry?.file_name();
        let Some(fd) = name.to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        if fd <= 2 {
            continue;
        }
        // SAFETY: `fd` is open for the duration of this call (listed just now
        // and nothing else in this single-threaded startup closes it).
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        let flags = fcntl(fd, FcntlArg::F_GETFD).map_err(io::Error::from)?;
        let flags = FdFlag::from_bits_truncate(flags) | FdFlag::FD_CLOEXEC;
        fcntl(fd, FcntlArg::F_SETFD(flags)).map_err(io::Error::from)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_at_least_this_thread() {
        assert!(thread_count().is_some_and(|n| n >= 1));
    }

    fn is_close_on_exec(fd: &std::os::fd::OwnedFd) -> bool {
        let flags = fcntl(fd, FcntlArg::F_GETFD).expect("F_GETFD");
        FdFlag::from_bits_truncate(flags).contains(FdFlag::FD_CLOEXEC)
    }

    /// Both ways of marking, each in a fresh copy of this test binary (they
    /// change every descriptor of the process, which the runner owns).
    #[test]
    fn inherited_descriptors_are_marked_close_on_exec() {
        match crate::alone::passed().as_deref() {
            Some(way) => {
                let (read, write) = nix::unistd::pipe().expect("a pipe");
                assert!(!is_close_on_exec(&read) && !is_close_on_exec(&write));
                match way {
                    "fallback" => mark_each_on_exec().expect("marked one by one"),
                    _ => close_inherited_on_exec().expect("marked"),
                }
                assert!(is_close_on_exec(&read) && is_close_on_exec(&write));
            }
            None => {
                // The copy is checked to run the test: before, it was given
                // a name from before this module moved under `linux`, which
                // matched no test, and passed.
                let name =
                    "enforce::linux::process::tests::inherited_descriptors_are_marked_close_on_exec";
                for way in ["close_range", "fallback"] {
                    crate::alone::run(name, way);
                }
            }
        }
    }
}
