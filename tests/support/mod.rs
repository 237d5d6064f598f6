//! A reusable harness for integration tests that run the real `magus`
//! binary: a temporary workspace, a fake `HOME` (outside `/tmp`, which the
//! sandbox grants) holding planted secrets, a controlled environment with
//! secret-bearing variables, and leak checks over everything a run produced.
//!
//! Use it from a test file with `mod support;` then `let h = Harness::new();`.
#![allow(dead_code)]

#[path = "../scratch/mod.rs"]
mod scratch;

pub(crate) mod counting_server;
pub(crate) mod runas;

use std::collections::hash_map::RandomState;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// Files planted in the fake `HOME`, relative to it: the targets of the
/// overview's threat model.
pub(crate) const SECRET_FILES: [&str; 7] = [
    ".aws/credentials",
    ".ssh/id_rsa",
    ".vault-token",
    ".npmrc",
    ".config/op/config",
    ".docker/config.json",
    ".kube/config",
];

/// Secret-bearing variables set in magus's environment.
pub(crate) const SECRET_VARS: [&str; 7] = [
    "GITHUB_TOKEN",
    "AWS_SECRET_ACCESS_KEY",
    "VAULT_TOKEN",
    "OP_SESSION_abc",
    "NPM_TOKEN",
    "ANTHROPIC_API_KEY",
    "MAGUS_DAEMON_SOCKET",
];

/// The `PATH` magus runs with unless a test changes it.
pub(crate) const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The default `magus.yaml`: the sandbox on, nothing else granted.
pub(crate) const SANDBOX_ON: &str = "sandbox:\n  enabled: true\n";

/// One planted secret: where it lives and its unique value.
#[derive(Debug, Clone)]
pub(crate) struct Secret {
    /// A file path (`~/.ssh/id_rsa`), a variable name, or `/etc/shadow`.
    pub origin: String,
    /// The whole value.
    pub value: String,
    /// The part that must never appear anywhere: the random core of a
    /// planted secret (so a partial leak is caught too), else the value.
    pub needle: String,
}

impl Secret {
    fn planted(origin: String, prefix: &str) -> Secret {
        let core = random_core();
        Secret {
            origin,
            value: format!("{prefix}{core}"),
            needle: core,
        }
    }
}

/// What one `magus` run produced.
#[derive(Debug)]
pub(crate) struct RunOutput {
    /// The exit status; `None` when killed by a signal.
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    stdout_raw: Vec<u8>,
    stderr_raw: Vec<u8>,
}

impl RunOutput {
    /// Both streams, for assertion messages.
    pub(crate) fn dump(&self) -> String {
        format!(
            "status: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status, self.stdout, self.stderr
        )
    }

    /// Lines of stdout that start with `prefix`.
    pub(crate) fn lines_starting(&self, prefix: &str) -> Vec<&str> {
        self.stdout
            .lines()
            .filter(|l| l.starts_with(prefix))
            .collect()
    }

    /// How many times `needle` occurs in stderr.
    pub(crate) fn stderr_count(&self, needle: &str) -> usize {
        self.stderr.matches(needle).count()
    }
}

/// A workspace and a fake home with planted secrets, and the environment
/// `magus` runs with. Everything is removed when the harness is dropped.
pub(crate) struct Harness {
    _dir: tempfile::TempDir,
    /// The real (canonical) directory holding `home/` and `ws/`.
    pub root: PathBuf,
    /// The fake `HOME`, canonical.
    pub home: PathBuf,
    /// The workspace root (holds `magus.yaml` and `spells/`), canonical.
    pub ws: PathBuf,
    secrets: Vec<Secret>,
    env: BTreeMap<OsString, OsString>,
}

impl Default for Harness {
    fn default() -> Self {
        Harness::new()
    }
}

impl Harness {
    /// A harness whose `magus.yaml` turns the sandbox on and grants nothing.
    pub(crate) fn new() -> Harness {
        Harness::with_config(SANDBOX_ON)
    }

