//! The confined backend of the gate: the only way a sandboxed spell's
//! `fs.*` reaches the file system. A path is made absolute against the
//! spell's directory, checked on the trie (plus what the trie cannot say:
//! protected workspace paths, other processes' `/proc`), and opened beneath
//! the handle of the granted root that allowed it.

use super::noted::{self, Noted};
use super::repository::GitName;
use super::{Denial, DenialReason, FsOp, GateError, Protection};
use crate::enforce::beneath::{resolve_existing_prefix, BeneathError, Follow, Handle, OFlag, Root};
use crate::policy::names;
use crate::policy::path::PATH_MAX;
use crate::policy::{native, normalize, Access, NormalPath, PlainRelative, Policy, TrieCursor};
use std::borrow::Cow;
use std::cell::{OnceCell, RefCell};
use std::ffi::{CStr, OsStr};
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// The confined backend of one run's gate.
#[derive(Debug)]
pub(super) struct Confined {
    policy: Rc<Policy>,
    base: Base,
    /// Directory handles of granted roots, by grant index (the trie's
    /// answer), each opened on first use.
    roots: Vec<GrantRoot>,
    /// Where [`Confined::open`] builds each absolute path, reused.
    scratch: RefCell<NormalPath>,
    /// Where [`Confined::open_plain`] joins a spelling to the directory,
    /// NUL-terminated for the system call, reused.
    joined: RefCell<Vec<u8>>,
    own_pid: u32,
    /// The protected and hidden files by identity, noted before the first
    /// open that compares a handle with them (boxed: most runs never
    /// note them, and the backend stays small).
    noted: OnceCell<Box<Noted>>,
}

/// One granted root: its handle, opened on first use, and whether a
/// credential store the policy hides lies within it. A read beneath such
/// a root follows no link unchecked: `~/.cargo/registry/tok ->
/// ../credentials.toml`, a link a child made, stays beneath `~/.cargo`
/// and led `fs.read` to the hidden token (found by a red-team run).
#[derive(Debug)]
struct GrantRoot {
    handle: OnceCell<Root>,
    hides: bool,
}

/// What relative paths are made absolute against.
#[derive(Debug)]
enum Base {
    /// The usual case, checked once: joining needs no re-check of the base.
    Normal(Cwd),
    /// A directory not in normal form; every relative path is refused with
    /// the reason `normalize` gives.
    Spelled(PathBuf),
}

/// The spell's directory, with what every plain relative spelling below it
/// shares worked out once: where the trie walk of it ends, and which of the
/// checks the trie cannot make could apply below it.
#[derive(Debug)]
struct Cwd {
    path: NormalPath,
    cursor: TrieCursor,
    /// `/` or a path under `/proc`: a spelling below may name another
    /// process's entry, so the general path checks each one.
    near_proc: bool,
    /// A hidden store lies below this directory, or it lies in one: every
    /// spelling below goes the general way, which refuses the store.
    near_hidden: bool,
    writes: WritesBelow,
    /// The grant whose root is this very directory, if one is.
    own_root: Option<usize>,
}

/// How a write spelled below the spell's directory can meet the
/// workspace's protected paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WritesBelow {
    /// The directory is neither in the workspace nor above it.
    Unprotected,
    /// The directory is the workspace: a write naming `magus.yaml`,
    /// `magus.lock` or `.git` anywhere goes the general way (which refuses
    /// it only where the name is protected).
    AtWorkspace,
    /// Inside the workspace, itself unprotected: any `.git` counts.
    InWorkspace,
    /// Above the workspace, or protected itself: the general path decides.
    General,
}

impl Cwd {
    fn new(path: NormalPath, policy: &Policy, workspace: &Path) -> Cwd {
        let bytes = path.as_os_str().as_encoded_bytes();
        let near_proc = bytes == b"/" || bytes.starts_with(b"/proc");
        let folded = native::folded(&path);
        // Names compared as a case-insensitive disk compares them: a
        // directory spelled `/Users/me/WS` there is the workspace `ws`.
        let writes = match names::strip_prefix(&folded, workspace) {
            Some(rest) if rest.as_os_str().is_empty() => WritesBelow::AtWorkspace,
            Some(rest) if is_protected_rest(rest) => WritesBelow::General,
            Some(_) => WritesBelow::InWorkspace,
            None if names::lies_within(workspace, &folded) => WritesBelow::General,
            None => WritesBelow::Unprotected,
        };
        let near_hidden = policy.hidden().iter().any(|h| {
            let h = native::folded(h);
            names::lies_within(&h, &folded) || names::lies_within(&folded, &h)
        });
        let own_root = policy.grants().iter().position(|g| g.path == *path);
        Cwd {
            own_root,
            cursor: policy.cursor(&path),
            path,
            near_proc,
            near_hidden,
            writes,
        }
    }

