//! The jail's filesystem view as data: the one `Policy` compiled into an
//! ordered list of mount steps, bubblewrap-style, that a test can read
//! without privileges. Nothing here mounts; [`super::apply`] walks the
//! list and decides nothing.
//!
//! Every path in a step is where it appears inside the jail, and for a
//! bind also where it comes from on the host: grants keep their path.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Component, Path, PathBuf};

use super::protect::{carve_outs, leftover_inputs, Carve, CarveReason, KeptLink};
use crate::enforce::leftovers;
use crate::policy::real_paths::{look, Looked};
use crate::policy::{lies_within, Access, GrantSource, Mode, NormalPath, Policy};

/// One setup operation, applied in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Mount events no longer cross between the host and the jail.
    PrivatePropagation,
    /// A tmpfs becomes the staging root: the host's root stays reachable
    /// (for bind sources) until [`Step::PivotRoot`], and the new root is
    /// built on an empty tmpfs. `base` is where that tmpfs is mounted
    /// before it becomes the root: any existing directory but `/` (once it
    /// is the root it no longer covers `base`, so sources there stay
    /// reachable).
    Stage { base: PathBuf },
    /// An empty directory, for a path that must exist though nothing in it
    /// is granted (`$HOME`).
    Dir { path: PathBuf },
    /// A fresh tmpfs, private to this run, of at most `size`.
    Tmpfs {
        path: PathBuf,
        why: &'static str,
        size: TmpfsSize,
    },
    /// The host's `path` bound at the same path.
    Bind {
        path: PathBuf,
        access: BindAccess,
        why: BindWhy,
        if_missing: IfMissing,
    },
    /// A mount the host has inside a read-only grant, made read-only too:
    /// a recursive bind keeps each submount's own flags (`/sys/fs/cgroup`
    /// under `/sys`). Skipped where the path is no mount point in the view
    /// (an unbindable mount is not copied).
    RemountReadOnly { path: PathBuf },
    /// A `/proc` of the jail's PID namespace; read-only in the view (see
    /// [`proc_steps`]).
    Proc { path: PathBuf, access: BindAccess },
    /// A new `devpts` instance: new terminals, none of the user's.
    Devpts { path: PathBuf },
    /// A credential store inside a grant that does not name it, hidden
    /// ([`credential_masks`]): an empty read-only tmpfs over a directory,
    /// `/dev/null` bound read-only over a file.
    Mask { path: PathBuf, dir: bool },
    /// A symbolic link (merged-`/usr` links, `/dev/ptmx`, `/dev/fd`).
    Symlink { path: PathBuf, target: PathBuf },
    /// The new root's own tmpfs (the directories made to hold mount
    /// points, `$HOME`) becomes read-only; the mounts on it keep theirs.
    ReadOnlyRoot,
    /// The new root replaces the staging root; PID 1 then detaches the
    /// host's root (`apply::detach_host_root`) while magus proper sets up.
    PivotRoot,
}

/// How much a private tmpfs (`/tmp`, `/dev/shm`, `$TMPDIR`) may hold: its
/// pages are memory, so without `size=` a child could fill the machine's
/// RAM there whatever `limits.memory` says; and without `nr_inodes=`,
/// empty files, which `size=` does not count, take kernel memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TmpfsSize {
    pub bytes: u64,
    pub inodes: u64,
}

/// Bytes of a private tmpfs per inode it may hold.
const BYTES_PER_INODE: u64 = 16 << 10;
/// Inodes a private tmpfs may hold at least, however small.
const MIN_INODES: u64 = 1024;

impl TmpfsSize {
    /// `limits.memory` where declared, else a quarter of the machine's
    /// RAM (tmpfs's own default is half); one inode per 16 KiB, at least
    /// 1024. Each private tmpfs gets this much (docs/survivors.md).
    pub fn for_memory(memory: Option<u64>) -> TmpfsSize {
        let bytes = memory.unwrap_or_else(|| physical_memory() / 4).max(1 << 20);
        TmpfsSize {
            bytes,
            inodes: (bytes / BYTES_PER_INODE).max(MIN_INODES),
        }
    }

    /// The mount options, after `mode=1777`.
    pub fn options(&self) -> String {
        format!("mode=1777,size={},nr_inodes={}", self.bytes, self.inodes)
    }
}

