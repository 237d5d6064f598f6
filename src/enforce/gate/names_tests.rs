//! The gate's protected and hidden names as an attacker spells them on a
//! case-insensitive disk, its check by device and inode, and its refusal
//! of the writes that would make a directory a git repository. These run
//! on the test machine's (case-sensitive) disk, where each refused
//! spelling names another file: what is checked here is the gate's own
//! decision, each with a control the gate allows. `tests/jail.rs` runs the
//! same attacks through `magus` on a case-insensitive mount.

use super::{DenialReason, Gate, GateError, Protection, WriteMode};
use crate::policy::{Grant, GrantSource, Mode, Network, Policy, SandboxState};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// A workspace (granted `rw`) holding a repository, and a hidden store
/// (`home/.cargo/credentials.toml`) under a granted `home/.cargo`.
struct Fixture {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    cargo: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("a scratch directory");
        let base = dir.path().canonicalize().expect("canonical");
        let (ws, cargo) = (base.join("ws"), base.join("home/.cargo"));
        for d in [ws.join(".git/hooks"), ws.join("src"), cargo.clone()] {
            std::fs::create_dir_all(d).expect("a directory");
        }
        for (file, text) in [
            (ws.join("magus.yaml"), "sandbox:\n  enabled: true\n"),
            (ws.join("magus.lock"), "lock\n"),
            (ws.join(".git/config"), "[core]\n"),
            (cargo.join("credentials.toml"), "TOKEN\n"),
            (cargo.join("config.toml"), "[build]\n"),
        ] {
            std::fs::write(file, text).expect("a file");
        }
        Fixture {
            _dir: dir,
            ws,
            cargo,
        }
    }

    /// The gate of a run in `cwd`, with the store hidden as resolution
    /// hides it.
    fn gate(&self, cwd: &Path) -> Gate {
        self.gate_granting(cwd, &self.cargo)
    }

    /// [`Fixture::gate`] with `also` granted `rw` in place of `.cargo`.
    fn gate_granting(&self, cwd: &Path, also: &Path) -> Gate {
        let grant = |path: &Path| Grant {
            path: path.to_path_buf(),
            mode: Mode::Rw,
            source: GrantSource::Builtin("test"),
        };
        let grants = vec![grant(&self.ws), grant(also)];
        let mut policy = Policy::new(
            SandboxState::On,
            self.ws.clone(),
            grants,
            Network::Allow,
            Vec::new(),
        );
        policy.hidden = vec![self.cargo.join("credentials.toml")];
        Gate::new(Rc::new(policy), cwd.to_path_buf())
    }
}

/// The reason of a denial, or the outcome itself.
fn reason<T: std::fmt::Debug>(got: Result<T, GateError>) -> Result<DenialReason, String> {
    match got {
        Err(GateError::Denied(d)) => Ok(d.reason),
        other => Err(format!("{other:?}")),
    }
}

/// Every spelling a case-insensitive disk takes for a protected path is
/// refused, from the workspace and from below it, on the hot path's
/// spellings and the general path's; the control writes beside them.
#[test]
fn protected_names_are_refused_in_every_case() {
    let f = Fixture::new();
    let spellings = [
        "MAGUS.YAML",
        "Magus.Lock",
        "magus.loc\u{212a}",
        "magu\u{17f}.yaml",
        ".GIT/hooks/pre-commit",
        ".Git/config",
        ".g\u{200c}it/config",
        "src/.GIT/config",
        "src/.Hg/hgrc",
    ];
    for cwd in [f.ws.clone(), f.ws.join("src")] {
        let gate = f.gate(&cwd);
        for spelled in spellings {
            let spelled = match cwd.ends_with("src") {
                true => format!("../{spelled}"),
                false => spelled.to_string(),
            };
            let got = gate.write(&spelled, b"enabled: false\n", WriteMode::Truncate);
            assert_eq!(
                reason(got),
                Ok(DenialReason::Protected),
                "{spelled} in {cwd:?}"
            );
            let absolute = f.ws.join(spelled.trim_start_matches("../"));
            let got = gate.write(&absolute.to_string_lossy(), b"x", WriteMode::Append);
            assert_eq!(reason(got), Ok(DenialReason::Protected), "{absolute:?}");
        }
        gate.write("control.txt", b"ok", WriteMode::Truncate)
            .expect("a write beside them");
    }
    let gate = f.gate(&f.ws.join("src"));
    let got = gate.write(".GIT", b"gitdir: /elsewhere\n", WriteMode::Truncate);
    assert_eq!(reason(got), Ok(DenialReason::Protected));
    for (op, got) in [
        ("mkdir", reason(gate.make_directory("../.GIT/hooks/x"))),
        (
            "move",
            reason(gate.rename("../control.txt", "../MAGUS.yaml")),
        ),
        (
            "copy",
            reason(gate.copy("../control.txt", "../.GIT/config")),
        ),
        ("delete", reason(gate.delete("../Magus.Lock"))),
        ("aside", reason(gate.rename("../.GIT", "../git-aside"))),
    ] {
        assert_eq!(got, Ok(DenialReason::Protected), "{op}");
    }
    let config = std::fs::read_to_string(f.ws.join("magus.yaml")).expect("the config");
    assert_eq!(config, "sandbox:\n  enabled: true\n");
}