    /// Whether none of the gate's own refusals can apply to `rel` below
    /// this directory, so the trie's answer is the whole answer.
    fn is_ordinary(&self, rel: PlainRelative<'_>, access: Access) -> bool {
        if self.near_proc || self.near_hidden {
            return false;
        }
        if access != Access::Write {
            return true;
        }
        let bytes = rel.as_bytes();
        let last = bytes.rsplit(|&b| b == b'/').next().unwrap_or(bytes);
        if GitName::of(last).is_some() {
            return false;
        }
        let mut names = bytes.split(|&b| b == b'/');
        match self.writes {
            WritesBelow::Unprotected => true,
            WritesBelow::AtWorkspace => names.all(|n| !is_protected_name(n)),
            WritesBelow::InWorkspace => names.all(|n| !is_vcs_dir(n)),
            WritesBelow::General => false,
        }
    }

    /// `rel` as seen from `root`, the root of grant `index`, built in `out`
    /// with a NUL for the system call. `None` when the whole path is too
    /// long (the general path says so).
    fn below_root<'o>(
        &self,
        rel: PlainRelative<'_>,
        index: usize,
        root: &Root,
        out: &'o mut Vec<u8>,
    ) -> Option<&'o CStr> {
        let base = self.path.as_os_str().as_encoded_bytes();
        if base.len() + 1 + rel.as_bytes().len() >= PATH_MAX {
            return None;
        }
        out.clear();
        // Usually the directory is the root itself: `rel` is the answer.
        let start = if self.own_root == Some(index) {
            out.extend_from_slice(rel.as_bytes());
            0
        } else {
            if base != b"/" {
                out.extend_from_slice(base);
            }
            out.push(b'/');
            out.extend_from_slice(rel.as_bytes());
            rel_offset(out, root.path())?
        };
        out.push(0);
        let below = out.get(start..)?;
        debug_assert_eq!(below.iter().position(|&b| b == 0), Some(below.len() - 1));
        // SAFETY: `below` ends with the NUL pushed above and holds no other:
        // the directory is a `NormalPath` and `rel` a `PlainRelative`, and
        // neither type admits a NUL. (The checked constructor would scan
        // the bytes a third time on the gate's hottest path.)
        Some(unsafe { CStr::from_bytes_with_nul_unchecked(below) })
    }
}

/// Workspace paths a spell's `fs.*` may never write: a spell must not widen
/// its own sandbox or plant code that later runs unconfined. All of `.git`,
/// not only `.git/hooks`: git's config names commands too (`core.hooksPath`,
/// `core.fsmonitor`, filters, aliases), and submodules keep their hooks and
/// config at any depth under `.git/modules`. `.git` is protected at any
/// depth of the workspace (a nested repository's too, see [`VCS_DIRS`]).
/// Mercurial's `.hg` likewise: its `hgrc` runs hooks and loads extensions.
/// `spells`: each spell runs under its own policy (`spells:` sections), so
/// a spell that rewrote another would run its code with the other's
/// grants, network and secrets at the next run.
const PROTECTED: [&str; 5] = ["magus.yaml", "magus.lock", "spells", ".git", ".hg"];

/// Components that make everything beneath them protected, wherever they
/// appear in the workspace: git's and Mercurial's repository directories.
const VCS_DIRS: [&str; 2] = [".git", ".hg"];

/// `name` is one of [`PROTECTED`] on some case-insensitive disk (every
/// name is compared so, on every platform: see `policy::names`).
fn is_protected_name(name: &[u8]) -> bool {
    names::which(name, &PROTECTED).is_some()
}

/// `name` is one of [`VCS_DIRS`], compared as [`is_protected_name`] does.
fn is_vcs_dir(name: &[u8]) -> bool {
    names::which(name, &VCS_DIRS).is_some()
}

