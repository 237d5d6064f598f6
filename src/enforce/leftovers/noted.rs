//! Protected paths noted when no bind holds them read-only (no jail): a
//! small file by its contents, a large one (magus's own executable) by its
//! identity, a directory (`hooks`, a `PATH` directory, `spells/`) by its
//! entries, at any depth up to [`MAX_DEPTH`] (a spell imports
//! `spells/lib/x.buzz`; rewriting a file in place changes no directory).
//! After the run, what a child changed is set aside and the noted version
//! put back.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::aside::Quarantine;
use super::nofollow;
use super::{Findings, Item, Left, Outcome, Seen, Stamp};

/// Files up to this size are noted by content; larger ones by identity.
const MAX_NOTED: u64 = 1 << 20;

/// A directory's entries up to this size are noted by content.
const MAX_NOTED_ENTRY: u64 = 64 << 10;

/// How many files below one directory are noted by content.
const MAX_NOTED_ENTRIES: usize = 256;
/// How many levels below a protected directory are noted and compared.
const MAX_DEPTH: usize = 8;
/// How many unchanged entries below one protected directory are looked
/// through after the run, for the changed ones.
const MAX_COMPARED: usize = 10_000;
/// How many entries a child changed in one protected directory are set
/// aside one by one. Children may not write there at all (only where
/// nothing holds the directory read-only can one); past this many, the
/// child is filling it so that what it planted lies beyond what is looked
/// at, and the whole directory goes aside ([`set_aside_whole`]).
pub(super) const MAX_SET_ASIDE: usize = 1_000;

/// What is left of the walk through one protected directory.
struct Budget {
    /// Unchanged entries still to look through.
    unchanged: usize,
    /// Changed entries still to set aside one by one.
    changed: usize,
}

#[derive(Debug)]
pub(super) enum Noted {
    File {
        path: PathBuf,
        content: Vec<u8>,
        mode: u32,
    },
    /// Too large to keep: changed is all that can be said.
    Large {
        path: PathBuf,
        identity: (u64, u64, u64, i64, i64),
    },
    /// Its files, by their path relative to it.
    Dir {
        path: PathBuf,
        entries: Vec<(PathBuf, Vec<u8>, u32)>,
    },
}

impl Noted {
    pub(super) fn take(path: &Path) -> Option<Noted> {
        let meta = path.symlink_metadata().ok()?;
        let path = path.to_path_buf();
        let mode = meta.permissions().mode() & 0o7777;
        if meta.is_dir() {
            return Some(Noted::Dir {
                entries: dir_entries(&path),
                path,
            });
        }
        if !meta.is_file() {
            return None;
        }
        if meta.len() > MAX_NOTED {
            let identity = (
                meta.dev(),
                meta.ino(),
                meta.len(),
                meta.mtime(),
                meta.mtime_nsec(),
            );
            return Some(Noted::Large { path, identity });
        }
        let content = small_file(&path)?;
        Some(Noted::File {
            path,
            content,
            mode,
        })
    }

    pub(super) fn path(&self) -> &Path {
        match self {
            Noted::File { path, .. } | Noted::Large { path, .. } | Noted::Dir { path, .. } => path,
        }
    }

    /// Sets aside what a child changed and puts the noted version back.
    pub(super) fn put_back(&self, since: Stamp, quarantine: &mut Quarantine, found: &mut Findings) {
        if !super::unmoved(self.path()) {
            return;
        }
        match self {
            Noted::File {
                path,
                content,
                mode,
            } => put_back_file(path, content, *mode, quarantine, found),
            Noted::Large { path, identity } => {
                let Ok(meta) = path.symlink_metadata() else {
                    return;
                };
                let now = (
                    meta.dev(),
                    meta.ino(),
                    meta.len(),
                    meta.mtime(),
                    meta.mtime_nsec(),
                );
                if now != *identity || Stamp::changed(&meta).at_or_after(since) {
                    let outcome = quarantine.set_aside(path);
                    found.push(path, Left::Protected, outcome);
                }
            }
            Noted::Dir { path, entries } => put_back_dir(path, entries, since, quarantine, found),
        }
    }
}

