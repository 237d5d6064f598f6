//! The walk after the run: every directory of the workspace (up to a
//! budget), the top of every other writable grant, and the home
//! directory's start-up files. It reads entries by their own type, never
//! following a link, and looks only at what changed since the run began
//! (`ctime`, which no process can set back).

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fs::{FileType, Metadata};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::aside::{Quarantine, QUARANTINE};
use super::inert;
use super::names::{self, is, is_any};
use super::{Findings, Identity, Left, Seen, Stamp, Watch};

/// How many entries one sweep looks at, at most: beyond it the sweep
/// says so (`Findings::truncated`) instead of making the run's end slow.
pub const MAX_ENTRIES: usize = 500_000;

/// How deep a grant other than the workspace is walked: its entries and
/// theirs (a `.git` or `HEAD` one level down is a repository rooted at a
/// direct entry).
const GRANT_DEPTH: usize = 1;

pub(super) struct Scan<'a> {
    since: Stamp,
    stamps: &'a HashMap<PathBuf, Seen>,
    known: &'a HashMap<PathBuf, Identity>,
    skip: &'a HashSet<&'a Path>,
    quarantine_dir: PathBuf,
    workspace: PathBuf,
    quarantine: &'a mut Quarantine,
    found: &'a mut Findings,
    budget: usize,
}

/// One directory entry, as read.
struct Entry {
    name: OsString,
    path: PathBuf,
    kind: FileType,
    /// For `lstat` relative to the directory read (`fstatat`), which
    /// costs half of one by the whole path on a deep tree.
    dirent: std::fs::DirEntry,
}

/// Where a directory lies, for what is looked for in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Within {
    Workspace,
    Grant,
    /// Inside `.vscode` or `.idea`: every changed file is a run-later file.
    EditorConfig,
}

