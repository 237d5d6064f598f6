//! Protected and hidden names through the real `magus` binary, as an
//! attacker spells them where the disk does not tell case apart, and the
//! bare repository a spell could plant with `fs.*` alone. Each attack runs
//! first with the sandbox off (the control, which must succeed, so a pass
//! means something), then with the gate alone (no Landlock, no jail: what
//! macOS has) and with the whole sandbox, as root and as uid 65534.
//!
//! The case-insensitive disk is `tests/jail/casefold.c`, a FUSE file
//! system compiled against libfuse3 (Debian's `libfuse3-dev`) and mounted
//! by the test (root): this kernel casefolds no ext4 or tmpfs directory.
//! Linux only: the mount is Linux's (macOS's own disks are
//! case-insensitive, and the gate's name tests cover them).
#![cfg(target_os = "linux")]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::runas::{hand_over, User, AS_NOBODY};
use support::{buzz_str, capture, Harness, RunOutput};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sandbox {
    Off,
    /// The gate alone, as on macOS: no Landlock, no jail.
    GateOnly,
    On,
}

/// The users the tests run as: root, and uid 65534 (through `setpriv`);
/// none when the test is not root (it mounts, and switches users).
fn users() -> Vec<User> {
    match nix::unistd::geteuid().is_root() {
        true => vec![User::Root, User::Nobody],
        false => Vec::new(),
    }
}

/// `magus --workspace WS run NAME` as `user`, in `sandbox`.
fn run(h: &Harness, user: User, sandbox: Sandbox, name: &str) -> RunOutput {
    let wrapper: &[&str] = match user {
        User::Root => &[],
        User::Nobody => &AS_NOBODY,
    };
    let mut cmd = h.wrapped_command(wrapper);
    match sandbox {
        Sandbox::Off => {
            cmd.env("MAGUS_SANDBOX_ENABLED", "0");
        }
        Sandbox::GateOnly => {
            cmd.env("MAGUS_SANDBOX_LANDLOCK", "0");
            cmd.env("MAGUS_SANDBOX_USERNS", "0");
        }
        Sandbox::On => {}
    }
    cmd.arg("--workspace").arg(&h.ws).args(["run", name]);
    capture(&mut cmd)
}

/// Runs each `(op, target, data)` through `fs.*` and prints one line per
/// probe: `DONE op target` (and `READ target content`), or `REFUSED op
/// target CODE` with the message, or `FAILED op target message`.
fn probe_spell(probes: &[(&str, String, String)]) -> String {
    let mut body = String::new();
    for (op, target, data) in probes {
        body.push_str(&format!(
            "    probe({}, {}, {});\n",
            literal(op),
            literal(target),
            literal(data)
        ));
    }
    format!(
        r#"import "std";
import "fs";

fun attempt(op: str, target: str, data: str) > void {{
    if (op == "read") {{ std.print("READ {{target}} {{fs.read(target)}}"); }}
    if (op == "write") {{ fs.write(target, data); }}
    if (op == "append") {{ fs.append(target, data); }}
    if (op == "mkdir") {{ fs.makeDirectory(target); }}
    if (op == "copy") {{ fs.copy(data, target); }}
    if (op == "move") {{ fs.move(data, target); }}
    std.print("DONE {{op}} {{target}}");
}}

fun probe(op: str, target: str, data: str) > void {{
    try {{
        attempt(op, target, data);
    }} catch (e: SandboxError) {{
        std.print("REFUSED {{op}} {{target}} {{e.code}}");
        std.print("MESSAGE {{e.message}}");
    }} catch (e: FileSystemError) {{
        std.print("FAILED {{op}} {{target}} {{e.message}}");
    }}
}}

fun main(args: [str]) > int {{
{body}    std.print("FINISHED");
    return 0;
}}
"#
    )
}

/// A Buzz string literal for `text`, line breaks and tabs escaped too.
fn literal(text: &str) -> String {
    buzz_str(text).replace('\n', "\\n").replace('\t', "\\t")
}