fn put_back_file(
    path: &Path,
    content: &[u8],
    mode: u32,
    quarantine: &mut Quarantine,
    found: &mut Findings,
) {
    let unchanged = path.symlink_metadata().is_ok_and(|m| m.is_file())
        && small_file(path).is_some_and(|now| now == content);
    if unchanged {
        return;
    }
    let outcome = match path.symlink_metadata() {
        Err(_) => rewrite(path, content, mode).map_or_else(failed, |()| Outcome::PutBack),
        Ok(_) => match quarantine.set_aside(path) {
            Outcome::Moved(to) => {
                rewrite(path, content, mode).map_or_else(failed, |()| Outcome::Replaced(to))
            }
            other => other,
        },
    };
    found.push(path, Left::Protected, outcome);
}

fn put_back_dir(
    dir: &Path,
    noted: &[(PathBuf, Vec<u8>, u32)],
    since: Stamp,
    quarantine: &mut Quarantine,
    found: &mut Findings,
) {
    // A directory swapped for a link or a file: set it aside whole.
    if !dir.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        if dir.symlink_metadata().is_ok() {
            let outcome = quarantine.set_aside(dir);
            found.push(dir, Left::Protected, outcome);
        }
        return;
    }
    let mut budget = Budget {
        unchanged: MAX_COMPARED,
        changed: MAX_SET_ASIDE,
    };
    set_aside_changed(dir, since, 0, &mut budget, quarantine, found);
    if budget.changed == 0 {
        set_aside_whole(dir, noted, quarantine, found);
        return;
    }
    for (rel, content, mode) in noted {
        let path = dir.join(rel);
        if path.symlink_metadata().is_err() {
            let outcome =
                recreate(dir, rel, content, *mode).map_or_else(failed, |()| Outcome::PutBack);
            found.push(&path, Left::Protected, outcome);
        }
    }
}

/// A protected directory a child filled with more than [`MAX_SET_ASIDE`]
/// entries: the comparison stopped at a budget of entries, and what the
/// child planted there lay past it, unlooked at (a `pre-commit` among
/// 30,000 empty files ran at the next `git commit`).
/// The directory goes aside whole, and is made again holding what was
/// noted of it at the start.
fn set_aside_whole(
    dir: &Path,
    noted: &[(PathBuf, Vec<u8>, u32)],
    quarantine: &mut Quarantine,
    found: &mut Findings,
) {
    let mode = dir
        .symlink_metadata()
        .map_or(0o755, |m| m.permissions().mode() & 0o777);
    let outcome = match quarantine.set_aside(dir) {
        Outcome::Moved(to) => {
            remake(dir, mode, noted).map_or_else(failed, |()| Outcome::Replaced(to))
        }
        other => other,
    };
    found.push(dir, Left::Flooded, outcome);
}

/// Makes `dir` again, with its noted files.
fn remake(dir: &Path, mode: u32, noted: &[(PathBuf, Vec<u8>, u32)]) -> std::io::Result<()> {
    let (parent, name) = nofollow::parent_of(dir)?;
    nofollow::make_dir_at(&parent, name, mode)?;
    noted
        .iter()
        .try_for_each(|(rel, content, mode)| recreate(dir, rel, content, *mode))
}

/// Sets aside each entry below `dir` that changed during the run; an
/// unchanged directory is looked into (its files may have been rewritten
/// in place, which changes no directory), never a link.
fn set_aside_changed(
    dir: &Path,
    since: Stamp,
    depth: usize,
    budget: &mut Budget,
    quarantine: &mut Quarantine,
    found: &mut Findings,
) {
    let Ok(entries) = nofollow::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        let path = dir.join(entry.file_name());
        let changed = Stamp::changed(&meta).at_or_after(since);
        let left = match changed {
            true => &mut budget.changed,
            false => &mut budget.unchanged,
        };
        let Some(now) = left.checked_sub(1) else {
            return;
        };
        *left = now;
        if changed && now == 0 {
            // Flooded: the whole directory goes aside instead.
            return;
        }
        if changed {
            let outcome = quarantine.set_aside(&path);
            found.push(&path, Left::Protected, outcome);
        } else if meta.is_dir() && depth < MAX_DEPTH {
            set_aside_changed(&path, since, depth + 1, budget, quarantine, found);
        }
    }
}

