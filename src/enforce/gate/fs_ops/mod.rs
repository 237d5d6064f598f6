//! The file operations of the spell API in the confined backend, each
//! checked and then performed through handles opened beneath the granted
//! root. (With the sandbox off, [`super::ambient`] serves them.)

use super::confined::{Confined, Located};
use super::repository::GitName;
use super::{Denial, DenialReason, FsOp, GateError, Protection, WriteMode};
use crate::enforce::beneath::{BeneathError, Follow, Handle, OFlag, HANDLE};
use crate::policy::Access;
use std::borrow::Cow;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as at;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as at;
#[cfg(windows)]
pub(super) use windows::final_path;

impl Confined {
    /// The whole content of a file, lent to `with`.
    pub(super) fn read_with<T>(
        &self,
        spelled: &str,
        with: impl FnOnce(&[u8]) -> T,
    ) -> Result<T, GateError> {
        let op = FsOp::Read;
        let fd = self.open(spelled, Access::Read, op, OFlag::O_RDONLY)?;
        read_all_with(&File::from(fd), with).map_err(|e| GateError::io(op, spelled, e))
    }

    /// An open file to read from, for a caller that bounds what it reads.
    pub(super) fn open_file(&self, spelled: &str) -> Result<File, GateError> {
        let fd = self.open(spelled, Access::Read, FsOp::Read, OFlag::O_RDONLY)?;
        Ok(File::from(fd))
    }

    /// Creates or truncates (or appends to) a file and writes `data`.
    pub(super) fn write(
        &self,
        spelled: &str,
        data: &[u8],
        mode: WriteMode,
    ) -> Result<(), GateError> {
        let op = FsOp::of_write(mode);
        let mut file = self.open_for_write(spelled, op, mode)?;
        file.write_all(data)
            .map_err(|e| GateError::io(op, spelled, e))
    }

    fn open_for_write(&self, spelled: &str, op: FsOp, mode: WriteMode) -> Result<File, GateError> {
        let flags = OFlag::O_WRONLY | OFlag::O_CREAT;
        let flags = match mode {
            WriteMode::Truncate => flags,
            WriteMode::Append => flags | OFlag::O_APPEND,
        };
        let file = File::from(self.open(spelled, Access::Write, op, flags)?);
        if mode == WriteMode::Truncate {
            truncate(&file).map_err(|e| GateError::io(op, spelled, e))?;
        }
        Ok(file)
    }

    /// Whether the path exists. Asking is a read: an ungranted path is
    /// denied rather than reported missing, so a spell cannot probe for
    /// secrets.
    pub(super) fn exists(&self, spelled: &str) -> Result<bool, GateError> {
        let op = FsOp::Exists;
        // The common answer, "missing" included, without making an error.
        match self.open_plain(spelled, Access::Read, HANDLE) {
            Some(Ok(_)) => return Ok(true),
            Some(Err(e)) if at::is_missing(&e) => return Ok(false),
            Some(Err(e)) => return Err(GateError::io(op, spelled, e)),
            None => {}
        }
        match self.open_general(spelled, Access::Read, op, HANDLE) {
            Ok(_) => Ok(true),
            Err(GateError::Io { source, .. }) if at::is_missing(&source) => Ok(false),
            Err(other) => Err(other),
        }
    }

    /// The names in a directory, unsorted.
    pub(super) fn list(&self, spelled: &str) -> Result<Vec<String>, GateError> {
        let op = FsOp::List;
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY;
        let fd = self.open(spelled, Access::Read, op, flags)?;
        at::read_names(fd).map_err(|e| GateError::io(op, spelled, e))
    }

