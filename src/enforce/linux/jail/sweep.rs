//! After the run, what no bind can hold:
//! - a git directory's `commondir` that did not exist when the run
//!   started. git reads `config` and `hooks` from the directory it names
//!   instead of its own, so a child that writes one (the rest of `.git`
//!   stays writable, for `git commit`) would make git run its code,
//!   unconfined, at the user's next `git status`. A missing file cannot be
//!   bound read-only (a bind needs an inode), so the original process,
//!   outside the jail, removes such a file once every process of the run
//!   has ended, and says so;
//! - a symbolic link to a protected path (a `.git` link to the git
//!   directory, a `hooks` or `config` link in it, a `~/.bashrc` or `PATH`
//!   directory a dotfile manager links): a mount follows a link, so the
//!   link cannot be bound. A child put a file or directory of its own in
//!   its place (hooks, a `core.fsmonitor`, shell code). One that no longer
//!   says what it said is put back, and what stood there is kept aside,
//!   renamed;
//!
//! A new repository anywhere (the workspace root of a workspace inside the
//! user's repository included) is `crate::enforce::leftovers`'s.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{readlinkat, renameat, AtFlags};
use nix::sys::stat::{fstat, fstatat};
use nix::unistd::{symlinkat, unlinkat, UnlinkatFlags};

use super::plan::JailPlan;
use super::protect::{CarveReason, KeptLink};
use crate::enforce::leftovers::nofollow;

/// The `commondir` files that did not exist when the run started.
#[derive(Debug, Default)]
pub(super) struct Sweep {
    absent: Vec<NotedGitDir>,
    links: Vec<NotedLink>,
}

/// A git directory without a `commondir` when the run started, by
/// identity: the file is removed only in that directory. By path, the
/// sweep removed a `commondir` outside the workspace, where a child of
/// another run had swapped `.git` for a link (a red-team run).
#[derive(Debug)]
struct NotedGitDir {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

/// The name of the file [`NotedGitDir`] is about.
const COMMONDIR: &str = "commondir";

/// A link git follows and the directory that holds it, by identity, so that a
/// directory a child swapped in (or a link in its place) is never written.
#[derive(Debug)]
struct NotedLink {
    link: KeptLink,
    dev: u64,
    ino: u64,
}

impl Sweep {
    /// Notes, before any child exists, each protected git directory (one
    /// per carved `hooks`) that has no `commondir`.
    pub(super) fn before(plan: &JailPlan) -> Sweep {
        let absent = plan
            .carve_outs()
            .filter(|(path, reason)| **reason == CarveReason::GitCode && path.ends_with("hooks"))
            .filter_map(|(hooks, _)| hooks.parent())
            // A symlinked `hooks` is carved where it leads, which need not
            // be a git directory.
            .filter(|dir| dir.ends_with(".git") || dir.join("HEAD").is_file())
            .filter_map(NotedGitDir::without_commondir)
            .collect();
        let links = plan
            .links
            .iter()
            .filter_map(|link| {
                let (dev, ino) = identity(&open_real_dir(&link.dir)?)?;
                Some(NotedLink {
                    link: link.clone(),
                    dev,
                    ino,
                })
            })
            .collect();
        Sweep { absent, links }
    }

    /// Once the run's PID namespace is gone: removes every noted
    /// `commondir` that now exists (a file or a symlink; a directory makes
    /// git stop, which runs nothing) and says so on stderr.
    pub(super) fn after(&self) {
        for gitdir in &self.absent {
            gitdir.remove_commondir();
        }
        for noted in &self.links {
            noted.put_back();
        }
    }
}

impl NotedGitDir {
    /// `gitdir`, noted if it has no `commondir` now: asked through a
    /// handle on it, opened following no link on the way, so that the
    /// directory noted is the one the answer is about.
    fn without_commondir(gitdir: &Path) -> Option<NotedGitDir> {
        let handle = open_real_dir(gitdir)?;
        let present = fstatat(handle.as_fd(), COMMONDIR, AtFlags::AT_SYMLINK_NOFOLLOW).is_ok();
        let (dev, ino) = identity(&handle)?;
        (!present).then(|| NotedGitDir {
            path: gitdir.to_path_buf(),
            dev,
            ino,
        })
    }

    /// Removes a `commondir` that now exists in this very directory (a
    /// file or a link; a directory makes git stop, which runs nothing).
    fn remove_commondir(&self) {
        let Some(handle) = open_noted_dir(&self.path, (self.dev, self.ino)) else {
            return; // Gone, or another directory (or a link) in its place.
        };
        let fd = handle.as_fd();
        let Ok(st) = fstatat(fd, COMMONDIR, AtFlags::AT_SYMLINK_NOFOLLOW) else {
            return;
        };
        if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
            return;
        }
        let outcome = match unlinkat(fd, COMMONDIR, UnlinkatFlags::NoRemoveDir) {
            Ok(()) => "magus removed it".to_string(),
            Err(e) => format!("magus could not remove it ({e}): remove it before running git"),
        };
        say(&self.path.join(COMMONDIR), &outcome);
    }
}

/// The directory at `path`, if it is still the one noted as `noted`
/// (device, inode): opened following no link anywhere on the way, as it
/// was when noted, and compared once open.
fn open_noted_dir(path: &Path, noted: (u64, u64)) -> Option<OwnedFd> {
    let handle = open_real_dir(path)?;
    (identity(&handle)? == noted).then_some(handle)
}