/// The machine's RAM in bytes (1 GiB if it cannot be read).
fn physical_memory() -> u64 {
    // SAFETY: sysinfo fills the struct it is given and nothing else.
    let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
    // SAFETY: as above, with a valid pointer.
    if unsafe { libc::sysinfo(&mut info) } != 0 {
        return 1 << 30;
    }
    // `c_ulong`: 64 bits here, 32 on 32-bit targets.
    (info.totalram as u64).saturating_mul(u64::from(info.mem_unit.max(1)))
}

/// Whether a bind (or a fresh `/proc`) may be written through. A
/// read-only mount also refuses metadata changes (`chmod`, `utimes`,
/// `setxattr`: `EROFS`), which Landlock does not handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindAccess {
    ReadOnly,
    ReadWrite,
}

/// Why a path is bound: a grant, a protected carve-out inside one, or a
/// pin ([`pin_steps`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindWhy {
    Grant,
    Carve(CarveReason),
    /// A directory between a writable grant and a carve-out, bound
    /// read-write over itself so that it is a mount point, which no child
    /// can rename or remove (`EBUSY`): renaming `.git` aside and copying
    /// it back, or a parent of `~/.config/git`, would leave an unprotected
    /// copy where git and the shells look.
    Pin,
}

/// What a bind does when its source does not exist when applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfMissing {
    /// Fail: the step names the path.
    Fail,
    /// Create an empty directory first (a missing `.git/hooks` or `PATH`
    /// directory under a writable grant, so a child cannot create it and
    /// plant code there).
    MakeDir,
    /// Create an empty file first (a `config.worktree` that git would read).
    MakeFile,
}

impl Step {
    /// The path inside the jail this step makes, if any.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Step::Dir { path }
            | Step::Tmpfs { path, .. }
            | Step::Bind { path, .. }
            | Step::RemountReadOnly { path }
            | Step::Proc { path, .. }
            | Step::Devpts { path }
            | Step::Mask { path, .. }
            | Step::Symlink { path, .. } => Some(path),
            Step::PrivatePropagation
            | Step::Stage { .. }
            | Step::ReadOnlyRoot
            | Step::PivotRoot => None,
        }
    }

    /// What the step does, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Step::PrivatePropagation => "make mounts private",
            Step::Stage { .. } => "stage the new root",
            Step::Dir { .. } => "create directory",
            Step::Tmpfs { .. } => "mount tmpfs",
            Step::Bind { .. } => "bind-mount",
            Step::RemountReadOnly { .. } => "remount read-only",
            Step::Proc { .. } => "mount /proc",
            Step::Devpts { .. } => "mount devpts",
            Step::Mask { .. } => "hide credential store",
            Step::Symlink { .. } => "create symlink",
            Step::ReadOnlyRoot => "make the new root read-only",
            Step::PivotRoot => "pivot to the new root",
        }
    }
}

/// What the view needs from the environment besides the policy.
#[derive(Debug, Clone, Default)]
pub struct ViewInputs {
    /// `$HOME` as spelled.
    pub home: Option<PathBuf>,
    /// `$TMPDIR` as spelled.
    pub tmpdir: Option<PathBuf>,
    /// The user's `PATH`.
    pub path_var: Option<OsString>,
    /// The running magus executable.
    pub exe: Option<PathBuf>,
}

impl ViewInputs {
    /// From magus's environment and `/proc/self/exe`.
    pub fn from_env(env: &[(OsString, OsString)]) -> ViewInputs {
        let var = |name: &str| crate::policy::lookup(env, name).map(OsStr::to_os_string);
        let absolute = |name: &str| var(name).map(PathBuf::from).filter(|p| p.is_absolute());
        ViewInputs {
            home: absolute("HOME"),
            tmpdir: absolute("TMPDIR"),
            path_var: var("PATH"),
            exe: std::env::current_exe().ok(),
        }
    }
}

/// The ordered steps of one jail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JailPlan {
    steps: Vec<Step>,
    /// The `.git` search stopped at its limit: deeper repositories were
    /// not found, so their hooks and config are not protected.
    pub search_truncated: bool,
    /// Symbolic links to protected paths under writable grants (a `.git`
    /// link, a linked `~/.bashrc`), put back after the run.
    pub links: Vec<KeptLink>,
    /// Where the sweep after the run looks (`crate::enforce::leftovers`).
    pub leftovers: leftovers::Inputs,
}

