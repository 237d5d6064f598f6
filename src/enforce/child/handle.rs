//! The handle of a running confined child, shaped like
//! `std::process::Child`: its pid, the pipe ends magus kept (std's own
//! `ChildStdin`/`ChildStdout`/`ChildStderr`), waiting, polling and killing.
//! Dropping it neither kills nor reaps the child, exactly as with std: a
//! child never waited for stays a zombie until magus exits.

use std::io::{self, Read};
#[cfg(unix)]
use std::os::unix::process::ExitStatusExt;
use std::process::{ChildStderr, ChildStdin, ChildStdout, ExitStatus, Output};

#[cfg(unix)]
use libc::{c_int, pid_t};

#[cfg(kernel_layer)]
use super::prepare::StreamPlan;

/// A child started by [`super::ConfinedCommand::spawn`].
#[derive(Debug)]
pub struct ConfinedChild {
    #[cfg(unix)]
    pid: pid_t,
    /// Windows has no `waitpid`: std's handle waits and kills.
    #[cfg(windows)]
    child: std::process::Child,
    /// Set once reaped, so a second wait answers without a syscall and a
    /// kill never reaches a recycled pid.
    status: Option<ExitStatus>,
    /// The write end of the child's stdin, when it is piped.
    pub stdin: Option<ChildStdin>,
    /// The read end of the child's stdout, when it is piped.
    pub stdout: Option<ChildStdout>,
    /// The read end of the child's stderr, when it is piped.
    pub stderr: Option<ChildStderr>,
}

impl ConfinedChild {
    #[cfg(kernel_layer)]
    pub(super) fn new(pid: pid_t, [stdin, stdout, stderr]: [StreamPlan; 3]) -> Self {
        ConfinedChild {
            pid,
            status: None,
            stdin: stdin.for_parent.map(ChildStdin::from),
            stdout: stdout.for_parent.map(ChildStdout::from),
            stderr: stderr.for_parent.map(ChildStderr::from),
        }
    }

    /// Takes over a child std started: its pipe ends and its pid. Dropping
    /// std's handle neither kills nor reaps, so waiting stays ours.
    #[cfg(not(kernel_layer))]
    pub(super) fn from_std(mut child: std::process::Child) -> Self {
        ConfinedChild {
            #[cfg(unix)]
            pid: child.id() as pid_t,
            status: None,
            stdin: child.stdin.take(),
            stdout: child.stdout.take(),
            stderr: child.stderr.take(),
            #[cfg(windows)]
            child,
        }
    }

    /// The child's process id.
    #[cfg(windows)]
    #[cfg_attr(not(feature = "internals"), allow(dead_code))]
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Closes the child's stdin and waits for it to exit.
    #[cfg(windows)]
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        drop(self.stdin.take());
        if let Some(status) = self.status {
            return Ok(status);
        }
        let status = self.child.wait()?;
        self.status = Some(status);
        Ok(status)
    }

    /// The exit status if the child has exited, without blocking.
    #[cfg(windows)]
    #[cfg_attr(not(feature = "internals"), allow(dead_code))]
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.status.is_none() {
            self.status = self.child.try_wait()?;
        }
        Ok(self.status)
    }

    /// Terminates the child; does nothing once it has been waited for.
    #[cfg(windows)]
    #[cfg_attr(not(feature = "internals"), allow(dead_code))]
    pub fn kill(&mut self) -> io::Result<()> {
        match self.status {
            Some(_) => Ok(()),
            None => self.child.kill(),
        }
    }

    /// The child's process id (in magus's PID namespace).
    #[cfg(unix)]
    #[cfg_attr(not(feature = "internals"), allow(dead_code))]
    pub fn id(&self) -> u32 {
        self.pid.unsigned_abs()
    }

    /// Closes the child's stdin (so a child reading it sees EOF) and waits
    /// for it to exit.
    #[cfg(unix)]
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        drop(self.stdin.take());
        if let Some(status) = self.status {
            return Ok(status);
        }
        // A blocking waitpid reports a status or fails; it never says
        // "still running".
        let status = waitpid(self.pid, 0)?
            .ok_or_else(|| io::Error::other("waitpid returned no status for a blocking wait"))?;
        self.status = Some(status);
        Ok(status)
    }

    /// The exit status if the child has exited, without blocking.
    #[cfg(unix)]
    #[cfg_attr(not(feature = "internals"), allow(dead_code))]
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.status.is_none() {
            self.status = waitpid(self.pid, libc::WNOHANG)?;
        }
        Ok(self.status)
    }

    /// Sends SIGKILL; does nothing once the child has been reaped.
    #[cfg(unix)]
    #[cfg_attr(not(feature = "internals"), allow(dead_code))]
    pub fn kill(&mut self) -> io::Result<()> {
        if self.status.is_some() {
            return Ok(());
        }
        // SAFETY: kill(2) on our own unreaped child: the pid cannot have
        // been recycled while it is a zombie.
        if unsafe { libc::kill(self.pid, libc::SIGKILL) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Closes stdin, reads the piped stdout and stderr to their ends
    /// (concurrently, so a child filling one pipe cannot stall on the
    /// other), then waits. A stream that is not piped reads as empty.
    pub fn wait_with_output(mut self) -> io::Result<Output> {
        drop(self.stdin.take());
        let (stdout, stderr) = read_both(self.stdout.take(), self.stderr.take())?;
        let status = self.wait()?;
        Ok(Output {
            status,
            stdout,
            stderr,
        })
    }
}

/// `waitpid`, retried on EINTR; `None` when `WNOHANG` found it running.
#[cfg(unix)]
fn waitpid(pid: pid_t, flags: c_int) -> io::Result<Option<ExitStatus>> {
    let mut status: c_int = 0;
    loop {
        // SAFETY: waitpid on our own child, writing into a local.
        match unsafe { libc::waitpid(pid, &mut status, flags) } {
            0 => return Ok(None),
            r if r > 0 => return Ok(Some(ExitStatus::from_raw(status))),
            _ => {
                let err = io::Error::last_os_error();
                if err.kind() != io::ErrorKind::Interrupted {
                    return Err(err);
                }
            }
        }
    }
}

fn read_all(stream: Option<impl Read>) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    if let Some(mut s) = stream {
        s.read_to_end(&mut out)?;
    }
    Ok(out)
}

/// Reads stderr on a scoped thread while this one reads stdout; with only
/// one stream piped no thread is started.
fn read_both(
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
) -> io::Result<(Vec<u8>, Vec<u8>)> {
    let (stdout, stderr) = match (stdout, stderr) {
        (Some(out), Some(err)) => (out, err),
        (out, err) => return Ok((read_all(out)?, read_all(err)?)),
    };
    std::thread::scope(|scope| {
        let err_reader = std::thread::Builder::new()
            .name("confined-stderr".into())
            .spawn_scoped(scope, move || read_all(Some(stderr)))?;
        let out = read_all(Some(stdout));
        let err = err_reader
            .join()
            .map_err(|_| io::Error::other("the stderr reader panicked"))?;
        Ok((out?, err?))
    })
}
