//! Shared machinery of the kernel tests. Every `tests/kernel_*.rs` is a
//! `harness = false` binary: its `main` either runs the test cases (never
//! restricting itself) or, when `KTEST_ROLE` is set, plays a "fake magus"
//! that goes through the real startup sequence (re-exec, PID namespace,
//! syscall guard, Landlock) and spawns the child under test. A binary of
//! our own keeps that process single-threaded, which namespaces require.
#![allow(dead_code)]

#[path = "../scratch/mod.rs"]
mod scratch;

use std::ffi::OsString;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use magus_sandbox::testing::enforce::{
    self, ChildStdio, ConfinedCommand, Domain, LandlockRequest, SyscallGuard,
};
use magus_sandbox::testing::policy::{
    new_policy, Access, Grant, GrantSource, Mode, Network, SandboxState,
};
use serde::{Deserialize, Serialize};

pub(crate) const ROLE_VAR: &str = "KTEST_ROLE";
pub(crate) const SPEC_VAR: &str = "KTEST_SPEC";

/// The result of one case: passed, or skipped with the reason printed.
/// A skip is counted as a skip, never as a pass; where the environment
/// allows every case (CI, which runs as root), a skip is a failure.
pub(crate) enum Outcome {
    Pass,
    Skip(String),
}

/// Whether a skipped case must fail the run: under CI (`CI=true`) as root,
/// every case can run, so a skip means something is broken.
fn skips_fail() -> bool {
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    ci && nix::unistd::geteuid().is_root()
}

pub(crate) type CaseResult = Result<Outcome, String>;
pub(crate) type Case = (&'static str, fn() -> CaseResult);

/// Runs the role when asked to, else every case whose name matches one of
/// the non-flag arguments (all cases when there are none).
pub(crate) fn main_with(file: &str, cases: &[Case]) {
    if std::env::var_os(ROLE_VAR).is_some() {
        role_main();
    }
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let selected: Vec<&Case> = cases
        .iter()
        .filter(|(name, _)| {
            let full = format!("{file}::{name}");
            filters.is_empty() || filters.iter().any(|f| full.contains(f.as_str()))
        })
        .collect();
    println!("\nrunning {} tests", selected.len());
    let strict = skips_fail();
    let (mut passed, mut skipped, mut failed) = (0, 0, 0);
    for (name, case) in selected {
        match case() {
            Ok(Outcome::Pass) => {
                passed += 1;
                println!("test {file}::{name} ... ok");
            }
            Ok(Outcome::Skip(why)) if strict => {
                failed += 1;
                println!("test {file}::{name} ... FAILED\nskipped under CI as root: {why}");
            }
            Ok(Outcome::Skip(why)) => {
                skipped += 1;
                println!("test {file}::{name} ... skipped: {why}");
            }
            Err(msg) => {
                failed += 1;
                println!("test {file}::{name} ... FAILED\n{msg}");
            }
        }
    }
    let verdict = if failed == 0 { "ok" } else { "FAILED" };
    println!("\ntest result: {verdict}. {passed} passed; {failed} failed; {skipped} ignored");
    std::process::exit(i32::from(failed > 0));
}

/// Fails the case with a message when `cond` is false.
pub(crate) fn check(cond: bool, msg: impl FnOnce() -> String) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(msg())
    }
}

// ---------------------------------------------------------------- the role

/// What the fake magus does. Serialized into `KTEST_SPEC`.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub(crate) struct Spec {
    pub reexec: bool,
    pub pidns: bool,
    /// Enter the PID namespace as `MAGUS_SANDBOX_USERNS=0` would: not at
    /// all (root's own capabilities then reach the parent, as before the
    /// jail put even root in a user namespace).
    pub userns_off: bool,
    pub guard: bool,
    pub landlock: bool,
    /// Spawn with `ConfinedCommand` (nested domain) or a plain `Command`.
    pub nested: bool,
    pub grants: Vec<(PathBuf, String)>,
    pub network: NetSpec,
    /// Make stdin (a pty slave) the controlling terminal of a new session.
    pub take_tty: bool,
    /// Held in this process's memory while the child runs.
    pub memory_secret: String,
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
    /// Differential probes, run in-process instead of spawning `argv`.
    pub probes: Vec<Probe>,
    /// Enter the full jail compiled from `grants` (instead of `pidns`'s
    /// PID-only plan), so probes also see what exists in the view.
    pub view: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub(crate) enum NetSpec {
    #[default]
    Allow,
    Deny,
}