impl JailPlan {
    /// Only a PID namespace with its own `/proc` over the host's view (for
    /// the kernel tests, which build their own Landlock policies).
    #[cfg_attr(not(feature = "internals"), allow(dead_code))]
    pub fn pid_only() -> JailPlan {
        JailPlan {
            steps: vec![
                Step::PrivatePropagation,
                Step::Proc {
                    path: PathBuf::from("/proc"),
                    access: BindAccess::ReadWrite,
                },
            ],
            search_truncated: false,
            links: Vec::new(),
            leftovers: leftovers::Inputs::default(),
        }
    }

    /// The full view of `policy`: each grant at its own path and nothing
    /// else, protected paths read-only inside writable grants.
    pub fn compile(policy: &Policy, inputs: &ViewInputs) -> JailPlan {
        let mut mounts: Vec<Step> = policy
            .grants()
            .iter()
            .flat_map(|g| grant_steps(policy, g))
            .collect();
        // With `mount_setattr`, a read-only bind is read-only with all its
        // submounts at once; only older kernels need them one by one (and
        // the mount table read to find them).
        if !super::apply::mount_setattr_available() {
            mounts.extend(read_only_submounts(policy, &mounts, &host_mount_points()));
        }
        if let Some(home) = inputs.home.as_deref().and_then(real) {
            mounts.push(Step::Dir { path: home });
        }
        let found = carve_outs(policy, inputs);
        let leftovers = leftover_inputs(policy, inputs, &found);
        mounts.extend(pin_steps(policy, &found.carves));
        let kept_links = found.links;
        mounts.extend(found.carves.into_iter().map(carve_step));
        mounts.extend(credential_masks(policy));
        let links = symlinks(policy, inputs, &mounts);
        mounts.extend(links);
        // Parents before children: a grant inside another is bound over it,
        // a carve-out over its grant. The sort is stable, so a path's own
        // steps keep their order (devpts before its ptmx link).
        // Byte order puts a path before everything below it, as component
        // order does, and costs a fraction of it.
        mounts.sort_by(|a, b| path_bytes(a).cmp(&path_bytes(b)));
        mounts.dedup();
        let mut steps = vec![Step::PrivatePropagation, Step::Stage { base: stage_base() }];
        steps.extend(mounts);
        steps.extend([Step::ReadOnlyRoot, Step::PivotRoot]);
        JailPlan {
            steps,
            search_truncated: found.truncated,
            links: kept_links,
            leftovers,
        }
    }

    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The protected carve-outs, with why each is there.
    pub fn carve_outs(&self) -> impl Iterator<Item = (&Path, &CarveReason)> {
        self.steps.iter().filter_map(|s| match s {
            Step::Bind {
                path,
                why: BindWhy::Carve(reason),
                ..
            } => Some((path.as_path(), reason)),
            _ => None,
        })
    }

    /// Whether `path` exists in the view (ignoring what lies inside bound
    /// grants, which is the host's): the deepest step at or above it.
    #[cfg_attr(not(feature = "internals"), allow(dead_code))]
    pub fn covering_step(&self, path: &Path) -> Option<&Step> {
        self.steps
            .iter()
            .filter(|s| s.path().is_some_and(|p| lies_within(path, p)))
            .max_by_key(|s| s.path().map(|p| p.components().count()))
    }
}

/// A step's path as bytes, for sorting (`None` first).
fn path_bytes(step: &Step) -> Option<&[u8]> {
    use std::os::unix::ffi::OsStrExt;
    step.path().map(|p| p.as_os_str().as_bytes())
}

/// The host's mount points, from `/proc/self/mountinfo` (field 5, with
/// its octal escapes undone); empty when it cannot be read.
fn host_mount_points() -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|field| PathBuf::from(unescape_mountinfo(field)))
        .collect()
}