/// A path that passed the check: the root that allows it and the rest.
#[derive(Debug)]
pub(super) struct Located<'p> {
    pub(super) root: &'p Root,
    /// A hidden store lies within the root ([`GrantRoot`]).
    hides: bool,
    /// Borrowed from the backend's scratch path on the common path, owned
    /// once a symlink was resolved.
    pub(super) abs: Cow<'p, NormalPath>,
    /// Where the part of `abs` below the root starts, in bytes.
    rel_start: usize,
}

impl Located<'_> {
    /// `abs` relative to the root (empty for the root itself).
    pub(super) fn rel(&self) -> &Path {
        let bytes = self.abs.as_os_str().as_encoded_bytes();
        let rel = bytes.get(self.rel_start..).unwrap_or_default();
        // SAFETY: `rel_start` is 0, the end, or just past an ASCII `/` of
        // `abs`'s encoded bytes (see `rel_offset`), and a cut next to an
        // ASCII byte leaves a valid OS string.
        Path::new(unsafe { OsStr::from_encoded_bytes_unchecked(rel) })
    }
}

impl Confined {
    /// The backend over `policy`, resolving relative paths against `cwd`.
    pub(super) fn new(policy: Rc<Policy>, cwd: &Path) -> Confined {
        let roots = policy
            .grants()
            .iter()
            .map(|g| {
                let root = native::folded(&g.path);
                let hidden = policy.hidden().iter();
                let hides = hidden
                    .map(|h| native::folded(h))
                    .any(|h| names::lies_within(&h, &root));
                GrantRoot {
                    handle: OnceCell::new(),
                    hides,
                }
            })
            .collect();
        let base = match native::from_os(cwd) {
            Ok(normal) => Base::Normal(Cwd::new(normal, &policy, policy.workspace_key())),
            Err(_) => Base::Spelled(cwd.to_path_buf()),
        };
        Confined {
            policy,
            base,
            roots,
            scratch: RefCell::new(NormalPath::root()),
            joined: RefCell::new(Vec::new()),
            own_pid: std::process::id(),
            noted: OnceCell::new(),
        }
    }

    /// Whether the policy lets the program at `real` (a resolved path)
    /// run; a path the kernel did not hand back in normal form does not.
    pub(super) fn may_execute(&self, real: &Path) -> bool {
        native::from_os(real)
            .is_ok_and(|real| self.policy.check(&real, Access::Execute).is_allowed())
    }

    /// The absolute, lexically normal form of `spelled`, for `access`
    /// (the code of a refusal of the Windows path model).
    pub(super) fn absolute(
        &self,
        spelled: &str,
        access: Access,
        op: FsOp,
    ) -> Result<NormalPath, GateError> {
        let abs = match &self.base {
            Base::Normal(base) => native::join(&base.path, spelled),
            Base::Spelled(base) => spelled_below(base, spelled),
        };
        abs.map_err(|e| GateError::of_spelling(op, access, spelled, e))
    }

    /// [`Confined::absolute`] into `out`, reusing its allocation (on
    /// Windows a new path: the hot path is the POSIX one).
    fn absolute_into(
        &self,
        spelled: &str,
        access: Access,
        op: FsOp,
        out: &mut NormalPath,
    ) -> Result<(), GateError> {
        if cfg!(windows) {
            *out = self.absolute(spelled, access, op)?;
            return Ok(());
        }
        let joined = match &self.base {
            Base::Normal(base) => base.path.join_into(spelled, out),
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
    ) -> Result<Located<'_>, GateError> {
        let abs = self.absolute(spelled, access, op)?;
        self.locate_abs(spelled, Cow::Owned(abs), access, op)
    }

