//! The privileged executor of a [`JailPlan`]: walks the steps in order
//! inside the jail's fresh mount namespace and stops at the first failure,
//! naming its index. It decides nothing; every choice is in the plan.
//!
//! Staging follows bubblewrap: a tmpfs (on `/tmp`) becomes the root with the
//! host's root kept at `/oldroot` (bind sources) and the view built at
//! `/newroot`; the last step pivots into it, and [`detach_host_root`]
//! detaches everything else.

use std::collections::BTreeSet;
use std::fs::DirBuilder;
use std::ops::Bound;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::mount::{mount, umount2, MntFlags, MsFlags};
use nix::sys::stat::{Mode, SFlag};
use nix::sys::statvfs::{statvfs, FsFlags};
use nix::unistd::{chdir, pivot_root};

use super::plan::{BindAccess, BindWhy, IfMissing, JailPlan, Step};

const NEW_ROOT: &str = "/newroot";
const OLD_ROOT: &str = "/oldroot";

/// The step that failed, by index into the plan, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct StepFailure {
    pub index: usize,
    pub errno: Errno,
}

/// Whether the staging root is in place yet.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Host,
    Staged,
}

/// Applies every step of `plan`, in order.
pub(super) fn apply(plan: &JailPlan) -> Result<(), StepFailure> {
    let mut builder = Builder {
        place: Place::Host,
        made: Dirs::default(),
    };
    for (index, step) in plan.steps().iter().enumerate() {
        builder
            .apply_step(step)
            .map_err(|errno| StepFailure { index, errno })?;
    }
    Ok(())
}

/// Where the view stands while it is built.
struct Builder {
    place: Place,
    made: Dirs,
}

impl Builder {
    fn apply_step(&mut self, step: &Step) -> Result<(), Errno> {
        let place = self.place;
        let at = |p: &Path| under(place, NEW_ROOT, p);
        // A new mount hides what was made below its target.
        if let Some(path) = step.path().filter(|_| mounts(step)) {
            self.made.forget_within(&at(path));
        }
        let made = &mut self.made;
        match step {
            Step::PrivatePropagation => mount_none("/", MsFlags::MS_REC | MsFlags::MS_PRIVATE),
            Step::Stage { base } => {
                stage(base)?;
                self.place = Place::Staged;
                self.made = Dirs::default();
                Ok(())
            }
            Step::Dir { path } => made.make(&at(path)),
            Step::Tmpfs { path, size, .. } => fresh(made, &at(path), "tmpfs", &size.options()),
            Step::Bind {
                path,
                access,
                if_missing,
                why,
            } => {
                let source = under(place, OLD_ROOT, path);
                // A carve-out or pin lies in a writable grant, where a
                // child of an earlier run may have put a symbolic link,
                // which `mount` would follow (the plan resolves them).
                if *why != BindWhy::Grant && is_symlink(&source) {
                    return Err(Errno::ELOOP);
                }
                bind(made, &source, &at(path), *access, *if_missing)
            }
            Step::RemountReadOnly { path } => match remount_read_only(&at(path)) {
                // Not a mount point in the view (an unbindable mount is not
                // copied by a recursive bind): nothing to make read-only.
                Err(Errno::EINVAL) => Ok(()),
                other => other,
            },
            Step::Proc { path, access } => {
                fresh(made, &at(path), "proc", "")?;
                match access {
                    BindAccess::ReadOnly => remount_read_only(&at(path)),
                    BindAccess::ReadWrite => Ok(()),
                }
            }
            Step::Devpts { path } => fresh(
                made,
                &at(path),
                "devpts",
                "newinstance,ptmxmode=0666,mode=620",
            ),
            Step::Symlink { path, target } => symlink(made, target, &at(path)),
            Step::Mask { path, dir: true } => {
                fresh(made, &at(path), "tmpfs", "mode=0700")?;
                remount_read_only(&at(path))
            }
            Step::Mask { path, dir: false } => {
                let null = under(place, OLD_ROOT, Path::new("/dev/null"));
                bind(
                    made,
                    &null,
                    &at(path),
                    BindAccess::ReadOnly,
                    IfMissing::Fail,
                )
            }
            Step::ReadOnlyRoot => remount_read_only(Path::new(NEW_ROOT)),
            Step::PivotRoot => final_pivot(),
        }
    }
}

fn is_symlink(path: &Path) -> bool {
    path.symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
}

/// Whether `step` puts a mount at its path.
fn mounts(step: &Step) -> bool {
    matches!(
        step,
        Step::Tmpfs { .. }
            | Step::Bind { .. }
            | Step::Proc { .. }
            | Step::Mask { .. }
            | Step::Devpts { .. }
    )
}

/// The directories known to exist in the view, so the ~50 steps under a
/// few parents (`/etc`, `/dev`) make each parent once instead of asking
/// the kernel every time. Ordered by components, so that what lies
/// within a path is one range after it: each mount forgets what it hides
/// without comparing every directory known (PID 1 builds the view on the
/// start-up's critical path).
#[derive(Default)]
struct Dirs(BTreeSet<PathBuf>);

