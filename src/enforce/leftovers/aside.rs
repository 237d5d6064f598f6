//! The quarantine: where the sweep moves what a run left behind, one
//! directory per run under the workspace's `.magus/quarantine/`, each
//! entry's former path flattened into its name (`src%2FHEAD`), so that no
//! directory there holds `HEAD`, `objects` and `refs` side by side for git
//! to take for a repository. A `MANIFEST` lists what came from where.
//! Where a rename into it is impossible (another file system), the entry
//! is renamed beside itself, `NAME.planted-during-magus-run.N`, which no
//! tool looks for.

use std::ffi::OsStr;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{openat, renameat2, OFlag, RenameFlags};
use nix::sys::stat::{fstat, fstatat, mkdirat, Mode};

use super::nofollow;
use super::{Findings, Outcome};

/// The quarantine, relative to the workspace root.
pub(crate) const QUARANTINE: &str = ".magus/quarantine";

/// This run's directory in the quarantine: its path (for what is said)
/// and a handle on it (for what is done).
struct RunDir {
    path: PathBuf,
    fd: OwnedFd,
}

pub(super) struct Quarantine {
    workspace: PathBuf,
    /// Made at the first entry set aside; `Err` once making it failed.
    dir: Option<Result<RunDir, ()>>,
    manifest: Vec<String>,
}

impl Quarantine {
    pub(super) fn new(workspace: &Path) -> Quarantine {
        Quarantine {
            workspace: workspace.to_path_buf(),
            dir: None,
            manifest: Vec::new(),
        }
    }

    /// Moves `path` (never what a link at `path` names) into the
    /// quarantine, else beside itself under a name no tool reads. The
    /// directory holding it is reached following no link
    /// ([`nofollow`]): another run's child may have swapped one in on the
    /// way since the walk saw it, and then nothing is moved.
    pub(super) fn set_aside(&mut self, path: &Path) -> Outcome {
        let (parent, name) = match nofollow::parent_of(path) {
            Ok(found) => found,
            Err(e) => return Outcome::Failed(format!("{e} (a link on the way to it?)")),
        };
        let flat = flat_name(&self.workspace, path);
        let moved = self.dir().and_then(|run| {
            let names = free_names(&flat);
            let to = rename_writable(parent.as_fd(), name, run.fd.as_fd(), &names).ok()?;
            Some((run.path.join(&to), to))
        });
        if let Some((moved_to, to)) = moved {
            let name = crate::diag::shown_name(OsStr::new(&to));
            self.manifest
                .push(format!("{name}\t{}", crate::diag::shown(path)));
            return Outcome::Moved(moved_to);
        }
        let planted: Vec<String> = (0..100).map(|n| planted_name(name, n)).collect();
        match rename_writable(parent.as_fd(), name, parent.as_fd(), &planted) {
            Ok(to) => Outcome::Moved(path.with_file_name(to)),
            Err(e) => Outcome::Failed(e.to_string()),
        }
    }

    /// Writes the manifest of this run's quarantine, if it holds anything.
    pub(super) fn finish(&self, findings: &mut Findings) {
        let Some(Ok(run)) = &self.dir else {
            return;
        };
        if self.manifest.is_empty() {
            return;
        }
        let text = format!(
            "# What a magus run left behind, set aside: NAME<TAB>WHERE IT WAS.\n\
             # To keep one, move it back: mv NAME 'WHERE IT WAS'\n\
             # (a control character in a name is written as an escape, \\u{{1b}})\n{}\n",
            self.manifest.join("\n")
        );
        if create_new(run.fd.as_fd(), "MANIFEST", text.as_bytes()).is_ok() {
            findings.manifest = Some(run.path.join("MANIFEST"));
        }
    }

    /// This run's directory in the quarantine, made on first use. Every
    /// step refuses a link where a directory should be (a child may have
    /// planted `.magus -> /etc`; magus may be root here), and each is
    /// made and opened beneath the handle of the one before.
    fn dir(&mut self) -> Option<&RunDir> {
        if self.dir.is_none() {
            self.dir = Some(make_run_dir(&self.workspace).ok_or(()));
        }
        self.dir.as_ref().and_then(|d| d.as_ref().ok())
    }
}

