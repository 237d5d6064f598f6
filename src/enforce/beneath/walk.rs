//! The portable resolve-beneath: the path is walked one component at a time
//! under directory handles, each opened with `O_NOFOLLOW`, so no symlink is
//! followed unseen and nothing outside the root is ever opened. A symlink
//! met on the way is read (`readlinkat`) and, where [`Follow`] allows,
//! its relative target is walked in its place; an absolute target, or a
//! `..` above the root, is an escape, as `RESOLVE_BENEATH` makes it. This
//! is what runs without the kernel layer's resolve (every OS but Linux, magus
//! built without the kernel layer, Linux before 5.6). No check-then-use window: every
//! step acts on a handle already held.

use super::{BeneathError, Follow, HANDLE};
use nix::errno::Errno;
use nix::fcntl::{openat, readlinkat, OFlag};
use nix::sys::stat::{fstat, Mode, SFlag};
use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

/// As many links as the kernel follows in one lookup (`MAXSYMLINKS`).
const MAX_LINKS: u32 = 40;

/// One step of the walk.
enum Step {
    Name(OsString),
    Up,
}

/// The walk's state: the directories entered (the root is the empty
/// stack), the steps still to take and the links followed so far.
struct Walk<'root> {
    root: BorrowedFd<'root>,
    entered: Vec<OwnedFd>,
    steps: VecDeque<Step>,
    links: u32,
    follow: Follow,
}

/// Opens `rel` (relative; empty or `.` is the root itself) beneath `root`
/// with `flags`, following only the symlinks `follow` allows.
pub(super) fn open_beneath(
    root: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlag,
    follow: Follow,
) -> Result<OwnedFd, BeneathError> {
    let mut walk = Walk {
        root,
        entered: Vec::new(),
        steps: VecDeque::new(),
        links: 0,
        follow,
    };
    walk.push_front(rel)?;
    walk.run(flags)
}

impl Walk<'_> {
    fn dir(&self) -> BorrowedFd<'_> {
        self.entered.last().map_or(self.root, |fd| fd.as_fd())
    }

    /// Puts the components of `path` before the remaining steps.
    fn push_front(&mut self, path: &Path) -> Result<(), BeneathError> {
        let mut steps = Vec::new();
        for component in path.components() {
            match component {
                Component::Normal(name) => steps.push(Step::Name(name.to_os_string())),
                Component::ParentDir => steps.push(Step::Up),
                Component::CurDir => {}
                Component::RootDir | Component::Prefix(_) => return Err(BeneathError::Escapes),
            }
        }
        for step in steps.into_iter().rev() {
            self.steps.push_front(step);
        }
        Ok(())
    }

    fn run(&mut self, flags: OFlag) -> Result<OwnedFd, BeneathError> {
        while let Some(step) = self.steps.pop_front() {
            match step {
                Step::Up => self.up()?,
                Step::Name(name) if self.steps.is_empty() => {
                    if let Some(fd) = self.open_last(&name, flags)? {
                        return Ok(fd);
                    }
                }
                Step::Name(name) => self.enter(&name)?,
            }
        }
        // The path ended on the root, `.` or `..`: open where the walk is.
        retry(|| openat(self.dir(), ".", flags | OFlag::O_CLOEXEC, Mode::empty())).map_err(os)
    }

    /// `..`: back to the directory entered before; above the root is out.
    fn up(&mut self) -> Result<(), BeneathError> {
        match self.entered.pop() {
            Some(_) => Ok(()),
            None => Err(BeneathError::Escapes),
        }
    }

    /// An intermediate component: a directory to enter, or a symlink.
    fn enter(&mut self, name: &OsString) -> Result<(), BeneathError> {
        let flags = HANDLE | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        match retry(|| openat(self.dir(), name.as_os_str(), flags, Mode::empty())) {
            Ok(fd) => {
                self.entered.push(fd);
                Ok(())
            }
            Err(e @ (Errno::ELOOP | Errno::ENOTDIR)) => self.follow_link(name, e),
            Err(e) => Err(os(e)),
        }
    }

    /// The last component, opened with the caller's flags; `None` when it
    /// was a symlink whose target is now queued.
    fn open_last(
        &mut self,
        name: &OsString,
        flags: OFlag,
    ) -> Result<Option<OwnedFd>, BeneathError> {
        let flags = flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let mode = Mode::from_bits_truncate(0o666);
        match retry(|| openat(self.dir(), name.as_os_str(), flags, mode)) {
            // `O_PATH | O_NOFOLLOW` opens a final symlink itself, not its target.
            Ok(fd) if is_symlink(&fd) => self.follow_link(name, Errno::ELOOP).map(|()| None),
            Ok(fd) => Ok(Some(fd)),
            Err(e @ (Errno::ELOOP | Errno::ENOTDIR | Errno::EMLINK)) => {
                self.follow_link(name, e).map(|()| None)
            }
            Err(e) => Err(os(e)),
        }
    }

    /// `name` could not be opened without following: if it is a symlink
    /// that may be followed, queue its target; otherwise report `error`.
    fn follow_link(&mut self, name: &OsString, error: Errno) -> Result<(), BeneathError> {
        let target = match readlinkat(self.dir(), name.as_os_str()) {
            Ok(target) => PathBuf::from(target),
            // Not a symlink after all: the open's own error stands.
            Err(Errno::EINVAL) => return Err(os(error)),
            Err(e) => return Err(os(e)),
        };
        self.links += 1;
        if self.follow == Follow::Never || target.is_absolute() || self.links > MAX_LINKS {
            return Err(BeneathError::Escapes);
        }
        self.push_front(&target)
    }
}

fn is_symlink(fd: &OwnedFd) -> bool {
    fstat(fd)
        .is_ok_and(|st| SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFLNK)
}

fn retry<T>(mut call: impl FnMut() -> nix::Result<T>) -> nix::Result<T> {
    loop {
        match call() {
            Err(Errno::EINTR) => continue,
            other => return other,
        }
    }
}

fn os(e: Errno) -> BeneathError {
    BeneathError::Os(std::io::Error::from(e))
}