    /// A harness with `config` as the workspace's `magus.yaml`.
    pub(crate) fn with_config(config: &str) -> Harness {
        Harness::with_config_in(&scratch::base(), config)
    }

    /// [`Harness::with_config`], made in `base` (a test's own mount, say;
    /// never under `/tmp`).
    pub(crate) fn with_config_in(base: &Path, config: &str) -> Harness {
        let dir = tempfile::Builder::new()
            .prefix("magus-test-")
            .tempdir_in(base)
            .expect("create the harness directory");
        let root = dir.path().canonicalize().expect("canonical harness root");
        assert!(
            !root.starts_with("/tmp"),
            "the fake HOME must lie outside /tmp, which the sandbox grants: {}",
            root.display()
        );
        let (home, ws) = (root.join("home"), root.join("ws"));
        std::fs::create_dir_all(ws.join("spells")).expect("create the workspace");
        std::fs::create_dir_all(&home).expect("create the fake home");
        let mut h = Harness {
            _dir: dir,
            root,
            home,
            ws,
            secrets: Vec::new(),
            env: BTreeMap::new(),
        };
        h.write_config(config);
        h.plant_files();
        h.plant_env();
        h.add_shadow_secrets();
        h
    }

    fn plant_files(&mut self) {
        for rel in SECRET_FILES {
            let secret = Secret::planted(format!("~/{rel}"), "secret-file-");
            let path = self.home.join(rel);
            std::fs::create_dir_all(path.parent().expect("a secret has a parent"))
                .expect("create a secret's directory");
            std::fs::write(&path, format!("{}\n", secret.value)).expect("plant a secret file");
            self.secrets.push(secret);
        }
    }

    fn plant_env(&mut self) {
        self.env.insert("PATH".into(), DEFAULT_PATH.into());
        self.env.insert("HOME".into(), self.home.clone().into());
        self.env.insert("LANG".into(), "C.UTF-8".into());
        for name in SECRET_VARS {
            // The daemon socket is a path, as the daemon would export it.
            let prefix = match name {
                "MAGUS_DAEMON_SOCKET" => "/run/magus/daemon-",
                _ => "secret-var-",
            };
            let secret = Secret::planted(format!("${name}"), prefix);
            self.env.insert(name.into(), secret.value.clone().into());
            self.secrets.push(secret);
        }
    }

    /// The machine's `/etc/shadow` lines count as secrets when readable
    /// (root), so a leak of the real file is caught too.
    fn add_shadow_secrets(&mut self) {
        let Ok(text) = std::fs::read_to_string("/etc/shadow") else {
            return;
        };
        for line in text.lines().filter(|l| l.len() >= 16) {
            self.secrets.push(Secret {
                origin: "/etc/shadow".into(),
                value: line.to_string(),
                needle: line.to_string(),
            });
        }
    }

    /// Replaces the workspace's `magus.yaml`.
    pub(crate) fn write_config(&self, config: &str) {
        std::fs::write(self.ws.join("magus.yaml"), config).expect("write magus.yaml");
    }

    /// `$HOME/rel`.
    pub(crate) fn home_path(&self, rel: &str) -> PathBuf {
        self.home.join(rel)
    }

    /// `<workspace>/rel`.
    pub(crate) fn ws_path(&self, rel: &str) -> PathBuf {
        self.ws.join(rel)
    }

    /// Every planted secret.
    pub(crate) fn secrets(&self) -> &[Secret] {
        &self.secrets
    }

    /// The value of the secret planted at `origin` (`~/.ssh/id_rsa`,
    /// `$GITHUB_TOKEN`).
    pub(crate) fn secret(&self, origin: &str) -> &str {
        self.secrets
            .iter()
            .find(|s| s.origin == origin)
            .map(|s| s.value.as_str())
            .unwrap_or_else(|| panic!("no secret planted at {origin}"))
    }

    /// Sets a variable of magus's environment.
    pub(crate) fn set_env(&mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) {
        self.env
            .insert(name.as_ref().to_owned(), value.as_ref().to_owned());
    }

