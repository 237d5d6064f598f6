//! Names as a case-insensitive file system compares them. macOS's default
//! volumes (APFS, HFS+), FAT, and casefolded ext4 or NTFS directories take
//! `MAGUS.YAML` for `magus.yaml`; APFS and HFS+ also ignore Unicode
//! normalisation (`é` composed or not) and HFS+ ignores some invisible
//! code points. Protected and hidden names are compared here in a way
//! that equates every spelling any of them equates, on every platform: on
//! a case-sensitive disk this over-protects (`MAGUS.YAML` is refused
//! there too), which costs nothing (docs/protected-names.md).

use std::path::Path;

/// Which of `targets` the name `name` (one component, in bytes) is on
/// some case-insensitive file system, if any. The targets are lower-case
/// ASCII, as every protected and hidden name is; a name in ASCII is
/// compared without allocating, any other by its [`key`], made once. A
/// name that is not UTF-8 is none of them: case-insensitive file systems
/// take UTF-8 names only (ext4's casefolding compares any other byte by
/// byte).
pub(crate) fn which(name: &[u8], targets: &[&str]) -> Option<usize> {
    debug_assert!(targets
        .iter()
        .all(|t| !t.bytes().any(|b| b.is_ascii_uppercase())));
    if name.is_ascii() {
        return targets
            .iter()
            .position(|t| name.eq_ignore_ascii_case(t.as_bytes()));
    }
    let key = key(std::str::from_utf8(name).ok()?);
    targets.iter().position(|t| key == *t)
}

/// Whether two names are the same on some case-insensitive file system.
pub(crate) fn same_name(a: &[u8], b: &[u8]) -> bool {
    if a.is_ascii() && b.is_ascii() {
        return a.eq_ignore_ascii_case(b);
    }
    match (std::str::from_utf8(a), std::str::from_utf8(b)) {
        (Ok(a), Ok(b)) => key(a) == key(b),
        _ => a == b,
    }
}

/// What a name is compared by: canonically decomposed (NFD, as HFS+
/// stores names and APFS compares them), without the code points HFS+
/// ignores, fully case-folded (`ß` is `ss`, the Kelvin sign `K` is `k`,
/// the long `ſ` is `s`), and decomposed again, since folding can undo the
/// decomposition (the caseless match of Unicode's definition D145).
pub(crate) fn key(name: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let decomposed: String = name.nfd().filter(|&c| !is_hfs_ignorable(c)).collect();
    unicase::UniCase::new(decomposed)
        .to_folded_case()
        .nfd()
        .collect()
}

/// The code points HFS+ leaves out when it compares names (git's
/// `is_hfs_dotgit` skips the same ones: `.g\u{200c}it` is `.git` there).
fn is_hfs_ignorable(c: char) -> bool {
    matches!(c,
        '\u{200c}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{206a}'..='\u{206f}' | '\u{feff}')
}

/// The names of a path in order, as bytes (`/` separates them; empty
/// names, from `//` or the leading `/`, are skipped). Paths compared here
/// are normal: they hold no `.` or `..`.
fn names(path: &Path) -> impl Iterator<Item = &[u8]> {
    path.as_os_str()
        .as_encoded_bytes()
        .split(|&b| b == b'/')
        .filter(|name| !name.is_empty())
}

/// Whether `path` is `ancestor` or lies below it, names compared by
/// [`same_name`]. Both are absolute and normal.
pub(crate) fn lies_within(path: &Path, ancestor: &Path) -> bool {
    let mut path = names(path);
    names(ancestor).all(|want| path.next().is_some_and(|name| same_name(name, want)))
}

