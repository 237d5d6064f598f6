//! The sweep's directories, opened by a path that follows no link.
//!
//! The sweep runs outside every sandbox (as root where magus is), by the
//! paths it walks. No process of *its* run is left, but another run of
//! the same workspace may still be going, and its children write there:
//! one swapped `b/.vscode` between a directory and a link to `~/.ssh`,
//! the walk went through the link, and the sweep moved `~/.ssh/id_rsa`
//! into the workspace's quarantine, where that child read it. So every
//! directory the sweep reads or changes is opened here with
//! `RESOLVE_NO_SYMLINKS` (no link anywhere on the way, the paths being
//! real), and what it does there goes through the descriptor (`*at`
//! calls), which a later swap of a name cannot redirect. The same holds
//! for the files it notes at the start and writes back after the run: a
//! child of another run swapped a directory of `spells/` for a link to
//! `~/.ssh` between the listing and the read, and the sweep noted the key,
//! then "put it back" into the workspace; another swapped the directory a
//! put-back file was written to for a link to `~`, and the sweep wrote
//! `~/.bashrc`.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use crate::enforce::linux::openat2_beneath::open_no_symlinks;
use nix::errno::Errno;
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::{mkdirat, Mode};
use nix::unistd::{unlinkat, UnlinkatFlags};

/// The directory at `path` (absolute and real), as an `O_PATH` handle:
/// refused (`ELOOP`, `ENOTDIR`) where a link lies anywhere on the way.
/// Also the jail's sweep's (`jail::sweep`), for the directories it
/// notes by identity and changes after the run.
/// On a kernel without `openat2` (before 5.6), the path is checked to be
/// its own real path and its last part opened with `O_NOFOLLOW`: a race
/// stays possible there.
pub(crate) fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    open(path, OFlag::O_PATH | OFlag::O_DIRECTORY)
}

/// The regular file (or whatever stands) at `path`, opened with `flags`
/// as [`open_dir`] opens a directory: never through a link, the last
/// name included.
pub(super) fn open_file(path: &Path, flags: OFlag) -> io::Result<OwnedFd> {
    open(path, flags)
}

fn open(path: &Path, flags: OFlag) -> io::Result<OwnedFd> {
    let flags = flags | OFlag::O_NOFOLLOW;
    match open_no_symlinks(path, flags) {
        Some(opened) => opened.map_err(io::Error::from),
        None => open_checked(path, flags | OFlag::O_CLOEXEC),
    }
}

fn open_checked(path: &Path, flags: OFlag) -> io::Result<OwnedFd> {
    let parent = path.parent().unwrap_or(path);
    if parent.canonicalize()? != parent {
        return Err(Errno::ELOOP.into());
    }
    nix::fcntl::open(path, flags, Mode::empty()).map_err(io::Error::from)
}

/// The directory `rel` below the directory at `base` (opened by
/// [`open_dir`]), each name on the way made where it is missing and
/// opened through the one above it, never through a link: what a child
/// swaps in on the way makes this fail, never lead elsewhere.
pub(super) fn make_dirs(base: &Path, rel: &Path) -> io::Result<OwnedFd> {
    let mut dir = open_dir(base)?;
    for name in rel.components().map(|c| c.as_os_str()) {
        match mkdirat(&dir, name, Mode::from_bits_truncate(0o755)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(e.into()),
        }
        let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        dir = openat(&dir, name, flags, Mode::empty())?;
    }
    Ok(dir)
}

/// Makes the directory `name` in `dir`, with `mode`.
pub(super) fn make_dir_at(dir: &OwnedFd, name: &OsStr, mode: u32) -> io::Result<()> {
    mkdirat(dir, name, Mode::from_bits_truncate(mode & 0o777)).map_err(io::Error::from)
}

/// Writes `content` as a new file `name` in `dir`, after removing what
/// stands there (a file or a link, never what a link names), with `mode`
/// less any set-id bit: magus may be root here.
pub(super) fn write_new_at(
    dir: &OwnedFd,
    name: &OsStr,
    content: &[u8],
    mode: u32,
) -> io::Result<()> {
    match unlinkat(dir, name, UnlinkatFlags::NoRemoveDir) {
        Ok(()) | Err(Errno::ENOENT) => {}
        Err(e) => return Err(e.into()),
    }
    let flags =
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let fd = openat(dir, name, flags, Mode::from_bits_truncate(mode & 0o777))?;
    io::Write::write_all(&mut std::fs::File::from(fd), content)
}

/// The directory holding `path`, opened by [`open_dir`], and `path`'s
/// last name.
pub(super) fn parent_of(path: &Path) -> io::Result<(OwnedFd, &OsStr)> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "no parent"));
    };
    Ok((open_dir(parent)?, name))
}

/// The path that reaches exactly what `fd` holds, whatever happens to
/// the names on the way to it since (`/proc/self/fd/N`).
pub(super) fn by_descriptor(fd: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// The entries of the directory at `path`, read through a descriptor
/// [`open_dir`] opened (each entry's `metadata` too).
pub(super) fn read_dir(path: &Path) -> io::Result<std::fs::ReadDir> {
    let fd = open_dir(path)?;
    std::fs::read_dir(by_descriptor(&fd))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A link anywhere on the way is refused, not followed; a real path
    /// opens, and its entries are the directory's.
    #[test]
    fn a_link_on_the_way_is_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("real/sub")).unwrap();
        std::fs::write(root.join("real/sub/secret"), "x").unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
        assert!(open_dir(&root.join("real/sub")).is_ok());
        for linked in ["link", "link/sub"] {
            assert!(open_dir(&root.join(linked)).is_err(), "{linked}");
            assert!(read_dir(&root.join(linked)).is_err(), "{linked}");
        }
        assert!(parent_of(&root.join("link/sub/secret")).is_err());
        let names: Vec<_> = read_dir(&root.join("real/sub"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["secret"]);
    }
}