impl<'a> Scan<'a> {
    pub(super) fn new(
        watch: &'a Watch,
        skip: &'a HashSet<&'a Path>,
        quarantine: &'a mut Quarantine,
        found: &'a mut Findings,
    ) -> Scan<'a> {
        Scan {
            since: watch.since,
            stamps: &watch.stamps,
            known: &watch.known,
            skip,
            quarantine_dir: watch.inputs.workspace.join(QUARANTINE),
            workspace: watch.inputs.workspace.clone(),
            quarantine,
            found,
            budget: MAX_ENTRIES,
        }
    }

    pub(super) fn workspace(&mut self, root: &Path) {
        self.walk(root, Within::Workspace, usize::MAX);
    }

    pub(super) fn grant(&mut self, root: &Path) {
        self.walk(root, Within::Grant, GRANT_DEPTH);
    }

    /// A start-up file (or directory) of the home directory: set aside
    /// when the run made or changed it, or anything in it.
    pub(super) fn home_file(&mut self, path: &Path) {
        if self.skip.contains(path) || !super::unmoved(path) {
            return;
        }
        let Ok(meta) = path.symlink_metadata() else {
            return;
        };
        if !meta.is_dir() {
            self.set_aside_if_changed(path, &meta, Left::StartupFile);
            return;
        }
        let mut pending = vec![path.to_path_buf()];
        while let Some(dir) = pending.pop() {
            for entry in self.read(&dir) {
                match entry.kind.is_dir() {
                    true => pending.push(entry.path),
                    false => self.set_aside_path_if_changed(&entry.path, Left::StartupFile),
                }
            }
        }
    }

    fn walk(&mut self, root: &Path, within: Within, max_depth: usize) {
        let mut pending = vec![(root.to_path_buf(), within, 0usize)];
        while let Some((dir, within, depth)) = pending.pop() {
            let entries = self.read(&dir);
            let names: Vec<&OsString> = entries.iter().map(|e| &e.name).collect();
            self.look_for_repositories(&dir, &entries, &names);
            for entry in entries {
                if let Some(next) = self.look_at(&dir, entry, within) {
                    if depth < max_depth {
                        pending.push((next.0, next.1, depth + 1));
                    }
                }
            }
        }
    }

    /// One entry: set aside or listed as it needs; the directory to walk
    /// next, if it is one.
    fn look_at(&mut self, dir: &Path, entry: Entry, within: Within) -> Option<(PathBuf, Within)> {
        let Entry {
            name,
            path,
            kind,
            dirent,
        } = entry;
        if self.skip.contains(path.as_path()) {
            return None;
        }
        if kind.is_dir() {
            return self.subdir(&name, path, within);
        }
        let run_later = within == Within::EditorConfig
            || is_any(&name, &names::RUN_LATER_FILES)
            || in_cargo_dir(dir) && is_any(&name, &names::CARGO_CONFIGS);
        if run_later {
            self.set_aside_path_if_changed(&path, Left::RunLater);
        } else if within == Within::Workspace && kind.is_file() {
            self.list_if_executable(&path, &dirent);
        }
        None
    }

    fn subdir(&self, name: &OsString, path: PathBuf, within: Within) -> Option<(PathBuf, Within)> {
        // Repositories (known, or just set aside) are not walked into; nor
        // is the quarantine.
        if is(name, ".git") || self.known.contains_key(&path) || path == self.quarantine_dir {
            return None;
        }
        let within = match is_any(name, &names::EDITOR_DIRS) {
            true => Within::EditorConfig,
            false => within,
        };
        Some((path, within))
    }

    /// A `.git` that was not there when the run began; `HEAD`, `objects`
    /// and `refs` side by side where there was no repository.
    fn look_for_repositories(&mut self, dir: &Path, entries: &[Entry], names: &[&OsString]) {
        for entry in entries.iter().filter(|e| is(&e.name, ".git")) {
            if !self.is_known(&entry.path) && !self.is_inert_repository(entry) {
                self.set_aside_path_if_changed(&entry.path, Left::Repository);
            }
        }
        let has = |wanted: &str| names.iter().any(|n| is(n, wanted));
        let bare = names::BARE_REPOSITORY.iter().all(|w| has(w));
        if !bare || self.is_known(dir) || inert::is_inert(dir, &|p| self.is_known(p)) {
            return;
        }
        let parts = || {
            entries
                .iter()
                .filter(|e| is_any(&e.name, &names::BARE_REPOSITORY))
        };
        let made_now = parts().any(|e| self.changed(&e.path));
        if !made_now {
            return;
        }
        let code = entries
            .iter()
            .filter(|e| is(&e.name, "HEAD") || is_any(&e.name, &names::BARE_REPOSITORY_CODE));
        let paths: Vec<PathBuf> = code.map(|e| e.path.clone()).collect();
        for path in paths {
            let outcome = self.quarantine.set_aside(&path);
            self.found.push(&path, Left::BareRepository, outcome);
        }
    }

    /// A new `.git` git would only read (see [`inert`]): a directory, or a
    /// `.git` file naming one in the workspace. A link is never inert.
    fn is_inert_repository(&self, entry: &Entry) -> bool {
        let known = |p: &Path| self.is_known(p);
        if entry.kind.is_dir() {
            return inert::is_inert(&entry.path, &known);
        }
        if !entry.kind.is_file() {
            return false;
        }
        inert::gitlink_target(&entry.path).is_some_and(|gitdir| {
            gitdir.starts_with(&self.workspace)
                && gitdir.is_dir()
                && inert::is_inert(&gitdir, &known)
        })
    }

    /// A repository there at the start, still the same one.
    fn is_known(&self, path: &Path) -> bool {
        let now = Identity::of(path);
        now.is_some() && self.known.get(path) == now.as_ref()
    }

    fn list_if_executable(&mut self, path: &Path, dirent: &std::fs::DirEntry) {
        // Never follows a final link (`DirEntry::metadata`).
        let Ok(meta) = dirent.metadata() else {
            return;
        };
        if meta.permissions().mode() & 0o111 != 0 && Stamp::changed(&meta) >= self.since {
            self.found.executables.push(path.to_path_buf());
        }
    }

    fn changed(&self, path: &Path) -> bool {
        path.symlink_metadata()
            .is_ok_and(|m| Seen::changed(self.stamps.get(path), path, &m, self.since))
    }

    fn set_aside_path_if_changed(&mut self, path: &Path, left: Left) {
        if let Ok(meta) = path.symlink_metadata() {
            self.set_aside_if_changed(path, &meta, left);
        }
    }

    fn set_aside_if_changed(&mut self, path: &Path, meta: &Metadata, left: Left) {
        if !Seen::changed(self.stamps.get(path), path, meta, self.since) {
            return;
        }
        let outcome = self.quarantine.set_aside(path);
        self.found.push(path, left, outcome);
    }

    /// A directory's entries, within the budget.
    fn read(&mut self, dir: &Path) -> Vec<Entry> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut read = Vec::new();
        for entry in entries.flatten() {
            if self.budget == 0 {
                self.found.truncated = true;
                break;
            }
            self.budget -= 1;
            self.found.entries += 1;
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            read.push(Entry {
                name: entry.file_name(),
                path: entry.path(),
                kind,
                dirent: entry,
            });
        }
        read
    }
}

fn in_cargo_dir(dir: &Path) -> bool {
    dir.file_name().is_some_and(|n| is(n, names::CARGO_DIR))
}