    /// [`Gate::locate`] for a path already made absolute.
    pub(super) fn locate_abs<'p>(
        &'p self,
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
    ) -> Result<Located<'_>, GateError> {
        let real = resolve_existing_prefix(abs)
            .and_then(|real| native::from_os(&real).map_err(std::io::Error::other))
            .map_err(|e| GateError::io(op, spelled, e))?;
        // On Windows a difference of case alone leads nowhere else.
        let moved = native::folded(&real) != native::folded(abs);
        let leads_to = moved.then(|| real.as_path().to_path_buf());
        self.refuse_special(spelled, &real, leads_to.as_deref(), access, op)?;
        match self.policy.check(&real, access).grant {
            Some(index) if leads_to.is_some() => self.located(index, Cow::Owned(real), spelled, op),
            _ => Err(
                Denial::new(op, access, spelled, abs, leads_to, DenialReason::NotGranted).into(),
            ),
        }
    }

    fn located<'p>(
        &'p self,
        index: usize,
        abs: Cow<'p, NormalPath>,
        spelled: &str,
        op: FsOp,
    ) -> Result<Located<'p>, GateError> {
        let root = self
            .root(index)
            .map_err(|e| GateError::io(op, spelled, e))?;
        // Folding keeps byte offsets: the offset in the folded path holds
        // in `abs`, whose case is kept for the open.
        let folded = native::folded(&abs);
        let root_path = native::folded(root.path());
        let Some(rel_start) = rel_offset(folded.as_os_str().as_encoded_bytes(), &root_path) else {
            let e = std::io::Error::other("the granted root does not contain the path");
            return Err(GateError::io(op, spelled, e));
        };
        Ok(Located {
            root,
            hides: self.hides(index),
            abs,
            rel_start,
        })
    }

    /// The handle of grant `index`'s root, opened on first use.
    fn root(&self, index: usize) -> io::Result<&Root> {
        let unknown = || io::Error::other("the trie named a grant the policy lacks");
        let slot = &self.roots.get(index).ok_or_else(unknown)?.handle;
        if let Some(root) = slot.get() {
            return Ok(root);
        }
        let grant = self.policy.grants().get(index).ok_or_else(unknown)?;
        let root = Root::open(&grant.path)?;
        Ok(slot.get_or_init(|| root))
    }

    /// Whether a hidden store lies within grant `index` (an unknown index
    /// counts as yes).
    fn hides(&self, index: usize) -> bool {
        self.roots.get(index).is_none_or(|r| r.hides)
    }

    /// Opens `spelled` beneath the root that allows `access`: the common
    /// spelling by [`Confined::open_plain`], any other (and any the plain
    /// way cannot settle) by [`Confined::open_general`].
    pub(super) fn open(
        &self,
        spelled: &str,
        access: Access,
        op: FsOp,
        flags: OFlag,
    ) -> Result<Handle, GateError> {
        match self.open_plain(spelled, access, flags) {
            Some(opened) => opened.map_err(|e| GateError::io(op, spelled, e)),
            None => self.open_general(spelled, access, op, flags),
        }
    }

    /// The hot path, with no allocation and no walk of the directory's part
    /// of the path: a plain relative spelling below the spell's directory,
    /// granted by the trie from the directory's cursor, opened beneath its
    /// root. `None` hands the call to [`Confined::open_general`], which
    /// decides it again from the start: a denial (whose message needs the
    /// real path), a spelling a refusal of the gate's own may apply to, or
    /// an open the kernel says left the root.
    pub(super) fn open_plain(
        &self,
        spelled: &str,
        access: Access,
        flags: OFlag,
    ) -> Option<io::Result<Handle>> {
        // Windows spellings all go the general way: the Windows path
        // model folds and refuses names this byte-level path would not.
        let Base::Normal(cwd) = &self.base else {
            return None;
        };
        if cfg!(windows) {
            return None;
        }
        let rel = PlainRelative::new(spelled.as_bytes())?;
        if !cwd.is_ordinary(rel, access) {
            return None;
        }
        let index = self.policy.check_below(cwd.cursor, rel, access).grant?;
        let root = self.root(index).ok()?;
        let mut joined = self.joined.try_borrow_mut().ok()?;
        let below = cwd.below_root(rel, index, root, &mut joined)?;
        let hides = self.hides(index);
        match root.open_beneath_c(below, flags, follow_for(access, hides)) {
            // A protected or hidden file by another name: the general way
            // says why.
            Ok(fd) if self.noted_entry(&fd, access, hides).is_some() => None,
            Ok(fd) => Some(Ok(fd)),
            Err(BeneathError::Escapes) => None,
            Err(BeneathError::Os(e)) => Some(Err(e)),
        }
    }

    /// Opens `spelled` beneath the root that allows `access`. When the
    /// kernel reports that resolution left the root (a symlink or magic
    /// link), the real target is checked and opened beneath *its* root, once.
    ///
    /// The absolute path is built in the backend's scratch path, so the
    /// call allocates nothing; a nested call (none today) would find it
    /// borrowed and allocate its own.
    pub(super) fn open_general(
        &self,
        spelled: &str,
        access: Access,
        op: FsOp,
        flags: OFlag,
    ) -> Result<Handle, GateError> {
        let Ok(mut scratch) = self.scratch.try_borrow_mut() else {
            let abs = self.absolute(spelled, access, op)?;
            return self.open_abs(spelled, Cow::Owned(abs), access, op, flags);
        };
        self.absolute_into(spelled, access, op, &mut scratch)?;
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
    ) -> Result<Handle, GateError> {
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
    ) -> Result<Option<Handle>, GateError> {
        if access == Access::Write {
            self.refuse_repository(located, spelled, op)?;
        }
        match located
            .root
            .open_beneath(located.rel(), flags, follow_for(access, located.hides))
        {
            Ok(fd) => {
                #[cfg(windows)]
                self.recheck_final(&fd, located, spelled, access, op)?;
                if let Some(entry) = self.noted_entry(&fd, access, located.hides) {
                    let leads_to = Some(entry.path.clone());
                    let reason = entry.kind.reason();
                    return Err(
                        Denial::new(op, access, spelled, &located.abs, leads_to, reason).into(),
                    );
                }
                Ok(Some(fd))
            }
            Err(BeneathError::Escapes) => Ok(None),
            Err(BeneathError::Os(e)) => Err(GateError::io(op, spelled, e)),
        }
    }

    /// Windows: where the opened handle really is
    /// (`GetFinalPathNameByHandleW`), checked again. cap-std's lookup
    /// already keeps links beneath the root; this also catches what the
    /// lexical model cannot see (a junction or mount point the lookup
    /// crossed, a name Windows matched in a way the model did not), so
    /// what was opened is what the policy allows. A write follows no link
    /// at all, so only reads can meet a difference here. (On Unix the
    /// component walk or `openat2` follows no link it has not checked, so
    /// no re-check is made; macOS's `F_GETPATH` serves only `open_parent`.)
    #[cfg(windows)]
    fn recheck_final(
        &self,
        handle: &Handle,
        located: &Located,
        spelled: &str,
        access: Access,
        op: FsOp,
    ) -> Result<(), GateError> {
        let real = super::fs_ops::final_path(handle).map_err(|e| GateError::io(op, spelled, e))?;
        if native::folded(&real) == native::folded(&located.abs) {
            return Ok(());
        }
        let leads_to = Some(real.to_path_buf());
        self.refuse_special(spelled, &real, leads_to.as_deref(), access, op)?;
        if self.policy.check(&real, access).is_allowed() {
            return Ok(());
        }
        let reason = DenialReason::NotGranted;
        Err(Denial::new(op, access, spelled, &located.abs, leads_to, reason).into())
    }

    /// The protected or hidden file `handle` is, by device and inode,
    /// where `access` calls for a look: on every write, and on a read
    /// beneath a root that `hides` a store (other reads make no system
    /// call more). A read may reach a protected file; a write reaches
    /// neither.
    pub(super) fn noted_entry(
        &self,
        handle: &Handle,
        access: Access,
        hides: bool,
    ) -> Option<&noted::Entry> {
        if access != Access::Write && !hides {
            return None;
        }
        let entry = self.noted().find(handle)?;
        (access == Access::Write || entry.kind == noted::Kind::Hidden).then_some(entry)
    }

    /// The protected and hidden files by identity, noted on first use.
    pub(super) fn noted(&self) -> &Noted {
        self.noted.get_or_init(|| Box::new(Noted::of(&self.policy)))
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
        } else if self.is_hidden(path) || is_own_memory(path, self.own_pid) {
            DenialReason::NotGranted
        } else {
            return Ok(());
        };
        let leads_to = leads_to.map(Path::to_path_buf);
        Err(Denial::new(op, access, spelled, path, leads_to, reason).into())
    }

    /// A rename or removal may not take away a protected path, nor any
    /// directory holding one (moving `.git` aside, writing a hook, and
    /// moving it back would plant the hook through `fs.*` alone), nor a
    /// directory holding a hidden credential store (the store is hidden
    /// where it is: moved, it could be read and written at its new path).
    pub(super) fn refuse_protected_entry(
        &self,
        spelled: &str,
        abs: &Path,
        entry: &Path,
        op: FsOp,
    ) -> Result<(), GateError> {
        let leads_to = (entry != abs).then(|| entry.to_path_buf());
        let reason = DenialReason::Protected;
        if let Some(store) = self.held_store(entry) {
            let protection = Protection::HoldsStore {
                store: store.to_path_buf(),
            };
            let denial = Denial::new(op, Access::Write, spelled, abs, leads_to, reason);
            return Err(denial.protected_by(protection).into());
        }
        if !self.holds_protected(entry) && !self.is_protected(entry) {
            return Ok(());
        }
        Err(Denial::new(op, Access::Write, spelled, abs, leads_to, reason).into())
    }

    /// A hidden credential store (`Policy::hidden`) that is `dir` or lies
    /// below it, names compared in any case.
    fn held_store(&self, dir: &Path) -> Option<&Path> {
        let dir = native::folded(dir);
        self.policy
            .hidden()
            .iter()
            .find(|store| names::lies_within(&native::folded(store), &dir))
            .map(PathBuf::as_path)
    }

    /// `path` is a credential store the policy hides, or lies in one
    /// (`Policy::hidden`): without the jail only this refuses it to
    /// `fs.*`; in it the view hides it too.
    fn is_hidden(&self, path: &Path) -> bool {
        let hidden = self.policy.hidden();
        if hidden.is_empty() {
            return false;
        }
        // Names in any case, as a case-insensitive disk compares them
        // (`.SSH` is `.ssh`, `CREDENTIALS.toml` is `credentials.toml`).
        let path = native::folded(path);
        hidden
            .iter()
            .any(|h| names::lies_within(&path, &native::folded(h)))
    }

    /// `path` is a protected path or lies beneath one, its names compared
    /// in any case.
    fn is_protected(&self, path: &Path) -> bool {
        names::strip_prefix(&native::folded(path), self.policy.workspace_key())
            .is_some_and(is_protected_rest)
    }

    /// `path` is a protected path or a directory holding one (the
    /// workspace and its ancestors included), its names compared in any
    /// case.
    fn holds_protected(&self, path: &Path) -> bool {
        let workspace = self.policy.workspace_key();
        let path = native::folded(path);
        let Some(rest) = names::strip_prefix(&path, workspace) else {
            return names::lies_within(workspace, &path);
        };
        let mut below = rest
            .as_os_str()
            .as_encoded_bytes()
            .split(|&b| b == b'/')
            .filter(|n| !n.is_empty());
        match (below.next(), below.next()) {
            (None, _) => true,
            (Some(name), None) => is_protected_name(name),
            (Some(_), Some(_)) => false,
        }
    }
}

