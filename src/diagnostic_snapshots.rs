//! The human rendering of every sandbox diagnostic code (MGS2001–MGS2014)
//! and every workspace and `magus.yaml` code (MGS3001–MGS3008),
//! built by the real constructors, pinned with `insta`; and the JSON form
//! of the same diagnostics checked for the documented fields. Temporary
//! paths are replaced by `[TMP]` so the snapshots are the same everywhere.

use crate::scratch;

use crate::diag::{render, Code, Diagnostic, Location, MessageFormat, SourceKind};
use crate::enforce::gate::{Denial, DenialReason, FsOp};
use crate::enforce::landlock::{LandlockStatus, Unavailable, Unenforced};
use crate::enforce::network::{Listen, NetnsUnavailable, NetworkPlan};
use crate::policy::config::parse_config;
use crate::policy::lock_file::{verify, Lock, LockState, Mismatch, Undeclared};
use crate::policy::shims::find_shims;
use crate::policy::{
    self, Access, CanonicalPolicy, ChildEnv, Network, Policy, SandboxState, StartupInput,
    StateSource, WorkspaceArg,
};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// A temporary directory holding a spell and a workspace, so diagnostics
/// with a location have a source line to show.
struct Scene {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

const SPELL: &str = "import \"fs\";\nimport \"sh\";\n\nfun main(args: [str]) > int {\n    fs.read(\"/home/user/.ssh/id_rsa\");\n    fs.write(\"magus.yaml\", \"sandbox: {}\");\n    sh.run([\"/opt/evil/bin/miner\"]);\n    return 0;\n}\n";

impl Scene {
    fn new() -> Scene {
        let dir = tempfile::Builder::new()
            .prefix("snap-")
            .tempdir_in(scratch::base())
            .unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("home")).unwrap();
        std::fs::create_dir_all(root.join("ws/spells")).unwrap();
        std::fs::write(root.join("ws/spells/steal.buzz"), SPELL).unwrap();
        Scene { _dir: dir, root }
    }

    fn spell_at(&self, line: u32, column: u32) -> Location {
        Location {
            kind: SourceKind::Spell,
            file: self.root.join("ws/spells/steal.buzz"),
            line,
            column,
        }
    }

    /// Human text with the temporary root replaced.
    fn human(&self, d: &Diagnostic) -> String {
        render(d, MessageFormat::Human).replace(&self.root.display().to_string(), "[TMP]")
    }
}

fn denial(
    op: FsOp,
    access: Access,
    spelled: &str,
    leads_to: Option<&str>,
    why: DenialReason,
) -> Denial {
    let checked = if spelled.starts_with('/') {
        PathBuf::from(spelled)
    } else {
        PathBuf::from("/work/project").join(spelled)
    };
    Denial::new(
        op,
        access,
        spelled,
        &checked,
        leads_to.map(PathBuf::from),
        why,
    )
}

fn home() -> Option<&'static Path> {
    Some(Path::new("/home/user"))
}

fn mgs2001(scene: &Scene) -> Diagnostic {
    let d = denial(
        FsOp::Read,
        Access::Read,
        "/home/user/.ssh/id_rsa",
        None,
        DenialReason::NotGranted,
    );
    d.to_diagnostic(home()).with_location(scene.spell_at(5, 5))
}

fn mgs2001_symlink() -> Diagnostic {
    let d = denial(
        FsOp::Read,
        Access::Read,
        "docs/key.txt",
        Some("/home/user/.ssh/id_rsa"),
        DenialReason::NotGranted,
    );
    d.to_diagnostic(home())
}

fn mgs2002(scene: &Scene) -> Diagnostic {
    let d = denial(
        FsOp::Write,
        Access::Write,
        "magus.yaml",
        None,
        DenialReason::Protected,
    );
    d.to_diagnostic(home()).with_location(scene.spell_at(6, 5))
}

