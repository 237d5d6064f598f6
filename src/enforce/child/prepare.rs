//! Everything a confined child needs, made in the parent before the clone:
//! C strings and NULL-terminated pointer arrays for the program candidates,
//! `argv` and `envp`, the working directory, and the stdio descriptors.
//! The child side of a vfork-style clone may not allocate, so nothing it
//! reads is built later than here. Every descriptor made here is O_CLOEXEC.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use libc::c_char;
use nix::fcntl::{fcntl, open, FcntlArg, OFlag};
use nix::sys::stat::Mode;
use nix::unistd::pipe2;

use super::{ChildStdio, ConfinedCommand};
use crate::enforce::error::EnforceError;

/// glibc's `execvp` default when the environment has no `PATH`.
const DEFAULT_PATH: &[u8] = b"/bin:/usr/bin";

/// C strings that own their bytes, and the NULL-terminated array of
/// pointers into them that `execve` takes. The pointers stay valid while
/// `self` lives: a `CString`'s buffer does not move when the `Vec` does.
pub(super) struct CStringArray {
    items: Vec<CString>,
    ptrs: Vec<*const c_char>,
}

impl CStringArray {
    fn new(items: Vec<CString>) -> Self {
        let mut ptrs: Vec<*const c_char> = items.iter().map(|c| c.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        CStringArray { items, ptrs }
    }

    /// The NULL-terminated array.
    pub(super) fn as_ptr(&self) -> *const *const c_char {
        self.ptrs.as_ptr()
    }

    /// The pointers without the terminating NULL.
    pub(super) fn entries(&self) -> &[*const c_char] {
        &self.ptrs[..self.items.len()]
    }
}

/// One standard stream: the descriptor the child `dup2`s onto 0, 1 or 2
/// (`None` to inherit magus's) and the pipe end magus keeps, if piped.
#[derive(Default)]
pub(super) struct StreamPlan {
    pub(super) for_child: Option<OwnedFd>,
    pub(super) for_parent: Option<OwnedFd>,
}

/// The prepared launch of one [`ConfinedCommand`].
pub(super) struct Prepared {
    /// Paths to try in order with `execve`, as `execvp` would.
    pub(super) candidates: CStringArray,
    pub(super) argv: CStringArray,
    pub(super) envp: CStringArray,
    pub(super) cwd: Option<CString>,
    pub(super) stdio: [StreamPlan; 3],
}

impl Prepared {
    pub(super) fn new(command: &ConfinedCommand) -> Result<Self, EnforceError> {
        let env = dedup_env(&command.env);
        Ok(Prepared {
            candidates: CStringArray::new(candidates(&command.program, &env)?),
            argv: CStringArray::new(argv(command)?),
            envp: CStringArray::new(envp(&env)?),
            cwd: command
                .cwd
                .as_deref()
                .map(|d| c_string(d.as_os_str(), "the working directory"))
                .transpose()?,
            stdio: stdio_plans(&command.stdio).map_err(|source| EnforceError::Spawn {
                program: command.program.clone(),
                source,
            })?,
        })
    }