/// Writes the noted file `rel` back below `dir`, making the directories
/// above it that were set aside, each through the one above it (a link
/// a child swapped in on the way makes this fail: checked by path first,
/// then written by path, it once led the write to `~/.bashrc`).
fn recreate(dir: &Path, rel: &Path, content: &[u8], mode: u32) -> std::io::Result<()> {
    let (Some(above), Some(name)) = (rel.parent(), rel.file_name()) else {
        return Err(std::io::Error::other("no file name"));
    };
    let parent = nofollow::make_dirs(dir, above)?;
    nofollow::write_new_at(&parent, name, content, mode)
}

fn failed(e: std::io::Error) -> Outcome {
    Outcome::Failed(e.to_string())
}

/// How many entries of one run-later directory get their `ctime` noted.
const MAX_STAMPED: usize = 1_000;

/// Notes the `ctime` of `path`, and of everything in it when it is a
/// directory (up to [`MAX_STAMPED`] entries), never following a link.
pub(super) fn stamps(path: &Path, into: &mut std::collections::HashMap<PathBuf, Seen>) {
    let Ok(meta) = path.symlink_metadata() else {
        return;
    };
    if let Some(seen) = Seen::of(path, &meta) {
        into.insert(path.to_path_buf(), seen);
    }
    if !meta.is_dir() {
        return;
    }
    let mut pending = vec![path.to_path_buf()];
    let mut left = MAX_STAMPED;
    while let Some(dir) = pending.pop() {
        for entry in nofollow::read_dir(&dir).into_iter().flatten().flatten() {
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if left == 0 {
                return;
            }
            left -= 1;
            let path = dir.join(entry.file_name());
            if meta.is_dir() {
                pending.push(path.clone());
            }
            if let Some(seen) = Seen::of(&path, &meta) {
                into.insert(path, seen);
            }
        }
    }
}

/// Notes the `ctime` of the `__init__` of each package at the top of
/// the workspace named as a module of Python's standard library
/// (`names::PYTHON_MODULES`), which the start-up search does not list:
/// the sweep takes one not noted, in a directory the run changed, for
/// one moved in with its directory (`scan::Scan::moved_in`), and a
/// project's own `platform/__init__.py` must stay when the run writes
/// `platform/__pycache__`.
pub(super) fn package_inits(workspace: &Path, into: &mut std::collections::HashMap<PathBuf, Seen>) {
    let Ok(entries) = nofollow::read_dir(workspace) else {
        return;
    };
    let packages = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| super::names::is_python_module(&e.file_name()));
    for package in packages {
        let package = workspace.join(package.file_name());
        let Ok(inner) = nofollow::read_dir(&package) else {
            continue;
        };
        for entry in inner.flatten() {
            if !super::names::is_package_init(&entry.file_name()) {
                continue;
            }
            let path = package.join(entry.file_name());
            if let Some(seen) = entry.metadata().ok().and_then(|m| Seen::of(&path, &m)) {
                into.insert(path, seen);
            }
        }
    }
}

/// A directory's small regular files, by content, at any depth up to
/// [`MAX_DEPTH`], never through a link (anywhere on the way: a child of
/// another run swaps a directory for a link between the listing and the
/// read).
fn dir_entries(dir: &Path) -> Vec<(PathBuf, Vec<u8>, u32)> {
    let mut out = Vec::new();
    let mut pending = vec![(PathBuf::new(), 0)];
    while let Some((rel, depth)) = pending.pop() {
        let Ok(entries) = nofollow::read_dir(&dir.join(&rel)) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            let name = rel.join(entry.file_name());
            if meta.is_dir() && depth < MAX_DEPTH {
                pending.push((name, depth + 1));
                continue;
            }
            if !meta.is_file() || meta.len() > MAX_NOTED_ENTRY {
                continue;
            }
            if out.len() == MAX_NOTED_ENTRIES {
                return out;
            }
            let mode = meta.permissions().mode() & 0o7777;
            if let Some(content) = small_file(&dir.join(&name)) {
                out.push((name, content, mode));
            }
        }
    }
    out
}

/// A regular file's contents, up to [`MAX_NOTED`] bytes, never through a
/// symbolic link (anywhere on the way).
pub(super) fn small_file(path: &Path) -> Option<Vec<u8>> {
    let flags = nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_NONBLOCK;
    let mut file = std::fs::File::from(nofollow::open_file(path, flags).ok()?);
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut content = Vec::new();
    Read::by_ref(&mut file)
        .take(MAX_NOTED + 1)
        .read_to_end(&mut content)
        .ok()?;
    (content.len() as u64 <= MAX_NOTED).then_some(content)
}