/// `\040` → space, and the like (the kernel escapes space, tab, newline
/// and backslash in mountinfo).
fn unescape_mountinfo(field: &str) -> String {
    let mut out = Vec::new();
    let bytes = field.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|d| {
            let text = std::str::from_utf8(d).ok()?;
            u8::from_str_radix(text, 8).ok()
        });
        match (bytes[i], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A [`Step::RemountReadOnly`] for each host mount point whose nearest
/// grant above it is bound read-only (and which no grant of its own binds).
fn read_only_submounts(policy: &Policy, mounts: &[Step], points: &[PathBuf]) -> Vec<Step> {
    let read_only = |grant: &Path| {
        mounts.iter().any(|s| {
            matches!(s, Step::Bind { path, access: BindAccess::ReadOnly, why: BindWhy::Grant, .. }
                if path.as_os_str() == grant.as_os_str())
        })
    };
    let mut out: Vec<Step> = Vec::new();
    for point in points {
        let nearest = policy
            .grants()
            .iter()
            .filter(|g| lies_within(point, &g.path))
            .max_by_key(|g| g.path.as_os_str().len());
        let Some(grant) = nearest else {
            continue;
        };
        let step = Step::RemountReadOnly {
            path: point.clone(),
        };
        if grant.path != *point && read_only(&grant.path) && !out.contains(&step) {
            out.push(step);
        }
    }
    out
}

/// Where to mount the staging tmpfs: the first directory of these that
/// exists (every Linux system has one).
fn stage_base() -> PathBuf {
    ["/tmp", "/mnt", "/run", "/dev"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_dir())
        .unwrap_or_else(|| PathBuf::from("/tmp"))
}

fn grant_steps(policy: &Policy, grant: &crate::policy::Grant) -> Vec<Step> {
    let path = grant.path.clone();
    if grant.is_fresh_tmpfs() {
        return vec![Step::Tmpfs {
            path,
            why: "private to this run",
            size: TmpfsSize::for_memory(policy.limits().memory),
        }];
    }
    match path.to_str() {
        Some("/proc") => return proc_steps(),
        Some("/dev/pts") => return devpts_steps(),
        _ => {}
    }
    // The rights of a path are the union over its granted ancestors (what
    // Landlock enforces): an `ro` grant inside an `rw` one stays writable.
    let writable = NormalPath::new(grant.path.clone())
        .is_ok_and(|p| policy.check(&p, Access::Write).is_allowed());
    let access = match (grant.mode, writable, is_device(&path)) {
        (_, _, true) | (Mode::Ro, false, _) => BindAccess::ReadOnly,
        (Mode::Rw, _, false) | (Mode::Ro, true, false) => BindAccess::ReadWrite,
    };
    vec![Step::Bind {
        path,
        access,
        why: BindWhy::Grant,
        if_missing: IfMissing::Fail,
    }]
}

/// Whether the view shows `grant` as a mount of its own (a private tmpfs,
/// `/proc`, the devpts), not the host's inode bound: what names it there
/// is not the host's file (for Landlock's rule, see `landlock::begin`).
pub(crate) fn fresh_in_view(grant: &crate::policy::Grant) -> bool {
    grant.is_fresh_tmpfs() || matches!(grant.path.to_str(), Some("/proc" | "/dev/pts"))
}

/// Whether `path` is a device node (`/dev/null`, `/dev/tty`, a user's
/// `/dev/kvm`). Such a grant is bound read-only whatever its mode: the
/// node is the host's own inode, which a root child (its owner) could
/// otherwise `chmod 000` or re-time for the whole machine, outliving the
/// run, while reading and writing a device through a read-only mount work
/// as before (the mount's flag guards the inode, not the device's I/O).
fn is_device(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path)
        .is_ok_and(|m| m.file_type().is_char_device() || m.file_type().is_block_device())
}

/// `/proc`, mounted read-only, and the `/dev` links into it that shells
/// rely on. Read-only as the `ro` grant of `/proc` says, because its
/// machine-wide parts are writable by uid 0 with no capability at all,
/// and Landlock's `ro` grant does not cover all of it:
/// - sysctls check only the file's mode (`sys/kernel/core_pattern` names
///   a program the kernel runs as root outside every namespace at the next
///   crash), and `sysrq-trigger` reboots: Landlock refuses these writes,
///   but where Landlock is missing only the view can;
/// - the mode of a top-level entry (`/proc/slabinfo`, `/proc/meminfo`) is
///   kept by the kernel for every `/proc` of the machine, and `chmod`
///   (which Landlock does not handle) by its owner, root, changes it for
///   the host and every container: `EROFS` on a read-only mount.
///
/// Children lose nothing: Landlock's `ro` grant already refuses every
/// write under `/proc` (`/proc/self/oom_score_adj` included).
fn proc_steps() -> Vec<Step> {
    let link = |name: &str, target: &str| Step::Symlink {
        path: Path::new("/dev").join(name),
        target: PathBuf::from(target),
    };
    vec![
        Step::Proc {
            path: PathBuf::from("/proc"),
            access: BindAccess::ReadOnly,
        },
        link("fd", "/proc/self/fd"),
        link("stdin", "/proc/self/fd/0"),
        link("stdout", "/proc/self/fd/1"),
        link("stderr", "/proc/self/fd/2"),
    ]
}

