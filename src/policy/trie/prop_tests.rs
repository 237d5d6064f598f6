//! Property test: the trie decides exactly as the naive linear-scan
//! reference, for every access kind, over random policies (nested `ro`
//! under `rw` and the reverse, prefix look-alikes, repeated paths) and
//! random spelled paths (`..`, `.`, `//`, trailing `/`, relative), which
//! reach the trie normalised, as they do from the gate.

use crate::policy::{
    normalize, reference, Access, Grant, GrantSource, Mode, Network, NormalPath, Policy,
    SandboxState,
};
use proptest::prelude::*;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Names chosen so that prefixes collide: `a`, `ab`, `abc`, `a.`, ...
const NAMES: [&[u8]; 8] = [b"a", b"ab", b"abc", b"b", b"a.", b".a", b"bc", b"\xff"];
/// What a spelled path may contain besides names.
const EXTRA: [&[u8]; 3] = [b".", b"..", b""];
const ACCESSES: [Access; 3] = [Access::Read, Access::Write, Access::Execute];

fn name() -> impl Strategy<Value = &'static [u8]> {
    prop::sample::select(&NAMES[..])
}

fn spelled_component() -> impl Strategy<Value = &'static [u8]> {
    prop_oneof![4 => name(), 1 => prop::sample::select(&EXTRA[..])]
}

fn grant() -> impl Strategy<Value = Grant> {
    let mode = prop_oneof![Just(Mode::Ro), Just(Mode::Rw)];
    (prop::collection::vec(name(), 0..5), mode).prop_map(|(parts, mode)| {
        let mut bytes = Vec::new();
        for p in parts {
            bytes.push(b'/');
            bytes.extend_from_slice(p);
        }
        if bytes.is_empty() {
            bytes.push(b'/');
        }
        Grant {
            path: PathBuf::from(OsStr::from_bytes(&bytes)),
            mode,
            source: GrantSource::Builtin("property test"),
        }
    })
}

/// A spelled path: absolute or relative, any components, maybe a
/// trailing `/`.
fn spelled() -> impl Strategy<Value = Vec<u8>> {
    (
        any::<bool>(),
        prop::collection::vec(spelled_component(), 0..7),
        any::<bool>(),
    )
        .prop_map(|(absolute, parts, trailing)| {
            let mut bytes = if absolute { b"/".to_vec() } else { Vec::new() };
            bytes.extend(parts.join(&b'/'));
            if trailing {
                bytes.push(b'/');
            }
            bytes
        })
}

fn base() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(name(), 0..3).prop_map(|parts| {
        let mut bytes = b"/".to_vec();
        bytes.extend(parts.join(&b'/'));
        bytes
    })
}

fn assert_agree(policy: &Policy, path: &NormalPath) -> Result<(), TestCaseError> {
    for access in ACCESSES {
        let fast = policy.check(path, access);
        let slow = reference::check(policy.grants(), path, access);
        prop_assert_eq!(fast, slow, "{:?} {:?}", path, access);
        prop_assert_eq!(
            fast.is_allowed(),
            fast.mode.is_some_and(|m| m.permits(access))
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    /// 1,000 policies × 12 paths × 3 access kinds, normalised then checked;
    /// the raw spelling is a `NormalPath` only when it is its own normal form.
    #[test]
    fn trie_matches_reference(
        grants in prop::collection::vec(grant(), 0..16),
        base in base(),
        paths in prop::collection::vec(spelled(), 12),
    ) {
        let policy = Policy::new(SandboxState::On, "/".into(), grants, Network::Allow, Vec::new());
        let base = PathBuf::from(OsStr::from_bytes(&base));
        for spelled in paths {
            let raw = Path::new(OsStr::from_bytes(&spelled));
            let normalised = normalize(&base, raw);
            if let Ok(path) = &normalised {
                prop_assert_eq!(NormalPath::new(path.as_path()), Ok(path.clone()));
                assert_agree(&policy, path)?;
            }
            // The trie only takes normal paths: a raw spelling is one
            // exactly when normalising leaves it as it is.
            let fixed_point = raw.is_absolute() && normalised.is_ok_and(|p| p.as_os_str() == raw.as_os_str());
            prop_assert_eq!(NormalPath::new(raw).is_ok(), fixed_point, "{:?}", raw);
        }
    }
}

fn normal(path: &str) -> NormalPath {
    NormalPath::new(path).expect("a normal test path")
}

#[test]
fn look_alike_prefixes_never_match() {
    let grants = vec![Grant {
        path: "/a/b".into(),
        mode: Mode::Rw,
        source: GrantSource::Builtin("test"),
    }];
    let policy = Policy::new(
        SandboxState::On,
        "/".into(),
        grants,
        Network::Allow,
        Vec::new(),
    );
    for path in ["/a/bc", "/a/b.", "/a", "/ab", "/a/bb/c"] {
        assert!(
            !policy.check(&normal(path), Access::Read).is_allowed(),
            "{path}"
        );
    }
    for path in ["/a/b", "/a/b/c"] {
        assert!(
            policy.check(&normal(path), Access::Write).is_allowed(),
            "{path}"
        );
    }
}