    /// Creates a directory and its missing parents, like `mkdir -p`.
    pub(super) fn make_directory(&self, spelled: &str) -> Result<(), GateError> {
        let op = FsOp::MakeDirectory;
        let located = self.locate(spelled, Access::Write, op)?;
        let located = match self.make_beneath(&located, spelled, op) {
            Err(Made::Beneath(BeneathError::Escapes)) => {
                self.relocate(spelled, &located.abs, Access::Write, op)?
            }
            Err(Made::Beneath(BeneathError::Os(e))) => return Err(GateError::io(op, spelled, e)),
            Err(Made::Refused(e)) => return Err(e),
            Ok(()) => return Ok(()),
        };
        match self.make_beneath(&located, spelled, op) {
            Err(Made::Beneath(BeneathError::Escapes)) => Err(GateError::Raced {
                op,
                spelled: spelled.to_string(),
            }),
            Err(Made::Beneath(BeneathError::Os(e))) => Err(GateError::io(op, spelled, e)),
            Err(Made::Refused(e)) => Err(e),
            Ok(()) => Ok(()),
        }
    }

    /// Creates each missing component in turn, each parent opened beneath
    /// the root without following symlinks, and none in a protected or
    /// hidden directory, nor one that would complete a repository.
    fn make_beneath(&self, located: &Located, spelled: &str, op: FsOp) -> Result<(), Made> {
        let mut parent = std::path::PathBuf::new();
        for component in located.rel().components() {
            let flags = HANDLE | OFlag::O_DIRECTORY;
            let dir = located.root.open_beneath(&parent, flags, Follow::Never)?;
            let name = component.as_os_str();
            if !at::holds(&dir, name) {
                let dir_path = located.root.path().join(&parent);
                self.refuse_in_noted(&dir, spelled, &located.abs, op)?;
                self.refuse_git_name(&dir, &dir_path, name, spelled, &located.abs, op)?;
            }
            at::make_directory(&dir, name)?;
            parent.push(component);
        }
        Ok(())
    }

    /// Refuses an entry made or changed in `dir` when `dir` is, by
    /// identity, a protected directory (`.git`, its `hooks`) or a hidden
    /// store: a spelling the name check did not equate reached it.
    fn refuse_in_noted(
        &self,
        dir: &Handle,
        spelled: &str,
        abs: &Path,
        op: FsOp,
    ) -> Result<(), GateError> {
        let Some(entry) = self.noted().find(dir) else {
            return Ok(());
        };
        let leads_to = Some(entry.path.clone());
        let reason = entry.kind.reason();
        Err(Denial::new(op, Access::Write, spelled, abs, leads_to, reason).into())
    }

    /// Refuses writing the final name of `located` when git would then
    /// take its directory for a repository (`repository`).
    pub(super) fn refuse_repository(
        &self,
        located: &Located,
        spelled: &str,
        op: FsOp,
    ) -> Result<(), GateError> {
        let rel = located.rel();
        let Some(name) = rel.file_name() else {
            return Ok(());
        };
        if GitName::of(name.as_encoded_bytes()).is_none() {
            return Ok(());
        }
        let parent = rel.parent().unwrap_or(Path::new(""));
        let flags = HANDLE | OFlag::O_DIRECTORY;
        // A directory that cannot be opened here cannot be written in
        // either: the open that follows says why (or relocates, and the
        // real directory is checked then).
        let Ok(dir) = located.root.open_beneath(parent, flags, Follow::Never) else {
            return Ok(());
        };
        let dir_path = located.root.path().join(parent);
        self.refuse_git_name(&dir, &dir_path, name, spelled, &located.abs, op)
    }

    /// Refuses writing `name` in the directory `dir` (at `dir_path`) when
    /// it is one of git's names and what `dir` holds would make it a
    /// repository with it.
    fn refuse_git_name(
        &self,
        dir: &Handle,
        dir_path: &Path,
        name: &OsStr,
        spelled: &str,
        abs: &Path,
        op: FsOp,
    ) -> Result<(), GateError> {
        let Some(git) = GitName::of(name.as_encoded_bytes()) else {
            return Ok(());
        };
        let Some(held) = git.completes(|n| at::holds(dir, OsStr::new(n.spelled()))) else {
            return Ok(());
        };
        let protection = Protection::Repository {
            dir: dir_path.to_path_buf(),
            holds: held.iter().map(|n| n.spelled()).collect(),
        };
        let denial = Denial::new(
            op,
            Access::Write,
            spelled,
            abs,
            None,
            DenialReason::Protected,
        );
        Err(denial.protected_by(protection).into())
    }

