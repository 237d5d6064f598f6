//! Where a launched child's stdout and stderr go, so that it keeps the
//! user's terminal while magus can still explain a kernel denial.
//!
//! magus attributes a child's "Permission denied" to the sandbox by reading
//! what the child wrote (see `attribute`), so it must see the child's
//! output; a pipe would take the terminal away (no colours, and stdout and
//! stderr reordered). The choice, per run:
//!
//! - **`--message-format json`**: stderr is a pipe, and each line the child
//!   writes becomes one JSON object on magus's stderr; stdout is inherited.
//! - **stderr is a terminal**: the child writes to a pseudo-terminal that
//!   magus opened at start-up (before Landlock, which does not grant
//!   `/dev/ptmx`) and relays live to its stderr. stdout goes to the same
//!   pseudo-terminal when magus's stdout is the same terminal, so the two
//!   keep their order; the child sees a terminal on both. Output
//!   post-processing is off on the pseudo-terminal, so the bytes reach the
//!   real terminal unchanged and its own settings apply.
//! - **stderr is not a terminal** (a file, a pipe): stderr is a pipe
//!   relayed live; stdout joins it when magus's stdout is the same file
//!   (`2>&1`), so the order is kept there too.
//! - **no pseudo-terminal could be opened** (a magus nested in a sandboxed
//!   spell): the child inherits magus's terminal, and a kernel denial goes
//!   unexplained rather than the terminal being taken away.
//!
//! A pseudo-terminal relay stops once the child has exited and its output
//! is drained; what a background grandchild writes later waits in the
//! pseudo-terminal until the next launch. The pseudo-terminal takes the
//! real terminal's size at each launch; a resize while a child runs
//! reaches the pseudo-terminal at the next launch.

use crate::diag::{render_child_line_json, MessageFormat};
use crate::enforce::ChildStdio;
use crate::enforce::RawStream;
#[cfg(unix)]
use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};
#[cfg(unix)]
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
#[cfg(unix)]
use nix::sys::termios::{tcgetattr, OutputFlags};
use std::io::{IsTerminal, PipeReader, PipeWriter, Read, Write};
#[cfg(unix)]
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
#[cfg(unix)]
use std::sync::OnceLock;
use std::thread::JoinHandle;

/// How much of a child's output is kept for attribution.
const TAIL: usize = 64 * 1024;
/// A line longer than this is wrapped in pieces under JSON.
const MAX_JSON_LINE: usize = 64 * 1024;

#[cfg(unix)]
nix::ioctl_read_bad!(get_winsize, libc::TIOCGWINSZ, libc::winsize);
#[cfg(unix)]
nix::ioctl_write_ptr_bad!(set_winsize, libc::TIOCSWINSZ, libc::winsize);

/// The pseudo-terminal children write to when magus's stderr is a terminal.
#[cfg(unix)]
#[derive(Debug)]
struct Terminal {
    master: OwnedFd,
    slave: OwnedFd,
    /// Whether magus's stdout is the same terminal as its stderr.
    with_stdout: bool,
}

/// Opened once, at start-up, before Landlock (which refuses `/dev/ptmx`
/// after), and shared by every launch of the run. Global: a fact of the
/// process's start (whether its stderr is a terminal), as its standard
/// streams are.
#[cfg(unix)]
static TERMINAL: OnceLock<Option<Terminal>> = OnceLock::new();

/// Opens the pseudo-terminal for children, when magus's stderr is a
/// terminal and diagnostics are human. Call it before Landlock is in force.
#[cfg(unix)]
pub(crate) fn prepare_terminal(format: MessageFormat) {
    TERMINAL.get_or_init(|| match format {
        MessageFormat::Json => None,
        MessageFormat::Human => open_terminal(),
    });
}

/// Windows has no pseudo-terminal to relay through: a child on a terminal
/// writes to it directly (nothing there needs a denial explained).
#[cfg(windows)]
pub(crate) fn prepare_terminal(_format: MessageFormat) {}

