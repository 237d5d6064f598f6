//! The rules of the Windows path model: a spelling to a key, a key to the
//! OS's path, folding, and a grant's `~` expanded.

use super::{WinPathError, WinRefusal};
use crate::policy::path::{os_string, PathError, NAME_MAX, PATH_MAX};
use crate::policy::NormalPath;
use std::borrow::Cow;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

impl WinPathError {
    fn refused(kind: WinRefusal, spelled: &[u8]) -> WinPathError {
        let spelled = String::from_utf8_lossy(spelled).into_owned();
        WinPathError::Refused { kind, spelled }
    }
}

/// How a spelling begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prefix {
    /// `C:\` or `C:/`: the drive letter, lower case.
    Drive(u8),
    /// `\x`: the base's drive.
    Rooted,
    /// `x`: the base.
    Relative,
}

fn is_sep(b: u8) -> bool {
    b == b'\\' || b == b'/'
}

/// The prefix of `spelled` and where its names begin, or the refusal.
fn prefix(spelled: &[u8]) -> Result<(Prefix, usize), WinRefusal> {
    match spelled {
        [a, b, rest @ ..] if is_sep(*a) && is_sep(*b) => match rest {
            [b'.' | b'?', c, ..] if is_sep(*c) => Err(WinRefusal::Device),
            [b'.' | b'?'] => Err(WinRefusal::Device),
            _ => Err(WinRefusal::Unc),
        },
        [a, ..] if is_sep(*a) => Ok((Prefix::Rooted, 1)),
        [d, b':', c, ..] if d.is_ascii_alphabetic() && is_sep(*c) => {
            Ok((Prefix::Drive(d.to_ascii_lowercase()), 3))
        }
        [d, b':', ..] if d.is_ascii_alphabetic() => Err(WinRefusal::DriveRelative),
        _ => Ok((Prefix::Relative, 0)),
    }
}

/// The checks a name must pass, `.` and `..` aside.
fn check_name(name: &[u8]) -> Result<(), WinRefusal> {
    if name.iter().any(|&b| b < 0x20 || b"<>\"|?*".contains(&b)) {
        return Err(WinRefusal::BadCharacter);
    }
    if name.contains(&b':') {
        return Err(WinRefusal::Stream);
    }
    if matches!(name.last(), Some(b'.' | b' ')) {
        return Err(WinRefusal::TrailingDotOrSpace);
    }
    if is_reserved(name) {
        return Err(WinRefusal::Reserved);
    }
    if is_short_name(name) {
        return Err(WinRefusal::ShortName);
    }
    Ok(())
}

/// `CON`, `con.txt`, `COM1 .log`, `LPT¹`: the stem (before the first `.`,
/// trailing spaces dropped) is a device name. Windows 11 frees some of
/// these in some places; refusing them everywhere is the safe side.
fn is_reserved(name: &[u8]) -> bool {
    let stem = name.split(|&b| b == b'.').next().unwrap_or(name);
    let stem = stem.trim_ascii_end().to_ascii_uppercase();
    match stem.as_slice() {
        b"CON" | b"PRN" | b"AUX" | b"NUL" | b"CONIN$" | b"CONOUT$" => true,
        [b'C', b'O', b'M', rest @ ..] | [b'L', b'P', b'T', rest @ ..] => is_port_digit(rest),
        _ => false,
    }
}

/// `0`–`9`, or a superscript `¹`, `²`, `³` (which Windows also takes).
fn is_port_digit(rest: &[u8]) -> bool {
    matches!(rest, [d] if d.is_ascii_digit()) || matches!(rest, [0xC2, 0xB9 | 0xB2 | 0xB3])
}