/// The hidden store in any case, from the directory holding it (the hot
/// path's plain spellings) and from elsewhere; the control reads the
/// store's neighbour.
#[test]
fn a_hidden_store_is_refused_in_every_case() {
    let f = Fixture::new();
    for cwd in [
        f.cargo.clone(),
        f.ws.clone(),
        f.cargo.parent().expect("home").into(),
    ] {
        let gate = f.gate(&cwd);
        for spelled in [
            f.cargo
                .join("CREDENTIALS.toml")
                .to_string_lossy()
                .into_owned(),
            f.cargo
                .join("credentials.TOML")
                .to_string_lossy()
                .into_owned(),
        ] {
            assert_eq!(
                reason(gate.read(&spelled)),
                Ok(DenialReason::NotGranted),
                "{spelled} from {cwd:?}"
            );
        }
        let config = f.cargo.join("config.toml");
        assert_eq!(
            gate.read(&config.to_string_lossy()).expect("control"),
            b"[build]\n"
        );
    }
    let gate = f.gate(&f.cargo);
    for spelled in ["credentials.toml", "CREDENTIALS.toml", "Credentials.Toml"] {
        assert_eq!(
            reason(gate.read(spelled)),
            Ok(DenialReason::NotGranted),
            "{spelled}"
        );
        assert_eq!(
            reason(gate.exists(spelled)),
            Ok(DenialReason::NotGranted),
            "{spelled}"
        );
        let got = gate.write(spelled, b"x", WriteMode::Truncate);
        assert_eq!(reason(got), Ok(DenialReason::NotGranted), "{spelled}");
    }
    assert_eq!(gate.read("config.toml").expect("control"), b"[build]\n");
    let token = std::fs::read_to_string(f.cargo.join("credentials.toml")).expect("store");
    assert_eq!(token, "TOKEN\n");
}

/// A directory holding a hidden store is neither moved nor removed: moved,
/// the store would stand where nothing hides it (a red-team run, without
/// the jail, moved `~/.config/gh` aside, read `hosts.yml` at its new path
/// and moved it back). Refused in any case; the control moves the store's
/// neighbour, and a link to the store's directory (the link, not what it
/// leads to, is what moves).
#[test]
fn a_directory_holding_a_hidden_store_is_neither_moved_nor_removed() {
    let f = Fixture::new();
    let home = f.cargo.parent().expect("home").to_path_buf();
    std::fs::create_dir_all(home.join("other")).expect("a directory");
    std::os::unix::fs::symlink(&f.cargo, home.join("link")).expect("a link");
    let gate = f.gate_granting(&home, &home);
    for spelled in [".cargo", ".CARGO", "./.cargo/"] {
        for got in [gate.rename(spelled, "moved"), gate.delete(spelled)] {
            match got {
                Err(GateError::Denied(d)) => {
                    assert_eq!(d.reason, DenialReason::Protected, "{spelled}");
                    let Some(Protection::HoldsStore { store }) = d.protection.as_deref() else {
                        panic!("{spelled}: {:?}", d.protection);
                    };
                    assert!(store.ends_with(".cargo/credentials.toml"), "{store:?}");
                    assert!(
                        d.message().contains("a credential store"),
                        "{}",
                        d.message()
                    );
                }
                other => panic!("{spelled}: {other:?}"),
            }
        }
    }
    assert!(
        !home.join("moved").exists() && f.cargo.is_dir(),
        "nothing moved"
    );
    gate.rename("other", "other2").expect("control");
    gate.rename("link", "link2")
        .expect("control: the link moves");
    assert_eq!(
        reason(gate.read("link2/credentials.toml")),
        Ok(DenialReason::NotGranted)
    );
    let token = std::fs::read_to_string(f.cargo.join("credentials.toml")).expect("store");
    assert_eq!(token, "TOKEN\n");
}