/// `path` below `ancestor`, names compared by [`same_name`]: the rest of
/// `path` (empty for `ancestor` itself), or `None` when it does not lie
/// there. Both are absolute and normal.
pub(crate) fn strip_prefix<'p>(path: &'p Path, ancestor: &Path) -> Option<&'p Path> {
    let bytes = path.as_os_str().as_encoded_bytes();
    let mut at = 0;
    for want in names(ancestor) {
        let rest = bytes.get(at..)?;
        let start = at + rest.iter().position(|&b| b != b'/')?;
        let len = bytes[start..]
            .iter()
            .position(|&b| b == b'/')
            .unwrap_or(bytes.len() - start);
        if !same_name(&bytes[start..start + len], want) {
            return None;
        }
        at = start + len;
    }
    let rest = &bytes[at..];
    let rest = &rest[rest.iter().position(|&b| b != b'/').unwrap_or(rest.len())..];
    // SAFETY: `rest` starts after an ASCII `/` or at a name's start, or
    // is empty, so it is a valid OS string cut from `path`'s own bytes.
    Some(Path::new(unsafe {
        std::ffi::OsStr::from_encoded_bytes_unchecked(rest)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_name(name: &[u8], target: &str) -> bool {
        which(name, &[target]).is_some()
    }

    #[test]
    fn every_case_insensitive_spelling_is_the_name() {
        for (name, target) in [
            ("MAGUS.YAML", "magus.yaml"),
            ("Magus.Lock", "magus.lock"),
            ("magus.loc\u{212a}", "magus.lock"),
            ("magu\u{17f}.yaml", "magus.yaml"),
            (".GIT", ".git"),
            (".g\u{200c}it", ".git"),
            (".Gi\u{feff}T", ".git"),
            ("CREDENTIALS.toml", "credentials.toml"),
            (".\u{17f}\u{17f}h", ".ssh"),
            (".\u{df}h", ".ssh"),
            ("HEAD", "head"),
        ] {
            assert!(is_name(name.as_bytes(), target), "{name:?}");
        }
    }

    #[test]
    fn which_finds_the_target_a_name_is() {
        let targets = ["magus.yaml", "magus.lock", ".git"];
        assert_eq!(which(b".GIT", &targets), Some(2));
        assert_eq!(which("MAGUS.LOC\u{212a}".as_bytes(), &targets), Some(1));
        assert_eq!(which(b"magus.yml", &targets), None);
        assert_eq!(which(b"\xff.git", &targets), None);
    }

    #[test]
    fn other_names_are_not() {
        for (name, target) in [
            ("magus.yml", "magus.yaml"),
            (".gít", ".git"),
            (".g\u{200b}it", ".git"),
            ("\u{ff47}it", ".git"),
            ("magus.yaml ", "magus.yaml"),
            ("", ".git"),
        ] {
            assert!(!is_name(name.as_bytes(), target), "{name:?}");
        }
        assert!(!is_name(b"\xff.git", ".git"));
    }

    #[test]
    fn composed_and_decomposed_names_are_the_same() {
        assert!(same_name("caf\u{e9}".as_bytes(), "CAFE\u{301}".as_bytes()));
        assert!(same_name("\u{212b}".as_bytes(), "\u{e5}".as_bytes()));
        assert!(!same_name("cafe".as_bytes(), "caf\u{e9}".as_bytes()));
        assert!(!same_name(b"\xffA", b"\xffa"));
        assert!(same_name(b"\xffA", b"\xffA"));
    }

    #[test]
    fn paths_compare_name_by_name() {
        let p = Path::new;
        assert!(lies_within(p("/Home/U/.Cargo/x"), p("/home/u/.cargo")));
        assert!(lies_within(p("/home/u"), p("/HOME/U")));
        assert!(!lies_within(p("/home/u"), p("/home/u/.cargo")));
        assert!(!lies_within(p("/home/user"), p("/home/u")));
        assert!(lies_within(p("/a"), p("/")));
        let strip = |a, b| strip_prefix(p(a), p(b)).map(|r| r.to_str().unwrap().to_string());
        assert_eq!(
            strip("/W/Ws/.GIT/config", "/w/ws").as_deref(),
            Some(".GIT/config")
        );
        assert_eq!(strip("/w/ws", "/W/WS").as_deref(), Some(""));
        assert_eq!(strip("/w/wsx/a", "/w/ws"), None);
        assert_eq!(strip("/w", "/w/ws"), None);
        assert_eq!(strip("/a/b", "/").as_deref(), Some("a/b"));
        assert_eq!(strip("/", "/").as_deref(), Some(""));
    }
}