/// `BASE~N` or `BASE~N.EXT` as an 8.3 alias is spelled: at most 8 bytes
/// before the dot, at most 3 after, and `~` followed by digits ending the
/// stem. A long name of that shape is refused too; rename it to use it.
fn is_short_name(name: &[u8]) -> bool {
    let (stem, ext) = match name.iter().position(|&b| b == b'.') {
        Some(dot) => (&name[..dot], &name[dot + 1..]),
        None => (name, &[][..]),
    };
    if stem.len() > 8 || ext.len() > 3 || ext.contains(&b'.') {
        return false;
    }
    let Some(tilde) = stem.iter().rposition(|&b| b == b'~') else {
        return false;
    };
    let digits = &stem[tilde + 1..];
    !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
}

/// Appends the names of `rest` to `out` (a key, or empty for the root),
/// resolving `.` and `..` but never climbing above the drive.
fn push_names(out: &mut Vec<u8>, rest: &[u8], spelled: &[u8]) -> Result<(), WinPathError> {
    for name in rest.split(|&b| is_sep(b)) {
        match name {
            b"" | b"." => {}
            b".." => pop_name(out),
            name if name.len() > NAME_MAX => {
                return Err(PathError::ComponentTooLong { len: name.len() }.into())
            }
            name => {
                check_name(name).map_err(|kind| WinPathError::refused(kind, spelled))?;
                out.push(b'/');
                out.extend_from_slice(name);
            }
        }
    }
    Ok(())
}

/// Drops the last name of a key, keeping its drive (`C:\..` is `C:\`).
fn pop_name(out: &mut Vec<u8>) {
    let cut = out.iter().rposition(|&b| b == b'/').unwrap_or(0);
    if cut > 0 {
        out.truncate(cut);
    }
}

/// The drive name of a key (`c:` of `/c:/x`), with its leading `/`.
fn drive_of(key: &[u8]) -> Option<&[u8]> {
    let end = key
        .get(1..)?
        .iter()
        .position(|&b| b == b'/')
        .map_or(key.len(), |i| i + 1);
    let drive = key.get(..end)?;
    matches!(drive, [b'/', d, b':'] if d.is_ascii_lowercase()).then_some(drive)
}

fn check_spelled(spelled: &[u8]) -> Result<(), PathError> {
    if spelled.is_empty() {
        return Err(PathError::Empty);
    }
    if let Some(offset) = spelled.iter().position(|&b| b == 0) {
        return Err(PathError::Nul { offset });
    }
    if spelled.len() >= PATH_MAX {
        return Err(PathError::TooLong { len: spelled.len() });
    }
    Ok(())
}

/// `spelled` (a Windows spelling, as a spell or `magus.yaml` writes it)
/// made absolute against `base` (a key) and resolved lexically, as a key.
///
/// `\x` takes the base's drive; a base with no drive (`/`) refuses it and
/// every relative spelling.
pub(crate) fn join(base: &NormalPath, spelled: &[u8]) -> Result<NormalPath, WinPathError> {
    check_spelled(spelled)?;
    let base = base.as_os_str().as_encoded_bytes();
    let refuse = |kind| WinPathError::refused(kind, spelled);
    let (prefix, start) = prefix(spelled).map_err(refuse)?;
    let mut out = Vec::with_capacity(base.len() + spelled.len() + 2);
    match prefix {
        Prefix::Drive(d) => out.extend_from_slice(&[b'/', d, b':']),
        Prefix::Rooted => {
            out.extend_from_slice(drive_of(base).ok_or(refuse(WinRefusal::RootRelative))?)
        }
        Prefix::Relative if drive_of(base).is_some() => out.extend_from_slice(base),
        Prefix::Relative => return Err(refuse(WinRefusal::RootRelative)),
    }
    push_names(&mut out, &spelled[start..], spelled)?;
    finish(out)
}

fn finish(out: Vec<u8>) -> Result<NormalPath, WinPathError> {
    if out.len() >= PATH_MAX {
        return Err(PathError::TooLong { len: out.len() }.into());
    }
    Ok(NormalPath::new(PathBuf::from(os_string(out)))?)
}

