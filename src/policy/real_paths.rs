//! Real paths for many paths at once. `canonicalize` reads the link of
//! every component of every path it is given, and start-up resolves some
//! fifty paths that share a few parents (`/etc`, `$HOME/.config`): here
//! each parent is resolved once, and each path costs one `readlink`.
//!
//! One `readlink` tells a path's kind: `EINVAL` is a path that is there
//! and no link, `ENOENT` or `ENOTDIR` one that is not there.

use std::collections::HashMap;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// What one path is, as [`look`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Looked {
    /// A symbolic link, and what it says.
    Link(PathBuf),
    Present,
    Absent,
}

/// Looks at `path` itself (a link is not followed) with one `readlink`;
/// only another error (`EACCES` on the way) needs an `lstat` as well.
pub(crate) fn look(path: &Path) -> Looked {
    match std::fs::read_link(path) {
        Ok(target) => Looked::Link(target),
        Err(e) if e.kind() == ErrorKind::InvalidInput => Looked::Present,
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            Looked::Absent
        }
        Err(_) if path.symlink_metadata().is_ok() => Looked::Present,
        Err(_) => Looked::Absent,
    }
}

/// Real paths asked during one start-up, each resolved once.
#[derive(Debug, Default)]
pub(crate) struct RealPaths(HashMap<PathBuf, Option<PathBuf>>);

impl RealPaths {
    /// `canonicalize(path)`, asked of the kernel once per path.
    pub(crate) fn of(&mut self, path: &Path) -> Option<PathBuf> {
        self.0
            .entry(path.to_path_buf())
            .or_insert_with(|| path.canonicalize().ok())
            .clone()
    }

    /// `canonicalize(path)` through its parent's real path ([`Self::of`]):
    /// where the last component is no link, that and the name; where it
    /// is one, the whole path is resolved.
    pub(crate) fn through_parent(&mut self, path: &Path) -> Option<PathBuf> {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return path.canonicalize().ok();
        };
        // A path whose parent has no real path (missing, not a directory,
        // unreadable) has none either.
        let real_parent = self.of(parent)?;
        // `file_name` is never `.` or `..` (`components` drops the one,
        // and a path ending in the other has none), so the join is exact.
        match look(path) {
            Looked::Present => Some(real_parent.join(name)),
            Looked::Absent => None,
            Looked::Link(_) => path.canonicalize().ok(),
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// Both ways answer as `canonicalize` does, for every kind of path a
    /// built-in or a start-up file can be: a file, a directory, a link to
    /// either, a path through a linked parent, a dangling link, a missing
    /// path, a file used as a directory, and `..` on the way.
    #[test]
    fn real_paths_agree_with_canonicalize() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("etc/ssl")).unwrap();
        std::fs::write(root.join("etc/passwd"), "x").unwrap();
        std::fs::create_dir(root.join("usr")).unwrap();
        std::fs::write(root.join("usr/os-release"), "x").unwrap();
        symlink("../usr/os-release", root.join("etc/os-release")).unwrap();
        symlink("ssl", root.join("etc/certs")).unwrap();
        symlink("etc", root.join("linked")).unwrap();
        symlink("nowhere", root.join("etc/dangling")).unwrap();
        let paths = [
            "etc/passwd",
            "etc/ssl",
            "etc/os-release",
            "etc/certs",
            "linked/passwd",
            "linked/os-release",
            "etc/dangling",
            "etc/missing",
            "missing/passwd",
            "etc/passwd/below",
            "usr/../etc/passwd",
            "etc/ssl/..",
            "etc/ssl/.",
        ];
        let mut real = RealPaths::default();
        for rel in paths {
            let path = root.join(rel);
            let want = path.canonicalize().ok();
            assert_eq!(real.through_parent(&path), want, "{rel}");
            assert_eq!(real.of(&path), want, "{rel}");
        }
    }

    #[test]
    fn one_readlink_tells_links_present_and_absent_paths_apart() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("file"), "x").unwrap();
        std::os::unix::fs::symlink("file", root.join("link")).unwrap();
        assert_eq!(look(&root.join("link")), Looked::Link("file".into()));
        assert_eq!(look(&root.join("file")), Looked::Present);
        assert_eq!(look(root), Looked::Present);
        assert_eq!(look(&root.join("missing")), Looked::Absent);
        assert_eq!(look(&root.join("file/below")), Looked::Absent);
    }
}