    /// Removes a variable from magus's environment.
    pub(crate) fn remove_env(&mut self, name: impl AsRef<OsStr>) {
        self.env.remove(name.as_ref());
    }

    /// Writes `spells/NAME.buzz` and returns its path.
    pub(crate) fn write_spell(&self, name: &str, source: &str) -> PathBuf {
        let path = self.ws.join("spells").join(format!("{name}.buzz"));
        std::fs::write(&path, source).expect("write a spell");
        path
    }

    /// `magus` with exactly the harness's environment, run from the
    /// harness root (outside the workspace).
    pub(crate) fn command(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_magus"));
        cmd.env_clear().envs(&self.env).current_dir(&self.root);
        cmd
    }

    /// [`Harness::command`] started through `wrapper` (e.g. `setpriv
    /// --reuid=65534 ...` or `unshare --net --`), which gets the same
    /// environment and passes it on.
    pub(crate) fn wrapped_command(&self, wrapper: &[&str]) -> Command {
        let Some((program, args)) = wrapper.split_first() else {
            return self.command();
        };
        let mut cmd = Command::new(program);
        cmd.args(args).arg(env!("CARGO_BIN_EXE_magus"));
        cmd.env_clear().envs(&self.env).current_dir(&self.root);
        cmd
    }

    /// [`Harness::command`] run as uid/gid 65534 (through `setpriv`, so
    /// the test must run as root).
    pub(crate) fn command_as_nobody(&self) -> Command {
        self.wrapped_command(&[
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ])
    }

    /// `magus --workspace WS run NAME ARGS...`.
    pub(crate) fn run(&self, name: &str, args: &[&str]) -> RunOutput {
        self.run_with(name, args, &[])
    }

    /// Like [`Harness::run`], with `extra` flags placed before `run`
    /// (e.g. `["--message-format", "json"]`).
    pub(crate) fn run_with(&self, name: &str, args: &[&str], extra: &[&str]) -> RunOutput {
        let mut cmd = self.command();
        cmd.arg("--workspace").arg(&self.ws).args(extra);
        cmd.arg("run").arg(name).args(args);
        capture(&mut cmd)
    }

    /// The first secret found in `bytes`, if any.
    pub(crate) fn find_secret(&self, bytes: &[u8]) -> Option<&Secret> {
        find_secret(&self.secrets, bytes)
    }

    /// Panics if any byte sequence of a planted secret occurs in `bytes`.
    pub(crate) fn assert_no_secret(&self, bytes: &[u8], what: &str) {
        assert_no_secret(&self.secrets, bytes, what);
    }

    /// No secret in the run's stdout, stderr, or any file of the workspace.
    pub(crate) fn assert_no_leak(&self, out: &RunOutput) {
        self.assert_no_secret(&out.stdout_raw, &format!("stdout\n{}", out.dump()));
        self.assert_no_secret(&out.stderr_raw, &format!("stderr\n{}", out.dump()));
        for file in regular_files(&self.ws) {
            let bytes = std::fs::read(&file).unwrap_or_default();
            self.assert_no_secret(&bytes, &file.display().to_string());
        }
    }

    /// Panics unless every planted file still holds its secret: nothing was
    /// moved, truncated or deleted.
    pub(crate) fn assert_secrets_intact(&self) {
        for rel in SECRET_FILES {
            let text = std::fs::read_to_string(self.home.join(rel)).unwrap_or_default();
            assert_eq!(text.trim_end(), self.secret(&format!("~/{rel}")), "{rel}");
        }
    }
}

/// Runs `cmd` to completion and captures its output.
/// With `MAGUS_TEST_SHOW=1` in the test's environment, every run's output
/// is printed (see it with `cargo test -- --nocapture`).
pub(crate) fn capture(cmd: &mut Command) -> RunOutput {
    let out = cmd.output().expect("spawn magus");
    let run = RunOutput {
        status: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        stdout_raw: out.stdout,
        stderr_raw: out.stderr,
    };
    if std::env::var_os("MAGUS_TEST_SHOW").is_some_and(|v| v == "1") {
        println!("=== {cmd:?}\n{}", run.dump());
    }
    run
}

