//! The user's terminal as the run found it. A child inherits the terminal
//! magus was started on (stdin, stdout, stderr) and may `fchmod` it: the
//! device node is the user's own, Landlock does not handle `chmod`, and a
//! mount flag cannot guard a descriptor opened before the jail. Left at
//! `0666`, the terminal is readable and writable by every local user after
//! the run (they can read what the user types next, or write to the
//! screen). The process that waits outside every child notes the modes
//! before any child exists and puts them back once the last one has ended.
//! It must not act on anything but the descriptors it noted.

use std::os::fd::{BorrowedFd, RawFd};

use nix::sys::stat::{fchmod, fstat, Mode};

/// The permission bits (`chmod` sets these and nothing else).
const PERMISSION_BITS: u32 = 0o7777;

/// One terminal among stdin, stdout and stderr, as noted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Noted {
    fd: RawFd,
    dev: u64,
    ino: u64,
    mode: u32,
}

/// The modes of the terminals on descriptors 0 to 2 when the run started.
#[derive(Debug, Default)]
pub(crate) struct TerminalModes {
    noted: Vec<Noted>,
}

impl TerminalModes {
    /// Notes each terminal among descriptors 0 to 2 (one entry per device).
    /// Call before any child of the run exists.
    pub(crate) fn note() -> TerminalModes {
        let mut noted: Vec<Noted> = Vec::new();
        for fd in 0..=2 {
            if let Some(now) = terminal_on(fd) {
                if !noted.iter().any(|n| (n.dev, n.ino) == (now.dev, now.ino)) {
                    noted.push(now);
                }
            }
        }
        TerminalModes { noted }
    }

    /// Once every process of the run has ended: puts back each noted mode
    /// that changed (the descriptor must still be the same terminal), and
    /// says so on stderr.
    pub(crate) fn restore(&self) {
        self.restore_saying(&say);
    }

    /// [`TerminalModes::restore`], telling `tell` what it put back.
    fn restore_saying(&self, tell: &dyn Fn(u32, &str)) {
        for was in &self.noted {
            let Some(now) = terminal_on(was.fd) else {
                continue;
            };
            if (now.dev, now.ino) != (was.dev, was.ino) || now.mode == was.mode {
                continue;
            }
            // SAFETY: `was.fd` is open (fstat just succeeded) and this
            // process never closes descriptors 0 to 2 while it waits.
            let fd = unsafe { BorrowedFd::borrow_raw(was.fd) };
            let outcome = match fchmod(fd, Mode::from_bits_truncate(was.mode)) {
                Ok(()) => format!("magus put back {:o}", was.mode),
                Err(e) => format!("magus could not put back {:o} ({})", was.mode, e.desc()),
            };
            tell(now.mode, &outcome);
        }
    }
}

/// The terminal on `fd`, if `fd` is one.
fn terminal_on(fd: RawFd) -> Option<Noted> {
    // SAFETY: `isatty` and `fstat` only read the descriptor table.
    let fd_ref = unsafe { BorrowedFd::borrow_raw(fd) };
    if !nix::unistd::isatty(fd_ref).unwrap_or(false) {
        return None;
    }
    let st = fstat(fd_ref).ok()?;
    Some(Noted {
        fd,
        dev: st.st_dev,
        ino: st.st_ino,
        mode: st.st_mode & PERMISSION_BITS,
    })
}

fn say(changed_to: u32, outcome: &str) {
    let text = format!(
        "{}warning[MGS2002]: a child changed the permissions of your terminal to {changed_to:o} \
         (other users could read what you type, or write to it); {outcome}\n",
        crate::diag::terminal_reset()
    );
    let _ = nix::unistd::write(std::io::stderr(), text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    /// A pty's slave as descriptor 0 cannot be arranged inside the test
    /// runner without disturbing it; the noting itself is checked on a
    /// pty opened here, through the same helper.
    #[test]
    fn a_changed_terminal_mode_is_seen_and_put_back() {
        let pty = nix::pty::openpty(None, None).unwrap();
        let fd = pty.slave.as_raw_fd();
        fchmod(&pty.slave, Mode::from_bits_truncate(0o620)).unwrap();
        let was = terminal_on(fd).unwrap();
        assert_eq!(was.mode, 0o620);
        let modes = TerminalModes { noted: vec![was] };
        fchmod(&pty.slave, Mode::from_bits_truncate(0o666)).unwrap();
        let told = std::cell::RefCell::new(Vec::new());
        modes.restore_saying(&|mode, outcome| told.borrow_mut().push((mode, outcome.to_string())));
        assert_eq!(terminal_on(fd).unwrap().mode, 0o620);
        assert_eq!(
            told.into_inner(),
            [(0o666, "magus put back 620".to_string())]
        );
        let file = tempfile::tempfile().unwrap();
        assert_eq!(terminal_on(file.as_raw_fd()), None);
    }
}
