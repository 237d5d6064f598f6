//! What the host holds at a path, asked of the jail's original process,
//! which waits outside the jail (`super::Outside`). In the view an
//! ungranted path never exists, so magus proper alone cannot tell a file
//! the jail hides from one that is nowhere: a child's "No such file or
//! directory", or a program in a `PATH` directory the view lacks.
//!
//! The answer is whether the path exists, its real path and whether that
//! is an executable file: nothing of its content. Only magus proper holds
//! the asking end (close-on-exec, so no child inherits it), and the
//! original answers at most [`MAX_QUESTIONS`] a run.

use super::Outside;
use crate::enforce::host::{look_up, HostEntry};
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Far more than a run asks (a launch asks once per `PATH` directory the
/// view lacks, a failing child at most a few times); past it the original
/// stops answering and magus proper looks in its view alone.
pub(crate) const MAX_QUESTIONS: usize = 16_384;

/// The longest path asked about (`PATH_MAX`).
const MAX_PATH: usize = 4096;

/// In magus proper: the asking end, once the jail is entered. Global: it
/// is made before the jail's processes are forked and asked from deep in
/// a launch's diagnostics (`bindings::sh`), which hold no run value.
static ASKING: Mutex<Option<UnixStream>> = Mutex::new(None);

/// The original's end, served while it waits (see `reaper`).
#[derive(Debug)]
pub(crate) struct Answering {
    socket: UnixStream,
    answered: usize,
}

/// Makes the pair before the jail's processes are forked: the asking end
/// is kept for magus proper, the answering end goes to the original.
pub(super) fn pair() -> io::Result<Answering> {
    let (asking, answering) = UnixStream::pair()?;
    if let Ok(mut slot) = ASKING.lock() {
        *slot = Some(asking);
    }
    Ok(Answering {
        socket: answering,
        answered: 0,
    })
}

/// In the processes that do not ask (PID 1, the original): drops the
/// asking end.
pub(super) fn forget() {
    if let Ok(mut slot) = ASKING.lock() {
        slot.take();
    }
}

/// What the host holds at `path` (absolute), as the original process sees
/// it; `None` without a jail of this run's own (the caller's own view is
/// the host's then), or once the original no longer answers.
pub(crate) fn ask(path: &Path) -> Option<HostEntry> {
    let mut slot = ASKING.lock().ok()?;
    let socket = slot.as_mut()?;
    let answer = exchange(socket, path);
    if answer.is_none() {
        // A broken exchange is not retried: the stream may be out of step.
        slot.take();
    }
    answer
}

fn exchange(socket: &mut UnixStream, path: &Path) -> Option<HostEntry> {
    let bytes = path.as_os_str().as_bytes();
    if bytes.len() > MAX_PATH || !path.is_absolute() {
        return Some(HostEntry::Absent);
    }
    let mut request = Vec::with_capacity(4 + bytes.len());
    request.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    request.extend_from_slice(bytes);
    socket.write_all(&request).ok()?;
    let mut kind = [0u8; 1];
    socket.read_exact(&mut kind).ok()?;
    match kind[0] {
        ABSENT => Some(HostEntry::Absent),
        PRESENT | EXECUTABLE => {
            let real = read_path(socket)?;
            let executable = kind[0] == EXECUTABLE;
            Some(HostEntry::Present { real, executable })
        }
        _ => None,
    }
}

const ABSENT: u8 = 0;
const PRESENT: u8 = 1;
const EXECUTABLE: u8 = 2;

/// A length-prefixed path of at most [`MAX_PATH`] bytes.
fn read_path(socket: &mut UnixStream) -> Option<PathBuf> {
    let mut len = [0u8; 4];
    socket.read_exact(&mut len).ok()?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_PATH {
        return None;
    }
    let mut bytes = vec![0u8; len];
    socket.read_exact(&mut bytes).ok()?;
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(&bytes)))
}

fn encode(entry: &HostEntry) -> Vec<u8> {
    match entry {
        HostEntry::Absent => vec![ABSENT],
        HostEntry::Present { real, executable } => {
            let bytes = real.as_os_str().as_bytes();
            if bytes.len() > MAX_PATH {
                return vec![ABSENT];
            }
            let mut out = vec![if *executable { EXECUTABLE } else { PRESENT }];
            out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            out.extend_from_slice(bytes);
            out
        }
    }
}

impl Outside for Answering {
    fn requests(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }

    /// Answers one question; `false` (and no more answers) at the end of
    /// the stream, on a malformed question, or past [`MAX_QUESTIONS`].
    fn serve(&mut self) -> bool {
        if self.answered >= MAX_QUESTIONS {
            return false;
        }
        let Some(path) = read_path(&mut self.socket) else {
            return false;
        };
        self.answered += 1;
        self.socket.write_all(&encode(&look_up(&path))).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One question each way over a real socket pair: an executable, a
    /// directory reached through a link, and nothing.
    #[test]
    fn questions_get_the_hosts_answers() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let tool = root.join("tool");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink(&root, root.join("link")).unwrap();
        let cases = [
            (
                tool.clone(),
                HostEntry::Present {
                    real: tool.clone(),
                    executable: true,
                },
            ),
            (
                root.join("link"),
                HostEntry::Present {
                    real: root.clone(),
                    executable: false,
                },
            ),
            (root.join("absent"), HostEntry::Absent),
            (PathBuf::from("relative"), HostEntry::Absent),
        ];
        let (mut asking, answering) = UnixStream::pair().unwrap();
        let mut answering = Answering {
            socket: answering,
            answered: 0,
        };
        // The original's side, on a thread of its own: three questions
        // (a relative path is never sent), then the end of the stream.
        let server = std::thread::spawn(move || {
            let served: Vec<bool> = (0..4).map(|_| answering.serve()).collect();
            (served, answering.answered)
        });
        for (path, want) in cases {
            assert_eq!(
                exchange(&mut asking, &path),
                Some(want),
                "{}",
                path.display()
            );
        }
        drop(asking);
        let (served, answered) = server.join().unwrap();
        assert_eq!(served, [true, true, true, false]);
        assert_eq!(answered, 3);
    }

    #[test]
    fn too_many_questions_end_the_service() {
        let (_asking, answering) = UnixStream::pair().unwrap();
        let mut answering = Answering {
            socket: answering,
            answered: MAX_QUESTIONS,
        };
        assert!(!answering.serve());
    }
}