fn mgs2007(scene: &Scene) -> Diagnostic {
    let d = denial(
        FsOp::Exec,
        Access::Execute,
        "/opt/evil/bin/miner",
        None,
        DenialReason::NotGranted,
    );
    d.to_diagnostic(home()).with_location(scene.spell_at(7, 5))
}

fn mgs2011(scene: &Scene) -> Diagnostic {
    use crate::proxy::{Event, RefusalReason};
    let event = Event::Refused {
        host: "exfil.example".into(),
        port: 443,
        reason: RefusalReason::NotListed,
        via: "http".into(),
        resolved: Vec::new(),
    };
    let at = scene.spell_at(7, 5);
    let site = crate::buzz::CallSite {
        file: at.file,
        line: at.line,
        column: at.column,
    };
    crate::bindings::egress::event_diagnostic(&event, Some(&site)).unwrap()
}

/// MGS2013: the placeholder of `GITHUB_TOKEN` in a header to another
/// host, and a request to the bound host outside the secret's rules.
fn mgs2013(scene: &Scene, rules: Option<&str>) -> Diagnostic {
    use crate::proxy::Event;
    let (host, why) = match rules {
        None => (
            "exfil.example",
            "was on its way to a host it is not bound to (in the name of a `CONNECT` target)",
        ),
        Some(_) => (
            "api.github.com",
            "the request `DELETE /repos/o/n` is outside the secret's rules",
        ),
    };
    let event = Event::SecretRefused {
        host: host.into(),
        port: 443,
        secret: "GITHUB_TOKEN".into(),
        why: why.into(),
        rules: rules.map(str::to_string),
    };
    let at = scene.spell_at(7, 5);
    let site = crate::buzz::CallSite {
        file: at.file,
        line: at.line,
        column: at.column,
    };
    crate::bindings::egress::event_diagnostic(&event, Some(&site)).unwrap()
}

/// A listed name that led to a reserved address, asked for seven times
/// in one call (a client retrying): one diagnostic, the address, its
/// block and the rule.
fn mgs2011_rebinding(scene: &Scene) -> Diagnostic {
    use crate::proxy::{Event, RefusalReason, Resolved};
    let event = Event::Refused {
        host: "index.crates.io".into(),
        port: 443,
        reason: RefusalReason::PrivateAddress,
        via: "http".into(),
        resolved: vec![Resolved {
            address: "198.18.0.5".parse().unwrap(),
            why: "in 198.18.0.0/15 (benchmarking, reserved)".into(),
        }],
    };
    let at = scene.spell_at(7, 5);
    let site = crate::buzz::CallSite {
        file: at.file,
        line: at.line,
        column: at.column,
    };
    let mut all = crate::bindings::egress::diagnostics(&vec![event; 7], Some(&site));
    assert_eq!(all.len(), 1);
    all.remove(0)
}

fn child_env_notes() -> Vec<Diagnostic> {
    let env: Vec<(OsString, OsString)> = [
        ("PATH", "/usr/bin:/bin"),
        ("HOME", "/home/user"),
        ("GITHUB_TOKEN", "ghp_x"),
        ("AWS_SECRET_ACCESS_KEY", "aws_x"),
        ("MAGUS_DAEMON_SOCKET", "/run/magus.sock"),
    ]
    .iter()
    .map(|(k, v)| (OsString::from(k), OsString::from(v)))
    .collect();
    ChildEnv::build(&env, &[]).diagnostics()
}

fn by_code(diagnostics: Vec<Diagnostic>, code: Code) -> Diagnostic {
    diagnostics
        .into_iter()
        .find(|d| d.code == Some(code))
        .unwrap_or_else(|| panic!("no {code}"))
}

fn mgs2004(scene: &Scene) -> Diagnostic {
    let ws = scene.root.join("ws");
    let yaml =
        "sandbox:\n  enabled: true\n  allow:\n    - path: ~/.terraform.d/plugins\n      mode: ro\n";
    std::fs::write(ws.join("magus.yaml"), yaml).unwrap();
    let env = vec![(
        OsString::from("HOME"),
        scene.root.join("home").into_os_string(),
    )];
    let startup = policy::startup(StartupInput {
        workspace: WorkspaceArg::Explicit(&ws),
        env: &env,
        spell: None,
    })
    .unwrap();
    by_code(startup.diagnostics, Code::Mgs2004)
}

