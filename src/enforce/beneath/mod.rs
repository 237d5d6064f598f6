//! Opening a path *beneath* a granted root, so that no symlink, `..` or
//! magic link can carry an operation out of the root it was checked against.
//!
//! The check is made on a lexical path, but the kernel resolves the real one;
//! opening relative to the root's directory handle closes the gap without a
//! check-then-use race. With the Linux kernel layer that is one system
//! call resolving beneath the handle (`linux::resolve`); on every other
//! Unix, and on kernels before 5.6, it is the component walk of `walk`,
//! which holds a handle at every step and follows no symlink it has not
//! read. Windows has no `*at` calls: `windows` resolves with cap-std's
//! sandboxed lookup instead, behind the same [`Root`].

#[cfg(unix)]
mod walk;
#[cfg(windows)]
mod windows;

#[cfg(unix)]
use nix::fcntl;
#[cfg(unix)]
pub(crate) use nix::fcntl::OFlag;
#[cfg(unix)]
use nix::sys::stat::Mode;
#[cfg(unix)]
use std::ffi::CStr;
use std::ffi::OsString;
use std::io;
#[cfg(unix)]
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
#[cfg(unix)]
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
#[cfg(windows)]
pub use windows::Root;
#[cfg(windows)]
pub(crate) use windows::{Handle, OFlag, HANDLE};

/// What an open beneath a root hands back.
#[cfg(unix)]
pub(crate) type Handle = OwnedFd;

/// The flag that opens a handle to walk from without reading it: `O_PATH`
/// where the OS has it, else a plain read-only open.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
pub(crate) const HANDLE: OFlag = OFlag::O_PATH;
#[cfg(all(
    unix,
    not(any(target_os = "linux", target_os = "android", target_os = "freebsd"))
))]
pub(crate) const HANDLE: OFlag = OFlag::O_RDONLY;

/// Whether symlinks beneath the root may be followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// Follow symlinks that stay beneath the root (reads).
    BeneathOnly,
    /// Follow no symlink at all (writes: the real target must be re-checked,
    /// because a protected file may sit beneath a writable root).
    Never,
}

/// Why an open beneath a root failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BeneathError {
    /// Resolution left the root, or met a symlink that [`Follow`] forbids, or
    /// a magic link: the caller must resolve the real path and check again.
    #[error("the path leads outside the root it was checked against")]
    Escapes,
    /// Any other failure of the system call.
    #[error(transparent)]
    Os(#[from] io::Error),
}

#[cfg(unix)]
/// What a granted root is: a grant may name a single file (`~/.npmrc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RootKind {
    Directory,
    File,
}

#[cfg(unix)]
/// A granted root, held open as a handle.
#[derive(Debug)]
pub struct Root {
    path: PathBuf,
    dir: OwnedFd,
    kind: RootKind,
}

#[cfg(unix)]
impl Root {
    /// Opens `path` (a real, absolute path: a directory, or a granted file)
    /// as a root.
    pub fn open(path: &Path) -> io::Result<Root> {
        let flags = HANDLE | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW;
        let dir = fcntl::open(path, flags, Mode::empty()).map_err(io::Error::from)?;
        let kind = match std::fs::File::from(dir.try_clone()?).metadata()?.is_dir() {
            true => RootKind::Directory,
            false => RootKind::File,
        };
        Ok(Root {
            path: path.to_path_buf(),
            dir,
            kind,
        })
    }

    /// The root's real path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The root's directory handle.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }

    /// Opens `rel` (relative, lexically normal; empty means the root itself)
    /// beneath this root.
    pub fn open_beneath(
        &self,
        rel: &Path,
        flags: OFlag,
        follow: Follow,
    ) -> Result<OwnedFd, BeneathError> {
        if self.kind == RootKind::File {
            return self.open_file_root(rel, flags);
        }
        let rel = if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        };
        #[cfg(kernel_layer)]
        if let Some(opened) =
            super::linux::openat2_beneath::open_beneath(self.fd(), rel, flags, follow)
        {
            return opened.map_err(|e| classify(io::Error::from(e)));
        }
        walk::open_beneath(self.fd(), rel, flags, follow)
    }

    /// [`Root::open_beneath`] for a relative path that is already
    /// NUL-terminated, so the system call needs no copy of it (the gate's
    /// hot path). The root itself (an empty `rel`) and the fallback go the
    /// general way.
    pub fn open_beneath_c(
        &self,
        rel: &CStr,
        flags: OFlag,
        follow: Follow,
    ) -> Result<OwnedFd, BeneathError> {
        #[cfg(kernel_layer)]
        if self.kind == RootKind::Directory && !rel.is_empty() {
            if let Some(opened) =
                super::linux::openat2_beneath::open_beneath(self.fd(), rel, flags, follow)
            {
                return opened.map_err(|e| classify(io::Error::from(e)));
            }
        }
        let rel = Path::new(std::ffi::OsStr::from_bytes(rel.to_bytes()));
        self.open_beneath(rel, flags, follow)
    }

    /// A granted file is opened by its own real path, following no symlink
    /// anywhere (it was canonical when granted; a swap since is refused).
    fn open_file_root(&self, rel: &Path, flags: OFlag) -> Result<OwnedFd, BeneathError> {
        if !rel.as_os_str().is_empty() {
            return Err(BeneathError::Os(io::Error::from_raw_os_error(
                libc::ENOTDIR,
            )));
        }
        #[cfg(kernel_layer)]
        if let Some(opened) = super::linux::openat2_beneath::open_no_symlinks(&self.path, flags) {
            return opened.map_err(|e| classify(io::Error::from(e)));
        }
        // Without the kernel's resolve: refuse a final symlink, and check the rest after.
        let flags = flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let opened = fcntl::open(&self.path, flags, Mode::empty());
        let fd = opened.map_err(|e| classify(io::Error::from(e)))?;
        if resolve_existing_prefix(&self.path)? != self.path {
            return Err(BeneathError::Escapes);
        }
        Ok(fd)
    }
}

