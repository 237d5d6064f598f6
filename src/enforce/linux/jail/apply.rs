//! The privileged executor of a [`JailPlan`]: walks the steps in order
//! inside the jail's fresh mount namespace and stops at the first failure,
//! naming its index. It decides nothing; every choice is in the plan.
//!
//! Staging follows bubblewrap: a tmpfs (on `/tmp`) becomes the root with the
//! host's root kept at `/oldroot` (bind sources) and the view built at
//! `/newroot`; the last step pivots into it and detaches everything else.

use std::fs::DirBuilder;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::mount::{mount, umount2, MntFlags, MsFlags};
use nix::sys::statvfs::{statvfs, FsFlags};
use nix::unistd::{chdir, pivot_root};

use super::plan::{BindAccess, IfMissing, JailPlan, Step};

const NEW_ROOT: &str = "/newroot";
const OLD_ROOT: &str = "/oldroot";

/// The step that failed, by index into the plan, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepFailure {
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
pub fn apply(plan: &JailPlan) -> Result<(), StepFailure> {
    let mut place = Place::Host;
    for (index, step) in plan.steps().iter().enumerate() {
        apply_step(step, &mut place).map_err(|errno| StepFailure { index, errno })?;
    }
    Ok(())
}

fn apply_step(step: &Step, place: &mut Place) -> Result<(), Errno> {
    let at = |p: &Path| under(*place, NEW_ROOT, p);
    match step {
        Step::PrivatePropagation => mount_none("/", MsFlags::MS_REC | MsFlags::MS_PRIVATE),
        Step::Stage { base } => {
            stage(base)?;
            *place = Place::Staged;
            Ok(())
        }
        Step::Dir { path } => make_dirs(&at(path)),
        Step::Tmpfs { path, .. } => fresh(&at(path), "tmpfs", "mode=1777"),
        Step::Bind {
            path,
            access,
            if_missing,
            ..
        } => bind(
            &under(*place, OLD_ROOT, path),
            &at(path),
            *access,
            *if_missing,
        ),
        Step::RemountReadOnly { path } => match remount_read_only(&at(path)) {
            // Not a mount point in the view (an unbindable mount is not
            // copied by a recursive bind): nothing to make read-only.
            Err(Errno::EINVAL) => Ok(()),
            other => other,
        },
        Step::Proc { path } => fresh(&at(path), "proc", ""),
        Step::Devpts { path } => fresh(&at(path), "devpts", "newinstance,ptmxmode=0666,mode=620"),
        Step::Symlink { path, target } => symlink(target, &at(path)),
        Step::ReadOnlyRoot => remount_read_only(Path::new(NEW_ROOT)),
        Step::PivotRoot => final_pivot(),
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
fn fresh(target: &Path, fstype: &str, data: &str) -> Result<(), Errno> {
    make_dirs(target)?;
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
    source: &Path,
    target: &Path,
    access: BindAccess,
    if_missing: IfMissing,
) -> Result<(), Errno> {
    if if_missing == IfMissing::MakeDir && source.symlink_metadata().is_err() {
        make_dirs(source)?;
    }
    let is_dir = std::fs::metadata(source).map_err(io_errno)?.is_dir();
    mount_point(target, is_dir)?;
    let none: Option<&str> = None;
    mount(
        Some(source),
        target,
        none,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        none,
    )?;
    if access == BindAccess::ReadOnly {
        remount_read_only(target)?;
    }
    Ok(())
}

/// Read-only, keeping the flags the kernel locks in a user namespace
/// (`nosuid`, `nodev`, `noexec`, atime), or the remount is refused.
fn remount_read_only(target: &Path) -> Result<(), Errno> {
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
fn mount_point(target: &Path, is_dir: bool) -> Result<(), Errno> {
    if is_dir {
        return make_dirs(target);
    }
    if target.symlink_metadata().is_ok() {
        return Ok(());
    }
    if let Some(parent) = target.parent() {
        make_dirs(parent)?;
    }
    std::fs::File::create(target).map(drop).map_err(io_errno)
}

fn make_dirs(path: &Path) -> Result<(), Errno> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(path)
        .map_err(io_errno)
}

fn symlink(target: &Path, at: &Path) -> Result<(), Errno> {
    if let Some(parent) = at.parent() {
        make_dirs(parent)?;
    }
    match std::os::unix::fs::symlink(target, at) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        other => other.map_err(io_errno),
    }
}

/// Into the new root; the staging root, and the host's under it, are
/// detached so no path leads back.
fn final_pivot() -> Result<(), Errno> {
    chdir(NEW_ROOT)?;
    pivot_root(".", ".")?;
    umount2(".", MntFlags::MNT_DETACH)?;
    chdir("/")
}

fn io_errno(e: std::io::Error) -> Errno {
    Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO))
}
