//! Lexical path normalisation: a spelled path is made absolute against a base
//! directory and `.`, `..`, repeated and trailing `/` are resolved, on bytes
//! (non-UTF-8 names are legal on Linux). Nothing here touches the file
//! system: symlinks are the gate's business, not this module's.
//!
//! The result is a [`NormalPath`], the only form the trie decides on: the
//! type carries the guarantee, so the hot path need not re-check it.

use std::ffi::{OsStr, OsString};
use std::ops::Deref;
use std::path::{Path, PathBuf};

/// The kernel's `PATH_MAX`, which counts the terminating NUL: the longest
/// path a system call accepts is one byte shorter.
pub(crate) const PATH_MAX: usize = 4096;

/// The kernel's `NAME_MAX`: the longest single component, in bytes.
pub(crate) const NAME_MAX: usize = 255;

/// Why a spelled path cannot be normalised.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    #[error("the path is empty")]
    Empty,
    #[error("the path contains a NUL byte at offset {offset}")]
    Nul { offset: usize },
    #[error("the path is {len} bytes long; the limit is {} bytes", PATH_MAX - 1)]
    TooLong { len: usize },
    #[error("a path component is {len} bytes long; the limit is {NAME_MAX} bytes")]
    ComponentTooLong { len: usize },
    #[error("the base directory `{}` is not absolute", .0.display())]
    RelativeBase(PathBuf),
    #[error("`{}` is not in normal form (absolute, no `.`, `..`, `//` or trailing `/`)", .0.display())]
    NotNormal(PathBuf),
}

/// An absolute path with no `.`, `..` or empty component, no trailing `/`
/// (except `/` itself), no NUL byte, no component longer than [`NAME_MAX`],
/// and shorter than [`PATH_MAX`]: exactly the paths [`normalize`] returns.
///
/// Made by [`normalize`], or checked by [`NormalPath::new`] for a path that
/// is already in that form (one the kernel resolved, say).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NormalPath(PathBuf);

impl NormalPath {
    /// Accepts `path` only if it is already in normal form; nothing is
    /// rewritten, so a caller cannot be surprised by what gets checked.
    pub fn new(path: impl Into<PathBuf>) -> Result<NormalPath, PathError> {
        let path = path.into();
        let bytes = path.as_os_str().as_encoded_bytes();
        check_spelled(bytes)?;
        if bytes == b"/" || bytes.strip_prefix(b"/").is_some_and(is_plain) {
            return Ok(NormalPath(path));
        }
        // Not normal: say why, an over-long name first.
        match bytes
            .split(|&b| b == b'/')
            .map(<[u8]>::len)
            .find(|&len| len > NAME_MAX)
        {
            Some(len) => Err(PathError::ComponentTooLong { len }),
            None => Err(PathError::NotNormal(path)),
        }
    }

    /// `/`, the shortest normal path.
    pub fn root() -> NormalPath {
        NormalPath(PathBuf::from("/"))
    }

    /// The path, borrowed.
    pub fn as_path(&self) -> &Path {
        &self.0
    }

    /// The path, owned.
    pub fn into_path_buf(self) -> PathBuf {
        self.0
    }

    /// `spelled` made absolute against this path and resolved lexically:
    /// [`normalize`] with a base already known to be normal, so the base is
    /// neither re-checked nor re-split on every call (the gate's hot path).
    pub fn join(&self, spelled: impl AsRef<OsStr>) -> Result<NormalPath, PathError> {
        let mut out = NormalPath(PathBuf::new());
        self.join_into(spelled, &mut out)?;
        Ok(out)
    }

    /// [`NormalPath::join`] into `out`, reusing its allocation. On an error
    /// `out` is left as `/`, so it is always a normal path.
    pub fn join_into(
        &self,
        spelled: impl AsRef<OsStr>,
        out: &mut NormalPath,
    ) -> Result<(), PathError> {
        let mut bytes = std::mem::take(&mut out.0)
            .into_os_string()
            .into_encoded_bytes();
        bytes.clear();
        let joined = join_bytes(
            self.0.as_os_str().as_encoded_bytes(),
            spelled.as_ref().as_encoded_bytes(),
            &mut bytes,
        );
        if joined.is_err() {
            bytes.clear();
            bytes.push(b'/');
        }
        out.0 = PathBuf::from(os_string(bytes));
        joined
    }

