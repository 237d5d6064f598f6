//! The policy's paths as this OS spells them: POSIX paths as they are on
//! Unix; on Windows the keys of [`super::winpath`] (`C:\Users\me` is
//! `/c:/users/me`). The gate and resolution go through these three
//! functions, so the POSIX model is untouched where it applies and every
//! Windows path meets the Windows model.

use super::winpath::WinPathError;
use super::NormalPath;
use std::borrow::Cow;
use std::path::Path;

/// The policy path of a path the OS handed back (a canonical path, a
/// current directory, a handle's final path).
pub(crate) fn from_os(path: &Path) -> Result<NormalPath, WinPathError> {
    #[cfg(windows)]
    {
        super::winpath::key_of_os(path.as_os_str().as_encoded_bytes())
    }
    #[cfg(not(windows))]
    {
        Ok(NormalPath::new(path)?)
    }
}

/// `spelled`, as a spell writes it, made absolute against `base` (a
/// policy path) and resolved lexically.
pub(crate) fn join(base: &NormalPath, spelled: &str) -> Result<NormalPath, WinPathError> {
    #[cfg(windows)]
    {
        super::winpath::join(base, spelled.as_bytes())
    }
    #[cfg(not(windows))]
    {
        Ok(base.join(spelled)?)
    }
}

/// `path` as the policy compares paths: on Windows a key [`folded`] to
/// lower case (NTFS's names are case-insensitive); elsewhere `path`.
///
/// [`folded`]: super::winpath::fold
pub(crate) fn folded(path: &Path) -> Cow<'_, Path> {
    #[cfg(windows)]
    {
        super::winpath::fold(path)
    }
    #[cfg(not(windows))]
    {
        Cow::Borrowed(path)
    }
}

/// The path to hand the OS for `path`: a policy key made a Windows path
/// again; any other path (and every path on Unix) as it is.
pub(crate) fn to_os(path: &Path) -> Cow<'_, Path> {
    #[cfg(windows)]
    if let Some(os) = super::winpath::os_of_key(path) {
        return Cow::Owned(os.into());
    }
    Cow::Borrowed(path)
}