/// `spelled` made absolute against a directory that is not a policy path:
/// on Unix [`normalize`] says why a relative spelling cannot be; on
/// Windows only a drive path resolves.
fn spelled_below(base: &Path, spelled: &str) -> Result<NormalPath, crate::policy::WinPathError> {
    #[cfg(windows)]
    {
        let _ = base;
        native::join(&NormalPath::root(), spelled)
    }
    #[cfg(not(windows))]
    {
        Ok(normalize(base, spelled)?)
    }
}

/// `rest` (a path below the workspace) is protected or lies beneath a
/// protected path, its names compared in any case.
fn is_protected_rest(rest: &Path) -> bool {
    let mut below = rest
        .as_os_str()
        .as_encoded_bytes()
        .split(|&b| b == b'/')
        .filter(|n| !n.is_empty());
    let first = below.next();
    first.is_some_and(|name| is_protected_name(name) || is_vcs_dir(name)) || below.any(is_vcs_dir)
}

fn follow_for(access: Access, root_hides: bool) -> Follow {
    match access {
        // A write must not follow a symlink unchecked: the link may lead to a
        // protected file beneath the same writable root.
        Access::Write => Follow::Never,
        // Nor a read where a hidden store lies beneath the root: the link
        // may lead into it. The open then goes the general way, which
        // checks where the link leads.
        Access::Read | Access::Execute if root_hides => Follow::Never,
        Access::Read | Access::Execute => Follow::BeneathOnly,
    }
}

