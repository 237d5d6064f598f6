//! The temporary directory of a run with no jail of its own, made before
//! any restriction and removed by the supervisor once every process of
//! the run has ended.
//!
//! Why: the jail gives a run its own `/tmp`; without it the host's `/tmp`
//! is not granted (`policy::unjailed` says why), and programs still need
//! somewhere to put temporary files. A fresh directory, `0700`, made with
//! `mkdtemp` under the host's temporary directory, is granted instead and
//! handed to children as `$TMPDIR`: no other process of this user's runs
//! can reach it (it is in no other run's grants), and nothing written
//! there outlives the run. Removal goes through `remove_dir_all`, which
//! follows no link the run may have left inside.

use std::path::{Path, PathBuf};

/// The prefix of the directory's name, so a user who finds one left (the
/// supervisor could not start, or was killed) knows whose it is.
const PREFIX: &str = "magus-run-";

/// A run's own temporary directory, on the host.
#[derive(Debug)]
pub(crate) struct RunTemp {
    path: PathBuf,
}

impl RunTemp {
    /// Makes the directory under `parent` (the host's `$TMPDIR` when it is
    /// an absolute path), else under `/tmp`.
    pub(crate) fn make(parent: Option<&Path>) -> nix::Result<RunTemp> {
        let parents = parent
            .filter(|p| p.is_absolute())
            .into_iter()
            .chain([Path::new("/tmp")]);
        let mut last = nix::errno::Errno::ENOENT;
        for dir in parents {
            match nix::unistd::mkdtemp(&dir.join(format!("{PREFIX}XXXXXX"))) {
                Ok(path) => return Ok(RunTemp { path }),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the directory and everything in it. Call once no process
    /// of the run is left.
    pub(crate) fn discard(&self) -> std::io::Result<()> {
        match std::fs::remove_dir_all(&self.path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    #[test]
    fn the_directory_is_private_and_discarded_without_following_links() {
        let parent = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let kept = outside.path().join("kept");
        std::fs::write(&kept, "mine").unwrap();
        let run = RunTemp::make(Some(parent.path())).unwrap();
        assert!(run.path().starts_with(parent.path()));
        let mode = std::fs::metadata(run.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::create_dir(run.path().join("d")).unwrap();
        std::fs::write(run.path().join("d/f"), "x").unwrap();
        symlink(outside.path(), run.path().join("link")).unwrap();
        run.discard().unwrap();
        assert!(!run.path().exists());
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "mine");
        run.discard().unwrap();
    }

    #[test]
    fn a_relative_or_missing_parent_falls_back_to_tmp() {
        for parent in [
            Path::new("relative"),
            Path::new("/nonexistent-magus-parent"),
        ] {
            let run = RunTemp::make(Some(parent)).unwrap();
            assert!(run.path().starts_with("/tmp"), "{}", run.path().display());
            run.discard().unwrap();
        }
    }
}
