//! The confined backend of the gate: the only way a sandboxed spell's
//! `fs.*` reaches the file system. A path is made absolute against the
//! spell's directory, checked on the trie (plus what the trie cannot say:
//! protected workspace paths, other processes' `/proc`), and opened beneath
//! the handle of the granted root that allowed it.

use super::{Denial, DenialReason, FsOp, GateError};
use crate::enforce::beneath::{resolve_existing_prefix, BeneathError, Follow, Root};
use crate::policy::{normalize, Access, NormalPath, Policy};
use nix::fcntl::OFlag;
use std::borrow::Cow;
use std::cell::RefCell;
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// The confined backend of one run's gate.
#[derive(Debug)]
pub(super) struct Confined {
    policy: Rc<Policy>,
    base: Base,
    /// Directory handles of granted roots, opened on first use.
    roots: RefCell<Vec<Option<Rc<Root>>>>,
    /// Where [`Confined::open`] builds each absolute path, reused.
    scratch: RefCell<NormalPath>,
    own_pid: u32,
}

/// What relative paths are made absolute against.
#[derive(Debug)]
enum Base {
    /// The usual case, checked once: joining needs no re-check of the base.
    Normal(NormalPath),
    /// A directory not in normal form; every relative path is refused with
    /// the reason `normalize` gives.
    Spelled(PathBuf),
}

/// Workspace paths a spell's `fs.*` may never write: a spell must not widen
/// its own sandbox or plant code that later runs unconfined. All of `.git`,
/// not only `.git/hooks`: git's config names commands too (`core.hooksPath`,
/// `core.fsmonitor`, filters, aliases), and submodules keep their hooks and
/// config at any depth under `.git/modules`. `.git` is protected at any
/// depth of the workspace (a nested repository's too, see [`GIT_DIR`]).
const PROTECTED: [&str; 3] = ["magus.yaml", "magus.lock", ".git"];

/// A component that makes everything beneath it protected, wherever it
/// appears in the workspace.
const GIT_DIR: &str = ".git";

/// A path that passed the check: the root that allows it and the rest.
#[derive(Debug)]
pub(super) struct Located<'p> {
    pub(super) root: Rc<Root>,
    /// Borrowed from the backend's scratch path on the common path, owned
    /// once a symlink was resolved.
    pub(super) abs: Cow<'p, NormalPath>,
    /// Where the part of `abs` below the root starts, in bytes.
    rel_start: usize,
}

impl Located<'_> {
    /// `abs` relative to the root (empty for the root itself).
    pub(super) fn rel(&self) -> &Path {
        let bytes = self.abs.as_os_str().as_bytes();
        Path::new(OsStr::from_bytes(
            bytes.get(self.rel_start..).unwrap_or_default(),
        ))
    }
}

impl Confined {
    /// The backend over `policy`, resolving relative paths against `cwd`.
    pub(super) fn new(policy: Rc<Policy>, cwd: &Path) -> Confined {
        let roots = RefCell::new(vec![None; policy.grants().len()]);
        let base = match NormalPath::new(cwd) {
            Ok(normal) => Base::Normal(normal),
            Err(_) => Base::Spelled(cwd.to_path_buf()),
        };
        Confined {
            policy,
            base,
            roots,
            scratch: RefCell::new(NormalPath::root()),
            own_pid: std::process::id(),
        }
    }

    /// Whether the policy lets the program at `real` (a resolved path)
    /// run; a path the kernel did not hand back in normal form does not.
    pub(super) fn may_execute(&self, real: &Path) -> bool {
        NormalPath::new(real)
            .is_ok_and(|real| self.policy.check(&real, Access::Execute).is_allowed())
    }

    /// The absolute, lexically normal form of `spelled`.
    pub(super) fn absolute(&self, spelled: &str, op: FsOp) -> Result<NormalPath, GateError> {
        let abs = match &self.base {
            Base::Normal(base) => base.join(spelled),
            Base::Spelled(base) => normalize(base, spelled),
        };
        abs.map_err(|source| GateError::InvalidPath {
            op,
            spelled: spelled.to_string(),
            source,
        })
    }

    /// [`Confined::absolute`] into `out`, reusing its allocation.
    fn absolute_into(
        &self,
        spelled: &str,
        op: FsOp,
        out: &mut NormalPath,
    ) -> Result<(), GateError> {
        let joined = match &self.base {
            Base::Normal(base) => base.join_into(spelled, out),
            Base::Spelled(base) => normalize(base, spelled).map(|abs| *out = abs),
        };
        joined.map_err(|source| GateError::InvalidPath {
            op,
            spelled: spelled.to_string(),
            source,
        })
    }