fn make_run_dir(workspace: &Path) -> Option<RunDir> {
    let root = nofollow::open_dir(workspace).ok()?;
    let (state, made) = real_dir(root.as_fd(), ".magus")?;
    if made {
        // The quarantine is not the project's: keep it out of commits.
        let _ = create_new(state.as_fd(), ".gitignore", b"*\n");
    }
    let (quarantine, _) = real_dir(state.as_fd(), "quarantine")?;
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let base = format!("run-{secs}-{}", std::process::id());
    (0..100)
        .map(|n| match n {
            0 => base.clone(),
            n => format!("{base}.{n}"),
        })
        .find_map(|name| {
            mkdirat(
                quarantine.as_fd(),
                name.as_str(),
                Mode::from_bits_truncate(0o755),
            )
            .ok()?;
            let fd = open_beneath(quarantine.as_fd(), OsStr::new(&name))?;
            Some(RunDir {
                path: workspace.join(QUARANTINE).join(&name),
                fd,
            })
        })
}

/// Makes `name` in `dir` unless it is there as a directory (not a link),
/// and opens it: `(handle, whether it was made)`, `None` otherwise.
fn real_dir(dir: BorrowedFd<'_>, name: &str) -> Option<(OwnedFd, bool)> {
    let made = match mkdirat(dir, name, Mode::from_bits_truncate(0o755)) {
        Ok(()) => true,
        Err(Errno::EEXIST) => false,
        Err(_) => return None,
    };
    Some((open_beneath(dir, OsStr::new(name))?, made))
}

/// The directory `name` in `dir`, never through a link.
fn open_beneath(dir: BorrowedFd<'_>, name: &OsStr) -> Option<OwnedFd> {
    let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    openat(dir, name, flags, Mode::empty()).ok()
}

/// Writes a new file `name` in `dir` (never through a link, never over
/// what is there).
fn create_new(dir: BorrowedFd<'_>, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW;
    let fd = openat(
        dir,
        name,
        flags | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o644),
    )?;
    std::fs::File::from(fd).write_all(bytes)
}

/// Renames `name` in `from` to the first free one of `names` in `into`
/// (never over an entry there), and returns that name. Where
/// the rename is refused for want of write permission (a child, as the
/// files' owner, may `chmod 555` the directory that holds what it
/// planted, or a planted directory itself, which a move to another
/// directory rewrites), gives the owner write permission to those
/// directories for the move and takes it away again after; both are
/// reached by handle, so the modes go back to the same inodes.
fn rename_writable(
    from: BorrowedFd<'_>,
    name: &OsStr,
    into: BorrowedFd<'_>,
    names: &[String],
) -> std::io::Result<String> {
    let refused = match rename_free(from, name, into, names) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => e,
        done => return done,
    };
    let moved_dir = open_beneath(from, name);
    let dirs = [Some(from), moved_dir.as_ref().map(AsFd::as_fd)];
    let mut lent = Vec::new();
    for dir in dirs.into_iter().flatten() {
        let Ok(st) = fstat(dir) else {
            continue;
        };
        let mode = st.st_mode & 0o7777;
        if mode & 0o200 == 0 && set_mode(dir, mode | 0o200).is_ok() {
            lent.push((dir, mode));
        }
    }
    if lent.is_empty() {
        return Err(refused);
    }
    let moved = rename_free(from, name, into, names);
    for (dir, mode) in lent {
        let _ = set_mode(dir, mode);
    }
    moved
}