    /// Removes a file, a symlink or an empty directory.
    pub(super) fn delete(&self, spelled: &str) -> Result<(), GateError> {
        let op = FsOp::Delete;
        let (parent, name) = self.open_parent(spelled, op)?;
        at::remove(&parent, &name).map_err(|e| GateError::io(op, spelled, e))
    }

    /// The directory holding `spelled` (opened beneath its root for a
    /// write) and the final name.
    fn open_parent(
        &self,
        spelled: &str,
        op: FsOp,
    ) -> Result<(Handle, std::ffi::OsString), GateError> {
        let abs = self.absolute(spelled, Access::Write, op)?;
        let (Some(parent), Some(name)) = (abs.parent(), abs.file_name()) else {
            let e = io::Error::new(
                io::ErrorKind::InvalidInput,
                "the root directory has no parent",
            );
            return Err(GateError::io(op, spelled, e));
        };
        // The parent must be writable, and so must the entry itself (a
        // protected name inside a writable directory stays protected).
        self.locate_abs(spelled, Cow::Borrowed(&abs), Access::Write, op)?;
        let flags = HANDLE | OFlag::O_DIRECTORY;
        let fd = self.open_abs(spelled, Cow::Owned(parent), Access::Write, op, flags)?;
        // Renaming or removing the entry acts on what the handle really is,
        // which a symlinked parent may have moved: check that name too.
        let real_parent = at::path_of(&fd).map_err(|e| GateError::io(op, spelled, e))?;
        self.refuse_protected_entry(spelled, &abs, &real_parent.join(name), op)?;
        // And by identity: the directory, and the entry itself.
        self.refuse_in_noted(&fd, spelled, &abs, op)?;
        if let Some(entry) = self.noted().find_at(&fd, name) {
            let (leads_to, reason) = (Some(entry.path.clone()), entry.kind.reason());
            return Err(Denial::new(op, Access::Write, spelled, &abs, leads_to, reason).into());
        }
        Ok((fd, name.to_os_string()))
    }

    /// Renames `from` to `to`. Both ends are checked before anything
    /// happens, so a denied move leaves the source as it was. Across
    /// filesystems a file is copied, then the source removed.
    pub(super) fn rename(&self, from: &str, to: &str) -> Result<(), GateError> {
        let op = FsOp::Move;
        let (from_dir, from_name) = self.open_parent(from, op)?;
        let (to_dir, to_name) = self.open_parent(to, op)?;
        if GitName::of(to_name.as_encoded_bytes()).is_some() {
            let to_abs = self.absolute(to, Access::Write, op)?;
            let to_parent = at::path_of(&to_dir).map_err(|e| GateError::io(op, to, e))?;
            self.refuse_git_name(&to_dir, &to_parent, &to_name, to, &to_abs, op)?;
        }
        match at::rename(&from_dir, &from_name, &to_dir, &to_name) {
            Ok(()) => Ok(()),
            Err(e) if at::crosses_devices(&e) => {
                self.copy(from, to)?;
                self.delete(from)
            }
            Err(e) => Err(GateError::io(op, from, e)),
        }
    }

    /// Copies the content of file `from` to `to` (created or truncated).
    pub(super) fn copy(&self, from: &str, to: &str) -> Result<(), GateError> {
        let op = FsOp::Copy;
        let source = self.open(from, Access::Read, op, OFlag::O_RDONLY)?;
        let target = self.open_for_write(to, op, WriteMode::Truncate)?;
        io::copy(&mut File::from(source), &mut &target)
            .map(|_| ())
            .map_err(|e| GateError::io(op, to, e))
    }
}

/// Why [`Confined::make_beneath`] stopped.
enum Made {
    /// The open or the `mkdir` failed (or left the root).
    Beneath(BeneathError),
    /// The gate refused a directory it would have made.
    Refused(GateError),
}