/// What the run printed for `op` on `target`: `DONE`, `REFUSED CODE` or
/// `FAILED ...`.
fn outcome(out: &RunOutput, op: &str, target: &str) -> String {
    let done = format!("DONE {op} {target}");
    let refused = format!("REFUSED {op} {target} ");
    let failed = format!("FAILED {op} {target} ");
    for line in out.stdout.lines() {
        if line == done {
            return "DONE".into();
        }
        if let Some(code) = line.strip_prefix(&refused) {
            return format!("REFUSED {code}");
        }
        if let Some(why) = line.strip_prefix(&failed) {
            return format!("FAILED {why}");
        }
    }
    panic!("no outcome for {op} {target}\n{}", out.dump())
}

/// `git ARGS` in `dir`, outside magus, as the user would run it later;
/// what it printed on stderr (where the planted commands print).
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "safe.directory=*", "-c", "safe.bareRepository=all"])
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("run git");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `git init` in `dir`.
fn git_init(dir: &Path) {
    let out = Command::new("git")
        .args(["init", "-q", "-b", "main"])
        .arg(dir)
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A unique token for a planted secret.
fn token() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    format!("cargo-registry-token-{:016x}", h.finish())
}

/// A case-insensitive, case-preserving file system mounted for one test
/// (`tests/jail/casefold.c`), unmounted when dropped.
struct CaseInsensitiveMount {
    mnt: PathBuf,
    daemon: Child,
    _dir: tempfile::TempDir,
}

impl CaseInsensitiveMount {
    /// The mount, or why it cannot be made here.
    fn new() -> Result<CaseInsensitiveMount, String> {
        if !Path::new("/dev/fuse").exists() {
            return Err("there is no /dev/fuse".into());
        }
        let helper = casefold_binary()?;
        let dir = tempfile::Builder::new()
            .prefix("magus-casefold-")
            .tempdir_in(support::scratch_base())
            .map_err(|e| format!("a scratch directory: {e}"))?;
        let (backing, mnt) = (dir.path().join("backing"), dir.path().join("mnt"));
        for d in [dir.path(), &backing, &mnt] {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
            // uid 65534 walks through it too.
            support::open_to_everyone(d);
        }
        let daemon = Command::new(&helper)
            .arg(&backing)
            .arg(&mnt)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("start {}: {e}", helper.display()))?;
        let mut mount = CaseInsensitiveMount {
            mnt: mnt.canonicalize().unwrap_or(mnt),
            daemon,
            _dir: dir,
        };
        mount.wait_until_mounted()?;
        mount.check_case_insensitive()?;
        Ok(mount)
    }

    /// Waits for the kernel to list the mount. The bound is far beyond
    /// what a working FUSE mount takes; only a broken one reaches it.
    fn wait_until_mounted(&mut self) -> Result<(), String> {
        let wanted = format!(" {} ", self.mnt.display());
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
            if table
                .lines()
                .any(|l| l.contains(&wanted) && l.contains("fuse.casefold"))
            {
                return Ok(());
            }
            if let Ok(Some(status)) = self.daemon.try_wait() {
                let mut why = String::new();
                if let Some(mut err) = self.daemon.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut err, &mut why);
                }
                return Err(format!("the FUSE helper exited ({status}): {why}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err("the FUSE mount did not appear".into())
    }

    /// The mount takes one spelling for another (else the test would
    /// show nothing).
    fn check_case_insensitive(&self) -> Result<(), String> {
        let probe = self.mnt.join("Probe-Case");
        std::fs::write(&probe, "x").map_err(|e| format!("write on the mount: {e}"))?;
        let seen = std::fs::read_to_string(self.mnt.join("PROBE-CASE")).unwrap_or_default();
        let _ = std::fs::remove_file(&probe);
        match seen.as_str() {
            "x" => Ok(()),
            _ => Err("the mount is not case-insensitive".into()),
        }
    }
}

impl Drop for CaseInsensitiveMount {
    fn drop(&mut self) {
        let _ = nix::mount::umount2(&self.mnt, nix::mount::MntFlags::MNT_DETACH);
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
    }
}

/// `tests/jail/casefold.c`, compiled once per test binary into
/// `target/tmp`; why not, when it cannot be (no libfuse3 headers).
fn casefold_binary() -> Result<PathBuf, String> {
    static BINARY: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    BINARY.get_or_init(compile_casefold).clone()
}