#[cfg(unix)]
fn open_terminal() -> Option<Terminal> {
    let stderr = std::io::stderr();
    if !stderr.is_terminal() {
        return None;
    }
    let mut termios = tcgetattr(stderr.as_fd()).ok();
    if let Some(t) = termios.as_mut() {
        t.output_flags.remove(OutputFlags::OPOST);
    }
    let size = window_size(stderr.as_fd());
    let pty = nix::pty::openpty(size.as_ref(), termios.as_ref()).ok()?;
    for fd in [&pty.master, &pty.slave] {
        fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).ok()?;
    }
    fcntl(&pty.master, FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).ok()?;
    let with_stdout = std::io::stdout().is_terminal() && same_file(1, 2);
    Some(Terminal {
        master: pty.master,
        slave: pty.slave,
        with_stdout,
    })
}

/// A close-on-exec pipe, read end first. std's (not `pipe2`, which macOS
/// lacks; on Windows the handles are not inherited).
fn cloexec_pipe() -> std::io::Result<(PipeReader, PipeWriter)> {
    std::io::pipe()
}

/// The child's end of a pipe, as [`ChildStdio::Fd`] takes it.
fn raw_stream(write: &PipeWriter) -> RawStream {
    #[cfg(unix)]
    return write.as_raw_fd();
    #[cfg(windows)]
    return std::os::windows::io::AsRawHandle::as_raw_handle(write);
}

#[cfg(unix)]
fn window_size(fd: BorrowedFd<'_>) -> Option<libc::winsize> {
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one winsize into the local.
    unsafe { get_winsize(fd.as_raw_fd(), &mut size) }.ok()?;
    Some(size)
}

/// Whether descriptors `a` and `b` of magus are the same open file.
#[cfg(unix)]
fn same_file(a: i32, b: i32) -> bool {
    use std::os::unix::fs::MetadataExt;
    let meta = |fd: i32| {
        // SAFETY: 1 and 2 stay open for the life of magus; borrowed briefly.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        fd.try_clone_to_owned()
            .ok()
            .and_then(|o| std::fs::File::from(o).metadata().ok())
    };
    match (meta(a), meta(b)) {
        (Some(x), Some(y)) => (x.dev(), x.ino(), x.rdev()) == (y.dev(), y.ino(), y.rdev()),
        _ => false,
    }
}

/// Whether magus's stdout and stderr are the same file: not asked on
/// Windows, where stdout is then inherited rather than relayed.
#[cfg(windows)]
fn same_file(_a: i32, _b: i32) -> bool {
    false
}

#[cfg(unix)]
impl Terminal {
    /// Gives the pseudo-terminal the real terminal's current size, so a
    /// child laying out its output sees the width the user sees.
    fn sync_size(&self) {
        if let Some(size) = window_size(std::io::stderr().as_fd()) {
            // SAFETY: TIOCSWINSZ reads one winsize from the local.
            let _ = unsafe { set_winsize(self.slave.as_raw_fd(), &size) };
        }
    }
}

/// Where one launch's output goes.
#[derive(Debug, Clone, Copy)]
enum Kind {
    #[cfg(unix)]
    Terminal(&'static Terminal),
    Pipe,
    Json,
    Inherit,
}

/// The output plan of one launch: what the child gets, and what magus
/// keeps to relay it.
#[derive(Debug)]
pub(super) struct Launch {
    kind: Kind,
    stdout: ChildStdio,
    stderr: ChildStdio,
    /// The pipe magus reads and the end the child writes (closed in magus
    /// once the child runs), for the pipe kinds.
    pipe: Option<(PipeReader, PipeWriter)>,
}

impl Launch {
    /// The plan for a launch now, for a run whose diagnostics are
    /// printed in `format`.
    pub(super) fn plan(format: MessageFormat) -> std::io::Result<Launch> {
        if format == MessageFormat::Json {
            return Launch::piped(Kind::Json, false);
        }
        if std::io::stderr().is_terminal() {
            #[cfg(windows)]
            return Ok(Launch::inherit());
            #[cfg(unix)]
            return Ok(match TERMINAL.get() {
                Some(Some(terminal)) => {
                    terminal.sync_size();
                    let pty = ChildStdio::Fd(terminal.slave.as_raw_fd());
                    let stdout = if terminal.with_stdout {
                        pty
                    } else {
                        ChildStdio::Inherit
                    };
                    Launch {
                        kind: Kind::Terminal(terminal),
                        stdout,
                        stderr: pty,
                        pipe: None,
                    }
                }
                _ => Launch::inherit(),
            });
        }
        Launch::piped(Kind::Pipe, same_file(1, 2))
    }