/// One access to try on a real path; `is_dir` picks the operation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Probe {
    pub path: PathBuf,
    pub is_dir: bool,
    pub access: String,
}

impl Spec {
    fn policy(&self) -> (Vec<Grant>, Network) {
        let grants = self
            .grants
            .iter()
            .map(|(path, mode)| Grant {
                path: path.clone(),
                mode: if mode == "rw" { Mode::Rw } else { Mode::Ro },
                source: GrantSource::Builtin("kernel test"),
            })
            .collect();
        let network = match self.network {
            NetSpec::Allow => Network::Allow,
            NetSpec::Deny => Network::Deny,
        };
        (grants, network)
    }
}

fn role_main() -> ! {
    let state = enforce::take_reexec_state();
    let spec: Spec = match std::env::var(SPEC_VAR).map(|s| serde_json::from_str(&s)) {
        Ok(Ok(spec)) => spec,
        _ => die("bad KTEST_SPEC"),
    };
    if spec.reexec && state.is_none() {
        reexec();
    }
    if let Some(state) = &state {
        let names: Vec<_> = state.stripped.iter().map(|n| n.to_string_lossy()).collect();
        eprintln!("KTEST stripped={}", names.join(","));
    }
    let code = run_role(&spec);
    std::process::exit(code)
}

fn reexec() -> ! {
    let keep = [ROLE_VAR, SPEC_VAR, "PATH"];
    let mut env = Vec::new();
    let mut stripped = Vec::new();
    for (k, v) in std::env::vars_os() {
        if keep.iter().any(|want| k == *want) {
            env.push((k, v));
        } else {
            stripped.push(k);
        }
    }
    match enforce::reexec_scrubbed(&env, &stripped) {
        Err(e) => die(&format!("reexec: {e}")),
        Ok(never) => match never {},
    }
}

fn run_role(spec: &Spec) -> i32 {
    if spec.view {
        let (grants, network) = spec.policy();
        let workspace = PathBuf::from("/nonexistent-kernel-test-workspace");
        let policy = new_policy(SandboxState::On, workspace, grants, network, Vec::new());
        let plan = enforce::JailPlan::compile(&policy, &enforce::ViewInputs::default());
        let status = enforce::jail::enter(&plan, enforce::UsernsRequest::Allowed);
        eprintln!("KTEST view={status:?}");
    } else if spec.pidns {
        let plan = enforce::JailPlan::pid_only();
        let request = match spec.userns_off {
            true => enforce::UsernsRequest::ForcedOff,
            false => enforce::UsernsRequest::Allowed,
        };
        let status = enforce::jail::enter(&plan, request);
        eprintln!("KTEST pid={status:?}");
    }
    if spec.take_tty {
        take_controlling_tty();
    }
    // The network step of `magus run` (issue #12): the namespace of
    // `deny`, and the seccomp rules the setting needs.
    let (_, network) = spec.policy();
    let request = match spec.userns_off {
        true => enforce::UsernsRequest::ForcedOff,
        false => enforce::UsernsRequest::Allowed,
    };
    let plan = enforce::network::enter(&network, request);
    eprintln!("KTEST network={plan:?}");
    if spec.guard {
        let guard = SyscallGuard::build(enforce::seccomp::GuardMode::Jailed, plan.seccomp())
            .unwrap_or_else(|e| die(&e.to_string()));
        guard
            .install_on_self()
            .unwrap_or_else(|e| die(&e.to_string()));
    }
    let domain = install(spec);
    eprintln!("KTEST landlock={:?}", domain.status());
    // Keep the secret alive and in memory for the whole run.
    let secret = std::hint::black_box(spec.memory_secret.clone().into_bytes());
    let code = if spec.probes.is_empty() {
        spawn(spec, &domain)
    } else {
        run_probes(&spec.probes)
    };
    std::hint::black_box(&secret);
    code
}

