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
use std::path::{Path, PathBuf};

use super::{Findings, Outcome};

/// The quarantine, relative to the workspace root.
pub(crate) const QUARANTINE: &str = ".magus/quarantine";

pub(super) struct Quarantine {
    workspace: PathBuf,
    /// Made at the first entry set aside; `Err` once making it failed.
    dir: Option<Result<PathBuf, ()>>,
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
    /// quarantine, else beside itself under a name no tool reads.
    pub(super) fn set_aside(&mut self, path: &Path) -> Outcome {
        if let Some(dir) = self.dir() {
            let to = free_name(&dir, &flat_name(&self.workspace, path));
            if rename_writable(path, &to).is_ok() {
                let name = crate::diag::shown_name(to.file_name().unwrap_or_default());
                self.manifest
                    .push(format!("{name}\t{}", crate::diag::shown(path)));
                return Outcome::Moved(to);
            }
        }
        let Some(name) = path.file_name() else {
            return Outcome::Failed("it has no name to rename".into());
        };
        let aside = (0..100)
            .map(|n| path.with_file_name(planted_name(name, n)))
            .find(|p| p.symlink_metadata().is_err());
        match aside.map(|to| rename_writable(path, &to).map(|()| to)) {
            Some(Ok(to)) => Outcome::Moved(to),
            Some(Err(e)) => Outcome::Failed(e.to_string()),
            None => Outcome::Failed("no free name beside it".into()),
        }
    }

    /// Writes the manifest of this run's quarantine, if it holds anything.
    pub(super) fn finish(&self, findings: &mut Findings) {
        let Some(Ok(dir)) = &self.dir else {
            return;
        };
        if self.manifest.is_empty() {
            return;
        }
        let path = dir.join("MANIFEST");
        let text = format!(
            "# What a magus run left behind, set aside: NAME<TAB>WHERE IT WAS.\n\
             # To keep one, move it back: mv NAME 'WHERE IT WAS'\n\
             # (a control character in a name is written as an escape, \\u{{1b}})\n{}\n",
            self.manifest.join("\n")
        );
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .and_then(|mut f| f.write_all(text.as_bytes()));
        if written.is_ok() {
            findings.manifest = Some(path);
        }
    }

    /// This run's directory in the quarantine, made on first use. Every
    /// step refuses a link where a directory should be (a child may have
    /// planted `.magus -> /etc`; magus may be root here).
    fn dir(&mut self) -> Option<PathBuf> {
        if self.dir.is_none() {
            self.dir = Some(make_run_dir(&self.workspace).ok_or(()));
        }
        self.dir.as_ref().and_then(|d| d.as_ref().ok()).cloned()
    }
}

fn make_run_dir(workspace: &Path) -> Option<PathBuf> {
    let state = workspace.join(".magus");
    let made = real_dir(&state)?;
    if made {
        // The quarantine is not the project's: keep it out of commits.
        let _ = std::fs::write(state.join(".gitignore"), "*\n");
    }
    let quarantine = workspace.join(QUARANTINE);
    real_dir(&quarantine)?;
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let base = format!("run-{secs}-{}", std::process::id());
    (0..100)
        .map(|n| match n {
            0 => quarantine.join(&base),
            n => quarantine.join(format!("{base}.{n}")),
        })
        .find(|dir| std::fs::create_dir(dir).is_ok())
}

/// Makes `dir` unless it exists as a directory (not a link): `Some(true)`
/// when made, `Some(false)` when it was there, `None` otherwise.
fn real_dir(dir: &Path) -> Option<bool> {
    match dir.symlink_metadata() {
        Ok(meta) if meta.is_dir() => Some(false),
        Ok(_) => None,
        Err(_) => std::fs::create_dir(dir).ok().map(|()| true),
    }
}

/// Renames `from` to `to`; where that is refused for want of write
/// permission (a child, as the files' owner, may `chmod 555` the directory
/// that holds what it planted, or a planted directory itself, which a
/// move to another directory rewrites), gives the owner write permission
/// to those directories for the move and takes it away again after.
fn rename_writable(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let refused = match std::fs::rename(from, to) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => e,
        done => return done,
    };
    let dirs = [from.parent(), Some(from)];
    let mut lent = Vec::new();
    for dir in dirs.into_iter().flatten() {
        let Ok(meta) = dir.symlink_metadata() else {
            continue;
        };
        let mode = meta.permissions().mode();
        if meta.is_dir() && mode & 0o200 == 0 {
            let wider = std::fs::Permissions::from_mode(mode | 0o200);
            if std::fs::set_permissions(dir, wider).is_ok() {
                lent.push((dir.to_path_buf(), mode));
            }
        }
    }
    if lent.is_empty() {
        return Err(refused);
    }
    let moved = std::fs::rename(from, to);
    for (dir, mode) in lent {
        // The moved directory is now at `to`.
        let now = match moved.is_ok() && dir == from {
            true => to.to_path_buf(),
            false => dir,
        };
        let _ = std::fs::set_permissions(now, std::fs::Permissions::from_mode(mode));
    }
    moved
}

/// `path` relative to the workspace (absolute elsewhere), `/` written
/// `%2F`, so the quarantine stays one flat directory.
fn flat_name(workspace: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(workspace).unwrap_or(path);
    let text = rel.to_string_lossy();
    text.trim_start_matches('/').replace('/', "%2F")
}

fn free_name(dir: &Path, name: &str) -> PathBuf {
    (0..1000)
        .map(|n| match n {
            0 => dir.join(name),
            n => dir.join(format!("{name}.{n}")),
        })
        .find(|p| p.symlink_metadata().is_err())
        .unwrap_or_else(|| dir.join(format!("{name}.{}", std::process::id())))
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