/// Where `path` continues below `root` (both absolute and lexically
/// normal), in bytes. On this hot path a byte comparison replaces
/// `Path::strip_prefix`, whose component walk cost more than the check.
fn rel_offset(path: &[u8], root: &Path) -> Option<usize> {
    let root = root.as_os_str().as_encoded_bytes();
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
    proc_dir(path).is_some_and(|name| name.parse::<u32>().is_ok_and(|pid| pid != own_pid))
}

/// `/proc/<own pid>/mem` (or `self`, `thread-self`, a task's): magus's
/// own memory, where the spell runs. No binding reads at an offset today,
/// and a read from the start fails, but the process can hold what a spell
/// must never see (a red-team run found the gate let it be opened).
fn is_own_memory(path: &Path, own_pid: u32) -> bool {
    let own = proc_dir(path).is_some_and(|name| {
        name == "self" || name == "thread-self" || name.parse::<u32>() == Ok(own_pid)
    });
    own && path.file_name().is_some_and(|name| name == "mem")
}

/// The entry of `/proc` that `path` lies in or is (`1234`, `self`,
/// `sys`), if it lies in `/proc`; the byte test first, since every gated
/// path passes here.
pub(super) fn proc_dir(path: &Path) -> Option<std::borrow::Cow<'_, str>> {
    if !path.as_os_str().as_encoded_bytes().starts_with(b"/proc/") {
        return None;
    }
    let first = path.strip_prefix("/proc").ok()?.components().next()?;
    Some(first.as_os_str().to_string_lossy())
}