fn mgs2006() -> Diagnostic {
    let path = OsStr::new("/home/user/.pyenv/shims:/usr/bin");
    let found = find_shims(path, &["PYENV_ROOT".to_string()], |_| false);
    found[0].to_diagnostic(home())
}

fn canonical(yaml: &str) -> CanonicalPolicy {
    let file = parse_config(Path::new("magus.yaml"), yaml.as_bytes()).unwrap();
    CanonicalPolicy::from_declared(&file.sandbox.unwrap())
}

const LOCKED: &str = "sandbox:\n  enabled: true\n  allow:\n    - {path: ~/.cargo, mode: ro}\n    - {path: ~/.rustup, mode: ro}\n  env: {passthrough: [GOPATH]}\n  network: deny\n";
const WIDER: &str = "sandbox:\n  enabled: true\n  allow:\n    - {path: ~/.cargo, mode: rw}\n    - {path: ~/.ssh, mode: rw}\n  env: {passthrough: [GOPATH, \"AWS_*\"]}\n  network: {connect_tcp: [443]}\n";

fn policy_declaring(yaml: Option<&str>, state: SandboxState, source: StateSource) -> Policy {
    Policy::new(
        state,
        PathBuf::from("/w"),
        Vec::new(),
        Network::Allow,
        Vec::new(),
    )
    .declaring(yaml.map(canonical), source)
}

fn mgs2010_fingerprint() -> Diagnostic {
    let lock = Lock::new(canonical(LOCKED), Vec::new());
    let policy = policy_declaring(Some(WIDER), SandboxState::On, StateSource::Default);
    match verify(&lock, &policy) {
        LockState::Mismatch(m) => m.to_diagnostic(),
        other => panic!("{other:?}"),
    }
}

fn mgs2010_undeclared() -> Diagnostic {
    Mismatch::Undeclared(Undeclared::DisabledByEnvironment).to_diagnostic()
}

fn mgs2010_nested() -> Diagnostic {
    let outer = Lock::new(canonical(LOCKED), Vec::new()).fingerprint;
    let inner = Some(Lock::new(canonical(WIDER), Vec::new()).fingerprint);
    Mismatch::Nested { outer, inner }.to_diagnostic()
}

fn mgs2012_deny_by_seccomp() -> Diagnostic {
    let plan = NetworkPlan::UnixSocketsOnly {
        why: NetnsUnavailable::ForcedOff,
    };
    let landlock = LandlockStatus::Enforced {
        abi: 7,
        unenforced: Vec::new(),
    };
    crate::sandbox::startup::network_fallback(plan, &landlock).expect("a fallback is reported")
}

fn mgs2012_ports_unenforced() -> Diagnostic {
    let plan = NetworkPlan::TcpPorts {
        listen: Listen::Refused,
    };
    let landlock = LandlockStatus::Enforced {
        abi: 3,
        unenforced: vec![Unenforced::Network { since_abi: 4 }],
    };
    crate::sandbox::startup::network_fallback(plan, &landlock).expect("ABI 3 is reported")
}

fn mgs2014(scene: &Scene) -> Diagnostic {
    use crate::enforce::leftovers::{report, Findings, Item, Left, Outcome};
    let ws = scene.root.join("ws");
    let found = Findings {
        items: vec![Item {
            path: ws.join("src/HEAD"),
            left: Left::BareRepository,
            outcome: Outcome::Moved(ws.join(".magus/quarantine/run-1-2/src%2FHEAD")),
        }],
        ..Findings::default()
    };
    report::diagnostics(&found).remove(0)
}