    /// Checks `spelled` for `access` and finds the root to open it beneath.
    pub(super) fn locate(
        &self,
        spelled: &str,
        access: Access,
        op: FsOp,
    ) -> Result<Located<'static>, GateError> {
        let abs = self.absolute(spelled, op)?;
        self.locate_abs(spelled, Cow::Owned(abs), access, op)
    }

    /// [`Gate::locate`] for a path already made absolute.
    pub(super) fn locate_abs<'p>(
        &self,
        spelled: &str,
        abs: Cow<'p, NormalPath>,
        access: Access,
        op: FsOp,
    ) -> Result<Located<'p>, GateError> {
        self.refuse_special(spelled, &abs, None, access, op)?;
        match self.policy.check(&abs, access).grant {
            Some(index) => self.located(index, abs, spelled, op),
            // A symlinked ancestor may lead into a granted root (`/bin` is
            // `/usr/bin` on merged-usr systems): resolve, then check again.
            None => self.relocate(spelled, &abs, access, op),
        }
    }

    /// Resolves where `abs` (already checked by the caller) really leads and
    /// checks that path instead.
    pub(super) fn relocate(
        &self,
        spelled: &str,
        abs: &NormalPath,
        access: Access,
        op: FsOp,
    ) -> Result<Located<'static>, GateError> {
        let real = resolve_existing_prefix(abs)
            .and_then(|real| NormalPath::new(real).map_err(std::io::Error::other))
            .map_err(|e| GateError::io(op, spelled, e))?;
        let leads_to = (real != *abs).then(|| real.as_path().to_path_buf());
        self.refuse_special(spelled, &real, leads_to.as_deref(), access, op)?;
        match self.policy.check(&real, access).grant {
            Some(index) if leads_to.is_some() => self.located(index, Cow::Owned(real), spelled, op),
            _ => Err(
                Denial::new(op, access, spelled, abs, leads_to, DenialReason::NotGranted).into(),
            ),
        }
    }

    fn located<'p>(
        &self,
        index: usize,
        abs: Cow<'p, NormalPath>,
        spelled: &str,
        op: FsOp,
    ) -> Result<Located<'p>, GateError> {
        let root = self
            .root(index)
            .map_err(|e| GateError::io(op, spelled, e))?;
        let Some(rel_start) = rel_offset(&abs, root.path()) else {
            let e = std::io::Error::other("the granted root does not contain the path");
            return Err(GateError::io(op, spelled, e));
        };
        Ok(Located {
            root,
            abs,
            rel_start,
        })
    }

    fn root(&self, index: usize) -> std::io::Result<Rc<Root>> {
        let mut roots = self.roots.borrow_mut();
        if let Some(Some(root)) = roots.get(index) {
            return Ok(Rc::clone(root));
        }
        let root = Rc::new(Root::open(&self.policy.grants()[index].path)?);
        if let Some(slot) = roots.get_mut(index) {
            *slot = Some(Rc::clone(&root));
        }
        Ok(root)
    }

    /// Opens `spelled` beneath the root that allows `access`. When the
    /// kernel reports that resolution left the root (a symlink or magic
    /// link), the real target is checked and opened beneath *its* root, once.
    ///
    /// The absolute path is built in the backend's scratch path, so the
    /// common call allocates nothing; a nested call (none today) would
    /// find it borrowed and allocate its own.
    pub(super) fn open(
        &self,
        spelled: &str,
        access: Access,
        op: FsOp,
        flags: OFlag,
    ) -> Result<OwnedFd, GateError> {
        let Ok(mut scratch) = self.scratch.try_borrow_mut() else {
            let abs = self.absolute(spelled, op)?;
            return self.open_abs(spelled, Cow::Owned(abs), access, op, flags);
        };
        self.absolute_into(spelled, op, &mut scratch)?;
        self.open_abs(spelled, Cow::Borrowed(&*scratch), access, op, flags)
    }

    /// [`Gate::open`] for a path already made absolute; errors name
    /// `spelled`.
    pub(super) fn open_abs(
        &self,
        spelled: &str,
        abs: Cow<'_, NormalPath>,
        access: Access,
        op: FsOp,
        flags: OFlag,
    ) -> Result<OwnedFd, GateError> {
        let located = self.locate_abs(spelled, abs, access, op)?;
        if let Some(fd) = self.try_open(&located, spelled, access, op, flags)? {
            return Ok(fd);
        }
        let real = self.relocate(spelled, &located.abs, access, op)?;
        self.try_open(&real, spelled, access, op, flags)?
            .ok_or_else(|| GateError::Raced {
                op,
                spelled: spelled.to_string(),
            })
    }

    /// The opened handle, or `None` when resolution left the root.
    fn try_open(
        &self,
        located: &Located,
        spelled: &str,
        access: Access,
        op: FsOp,
        flags: OFlag,
    ) -> Result<Option<OwnedFd>, GateError> {
        match located
            .root
            .open_beneath(located.rel(), flags, follow_for(access))
        {
            Ok(fd) => Ok(Some(fd)),
            Err(BeneathError::Escapes) => Ok(None),
            Err(BeneathError::Os(e)) => Err(GateError::io(op, spelled, e)),
        }
    }

    /// What the trie cannot say: protected workspace files and other
    /// processes' `/proc` entries.
    fn refuse_special(
        &self,
        spelled: &str,
        path: &Path,
        leads_to: Option<&Path>,
        access: Access,
        op: FsOp,
    ) -> Result<(), GateError> {
        let reason = if access == Access::Write && self.is_protected(path) {
            DenialReason::Protected
        } else if is_foreign_proc(path, self.own_pid) {
            DenialReason::ForeignProcess
        } else {
            return Ok(());
        };
        let leads_to = leads_to.map(Path::to_path_buf);
        Err(Denial::new(op, access, spelled, path, leads_to, reason).into())
    }

    /// A rename or removal may not take away a protected path, nor any
    /// directory holding one (moving `.git` aside, writing a hook, and
    /// moving it back would plant the hook through `fs.*` alone).
    pub(super) fn refuse_protected_entry(
        &self,
        spelled: &str,
        abs: &Path,
        entry: &Path,
        op: FsOp,
    ) -> Result<(), GateError> {
        if !self.holds_protected(entry) && !self.is_protected(entry) {
            return Ok(());
        }
        let reason = DenialReason::Protected;
        let leads_to = (entry != abs).then(|| entry.to_path_buf());
        Err(Denial::new(op, Access::Write, spelled, abs, leads_to, reason).into())
    }

    /// `path` is a protected path or lies beneath one.
    fn is_protected(&self, path: &Path) -> bool {
        let Ok(rest) = path.strip_prefix(self.policy.workspace()) else {
            return false;
        };
        PROTECTED
            .iter()
            .any(|protected| rest.starts_with(protected))
            || rest.components().any(|c| c.as_os_str() == GIT_DIR)
    }

    /// `path` is a protected path or a directory holding one (the
    /// workspace and its ancestors included).
    fn holds_protected(&self, path: &Path) -> bool {
        let workspace = &self.policy.workspace();
        match path.strip_prefix(workspace) {
            Ok(rest) => PROTECTED.iter().any(|p| Path::new(p).starts_with(rest)),
            Err(_) => workspace.starts_with(path),
        }
    }
}

