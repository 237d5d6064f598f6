//! The user's terminal as the run found it. A child inherits the terminal
//! magus was started on (stdin, stdout, stderr) and may `fchmod` it: the
//! device node is the user's own, Landlock does not handle `chmod`, and a
//! mount flag cannot guard a descriptor opened before the jail. Left at
//! `0666`, the terminal is readable and writable by every local user after
//! the run (they can read what the user types next, or write to the
//! screen). The process that waits outside every child notes the modes
//! before any child exists and puts them back once the last one has ended.
//! It must not act on anything but the descriptors it noted.
//!
//! Without a jail it also narrows the built-in `/dev/pts` grant to the
//! run's own terminals ([`own_terminals_only`]): the host's `/dev/pts`
//! holds every other terminal of the user's session.

use std::os::fd::{BorrowedFd, RawFd};
use std::path::{Path, PathBuf};

use crate::policy::{Grant, GrantSource, PSEUDO_TERMINALS_WHY};

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

/// `grants` with the built-in `/dev/pts` grant replaced by one grant per
/// terminal under it that this process holds open (the user's terminal on
/// stdin, stdout or stderr, the relay pseudo-terminal `sh` opened at
/// start-up), for a run without a jail of its own.
///
/// In the jail `/dev/pts` is a `devpts` of the run's own. Without it, it
/// is the host's, and a grant of the directory let a child of an ordinary
/// user (user namespaces refused, Ubuntu's default) open every other
/// terminal of the session: read what the user types in another tab (a
/// password at a `sudo` prompt) and write to its screen. No new terminal
/// can be made there anyway (`/dev/ptmx` is not granted), and a child
/// inherits its own terminals as descriptors; only a terminal reopened by
/// name (`$(tty)`) needs a path, and those stay granted.
pub(crate) fn own_terminals_only(grants: Vec<Grant>) -> Vec<Grant> {
    let held = held_paths();
    let mut narrowed = Vec::with_capacity(grants.len());
    for grant in grants {
        if !matches!(grant.source, GrantSource::Builtin(PSEUDO_TERMINALS_WHY)) {
            narrowed.push(grant);
            continue;
        }
        for path in held.iter().filter(|p| p.parent() == Some(&grant.path)) {
            narrowed.push(Grant {
                path: path.clone(),
                mode: grant.mode,
                source: grant.source.clone(),
            });
        }
    }
    narrowed
}

/// The character devices this process has open, by the path the kernel
/// gives them (`/proc/self/fd`), sorted and without repeats; none when
/// `/proc` cannot be read, which grants no terminal at all.
fn held_paths() -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    let mut held: Vec<PathBuf> = entries
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter(|p| is_char_device(p))
        .collect();
    held.sort();
    held.dedup();
    held
}

fn is_char_device(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_char_device())
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

    fn grant(path: &str, source: GrantSource) -> Grant {
        Grant {
            path: PathBuf::from(path),
            mode: crate::policy::Mode::Rw,
            source,
        }
    }

    /// The built-in `/dev/pts` grant becomes the terminals held open (a
    /// pty opened here, and no other); every other grant, and a `/dev/pts`
    /// a `magus.yaml` grants itself, is kept as it was.
    #[test]
    fn only_the_held_terminals_stay_granted() {
        let pty = nix::pty::openpty(None, None).unwrap();
        let slave = std::fs::read_link(format!("/proc/self/fd/{}", pty.slave.as_raw_fd())).unwrap();
        let dir = slave.parent().unwrap().to_str().unwrap().to_string();
        let builtin = grant(&dir, GrantSource::Builtin(PSEUDO_TERMINALS_WHY));
        let tmp = grant("/tmp", GrantSource::Builtin("temporary files"));
        let narrowed = own_terminals_only(vec![tmp.clone(), builtin.clone()]);
        assert_eq!(narrowed[0], tmp);
        let paths: Vec<&Path> = narrowed[1..].iter().map(|g| g.path.as_path()).collect();
        assert!(paths.contains(&slave.as_path()), "{paths:?}");
        assert!(!paths.contains(&Path::new(&dir)), "{paths:?}");
        assert!(narrowed[1..].iter().all(|g| g.source == builtin.source));
        let own = crate::policy::GrantSource::Workspace;
        let declared = grant(&dir, own);
        assert_eq!(own_terminals_only(vec![declared.clone()]), [declared]);
    }
}