/// The directory at `path` (real), opened following no link anywhere on
/// the way: a child of another run swapped a directory above a kept link
/// for a link to `~` between the search and the noting, the identity
/// noted was the home's directory's, and the put-back renamed the user's
/// `~/victim/.git` aside and linked a planted repository in its place (a
/// red-team run).
fn open_real_dir(path: &Path) -> Option<OwnedFd> {
    nofollow::open_dir(path).ok()
}

/// The device and inode of what `fd` holds.
fn identity(fd: &OwnedFd) -> Option<(u64, u64)> {
    let st = fstat(fd.as_fd()).ok()?;
    Some((st.st_dev, st.st_ino))
}

/// The first of `NAME.planted-during-magus-run.0` to `.99` that is not
/// `taken`: where what a child planted at `name` is kept aside.
fn free_aside(name: &str, taken: impl Fn(&str) -> bool) -> Option<String> {
    (0..100)
        .map(|n| format!("{name}.planted-during-magus-run.{n}"))
        .find(|aside| !taken(aside))
}

impl NotedLink {
    /// Puts the link back if it says anything else now.
    fn put_back(&self) {
        let KeptLink {
            dir,
            name,
            target,
            reason,
        } = &self.link;
        let name = name.as_str();
        let Some(handle) = open_noted_dir(dir, (self.dev, self.ino)) else {
            return; // Gone, swapped for a link or another directory.
        };
        let fd = handle.as_fd();
        if readlinkat(fd, name).is_ok_and(|now| Path::new(&now) == target) {
            return;
        }
        let exists = |entry: &str| fstatat(fd, entry, AtFlags::AT_SYMLINK_NOFOLLOW).is_ok();
        let moved = match exists(name) {
            false => Ok(None),
            true => match free_aside(name, exists) {
                Some(aside) => renameat(fd, name, fd, aside.as_str()).map(|()| Some(aside)),
                None => Err(Errno::EEXIST),
            },
        };
        let restored = moved.and_then(|kept| symlinkat(target.as_path(), fd, name).map(|()| kept));
        let outcome = match restored {
            Ok(Some(kept)) => format!(
                "magus put the link back (to `{}`) and kept what stood there as `{}`",
                target.display(),
                dir.join(kept).display()
            ),
            Ok(None) => format!("magus put the link back (to `{}`)", target.display()),
            Err(e) => format!(
                "magus could not put it back ({e}): make it a link to `{}` again before running git",
                target.display()
            ),
        };
        let text = format!(
            "{}warning[MGS2002]: a child changed `{}`, a symbolic link to a path children may \
             not write ({reason}); {outcome}\n",
            crate::diag::terminal_reset(),
            dir.join(name).display()
        );
        let _ = nix::unistd::write(std::io::stderr(), text.as_bytes());
    }
}

fn say(file: &Path, outcome: &str) {
    let text = format!(
        "{}warning[MGS2002]: a child created `{}`, which would make git take its config and \
         hooks from another directory and run their commands outside the sandbox; {outcome}\n",
        crate::diag::terminal_reset(),
        file.display()
    );
    let _ = nix::unistd::write(std::io::stderr(), text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noted(gitdir: &Path) -> NotedGitDir {
        NotedGitDir::without_commondir(gitdir).expect("noted")
    }

    /// A red-team run: with a directory above the noted one swapped for a
    /// link to `~` between the search and the noting, the home's
    /// directory was noted, then changed after the run through the same
    /// link. A link anywhere on the way is refused at both ends.
    #[test]
    fn nothing_is_noted_or_changed_through_a_link_above() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let victim = root.join("home/victim/.git");
        std::fs::create_dir_all(&victim).unwrap();
        std::fs::create_dir_all(root.join("ws")).unwrap();
        std::os::unix::fs::symlink(root.join("home"), root.join("ws/x")).unwrap();
        let through = root.join("ws/x/victim/.git");
        assert!(NotedGitDir::without_commondir(&through).is_none());
        // Noted where it really is, then reached through the link: the
        // identity agrees, the handle is still refused.
        let real = noted(&victim);
        assert!(open_noted_dir(&through, (real.dev, real.ino)).is_none());
        assert!(open_noted_dir(&victim, (real.dev, real.ino)).is_some());
    }

    /// A red-team run: a child of another run swapped `.git` for a link
    /// to a linked worktree's directory elsewhere, and the sweep removed
    /// that directory's `commondir`. Only the noted directory's goes now;
    /// the control removes a `commondir` planted in it.
    #[test]
    fn only_the_noted_git_directorys_commondir_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (gitdir, victim) = (root.join("r/.git"), root.join("victim/worktrees/wt"));
        for d in [&gitdir, &victim] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(victim.join(COMMONDIR), "../..\n").unwrap();
        let before = noted(&gitdir);
        std::fs::rename(&gitdir, root.join("r/git.old")).unwrap();
        std::os::unix::fs::symlink(&victim, &gitdir).unwrap();
        before.remove_commondir();
        assert!(victim.join(COMMONDIR).exists(), "removed through the link");
        // Another real directory in its place: not the noted one either.
        std::fs::remove_file(&gitdir).unwrap();
        std::fs::create_dir(&gitdir).unwrap();
        std::fs::write(gitdir.join(COMMONDIR), "x").unwrap();
        before.remove_commondir();
        assert!(
            gitdir.join(COMMONDIR).exists(),
            "removed in another directory"
        );
        // The control: the noted directory, back in place, with one planted.
        std::fs::remove_dir_all(&gitdir).unwrap();
        std::fs::rename(root.join("r/git.old"), &gitdir).unwrap();
        std::fs::write(gitdir.join(COMMONDIR), "/elsewhere\n").unwrap();
        before.remove_commondir();
        assert!(gitdir.join(COMMONDIR).symlink_metadata().is_err(), "kept");
    }
}
