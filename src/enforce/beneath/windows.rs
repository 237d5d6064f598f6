//! Opening beneath a granted root on Windows, which has no `*at` calls nor
//! `O_NOFOLLOW`: cap-std's sandboxed lookup walks the path under the root's
//! directory handle, follows a symlink only where its target stays beneath
//! the root, and refuses `..` above it, as the Unix walk does. The open
//! flags keep their POSIX names (a small [`OFlag`]), so the gate's code is
//! the same on every OS.

use super::{BeneathError, Follow};
use crate::policy::native;
use cap_fs_ext::FollowSymlinks;
use cap_fs_ext::{DirExt, OpenOptionsFollowExt, OpenOptionsMaybeDirExt};
use cap_std::fs::{Dir, OpenOptions};
use std::ffi::CStr;
use std::io;
use std::path::{Component, Path, PathBuf};

/// What an open beneath a root hands back.
pub(crate) type Handle = std::os::windows::io::OwnedHandle;

/// The open flags the gate uses, by their POSIX names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OFlag(u32);

impl OFlag {
    pub(crate) const O_RDONLY: OFlag = OFlag(0);
    pub(crate) const O_WRONLY: OFlag = OFlag(1);
    pub(crate) const O_CREAT: OFlag = OFlag(1 << 1);
    pub(crate) const O_TRUNC: OFlag = OFlag(1 << 2);
    pub(crate) const O_APPEND: OFlag = OFlag(1 << 3);
    pub(crate) const O_DIRECTORY: OFlag = OFlag(1 << 4);

    fn has(self, flag: OFlag) -> bool {
        self.0 & flag.0 == flag.0
    }

    /// cap-std's options for these flags and `follow` (for the last name).
    fn options(self, follow: FollowSymlinks) -> OpenOptions {
        let mut options = OpenOptions::new();
        let write = self.has(OFlag::O_WRONLY);
        options
            .read(!write)
            .write(write && !self.has(OFlag::O_APPEND))
            .append(self.has(OFlag::O_APPEND))
            .create(self.has(OFlag::O_CREAT))
            .truncate(self.has(OFlag::O_TRUNC))
            .maybe_dir(!write)
            .follow(follow);
        options
    }
}

impl std::ops::BitOr for OFlag {
    type Output = OFlag;

    fn bitor(self, other: OFlag) -> OFlag {
        OFlag(self.0 | other.0)
    }
}

/// A handle to walk from: a read-only open (Windows has no `O_PATH`).
pub(crate) const HANDLE: OFlag = OFlag::O_RDONLY;

/// `ERROR_STOPPED_ON_SYMLINK`: a no-follow open met a symlink.
const STOPPED_ON_SYMLINK: i32 = windows_sys::Win32::Foundation::ERROR_STOPPED_ON_SYMLINK as i32;
/// `ERROR_TOO_MANY_LINKS`: cap-std's answer to a symlink loop.
const TOO_MANY_LINKS: i32 = windows_sys::Win32::Foundation::ERROR_TOO_MANY_LINKS as i32;

/// A granted root, held open as a handle.
#[derive(Debug)]
pub struct Root {
    /// The policy's path (a key of `policy::winpath`, or a plain Windows
    /// path in this module's own tests).
    path: PathBuf,
    /// The Windows path `path` stands for.
    os: PathBuf,
    /// `None` for a granted file, which is opened by its own path.
    dir: Option<Dir>,
}

impl Root {
    /// Opens `path` (a real, absolute path: a directory, or a granted file)
    /// as a root.
    pub(crate) fn open(path: &Path) -> io::Result<Root> {
        let os = native::to_os(path).into_owned();
        let is_dir = std::fs::symlink_metadata(&os)?.is_dir();
        let dir = match is_dir {
            true => Some(Dir::open_ambient_dir(&os, cap_std::ambient_authority())?),
            false => None,
        };
        Ok(Root {
            path: path.to_path_buf(),
            os,
            dir,
        })
    }