/// The error of `magus.yaml` holding `yaml`, as startup reports it.
fn config_error(scene: &Scene, name: &str, yaml: &[u8]) -> Diagnostic {
    let dir = scene.root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("magus.yaml");
    std::fs::write(&file, yaml).unwrap();
    match parse_config(&file, yaml) {
        Err(e) => policy::StartupError::from(e).to_diagnostic(),
        Ok(_) => panic!("{name}: the config is valid"),
    }
}

/// The error startup reports for `workspace` with `env`.
fn startup_error(workspace: WorkspaceArg<'_>, env: &[(OsString, OsString)]) -> Diagnostic {
    let declared = policy::declare(StartupInput {
        workspace,
        env,
        spell: None,
    })
    .and_then(|d| d.refuse_planted_nested().map(|()| d));
    match declared {
        Err(e) => e.to_diagnostic(),
        Ok(_) => panic!("startup succeeded"),
    }
}

/// A workspace inside a sandboxed one, whose `magus.yaml` turns it off.
fn mgs3008(scene: &Scene) -> Diagnostic {
    let outer = scene.root.join("outer");
    let inner = outer.join("inner");
    std::fs::create_dir_all(&inner).unwrap();
    std::fs::write(outer.join("magus.yaml"), "sandbox:\n  enabled: true\n").unwrap();
    std::fs::write(inner.join("magus.yaml"), "sandbox:\n  enabled: false\n").unwrap();
    startup_error(WorkspaceArg::Discover { start: &inner }, &[])
}

/// Every snapshot of a workspace or `magus.yaml` error (MGS30xx).
fn config_all(scene: &Scene) -> Vec<(&'static str, Diagnostic)> {
    let empty = scene.root.join("home");
    let bad_override = [(
        OsString::from("MAGUS_SANDBOX_ENABLED"),
        OsString::from("yes"),
    )];
    vec![
        (
            "mgs3001_no_workspace",
            startup_error(WorkspaceArg::Discover { start: &empty }, &[]),
        ),
        (
            "mgs3002_not_utf8",
            config_error(scene, "c2", b"sandbox:\n  enabled: tr\xffe\n"),
        ),
        (
            "mgs3003_syntax",
            config_error(scene, "c3", b"sandbox:\n  enabled: true\n  allow: [\n"),
        ),
        (
            "mgs3004_unknown_key",
            config_error(scene, "c4", b"sandbox:\n  enabled: true\n  alow: []\n"),
        ),
        (
            "mgs3005_missing_key",
            config_error(
                scene,
                "c5",
                b"sandbox:\n  enabled: true\n  allow:\n    - path: ~/.cargo\n",
            ),
        ),
        (
            "mgs3006_bad_mode",
            config_error(
                scene,
                "c6",
                b"sandbox:\n  enabled: true\n  allow:\n    - path: ~/.cargo\n      mode: rwx\n",
            ),
        ),
        (
            "mgs3007_override",
            startup_error(WorkspaceArg::Explicit(&empty), &bad_override),
        ),
        ("mgs3008_nested_off", mgs3008(scene)),
    ]
}

/// Every snapshot: `(name, diagnostic)`.
fn all(scene: &Scene) -> Vec<(&'static str, Diagnostic)> {
    let mut all = sandbox_all(scene);
    all.extend(config_all(scene));
    all
}