/// The key of a path the OS handed back (a canonical path, a handle's
/// final path): drive-absolute, possibly verbatim (`\\?\C:\x`). A verbatim
/// UNC path (`\\?\UNC\server\share`) is refused as any UNC path.
pub(crate) fn key_of_os(path: &[u8]) -> Result<NormalPath, WinPathError> {
    let plain = match path.strip_prefix(br"\\?\") {
        Some(rest) if prefix(rest).is_ok_and(|(p, _)| matches!(p, Prefix::Drive(_))) => rest,
        Some(_) => return Err(WinPathError::refused(WinRefusal::Unc, path)),
        None => path,
    };
    match prefix(plain) {
        Ok((Prefix::Drive(_), _)) => join(&NormalPath::root(), plain),
        Ok(_) => Err(WinPathError::refused(WinRefusal::RootRelative, path)),
        Err(kind) => Err(WinPathError::refused(kind, path)),
    }
}

/// `key` as keys are compared: ASCII letters in lower case. Borrowed when
/// there is nothing to fold. Folding keeps every byte's position, so an
/// offset found in the folded key holds in the key.
pub(crate) fn fold(key: &Path) -> Cow<'_, Path> {
    let bytes = key.as_os_str().as_encoded_bytes();
    if !bytes.iter().any(u8::is_ascii_uppercase) {
        return Cow::Borrowed(key);
    }
    Cow::Owned(PathBuf::from(os_string(bytes.to_ascii_lowercase())))
}

/// The Windows path a key stands for, to open (`/c:/x` is `c:\x`, `/c:`
/// is `c:\`); `None` for a key with no drive, which names nothing there.
pub(crate) fn os_of_key(key: &Path) -> Option<OsString> {
    let bytes = key.as_os_str().as_encoded_bytes();
    let drive = drive_of(bytes)?;
    let mut out: Vec<u8> = bytes[1..]
        .iter()
        .map(|&b| if b == b'/' { b'\\' } else { b })
        .collect();
    if out.len() == drive.len() - 1 {
        out.push(b'\\');
    }
    Some(os_string(out))
}

/// A `sandbox.allow` entry as written in `magus.yaml` on Windows, made a
/// key: `~`, `~\x` and `~/x` and `%USERPROFILE%\x` are below `home`, a
/// relative path is below the workspace, `\x` is on the workspace's drive.
pub(crate) fn expand_grant(
    spelled: &str,
    workspace: &NormalPath,
    home: Option<&NormalPath>,
) -> Result<NormalPath, String> {
    let below_home = home_relative(spelled);
    let joined = match (below_home, home) {
        (Some(""), Some(home)) => return Ok(home.clone()),
        (Some(rest), Some(home)) => join(home, rest.as_bytes()),
        (Some(_), None) => return Err("USERPROFILE is not set, so it cannot be expanded".into()),
        (None, _) if spelled.starts_with('~') => {
            return Err(
                "`~name` (another user's home) is not supported; write the full path".into(),
            )
        }
        (None, _) if spelled.contains('%') => Err(WinPathError::refused(
            WinRefusal::Variable,
            spelled.as_bytes(),
        )),
        (None, _) => join(workspace, spelled.as_bytes()),
    };
    joined.map_err(|e| e.to_string())
}

/// What follows the home directory in `spelled`, when it starts there.
fn home_relative(spelled: &str) -> Option<&str> {
    let upper = spelled.get(..13).map(str::to_ascii_uppercase);
    let rest = match spelled.strip_prefix('~') {
        Some(rest) => rest,
        None if upper.as_deref() == Some("%USERPROFILE%") => &spelled[13..],
        None => return None,
    };
    match rest.as_bytes().first() {
        None => Some(""),
        Some(&b) if is_sep(b) => Some(rest.trim_start_matches(['\\', '/'])),
        Some(_) => None,
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