    /// The root's real path, as the policy spells it.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Opens `rel` (relative, lexically normal; empty means the root itself)
    /// beneath this root.
    pub(crate) fn open_beneath(
        &self,
        rel: &Path,
        flags: OFlag,
        follow: Follow,
    ) -> Result<Handle, BeneathError> {
        let Some(dir) = &self.dir else {
            return self.open_file_root(rel, flags);
        };
        let rel = if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        };
        let opened = match follow {
            Follow::BeneathOnly => dir.open_with(rel, &flags.options(FollowSymlinks::Yes)),
            Follow::Never => open_following_nothing(dir, rel, flags),
        };
        opened
            .map(|file| Handle::from(file.into_std()))
            .map_err(classify)
    }

    /// [`Root::open_beneath`] for a NUL-terminated relative path.
    pub(crate) fn open_beneath_c(
        &self,
        rel: &CStr,
        flags: OFlag,
        follow: Follow,
    ) -> Result<Handle, BeneathError> {
        // SAFETY: the gate builds `rel` from the encoded bytes of a
        // `NormalPath` and a `PlainRelative` spelling, cut and joined only
        // at ASCII `/` (see `policy::path::os_string`); the NUL is not part
        // of `to_bytes`.
        let rel = unsafe { std::ffi::OsStr::from_encoded_bytes_unchecked(rel.to_bytes()) };
        self.open_beneath(Path::new(rel), flags, follow)
    }

    /// A granted file is opened by its own real path, and only if no
    /// symlink leads there now (it was canonical when granted).
    fn open_file_root(&self, rel: &Path, flags: OFlag) -> Result<Handle, BeneathError> {
        if !rel.as_os_str().is_empty() {
            let e = io::Error::new(
                io::ErrorKind::NotADirectory,
                "a granted file has no entries",
            );
            return Err(BeneathError::Os(e));
        }
        let (Some(parent), Some(name)) = (self.os.parent(), self.os.file_name()) else {
            return Err(BeneathError::Escapes);
        };
        let dir = Dir::open_ambient_dir(parent, cap_std::ambient_authority())?;
        let file = dir
            .open_with(name, &flags.options(FollowSymlinks::No))
            .map_err(classify)?;
        let real = super::resolve_existing_prefix(&self.os)?;
        if real != self.os && native::from_os(&real).ok().as_deref() != Some(&*self.path) {
            return Err(BeneathError::Escapes);
        }
        Ok(Handle::from(file.into_std()))
    }
}

/// Opens `rel` one name at a time, each with no symlink followed, so no
/// link anywhere on the path (even one that stays beneath) is taken.
fn open_following_nothing(dir: &Dir, rel: &Path, flags: OFlag) -> io::Result<cap_std::fs::File> {
    let names: Vec<Component<'_>> = rel.components().collect();
    let Some((last, parents)) = names.split_last() else {
        return dir.open_with(".", &flags.options(FollowSymlinks::No));
    };
    let mut walked: Option<Dir> = None;
    for name in parents {
        let here = walked.as_ref().unwrap_or(dir);
        walked = Some(here.open_dir_nofollow(name)?);
    }
    let here = walked.as_ref().unwrap_or(dir);
    here.open_with(last, &flags.options(FollowSymlinks::No))
}

