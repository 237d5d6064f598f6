//! The walk after the run: every directory of the workspace (up to a
//! budget), the top of every other writable grant, and the home
//! directory's start-up files. It reads entries by their own type, never
//! following a link, and looks only at what changed since the run began
//! (`ctime`, which no process can set back).

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs::{FileType, Metadata};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::aside::{Quarantine, QUARANTINE};
use super::inert;
use super::names::{self, is, is_any};
use super::{Executables, Findings, Identity, Left, Outcome, Seen, Stamp, Watch};

/// How many entries one sweep looks at, at most: beyond it the sweep
/// says so (`Findings::truncated`) instead of making the run's end slow.
pub(super) const MAX_ENTRIES: usize = 500_000;

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
    /// The workspace and the other writable grants: the tops a child
    /// cannot move, below which [`Scan::moved_in`] looks.
    roots: Vec<PathBuf>,
    quarantine: &'a mut Quarantine,
    found: &'a mut Findings,
    budget: usize,
    executables: Executables,
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

/// How deep [`Scan::linked_run_later_dir`] looks where a link leads.
const LINKED_DEPTH: usize = 4;

/// Where a directory lies, for what is looked for in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Within {
    Workspace,
    Grant,
    /// Inside a run-later directory (`names::RUN_LATER_DIRS`: `.vscode`,
    /// `.mvn`, `mise`...): every changed file is a run-later file.
    RunLaterDir,
}