/// Writes `content` as a new file at `path`, after removing what stands
/// there (a file or a link, never what a link names), through the
/// directory holding it, opened following no link: magus may be root
/// here, and a child may have left a link to anywhere, or swap one in.
pub(super) fn rewrite(path: &Path, content: &[u8], mode: u32) -> std::io::Result<()> {
    let (dir, name) = nofollow::parent_of(path)?;
    nofollow::write_new_at(&dir, name, content, mode)
}

impl Findings {
    pub(super) fn push(&mut self, path: &Path, left: Left, outcome: Outcome) {
        self.items.push(Item {
            path: path.to_path_buf(),
            left,
            outcome,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory (real path) holding `d/sub/f` and, beside it,
    /// `outside/f`, the "home" a child's link leads to.
    fn scratch() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in ["d/sub", "outside"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("d/sub/f"), "noted").unwrap();
        std::fs::write(root.join("outside/f"), "KEY").unwrap();
        (dir, root)
    }

    /// A red-team run: a child of another run swapped `sub` for a link to
    /// `~/.ssh` between the listing and the read, and the sweep noted the
    /// key. A link anywhere on the way is now refused, not only at the
    /// last name; the control reads the real file.
    #[test]
    fn a_noted_file_is_never_read_through_a_link_on_the_way() {
        let (_dir, root) = scratch();
        assert_eq!(
            small_file(&root.join("d/sub/f")).as_deref(),
            Some(&b"noted"[..])
        );
        std::fs::rename(root.join("d/sub"), root.join("d/real")).unwrap();
        std::os::unix::fs::symlink(root.join("outside"), root.join("d/sub")).unwrap();
        assert_eq!(small_file(&root.join("d/sub/f")), None);
        let listed = dir_entries(&root.join("d"));
        let names: Vec<_> = listed.iter().map(|(rel, ..)| rel.clone()).collect();
        assert_eq!(names, [PathBuf::from("real/f")]);
    }

    /// A red-team run: the directory a put-back file was written to was
    /// swapped for a link to `~` after the check, and the sweep wrote
    /// `~/.bashrc`. Each write now goes through the directory's handle,
    /// opened following no link: through a link it fails, and a swap after
    /// the open leaves the write in the directory that was opened.
    #[test]
    fn a_put_back_file_is_never_written_through_a_link() {
        let (_dir, root) = scratch();
        std::fs::remove_dir_all(root.join("d/sub")).unwrap();
        std::os::unix::fs::symlink(root.join("outside"), root.join("d/sub")).unwrap();
        assert!(rewrite(&root.join("d/sub/f"), b"PLANTED", 0o644).is_err());
        let rel = Path::new("sub/f");
        assert!(recreate(&root.join("d"), rel, b"PLANTED", 0o644).is_err());
        assert_eq!(std::fs::read(root.join("outside/f")).unwrap(), b"KEY");

        // Swapped after the directory was opened: the handle still holds
        // the directory that was at the path.
        std::fs::remove_file(root.join("d/sub")).unwrap();
        std::fs::create_dir(root.join("d/sub")).unwrap();
        let target = root.join("d/sub/f");
        let (held, name) = nofollow::parent_of(&target).unwrap();
        std::fs::rename(root.join("d/sub"), root.join("d/was")).unwrap();
        std::os::unix::fs::symlink(root.join("outside"), root.join("d/sub")).unwrap();
        nofollow::write_new_at(&held, name, b"noted", 0o4755).unwrap();
        assert_eq!(std::fs::read(root.join("outside/f")).unwrap(), b"KEY");
        let written = root.join("d/was/f");
        assert_eq!(std::fs::read(&written).unwrap(), b"noted");
        let mode = written.symlink_metadata().unwrap().permissions().mode();
        assert_eq!(mode & 0o7000, 0, "no set-id bit: {mode:o}");

        // The control: a real directory on the way, made where missing.
        std::fs::remove_file(root.join("d/sub")).unwrap();
        recreate(&root.join("d"), Path::new("sub/deeper/g"), b"back", 0o644).unwrap();
        assert_eq!(std::fs::read(root.join("d/sub/deeper/g")).unwrap(), b"back");
    }
}
