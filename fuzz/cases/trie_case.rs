//! One differential case for the path trie, decoded from fuzzer bytes:
//! grants, a base directory and spelled paths. Shared by the `trie` fuzz
//! target, the corpus replay test and nothing else; it only decodes and
//! compares, the code under test is `magus_sandbox::testing::policy`.

use magus_sandbox::testing::policy::{
    normalize, reference, Access, Grant, GrantSource, Mode, NormalPath, PathTrie,
};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Names chosen so that prefixes collide (`a`, `ab`, `a.`) plus one that is
/// not UTF-8.
const NAMES: [&[u8]; 8] = [b"a", b"ab", b"abc", b"b", b"a.", b".a", b"bc", b"\xff"];
/// What a spelled path is built from: names, separators, `.`/`..`, NUL.
const TOKENS: [&[u8]; 14] = [
    b"/", b"a", b"ab", b"abc", b"b", b"a.", b".a", b"bc", b"\xff", b".", b"..", b"//", b"/a/",
    b"\0",
];
/// Ends one spelled path in the input (as a token byte it would be `abc`).
const SEPARATOR: u8 = 0xff;
const ACCESSES: [Access; 3] = [Access::Read, Access::Write, Access::Execute];

/// A decoded case.
pub(crate) struct TrieCase {
    pub grants: Vec<Grant>,
    pub base: PathBuf,
    pub spelled: Vec<Vec<u8>>,
}

/// Reads bytes front to back; running out yields zeros.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn next(&mut self) -> u8 {
        let (first, rest) = self.0.split_first().map_or((0, &[][..]), |(f, r)| (*f, r));
        self.0 = rest;
        first
    }

    fn path(&mut self, max_depth: u8) -> PathBuf {
        let depth = self.next() % (max_depth + 1);
        let mut bytes = Vec::new();
        for _ in 0..depth {
            bytes.push(b'/');
            bytes.extend_from_slice(NAMES[usize::from(self.next()) % NAMES.len()]);
        }
        if bytes.is_empty() {
            bytes.push(b'/');
        }
        PathBuf::from(OsStr::from_bytes(&bytes))
    }
}

/// Decodes `data`: a grant count, each grant's mode and path, the base,
/// then the rest as spelled paths (one token a byte, ended by [`SEPARATOR`]).
pub(crate) fn decode(data: &[u8]) -> TrieCase {
    let mut input = Bytes(data);
    let count = input.next() % 17;
    let grants = (0..count)
        .map(|_| {
            let mode = if input.next() & 1 == 0 {
                Mode::Ro
            } else {
                Mode::Rw
            };
            Grant {
                path: input.path(5),
                mode,
                source: GrantSource::Builtin("fuzz"),
            }
        })
        .collect();
    let base = input.path(3);
    let spelled = input
        .0
        .split(|&b| b == SEPARATOR)
        .take(64)
        .map(|line| {
            line.iter()
                .flat_map(|&b| TOKENS[usize::from(b) % TOKENS.len()].iter().copied())
                .collect()
        })
        .collect();
    TrieCase {
        grants,
        base,
        spelled,
    }
}

/// Checks the trie against the reference for every spelled path once
/// normalised, and that the raw spelling is accepted as a [`NormalPath`]
/// exactly when normalising leaves it unchanged; the first disagreement is
/// the error.
pub(crate) fn check(case: &TrieCase) -> Result<(), String> {
    let trie = PathTrie::new(&case.grants);
    for spelled in &case.spelled {
        let raw = Path::new(OsStr::from_bytes(spelled));
        let normalised = normalize(&case.base, raw);
        if let Ok(path) = &normalised {
            if NormalPath::new(path.as_path()).as_ref() != Ok(path) {
                return Err(format!("normalize({raw:?}) = {path:?} is not normal"));
            }
            agree(&trie, &case.grants, path)?;
        }
        let fixed_point =
            raw.is_absolute() && normalised.is_ok_and(|p| p.as_os_str() == raw.as_os_str());
        if NormalPath::new(raw).is_ok() != fixed_point {
            return Err(format!("NormalPath::new({raw:?}) disagrees with normalize"));
        }
    }
    Ok(())
}

fn agree(trie: &PathTrie, grants: &[Grant], path: &NormalPath) -> Result<(), String> {
    for access in ACCESSES {
        let fast = trie.check(path, access);
        let slow = reference::check(grants, path, access);
        if fast != slow {
            return Err(format!(
                "{path:?} {access:?}: trie {fast:?}, reference {slow:?}, grants {grants:?}"
            ));
        }
        if fast.is_allowed() != fast.mode.is_some_and(|m| m.permits(access)) {
            return Err(format!("{path:?} {access:?}: allowed disagrees with mode"));
        }
    }
    Ok(())
}
