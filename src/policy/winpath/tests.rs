//! The Windows path model's rules, table-driven, and the policy's
//! decisions on Windows keys: all run on Linux, as the model is pure.

use super::*;
use crate::policy::{Access, Grant, GrantSource, Mode, Network, Policy, SandboxState};

fn key(text: &str) -> NormalPath {
    NormalPath::new(text).expect("a key")
}

fn base() -> NormalPath {
    key("/z:/work/ws")
}

fn joined(spelled: &str) -> Result<String, WinPathError> {
    join(&base(), spelled.as_bytes()).map(|p| p.as_os_str().to_string_lossy().into_owned())
}

fn refusal(spelled: &str) -> Option<WinRefusal> {
    match joined(spelled) {
        Err(WinPathError::Refused { kind, .. }) => Some(kind),
        _ => None,
    }
}

#[test]
fn accepted_spellings_table() {
    let cases = [
        (
            "drive, backslashes",
            r"C:\Users\Me\x.txt",
            "/c:/Users/Me/x.txt",
        ),
        ("drive, slashes", "c:/Users/me/x.txt", "/c:/Users/me/x.txt"),
        ("mixed separators", r"D:/a\b//c\", "/d:/a/b/c"),
        ("drive root", r"C:\", "/c:"),
        (
            "dotdot clamps at the drive",
            r"C:\..\..\Windows",
            "/c:/Windows",
        ),
        ("relative", r"src\Main.rs", "/z:/work/ws/src/Main.rs"),
        ("relative with dots", r".\a\..\b", "/z:/work/ws/b"),
        ("relative climbing", r"..\..\..\..\x", "/z:/x"),
        (
            "root-relative takes the base's drive",
            r"\tmp\x",
            "/z:/tmp/x",
        ),
        ("slash-rooted too", "/etc/x", "/z:/etc/x"),
        ("dot in the middle", "a.b.c", "/z:/work/ws/a.b.c"),
        (
            "a tilde that is no short name",
            "backup~old.txt",
            "/z:/work/ws/backup~old.txt",
        ),
        (
            "a long name with a tilde",
            "verylongname~1.txt",
            "/z:/work/ws/verylongname~1.txt",
        ),
        (
            "not quite a device",
            "console.log",
            "/z:/work/ws/console.log",
        ),
        ("COM10 is no port", "COM10", "/z:/work/ws/COM10"),
        ("non-ASCII kept as is", "Ünï", "/z:/work/ws/Ünï"),
    ];
    for (what, spelled, want) in cases {
        assert_eq!(joined(spelled).as_deref(), Ok(want), "{what}: {spelled}");
    }
}

#[test]
fn refused_spellings_table() {
    use WinRefusal::*;
    let cases = [
        (r"\\server\share\x", Unc),
        ("//server/share/x", Unc),
        (r"\/server\share", Unc),
        (r"\\.\PhysicalDrive0", Device),
        (r"\\?\C:\Users\me\.ssh\id_rsa", Device),
        ("//?/C:/x", Device),
        (r"\\.", Device),
        ("C:foo", DriveRelative),
        ("C:", DriveRelative),
        ("c:..\\x", DriveRelative),
        ("file.txt:secret", Stream),
        (r"dir\file::$DATA", Stream),
        ("CON", Reserved),
        ("nul", Reserved),
        ("aux.txt", Reserved),
        (r"sub\com1", Reserved),
        ("LPT9.log", Reserved),
        ("COM1 .txt", Reserved),
        ("CONOUT$", Reserved),
        ("COM\u{b9}", Reserved),
        ("lpt\u{b3}.x", Reserved),
        ("secret.", TrailingDotOrSpace),
        ("secret ", TrailingDotOrSpace),
        (r"dir.\x", TrailingDotOrSpace),
        ("PROGRA~1", ShortName),
        (r"MAGUS~1.YAM", ShortName),
        (r"GIT~12\hooks\pre-commit", ShortName),
        ("a*b", BadCharacter),
        ("what?", BadCharacter),
        ("a|b", BadCharacter),
        ("\u{1}x", BadCharacter),
        ("<x>", BadCharacter),
    ];
    for (spelled, want) in cases {
        assert_eq!(
            refusal(spelled),
            Some(want),
            "{spelled}: {:?}",
            joined(spelled)
        );
    }
}

#[test]
fn invalid_spellings_are_path_errors() {
    assert_eq!(joined(""), Err(PathError::Empty.into()));
    assert_eq!(joined("a\0b"), Err(PathError::Nul { offset: 1 }.into()));
    let long = "n".repeat(NAME_MAX + 1);
    assert_eq!(
        joined(&long),
        Err(PathError::ComponentTooLong { len: NAME_MAX + 1 }.into())
    );
    let deep = "d/".repeat(PATH_MAX / 2);
    assert!(matches!(joined(&deep), Err(WinPathError::Invalid(_))));
}

#[test]
fn without_a_drive_only_drive_paths_resolve() {
    let root = NormalPath::root();
    let got = join(&root, br"C:\x").map(NormalPath::into_path_buf);
    assert_eq!(got, Ok(PathBuf::from("/c:/x")));
    for spelled in ["x", r"\x", r"..\x"] {
        let got = join(&root, spelled.as_bytes());
        assert!(
            matches!(
                &got,
                Err(WinPathError::Refused {
                    kind: WinRefusal::RootRelative,
                    ..
                })
            ),
            "{spelled}: {got:?}"
        );
    }
}

#[test]
fn os_paths_and_keys_round_trip() {
    let cases = [
        (r"C:\Users\Me", "/c:/Users/Me", r"c:\Users\Me"),
        (r"\\?\C:\Users\Me\ws", "/c:/Users/Me/ws", r"c:\Users\Me\ws"),
        (r"Z:\", "/z:", r"z:\"),
        (r"\\?\Z:\", "/z:", r"z:\"),
    ];
    for (os, want_key, back) in cases {
        let got = key_of_os(os.as_bytes()).expect(os);
        assert_eq!(got.as_os_str(), want_key, "{os}");
        assert_eq!(os_of_key(&got), Some(OsString::from(back)), "{os}");
    }
    for os in [
        r"\\?\UNC\server\share",
        r"\\server\share",
        "relative",
        r"\rooted",
    ] {
        assert!(key_of_os(os.as_bytes()).is_err(), "{os}");
    }
    assert_eq!(os_of_key(Path::new("/")), None);
    assert_eq!(os_of_key(Path::new("/usr/bin")), None);
}

#[test]
fn grants_expand_home_and_the_workspace() {
    let ws = key("/c:/users/me/ws");
    let home = key("/c:/users/me");
    let cases: [(&str, Result<&str, ()>); 10] = [
        ("~", Ok("/c:/users/me")),
        (r"~\.cargo", Ok("/c:/users/me/.cargo")),
        ("~/.cargo/bin", Ok("/c:/users/me/.cargo/bin")),
        ("%USERPROFILE%", Ok("/c:/users/me")),
        (r"%userprofile%\Tools", Ok("/c:/users/me/Tools")),
        (r"D:\sdk", Ok("/d:/sdk")),
        ("vendor", Ok("/c:/users/me/ws/vendor")),
        ("~other", Err(())),
        (r"%APPDATA%\x", Err(())),
        (r"\\server\share", Err(())),
    ];
    for (spelled, want) in cases {
        let got = expand_grant(spelled, &ws, Some(&home));
        match want {
            Ok(want) => assert_eq!(
                got.map(NormalPath::into_path_buf),
                Ok(want.into()),
                "{spelled}"
            ),
            Err(()) => assert!(got.is_err(), "{spelled}: {got:?}"),
        }
    }
    assert!(expand_grant("~/x", &ws, None).is_err());
}

/// A Windows policy: the workspace `rw`, `System32` `ro`; home ungranted.
fn windows_policy() -> Policy {
    let grant = |path: &str, mode| Grant {
        path: path.into(),
        mode,
        source: GrantSource::Builtin("test"),
    };
    let grants = vec![
        grant("/c:/users/me/ws", Mode::Rw),
        grant("/c:/windows/system32", Mode::Ro),
    ];
    let ws = PathBuf::from("/c:/users/me/ws");
    Policy::new(SandboxState::On, ws, grants, Network::Allow, Vec::new())
}

#[test]
fn folding_lowers_ascii_only_and_keeps_offsets() {
    let cases = [
        ("/c:/Users/Me/.GIT", "/c:/users/me/.git"),
        ("/c:/already/lower", "/c:/already/lower"),
        ("/c:/ÜNÏ/X", "/c:/ÜnÏ/x"),
    ];
    for (key, want) in cases {
        let folded = fold(Path::new(key));
        assert_eq!(folded, Path::new(want), "{key}");
        assert_eq!(folded.as_os_str().len(), key.len(), "{key}");
    }
    assert!(matches!(
        fold(Path::new("/c:/x")),
        std::borrow::Cow::Borrowed(_)
    ));
}

/// What Windows' `Policy::check` does: join, then fold (the trie holds
/// folded grants there; Linux does not fold, so this test folds by hand).
fn check(policy: &Policy, cwd: &NormalPath, spelled: &str, access: Access) -> bool {
    let path = join(cwd, spelled.as_bytes()).expect(spelled);
    let folded = NormalPath::new(fold(&path).into_owned()).expect("still normal");
    policy.check(&folded, access).is_allowed()
}

#[test]
fn policy_decisions_on_windows_spellings() {
    let policy = windows_policy();
    let cwd = key("/c:/Users/Me/ws");
    let cases = [
        (r"data\in.txt", Access::Read, true),
        (r"C:\USERS\ME\WS\Data\in.txt", Access::Write, true),
        ("c:/users/me/ws/out", Access::Write, true),
        (r"C:\Windows\System32\cmd.exe", Access::Execute, true),
        (r"C:\WINDOWS\SYSTEM32\drivers\etc\hosts", Access::Read, true),
        (r"C:\Windows\System32\x.dll", Access::Write, false),
        (r"C:\Users\Me\.ssh\id_rsa", Access::Read, false),
        (r"..\.ssh\id_rsa", Access::Read, false),
        (r"\Users\me\.aws\credentials", Access::Read, false),
        (r"C:\Windows\win.ini", Access::Read, false),
        (r"D:\users\me\ws\x", Access::Read, false),
    ];
    for (spelled, access, allowed) in cases {
        let got = check(&policy, &cwd, spelled, access);
        assert_eq!(got, allowed, "{spelled} {access:?}");
    }
}
