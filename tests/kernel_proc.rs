//! No confined child reads a secret through `/proc`: not from its parent's
//! (magus's) environment or memory, not from an unrelated process's
//! environment, as root and as an unprivileged user. Controls show each
//! protection is what stops the read: without the re-exec the parent's
//! environ leaks, without the nested domain its memory does, and without
//! the PID namespace an unrelated process's environ does (as root).

mod kernel_support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use kernel_support::*;

fn main() {
    main_with(
        "kernel_proc",
        &[
            ("root_full_startup_leaks_nothing", root_full),
            ("nobody_full_startup_leaks_nothing", nobody_full),
            ("exit_status_crosses_the_namespace", exit_status),
            ("sigterm_to_the_original_reaches_magus", sigterm_forwarded),
            (
                "control_without_reexec_parent_environ_leaks",
                control_reexec,
            ),
            (
                "control_without_nesting_parent_memory_leaks",
                control_nesting,
            ),
            (
                "control_without_pidns_unrelated_environ_leaks",
                control_pidns,
            ),
        ],
    );
}

const ENV_SECRET: &str = "ENVSECRET-5f1d2c";
const MEM_SECRET: &str = "MEMSECRET-9a7b3e";
const UNRELATED_SECRET: &str = "UNRELATEDSECRET-c4e8";

/// Dumps the parent's environ, every readable `/proc/*/environ`, and says
/// whether the parent's memory holds `argv[1]` (without printing it). The
/// verdict strings are assembled at run time: the script's own text shows
/// up in the dumped environments.
const PROBE: &str = r#"
import os, sys, glob
ppid = os.getppid()
try:
    print("PARENT-ENV:", open(f"/proc/{ppid}/environ", "rb").read())
except Exception as e:
    print("PARENT-ENV: denied", type(e).__name__)
for f in glob.glob("/proc/[0-9]*/environ") + [f"/proc/{sys.argv[2]}/environ"]:
    try:
        print("ENV", f, open(f, "rb").read())
    except Exception as e:
        print("ENV", f, "denied", type(e).__name__)
secret = sys.argv[1].encode()
try:
    maps = open(f"/proc/{ppid}/maps").read().splitlines()
    mem = open(f"/proc/{ppid}/mem", "rb")
    found = False
    for line in maps:
        span, perms = line.split()[:2]
        if "r" not in perms:
            continue
        lo, hi = (int(x, 16) for x in span.split("-"))
        try:
            mem.seek(lo)
            found = found or secret in mem.read(hi - lo)
        except Exception:
            pass
    print("MEM" + ":", "found" if found else "not found")
except Exception as e:
    print("MEM" + ":", "denied", type(e).__name__)
"#;

struct Setup {
    as_nobody: bool,
    userns_off: bool,
    reexec: bool,
    pidns: bool,
    nested: bool,
}

const FULL: Setup = Setup {
    as_nobody: false,
    userns_off: false,
    reexec: true,
    pidns: true,
    nested: true,
};

/// A `sleep` holding a secret in its environment, killed on drop.
struct Unrelated(Child);