fn install(spec: &Spec) -> Domain {
    if !spec.landlock {
        return Domain::unconfined(enforce::Unavailable::ForcedOff);
    }
    let (grants, network) = spec.policy();
    enforce::install_on_self(&grants, &network, LandlockRequest::Enforce)
        .unwrap_or_else(|e| die(&format!("landlock: {e}")))
}

fn spawn(spec: &Spec, domain: &Domain) -> i32 {
    let Some((program, args)) = spec.argv.split_first() else {
        die("empty argv")
    };
    let env: Vec<(OsString, OsString)> =
        spec.env.iter().map(|(k, v)| (k.into(), v.into())).collect();
    let status = if spec.nested {
        let mut cmd = ConfinedCommand::new(program).args(args).env(env).stdio(
            ChildStdio::Inherit,
            ChildStdio::Inherit,
            ChildStdio::Inherit,
        );
        if let Some(dir) = &spec.cwd {
            cmd = cmd.current_dir(dir);
        }
        let before = open_fds();
        let status = cmd.spawn(domain).and_then(|mut c| {
            c.wait().map_err(|source| enforce::EnforceError::Spawn {
                program: program.into(),
                source,
            })
        });
        eprintln!("KTEST parent_fds_before={before} after={}", open_fds());
        status
    } else {
        let mut cmd = Command::new(program);
        cmd.args(args).env_clear().envs(env);
        if let Some(dir) = &spec.cwd {
            cmd.current_dir(dir);
        }
        cmd.status().map_err(|source| enforce::EnforceError::Spawn {
            program: program.into(),
            source,
        })
    };
    match status {
        Ok(s) => s.code().unwrap_or(128),
        Err(e) => die(&e.to_string()),
    }
}

/// How many descriptors this process holds, to show a spawn leaks none.
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

fn take_controlling_tty() {
    if nix::unistd::setsid().is_err() {
        die("setsid");
    }
    // SAFETY: TIOCSCTTY on stdin with argument 0 (do not steal).
    if unsafe { libc::ioctl(0, libc::TIOCSCTTY, 0) } != 0 {
        die("TIOCSCTTY");
    }
}

fn die(msg: &str) -> ! {
    eprintln!("KTEST role error: {msg}");
    std::process::exit(99)
}

// ------------------------------------------------------------ probes (diff)

/// What the probes found: whether each access was allowed, and whether
/// its path exists at all (in the jail's view, when there is one).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ProbeAnswers {
    pub allowed: Vec<bool>,
    pub exists: Vec<bool>,
}

fn run_probes(probes: &[Probe]) -> i32 {
    let exists = probes
        .iter()
        .map(|p| p.path.symlink_metadata().is_ok())
        .collect();
    let allowed = probes.iter().enumerate().map(probe_one).collect();
    let answers = ProbeAnswers { allowed, exists };
    let mut out = std::io::stdout();
    let _ = writeln!(
        out,
        "{}",
        serde_json::to_string(&answers).unwrap_or_default()
    );
    0
}

fn probe_one((i, probe): (usize, &Probe)) -> bool {
    use nix::fcntl::{open, OFlag};
    use nix::sys::stat::Mode as FileMode;
    let path = probe.path.as_path();
    match (probe.access.as_str(), probe.is_dir) {
        ("read", false) => open(path, OFlag::O_RDONLY, FileMode::empty()).is_ok(),
        ("read", true) => open(
            path,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY,
            FileMode::empty(),
        )
        .is_ok(),
        ("write", false) => open(path, OFlag::O_WRONLY, FileMode::empty()).is_ok(),
        ("write", true) => {
            let new = path.join(format!(".probe-{}-{i}", std::process::id()));
            let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL;
            let made = open(&new, flags, FileMode::from_bits_truncate(0o644)).is_ok();
            let _ = std::fs::remove_file(&new);
            made
        }
        ("execute", _) => exec_allowed(path),
        _ => die("unknown probe"),
    }
}

/// The probed files hold no known format: an allowed `execve` fails with
/// `ENOEXEC` after Landlock's check passed, a denied one with `EACCES`, and
/// either way this process carries on.
fn exec_allowed(path: &Path) -> bool {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    let argv = [c.clone()];
    let envp: [CString; 0] = [];
    match nix::unistd::execve(&c, &argv, &envp) {
        Err(nix::errno::Errno::ENOEXEC) => true,
        Err(_) => false,
        Ok(never) => match never {},
    }
}