fn devpts_steps() -> Vec<Step> {
    vec![
        Step::Devpts {
            path: PathBuf::from("/dev/pts"),
        },
        Step::Symlink {
            path: PathBuf::from("/dev/ptmx"),
            target: PathBuf::from("pts/ptmx"),
        },
    ]
}

fn carve_step(carve: Carve) -> Step {
    Step::Bind {
        path: carve.path,
        access: BindAccess::ReadOnly,
        why: BindWhy::Carve(carve.reason),
        if_missing: carve.missing,
    }
}

/// The pins of `carves` ([`BindWhy::Pin`]): every directory strictly
/// between a carve-out and the deepest grant that shows it (a grant's own
/// bind is already a mount point), each once.
fn pin_steps(policy: &Policy, carves: &[Carve]) -> Vec<Step> {
    let mut pins: Vec<PathBuf> = Vec::new();
    for carve in carves {
        let Some(root) = policy
            .grants()
            .iter()
            .map(|g| g.path.as_path())
            .filter(|g| lies_within(&carve.path, g))
            .max_by_key(|g| g.as_os_str().len())
        else {
            continue;
        };
        let between = carve.path.ancestors().skip(1).take_while(|a| *a != root);
        for dir in between.filter(|a| a.starts_with(root)) {
            if !pins.iter().any(|p| p == dir) && !carves.iter().any(|c| c.path == dir) {
                pins.push(dir.to_path_buf());
            }
        }
    }
    pins.into_iter()
        .map(|path| Step::Bind {
            path,
            access: BindAccess::ReadWrite,
            why: BindWhy::Pin,
            // Missing only above a carve-out that is created (a missing
            // `~/.config` above `~/.config/git`).
            if_missing: IfMissing::MakeDir,
        })
        .collect()
}

fn real(path: &Path) -> Option<PathBuf> {
    path.canonicalize().ok()
}

/// The symlinks on the way to granted paths as the user spells them
/// (`/bin` → `usr/bin`, `/lib64`, `/etc/resolv.conf`, a `$HOME` under a
/// linked `/home`), recreated where no bound grant already shows them.
fn symlinks(policy: &Policy, inputs: &ViewInputs, mounts: &[Step]) -> Vec<Step> {
    let mut spelled: Vec<PathBuf> = crate::policy::BUILTIN_RO
        .iter()
        .chain(crate::policy::BUILTIN_RW.iter())
        .map(|b| PathBuf::from(b.path))
        .collect();
    spelled.extend(inputs.home.iter().cloned());
    spelled.extend(inputs.tmpdir.iter().cloned());
    spelled.extend(policy.grants().iter().filter_map(|g| match &g.source {
        GrantSource::Config { spelled, .. } => expand_home(spelled, inputs.home.as_deref()),
        _ => None,
    }));
    let mut out: Vec<Step> = Vec::new();
    // A grant's path is real: neither it nor any parent is a link, and
    // resolution has just asked the kernel so. Most spelled paths are
    // grants, or lie beneath one's parents.
    let mut seen: std::collections::HashMap<PathBuf, Looked> = policy
        .grants()
        .iter()
        .flat_map(|g| g.path.ancestors())
        .map(|p| (p.to_path_buf(), Looked::Present))
        .collect();
    for path in spelled {
        let Some(link) = first_symlink(&path, &mut seen) else {
            continue;
        };
        let shown = mounts.iter().any(|m| match (m, m.path()) {
            (Step::Dir { .. }, _) => false,
            (_, Some(p)) => lies_within(&link.0, p),
            _ => false,
        });
        if !shown
            && leads_to_grant(policy, &link.0)
            && !out.iter().any(|s| s.path() == Some(&link.0))
        {
            out.push(Step::Symlink {
                path: link.0,
                target: link.1,
            });
        }
    }
    out
}

