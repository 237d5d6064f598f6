//! The gate's fast path on Linux ≥ 5.6: one `openat2(2)` with
//! `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` (and `RESOLVE_NO_SYMLINKS`
//! where no link may be followed) opens beneath a root's handle with no
//! check-then-use race. `None` means the kernel lacks `openat2`; a cached
//! flag then sends every later open to the portable walk
//! ([`crate::enforce::beneath`]).

use nix::errno::Errno;
use nix::fcntl::{self, OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::Mode;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::enforce::beneath::Follow;

/// Set once `openat2` answered `ENOSYS`; every later open uses the walk.
/// Global: a fact about the kernel, cached for the process (STYLE's
/// "cached unavailable flag").
static OPENAT2_UNAVAILABLE: AtomicBool = AtomicBool::new(false);

/// Opens `rel` beneath `dir`; `None` when the kernel has no `openat2`.
pub(crate) fn open_beneath<P: ?Sized + nix::NixPath>(
    dir: BorrowedFd<'_>,
    rel: &P,
    flags: OFlag,
    follow: Follow,
) -> Option<nix::Result<OwnedFd>> {
    let mut resolve = ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_MAGICLINKS;
    if follow == Follow::Never {
        resolve |= ResolveFlag::RESOLVE_NO_SYMLINKS;
    }
    let mut how = OpenHow::new()
        .flags(flags | OFlag::O_CLOEXEC)
        .resolve(resolve);
    if flags.contains(OFlag::O_CREAT) {
        how = how.mode(Mode::from_bits_truncate(0o666));
    }
    loop {
        match call(dir, rel, how)? {
            // `openat2` may ask to retry when a rename raced the lookup.
            Err(Errno::EAGAIN) | Err(Errno::EINTR) => continue,
            other => return Some(other),
        }
    }
}

/// Opens the absolute `path` following no symlink anywhere in it (a granted
/// file root; the sweep's directories and files, `leftovers::nofollow`);
/// `None` when the kernel has no `openat2`.
pub(crate) fn open_no_symlinks(path: &Path, flags: OFlag) -> Option<nix::Result<OwnedFd>> {
    let how = OpenHow::new()
        .flags(flags | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS);
    loop {
        match call(fcntl::AT_FDCWD, path, how)? {
            Err(Errno::EAGAIN) | Err(Errno::EINTR) => continue,
            other => return Some(other),
        }
    }
}

fn call<P: ?Sized + nix::NixPath>(
    dir: BorrowedFd<'_>,
    path: &P,
    how: OpenHow,
) -> Option<nix::Result<OwnedFd>> {
    if OPENAT2_UNAVAILABLE.load(Ordering::Relaxed) {
        return None;
    }
    match fcntl::openat2(dir, path, how) {
        Err(Errno::ENOSYS) => {
            OPENAT2_UNAVAILABLE.store(true, Ordering::Relaxed);
            None
        }
        other => Some(other),
    }
}