impl Dirs {
    /// A directory at `path`, with missing parents.
    fn make(&mut self, path: &Path) -> Result<(), Errno> {
        if self.0.contains(path) {
            return Ok(());
        }
        make_dirs(path)?;
        self.0.extend(path.ancestors().map(Path::to_path_buf));
        Ok(())
    }

    fn forget_within(&mut self, target: &Path) {
        let hidden: Vec<PathBuf> = self
            .0
            .range::<Path, _>((Bound::Included(target), Bound::Unbounded))
            .take_while(|dir| dir.starts_with(target))
            .cloned()
            .collect();
        for dir in hidden {
            self.0.remove(&dir);
        }
    }
}

/// `path` below `root` once staged; the host path before.
fn under(place: Place, root: &str, path: &Path) -> PathBuf {
    match place {
        Place::Host => path.to_path_buf(),
        Place::Staged => Path::new(root).join(path.strip_prefix("/").unwrap_or(path)),
    }
}

fn mount_none(target: &str, flags: MsFlags) -> Result<(), Errno> {
    let none: Option<&str> = None;
    mount(none, target, none, flags, none)
}

fn stage(base: &Path) -> Result<(), Errno> {
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    mount(Some("tmpfs"), base, Some("tmpfs"), flags, Some("mode=0755"))?;
    let (new, old) = (base.join("newroot"), base.join("oldroot"));
    make_dirs(&new)?;
    make_dirs(&old)?;
    pivot_root(base, &old)?;
    chdir("/")?;
    mount(
        Some("tmpfs"),
        NEW_ROOT,
        Some("tmpfs"),
        flags,
        Some("mode=0755"),
    )
}

/// A new filesystem of `fstype` at `target`.
fn fresh(made: &mut Dirs, target: &Path, fstype: &str, data: &str) -> Result<(), Errno> {
    made.make(target)?;
    let flags = match fstype {
        "tmpfs" => MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        // `devpts` holds device nodes: `nodev` would make `ptmx` unopenable.
        "devpts" => MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        _ => MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
    };
    let data = (!data.is_empty()).then_some(data);
    mount(Some(fstype), target, Some(fstype), flags, data)
}

fn bind(
    made: &mut Dirs,
    source: &Path,
    target: &Path,
    access: BindAccess,
    if_missing: IfMissing,
) -> Result<(), Errno> {
    // A grant (most binds) is never made: no `lstat` for it.
    let missing = || source.symlink_metadata().is_err();
    match if_missing {
        IfMissing::MakeDir if missing() => make_dirs(source)?,
        IfMissing::MakeFile if missing() => make_empty_file(source)?,
        _ => {}
    }
    let read_only = access == BindAccess::ReadOnly;
    // The source opened first: its kind comes from the descriptor, without
    // walking the path again.
    let from = match super::by_descriptor::open_without_links(source) {
        Err(Errno::ENOSYS) => {
            let is_dir = std::fs::metadata(source).map_err(io_errno)?.is_dir();
            mount_point(made, target, is_dir)?;
            return bind_by_path(source, target, read_only);
        }
        other => other?,
    };
    let is_dir = nix::sys::stat::fstat(from.as_fd())?.st_mode & libc::S_IFMT == libc::S_IFDIR;
    mount_point(made, target, is_dir)?;
    match super::by_descriptor::bind_from(from.as_fd(), target, read_only) {
        // `openat2` (5.6) but no `mount_setattr` (5.12): by path, as before.
        Err(Errno::ENOSYS) => bind_by_path(source, target, read_only),
        other => other,
    }
}

/// [`bind`] on a kernel without `openat2`, `open_tree` or `move_mount`:
/// by path, which follows a link swapped in since the plan.
pub(super) fn bind_by_path(source: &Path, target: &Path, read_only: bool) -> Result<(), Errno> {
    let none: Option<&str> = None;
    mount(
        Some(source),
        target,
        none,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        none,
    )?;
    if read_only {
        remount_read_only(target)?;
    }
    Ok(())
}

/// Read-only: the mount at `target` alone, as a bind remount would (its
/// submounts are mounts of their own). `mount_setattr` sets the one
/// attribute and leaves the rest, so no `statfs` is needed first; the
/// ~50 read-only mounts of the default view are one call each instead of
/// two. Kernels before 5.12 take the remount.
fn remount_read_only(target: &Path) -> Result<(), Errno> {
    match set_read_only(target) {
        Err(Errno::ENOSYS) => remount_read_only_by_mount(target),
        other => other,
    }
}

/// `struct mount_attr` of `<linux/mount.h>` (libc does not define it).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;