/// The first of `secrets` whose value (or random core) occurs in `bytes`.
pub(crate) fn find_secret<'a>(secrets: &'a [Secret], bytes: &[u8]) -> Option<&'a Secret> {
    secrets
        .iter()
        .find(|s| contains(bytes, s.needle.as_bytes()))
}

/// Panics, naming the secret and `what`, if one of `secrets` is in `bytes`.
pub(crate) fn assert_no_secret(secrets: &[Secret], bytes: &[u8], what: &str) {
    if let Some(secret) = find_secret(secrets, bytes) {
        panic!("the secret of {} leaked into {what}", secret.origin);
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// Every regular file under `dir`, without following symlinks.
pub(crate) fn regular_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                found.push(entry.path());
            }
        }
    }
    found
}

/// 32 hex digits, unique per call and per process.
fn random_core() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut out = String::new();
    for _ in 0..2 {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        hasher.write_u32(std::process::id());
        out.push_str(&format!("{:016x}", hasher.finish()));
    }
    out
}

/// A Buzz string literal for `path` (quotes, backslashes and braces escaped).
pub(crate) fn buzz_str(text: impl AsRef<str>) -> String {
    let mut out = String::from("\"");
    for c in text.as_ref().chars() {
        match c {
            '"' | '\\' | '{' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A Buzz list literal of string literals.
pub(crate) fn buzz_list<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    let items: Vec<String> = items.into_iter().map(buzz_str).collect();
    format!("[{}]", items.join(", "))
}

/// A git repository ready to be cloned over dumb HTTP from `site`:
/// `site/src` with one commit of a `README` holding `readme`, and its bare
/// clone `site/repo.git` with `git update-server-info` run.
pub(crate) fn dumb_http_repository(site: &Path, readme: &str) {
    let git = |args: &[&str], cwd: &Path| {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(["-c", "init.defaultBranch=main"])
            .args(args)
            .current_dir(cwd)
            .output()
            .expect("run git");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let src = site.join("src");
    std::fs::create_dir_all(&src).expect("the repository's directory");
    git(&["init", "-q"], &src);
    std::fs::write(src.join("README"), readme).expect("README");
    git(&["add", "README"], &src);
    git(&["commit", "-qm", "one"], &src);
    git(&["clone", "-q", "--bare", "src", "repo.git"], site);
    git(&["update-server-info"], &site.join("repo.git"));
}

/// `chmod -R a+rwX`, so uid 65534 can use what the harness made.
pub(crate) fn open_to_everyone(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mode = if dir.is_dir() { 0o777 } else { 0o666 };
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode));
    if dir.is_dir() {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            // `chmod` follows a link: never widen what it points at.
            if !entry.path().is_symlink() {
                open_to_everyone(&entry.path());
            }
        }
    }
}

/// Where tests put their own directories (never under `/tmp`, see
/// `tests/scratch`).
pub(crate) fn scratch_base() -> PathBuf {
    scratch::base()
}

/// Whether this run can switch to uid 65534 (root, with `setpriv`).
pub(crate) fn can_switch_user() -> bool {
    nix::unistd::geteuid().is_root()
        && Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "true"])
            .status()
            .is_ok_and(|s| s.success())
}

/// Compiles the test helper `tests/<rel>` with `cc -O1` into
/// `target/tmp/<name>`, built under a per-process name and renamed in
/// place, so concurrent test binaries never run a half-written file and
/// nothing is left in `/tmp`.
pub(crate) fn compile_c(rel: &str, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let building = dir.join(format!("{name}.{}", std::process::id()));
    let out = dir.join(name);
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(rel);
    let status = Command::new("cc")
        .args(["-O1", "-o"])
        .arg(&building)
        .arg(&src)
        .status()
        .expect("run cc");
    assert!(status.success(), "cc failed to build {}", src.display());
    std::fs::rename(&building, &out).expect("move the helper in place");
    out
}