#[cfg(unix)]
/// `EXDEV` means resolution left the root; `ELOOP` means a forbidden
/// (magic) symlink was met. Both call for a re-check of the real path.
fn classify(e: io::Error) -> BeneathError {
    match e.raw_os_error() {
        Some(libc::EXDEV) | Some(libc::ELOOP) => BeneathError::Escapes,
        _ => BeneathError::Os(e),
    }
}

/// The real path of `path`: its deepest existing ancestor canonicalised,
/// followed by the components that do not exist yet.
///
/// This follows every symlink (including `/proc/self/root` and other magic
/// links), so it tells where a spelled path *leads*; it is used to explain
/// and re-check, never to open without a further check. A dangling link is
/// followed by its text: in the jail a link to an ungranted file dangles,
/// and the denial must still say where it leads.
///
/// On Windows `path` may be a policy key (`/c:/x`); the answer is the
/// OS's path (`\\?\C:\x`), for `policy::native::from_os`.
pub(crate) fn resolve_existing_prefix(path: &Path) -> io::Result<PathBuf> {
    resolve_within(&crate::policy::native::to_os(path), MAX_LINKS)
}

/// As many links as the kernel follows in one lookup (`MAXSYMLINKS`).
const MAX_LINKS: u32 = 40;

fn resolve_within(path: &Path, links_left: u32) -> io::Result<PathBuf> {
    let mut missing: Vec<OsString> = Vec::new();
    let mut probe = path.to_path_buf();
    loop {
        match std::fs::canonicalize(&probe) {
            Ok(mut real) => {
                real.extend(missing.iter().rev());
                return Ok(real);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if let Ok(target) = std::fs::read_link(&probe) {
                    return follow_dangling(&probe, &target, &missing, links_left).ok_or(e);
                }
                let Some(name) = probe.file_name() else {
                    return Err(e);
                };
                missing.push(name.to_os_string());
                if !probe.pop() {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// Where the dangling link `link` → `target` leads, with `missing` (in
/// reverse) appended, resolved again.
fn follow_dangling(
    link: &Path,
    target: &Path,
    missing: &[OsString],
    links_left: u32,
) -> Option<PathBuf> {
    let next_left = links_left.checked_sub(1)?;
    let base = link.parent()?;
    let mut next = crate::policy::normalize(base, target.as_os_str())
        .ok()?
        .into_path_buf();
    next.extend(missing.iter().rev());
    resolve_within(&next, next_left).ok()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn fixture() -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(base.join("root")).unwrap();
        std::fs::write(base.join("root/inside.txt"), "in").unwrap();
        std::fs::write(base.join("secret"), "s3cr3t").unwrap();
        symlink("../secret", base.join("root/rel-out")).unwrap();
        symlink(base.join("secret"), base.join("root/abs-out")).unwrap();
        symlink("inside.txt", base.join("root/rel-in")).unwrap();
        let root = Root::open(&base.join("root")).unwrap();
        (dir, root)
    }

    fn open(root: &Root, rel: &str, follow: Follow) -> Result<OwnedFd, BeneathError> {
        root.open_beneath(Path::new(rel), OFlag::O_RDONLY, follow)
    }

    #[test]
    fn opens_what_stays_beneath_and_refuses_what_leaves() {
        let (_dir, root) = fixture();
        let cases = [
            ("inside.txt", Follow::BeneathOnly, true),
            ("rel-in", Follow::BeneathOnly, true),
            ("rel-out", Follow::BeneathOnly, false),
            ("abs-out", Follow::BeneathOnly, false),
            ("../secret", Follow::BeneathOnly, false),
            ("rel-in", Follow::Never, false),
            ("", Follow::BeneathOnly, true),
        ];
        for (rel, follow, ok) in cases {
            let got = open(&root, rel, follow);
            assert_eq!(got.is_ok(), ok, "{rel} {follow:?}: {got:?}");
            if !ok {
                assert!(matches!(got, Err(BeneathError::Escapes)), "{rel}: {got:?}");
            }
        }
    }

    #[test]
    fn a_granted_file_is_its_own_root() {
        let (dir, _) = fixture();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let root = Root::open(&base.join("secret")).unwrap();
        let fd = root.open_beneath(Path::new(""), OFlag::O_RDONLY, Follow::BeneathOnly);
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::fs::File::from(fd.unwrap()), &mut text).unwrap();
        assert_eq!(text, "s3cr3t");
        let below = root.open_beneath(Path::new("x"), OFlag::O_RDONLY, Follow::BeneathOnly);
        assert!(matches!(below, Err(BeneathError::Os(_))), "{below:?}");
    }

    #[test]
    fn magic_links_are_escapes() {
        let root = Root::open(Path::new("/proc")).unwrap();
        let got = open(&root, "self/root/etc/hostname", Follow::BeneathOnly);
        assert!(matches!(got, Err(BeneathError::Escapes)), "{got:?}");
    }

    /// The walk (what runs without the kernel layer) agrees with `open_beneath`
    /// on every case above, in both builds.
    #[test]
    fn the_walk_agrees_on_the_fixture() {
        let (dir, root) = fixture();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(base.join("root/sub")).unwrap();
        symlink("../inside.txt", base.join("root/sub/up-in")).unwrap();
        symlink("sub/../../secret", base.join("root/via-sub")).unwrap();
        symlink("loop", base.join("root/loop")).unwrap();
        let walk =
            |rel: &str, follow, flags| walk::open_beneath(root.fd(), Path::new(rel), flags, follow);
        let read = OFlag::O_RDONLY;
        for rel in [
            "inside.txt",
            "rel-in",
            "sub/up-in",
            "sub/../inside.txt",
            "",
            ".",
        ] {
            assert!(walk(rel, Follow::BeneathOnly, read).is_ok(), "{rel}");
            assert!(
                walk(rel, Follow::BeneathOnly, HANDLE).is_ok(),
                "{rel} as a handle"
            );
        }
        for rel in [
            "rel-out",
            "abs-out",
            "../secret",
            "via-sub",
            "sub/../../secret",
            "loop",
        ] {
            for flags in [read, HANDLE, read | OFlag::O_DIRECTORY] {
                let got = walk(rel, Follow::BeneathOnly, flags);
                assert!(matches!(got, Err(BeneathError::Escapes)), "{rel}: {got:?}");
            }
        }
        let got = walk("rel-in", Follow::Never, read);
        assert!(matches!(got, Err(BeneathError::Escapes)), "{got:?}");
        let write = OFlag::O_WRONLY | OFlag::O_CREAT;
        let got = walk("abs-out", Follow::Never, write);
        assert!(matches!(got, Err(BeneathError::Escapes)), "{got:?}");
        assert!(walk("sub/new.txt", Follow::Never, write).is_ok());
        assert!(base.join("root/sub/new.txt").exists());
        let got = walk("inside.txt/x", Follow::BeneathOnly, read);
        assert!(
            matches!(&got, Err(BeneathError::Os(e)) if e.raw_os_error() == Some(libc::ENOTDIR)),
            "{got:?}"
        );
        let got = walk("missing/x", Follow::BeneathOnly, read);
        assert!(
            matches!(&got, Err(BeneathError::Os(e)) if e.raw_os_error() == Some(libc::ENOENT)),
            "{got:?}"
        );
        assert_eq!(
            std::fs::read_to_string(base.join("secret")).unwrap(),
            "s3cr3t"
        );
    }

    #[test]
    fn the_walk_refuses_magic_links() {
        let root = Root::open(Path::new("/proc")).unwrap();
        let got = walk::open_beneath(
            root.fd(),
            Path::new("self/root/etc/hostname"),
            OFlag::O_RDONLY,
            Follow::BeneathOnly,
        );
        assert!(matches!(got, Err(BeneathError::Escapes)), "{got:?}");
    }

    #[test]
    fn resolving_names_where_a_link_leads_even_for_missing_tails() {
        let (dir, root) = fixture();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let real = resolve_existing_prefix(&root.path().join("abs-out")).unwrap();
        assert_eq!(real, base.join("secret"));
        let real = resolve_existing_prefix(&root.path().join("new/dir/file")).unwrap();
        assert_eq!(real, base.join("root/new/dir/file"));
    }
}