/// What the gate decides: the policy's own trie, built from the same
/// grants the kernel got, so the test compares the two enforcement layers.
pub(crate) fn expected(grants: &[(PathBuf, Mode)], path: &Path, access: Access) -> bool {
    let grants: Vec<magus_sandbox::testing::policy::Grant> = grants
        .iter()
        .map(|(path, mode)| magus_sandbox::testing::policy::Grant {
            path: path.clone(),
            mode: *mode,
            source: magus_sandbox::testing::policy::GrantSource::Builtin("differential test"),
        })
        .collect();
    let path = magus_sandbox::testing::policy::NormalPath::new(path)
        .expect("differential paths are normal");
    magus_sandbox::testing::policy::PathTrie::new(&grants)
        .check(&path, access)
        .is_allowed()
}

// ----------------------------------------------------------- the driver side

/// Runs the fake magus with `spec`, optionally as another user, with extra
/// environment variables (to plant secrets) and a stdin.
pub(crate) struct Launch<'a> {
    pub spec: &'a Spec,
    pub as_nobody: bool,
    pub extra_env: Vec<(String, String)>,
    pub stdin: Option<Stdio>,
}

impl<'a> Launch<'a> {
    pub(crate) fn new(spec: &'a Spec) -> Self {
        Launch {
            spec,
            as_nobody: false,
            extra_env: Vec::new(),
            stdin: None,
        }
    }

    pub(crate) fn run(self) -> Result<Output, String> {
        let out = self
            .command()?
            .output()
            .map_err(|e| format!("cannot run the role: {e}"))?;
        if std::env::var_os("KTEST_VERBOSE").is_some() {
            eprintln!("{}", text(&out));
        }
        Ok(out)
    }

    /// The command that starts the role, for callers that drive it.
    pub(crate) fn command(self) -> Result<Command, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut cmd = if self.as_nobody {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        let spec = serde_json::to_string(self.spec).map_err(|e| e.to_string())?;
        cmd.env(ROLE_VAR, "magus")
            .env(SPEC_VAR, spec)
            .envs(self.extra_env)
            .stdin(self.stdin.unwrap_or_else(Stdio::null));
        Ok(cmd)
    }
}

/// Stdout and stderr as text, for messages and searches.
pub(crate) fn text(out: &Output) -> String {
    format!(
        "status: {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A directory outside `/tmp` (which policies grant by default), readable
/// by everyone so an unprivileged run can reach it.
pub(crate) fn scratch_dir(tag: &str) -> tempfile::TempDir {
    let base = scratch::base();
    let dir = tempfile::Builder::new()
        .prefix(&format!("ktest-{tag}-"))
        .tempdir_in(base)
        .unwrap_or_else(|e| panic!("tempdir: {e}"));
    open_up(dir.path());
    dir
}

/// `chmod 0777` so uid 65534 can use a directory the tests create.
pub(crate) fn open_up(path: &Path) {
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777));
}

/// The read-only system grants a confined child needs to run ordinary
/// programs, plus `/dev/null` read-write.
pub(crate) fn system_grants() -> Vec<(PathBuf, String)> {
    let ro = [
        "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/proc",
    ];
    let mut out: Vec<(PathBuf, String)> = ro
        .iter()
        .map(Path::new)
        .filter(|p| p.exists())
        .map(|p| (p.to_path_buf(), "ro".to_owned()))
        .collect();
    out.push((PathBuf::from("/dev/null"), "rw".to_owned()));
    out.push((PathBuf::from("/dev/urandom"), "ro".to_owned()));
    out
}

/// A small random generator with a fixed seed, for reproducible cases.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Whether this machine can switch to uid 65534 (root with `setpriv`).
pub(crate) fn can_switch_user() -> Result<(), String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("not running as root".into());
    }
    let probe = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "true"])
        .status();
    match probe {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("setpriv exited with {s}")),
        Err(e) => Err(format!("setpriv unavailable: {e}")),
    }
}