/// `~/x` against `home`; absolute paths as they are; anything else `None`
/// (workspace-relative entries resolve beneath the real workspace).
fn expand_home(spelled: &str, home: Option<&Path>) -> Option<PathBuf> {
    match spelled.strip_prefix("~/") {
        Some(rest) => home.map(|h| h.join(rest)),
        None if spelled.starts_with('/') => Some(PathBuf::from(spelled)),
        None => None,
    }
}

/// The first component of `path` that is a symlink, and what it says.
fn first_symlink(
    path: &Path,
    seen: &mut std::collections::HashMap<PathBuf, Looked>,
) -> Option<(PathBuf, PathBuf)> {
    let mut at = PathBuf::from("/");
    for component in path.components() {
        let Component::Normal(name) = component else {
            continue;
        };
        at.push(name);
        // Most spelled paths share their first components (`/etc`): each
        // is looked at once.
        let what = seen.entry(at.clone()).or_insert_with(|| look(&at));
        match what.clone() {
            Looked::Link(target) => return Some((at, target)),
            Looked::Present => continue,
            Looked::Absent => return None,
        }
    }
    None
}

/// A link is worth recreating only when what it leads to is granted.
fn leads_to_grant(policy: &Policy, link: &Path) -> bool {
    let Some(target) = real(link) else {
        return false;
    };
    NormalPath::new(target).is_ok_and(|t| policy.check(&t, Access::Read).is_allowed())
}