    /// The child writes to magus's own streams; nothing is relayed.
    fn inherit() -> Launch {
        Launch {
            kind: Kind::Inherit,
            stdout: ChildStdio::Inherit,
            stderr: ChildStdio::Inherit,
            pipe: None,
        }
    }

    fn piped(kind: Kind, with_stdout: bool) -> std::io::Result<Launch> {
        let (read, write) = cloexec_pipe()?;
        let end = ChildStdio::Fd(raw_stream(&write));
        Ok(Launch {
            kind,
            stdout: if with_stdout {
                end
            } else {
                ChildStdio::Inherit
            },
            stderr: end,
            pipe: Some((read, write)),
        })
    }

    /// The child's stdout and stderr.
    pub(super) fn stdio(&self) -> (ChildStdio, ChildStdio) {
        (self.stdout, self.stderr)
    }

    /// Starts relaying, once the child runs (the child's end of a pipe is
    /// closed here, so the relay sees the end of its output).
    pub(super) fn relay(self, program: &str) -> Relay {
        let read = self.pipe.map(|(read, write)| {
            drop(write);
            read
        });
        match (self.kind, read) {
            #[cfg(unix)]
            (Kind::Terminal(terminal), _) => Relay::terminal(terminal),
            (Kind::Json, Some(read)) => {
                let program = program.to_string();
                Relay::spawn(
                    move || relay_json(read, &program, &mut std::io::stderr()),
                    None,
                )
            }
            (_, Some(read)) => Relay::spawn(move || relay_raw(read, &mut std::io::stderr()), None),
            (_, None) => Relay::default(),
        }
    }
}

/// The write end of a terminal relay's wake-up pipe (none on Windows).
#[cfg(unix)]
type WakeEnd = OwnedFd;
#[cfg(windows)]
type WakeEnd = std::convert::Infallible;

/// A running relay of one child's output.
#[derive(Debug, Default)]
pub(super) struct Relay {
    thread: Option<JoinHandle<Vec<u8>>>,
    /// Written to once the child has exited, for a terminal relay (whose
    /// pseudo-terminal magus keeps open, so it never sees an end).
    #[cfg(unix)]
    wake: Option<OwnedFd>,
}

impl Relay {
    fn spawn(f: impl FnOnce() -> Vec<u8> + Send + 'static, wake: Option<WakeEnd>) -> Relay {
        let thread = std::thread::Builder::new()
            .name("child-output".into())
            .spawn(f)
            .ok();
        #[cfg(windows)]
        let _: Option<WakeEnd> = wake;
        Relay {
            thread,
            #[cfg(unix)]
            wake,
        }
    }

    #[cfg(unix)]
    fn terminal(terminal: &'static Terminal) -> Relay {
        let Ok((wake_read, wake_write)) = cloexec_pipe() else {
            return Relay::default();
        };
        let master = terminal.master.as_fd();
        Relay::spawn(
            move || relay_terminal(master, wake_read.into()),
            Some(wake_write.into()),
        )
    }

