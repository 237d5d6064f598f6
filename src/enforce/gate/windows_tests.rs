//! The gate on Windows (run under Wine by `.ci/run`), as an attacker
//! spells paths: other cases, both separators, `..` out of the workspace,
//! and the spellings the Windows path model refuses. Each refusal has a
//! control: the same file read without the gate.

use super::{DenialReason, Gate, GateError, WriteMode};
use crate::diag::Code;
use crate::policy::{native, Grant, GrantSource, Mode, Network, Policy, SandboxState, WinRefusal};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// A workspace (granted `rw`) and a fake home beside it holding a key.
struct Fixture {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    home: PathBuf,
    gate: Gate,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("a scratch directory");
    let base = dir.path().canonicalize().expect("canonical");
    let (ws, home) = (base.join("ws"), base.join("home"));
    for d in [
        ws.join("data"),
        ws.join(".git"),
        ws.join("bin"),
        home.join(".ssh"),
    ] {
        std::fs::create_dir_all(d).expect("a directory");
    }
    std::fs::write(ws.join(r"data\in.txt"), "in").expect("a file");
    std::fs::write(ws.join("magus.yaml"), "").expect("the config");
    std::fs::write(ws.join(r"bin\tool.exe"), "MZ").expect("a program");
    std::fs::write(home.join(r".ssh\id_rsa"), "KEY").expect("the secret");
    std::fs::write(home.join("evil.exe"), "MZ").expect("a program outside");
    let key = |p: &Path| native::from_os(p).expect("a drive path").into_path_buf();
    let grants = vec![Grant {
        path: key(&ws),
        mode: Mode::Rw,
        source: GrantSource::Workspace,
    }];
    let policy = Policy::new(
        SandboxState::On,
        ws.clone(),
        grants,
        Network::Allow,
        Vec::new(),
    );
    let gate = Gate::new(Rc::new(policy), ws.clone());
    Fixture {
        _dir: dir,
        ws: strip_verbatim(&ws),
        home: strip_verbatim(&home),
        gate,
    }
}

