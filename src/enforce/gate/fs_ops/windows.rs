//! What the Unix `*at` calls do, on Windows: each acts on a name inside a
//! directory handle opened beneath a granted root, through cap-std, whose
//! lookup of a single name cannot leave that directory.

use crate::enforce::beneath::{BeneathError, Handle};
use crate::policy::{native, NormalPath};
use cap_std::fs::Dir;
use std::ffi::OsStr;
use std::io;

/// The directory `handle` as cap-std's `Dir`; the handle is duplicated,
/// so the caller's stays open.
fn dir(handle: &Handle) -> io::Result<Dir> {
    Ok(Dir::from_std_file(std::fs::File::from(handle.try_clone()?)))
}

/// Creates directory `name` in `parent`; one that exists already is fine.
pub(super) fn make_directory(parent: &Handle, name: &OsStr) -> Result<(), BeneathError> {
    match dir(parent)?.create_dir(name) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(BeneathError::Os(e)),
        _ => Ok(()),
    }
}

/// Whether `parent` holds an entry `name` (a link counts, whatever it
/// leads to); NTFS matches any case of it.
pub(super) fn holds(parent: &Handle, name: &OsStr) -> bool {
    dir(parent).and_then(|d| d.symlink_metadata(name)).is_ok()
}

/// Removes the file, symlink or empty directory `name` in `parent`.
pub(super) fn remove(parent: &Handle, name: &OsStr) -> io::Result<()> {
    let parent = dir(parent)?;
    match parent.symlink_metadata(name)?.is_dir() {
        true => parent.remove_dir(name),
        false => parent.remove_file(name),
    }
}

/// Renames `from_name` in `from_dir` to `to_name` in `to_dir`.
pub(super) fn rename(
    from_dir: &Handle,
    from_name: &OsStr,
    to_dir: &Handle,
    to_name: &OsStr,
) -> io::Result<()> {
    dir(from_dir)?.rename(from_name, &dir(to_dir)?, to_name)
}

/// The rename failed because the ends are on different volumes.
pub(super) fn crosses_devices(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::CrossesDevices
}

/// The policy path (the key, see `policy::winpath`) of what a handle
/// refers to now, as Windows knows it (`GetFinalPathNameByHandleW`, which
/// gives long names, the volume's case, and no junction or link).
pub(in crate::enforce::gate) fn final_path(handle: &Handle) -> io::Result<NormalPath> {
    let path = winx::file::get_file_path(&std::fs::File::from(handle.try_clone()?))?;
    native::from_os(&path).map_err(io::Error::other)
}

/// [`final_path`], as the Unix `path_of` gives it.
pub(super) fn path_of(handle: &Handle) -> io::Result<std::path::PathBuf> {
    final_path(handle).map(NormalPath::into_path_buf)
}

/// The names in the directory `handle`, without `.` and `..`.
pub(super) fn read_names(handle: Handle) -> io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in Dir::from_std_file(std::fs::File::from(handle)).entries()? {
        let name = entry?.file_name();
        if name != "." && name != ".." {
            names.push(name.to_string_lossy().into_owned());
        }
    }
    Ok(names)
}

/// The path, or a directory on it, does not exist.
pub(super) fn is_missing(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}