#[cfg(all(test, unix))]
mod tests {
    use super::{is_foreign_proc, is_own_memory, rel_offset, Confined};
    use crate::enforce::gate::FsOp;
    use crate::policy::{Access, Grant, GrantSource, Mode, Network, Policy, SandboxState};
    use std::os::fd::OwnedFd;
    use std::os::unix::fs::symlink;
    use std::path::{Path, PathBuf};
    use std::rc::Rc;

    /// A workspace with protected paths, links in and out, and a read-only
    /// root beside it; returns the base directory.
    fn fixture(dir: &Path) -> PathBuf {
        let base = dir.canonicalize().expect("canonical base");
        for d in ["ws/data", "ws/.git", "ws/sub/.git", "ro/docs"] {
            std::fs::create_dir_all(base.join(d)).expect("directory");
        }
        for f in [
            "ws/data/f",
            "ws/magus.yaml",
            "ws/.git/config",
            "ws/sub/.git/x",
            "ro/docs/r",
            "secret",
        ] {
            std::fs::write(base.join(f), "x").expect("file");
        }
        symlink("data/f", base.join("ws/in")).expect("link");
        symlink("../secret", base.join("ws/out")).expect("link");
        symlink(base.join("ro/docs"), base.join("ws/to-ro")).expect("link");
        base
    }

    fn confined(base: &Path, cwd: &Path) -> Confined {
        let grant = |path: &str, mode| Grant {
            path: base.join(path),
            mode,
            source: GrantSource::Builtin("test"),
        };
        let grants = vec![grant("ws", Mode::Rw), grant("ro", Mode::Ro)];
        let ws = base.join("ws");
        let policy = Policy::new(SandboxState::On, ws, grants, Network::Allow, Vec::new());
        Confined::new(Rc::new(policy), cwd)
    }

    /// What an open came to: the file's identity, or the OS error.
    fn outcome(opened: std::io::Result<OwnedFd>) -> Result<(u64, u64), Option<i32>> {
        opened
            .and_then(|fd| std::fs::File::from(fd).metadata())
            .map(|m| {
                (
                    std::os::unix::fs::MetadataExt::dev(&m),
                    std::os::unix::fs::MetadataExt::ino(&m),
                )
            })
            .map_err(|e| e.raw_os_error())
    }

