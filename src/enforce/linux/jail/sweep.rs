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
//! - a `.git` at the root of a workspace that lies inside the user's
//!   repository (`monorepo/app`), where there was none: git finds it
//!   before the repository above, so a child's `git init` with a
//!   `core.fsmonitor` (or a `.git` file naming a planted directory) would
//!   run at the user's next `git status` there. It is kept aside, renamed.
//!   So is a `HEAD` a child made there beside `objects` and `refs`: git
//!   takes a directory holding those for a bare repository before it looks
//!   further up (and a `config` beside them with `core.worktree` gives that
//!   repository the workspace as its work tree), so the same `git status`
//!   ran its `core.fsmonitor`. Without `HEAD` it is no repository to git.

use std::os::fd::AsFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{readlinkat, renameat, AtFlags};
use nix::sys::stat::{fstat, fstatat};
use nix::unistd::symlinkat;

use super::plan::JailPlan;
use super::protect::{CarveReason, KeptLink};

/// The `commondir` files that did not exist when the run started.
#[derive(Debug, Default)]
pub struct Sweep {
    absent: Vec<PathBuf>,
    links: Vec<NotedLink>,
    /// The workspace root's missing `.git` (`JailPlan::shadowing_git`).
    shadowing_git: Option<PathBuf>,
    /// The same root's `HEAD`, missing when the run started: one there
    /// after it, beside `objects` and `refs`, makes the root a bare
    /// repository to git.
    shadowing_head: Option<PathBuf>,
}

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
    pub fn before(plan: &JailPlan) -> Sweep {
        let absent = plan
            .carve_outs()
            .filter(|(path, reason)| **reason == CarveReason::GitCode && path.ends_with("hooks"))
            .filter_map(|(hooks, _)| hooks.parent())
            // A symlinked `hooks` is carved where it leads, which need not
            // be a git directory.
            .filter(|dir| dir.ends_with(".git") || dir.join("HEAD").is_file())
            .map(|gitdir| gitdir.join("commondir"))
            .filter(|file| file.symlink_metadata().is_err())
            .collect();
        let links = plan
            .links
            .iter()
            .filter_map(|link| {
                let meta = std::fs::symlink_metadata(&link.dir).ok()?;
                Some(NotedLink {
                    link: link.clone(),
                    dev: meta.dev(),
                    ino: meta.ino(),
                })
            })
            .collect();
        let shadowing_git = plan
            .shadowing_git
            .clone()
            .filter(|git| git.symlink_metadata().is_err());
        let shadowing_head = plan
            .shadowing_git
            .as_ref()
            .map(|git| git.with_file_name("HEAD"))
            .filter(|head| head.symlink_metadata().is_err());
        Sweep {
            absent,
            links,
            shadowing_git,
            shadowing_head,
        }
    }

    /// Once the run's PID namespace is gone: removes every noted
    /// `commondir` that now exists (a file or a symlink; a directory makes
    /// git stop, which runs nothing) and says so on stderr.
    pub fn after(&self) {
        for file in &self.absent {
            let Ok(meta) = file.symlink_metadata() else {
                continue;
            };
            if meta.is_dir() {
                continue;
            }
            let outcome = match std::fs::remove_file(file) {
                Ok(()) => "magus removed it".to_string(),
                Err(e) => format!("magus could not remove it ({e}): remove it before running git"),
            };
            say(file, &outcome);
        }
        for noted in &self.links {
            noted.put_back();
        }
        if let Some(git) = &self.shadowing_git {
            set_aside_shadowing_git(git);
        }
        if let Some(head) = self
            .shadowing_head
            .as_deref()
            .filter(|h| makes_a_bare_repository(h))
        {
            set_aside_shadowing_git(head);
        }
    }
}

/// Whether `head` and its siblings `objects` and `refs` all exist: what
/// git asks of a directory before it uses it as a repository (it checks
/// those two with `access`, so a file would do as well as a directory).
fn makes_a_bare_repository(head: &Path) -> bool {
    ["HEAD", "objects", "refs"]
        .iter()
        .all(|name| head.with_file_name(name).symlink_metadata().is_ok())
}

/// Renames a `.git` (or `HEAD`) a child made at the workspace root (see
/// the module doc) to `NAME.planted-during-magus-run.N`, and says so.
/// `rename` moves a link itself, never what it names.
fn set_aside_shadowing_git(git: &Path) {
    if git.symlink_metadata().is_err() {
        return;
    }
    let Some(name) = git.file_name().and_then(|n| n.to_str()) else {
        return;
    };
    let taken = |name: &str| git.with_file_name(name).symlink_metadata().is_ok();
    let aside = free_aside(name, taken).map(|name| git.with_file_name(name));
    let outcome = match aside.map(|to| std::fs::rename(git, &to).map(|()| to)) {
        Some(Ok(to)) => format!("magus moved it to `{}`", to.display()),
        Some(Err(e)) => format!("magus could not move it ({e}): remove it before running git"),
        None => "magus could not move it: remove it before running git".to_string(),
    };
    let text = format!(
        "warning[MGS2002]: a child created `{}` in a workspace that lies inside a git \
         repository; git would take it for that repository and run the commands its config \
         names outside the sandbox; {outcome}\n",
        git.display()
    );
    let _ = nix::unistd::write(std::io::stderr(), text.as_bytes());
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
        let Ok(handle) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(dir)
        else {
            return; // Gone or swapped for a link: nothing of ours to fix.
        };
        let fd = handle.as_fd();
        match fstat(fd) {
            Ok(st) if st.st_dev == self.dev && st.st_ino == self.ino => {}
            _ => return, // Another directory now stands at that path.
        }
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
            "warning[MGS2002]: a child changed `{}`, a symbolic link to a path children may \
             not write ({reason}); {outcome}\n",
            dir.join(name).display()
        );
        let _ = nix::unistd::write(std::io::stderr(), text.as_bytes());
    }
}

fn say(file: &Path, outcome: &str) {
    let text = format!(
        "warning[MGS2002]: a child created `{}`, which would make git take its config and \
         hooks from another directory and run their commands outside the sandbox; {outcome}\n",
        file.display()
    );
    let _ = nix::unistd::write(std::io::stderr(), text.as_bytes());
}