impl<'a> Scan<'a> {
    pub(super) fn new(
        watch: &'a Watch,
        skip: &'a HashSet<&'a Path>,
        quarantine: &'a mut Quarantine,
        found: &'a mut Findings,
        executables: Executables,
    ) -> Scan<'a> {
        Scan {
            since: watch.since,
            stamps: &watch.stamps,
            known: &watch.known,
            skip,
            quarantine_dir: watch.inputs.workspace.join(QUARANTINE),
            workspace: watch.inputs.workspace.clone(),
            roots: std::iter::once(&watch.inputs.workspace)
                .chain(&watch.inputs.grants)
                .cloned()
                .collect(),
            quarantine,
            found,
            budget: MAX_ENTRIES,
            executables,
        }
    }

    /// The workspace: every directory where `directories` is unknown or
    /// the executables are listed (each file is looked at); else only the
    /// directories changed since the start, and what is new in them.
    pub(super) fn workspace(&mut self, root: &Path, directories: Option<&[PathBuf]>) {
        if !is_real_dir(root) {
            return;
        }
        match (directories, self.executables) {
            (Some(dirs), Executables::Skip) => self.changed_directories(root, dirs),
            _ => self.walk(root, Within::Workspace, usize::MAX),
        }
    }

    /// Reads each of `dirs` (the workspace's, at the start) whose `ctime`
    /// says an entry was made, renamed or removed in it during the run,
    /// and walks whole each directory in it that was not there.
    fn changed_directories(&mut self, root: &Path, dirs: &[PathBuf]) {
        let known: HashSet<&Path> = dirs.iter().map(PathBuf::as_path).collect();
        for dir in dirs {
            let changed = dir
                .symlink_metadata()
                .is_ok_and(|m| m.is_dir() && Stamp::changed(&m).at_or_after(self.since));
            if !changed || !super::unmoved(dir) && dir != root {
                continue;
            }
            let Some(within) = self.within(root, dir) else {
                continue;
            };
            for (next, within) in self.visit(dir, within) {
                if !known.contains(next.as_path()) {
                    self.walk(&next, within, usize::MAX);
                }
            }
        }
    }

    /// How `dir`, below the workspace `root`, is looked at; `None` where
    /// the walk would not go (a repository, the quarantine).
    fn within(&self, root: &Path, dir: &Path) -> Option<Within> {
        let rest = dir.strip_prefix(root).ok()?;
        let mut within = Within::Workspace;
        let mut at = root.to_path_buf();
        for name in rest.components().map(|c| c.as_os_str()) {
            at.push(name);
            if is(name, ".git") || self.known.contains_key(&at) || at == self.quarantine_dir {
                return None;
            }
            if names::is_run_later_dir(&at) {
                within = Within::RunLaterDir;
            }
        }
        Some(within)
    }

    /// A run-later file or directory there at the start: set aside where
    /// the run changed it (or, in a directory, what it changed in it).
    pub(super) fn existing_run_later(&mut self, path: &Path) {
        if self.skip.contains(path) || !super::unmoved(path) {
            return;
        }
        let Ok(meta) = path.symlink_metadata() else {
            return;
        };
        let name = path.file_name().unwrap_or_default();
        match meta.is_dir() {
            true if names::is_run_later_dir(path) => {
                self.walk(path, Within::RunLaterDir, usize::MAX)
            }
            true if is(name, names::CARGO_DIR) => {
                for config in names::CARGO_CONFIGS {
                    self.set_aside_path_if_changed(&path.join(config), Left::RunLater);
                }
            }
            true if is(name, names::PYCACHE) => self.bytecode_in(path),
            true => {}
            false if is_any(name, &names::VERSION_FILES) && !inert::version_names_a_path(path) => {}
            false => {
                if meta.is_symlink() {
                    self.linked_run_later_dir(path, name);
                }
                self.set_aside_if_changed(path, &meta, Left::RunLater);
            }
        }
    }

    /// The bytecode in a `__pycache__` there at the start: each file
    /// the run wrote, in place or anew, is removed; the user's own (its
    /// `ctime` as noted) stays.
    fn bytecode_in(&mut self, dir: &Path) {
        let name = dir.file_name().unwrap_or_default();
        for entry in self.read(dir) {
            if !entry.kind.is_dir() && names::is_bytecode(name, &entry.name) {
                self.remove_bytecode_if_changed(&entry.path);
            }
        }
    }

    pub(super) fn grant(&mut self, root: &Path) {
        // A grant a child swapped for a link (its parent granted too)
        // would send the walk, and the renames, elsewhere.
        if is_real_dir(root) {
            self.walk(root, Within::Grant, GRANT_DEPTH);
        }
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
            let next = self.visit(&dir, within);
            if depth < max_depth {
                pending.extend(next.into_iter().map(|(d, w)| (d, w, depth + 1)));
            }
        }
    }

    /// Looks at what `dir` holds; returns the directories in it to walk.
    fn visit(&mut self, dir: &Path, within: Within) -> Vec<(PathBuf, Within)> {
        let entries = self.read(dir);
        let names: Vec<&OsString> = entries.iter().map(|e| &e.name).collect();
        self.look_for_repositories(dir, &entries, &names);
        entries
            .into_iter()
            .filter_map(|entry| self.look_at(dir, entry, within))
            .collect()
    }

    /// One entry: set aside or listed as it needs; the directory to walk
    /// next, if it is one.
    fn look_at(&mut self, dir: &Path, entry: Entry, within: Within) -> Option<(PathBuf, Within)> {
        // Most entries are plain files no name here matches: they cost a
        // name comparison, and no path is built for them.
        let Entry {
            name,
            path,
            kind,
            dirent,
        } = entry;
        if kind.is_dir() {
            return self.subdir(&name, path, within);
        }
        let bytecode = dir
            .file_name()
            .is_some_and(|d| names::is_bytecode(d, &name));
        if bytecode && !names::in_installed_packages(dir) {
            self.remove_bytecode_if_changed(&path);
            return None;
        }
        // A `__pycache__` reached here is not a directory: a link sends
        // Python's `import` to the bytecode where it points. So does a link
        // named as a run-later directory send its tool to the files where
        // it points, which the walk (following no link) never sees there
        // under that name: cargo reads `.cargo/config.toml` through a
        // `.cargo` link to `build/c/`.
        let run_later = within == Within::RunLaterDir
            || within == Within::Workspace && self.shadows_python(dir, &name, &kind)
            || within == Within::Workspace && names::shadows_source(dir, &name)
            || names::is_run_later_file(&name)
            || names::is_nested_file(dir, &name)
            || is_any(&name, &names::VERSION_FILES) && inert::version_names_a_path(&path)
            || kind.is_symlink() && names::is_run_later_dir(&path)
            || kind.is_symlink() && is(&name, names::CARGO_DIR)
            || is(&name, names::PYCACHE) && !names::in_installed_packages(dir)
            || in_cargo_dir(dir) && is_any(&name, &names::CARGO_CONFIGS);
        if kind.is_symlink() {
            self.linked_run_later_dir(&path, &name);
        }
        if run_later && !self.skip.contains(path.as_path()) {
            self.set_aside_path_if_changed(&path, Left::RunLater);
        } else if !run_later
            && within == Within::Workspace
            && kind.is_file()
            && self.executables == Executables::List
        {
            self.list_if_executable(&path, &dirent);
        }
        None
    }

    /// Whether the entry `name` of `dir` is a module Python imports in
    /// place of its own when it runs at the workspace root
    /// ([`names::PYTHON_MODULES`]): a module file there, a link there that
    /// names a package, or the `__init__` of a package there.
    fn shadows_python(&self, dir: &Path, name: &OsString, kind: &FileType) -> bool {
        if dir == self.workspace {
            return names::is_python_module_file(name)
                || kind.is_symlink() && names::is_python_module(name);
        }
        dir.parent() == Some(self.workspace.as_path())
            && dir.file_name().is_some_and(names::is_python_module)
            && names::is_package_init(name)
    }

    /// A link named as a run-later directory (`.vscode`, `.cargo`...),
    /// made by the run or there before it: the tool reads the files where
    /// it leads, which the walk, following no link, meets under other
    /// names. A red-team run rewrote `shared/cargo/config.toml`, which the
    /// user's own `crate/.cargo -> ../shared/cargo` gave the next `cargo
    /// build`. Where the link leads inside the workspace or another
    /// writable grant, that directory is looked at as the one it stands
    /// for; elsewhere the run could not write (and the sweep moves
    /// nothing outside them).
    fn linked_run_later_dir(&mut self, link: &Path, name: &OsStr) {
        if !names::is_run_later_dir(link) && !is(name, names::CARGO_DIR) {
            return;
        }
        let Ok(target) = link.canonicalize() else {
            return;
        };
        let inside = self.roots.iter().any(|root| target.starts_with(root));
        let is_dir = target.symlink_metadata().is_ok_and(|m| m.is_dir());
        // Never into a repository's git directory (a `.vscode -> .git`
        // would have the run's own commits set aside) nor the quarantine.
        let in_git = self.known.keys().any(|gitdir| target.starts_with(gitdir));
        if !inside || !is_dir || in_git || target.starts_with(&self.quarantine_dir) {
            return;
        }
        if is(name, names::CARGO_DIR) {
            for config in names::CARGO_CONFIGS {
                self.set_aside_path_if_changed(&target.join(config), Left::RunLater);
            }
            return;
        }
        self.walk(&target, Within::RunLaterDir, LINKED_DEPTH);
    }

    fn subdir(&self, name: &OsString, path: PathBuf, within: Within) -> Option<(PathBuf, Within)> {
        // Repositories (known, or just set aside) are not walked into; nor
        // is the quarantine, nor a protected directory (noted, and put
        // back on its own).
        let skipped = is(name, ".git")
            || self.known.contains_key(&path)
            || path == self.quarantine_dir
            || self.skip.contains(path.as_path());
        if skipped {
            return None;
        }
        let within = match names::is_run_later_dir(&path) {
            true => Within::RunLaterDir,
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
        // Mercurial's: its `hgrc` runs `[hooks]` and loads `[extensions]`
        // at any `hg` command there.
        for entry in entries.iter().filter(|e| is(&e.name, ".hg")) {
            let inert = entry.kind.is_dir() && inert::hg_is_inert(&entry.path);
            if !self.is_known(&entry.path) && !inert {
                self.set_aside_path_if_changed(&entry.path, Left::Repository);
            }
        }
        let has = |wanted: &str| names.iter().any(|n| is(n, wanted));
        // Git takes a directory with `HEAD` for its git directory when it
        // also holds `objects` and `refs`, or a `commondir` naming a
        // directory that does (whose config and hooks git then obeys): a
        // red-team run planted `src/HEAD` and `src/commondir` pointing
        // into `.git`, which the walk does not enter, and `git log` in
        // `src` ran the planted pager.
        let bare =
            names::BARE_REPOSITORY.iter().all(|w| has(w)) || (has("HEAD") && has("commondir"));
        if !bare || self.is_known(dir) || inert::is_inert(dir, &|p| self.is_known(p)) {
            return;
        }
        let parts = || {
            entries
                .iter()
                .filter(|e| is_any(&e.name, &names::BARE_REPOSITORY) || is(&e.name, "commondir"))
        };
        let made_now = self.arrived(dir) || parts().any(|e| self.changed(&e.path));
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

    /// New git directories in a repository's `modules/` (a submodule's,
    /// at any depth: a name may hold `/`, a nested submodule's is in its
    /// parent's `modules/`), and links there or for `modules/` itself.
    /// `git submodule update` uses one it finds at `modules/NAME` instead
    /// of cloning, and runs what its config and hooks name; the jail
    /// protects only those there at the start, and the workspace walk
    /// does not enter `.git`. Each is set aside whole, inert or not: its
    /// `remote.origin.url` alone would choose what `git submodule update
    /// --remote` checks out, and no spell can make one for real (`git
    /// submodule init` writes the read-only `config`).
    pub(super) fn submodules(&mut self, gitdir: &Path) {
        let modules = gitdir.join("modules");
        if !self.is_known(gitdir) {
            return;
        }
        let linked = modules.symlink_metadata().is_ok_and(|m| m.is_symlink());
        if linked && self.changed(&modules) {
            let outcome = self.quarantine.set_aside(&modules);
            self.found.push(&modules, Left::Submodule, outcome);
        }
        if !is_real_dir(&modules) {
            return;
        }
        let mut pending = vec![modules];
        while let Some(dir) = pending.pop() {
            for entry in self.read(&dir) {
                let planted = match entry.kind.is_dir() {
                    _ if self.is_known(&entry.path) => false,
                    true if is_git_dir(&entry.path) => self.made_now(&entry.path),
                    true => {
                        pending.push(entry.path);
                        continue;
                    }
                    false => entry.kind.is_symlink() && self.changed(&entry.path),
                };
                if planted {
                    let outcome = self.quarantine.set_aside(&entry.path);
                    self.found.push(&entry.path, Left::Submodule, outcome);
                }
            }
        }
    }

    /// The state of an interactive rebase (`rebase-merge/`) in a git
    /// directory there at the start, or in one of its linked worktrees',
    /// that the run created or whose to-do list it changed: `git rebase
    /// --continue` runs each `exec` line of `git-rebase-todo`, outside the
    /// sandbox. Set aside whole (git then sees no rebase in progress).
    pub(super) fn rebase_state(&mut self, gitdir: &Path) {
        if !self.is_known(gitdir) {
            return;
        }
        let mut dirs = vec![gitdir.to_path_buf()];
        if is_real_dir(&gitdir.join("worktrees")) {
            let worktrees = self.read(&gitdir.join("worktrees"));
            dirs.extend(
                worktrees
                    .into_iter()
                    .filter(|e| e.kind.is_dir())
                    .map(|e| e.path),
            );
        }
        for dir in dirs {
            let state = dir.join("rebase-merge");
            let Ok(meta) = state.symlink_metadata() else {
                continue;
            };
            let todo = state.join("git-rebase-todo");
            let changed = self.changed(&state) || meta.is_dir() && self.changed(&todo);
            if changed && super::unmoved(&state) {
                let outcome = self.quarantine.set_aside(&state);
                self.found.push(&state, Left::RunLater, outcome);
            }
        }
    }

    /// Whether the git directory `dir`, or what names its code and
    /// objects, was made or changed during the run.
    fn made_now(&self, dir: &Path) -> bool {
        self.arrived(dir)
            || SUBMODULE_PARTS
                .iter()
                .any(|part| self.changed(&dir.join(part)))
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
        if meta.permissions().mode() & 0o111 != 0 && Stamp::changed(&meta).at_or_after(self.since) {
            self.found.executables.push(path.to_path_buf());
        }
    }

    fn changed(&self, path: &Path) -> bool {
        path.symlink_metadata()
            .is_ok_and(|m| Seen::changed(self.stamps.get(path), path, &m, self.since))
    }

    /// Whether what is at `path` came there during the run: it
    /// [changed](Self::changed), or, not noted at the start, it was
    /// [moved in](Self::moved_in) with a directory above it.
    fn arrived(&self, path: &Path) -> bool {
        self.changed(path) || !self.stamps.contains_key(path) && self.moved_in(path)
    }

    /// Whether a directory above `path`, below the grant it lies in,
    /// changed during the run. A rename stamps the `ctime` of the entry
    /// moved alone, not of what it holds: `mv stash .vscode` (or `mv
    /// .magus/quarantine/s app`, where the walk does not look) brings a
    /// file an earlier run wrote under a name nothing looks for, with
    /// that run's `ctime`, to where a tool obeys it. Asked only of a path
    /// that was not noted at the start (which, within the start-up
    /// search's budget, every run-later file there then was), and
    /// otherwise unchanged: a rare case, so a few `lstat` calls.
    fn moved_in(&self, path: &Path) -> bool {
        let Some(root) = self
            .roots
            .iter()
            .filter(|root| path.starts_with(root))
            .max_by_key(|root| root.as_os_str().len())
        else {
            return false;
        };
        path.ancestors()
            .skip(1)
            .take_while(|dir| dir != root)
            .any(|dir| self.changed(dir))
    }

    fn set_aside_path_if_changed(&mut self, path: &Path, left: Left) {
        if let Ok(meta) = path.symlink_metadata() {
            self.set_aside_if_changed(path, &meta, left);
        }
    }

    fn set_aside_if_changed(&mut self, path: &Path, meta: &Metadata, left: Left) {
        let seen = self.stamps.get(path);
        let arrived =
            Seen::changed(seen, path, meta, self.since) || seen.is_none() && self.moved_in(path);
        if !arrived {
            return;
        }
        let outcome = self.quarantine.set_aside(path);
        self.found.push(path, left, outcome);
    }

    /// Python's bytecode is a cache: Python compiles it again from the
    /// sources at the next import, so what the run wrote is deleted
    /// rather than kept in the quarantine, where every run of a spell
    /// that runs Python would add a copy of its whole cache.
    fn remove_bytecode_if_changed(&mut self, path: &Path) {
        if self.skip.contains(path) || !self.arrived(path) {
            return;
        }
        let removed = super::nofollow::parent_of(path).and_then(|(dir, name)| {
            let flags = nix::unistd::UnlinkatFlags::NoRemoveDir;
            nix::unistd::unlinkat(&dir, name, flags).map_err(std::io::Error::from)
        });
        let outcome = match removed {
            Ok(()) => Outcome::Removed,
            Err(e) => Outcome::Failed(e.to_string()),
        };
        self.found.push(path, Left::Bytecode, outcome);
    }

    /// A directory's entries, within the budget; none where a link lies
    /// on the way to it (another run's child may have swapped one in since
    /// its parent was read: `super::nofollow`).
    fn read(&mut self, dir: &Path) -> Vec<Entry> {
        let Ok(entries) = super::nofollow::read_dir(dir) else {
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
                path: dir.join(entry.file_name()),
                name: entry.file_name(),
                kind,
                dirent: entry,
            });
        }
        read
    }
}

/// What a git directory holds that decides what git runs or finds there.
const SUBMODULE_PARTS: [&str; 6] = ["HEAD", "config", "commondir", "hooks", "objects", "refs"];

/// Whether git takes `dir` for a git directory: `HEAD` beside `objects`
/// and `refs`, or beside `commondir`.
fn is_git_dir(dir: &Path) -> bool {
    let has = |name: &str| dir.join(name).symlink_metadata().is_ok();
    has("HEAD") && (has("objects") && has("refs") || has("commondir"))
}

/// `path` is a directory, and no link stands on the way to it.
fn is_real_dir(path: &Path) -> bool {
    path.symlink_metadata().is_ok_and(|m| m.is_dir())
        && path.canonicalize().is_ok_and(|real| real == path)
}

fn in_cargo_dir(dir: &Path) -> bool {
    dir.file_name().is_some_and(|n| is(n, names::CARGO_DIR))
}
