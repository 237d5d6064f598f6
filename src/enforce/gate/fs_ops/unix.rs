//! The `*at` calls the confined `fs.*` makes on Unix, each acting on a
//! name inside a directory handle opened beneath a granted root.

use crate::enforce::beneath::{BeneathError, Handle};
use nix::dir::Dir;
use nix::fcntl::AtFlags;
use nix::sys::stat::{fstatat, mkdirat, Mode, SFlag};
use nix::unistd::{unlinkat, UnlinkatFlags};
use std::ffi::OsStr;
use std::io;
use std::os::fd::AsFd;

/// Creates directory `name` in `dir`; one that exists already is fine.
pub(super) fn make_directory(dir: &Handle, name: &OsStr) -> Result<(), BeneathError> {
    match mkdirat(dir.as_fd(), name, Mode::from_bits_truncate(0o777)) {
        Ok(()) | Err(nix::errno::Errno::EEXIST) => Ok(()),
        Err(e) => Err(BeneathError::Os(e.into())),
    }
}

/// Whether `dir` holds an entry `name` (a link counts, whatever it leads
/// to). On a case-insensitive disk any spelling of it does.
pub(super) fn holds(dir: &Handle, name: &OsStr) -> bool {
    fstatat(dir.as_fd(), name, AtFlags::AT_SYMLINK_NOFOLLOW).is_ok()
}

/// Removes the file, symlink or empty directory `name` in `parent`.
pub(super) fn remove(parent: &Handle, name: &OsStr) -> io::Result<()> {
    let is_dir = fstatat(parent.as_fd(), name, AtFlags::AT_SYMLINK_NOFOLLOW)
        .map(|st| SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFDIR)?;
    let flag = if is_dir {
        UnlinkatFlags::RemoveDir
    } else {
        UnlinkatFlags::NoRemoveDir
    };
    Ok(unlinkat(parent.as_fd(), name, flag)?)
}

/// Renames `from_name` in `from_dir` to `to_name` in `to_dir`.
pub(super) fn rename(
    from_dir: &Handle,
    from_name: &OsStr,
    to_dir: &Handle,
    to_name: &OsStr,
) -> io::Result<()> {
    Ok(nix::fcntl::renameat(
        from_dir.as_fd(),
        from_name,
        to_dir.as_fd(),
        to_name,
    )?)
}

/// The rename failed because the ends are on different filesystems.
pub(super) fn crosses_devices(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EXDEV)
}

/// The path a directory handle refers to now, as the kernel knows it.
#[cfg(not(target_vendor = "apple"))]
pub(super) fn path_of(fd: &Handle) -> io::Result<std::path::PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// The path a directory handle refers to now (`F_GETPATH`: macOS has no
/// `/proc`).
#[cfg(target_vendor = "apple")]
pub(super) fn path_of(fd: &Handle) -> io::Result<std::path::PathBuf> {
    let mut path = std::path::PathBuf::new();
    nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETPATH(&mut path))?;
    Ok(path)
}

/// The names in the directory `fd`, without `.` and `..`.
pub(super) fn read_names(fd: Handle) -> io::Result<Vec<String>> {
    let mut dir = Dir::from_fd(fd)?;
    let mut names = Vec::new();
    for entry in dir.iter() {
        let name = entry?.file_name().to_bytes().to_vec();
        if name != b"." && name != b".." {
            names.push(String::from_utf8_lossy(&name).into_owned());
        }
    }
    Ok(names)
}

/// The path, or a directory on it, does not exist.
pub(super) fn is_missing(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR))
}