impl Drop for Unrelated {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn unrelated() -> Result<Unrelated, String> {
    Command::new("sleep")
        .arg("60")
        .env("UNRELATED_TOKEN", UNRELATED_SECRET)
        .spawn()
        .map(Unrelated)
        .map_err(|e| e.to_string())
}

fn run(setup: &Setup) -> Result<String, String> {
    let sleeper = unrelated()?;
    let mut grants = system_grants();
    grants.push(("/tmp".into(), "rw".into()));
    let spec = Spec {
        reexec: setup.reexec,
        pidns: setup.pidns,
        userns_off: setup.userns_off,
        guard: true,
        landlock: true,
        nested: setup.nested,
        grants,
        memory_secret: MEM_SECRET.into(),
        argv: vec![
            "/usr/bin/python3".into(),
            "-c".into(),
            PROBE.into(),
            MEM_SECRET.into(),
            sleeper.0.id().to_string(),
        ],
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        ..Spec::default()
    };
    let mut launch = Launch::new(&spec);
    launch.as_nobody = setup.as_nobody;
    launch.extra_env = vec![("GITHUB_TOKEN".into(), ENV_SECRET.into())];
    let out = launch.run()?;
    let all = text(&out);
    check(out.status.success() && all.contains("MEM: "), || {
        format!("probe did not run:\n{all}")
    })?;
    Ok(all)
}

fn leaks_nothing(all: &str) -> Result<(), String> {
    for secret in [ENV_SECRET, UNRELATED_SECRET] {
        check(!all.contains(secret), || format!("{secret} leaked:\n{all}"))?;
    }
    check(!all.contains("MEM: found"), || {
        format!("parent memory readable:\n{all}")
    })?;
    check(
        all.contains("KTEST stripped=") && all.contains("GITHUB_TOKEN"),
        || format!("stripped names lost across the re-exec:\n{all}"),
    )
}

fn root_full() -> CaseResult {
    if !nix::unistd::geteuid().is_root() {
        return Ok(Outcome::Skip("needs root".into()));
    }
    let all = run(&FULL)?;
    leaks_nothing(&all)?;
    check(all.contains("Entered"), || {
        format!("no PID namespace:\n{all}")
    })?;
    Ok(Outcome::Pass)
}

fn nobody_full() -> CaseResult {
    if let Err(why) = can_switch_user() {
        return Ok(Outcome::Skip(why));
    }
    let all = run(&Setup {
        as_nobody: true,
        ..FULL
    })?;
    leaks_nothing(&all)?;
    check(all.contains("user_namespace: Created"), || {
        format!("no user+PID namespace:\n{all}")
    })?;
    Ok(Outcome::Pass)
}

fn root_only() -> Option<Outcome> {
    (!nix::unistd::geteuid().is_root()).then(|| Outcome::Skip("the leak needs root".into()))
}

fn control_reexec() -> CaseResult {
    if let Some(skip) = root_only() {
        return Ok(skip);
    }
    // The jail's user namespace alone now also stops this leak: the
    // control turns it off to show the re-exec is what stops it there.
    let all = run(&Setup {
        reexec: false,
        userns_off: true,
        ..FULL
    })?;
    check(all.contains(ENV_SECRET), || {
        format!("control: expected the environ leak:\n{all}")
    })?;
    Ok(Outcome::Pass)
}

fn control_nesting() -> CaseResult {
    if let Some(skip) = root_only() {
        return Ok(skip);
    }
    let all = run(&Setup {
        nested: false,
        ..FULL
    })?;
    check(all.contains("MEM: found"), || {
        format!("control: expected the memory leak:\n{all}")
    })?;
    Ok(Outcome::Pass)
}

fn control_pidns() -> CaseResult {
    if let Some(skip) = root_only() {
        return Ok(skip);
    }
    let all = run(&Setup {
        pidns: false,
        ..FULL
    })?;
    check(all.contains(UNRELATED_SECRET), || {
        format!("control: expected the unrelated environ leak:\n{all}")
    })?;
    Ok(Outcome::Pass)
}

fn shell_spec(script: &str) -> Spec {
    Spec {
        pidns: true,
        landlock: true,
        nested: true,
        grants: system_grants(),
        argv: vec!["/bin/sh".into(), "-c".into(), script.into()],
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        ..Spec::default()
    }
}

/// The original process exits with the status of magus, which here is the
/// child's, through PID 1 of the namespace.
fn exit_status() -> CaseResult {
    let out = Launch::new(&shell_spec("exit 7")).run()?;
    check(out.status.code() == Some(7), || text(&out))?;
    Ok(Outcome::Pass)
}

/// A `kill -TERM` of the original process travels to PID 1 and on to magus,
/// which dies of it; the original then exits with 128 + 15.
fn sigterm_forwarded() -> CaseResult {
    let spec = shell_spec("echo started; exec sleep 60");
    let mut child = Launch::new(&spec)
        .command()?
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut first = String::new();
    BufReader::new(stdout)
        .read_line(&mut first)
        .map_err(|e| e.to_string())?;
    check(first.trim() == "started", || format!("got {first:?}"))?;
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).map_err(|e| e.to_string())?;
    let status = child.wait().map_err(|e| e.to_string())?;
    check(status.code() == Some(143), || format!("status {status:?}"))?;
    Ok(Outcome::Pass)
}
