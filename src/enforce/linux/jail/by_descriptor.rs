//! Bind mounts made through descriptors, not path strings.
//!
//! The plan's paths are real paths, free of symbolic links when the plan
//! was made; PID 1 applies it a moment later, and some of those paths lie
//! in directories children write (the workspace). A child of another run
//! of the same workspace, running meanwhile, swapped a directory for a
//! relative link (`x -> ../../..`) after the plan: `mount` followed it at
//! both ends, the source climbing to the host's root and the target to the
//! view's, so "bind `ws/x/tmp`" became "bind the host's `/tmp` over the
//! view's" (its sockets, other terminals under `/dev/pts`, the host's
//! `/proc`). So each end is opened with `openat2(RESOLVE_NO_SYMLINKS)`:
//! a link anywhere on the way fails the step (`ELOOP`, the run does not
//! start) instead of being followed. The source's tree is cloned
//! (`open_tree`), made read-only while still detached where the step asks
//! (so no later lookup can aim that at another mount), and moved onto the
//! opened target (`move_mount`). Kernels without these calls (before 5.6)
//! answer `ENOSYS`, and the caller binds by path as before.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{openat2, OFlag, OpenHow, ResolveFlag, AT_FDCWD};

/// `OPEN_TREE_CLONE` of `<linux/mount.h>` (libc does not define it).
const OPEN_TREE_CLONE: libc::c_uint = 1;
/// `MOVE_MOUNT_F_EMPTY_PATH` and `MOVE_MOUNT_T_EMPTY_PATH`.
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x04;
const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;

/// Binds `source` (recursively) at `target`, read-only when `read_only`
/// (with every submount of the tree). `ENOSYS` when the
/// kernel lacks `openat2`, `open_tree` or `move_mount`. The view's steps
/// open the source first (`apply::bind`, which reads its kind from the
/// descriptor), then [`bind_from`]; the tests take both in one.
#[cfg(test)]
fn bind(source: &Path, target: &Path, read_only: bool) -> Result<(), Errno> {
    let from = open_without_links(source)?;
    bind_from(from.as_fd(), target, read_only)
}

/// [`bind`] of a source already opened with [`open_without_links`].
pub(super) fn bind_from(from: BorrowedFd<'_>, target: &Path, read_only: bool) -> Result<(), Errno> {
    let to = open_without_links(target)?;
    let tree = clone_tree(from)?;
    if read_only {
        // The whole tree: a host submount under a read-only grant stays
        // read-only (one bound by a grant of its own is mounted over it).
        let flags = libc::AT_EMPTY_PATH as u32 | libc::AT_RECURSIVE as u32;
        super::apply::set_read_only_at(tree.as_fd(), c"", flags)?;
    }
    move_onto(tree.as_fd(), to.as_fd())
}

/// `path` as an `O_PATH` descriptor, refusing a symbolic link in any of
/// its components. `openat2` asks to retry when a rename raced it;
/// `ENOSYS` before Linux 5.6.
pub(super) fn open_without_links(path: &Path) -> Result<OwnedFd, Errno> {
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS);
    loop {
        match openat2(AT_FDCWD, path, how) {
            Err(Errno::EAGAIN) => continue,
            other => return other,
        }
    }
}

/// A detached copy of the mount tree at `from` (`open_tree`).
fn clone_tree(from: BorrowedFd<'_>) -> Result<OwnedFd, Errno> {
    let flags = OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | libc::AT_RECURSIVE as u32;
    let flags = flags | libc::AT_EMPTY_PATH as u32;
    // SAFETY: the path is an empty NUL-terminated string and `from` a live
    // descriptor; on success the kernel returns a new descriptor we own.
    let fd = unsafe { libc::syscall(libc::SYS_open_tree, from.as_raw_fd(), c"".as_ptr(), flags) };
    let fd = Errno::result(fd)?;
    let fd = i32::try_from(fd).map_err(|_| Errno::EBADF)?;
    // SAFETY: `fd` was just returned by the kernel and is owned by no one.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Attaches the detached tree `tree` on top of what `onto` names.
fn move_onto(tree: BorrowedFd<'_>, onto: BorrowedFd<'_>) -> Result<(), Errno> {
    let flags = MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH;
    // SAFETY: both paths are empty NUL-terminated strings, both
    // descriptors live; the kernel reads them only.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            c"".as_ptr(),
            onto.as_raw_fd(),
            c"".as_ptr(),
            flags,
        )
    };
    Errno::result(rc).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sched::{unshare, CloneFlags};
    use nix::sys::wait::{waitpid, WaitStatus};
    use nix::unistd::{fork, ForkResult};

    /// What the child found, as its exit code.
    const AS_EXPECTED: i32 = 0;
    const NO_NAMESPACE: i32 = 77;

    /// In a child with user and mount namespaces of its own (mounts are
    /// per thread's namespace and the runner's must stay as they are): a
    /// link on the way fails the bind (`ELOOP`), where a bind by path
    /// follows it (the control); the same bind without the link mounts.
    #[test]
    fn a_link_on_the_way_fails_the_bind_where_a_bind_by_path_follows_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("real")).unwrap();
        std::fs::write(root.join("real/file"), "through the link").unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::os::unix::fs::symlink("real", root.join("x")).unwrap();
        // SAFETY: the child makes system calls, reads files and `_exit`s.
        match unsafe { fork() }.expect("fork") {
            ForkResult::Child => {
                let code = in_child(&root);
                // SAFETY: _exit is always safe.
                unsafe { libc::_exit(code) }
            }
            ForkResult::Parent { child } => match waitpid(child, None).expect("wait") {
                WaitStatus::Exited(_, NO_NAMESPACE) => {
                    eprintln!("skipped: no user namespace for the test");
                }
                status => assert_eq!(status, WaitStatus::Exited(child, AS_EXPECTED)),
            },
        }
    }

    fn in_child(root: &Path) -> i32 {
        if unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS).is_err() {
            return NO_NAMESPACE;
        }
        let none: Option<&str> = None;
        let private = nix::mount::MsFlags::MS_REC | nix::mount::MsFlags::MS_PRIVATE;
        if nix::mount::mount(none, "/", none, private, none).is_err() {
            return 1;
        }
        let (linked, real, target) = (root.join("x"), root.join("real"), root.join("target"));
        if bind(&linked, &target, true) != Err(Errno::ELOOP) {
            return 2;
        }
        let seen = || std::fs::read_to_string(target.join("file")).ok();
        if seen().is_some() {
            return 3;
        }
        // The control: by path, the link is followed.
        if super::super::apply::bind_by_path(&linked, &target, false).is_err() {
            return 4;
        }
        if seen().as_deref() != Some("through the link") {
            return 5;
        }
        if nix::mount::umount2(&target, nix::mount::MntFlags::MNT_DETACH).is_err() {
            return 6;
        }
        // Without the link, the descriptors' bind mounts, read-only.
        if bind(&real, &target, true).is_err() || seen().as_deref() != Some("through the link") {
            return 7;
        }
        match std::fs::write(target.join("file"), "x") {
            Err(e) if e.raw_os_error() == Some(libc::EROFS) => AS_EXPECTED,
            _ => 8,
        }
    }
}