/// `C:\x` for `\\?\C:\x`, as a spell would write it.
fn strip_verbatim(path: &Path) -> PathBuf {
    let text = path.to_string_lossy();
    PathBuf::from(text.strip_prefix(r"\\?\").unwrap_or(&text))
}

fn text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// The denial's code and reason, or the error itself.
fn denied(got: Result<impl std::fmt::Debug, GateError>) -> (Code, DenialReason) {
    match got {
        Err(GateError::Denied(d)) => (d.code(), d.reason),
        other => panic!("expected a denial, got {other:?}"),
    }
}

#[test]
fn drive_paths_read_in_any_case_and_separator() {
    let f = fixture();
    let abs = text(&f.ws.join(r"data\in.txt"));
    let spellings = [
        r"data\in.txt".to_string(),
        "DATA/IN.TXT".to_string(),
        abs.clone(),
        abs.replace('\\', "/"),
        abs.to_uppercase(),
        // Root-relative: the workspace's drive.
        abs[2..].to_string(),
    ];
    for spelled in spellings {
        assert_eq!(
            f.gate.read(&spelled).ok().as_deref(),
            Some(&b"in"[..]),
            "{spelled}"
        );
    }
}

#[test]
fn the_home_key_is_refused_however_spelled() {
    let f = fixture();
    let key = f.home.join(r".ssh\id_rsa");
    assert_eq!(std::fs::read(&key).expect("the control read"), b"KEY");
    for spelled in [
        text(&key),
        text(&key).to_uppercase().replace('\\', "/"),
        r"..\home\.ssh\id_rsa".to_string(),
        r"data\..\..\HOME\.SSH\ID_RSA".to_string(),
    ] {
        let got = f.gate.read(&spelled);
        assert_eq!(
            denied(got),
            (Code::Mgs2001, DenialReason::NotGranted),
            "{spelled}"
        );
    }
}

#[test]
fn unmodelled_spellings_are_denied_with_the_operation_code() {
    let f = fixture();
    let file = text(&f.ws.join(r"data\in.txt"));
    let read_cases = [
        (format!(r"\\?\{file}"), WinRefusal::Device),
        (format!(r"\\.\{file}"), WinRefusal::Device),
        (
            r"\\localhost\c$\Windows\win.ini".to_string(),
            WinRefusal::Unc,
        ),
        (
            format!("{}{}", &file[..2], r"data\in.txt"),
            WinRefusal::DriveRelative,
        ),
        (r"data\in.txt.".to_string(), WinRefusal::TrailingDotOrSpace),
        (r"data\in.txt ".to_string(), WinRefusal::TrailingDotOrSpace),
        ("CON".to_string(), WinRefusal::Reserved),
        (r"data\aux.txt".to_string(), WinRefusal::Reserved),
        (r"data\in.txt::$DATA".to_string(), WinRefusal::Stream),
        (r"DATA~1\in.txt".to_string(), WinRefusal::ShortName),
    ];
    for (spelled, kind) in read_cases {
        let got = f.gate.read(&spelled);
        let want = (Code::Mgs2001, DenialReason::WindowsPath(kind));
        assert_eq!(denied(got), want, "{spelled}");
    }
    let write = f
        .gate
        .write(r"data\in.txt:hidden", b"x", WriteMode::Truncate);
    let want = (Code::Mgs2002, DenialReason::WindowsPath(WinRefusal::Stream));
    assert_eq!(denied(write), want);
    assert_eq!(
        std::fs::read(f.ws.join(r"data\in.txt")).expect("read"),
        b"in"
    );
}

#[test]
fn protected_names_are_protected_in_any_case() {
    let f = fixture();
    for spelled in [
        "MAGUS.YAML",
        "Magus.Lock",
        r".GIT\config",
        r".Git\hooks\pre-commit",
    ] {
        let got = f.gate.write(spelled, b"x", WriteMode::Truncate);
        assert_eq!(
            denied(got),
            (Code::Mgs2002, DenialReason::Protected),
            "{spelled}"
        );
    }
    assert_eq!(std::fs::read(f.ws.join("magus.yaml")).expect("read"), b"");
    f.gate.make_directory(r"Out\Sub").expect("a directory");
    f.gate
        .write(r"out\sub\new.txt", b"new", WriteMode::Truncate)
        .expect("a write beneath");
    assert_eq!(
        std::fs::read(f.ws.join(r"out\sub\new.txt")).expect("read"),
        b"new"
    );
    // What a spell creates has the case it spelled: keys fold only to compare.
    f.gate
        .write(r"Out\Sub\ReadMe.TXT", b"case", WriteMode::Truncate)
        .expect("a write in another case");
    let names = |dir: &Path| -> Vec<std::ffi::OsString> {
        let entries = std::fs::read_dir(dir).expect("list");
        entries.map(|e| e.expect("an entry").file_name()).collect()
    };
    let sub = names(&f.ws.join(r"out\sub"));
    assert!(sub.iter().any(|n| n == "ReadMe.TXT"), "{sub:?}");
    let top = names(&f.ws);
    assert!(top.iter().any(|n| n == "Out"), "{top:?}");
}

#[test]
fn programs_are_found_by_pathext_and_checked() {
    let f = fixture();
    let path = std::env::join_paths([f.ws.join("bin"), f.home.clone()]).expect("a PATH");
    let path = Some(path.as_os_str());
    let found = f
        .gate
        .resolve_program("tool", path)
        .expect("tool.exe is granted");
    assert_eq!(found.found.file_name(), Some(OsStr::new("tool.exe")));
    let got = f.gate.resolve_program("evil", path);
    assert_eq!(denied(got), (Code::Mgs2007, DenialReason::NotGranted));
    let spelled = text(&f.home.join("evil.exe"));
    assert_eq!(
        denied(f.gate.resolve_program(&spelled, path)).0,
        Code::Mgs2007
    );
}