    /// The descriptor each of 0, 1, 2 becomes in the child (-1: inherit).
    pub(super) fn child_fds(&self) -> [RawFd; 3] {
        self.stdio
            .each_ref()
            .map(|s| s.for_child.as_ref().map_or(-1, |fd| fd.as_raw_fd()))
    }
}

fn c_string(s: &OsStr, what: &'static str) -> Result<CString, EnforceError> {
    CString::new(s.as_bytes()).map_err(|_| EnforceError::NulByte { what })
}

/// The environment with each name once, holding its last value, as
/// `std::process::Command::envs` behaves.
fn dedup_env(env: &[(OsString, OsString)]) -> Vec<(&OsStr, &OsStr)> {
    let mut out: Vec<(&OsStr, &OsStr)> = Vec::with_capacity(env.len());
    for (k, v) in env {
        match out.iter_mut().find(|(seen, _)| *seen == k.as_os_str()) {
            Some(slot) => slot.1 = v.as_os_str(),
            None => out.push((k.as_os_str(), v.as_os_str())),
        }
    }
    out
}

fn argv(command: &ConfinedCommand) -> Result<Vec<CString>, EnforceError> {
    let mut out = Vec::with_capacity(command.args.len() + 1);
    out.push(c_string(command.program.as_os_str(), "the program path")?);
    for arg in &command.args {
        out.push(c_string(arg, "an argument")?);
    }
    Ok(out)
}

fn envp(env: &[(&OsStr, &OsStr)]) -> Result<Vec<CString>, EnforceError> {
    env.iter()
        .map(|(k, v)| {
            let mut entry = Vec::with_capacity(k.len() + v.len() + 1);
            entry.extend_from_slice(k.as_bytes());
            entry.push(b'=');
            entry.extend_from_slice(v.as_bytes());
            CString::new(entry).map_err(|_| EnforceError::NulByte {
                what: "an environment entry",
            })
        })
        .collect()
}

/// A path with a `/` is used as is; a bare name becomes one candidate per
/// directory of the child's `PATH` (empty entries mean the working
/// directory), tried in order by the child like `execvp` does.
fn candidates(program: &Path, env: &[(&OsStr, &OsStr)]) -> Result<Vec<CString>, EnforceError> {
    let name = program.as_os_str().as_bytes();
    if name.contains(&b'/') || name.is_empty() {
        return Ok(vec![c_string(program.as_os_str(), "the program path")?]);
    }
    let path = env
        .iter()
        .find(|(k, _)| *k == "PATH")
        .map_or(DEFAULT_PATH, |(_, v)| v.as_bytes());
    path.split(|b| *b == b':')
        .map(|dir| {
            let dir: &[u8] = if dir.is_empty() { b"." } else { dir };
            let mut full = Vec::with_capacity(dir.len() + name.len() + 1);
            full.extend_from_slice(dir);
            full.push(b'/');
            full.extend_from_slice(name);
            CString::new(full).map_err(|_| EnforceError::NulByte {
                what: "the program path",
            })
        })
        .collect()
}

fn stdio_plans(stdio: &[ChildStdio; 3]) -> io::Result<[StreamPlan; 3]> {
    let [stdin, stdout, stderr] = *stdio;
    Ok([
        plan(stdin, Direction::ChildReads)?,
        plan(stdout, Direction::ChildWrites)?,
        plan(stderr, Direction::ChildWrites)?,
    ])
}

#[derive(Clone, Copy)]
enum Direction {
    ChildReads,
    ChildWrites,
}

fn plan(stdio: ChildStdio, direction: Direction) -> io::Result<StreamPlan> {
    let (for_child, for_parent) = match stdio {
        ChildStdio::Inherit => return Ok(StreamPlan::default()),
        ChildStdio::Null => (dev_null(direction)?, None),
        ChildStdio::Fd(fd) => {
            // SAFETY: the caller keeps `fd` open until the spawn returns
            // (`ChildStdio::Fd`'s contract); it is only duplicated here.
            let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
            (borrowed.try_clone_to_owned()?, None)
        }
        ChildStdio::Piped => {
            let (read, write) = pipe2(OFlag::O_CLOEXEC)?;
            match direction {
                Direction::ChildReads => (read, Some(write)),
                Direction::ChildWrites => (write, Some(read)),
            }
        }
    };
    Ok(StreamPlan {
        for_child: Some(above_stdio(for_child)?),
        for_parent,
    })
}

fn dev_null(direction: Direction) -> io::Result<OwnedFd> {
    let access = match direction {
        Direction::ChildReads => OFlag::O_RDONLY,
        Direction::ChildWrites => OFlag::O_WRONLY,
    };
    Ok(open("/dev/null", access | OFlag::O_CLOEXEC, Mode::empty())?)
}

/// Moves a descriptor numbered 0, 1 or 2 (possible when magus's own stdio
/// was closed) above them, so that the child's `dup2` onto 0, 1, 2 can
/// neither clobber another stream's source nor be a no-op that keeps
/// O_CLOEXEC set.
fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    let raw = fcntl(&fd, FcntlArg::F_DUPFD_CLOEXEC(3))?;
    // SAFETY: F_DUPFD_CLOEXEC returned a new descriptor that nothing else owns.
    Ok(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(array: &CStringArray) -> Vec<String> {
        array
            .items
            .iter()
            .map(|c| c.to_string_lossy().into_owned())
            .collect()
    }

    fn os(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    /// Program, environment, expected candidates.
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [&'a str]);

    #[test]
    fn bare_names_expand_on_the_child_path() {
        let cases: [Case; 4] = [
            ("/bin/true", &[("PATH", "/x")], &["/bin/true"]),
            ("./run", &[], &["./run"]),
            ("ls", &[("PATH", "/a::/b")], &["/a/ls", "./ls", "/b/ls"]),
            ("ls", &[], &["/bin/ls", "/usr/bin/ls"]),
        ];
        for (program, env, want) in cases {
            let env = os(env);
            let got = candidates(Path::new(program), &dedup_env(&env)).expect("no NUL");
            let got = CStringArray::new(got);
            assert_eq!(strings(&got), want, "{program}");
        }
    }

    #[test]
    fn env_keeps_each_name_once_with_its_last_value() {
        let env = os(&[("A", "1"), ("B", "2"), ("A", "3")]);
        let got = CStringArray::new(envp(&dedup_env(&env)).expect("no NUL"));
        assert_eq!(strings(&got), ["A=3", "B=2"]);
    }

    #[test]
    fn arrays_end_with_null() {
        let array = CStringArray::new(vec![c"a".to_owned(), c"b".to_owned()]);
        assert_eq!(array.entries().len(), 2);
        // SAFETY: the array has three pointers, the last one NULL.
        assert!(unsafe { *array.as_ptr().add(2) }.is_null());
    }

    #[test]
    fn nul_bytes_are_refused() {
        let command = ConfinedCommand::new("/bin/true").args(["a\0b"]);
        assert!(matches!(
            Prepared::new(&command),
            Err(EnforceError::NulByte {
                what: "an argument"
            })
        ));
    }
}