/// A hard link is a name no check of names can see: the handle's device
/// and inode are compared with what was noted, before anything is
/// truncated. The control writes an ordinary file.
#[test]
fn a_hard_link_to_a_protected_or_hidden_file_is_refused_by_identity() {
    let f = Fixture::new();
    std::fs::hard_link(f.ws.join("magus.yaml"), f.ws.join("alias.yaml")).expect("a link");
    std::fs::hard_link(f.ws.join(".git/config"), f.ws.join("src/cfg")).expect("a link");
    std::fs::hard_link(f.cargo.join("credentials.toml"), f.cargo.join("t")).expect("a link");
    let gate = f.gate(&f.ws);
    for spelled in ["alias.yaml", "src/cfg"] {
        for mode in [WriteMode::Truncate, WriteMode::Append] {
            let got = gate.write(spelled, b"enabled: false\n", mode);
            match got {
                Err(GateError::Denied(d)) => {
                    assert_eq!(d.reason, DenialReason::Protected, "{spelled}");
                    let real = d.leads_to.expect("the protected file it is");
                    assert!(real.ends_with("magus.yaml") || real.ends_with(".git/config"));
                }
                other => panic!("{spelled}: {other:?}"),
            }
        }
        assert_eq!(
            reason(gate.copy("magus.lock", spelled)),
            Ok(DenialReason::Protected)
        );
    }
    let config = std::fs::read_to_string(f.ws.join("magus.yaml")).expect("the config");
    assert_eq!(config, "sandbox:\n  enabled: true\n", "nothing truncated");
    let store = f.cargo.join("t").to_string_lossy().into_owned();
    assert_eq!(reason(gate.read(&store)), Ok(DenialReason::NotGranted));
    gate.write("src/other", b"ok", WriteMode::Truncate)
        .expect("control");
    gate.write("src/other", b"new", WriteMode::Truncate)
        .expect("control");
    let other = std::fs::read(f.ws.join("src/other")).expect("written");
    assert_eq!(other, b"new", "a write still truncates");
}

/// The protection a denial names, when the directory would become a
/// repository.
fn repository(got: Result<(), GateError>) -> Result<Vec<&'static str>, String> {
    match got {
        Err(GateError::Denied(d)) if d.reason == DenialReason::Protected => {
            match d.protection.as_deref() {
                Some(Protection::Repository { holds, .. }) => {
                    assert!(d.message().contains("git would take"), "{}", d.message());
                    Ok(holds.clone())
                }
                other => Err(format!("{other:?}")),
            }
        }
        other => Err(format!("{other:?}")),
    }
}

/// A spell planting a bare repository with `fs.*` alone: whichever of
/// `HEAD`, `objects` and `refs` comes last is refused, however it is made
/// (write, append, copy, move, makeDirectory) and in any case; so is a
/// `config` beside `objects` and `refs`, and a `commondir` beside `HEAD`.
/// The control makes the same names where they complete nothing.
#[test]
fn the_write_that_would_make_a_repository_is_refused() {
    let f = Fixture::new();
    let gate = f.gate(&f.ws);
    gate.write("src/HEAD", b"ref: refs/heads/main\n", WriteMode::Truncate)
        .expect("HEAD alone is an ordinary file");
    gate.make_directory("src/objects")
        .expect("so is objects beside it");
    assert_eq!(
        repository(gate.make_directory("src/refs/heads")),
        Ok(vec!["HEAD", "objects"])
    );
    assert_eq!(
        repository(gate.make_directory("src/REFS")),
        Ok(vec!["HEAD", "objects"])
    );
    gate.write("payload", b"x", WriteMode::Truncate)
        .expect("a file to move");
    assert!(repository(gate.rename("payload", "src/refs")).is_ok());
    assert!(repository(gate.copy("payload", "src/Refs")).is_ok());
    assert!(!f.ws.join("src/refs").exists(), "nothing was made");

    gate.make_directory("lib/objects").expect("objects alone");
    gate.make_directory("lib/refs/heads").expect("and refs");
    for (spelled, mode) in [
        ("lib/HEAD", WriteMode::Truncate),
        ("lib/head", WriteMode::Append),
        ("lib/config", WriteMode::Truncate),
        ("lib/CONFIG", WriteMode::Append),
        ("lib/commondir", WriteMode::Truncate),
    ] {
        let got = gate.write(spelled, b"[core]\n\tfsmonitor = evil\n", mode);
        assert_eq!(repository(got), Ok(vec!["objects", "refs"]), "{spelled}");
    }
    assert!(repository(gate.rename("payload", "lib/config")).is_ok());

    gate.make_directory("w").expect("a directory");
    gate.write("w/commondir", b"../lib\n", WriteMode::Truncate)
        .expect("commondir alone");
    let got = gate.write("w/HEAD", b"ref: refs/heads/main\n", WriteMode::Truncate);
    assert_eq!(repository(got), Ok(vec!["commondir"]));

    // Controls: the same names beside nothing that completes a repository.
    gate.make_directory("docs").expect("a directory");
    for spelled in ["docs/config", "docs/refs/x", "src/refs.md", "docs/HEAD"] {
        match spelled.ends_with('x') {
            true => gate.make_directory(spelled),
            false => gate.write(spelled, b"ok", WriteMode::Truncate),
        }
        .unwrap_or_else(|e| panic!("{spelled}: {e:?}"));
    }
    let held: Vec<_> = ["src/HEAD", "lib/objects", "lib/refs"]
        .iter()
        .map(|p| f.ws.join(p).exists())
        .collect();
    assert_eq!(held, [true, true, true]);
    for refused in ["lib/HEAD", "lib/config", "lib/commondir", "w/HEAD"] {
        assert!(!f.ws.join(refused).exists(), "{refused} was made");
    }
}