/// cap-std's refusal to leave the root (a `PermissionDenied` of its own,
/// with no OS code), a symlink met without following, and a loop all call
/// for a re-check of the real path, as `EXDEV` and `ELOOP` do on Unix.
fn classify(e: io::Error) -> BeneathError {
    let escaped = e.kind() == io::ErrorKind::PermissionDenied && e.raw_os_error().is_none();
    match e.raw_os_error() {
        Some(STOPPED_ON_SYMLINK) | Some(TOO_MANY_LINKS) => BeneathError::Escapes,
        _ if escaped => BeneathError::Escapes,
        _ => BeneathError::Os(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::windows::fs::{symlink_dir, symlink_file};

    /// A root holding a file and a directory, a secret beside it.
    fn fixture() -> (tempfile::TempDir, PathBuf, Root) {
        let dir = tempfile::tempdir().expect("a scratch directory");
        let base = dir.path().to_path_buf();
        let root = base.join("root");
        std::fs::create_dir_all(root.join("sub")).expect("root");
        std::fs::write(root.join("inside.txt"), "in").expect("inside");
        std::fs::write(base.join("secret"), "s3cr3t").expect("secret");
        let opened = Root::open(&root).expect("the root opens");
        (dir, base, opened)
    }

    /// Plants the links of the symlink cases; `false` (with the reason
    /// printed) where this Windows makes none: an unprivileged account
    /// without developer mode fails, and Wine 8 reports success but makes
    /// nothing.
    fn plant_links(base: &Path) -> bool {
        let root = base.join("root");
        let made = symlink_file(r"..\secret", root.join("rel-out"))
            .and_then(|()| symlink_file(base.join("secret"), root.join("abs-out")))
            .and_then(|()| symlink_file("inside.txt", root.join("rel-in")))
            .and_then(|()| symlink_dir(base, root.join("dir-out")));
        let real = std::fs::symlink_metadata(root.join("rel-out"));
        match (made, real) {
            (Ok(()), Ok(meta)) if meta.file_type().is_symlink() => true,
            (made, real) => {
                eprintln!("symlink cases skipped: no symlink made ({made:?}, {real:?})");
                false
            }
        }
    }

    fn read(root: &Root, rel: &str, follow: Follow) -> Result<String, BeneathError> {
        let handle = root.open_beneath(Path::new(rel), OFlag::O_RDONLY, follow)?;
        let mut text = String::new();
        std::fs::File::from(handle)
            .read_to_string(&mut text)
            .map_err(BeneathError::Os)?;
        Ok(text)
    }

    #[test]
    fn opens_what_stays_beneath_and_refuses_dot_dot() {
        let (_dir, base, root) = fixture();
        let inside = read(&root, "inside.txt", Follow::BeneathOnly);
        assert_eq!(inside.ok().as_deref(), Some("in"));
        let inside = read(&root, r"sub\..\inside.txt", Follow::BeneathOnly);
        assert_eq!(inside.ok().as_deref(), Some("in"));
        for rel in [r"..\secret", r"sub\..\..\secret"] {
            for follow in [Follow::BeneathOnly, Follow::Never] {
                let got = read(&root, rel, follow);
                assert!(matches!(got, Err(BeneathError::Escapes)), "{rel}: {got:?}");
            }
        }
        // The control: the secret is there, readable by a plain open.
        let secret = std::fs::read_to_string(base.join("secret")).expect("the control read");
        assert_eq!(secret, "s3cr3t");
    }

    #[test]
    fn links_out_of_the_root_are_escapes() {
        let (_dir, base, root) = fixture();
        if !plant_links(&base) {
            return;
        }
        let inside = read(&root, "rel-in", Follow::BeneathOnly);
        assert_eq!(inside.ok().as_deref(), Some("in"));
        for rel in ["rel-out", "abs-out", r"dir-out\secret"] {
            let got = read(&root, rel, Follow::BeneathOnly);
            assert!(matches!(got, Err(BeneathError::Escapes)), "{rel}: {got:?}");
        }
        let got = read(&root, "rel-in", Follow::Never);
        assert!(matches!(got, Err(BeneathError::Escapes)), "{got:?}");
        let write = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC;
        let got = root.open_beneath(Path::new("abs-out"), write, Follow::Never);
        assert!(matches!(got, Err(BeneathError::Escapes)), "{got:?}");
        let got = root.open_beneath(Path::new(r"dir-out\new"), write, Follow::Never);
        assert!(got.is_err(), "{got:?}");
        assert!(!base.join("new").exists());
        assert_eq!(
            std::fs::read_to_string(base.join("secret")).expect("read"),
            "s3cr3t"
        );
    }

    #[test]
    fn a_write_lands_beneath() {
        let (_dir, base, root) = fixture();
        let write = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC;
        let made = root.open_beneath(Path::new(r"sub\new.txt"), write, Follow::Never);
        std::io::Write::write_all(&mut std::fs::File::from(made.expect("created")), b"new")
            .expect("written");
        let text = std::fs::read_to_string(base.join(r"root\sub\new.txt"));
        assert_eq!(text.ok().as_deref(), Some("new"));
        let got = root.open_beneath(Path::new(r"..\escaped.txt"), write, Follow::Never);
        assert!(matches!(got, Err(BeneathError::Escapes)), "{got:?}");
        assert!(!base.join("escaped.txt").exists());
    }
}
