//! The protected and hidden files by device and inode, noted once per run
//! before the gate's first write or read of a root that hides a store.
//! A handle the gate opens is compared with them, so no spelling reaches
//! one, also one the name check does not equate: a hard link, or a file
//! system that equates names `policy::names` does not
//! (docs/protected-names.md).

use super::DenialReason;
use crate::enforce::beneath::Handle;
use crate::policy::Policy;
use std::path::{Path, PathBuf};

/// What one noted file is to the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A protected workspace path (`magus.yaml`, `magus.lock`, `.git` and
    /// what it holds) or the running magus executable: writes are refused.
    Protected,
    /// A credential store the policy hides, or a file in one: every
    /// access is refused.
    Hidden,
}

impl Kind {
    /// The reason a match is refused with.
    pub(super) fn reason(self) -> DenialReason {
        match self {
            Kind::Protected => DenialReason::Protected,
            Kind::Hidden => DenialReason::NotGranted,
        }
    }
}

/// One noted file or directory.
#[derive(Debug)]
pub(super) struct Entry {
    dev: u64,
    ino: u64,
    pub(super) path: PathBuf,
    pub(super) kind: Kind,
}

/// The identity (device, inode) of every protected and hidden path that
/// existed when noted, of what a hidden store held directly
/// (`~/.ssh/id_rsa`), and of what in `.git` or `.hg` names commands
/// (`config`, `hooks/*`, `hgrc`). Files git replaces as it works
/// (`index`, `HEAD`) are not noted: their inodes are freed and may come
/// back as a new file of the spell's.
#[derive(Debug, Default)]
pub(super) struct Noted {
    entries: Vec<Entry>,
}

/// At most this many entries of one directory are noted: a store holding
/// more (a `~/.docker` full of contexts) keeps the name check alone for
/// the rest.
const PER_DIRECTORY: usize = 256;

/// The names of the workspace that are protected wherever they stand.
const WORKSPACE_NAMES: [&str; 4] = ["magus.yaml", "magus.lock", ".git", ".hg"];

/// What `.git` or `.hg` holds that names commands to run; `hooks` with
/// each hook in it.
const IN_REPOSITORY: [&str; 5] = ["config", "config.worktree", "commondir", "hgrc", "hooks"];

impl Noted {
    /// What `policy` protects and hides, as it is now.
    pub(super) fn of(policy: &Policy) -> Noted {
        let mut noted = Noted::default();
        let workspace = policy.workspace();
        for name in WORKSPACE_NAMES {
            let path = workspace.join(name);
            if noted.add(&path, Kind::Protected) {
                for inner in IN_REPOSITORY {
                    let inner = path.join(inner);
                    if noted.add(&inner, Kind::Protected) {
                        noted.add_entries(&inner, Kind::Protected);
                    }
                }
            }
        }
        // The running magus: built in the workspace (`target/release`), a
        // spell that replaced it would run as the user's next magus.
        if let Ok(exe) = std::env::current_exe() {
            noted.add(&exe, Kind::Protected);
        }
        for hidden in policy.hidden() {
            if noted.add(hidden, Kind::Hidden) {
                noted.add_entries(hidden, Kind::Hidden);
            }
        }
        noted
    }

    /// Notes what the directory `dir` holds, one level down.
    fn add_entries(&mut self, dir: &Path, kind: Kind) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten().take(PER_DIRECTORY) {
            self.add(&entry.path(), kind);
        }
    }

    /// Notes `path` (not following a final link); whether it is a
    /// directory.
    fn add(&mut self, path: &Path, kind: Kind) -> bool {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return false;
        };
        if let Some((dev, ino)) = identity_of(&meta) {
            self.entries.push(Entry {
                dev,
                ino,
                path: path.to_path_buf(),
                kind,
            });
        }
        meta.is_dir()
    }

    /// The noted entry `handle` is, if any.
    pub(super) fn find(&self, handle: &Handle) -> Option<&Entry> {
        if self.entries.is_empty() {
            return None;
        }
        self.matching(handle_identity(handle)?)
    }

    /// The noted entry `name` in the directory `dir` is, if any (not
    /// following a final link).
    pub(super) fn find_at(&self, dir: &Handle, name: &std::ffi::OsStr) -> Option<&Entry> {
        if self.entries.is_empty() {
            return None;
        }
        self.matching(identity_at(dir, name)?)
    }

    /// The entry noted as `identity` that still is: one whose path holds
    /// another file now was removed, and its inode may have been reused.
    fn matching(&self, identity: (u64, u64)) -> Option<&Entry> {
        self.entries.iter().find(|e| {
            (e.dev, e.ino) == identity
                && std::fs::symlink_metadata(&e.path)
                    .ok()
                    .and_then(|m| identity_of(&m))
                    == Some(identity)
        })
    }
}

#[cfg(unix)]
fn identity_of(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(unix)]
fn handle_identity(handle: &Handle) -> Option<(u64, u64)> {
    nix::sys::stat::fstat(handle)
        .ok()
        .map(|st| identity_of_stat(&st))
}

#[cfg(unix)]
fn identity_at(dir: &Handle, name: &std::ffi::OsStr) -> Option<(u64, u64)> {
    use nix::fcntl::AtFlags;
    let st = nix::sys::stat::fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW).ok()?;
    Some(identity_of_stat(&st))
}

/// The identity `std`'s `MetadataExt` gives, from a `stat`: `dev_t` is
/// signed on macOS and the inode type varies, so both are cast as `std`
/// casts them.
#[cfg(unix)]
#[allow(clippy::unnecessary_cast)]
fn identity_of_stat(st: &nix::sys::stat::FileStat) -> (u64, u64) {
    (st.st_dev as u64, st.st_ino as u64)
}

// Windows: a file's volume serial number and index are not in stable
// `std`, and NTFS's case folding is the path model's own
// (`policy::winpath`): nothing is noted, the name check stands alone.
#[cfg(windows)]
fn identity_of(_meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

#[cfg(windows)]
fn handle_identity(_handle: &Handle) -> Option<(u64, u64)> {
    None
}

#[cfg(windows)]
fn identity_at(_dir: &Handle, _name: &std::ffi::OsStr) -> Option<(u64, u64)> {
    None
}