impl From<BeneathError> for Made {
    fn from(e: BeneathError) -> Made {
        Made::Beneath(e)
    }
}

impl From<GateError> for Made {
    fn from(e: GateError) -> Made {
        Made::Refused(e)
    }
}

/// Empties a file opened for writing: the write opens without `O_TRUNC`,
/// so nothing is lost before the handle is known to be no protected file
/// by another name (`Confined::noted_entry`).
fn truncate(file: &File) -> io::Result<()> {
    file.set_len(0)
}

/// Reads a whole file and lends it to `with`. Most files a spell reads are
/// small: those take one read into a buffer of [`FIRST_READ`] bytes kept
/// for the thread and one that sees the end, with no `statx` for a size
/// hint and no allocation of the gate's own (`with` builds whatever it
/// keeps straight from the buffer). A file that fills the buffer is sized
/// then, so a large one is still read into one exact allocation.
fn read_all_with<T>(file: &File, with: impl FnOnce(&[u8]) -> T) -> io::Result<T> {
    FIRST.with(|cell| match cell.try_borrow_mut() {
        Ok(mut first) => read_into(file, &mut first, with),
        // `with` itself reads (a nested call): it gets a buffer of its own.
        Err(_) => read_into(file, &mut Vec::with_capacity(FIRST_READ), with),
    })
}

/// [`read_all_with`] with `first` as the first read's buffer.
fn read_into<T>(
    mut file: &File,
    first: &mut Vec<u8>,
    with: impl FnOnce(&[u8]) -> T,
) -> io::Result<T> {
    first.clear();
    file.take(FIRST_READ as u64).read_to_end(first)?;
    if first.len() < FIRST_READ {
        return Ok(with(first));
    }
    let size = file.metadata().map_or(0, |m| m.len());
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(size.max(FIRST_READ))
        .map_err(io::Error::other)?;
    bytes.extend_from_slice(first);
    file.read_to_end(&mut bytes)?;
    Ok(with(&bytes))
}

/// [`read_all_with`], owned.
#[cfg(test)]
fn read_all(file: &File) -> io::Result<Vec<u8>> {
    read_all_with(file, <[u8]>::to_vec)
}

/// The size of the first read of [`read_all_with`].
const FIRST_READ: usize = 8 * 1024;

thread_local! {
    /// [`read_all_with`]'s first read lands here: a buffer reused per
    /// thread, so a small read allocates nothing.
    static FIRST: std::cell::RefCell<Vec<u8>> =
        std::cell::RefCell::new(Vec::with_capacity(FIRST_READ));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Around the first read's size and well past it, every byte comes
    /// back in order.
    #[test]
    fn read_all_returns_every_byte_at_every_size() {
        let dir = tempfile::tempdir().expect("a scratch directory");
        for len in [
            0,
            1,
            1024,
            FIRST_READ - 1,
            FIRST_READ,
            FIRST_READ + 1,
            300_001,
        ] {
            let content: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let path = dir.path().join(format!("f{len}"));
            std::fs::write(&path, &content).expect("written");
            let file = File::open(&path).expect("opened");
            assert_eq!(read_all(&file).expect("read"), content, "{len} bytes");
        }
    }

    /// A read made while another lends its buffer (the caller's closure
    /// reads again) gets a buffer of its own: both see their own bytes.
    #[test]
    fn a_read_inside_a_read_gets_its_own_buffer() {
        let dir = tempfile::tempdir().expect("a scratch directory");
        let (outer, inner) = (dir.path().join("outer"), dir.path().join("inner"));
        std::fs::write(&outer, b"outer bytes").expect("written");
        std::fs::write(&inner, b"inner").expect("written");
        let outer_file = File::open(&outer).expect("opened");
        let both = read_all_with(&outer_file, |seen| {
            let inner_file = File::open(&inner).expect("opened");
            (seen.to_vec(), read_all(&inner_file).expect("inner read"))
        })
        .expect("outer read");
        assert_eq!(both, (b"outer bytes".to_vec(), b"inner".to_vec()));
    }
}