    /// The directory holding this path (`None` for `/`): normal too, since
    /// dropping the last name of a normal path leaves one.
    pub fn parent(&self) -> Option<NormalPath> {
        self.0.parent().map(|p| NormalPath(p.to_path_buf()))
    }
}

impl Deref for NormalPath {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for NormalPath {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl From<NormalPath> for PathBuf {
    fn from(path: NormalPath) -> PathBuf {
        path.0
    }
}

impl PartialEq<Path> for NormalPath {
    fn eq(&self, other: &Path) -> bool {
        self.0 == other
    }
}

/// A relative path made only of plain names (none empty, `.`, `..` or
/// longer than [`NAME_MAX`]), with no NUL byte and no leading or trailing
/// `/`: joined to a [`NormalPath`] it gives a normal path with nothing to
/// resolve, as long as the whole stays under [`PATH_MAX`]. The gate's hot
/// path takes most spellings (`data/file.bin`) in this form, borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlainRelative<'a>(&'a [u8]);

impl<'a> PlainRelative<'a> {
    /// `spelled` when it is already plain and relative; `None` asks the
    /// caller to [`normalize`] it instead.
    ///
    /// One pass over the bytes, since the gate asks on every call. (A
    /// word-at-a-time version with byte masks counted more instructions
    /// for the short spellings spells use.)
    pub fn new(spelled: &'a [u8]) -> Option<PlainRelative<'a>> {
        is_plain_relative(spelled).then_some(PlainRelative(spelled))
    }

    pub fn as_bytes(&self) -> &'a [u8] {
        self.0
    }
}

/// Whether `spelled` is a [`PlainRelative`].
fn is_plain_relative(spelled: &[u8]) -> bool {
    if spelled.len() >= PATH_MAX {
        return false;
    }
    // The current name's length, and how many of its bytes are dots.
    let (mut len, mut dots) = (0, 0);
    for &b in spelled {
        match b {
            b'/' if !is_plain_name(len, dots) => return false,
            b'/' => (len, dots) = (0, 0),
            0 => return false,
            b'.' => (len, dots) = (len + 1, dots + 1),
            _ => len += 1,
        }
    }
    is_plain_name(len, dots)
}

/// Makes `spelled` absolute against `base` and resolves it lexically.
///
/// `..` never climbs above `/` (as the kernel does for `/..`). The result is
/// absolute, has no `.` or `..` component, no repeated `/`, and no trailing
/// `/` except for the root itself.
///
/// # Example
///
/// ```
/// use magus_sandbox::testing::policy::normalize;
/// use std::path::Path;
/// let p = normalize(Path::new("/work/ws"), "src/../target//out/").unwrap();
/// assert_eq!(p.as_path(), Path::new("/work/ws/target/out"));
/// ```
pub fn normalize(base: &Path, spelled: impl AsRef<OsStr>) -> Result<NormalPath, PathError> {
    let spelled = spelled.as_ref().as_encoded_bytes();
    check_spelled(spelled)?;
    let mut out: Vec<u8> = Vec::with_capacity(base.as_os_str().len() + spelled.len() + 1);
    if spelled.first() != Some(&b'/') {
        let base_bytes = base.as_os_str().as_encoded_bytes();
        if base_bytes.first() != Some(&b'/') {
            return Err(PathError::RelativeBase(base.to_path_buf()));
        }
        check_spelled(base_bytes)?;
        push_components(&mut out, base_bytes)?;
    }
    push_components(&mut out, spelled)?;
    finish(out)
}

/// The OS string whose encoded bytes are `bytes`, a path this module built.
///
/// Every such path is made of runs of the encoded bytes of OS strings
/// (the base, the spelling), cut only at an ASCII `/` and joined only with
/// one. On Unix any bytes are an OS string; on Windows the encoding is
/// WTF-8, which is self-synchronising, and `std` allows cutting it next to
/// any ASCII character: no run begins or ends inside a code point, and `/`
/// between two runs keeps two surrogate halves from meeting. The Windows
/// path model (`winpath`) also cuts at `\\`, swaps `\\` and `/` and folds
/// ASCII letters: each an ASCII byte for an ASCII byte, which WTF-8 allows.
pub(super) fn os_string(bytes: Vec<u8>) -> OsString {
    #[cfg(unix)]
    {
        std::os::unix::ffi::OsStringExt::from_vec(bytes)
    }
    // SAFETY: see above: `bytes` are encoded bytes of OS strings of this
    // build, cut and joined only at ASCII `/`.
    #[cfg(not(unix))]
    unsafe {
        OsString::from_encoded_bytes_unchecked(bytes)
    }
}

/// The root for an empty result; the length limit on the whole.
fn finish(mut out: Vec<u8>) -> Result<NormalPath, PathError> {
    finish_in_place(&mut out)?;
    Ok(NormalPath(PathBuf::from(os_string(out))))
}

fn finish_in_place(out: &mut Vec<u8>) -> Result<(), PathError> {
    if out.is_empty() {
        out.push(b'/');
    }
    if out.len() >= PATH_MAX {
        return Err(PathError::TooLong { len: out.len() });
    }
    Ok(())
}

/// `spelled` joined to `base` (a normal path's bytes) and resolved, into
/// `out` (empty on entry).
fn join_bytes(base: &[u8], spelled: &[u8], out: &mut Vec<u8>) -> Result<(), PathError> {
    check_spelled(spelled)?;
    out.reserve(base.len() + spelled.len() + 1);
    if spelled.first() != Some(&b'/') && base != b"/" {
        out.extend_from_slice(base);
    }
    push_components(out, spelled)?;
    finish_in_place(out)
}

fn check_spelled(bytes: &[u8]) -> Result<(), PathError> {
    if bytes.is_empty() {
        return Err(PathError::Empty);
    }
    if let Some(offset) = bytes.iter().position(|&b| b == 0) {
        return Err(PathError::Nul { offset });
    }
    if bytes.len() >= PATH_MAX {
        return Err(PathError::TooLong { len: bytes.len() });
    }
    Ok(())
}

/// Appends the components of `bytes` to `out` (an absolute path without a
/// trailing `/`, or empty for the root), resolving `.` and `..`.
fn push_components(out: &mut Vec<u8>, bytes: &[u8]) -> Result<(), PathError> {
    // Most spellings are already plain names: copy them whole.
    let names = bytes.strip_prefix(b"/").unwrap_or(bytes);
    if is_plain(names) {
        out.push(b'/');
        out.extend_from_slice(names);
        return Ok(());
    }
    for component in bytes.split(|&b| b == b'/') {
        match component {
            b"" | b"." => {}
            b".." => pop_component(out),
            name if name.len() > NAME_MAX => {
                return Err(PathError::ComponentTooLong { len: name.len() })
            }
            name => {
                out.push(b'/');
                out.extend_from_slice(name);
            }
        }
    }
    Ok(())
}

/// Whether `names` is one or more `/`-separated names, none empty, `.`,
/// `..` or longer than [`NAME_MAX`].
fn is_plain(names: &[u8]) -> bool {
    !names.is_empty()
        && names
            .split(|&b| b == b'/')
            .all(|name| !matches!(name, b"" | b"." | b"..") && name.len() <= NAME_MAX)
}

/// A name of `len` bytes, `dots` of them `.`, is plain: not empty, not `.`
/// or `..`, not longer than [`NAME_MAX`].
fn is_plain_name(len: usize, dots: usize) -> bool {
    len > 0 && len <= NAME_MAX && !(dots == len && len <= 2)
}

fn pop_component(out: &mut Vec<u8>) {
    let cut = out.iter().rposition(|&b| b == b'/').unwrap_or(0);
    out.truncate(cut);
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::ffi::{OsStrExt, OsStringExt};

    fn norm(base: &str, spelled: &[u8]) -> Result<Vec<u8>, PathError> {
        normalize(Path::new(base), OsStr::from_bytes(spelled))
            .map(|p| p.into_path_buf().into_os_string().into_vec())
    }

    /// `join` on a normal base answers exactly as `normalize` does.
    #[test]
    fn join_agrees_with_normalize() {
        let spellings: [&[u8]; 10] = [
            b"a/b",
            b"/x/y",
            b"./a/./b/.",
            b"../y",
            b"../../../..",
            b"//a///b",
            b"a/b/",
            b"/",
            b".",
            b"a\0b",
        ];
        let mut reused = NormalPath::new("/some/earlier/longer/path").expect("normal");
        for base in ["/", "/w", "/w/x"] {
            let normal = NormalPath::new(base).expect("a normal base");
            for spelled in spellings {
                let spelled = OsStr::from_bytes(spelled);
                let want = normalize(Path::new(base), spelled);
                assert_eq!(normal.join(spelled), want, "{base} + {spelled:?}");
                let into = normal.join_into(spelled, &mut reused);
                match &want {
                    Ok(path) => assert_eq!(&reused, path, "{base} + {spelled:?} into"),
                    Err(e) => {
                        assert_eq!(into.as_ref(), Err(e), "{base} + {spelled:?} into");
                        assert_eq!(reused.as_path(), Path::new("/"), "left normal");
                    }
                }
            }
        }
        let long = "n".repeat(PATH_MAX);
        let normal = NormalPath::new("/w").expect("a normal base");
        assert_eq!(normal.join(&long), normalize(Path::new("/w"), &long));
        assert_eq!(normal.join(""), Err(PathError::Empty));
    }

    /// A plain relative spelling is exactly one `join` leaves as it is.
    #[test]
    fn plain_relative_is_what_join_copies_unchanged() {
        let long = "n".repeat(NAME_MAX + 1);
        let spellings: [&[u8]; 14] = [
            b"a",
            b"data/file.bin",
            b".hidden/..x/...",
            b"\xff\xfe/x",
            b"",
            b"/a",
            b"a/",
            b"a//b",
            b"./a",
            b"a/.",
            b"a/../b",
            b"..",
            b"a\0b",
            long.as_bytes(),
        ];
        let base = NormalPath::new("/w").expect("normal");
        for spelled in spellings {
            let plain = PlainRelative::new(spelled);
            let mut copied = b"/w/".to_vec();
            copied.extend_from_slice(spelled);
            let unchanged = base
                .join(OsStr::from_bytes(spelled))
                .is_ok_and(|p| p.as_os_str().as_bytes() == copied);
            assert_eq!(plain.is_some(), unchanged, "{spelled:?}");
            assert_eq!(plain.map(|p| p.as_bytes()), unchanged.then_some(spelled));
        }
    }

    #[test]
    fn normalisation_table() {
        let long_name = "n".repeat(NAME_MAX);
        type Case = (
            &'static str,
            &'static str,
            Vec<u8>,
            Result<Vec<u8>, PathError>,
        );
        let cases: Vec<Case> = vec![
            ("relative", "/w", b"a/b".to_vec(), Ok(b"/w/a/b".to_vec())),
            (
                "absolute ignores base",
                "/w",
                b"/x/y".to_vec(),
                Ok(b"/x/y".to_vec()),
            ),
            ("dot", "/w", b"./a/./b/.".to_vec(), Ok(b"/w/a/b".to_vec())),
            ("dotdot", "/w/x", b"../y".to_vec(), Ok(b"/w/y".to_vec())),
            (
                "dotdot above root",
                "/w",
                b"../../../..".to_vec(),
                Ok(b"/".to_vec()),
            ),
            (
                "absolute dotdot above root",
                "/w",
                b"/../etc".to_vec(),
                Ok(b"/etc".to_vec()),
            ),
            (
                "repeated slashes",
                "/w",
                b"//a///b".to_vec(),
                Ok(b"/a/b".to_vec()),
            ),
            (
                "trailing slash",
                "/w",
                b"a/b/".to_vec(),
                Ok(b"/w/a/b".to_vec()),
            ),
            ("root", "/w", b"/".to_vec(), Ok(b"/".to_vec())),
            ("dot is base", "/w/", b".".to_vec(), Ok(b"/w".to_vec())),
            ("foo stays foo", "/", b"/foo".to_vec(), Ok(b"/foo".to_vec())),
            (
                "foobar stays foobar",
                "/",
                b"/foobar/".to_vec(),
                Ok(b"/foobar".to_vec()),
            ),
            (
                "foo/../foobar",
                "/",
                b"/foo/../foobar".to_vec(),
                Ok(b"/foobar".to_vec()),
            ),
            (
                "dotdot-like names",
                "/w",
                b"...//..a/.b".to_vec(),
                Ok(b"/w/.../..a/.b".to_vec()),
            ),
            (
                "non-utf8",
                "/w",
                b"\xff\xfe/x".to_vec(),
                Ok(b"/w/\xff\xfe/x".to_vec()),
            ),
            ("empty", "/w", b"".to_vec(), Err(PathError::Empty)),
            (
                "nul",
                "/w",
                b"a\0b".to_vec(),
                Err(PathError::Nul { offset: 1 }),
            ),
            (
                "5000 bytes",
                "/w",
                vec![b'a'; 5000],
                Err(PathError::TooLong { len: 5000 }),
            ),
            (
                "long component",
                "/w",
                format!("{long_name}x").into_bytes(),
                Err(PathError::ComponentTooLong { len: NAME_MAX + 1 }),
            ),
            (
                "longest component",
                "/",
                long_name.clone().into_bytes(),
                Ok(format!("/{long_name}").into_bytes()),
            ),
            (
                "relative base",
                "w",
                b"a".to_vec(),
                Err(PathError::RelativeBase("w".into())),
            ),
        ];
        for (name, base, spelled, want) in cases {
            assert_eq!(norm(base, &spelled), want, "case {name}");
        }
    }

    #[test]
    fn result_over_path_max_is_rejected() {
        let base = format!("/{}", "b/".repeat(1500));
        let spelled = "s/".repeat(1500);
        assert!(matches!(
            norm(&base, spelled.as_bytes()),
            Err(PathError::TooLong { .. })
        ));
    }

    #[test]
    fn normalised_form_is_recognised() {
        for (path, want) in [
            ("/", true),
            ("/a/b", true),
            ("/a/", false),
            ("/a//b", false),
            ("/a/./b", false),
            ("/a/../b", false),
            ("a/b", false),
            ("", false),
        ] {
            assert_eq!(NormalPath::new(path).is_ok(), want, "{path}");
        }
    }

    #[test]
    fn normal_path_refuses_nul_and_length_before_form() {
        assert_eq!(
            NormalPath::new(OsStr::from_bytes(b"/a\0b")),
            Err(PathError::Nul { offset: 2 })
        );
        let long = format!("/{}", "a/".repeat(2100));
        assert!(matches!(
            NormalPath::new(long.trim_end_matches('/')),
            Err(PathError::TooLong { .. })
        ));
        assert_eq!(
            NormalPath::new("/a/../b"),
            Err(PathError::NotNormal("/a/../b".into()))
        );
        // Found by fuzzing: normalize refuses such a name, so must this.
        let long_name = format!("/a/{}", "n".repeat(NAME_MAX + 1));
        assert_eq!(
            NormalPath::new(long_name),
            Err(PathError::ComponentTooLong { len: NAME_MAX + 1 })
        );
    }
}