    /// Wherever the hot path answers, it opens what the general path opens
    /// (or fails the same way); where a refusal of the gate's own or a
    /// link out could apply, it leaves the call to the general path.
    #[test]
    fn the_plain_path_agrees_with_the_general_one() {
        let dir = tempfile::tempdir().expect("scratch");
        let base = fixture(dir.path());
        let cwds = ["ws", "ws/data", "ws/.git", "ws/sub", "", "ro"];
        let spellings = [
            "data/f",
            "f",
            "in",
            "out",
            "to-ro/r",
            "missing",
            "data/missing/deeper",
            "magus.yaml",
            ".git/config",
            "config",
            "sub/.git/x",
            ".git/x",
            "x",
            "ws/data/f",
            "ws/magus.yaml",
            "docs/r",
            "../secret",
            "/etc/hostname",
            "data/f/",
            "./data/f",
        ];
        let mut answered = Vec::new();
        for cwd in cwds {
            let dir = match cwd {
                "" => base.clone(),
                below => base.join(below),
            };
            let gate = confined(&base, &dir);
            for spelled in spellings {
                for access in [Access::Read, Access::Write] {
                    let Some(plain) =
                        gate.open_plain(spelled, access, crate::enforce::beneath::HANDLE)
                    else {
                        continue;
                    };
                    let general = gate.open_general(
                        spelled,
                        access,
                        FsOp::Read,
                        crate::enforce::beneath::HANDLE,
                    );
                    let general = general.map_err(|e| match e {
                        crate::enforce::gate::GateError::Io { source, .. } => source,
                        other => {
                            panic!("{cwd} {spelled} {access:?}: plain answered, general {other:?}")
                        }
                    });
                    assert_eq!(
                        outcome(plain),
                        outcome(general),
                        "{cwd} {spelled} {access:?}"
                    );
                    answered.push((cwd, spelled, access));
                }
            }
        }
        let plain = |cwd, spelled, access| answered.contains(&(cwd, spelled, access));
        assert!(plain("ws", "data/f", Access::Read));
        assert!(plain("ws", "data/f", Access::Write));
        assert!(plain("ws", "missing", Access::Read));
        assert!(plain("ws/data", "f", Access::Write));
        assert!(
            plain("ws", ".git/config", Access::Read),
            "reading .git is allowed"
        );
        assert!(plain("", "ws/data/f", Access::Read) && !plain("", "ws/data/f", Access::Write));
        for (cwd, spelled, access) in [
            ("ws", "out", Access::Read),
            ("ws", "to-ro/r", Access::Read),
            ("ws", "in", Access::Write),
            ("ws", "magus.yaml", Access::Write),
            ("ws", ".git/config", Access::Write),
            ("ws", "sub/.git/x", Access::Write),
            ("ws/sub", ".git/x", Access::Write),
            ("ws/.git", "config", Access::Write),
            ("ro", "docs/r", Access::Write),
            ("ws/data", "../secret", Access::Read),
            ("ws", "data/f/", Access::Read),
        ] {
            assert!(!plain(cwd, spelled, access), "{cwd} {spelled} {access:?}");
        }
    }

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
            let got = rel_offset(path.as_bytes(), Path::new(root)).map(|at| &path[at..]);
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

    /// Through the gate, with `/proc` granted: the memory is refused in
    /// each spelling; the control reads the process's map beside it.
    #[test]
    fn the_processs_own_memory_is_refused_and_its_map_read() {
        let dir = tempfile::tempdir().expect("scratch");
        let ws = dir.path().canonicalize().expect("canonical");
        let proc = Grant {
            path: PathBuf::from("/proc"),
            mode: Mode::Ro,
            source: GrantSource::Builtin("test"),
        };
        let policy = Policy::new(
            SandboxState::On,
            ws.clone(),
            vec![proc],
            Network::Allow,
            Vec::new(),
        );
        let gate = crate::enforce::gate::Gate::new(Rc::new(policy), ws);
        let own = format!("/proc/{}/mem", std::process::id());
        for path in ["/proc/self/mem", "/proc/thread-self/mem", own.as_str()] {
            match gate.read(path) {
                Err(crate::enforce::gate::GateError::Denied(d)) => {
                    assert_eq!(
                        d.reason,
                        crate::enforce::gate::DenialReason::NotGranted,
                        "{path}"
                    );
                }
                other => panic!("{path}: {other:?}"),
            }
        }
        let map = gate.read("/proc/self/maps").expect("control");
        assert!(!map.is_empty());
    }

    #[test]
    fn the_processs_own_memory_is_known_in_every_spelling() {
        let cases = [
            ("/proc/self/mem", true),
            ("/proc/thread-self/mem", true),
            ("/proc/77/mem", true),
            ("/proc/77/task/78/mem", true),
            ("/proc/self/maps", false),
            ("/proc/self/environ", false),
            ("/proc/1/mem", false),
            ("/home/self/mem", false),
        ];
        for (path, own) in cases {
            assert_eq!(is_own_memory(Path::new(path), 77), own, "{path}");
        }
    }
}
