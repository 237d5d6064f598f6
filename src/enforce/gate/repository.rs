//! Directories git would take for a repository. Git takes any directory
//! holding `HEAD`, `objects` and `refs` for a bare repository (or one with
//! `HEAD` and a `commondir` naming where the rest is), obeys the `config`
//! beside them, and does so at the user's next `git status` in it or below
//! it, outside the sandbox: a spell that wrote `src/HEAD`, `src/objects/`,
//! `src/refs/heads/` and a `src/config` with `core.fsmonitor` had its
//! command run there. So `fs.*` may not write the name that would complete
//! such a directory, nor a `config` into one (docs/protected-names.md).

use crate::policy::names;

/// A name git looks for in a directory it may take for a repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum GitName {
    Head,
    Objects,
    Refs,
    Config,
    Commondir,
}

/// Each name, as git spells it.
const NAMES: [(GitName, &str); 5] = [
    (GitName::Head, "HEAD"),
    (GitName::Objects, "objects"),
    (GitName::Refs, "refs"),
    (GitName::Config, "config"),
    (GitName::Commondir, "commondir"),
];

/// The same names as they are compared (lower case), in the same order.
const FOLDED: [&str; 5] = ["head", "objects", "refs", "config", "commondir"];

impl GitName {
    /// The name `name` is in any case (`head` is git's `HEAD` on a
    /// case-insensitive disk; refusing it elsewhere costs nothing).
    pub(super) fn of(name: &[u8]) -> Option<GitName> {
        // Every such name has 4 to 9 bytes in ASCII: a cheap first test
        // for the gate's hot path. A longer non-ASCII spelling (`HEAD`
        // with an ignorable code point) is compared in full.
        if name.is_ascii() && !(4..=9).contains(&name.len()) {
            return None;
        }
        let at = names::which(name, &FOLDED)?;
        NAMES.get(at).map(|(kind, _)| *kind)
    }

    /// Git's own spelling.
    pub(super) fn spelled(self) -> &'static str {
        NAMES
            .iter()
            .find(|(kind, _)| *kind == self)
            .map_or("", |(_, spelled)| spelled)
    }

    /// What, held already by the directory this name is written in, makes
    /// the write complete a repository (or configure one): the names to
    /// show, or `None` when the write is harmless. `holds` answers by
    /// git's own spelling, as the file system answers git.
    pub(super) fn completes(self, holds: impl Fn(GitName) -> bool) -> Option<Vec<GitName>> {
        use GitName::*;
        let all = |names: &[GitName]| names.iter().all(|&n| holds(n)).then(|| names.to_vec());
        match self {
            Head => all(&[Objects, Refs]).or_else(|| all(&[Commondir])),
            Commondir => all(&[Head]).or_else(|| all(&[Objects, Refs])),
            Config => all(&[Objects, Refs]),
            Objects => all(&[Head, Refs]),
            Refs => all(&[Head, Objects]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::GitName::{self, *};

    #[test]
    fn names_are_recognised_in_any_case() {
        assert_eq!(GitName::of(b"HEAD"), Some(Head));
        assert_eq!(GitName::of(b"head"), Some(Head));
        assert_eq!(GitName::of(b"Objects"), Some(Objects));
        assert_eq!(GitName::of(b"REFS"), Some(Refs));
        assert_eq!(GitName::of(b"CONFIG"), Some(Config));
        assert_eq!(GitName::of(b"commonDir"), Some(Commondir));
        assert_eq!(GitName::of("HE\u{200c}AD".as_bytes()), Some(Head));
        for other in ["heads", "ref", "config.toml", "objects2", "", "x"] {
            assert_eq!(GitName::of(other.as_bytes()), None, "{other}");
        }
    }

    /// Whichever of `HEAD`, `objects` and `refs` comes last is refused,
    /// in every order; so is a `commondir` or `HEAD` that pairs with the
    /// other, and a `config` beside `objects` and `refs`.
    #[test]
    fn the_write_that_completes_a_repository_is_refused() {
        let orders = [
            [Head, Objects, Refs],
            [Head, Refs, Objects],
            [Objects, Head, Refs],
            [Objects, Refs, Head],
            [Refs, Head, Objects],
            [Refs, Objects, Head],
        ];
        for order in orders {
            let mut held = Vec::new();
            for (i, name) in order.iter().enumerate() {
                let refused = name.completes(|n| held.contains(&n)).is_some();
                assert_eq!(refused, i == 2, "{order:?} at {name:?}");
                held.push(*name);
            }
        }
        let holding = |names: &'static [GitName]| move |n| names.contains(&n);
        assert!(Head.completes(holding(&[Commondir])).is_some());
        assert!(Commondir.completes(holding(&[Head])).is_some());
        assert!(Commondir.completes(holding(&[])).is_none());
        assert!(Config.completes(holding(&[Objects, Refs])).is_some());
        assert!(Config.completes(holding(&[Objects, Head])).is_none());
        assert_eq!(
            Head.completes(holding(&[Objects, Refs])),
            Some(vec![Objects, Refs])
        );
    }
}