/// Every snapshot of a sandbox code (MGS20xx).
fn sandbox_all(scene: &Scene) -> Vec<(&'static str, Diagnostic)> {
    vec![
        ("mgs2001_read", mgs2001(scene)),
        ("mgs2001_symlink", mgs2001_symlink()),
        ("mgs2002_protected", mgs2002(scene)),
        (
            "mgs2003_stripped",
            by_code(child_env_notes(), Code::Mgs2003),
        ),
        ("mgs2004_skipped", mgs2004(scene)),
        (
            "mgs2005_landlock",
            crate::sandbox::startup::landlock_unavailable(Unavailable::ForcedOff),
        ),
        ("mgs2006_shim", mgs2006()),
        ("mgs2007_exec", mgs2007(scene)),
        ("mgs2008_daemon", by_code(child_env_notes(), Code::Mgs2008)),
        ("mgs2010_fingerprint", mgs2010_fingerprint()),
        ("mgs2010_undeclared", mgs2010_undeclared()),
        ("mgs2010_nested", mgs2010_nested()),
        ("mgs2011_refused", mgs2011(scene)),
        ("mgs2011_rebinding", mgs2011_rebinding(scene)),
        ("mgs2012_deny_seccomp", mgs2012_deny_by_seccomp()),
        ("mgs2012_ports_unenforced", mgs2012_ports_unenforced()),
        ("mgs2013_exfiltration", mgs2013(scene, None)),
        (
            "mgs2013_rule",
            mgs2013(
                scene,
                Some("{methods: [GET, POST], paths: [\"/repos/o/n/releases*\"]}"),
            ),
        ),
        ("mgs2014_set_aside", mgs2014(scene)),
    ]
}

#[test]
fn every_code_renders_as_pinned() {
    let scene = Scene::new();
    let all = all(&scene);
    for code in Code::SANDBOX.into_iter().chain(Code::CONFIG) {
        assert!(
            all.iter().any(|(_, d)| d.code == Some(code)),
            "no snapshot of {code}"
        );
    }
    for (name, d) in &all {
        insta::assert_snapshot!(*name, scene.human(d));
    }
}

#[test]
fn every_human_diagnostic_ends_with_the_explain_pointer() {
    let scene = Scene::new();
    for (name, d) in all(&scene) {
        let code = d.code.unwrap();
        let text = render(&d, MessageFormat::Human);
        let last = text.trim_end().lines().last().unwrap();
        assert!(
            last.ends_with(&format!(
                "= note: for more information, run `magus explain {code}`"
            )),
            "{name}: {text}"
        );
    }
}

#[test]
fn every_json_diagnostic_has_the_documented_fields() {
    let scene = Scene::new();
    for (name, d) in all(&scene) {
        let line = render(&d, MessageFormat::Json);
        assert!(
            line.ends_with('\n') && line.matches('\n').count() == 1,
            "{name}"
        );
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        let code = d.code.unwrap();
        assert_eq!(v["code"], code.as_str(), "{name}");
        assert_eq!(v["severity"], d.severity.as_str(), "{name}");
        assert_eq!(v["message"], d.message.as_str(), "{name}");
        assert_eq!(v["explain"], format!("magus explain {code}"), "{name}");
        assert_eq!(
            v["notes"].as_array().unwrap().len(),
            d.notes.len(),
            "{name}"
        );
        assert_eq!(v["help"].as_str(), d.help.as_deref(), "{name}");
        assert_eq!(v["path"].as_str(), d.path.as_deref(), "{name}");
        match &d.location {
            Some(loc) => {
                let key = match loc.kind {
                    SourceKind::Spell => "spell",
                    SourceKind::Config => "config",
                };
                assert_eq!(v[key]["file"], loc.file.display().to_string(), "{name}");
                assert_eq!(v[key]["line"], loc.line, "{name}");
                assert_eq!(v[key]["column"], loc.column, "{name}");
            }
            None => assert!(
                v.get("spell").is_none() && v.get("config").is_none(),
                "{name}"
            ),
        }
    }
}

#[test]
fn located_diagnostics_name_spell_and_config_locations() {
    let scene = Scene::new();
    let spell: serde_json::Value =
        serde_json::from_str(&render(&mgs2001(&scene), MessageFormat::Json)).unwrap();
    assert_eq!(spell["spell"]["line"], 5);
    assert_eq!(spell["path"], "/home/user/.ssh/id_rsa");
    let config: serde_json::Value =
        serde_json::from_str(&render(&mgs2004(&scene), MessageFormat::Json)).unwrap();
    assert_eq!(config["config"]["line"], 4);
    assert!(config["config"]["file"]
        .as_str()
        .unwrap()
        .ends_with("ws/magus.yaml"));
}