/// `chmod` of the directory `dir` holds, through its handle.
fn set_mode(dir: BorrowedFd<'_>, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&dir));
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// [`rename_writable`]'s rename, to the first of `names` that is free.
fn rename_free(
    from: BorrowedFd<'_>,
    name: &OsStr,
    into: BorrowedFd<'_>,
    names: &[String],
) -> std::io::Result<String> {
    for candidate in names {
        match rename_no_replace(from, name, into, candidate) {
            Err(Errno::EEXIST) => continue,
            Err(e) => return Err(e.into()),
            Ok(()) => return Ok(candidate.clone()),
        }
    }
    Err(Errno::EEXIST.into())
}

/// Renames without replacing what `to` names; where the file system has
/// no `RENAME_NOREPLACE`, after checking that nothing is there.
fn rename_no_replace(
    from: BorrowedFd<'_>,
    name: &OsStr,
    into: BorrowedFd<'_>,
    to: &str,
) -> Result<(), Errno> {
    match renameat2(from, name, into, to, RenameFlags::RENAME_NOREPLACE) {
        Err(Errno::EINVAL) => {
            let flags = nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW;
            if fstatat(into, to, flags).is_ok() {
                return Err(Errno::EEXIST);
            }
            nix::fcntl::renameat(from, name, into, to)
        }
        other => other,
    }
}

/// `path` relative to the workspace (absolute elsewhere), `/` written
/// `%2F`, so the quarantine stays one flat directory.
fn flat_name(workspace: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(workspace).unwrap_or(path);
    let text = rel.to_string_lossy();
    text.trim_start_matches('/').replace('/', "%2F")
}

/// `name`, then `name.1` to `name.999`: where an entry goes in the
/// quarantine, the first that is free.
fn free_names(name: &str) -> Vec<String> {
    std::iter::once(name.to_string())
        .chain((1..1000).map(|n| format!("{name}.{n}")))
        .collect()
}

fn planted_name(name: &OsStr, n: u32) -> String {
    format!("{}.planted-during-magus-run.{n}", name.to_string_lossy())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_flat_and_relative_to_the_workspace() {
        let ws = Path::new("/w");
        let cases = [
            ("/w/src/HEAD", "src%2FHEAD"),
            ("/w/.git", ".git"),
            ("/home/u/.cargo/config", "home%2Fu%2F.cargo%2Fconfig"),
        ];
        for (path, flat) in cases {
            assert_eq!(flat_name(ws, Path::new(path)), flat, "{path}");
        }
    }

    #[test]
    fn a_linked_state_directory_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, ws.join(".magus")).unwrap();
        std::fs::write(ws.join("HEAD"), "x").unwrap();
        let mut q = Quarantine::new(&ws);
        let outcome = q.set_aside(&ws.join("HEAD"));
        assert_eq!(
            outcome,
            Outcome::Moved(ws.join("HEAD.planted-during-magus-run.0"))
        );
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    }

    /// The last step of a race with a child of another run of the same
    /// workspace: the walk listed `b/.vscode/id_rsa` in a directory, then
    /// the child made `b/.vscode` a link to `~/.ssh`. The rename followed
    /// the link and moved the user's key into the quarantine, where that
    /// child read it (the sweep runs outside every sandbox). Now nothing
    /// moves, and the key stays.
    #[test]
    fn a_link_swapped_in_on_the_way_moves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (ws, ssh) = (root.join("ws"), root.join("home/.ssh"));
        std::fs::create_dir_all(ws.join("b")).unwrap();
        std::fs::create_dir_all(&ssh).unwrap();
        std::fs::write(ssh.join("id_rsa"), "KEY").unwrap();
        std::os::unix::fs::symlink(&ssh, ws.join("b/.vscode")).unwrap();
        let mut q = Quarantine::new(&ws);
        let outcome = q.set_aside(&ws.join("b/.vscode/id_rsa"));
        assert!(matches!(outcome, Outcome::Failed(_)), "{outcome:?}");
        assert_eq!(std::fs::read_to_string(ssh.join("id_rsa")).unwrap(), "KEY");
        assert_eq!(std::fs::read_dir(&ssh).unwrap().count(), 1);
        // The link itself, a run-later name, still goes aside.
        let Outcome::Moved(to) = q.set_aside(&ws.join("b/.vscode")) else {
            panic!("the link was not moved");
        };
        assert!(to.symlink_metadata().unwrap().is_symlink());
        assert_eq!(std::fs::read_dir(&ssh).unwrap().count(), 1);
    }

    /// A planted directory the child made read-only, in a directory it
    /// made read-only, still moves, and both get their modes back.
    #[test]
    fn read_only_directories_move_and_keep_their_modes() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join("sub/.git/hooks")).unwrap();
        let ro = |p: &Path| std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o555));
        ro(&ws.join("sub/.git")).unwrap();
        ro(&ws.join("sub")).unwrap();
        let mut q = Quarantine::new(&ws);
        let Outcome::Moved(to) = q.set_aside(&ws.join("sub/.git")) else {
            panic!("not moved");
        };
        let mode = |p: &Path| p.metadata().unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&to), 0o555);
        assert_eq!(mode(&ws.join("sub")), 0o555);
        assert!(to.join("hooks").is_dir());
    }

    #[test]
    fn entries_move_into_one_flat_directory_with_a_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir_all(ws.join("src/objects")).unwrap();
        std::fs::write(ws.join("src/HEAD"), "x").unwrap();
        let mut q = Quarantine::new(ws);
        let Outcome::Moved(to) = q.set_aside(&ws.join("src/HEAD")) else {
            panic!("not moved");
        };
        assert!(to.starts_with(ws.join(QUARANTINE)));
        assert!(to.ends_with("src%2FHEAD"));
        let mut found = Findings::default();
        q.finish(&mut found);
        let manifest = std::fs::read_to_string(found.manifest.unwrap()).unwrap();
        assert!(manifest.contains("src%2FHEAD\t"), "{manifest}");
        assert_eq!(
            std::fs::read_to_string(ws.join(".magus/.gitignore")).unwrap(),
            "*\n"
        );
    }
}