    /// Waits for the relay to pass on all the child wrote; returns the last
    /// [`TAIL`] bytes of it, for attribution.
    pub(super) fn finish(self) -> Vec<u8> {
        #[cfg(unix)]
        if let Some(wake) = &self.wake {
            let _ = nix::unistd::write(wake, b"x");
        }
        self.thread.and_then(|t| t.join().ok()).unwrap_or_default()
    }
}

/// The last [`TAIL`] bytes seen.
#[derive(Default)]
struct Tail(Vec<u8>);

impl Tail {
    fn push(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
        if self.0.len() > TAIL {
            self.0.drain(..self.0.len() - TAIL);
        }
    }
}

/// Copies the pseudo-terminal to stderr until woken, then drains it.
#[cfg(unix)]
fn relay_terminal(master: BorrowedFd<'static>, wake: OwnedFd) -> Vec<u8> {
    let mut tail = Tail::default();
    loop {
        let mut fds = [
            PollFd::new(master, PollFlags::POLLIN),
            PollFd::new(wake.as_fd(), PollFlags::POLLIN),
        ];
        if poll(&mut fds, PollTimeout::NONE).is_err_and(|e| e != nix::errno::Errno::EINTR) {
            break;
        }
        let woken = fds[1].any().unwrap_or(true);
        if !copy_available(master, &mut tail) || woken {
            // The child has exited: the kernel flushes pending pty input
            // before a non-blocking read reports none, so this drains all.
            copy_available(master, &mut tail);
            break;
        }
    }
    tail.0
}

/// Copies what can be read from the non-blocking `master` without
/// waiting; false once it fails for good.
#[cfg(unix)]
fn copy_available(master: BorrowedFd<'_>, tail: &mut Tail) -> bool {
    let mut buf = [0u8; 8192];
    loop {
        match nix::unistd::read(master, &mut buf) {
            Ok(0) => return false,
            Ok(n) => {
                let _ = std::io::stderr().write_all(&buf[..n]);
                tail.push(&buf[..n]);
            }
            Err(nix::errno::Errno::EAGAIN) => return true,
            Err(nix::errno::Errno::EINTR) => {}
            Err(_) => return false,
        }
    }
}

/// Copies a pipe to `out` (stderr) as it comes.
fn relay_raw(mut pipe: PipeReader, out: &mut impl Write) -> Vec<u8> {
    let mut tail = Tail::default();
    let mut buf = [0u8; 8192];
    while let Ok(n) = pipe.read(&mut buf) {
        if n == 0 {
            break;
        }
        let _ = out.write_all(&buf[..n]);
        tail.push(&buf[..n]);
    }
    tail.0
}

/// Wraps each line of a pipe as one JSON object on `out` (stderr).
fn relay_json(mut pipe: PipeReader, program: &str, out: &mut impl Write) -> Vec<u8> {
    let mut tail = Tail::default();
    let mut pending = Vec::new();
    let mut buf = [0u8; 8192];
    let mut say = |line: &[u8]| {
        let _ = out.write_all(render_child_line_json(program, line).as_bytes());
    };
    while let Ok(n) = pipe.read(&mut buf) {
        if n == 0 {
            break;
        }
        tail.push(&buf[..n]);
        pending.extend_from_slice(&buf[..n]);
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            say(&pending[..=end]);
            pending.drain(..=end);
        }
        if pending.len() > MAX_JSON_LINE {
            say(&pending);
            pending.clear();
        }
    }
    if !pending.is_empty() {
        say(&pending);
    }
    tail.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_bytes() {
        let mut tail = Tail::default();
        tail.push(&vec![b'a'; TAIL]);
        tail.push(b"end");
        assert_eq!(tail.0.len(), TAIL);
        assert!(tail.0.ends_with(b"aend"));
    }

    #[test]
    fn a_pipe_relay_returns_what_the_child_wrote() {
        let (read, write) = cloexec_pipe().unwrap();
        (&write).write_all(b"one\ntwo").unwrap();
        drop(write);
        let mut said = Vec::new();
        assert_eq!(relay_json(read, "prog", &mut said), b"one\ntwo");
        let said = String::from_utf8(said).unwrap();
        let lines: Vec<serde_json::Value> = said
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{said}");
        assert_eq!(lines[0]["message"], "one");
        assert_eq!(lines[1]["program"], "prog");
        let (read, write) = cloexec_pipe().unwrap();
        (&write).write_all(b"raw").unwrap();
        drop(write);
        let mut said = Vec::new();
        assert_eq!(relay_raw(read, &mut said), b"raw");
        assert_eq!(said, b"raw");
    }
}