fn compile_casefold() -> Result<PathBuf, String> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let out = dir.join("casefold");
    let building = dir.join(format!("casefold.{}", std::process::id()));
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jail/casefold.c");
    let flags = Command::new("pkg-config")
        .args(["--cflags", "--libs", "fuse3"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_else(|| "-I/usr/include/fuse3 -lfuse3 -lpthread".into());
    let built = Command::new("cc")
        .args(["-O1", "-D_FILE_OFFSET_BITS=64", "-o"])
        .arg(&building)
        .arg(&src)
        .args(flags.split_whitespace())
        .output()
        .map_err(|e| format!("run cc: {e}"))?;
    if !built.status.success() {
        return Err(format!(
            "cc could not build {} (is libfuse3-dev installed?): {}",
            src.display(),
            String::from_utf8_lossy(&built.stderr)
        ));
    }
    std::fs::rename(&building, &out).map_err(|e| format!("move the helper in place: {e}"))?;
    Ok(out)
}

/// The mount, or `None` after saying on stderr why the test is skipped.
fn mount_or_skip(test: &str) -> Option<CaseInsensitiveMount> {
    if users().is_empty() {
        eprintln!("SKIPPED {test}: it mounts a FUSE file system and switches users (run as root)");
        return None;
    }
    match CaseInsensitiveMount::new() {
        Ok(mount) => Some(mount),
        Err(why) => {
            eprintln!("SKIPPED {test}: no case-insensitive mount could be made: {why}");
            None
        }
    }
}

/// The config of the case-insensitive workspace: `~/.cargo` granted, so
/// its `credentials.toml` is a hidden store inside a grant.
const CARGO_GRANTED: &str =
    "sandbox:\n  enabled: true\n  allow:\n    - path: ~/.cargo\n      mode: rw\n";

/// A workspace on the mount holding a repository with the user's own
/// `pre-commit` hook, and a home whose `~/.cargo` holds a registry token.
fn case_insensitive_workspace(mount: &CaseInsensitiveMount, user: User) -> (Harness, String) {
    let h = Harness::with_config_in(&mount.mnt, CARGO_GRANTED);
    git_init(&h.ws);
    let hook = h.ws_path(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\nexit 0\n").expect("the user's hook");
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&hook, mode).expect("an executable hook");
    let secret = token();
    let cargo = h.home_path(".cargo");
    std::fs::create_dir_all(&cargo).expect("~/.cargo");
    std::fs::write(
        cargo.join("credentials.toml"),
        format!("[registry]\ntoken = \"{secret}\"\n"),
    )
    .expect("the token");
    std::fs::write(cargo.join("config.toml"), "[build]\n").expect("cargo's config");
    h.write_spell("names", &probe_spell(&case_attacks(&h)));
    hand_over(&h.root, user);
    (h, secret)
}

/// The attacks: each protected or hidden path by another spelling the
/// mount takes for it (case, the Kelvin sign for `k`, the long s for `s`).
fn case_attacks(h: &Harness) -> Vec<(&'static str, String, String)> {
    let cargo = h.home_path(".cargo");
    let at = |name: &str| cargo.join(name).to_string_lossy().into_owned();
    let off = "sandbox:\n  enabled: false\n".to_string();
    let hook = "#!/bin/sh\necho PWNED-hook >&2\n".to_string();
    let monitor = "[core]\n\tfsmonitor = \"echo PWNED-config >&2; false\"\n".to_string();
    vec![
        ("write", "MAGUS.YAML".into(), off),
        ("write", "Magus.Lock".into(), "planted\n".into()),
        ("append", "magus.loc\u{212a}".into(), "more\n".into()),
        ("write", ".GIT/hooks/pre-commit".into(), hook),
        ("append", ".Git/config".into(), monitor),
        ("read", at("CREDENTIALS.toml"), String::new()),
        ("read", at("credential\u{17f}.toml"), String::new()),
        ("copy", "stolen.txt".into(), at("Credentials.TOML")),
    ]
}

/// `MAGUS.YAML`, `Magus.Lock`, `.GIT/hooks/pre-commit`, `.Git/config` and
/// `~/.cargo/CREDENTIALS.toml` on a case-insensitive disk. The control
/// (sandbox off) turns the next run's sandbox off, plants a lock, a hook
/// `git commit` runs and an fsmonitor `git status` runs, and reads the
/// token; the gate alone and the whole sandbox refuse every one, and the
/// user's next git commands run nothing.
#[test]
fn protected_and_hidden_names_hold_on_a_case_insensitive_disk() {
    let Some(mount) = mount_or_skip("protected_and_hidden_names_hold_on_a_case_insensitive_disk")
    else {
        return;
    };
    for user in users() {
        let (control, secret) = case_insensitive_workspace(&mount, user);
        let out = run(&control, user, Sandbox::Off, "names");
        assert!(out.stdout.contains("FINISHED"), "{user:?}: {}", out.dump());
        for (op, target, _) in case_attacks(&control) {
            assert_eq!(
                outcome(&out, op, &target),
                "DONE",
                "{user:?} control {op} {target}"
            );
        }
        assert!(out.stdout.contains(&secret), "control: {}", out.dump());
        let yaml = std::fs::read_to_string(control.ws_path("magus.yaml")).unwrap_or_default();
        assert!(yaml.contains("enabled: false"), "control: {yaml}");
        assert!(control.ws_path("magus.lock").exists(), "control");
        let stolen = std::fs::read_to_string(control.ws_path("stolen.txt")).unwrap_or_default();
        assert!(stolen.contains(&secret), "control");
        let seen = git(&control.ws, &["commit", "-q", "--allow-empty", "-m", "x"])
            + &git(&control.ws, &["status", "--short"]);
        assert!(
            seen.contains("PWNED-hook") && seen.contains("PWNED-config"),
            "control: {seen}"
        );

        for sandbox in [Sandbox::GateOnly, Sandbox::On] {
            let (h, secret) = case_insensitive_workspace(&mount, user);
            let out = run(&h, user, sandbox, "names");
            let context = format!("{user:?} {sandbox:?}\n{}", out.dump());
            assert!(out.stdout.contains("FINISHED"), "{context}");
            for (op, target, _) in case_attacks(&h) {
                let want = match op {
                    "read" | "copy" => "REFUSED MGS2001",
                    _ => "REFUSED MGS2002",
                };
                assert_eq!(outcome(&out, op, &target), want, "{op} {target}: {context}");
            }
            assert!(
                !out.stdout.contains(&secret) && !out.stderr.contains(&secret),
                "{context}"
            );
            let yaml = std::fs::read_to_string(h.ws_path("magus.yaml")).unwrap_or_default();
            assert_eq!(yaml, CARGO_GRANTED, "{context}");
            assert!(!h.ws_path("magus.lock").exists(), "{context}");
            let seen = git(&h.ws, &["commit", "-q", "--allow-empty", "-m", "x"])
                + &git(&h.ws, &["status", "--short"]);
            assert!(!seen.contains("PWNED"), "{seen}\n{context}");
        }
    }
}

/// The bare repository of issue 34, planted with `fs.*` alone in a
/// workspace that is a repository: `src/HEAD` first, then `objects`,
/// `refs/heads` and a `config` with `core.worktree` and
/// `core.fsmonitor`; and in `lib/` the other way round, `HEAD` last. The
/// control's `git status` in each, outside magus, runs the planted
/// command; sandboxed, the write that would complete each repository is
/// refused (MGS2002, saying git would take the directory for one), and
/// `git status` there runs nothing.
#[test]
fn a_bare_repository_cannot_be_planted_with_fs_alone() {
    let config = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\t\
                  fsmonitor = \"echo PWNED-bare >&2; false\"\n";
    let head = "ref: refs/heads/main\n".to_string();
    let probes: Vec<(&str, String, String)> = vec![
        ("write", "src/HEAD".into(), head.clone()),
        ("mkdir", "src/objects".into(), String::new()),
        ("mkdir", "src/refs/heads".into(), String::new()),
        ("write", "src/config".into(), config.into()),
        ("write", "lib/config".into(), config.into()),
        ("mkdir", "lib/objects".into(), String::new()),
        ("mkdir", "lib/refs/heads".into(), String::new()),
        ("write", "lib/head.tmp".into(), head),
        ("move", "lib/HEAD".into(), "lib/head.tmp".into()),
    ];
    let setup = |user: User| {
        let h = Harness::new();
        git_init(&h.ws);
        for dir in ["src", "lib"] {
            std::fs::create_dir_all(h.ws_path(dir)).expect("a source directory");
            std::fs::write(h.ws_path(&format!("{dir}/main.c")), "int main;\n").expect("a file");
        }
        h.write_spell("plant", &probe_spell(&probes));
        hand_over(&h.root, user);
        h
    };
    for user in users() {
        let control = setup(user);
        let out = run(&control, user, Sandbox::Off, "plant");
        for (op, target, _) in &probes {
            assert_eq!(
                outcome(&out, op, target),
                "DONE",
                "{user:?} control {op} {target}"
            );
        }
        for dir in ["src", "lib"] {
            let seen = git(&control.ws_path(dir), &["status", "--short"]);
            assert!(
                seen.contains("PWNED-bare"),
                "{user:?} control in {dir}: {seen}"
            );
        }
        for sandbox in [Sandbox::GateOnly, Sandbox::On] {
            let h = setup(user);
            let out = run(&h, user, sandbox, "plant");
            let context = format!("{user:?} {sandbox:?}\n{}", out.dump());
            assert_eq!(
                outcome(&out, "mkdir", "src/refs/heads"),
                "REFUSED MGS2002",
                "{context}"
            );
            assert_eq!(
                outcome(&out, "move", "lib/HEAD"),
                "REFUSED MGS2002",
                "{context}"
            );
            assert!(
                out.stdout.contains("git would take") && out.stdout.contains("repository"),
                "{context}"
            );
            for dir in ["src", "lib"] {
                let seen = git(&h.ws_path(dir), &["status", "--short"]);
                assert!(!seen.contains("PWNED"), "in {dir}: {seen}\n{context}");
            }
        }
    }
}

/// Children (not `fs.*`) on a case-insensitive disk, with the whole
/// sandbox: the jail's read-only binds hold `magus.yaml` and `.git`'s
/// code by their spelling only, so `MAGUS.YAML`, `.GIT/hooks/pre-commit`
/// and `.GIT/config` reach the files around them. After the run the
/// sweep puts back what it noted and sets aside the new hook
/// (docs/leftovers.md): the user's next run keeps its sandbox, and `git
/// commit` and `git status` run nothing. The control (sandbox off) keeps
/// every change.
#[cfg(kernel_layer)]
#[test]
fn protected_names_children_write_in_another_case_are_undone_after_the_run() {
    let Some(mount) =
        mount_or_skip("protected_names_children_write_in_another_case_are_undone_after_the_run")
    else {
        return;
    };
    let script = "printf 'sandbox:\\n  enabled: false\\n' > MAGUS.YAML; \
        printf '#!/bin/sh\\necho PWNED-hook >&2\\n' > .GIT/hooks/pre-commit; \
        chmod +x .GIT/hooks/pre-commit; \
        printf '[core]\\n\\tfsmonitor = \"echo PWNED-config >&2; false\"\\n' >> .GIT/config; \
        echo PLANTED";
    let shell = format!(
        "import \"sh\";\nimport \"std\";\nfun main(args: [str]) > int {{\n    sh.shell({});\n    std.print(\"DONE\");\n    return 0;\n}}\n",
        literal(script)
    );
    for user in users() {
        for sandbox in [Sandbox::Off, Sandbox::On] {
            let (h, _secret) = case_insensitive_workspace(&mount, User::Root);
            h.write_spell("plant", &shell);
            std::fs::write(h.ws_path("README"), "x").unwrap();
            hand_over(&h.root, user);
            let out = run(&h, user, sandbox, "plant");
            let context = format!("{user:?} {sandbox:?}\n{}", out.dump());
            assert!(out.stdout.contains("DONE"), "{context}");
            let yaml = std::fs::read_to_string(h.ws_path("magus.yaml")).unwrap_or_default();
            let seen = git(&h.ws, &["commit", "-q", "--allow-empty", "-m", "x"])
                + &git(&h.ws, &["status", "--short"]);
            if sandbox == Sandbox::Off {
                assert!(yaml.contains("enabled: false"), "control: {context}");
                assert!(
                    seen.contains("PWNED-hook") && seen.contains("PWNED-config"),
                    "control: {seen}"
                );
                continue;
            }
            assert_eq!(yaml, CARGO_GRANTED, "{context}");
            assert!(!seen.contains("PWNED"), "{seen}\n{context}");
            assert!(out.stderr.contains("warning[MGS2014]"), "{context}");
        }
    }
}