/// The policy's hidden credential stores (`Policy::hidden`, e.g.
/// `~/.cargo/credentials.toml` under a grant of `~/.cargo`) masked in the
/// view. Without the jail nothing can hide a path inside a Landlock
/// grant from children (the README says so); the gate still refuses it.
fn credential_masks(policy: &Policy) -> Vec<Step> {
    policy
        .hidden()
        .iter()
        .filter_map(|path| {
            let meta = path.symlink_metadata().ok()?;
            let dir = meta.is_dir();
            Some(Step::Mask {
                path: path.clone(),
                dir,
            })
        })
        .collect()
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.path() {
            Some(path) => write!(f, "{} {}", self.kind(), path.display()),
            None => f.write_str(self.kind()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Grant, Network, SandboxState};

    fn grant(path: &Path, mode: Mode, source: GrantSource) -> Grant {
        Grant {
            path: path.to_path_buf(),
            mode,
            source,
        }
    }

    /// A workspace with a repository, a nested one and a lock, a home with
    /// a start-up file and a `PATH` directory, all under `rw` grants.
    fn fixture() -> (tempfile::TempDir, Policy, ViewInputs) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (ws, home) = (root.join("ws"), root.join("home"));
        for sub in [
            "ws/.git/objects",
            "ws/.git/hooks",
            "ws/sub/.git/objects",
            "home/bin",
        ] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        for file in [
            "ws/magus.yaml",
            "ws/.git/HEAD",
            "ws/.git/config",
            "ws/sub/.git/HEAD",
            "ws/magus-bin",
        ] {
            std::fs::write(root.join(file), "x").unwrap();
        }
        std::fs::write(home.join(".bashrc"), "x").unwrap();
        let config = GrantSource::Config {
            spelled: "~".into(),
            line: 1,
            column: 1,
            spell: None,
        };
        let grants = vec![
            grant(&ws, Mode::Rw, GrantSource::Workspace),
            grant(
                Path::new("/tmp"),
                Mode::Rw,
                GrantSource::Builtin("temporary files"),
            ),
            grant(
                Path::new("/dev/pts"),
                Mode::Rw,
                GrantSource::Builtin("pseudo-terminals"),
            ),
            grant(
                Path::new("/proc"),
                Mode::Ro,
                GrantSource::Builtin("process information"),
            ),
            grant(
                Path::new("/usr"),
                Mode::Ro,
                GrantSource::Builtin("system code"),
            ),
            grant(
                Path::new("/dev/null"),
                Mode::Rw,
                GrantSource::Builtin("the null device"),
            ),
            grant(&home, Mode::Rw, config),
        ];
        let policy = Policy::new(SandboxState::On, ws, grants, Network::Allow, Vec::new());
        let inputs = ViewInputs {
            home: Some(home.clone()),
            tmpdir: None,
            path_var: Some(format!("{}:/usr/bin", home.join("bin").display()).into()),
            exe: Some(root.join("ws/magus-bin")),
        };
        (dir, policy, inputs)
    }

    fn position(plan: &JailPlan, want: impl Fn(&Step) -> bool) -> usize {
        plan.steps()
            .iter()
            .position(want)
            .unwrap_or_else(|| panic!("no such step in {:#?}", plan.steps()))
    }

    /// Every directory between a grant and a carve-out is pinned, before
    /// the carve-outs inside it; a grant's own root is not.
    #[test]
    fn directories_above_carve_outs_are_pinned_read_write() {
        let (_dir, policy, inputs) = fixture();
        let plan = JailPlan::compile(&policy, &inputs);
        let ws = policy.workspace().to_path_buf();
        let pins: Vec<&Path> = plan
            .steps()
            .iter()
            .filter_map(|s| match s {
                Step::Bind {
                    path,
                    access: BindAccess::ReadWrite,
                    why: BindWhy::Pin,
                    ..
                } => Some(path.as_path()),
                _ => None,
            })
            .collect();
        for dir in [ws.join(".git"), ws.join("sub"), ws.join("sub/.git")] {
            assert!(
                pins.contains(&dir.as_path()),
                "{dir:?} not pinned: {pins:#?}"
            );
            let pin = position(&plan, |s| s.path() == Some(dir.as_path()));
            let hooks = dir.join(if dir.ends_with("sub") {
                ".git/hooks"
            } else {
                "hooks"
            });
            let carve = position(&plan, |s| s.path() == Some(hooks.as_path()));
            assert!(pin < carve, "{dir:?} pinned after {hooks:?}");
        }
        assert!(!pins.contains(&ws.as_path()), "{pins:#?}");
    }

    #[test]
    fn a_private_tmpfs_holds_at_most_the_memory_limit() {
        let size = TmpfsSize::for_memory(Some(64 << 20));
        assert_eq!((size.bytes, size.inodes), (64 << 20, 4096));
        assert_eq!(size.options(), "mode=1777,size=67108864,nr_inodes=4096");
        let small = TmpfsSize::for_memory(Some(16 << 20));
        assert_eq!(small.inodes, MIN_INODES);
        let default = TmpfsSize::for_memory(None);
        assert_eq!(default.bytes, physical_memory() / 4);
        assert_eq!(
            default.inodes,
            (default.bytes / BYTES_PER_INODE).max(MIN_INODES)
        );
    }

    #[test]
    fn each_grant_becomes_its_step_between_stage_and_pivot() {
        let (_dir, policy, inputs) = fixture();
        let plan = JailPlan::compile(&policy, &inputs);
        let steps = plan.steps();
        assert_eq!(steps[0], Step::PrivatePropagation);
        assert!(matches!(steps[1], Step::Stage { .. }), "{steps:#?}");
        assert_eq!(steps.last(), Some(&Step::PivotRoot));
        let at = |p: &str| PathBuf::from(p);
        for expected in [
            Step::Tmpfs {
                path: at("/tmp"),
                why: "private to this run",
                size: TmpfsSize::for_memory(None),
            },
            Step::Proc {
                path: at("/proc"),
                access: BindAccess::ReadOnly,
            },
            Step::Devpts {
                path: at("/dev/pts"),
            },
            Step::Symlink {
                path: at("/dev/ptmx"),
                target: at("pts/ptmx"),
            },
            Step::Bind {
                path: at("/usr"),
                access: BindAccess::ReadOnly,
                why: BindWhy::Grant,
                if_missing: IfMissing::Fail,
            },
            Step::Bind {
                path: policy.workspace().to_path_buf(),
                access: BindAccess::ReadWrite,
                why: BindWhy::Grant,
                if_missing: IfMissing::Fail,
            },
            // A device granted `rw` is bound read-only: its I/O works, its
            // inode (the host's) cannot be chmod'ed.
            Step::Bind {
                path: at("/dev/null"),
                access: BindAccess::ReadOnly,
                why: BindWhy::Grant,
                if_missing: IfMissing::Fail,
            },
        ] {
            assert!(
                steps.contains(&expected),
                "{expected:?} missing: {steps:#?}"
            );
        }
    }

    #[test]
    fn protected_paths_are_rebound_read_only_after_their_grant() {
        let (_dir, policy, inputs) = fixture();
        let plan = JailPlan::compile(&policy, &inputs);
        let ws = policy.workspace();
        let home = inputs.home.clone().unwrap();
        let expected = [
            (ws.join("magus.yaml"), CarveReason::PolicyFile),
            (ws.join("magus-bin"), CarveReason::MagusExecutable),
            (ws.join(".git/hooks"), CarveReason::GitCode),
            (ws.join(".git/config"), CarveReason::GitCode),
            (ws.join("sub/.git/hooks"), CarveReason::GitCode),
            (home.join(".bashrc"), CarveReason::StartupFile),
            (home.join("bin"), CarveReason::PathDirectory),
        ];
        let carves: Vec<(PathBuf, CarveReason)> = plan
            .carve_outs()
            .map(|(p, r)| (p.to_path_buf(), *r))
            .collect();
        for (path, reason) in &expected {
            assert!(
                carves.contains(&(path.clone(), *reason)),
                "{path:?}: {carves:#?}"
            );
            let carve = position(&plan, |s| s.path() == Some(path.as_path()));
            let grant = position(
                &plan,
                |s| matches!(s, Step::Bind { why: BindWhy::Grant, path: g, .. } if path.starts_with(g)),
            );
            assert!(grant < carve, "{path:?} bound before its grant");
        }
        // The nested repository has no hooks yet: created, then bound.
        let hooks = ws.join("sub/.git/hooks");
        let step = &plan.steps()[position(&plan, |s| s.path() == Some(hooks.as_path()))];
        assert!(matches!(
            step,
            Step::Bind {
                if_missing: IfMissing::MakeDir,
                ..
            }
        ));
        // Only inside the writable binds (not /usr, read-only anyway; not
        // /usr/bin, on PATH but not writable).
        assert!(
            carves
                .iter()
                .all(|(p, _)| p.starts_with(ws) || p.starts_with(&home)),
            "{carves:#?}"
        );
    }

    #[test]
    fn merged_usr_links_are_recreated_when_the_host_has_them() {
        let (_dir, policy, inputs) = fixture();
        let plan = JailPlan::compile(&policy, &inputs);
        let Ok(target) = std::fs::read_link("/bin") else {
            return;
        };
        let link = Step::Symlink {
            path: PathBuf::from("/bin"),
            target,
        };
        assert!(plan.steps().contains(&link), "{:#?}", plan.steps());
    }

    #[test]
    fn mountinfo_escapes_are_undone() {
        for (field, want) in [
            ("/sys/fs/cgroup", "/sys/fs/cgroup"),
            ("/mnt/with\\040space", "/mnt/with space"),
            ("/a\\011tab\\134b", "/a\ttab\\b"),
            ("/trailing\\", "/trailing\\"),
        ] {
            assert_eq!(unescape_mountinfo(field), want, "{field}");
        }
    }

    #[test]
    fn submounts_of_read_only_grants_are_remounted_read_only() {
        let (_dir, policy, _inputs) = fixture();
        let mounts: Vec<Step> = policy
            .grants()
            .iter()
            .flat_map(|g| grant_steps(&policy, g))
            .collect();
        let ws = policy.workspace().to_path_buf();
        let points = [
            PathBuf::from("/usr/share/fonts"),
            PathBuf::from("/usr"),
            ws.join("mnt"),
            PathBuf::from("/opt/other"),
        ];
        let steps = read_only_submounts(&policy, &mounts, &points);
        let remount = Step::RemountReadOnly {
            path: PathBuf::from("/usr/share/fonts"),
        };
        // Not the grant itself, not under an rw grant, not outside grants.
        assert_eq!(steps, [remount]);
    }

    #[test]
    fn the_pid_only_plan_mounts_proc_over_the_host_view() {
        let plan = JailPlan::pid_only();
        let proc_step = Step::Proc {
            path: PathBuf::from("/proc"),
            access: BindAccess::ReadWrite,
        };
        assert_eq!(plan.steps(), [Step::PrivatePropagation, proc_step]);
        assert_eq!(plan.carve_outs().count(), 0);
    }
}