fn follow_for(access: Access) -> Follow {
    match access {
        // A write must not follow a symlink unchecked: the link may lead to a
        // protected file beneath the same writable root.
        Access::Write => Follow::Never,
        Access::Read | Access::Execute => Follow::BeneathOnly,
    }
}

/// Where `path` continues below `root` (both absolute and lexically
/// normal), in bytes. On this hot path a byte comparison replaces
/// `Path::strip_prefix`, whose component walk cost more than the check.
fn rel_offset(path: &Path, root: &Path) -> Option<usize> {
    let (path, root) = (path.as_os_str().as_bytes(), root.as_os_str().as_bytes());
    let rest = path.strip_prefix(root)?;
    match rest.first() {
        None => Some(root.len()),
        Some(b'/') => Some(root.len() + 1),
        Some(_) if root == b"/" => Some(root.len()),
        Some(_) => None,
    }
}

/// `/proc/<pid>/...` of any process but our own. Children get their own
/// PID namespace; this keeps `fs.*` from reading magus's parents.
fn is_foreign_proc(path: &Path, own_pid: u32) -> bool {
    if !path.as_os_str().as_bytes().starts_with(b"/proc/") {
        return false;
    }
    let Ok(rest) = path.strip_prefix("/proc") else {
        return false;
    };
    let Some(first) = rest.components().next() else {
        return false;
    };
    let name = first.as_os_str().to_string_lossy();
    match name.parse::<u32>() {
        Ok(pid) => pid != own_pid,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::{is_foreign_proc, rel_offset};
    use std::path::Path;

    #[test]
    fn rel_offset_splits_only_at_a_component_boundary() {
        let cases = [
            ("/w/ws/data/f", "/w/ws", Some("data/f")),
            ("/w/ws", "/w/ws", Some("")),
            ("/w/wsx/f", "/w/ws", None),
            ("/w/w", "/w/ws", None),
            ("/usr/bin/sh", "/", Some("usr/bin/sh")),
            ("/", "/", Some("")),
        ];
        for (path, root, want) in cases {
            let got = rel_offset(Path::new(path), Path::new(root)).map(|at| &path[at..]);
            assert_eq!(got, want, "{path} under {root}");
        }
    }

    #[test]
    fn only_numeric_proc_entries_of_others_are_foreign() {
        let cases = [
            ("/proc/1/environ", true),
            ("/proc/77/mem", false),
            ("/proc/self/environ", false),
            ("/proc/sys/kernel", false),
            ("/proc", false),
            ("/procx/1", false),
            ("/home/1", false),
        ];
        for (path, foreign) in cases {
            assert_eq!(is_foreign_proc(Path::new(path), 77), foreign, "{path}");
        }
    }
}