/// `mount_setattr(AT_FDCWD, target, 0, {attr_set: RDONLY})`. Like the
/// remount, it fails with `EINVAL` where `target` is not a mount's root.
fn set_read_only(target: &Path) -> Result<(), Errno> {
    let path =
        std::ffi::CString::new(target.as_os_str().as_encoded_bytes()).map_err(|_| Errno::EINVAL)?;
    set_read_only_at(nix::fcntl::AT_FDCWD, &path, 0)
}

/// Whether this kernel has `mount_setattr` (Linux 5.12), asked with a
/// call that can only fail: without it the plan makes each read-only
/// grant's submounts read-only one by one (`plan::read_only_submounts`).
pub(super) fn mount_setattr_available() -> bool {
    // SAFETY: no pointer is passed; the kernel checks the descriptor first.
    let rc = unsafe { libc::syscall(libc::SYS_mount_setattr, -1, 0usize, 0, 0usize, 0usize) };
    !(rc == -1 && Errno::last() == Errno::ENOSYS)
}

/// `mount_setattr(dir, path, flags, {attr_set: RDONLY})`: the mount at
/// `path` beneath `dir` (with `AT_EMPTY_PATH`, the one `dir` names; with
/// `AT_RECURSIVE`, its submounts too).
pub(super) fn set_read_only_at(
    dir: BorrowedFd<'_>,
    path: &std::ffi::CStr,
    flags: u32,
) -> Result<(), Errno> {
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: `path` is NUL-terminated and `attr` a live `mount_attr` of
    // the size passed; the kernel only reads both.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dir.as_raw_fd(),
            path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    Errno::result(rc).map(drop)
}

/// Read-only by a bind remount, keeping the flags the kernel locks in a
/// user namespace (`nosuid`, `nodev`, `noexec`, atime), or the remount is
/// refused.
fn remount_read_only_by_mount(target: &Path) -> Result<(), Errno> {
    let kept = statvfs(target)?.flags();
    let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
    for (fs, ms) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if kept.contains(fs) {
            flags |= ms;
        }
    }
    let none: Option<&str> = None;
    mount(none, target, none, flags, none)
}

/// A directory or an empty file to mount on, with missing parents.
fn mount_point(made: &mut Dirs, target: &Path, is_dir: bool) -> Result<(), Errno> {
    if is_dir {
        return made.make(target);
    }
    if let Some(parent) = target.parent() {
        made.make(parent)?;
    }
    // One call makes the empty file; whatever is there already (a file
    // bound over again, or a link, which the bind then refuses) stays.
    match nix::sys::stat::mknod(target, SFlag::S_IFREG, Mode::from_bits_truncate(0o644), 0) {
        Err(Errno::EEXIST) => Ok(()),
        other => other,
    }
}

/// A new empty file, never through a link (`create_new` fails on any
/// existing name, a dangling link included).
fn make_empty_file(path: &Path) -> Result<(), Errno> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(path)
        .map(drop)
        .map_err(io_errno)
}

fn make_dirs(path: &Path) -> Result<(), Errno> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(path)
        .map_err(io_errno)
}

fn symlink(made: &mut Dirs, target: &Path, at: &Path) -> Result<(), Errno> {
    if let Some(parent) = at.parent() {
        made.make(parent)?;
    }
    match std::os::unix::fs::symlink(target, at) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        other => other.map_err(io_errno),
    }
}

/// Into the new root. The staging root, and the host's under it, stay
/// stacked over it until [`detach_host_root`]; a lookup from the new root
/// never enters them (nothing above `/` is walked into).
fn final_pivot() -> Result<(), Errno> {
    chdir(NEW_ROOT)?;
    pivot_root(".", ".")
}

/// The last of the plan's pivot: the staging root, and the host's under
/// it, are detached so no path leads back. Called by PID 1 after [`apply`]
/// with its working directory still the new root. Unmounting waits for
/// an RCU grace period (milliseconds on a busy machine), so PID 1 does it
/// while magus proper sets itself up, which waits for it before any spell
/// code or child runs.
pub(super) fn detach_host_root() -> Result<(), Errno> {
    umount2(".", MntFlags::MNT_DETACH)?;
    chdir("/")
}

fn io_errno(e: std::io::Error) -> Errno {
    Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mount at a path hides that path and everything below it, and
    /// nothing that merely shares a prefix of its name.
    #[test]
    fn a_mount_forgets_exactly_the_directories_it_hides() {
        let mut dirs = Dirs::default();
        for d in [
            "/n", "/n/a", "/n/a/b", "/n/a/b/c", "/n/a-b", "/n/ab", "/n/b", "/m",
        ] {
            dirs.0.insert(PathBuf::from(d));
        }
        dirs.forget_within(Path::new("/n/a"));
        let left: Vec<_> = dirs.0.iter().map(|p| p.to_str().unwrap()).collect();
        assert_eq!(left, ["/m", "/n", "/n/a-b", "/n/ab", "/n/b"]);
        dirs.forget_within(Path::new("/"));
        assert!(dirs.0.is_empty());
    }
}
