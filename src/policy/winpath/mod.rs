//! The Windows path model: a spelled Windows path (`C:\Users\me\x`,
//! `data/x`, `..\y`) becomes the policy's [`NormalPath`], and every
//! spelling the model cannot decide safely is refused with a
//! [`WinRefusal`]. Pure functions on bytes, compiled on every OS, so the
//! rules are tested on Linux; only the gate's Windows glue calls them.
//!
//! A Windows path is kept in the policy as a *key*: `C:\Users\Me\x` is
//! `/c:/Users/Me/x`, the drive (lower case) as the first name, `/` between
//! names, the names' case kept, so what a spell creates has the case it
//! spelled. Keys are compared after [`fold`] (ASCII letters to lower case:
//! NTFS compares names case-insensitively), so the trie, the protected
//! names and the grant roots work on folded keys exactly as on POSIX
//! paths. Only ASCII is folded: NTFS's own table folds more, so a non-ASCII
//! name spelled in another case than the disk's is refused, never granted
//! wider (folding more than NTFS could merge two distinct names).

use super::path::PathError;
#[cfg(doc)]
use super::NormalPath;
use std::fmt;

/// A spelling the Windows path model refuses, and why (the gate reports it
/// as MGS2001, MGS2002 or MGS2007 by the operation, as any denial).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WinRefusal {
    /// `\\server\share\x`: a network path, outside every grant's volume.
    Unc,
    /// `\\.\x`, `\\?\x`: a device or verbatim path, which skips Win32's
    /// normalisation (and the model with it).
    Device,
    /// `C:x`: relative to the drive's own current directory, which the
    /// spell cannot see.
    DriveRelative,
    /// `\x` with no drive to resolve it against.
    RootRelative,
    /// `file:stream`: an alternate data stream (or a stray `:`).
    Stream,
    /// `CON`, `NUL`, `COM1`, `aux.txt`, ...: a device in every directory.
    Reserved,
    /// `secret.` or `secret `: Windows strips trailing dots and spaces, so
    /// the name checked would not be the name opened.
    TrailingDotOrSpace,
    /// `PROGRA~1`: an 8.3 short name, an alias the model cannot match.
    ShortName,
    /// `<`, `>`, `"`, `|`, `?`, `*` or a control character: not a name on
    /// Windows (`?` and `*` are wildcards to some calls).
    BadCharacter,
    /// `%VAR%` in a grant other than `%USERPROFILE%`.
    Variable,
}

impl WinRefusal {
    /// Why, in words, for messages.
    pub fn why(self) -> &'static str {
        match self {
            WinRefusal::Unc => "a network (UNC) path, which the sandbox cannot confine",
            WinRefusal::Device => "a device or verbatim path (`\\\\.\\`, `\\\\?\\`)",
            WinRefusal::DriveRelative => "relative to a drive's current directory (`C:x`)",
            WinRefusal::RootRelative => "rooted without a drive, and no drive to resolve it on",
            WinRefusal::Stream => "an alternate data stream (`name:stream`)",
            WinRefusal::Reserved => "a reserved device name (`CON`, `NUL`, `COM1`, ...)",
            WinRefusal::TrailingDotOrSpace => {
                "a name ending in `.` or a space, which Windows strips"
            }
            WinRefusal::ShortName => "an 8.3 short name (`NAME~1`), an alias of another name",
            WinRefusal::BadCharacter => "a character Windows does not allow in names",
            WinRefusal::Variable => "a variable other than `%USERPROFILE%`",
        }
    }
}

impl fmt::Display for WinRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.why())
    }
}

/// Why a Windows spelling gives no key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum WinPathError {
    /// It cannot name a file at all (empty, NUL, too long).
    #[error(transparent)]
    Invalid(#[from] PathError),
    /// It names something the model refuses.
    #[cfg_attr(not(any(windows, test)), allow(dead_code))]
    #[error("`{spelled}` is refused: it is {kind}")]
    Refused { kind: WinRefusal, spelled: String },
}

// The rules themselves: only the gate's Windows glue calls them, and the
// unit tests run them on every OS.
#[cfg(any(windows, test))]
mod rules;
#[cfg(windows)]
pub(crate) use rules::{expand_grant, fold, join, key_of_os, os_of_key};
