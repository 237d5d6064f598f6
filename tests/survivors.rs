//! Survivors and exhaustion (docs/survivors.md), through the real `magus`
//! binary, as root and as uid 65534, with namespaces refused as a kernel
//! or container would (`tests/jail/nouserns.c`): a child that fills the
//! process table with zombies and then forks and exits every millisecond
//! is gone soon after the spell ends; the jail's `/tmp` and `/dev/shm`
//! stop at their size; a launch refused under `sandbox.limits.processes`
//! names the setting. Every attack is bounded in count and time, and every
//! process a test starts is killed by the test, pass or fail.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use support::runas::{self, hand_over, Kernel, User};
use support::{buzz_str, capture, Harness};

/// Who the attacks run as: root, and uid 65534 when root can switch.
fn users() -> Vec<User> {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: these tests run as root (and switch to uid 65534)");
        return Vec::new();
    }
    if support::can_switch_user() {
        vec![User::Root, User::Nobody]
    } else {
        eprintln!("uid 65534 runs skipped: setpriv unavailable");
        vec![User::Root]
    }
}

/// The kernel under which `user` has no PID namespace.
fn without_pid_namespace(user: User) -> Kernel {
    match user {
        User::Root => Kernel::NoNamespaces,
        User::Nobody => Kernel::NoUserNamespaces,
    }
}

/// Runs `args` as a direct child of magus and prints its status.
const RUN_SPELL: &str = "import \"std\";\nimport \"sh\";\nfun main(args: [str]) > int {\n    std.print(\"STATUS {sh.run(args)}\");\n    return 0;\n}\n";

/// Who runs magus, and how the machine answers its requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Case {
    user: User,
    kernel: Kernel,
    /// The cgroup file systems read-only (in a mount namespace of the
    /// test's own), as in a container: no cgroup of the run's own.
    cgroups_read_only: bool,
}

impl Case {
    fn new(user: User, kernel: Kernel) -> Case {
        Case {
            user,
            kernel,
            cgroups_read_only: false,
        }
    }
}

/// The cases without a PID namespace: root with and without a cgroup it
/// may make, and uid 65534 (never one here).
fn cases_without_pid_namespace() -> Vec<Case> {
    let mut cases = Vec::new();
    for user in users() {
        let case = Case::new(user, without_pid_namespace(user));
        cases.push(case);
        if user == User::Root {
            cases.push(Case {
                cgroups_read_only: true,
                ..case
            });
        }
    }
    cases
}

/// Makes every cgroup mount read-only, then runs the rest of its arguments.
const READ_ONLY_CGROUPS: &str = "grep -E ' - cgroup2? ' /proc/self/mountinfo | cut -d' ' -f5 | while read -r m; do mount -o remount,bind,ro \"$m\" || exit 1; done && exec \"$@\"";

/// `magus --workspace WS run SPELL ARGS...` for `case`, the sandbox on or
/// off.
fn command(h: &Harness, case: Case, sandbox: bool, spell: &str, args: &[&str]) -> Command {
    let mut wrapper = vec![];
    if case.cgroups_read_only {
        wrapper.extend(["unshare", "-m", "--propagation", "private", "--"]);
        wrapper.extend(["sh", "-c", READ_ONLY_CGROUPS, "sh"]);
    }
    wrapper.extend(runas::wrapper(case.user, case.kernel));
    hand_over(&h.root, case.user);
    let mut cmd = h.wrapped_command(&wrapper);
    if !sandbox {
        cmd.env("MAGUS_SANDBOX_ENABLED", "0");
    }
    cmd.arg("--workspace")
        .arg(&h.ws)
        .args(["run", spell])
        .args(args);
    cmd
}

/// The attack: names itself `argv[1]` (kept by zombies too, unlike the
/// command line), then a child leaves its session and makes `argv[2]`
/// zombies it never reaps, and another leaves its session and forks and
/// exits every millisecond; both stop by themselves after `argv[3]`
/// seconds (the bound on the control, were its cleanup to fail). The
/// spell's own child prints `PLANTED` once the zombies exist, and ends.
const ATTACK: &str = r#"
import ctypes, os, sys, time
name, zombies, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
ctypes.CDLL(None).prctl(15, name.encode(), 0, 0, 0)
start = time.monotonic()
def detach():
    os.setsid()
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
ready_r, ready_w = os.pipe()
if os.fork() == 0:
    detach()
    made = 0
    try:
        for _ in range(zombies):
            if os.fork() == 0:
                os._exit(0)
            made += 1
    except OSError:
        pass
    os.write(ready_w, str(made).encode())
    os.close(ready_w)
    while time.monotonic() - start < seconds:
        time.sleep(0.05)
    os._exit(0)
os.close(ready_w)
made = os.read(ready_r, 16).decode()
if os.fork() == 0:
    detach()
    while time.monotonic() - start < seconds:
        try:
            if os.fork() != 0:
                os._exit(0)
        except OSError:
            pass
        time.sleep(0.001)
    os._exit(0)
print("PLANTED", made, flush=True)
"#;

/// A name no other process has (15 bytes at most, the kernel's `comm`).
fn marker() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("mgsv{:07}{n:02}", std::process::id() % 10_000_000)
}

/// The PIDs whose `comm` (from `/proc/<pid>/stat`, zombies included) is
/// `name`.
fn named(name: &str) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| comm(*pid).is_some_and(|c| c == name))
        .collect()
}

fn comm(pid: i32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    Some(stat[open + 1..close].to_string())
}

/// Every process on the machine (what this PID namespace shows).
fn process_count() -> usize {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_str().is_some_and(is_pid))
                .count()
        })
        .unwrap_or(0)
}

fn is_pid(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit())
}

/// Kills every process named `name` until none is seen in several passes
/// in a row (the forking chain moves on between a scan and a kill), for
/// 10 s at most; returns how many passes found some.
fn kill_named(name: &str) -> usize {
    let start = Instant::now();
    let (mut quiet, mut busy) = (0, 0);
    while quiet < 5 && start.elapsed() < Duration::from_secs(30) {
        let found = named(name);
        if found.is_empty() {
            quiet += 1;
        } else {
            quiet = 0;
            busy += 1;
        }
        for pid in found {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    busy
}

/// Kills what a test started when it goes out of scope, pass or fail:
/// the `magus` process and every process carrying the marker.
struct Cleanup<'a> {
    marker: &'a str,
    child: Option<Child>,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if !self.marker.is_empty() {
            kill_named(self.marker);
        }
    }
}

/// What one attacked run showed.
struct Attacked {
    /// From the spell's `PLANTED` line to `magus run`'s exit.
    after_spell: Duration,
    status: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs the attack with `zombies` zombies and returns once `magus run`
/// does (killing it after 120 s: a hang, not a timing). Its survivors are
/// the caller's to check and `cleanup`'s to kill.
fn attack(cmd: &mut Command, cleanup: &mut Cleanup<'_>) -> Attacked {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start magus");
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    cleanup.child = Some(child);
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.starts_with("PLANTED") {
                let _ = tx.send(Instant::now());
            }
            text.push_str(&line);
            text.push('\n');
        }
        text
    });
    let errors = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let start = Instant::now();
    let child = cleanup.child.as_mut().unwrap();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "magus run never ended"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    let ended = Instant::now();
    cleanup.child = None;
    let planted = rx.recv_timeout(Duration::from_secs(5)).ok();
    let stdout = reader.join().unwrap_or_default();
    let stderr = errors.join().unwrap_or_default();
    let planted = planted.unwrap_or_else(|| panic!("the attack never ran:\n{stdout}\n{stderr}"));
    Attacked {
        after_spell: ended.duration_since(planted),
        status: status.code(),
        stdout,
        stderr,
    }
}

fn attack_args<'a>(marker: &'a str, zombies: &'a str) -> Vec<&'a str> {
    vec!["/usr/bin/python3", "-c", ATTACK, marker, zombies, "60"]
}

/// The issue's bound is 2 s from the spell's end; this one is generous
/// (2 cores shared with other work) and only the bug exceeds it: before
/// the fix the run lasted 30 s and more.
const AFTER_SPELL: Duration = Duration::from_secs(10);

/// The attack without a PID namespace (the supervisor), and in the jail
/// (its PID 1) for comparison.
#[test]
fn a_zombie_filling_forking_child_does_not_outlive_the_run() {
    let jailed = users().into_iter().map(|u| Case::new(u, Kernel::AsIs));
    for case in cases_without_pid_namespace().into_iter().chain(jailed) {
        // Control: with the sandbox off the attack's processes outlive
        // the run (and are killed here).
        let h = Harness::new();
        h.write_spell("r", RUN_SPELL);
        let name = marker();
        let mut cleanup = Cleanup {
            marker: &name,
            child: None,
        };
        let mut cmd = command(&h, case, false, "r", &attack_args(&name, "200"));
        let out = attack(&mut cmd, &mut cleanup);
        std::thread::sleep(Duration::from_millis(200));
        let left = named(&name);
        assert!(
            left.len() > 1,
            "{case:?} control: no survivor\n{}\n{}",
            out.stdout,
            out.stderr
        );
        drop(cleanup);
        // A process the control's forks were still starting when the
        // cleanup went quiet (a loaded machine schedules it late) is
        // killed here too; none may remain.
        kill_named(&name);
        assert!(named(&name).is_empty(), "{case:?}: control not cleaned up");

        let before = process_count();
        let zombies = "3000";
        let h = Harness::new();
        h.write_spell("r", RUN_SPELL);
        let name = marker();
        let mut cleanup = Cleanup {
            marker: &name,
            child: None,
        };
        let mut cmd = command(&h, case, true, "r", &attack_args(&name, zombies));
        let out = attack(&mut cmd, &mut cleanup);
        let left = named(&name);
        let after = process_count();
        eprintln!(
            "{case:?}: magus run returned {:?} after the spell's end, {before} processes before, {after} after",
            out.after_spell,
        );
        let context = format!("{case:?}\n{}\n{}", out.stdout, out.stderr);
        assert!(
            out.stdout.contains(&format!("PLANTED {zombies}")),
            "{context}"
        );
        assert_eq!(out.status, Some(0), "{context}");
        assert!(left.is_empty(), "survivors {left:?}: {context}");
        assert!(
            out.after_spell < AFTER_SPELL,
            "{:?}: {context}",
            out.after_spell
        );
        // Other work on the machine comes and goes; the attack's 3,000
        // zombies would stand out.
        assert!(after < before + 500, "{before} -> {after}: {context}");
    }
}

/// A number no other test uses, so `sleep <token>` names this test's
/// sleepers.
fn token() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    8_000_000 + u64::from(std::process::id() % 10_000) * 100 + NEXT.fetch_add(1, Ordering::Relaxed)
}

/// PIDs of `sleep <token>` processes, from `/proc/*/cmdline`.
fn sleepers(token: u64) -> Vec<i32> {
    let needle = format!("sleep\0{token}\0");
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(Result::ok)
                .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
                .filter(|pid| {
                    std::fs::read(format!("/proc/{pid}/cmdline"))
                        .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&needle))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Kills this test's sleepers when it goes out of scope, pass or fail.
struct KillSleepers(u64);

impl Drop for KillSleepers {
    fn drop(&mut self) {
        for pid in sleepers(self.0) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// Runs each shell line in turn, printing `STEP <i> <status>`.
fn steps_spell(lines: &[String]) -> String {
    let calls: String = lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let line = buzz_str(line).replace('\n', "\\n");
            format!("    std.print(\"STEP {i} {{sh.shell({line})}}\");\n")
        })
        .collect();
    format!("import \"std\";\nimport \"sh\";\nfun main(args: [str]) > int {{\n{calls}    return 0;\n}}\n")
}

/// Starts up to 40 sleepers (fewer where forks fail), then waits 3 s.
fn fill_line(token: u64) -> String {
    format!("i=0; while [ $i -lt 40 ]; do sleep {token} & i=$((i+1)); done 2>/dev/null; sleep 3")
}

/// Whether the running kernel keeps `pid_max` per PID namespace (6.14+),
/// which bounds `processes` for root in the jail.
fn per_namespace_pid_max() -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (major, minor) >= (6, 14)
}

const PROCESSES_16: &str = "sandbox:\n  enabled: true\n  limits: {processes: 16, wall_time: 60s}\n";

/// Holds up to 40 `sleep argv[1]` processes, retrying a refused fork
/// every 5 ms for 4 s (so it takes back what its parent shell frees),
/// then exits.
const FILLER: &str = r#"
import os, sys, time
held, end = 0, time.monotonic() + 4
while held < 40 and time.monotonic() < end:
    try:
        if os.fork() == 0:
            os.execvp("sleep", ["sleep", sys.argv[1]])
        held += 1
    except OSError:
        time.sleep(0.005)
"#;

/// Starts the filler in the background, waits a second (no child), then
/// launches `/bin/true`.
const FILL_THEN_LAUNCH: &str = "import \"std\";\nimport \"sh\";\nimport \"buzz:os\";\nfun main(args: [str]) > int {\n    std.print(\"STEP 0 {sh.shell(args[0])}\");\n    os.sleep(1000.0);\n    std.print(\"STEP 1 {sh.run([\"/bin/true\"])}\");\n    return 0;\n}\n";

/// Where a fork beyond `processes` fails (`EAGAIN`): a `pids` cgroup
/// (root, no PID namespace), `RLIMIT_NPROC` (uid 65534, with or without a
/// user namespace), the PID namespace's `pid_max` (root, Linux 6.14+).
/// The launch that fails names the setting; without the limit (the
/// control) the same launch works.
#[test]
fn a_launch_refused_under_limits_processes_names_the_setting() {
    let mut cases = Vec::new();
    for user in users() {
        if user == User::Root && !pids_cgroup_possible() {
            // The supervisor counts instead (the next test).
            eprintln!("root without a PID namespace skipped: no pids cgroup here");
        } else {
            cases.push(Case::new(user, without_pid_namespace(user)));
        }
        if user == User::Nobody || per_namespace_pid_max() {
            cases.push(Case::new(user, Kernel::AsIs));
        }
    }
    for case in cases {
        for limited in [false, true] {
            let sleep = token();
            let _cleanup = KillSleepers(sleep);
            let config = match limited {
                true => PROCESSES_16,
                false => "sandbox:\n  enabled: true\n  limits: {wall_time: 60s}\n",
            };
            let h = Harness::with_config(config);
            std::fs::write(h.ws_path("filler.py"), FILLER).unwrap();
            h.write_spell("fill", FILL_THEN_LAUNCH);
            let filler = format!("python3 filler.py {sleep} </dev/null >/dev/null 2>&1 &");
            let out = capture(&mut command(&h, case, true, "fill", &[&filler]));
            let context = format!("{case:?} limited {limited}: {}", out.dump());
            assert!(out.stdout.contains("STEP 0 0\n"), "{context}");
            assert!(sleepers(sleep).is_empty(), "{context}");
            if !limited {
                assert!(out.stdout.contains("STEP 1 0\n"), "{context}");
                continue;
            }
            assert!(!out.stdout.contains("STEP 1"), "{context}");
            let named = "Resource temporarily unavailable (os error 11): the run holds as many processes as `sandbox.limits.processes: 16` allows";
            assert!(out.stderr.contains(named), "{context}");
        }
    }
}

/// Whether root can give a run a `pids` cgroup here: a cgroup v1 `pids`
/// hierarchy is mounted, or this process's cgroup v2 delegates `pids`.
fn pids_cgroup_possible() -> bool {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let v1 = mounts.lines().any(|l| {
        l.split_once(" - ").is_some_and(|(_, fs)| {
            fs.starts_with("cgroup ")
                && fs
                    .rsplit(' ')
                    .next()
                    .is_some_and(|o| o.split(',').any(|o| o == "pids"))
        })
    });
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let v2_path = own
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .unwrap_or("/");
    let v2 = mounts
        .lines()
        .filter(|l| l.contains(" - cgroup2 "))
        .filter_map(|l| l.split(' ').nth(4))
        .any(|point| {
            let control = format!(
                "{point}{}/cgroup.subtree_control",
                v2_path.trim_end_matches('/')
            );
            std::fs::read_to_string(control)
                .is_ok_and(|c| c.split_whitespace().any(|c| c == "pids"))
        });
    v1 || v2
}

/// Root without a PID namespace or a cgroup of its own: the supervisor
/// counts the run's processes and ends the run past `processes`.
#[test]
fn without_a_pids_cgroup_the_supervisor_ends_a_run_past_its_bound() {
    if !users().contains(&User::Root) {
        return;
    }
    let case = Case {
        user: User::Root,
        kernel: Kernel::NoNamespaces,
        cgroups_read_only: true,
    };
    for limited in [false, true] {
        let sleep = token();
        let _cleanup = KillSleepers(sleep);
        let config = match limited {
            true => PROCESSES_16,
            false => "sandbox:\n  enabled: true\n  limits: {wall_time: 60s}\n",
        };
        let h = Harness::with_config(config);
        h.write_spell("fill", &steps_spell(&[fill_line(sleep)]));
        let out = capture(&mut command(&h, case, true, "fill", &[]));
        let context = format!("limited {limited}: {}", out.dump());
        assert!(sleepers(sleep).is_empty(), "{context}");
        if !limited {
            assert_eq!(out.status, Some(0), "{context}");
            assert!(out.stdout.contains("STEP 0 0\n"), "{context}");
            continue;
        }
        assert_eq!(out.status, Some(EXIT_OVER_PROCESSES), "{context}");
        let said = "the run exceeded sandbox.limits.processes (16)";
        assert!(out.stderr.contains(said), "{context}");
    }
}

/// Exit status of a run the supervisor ended past its process bound.
const EXIT_OVER_PROCESSES: i32 = 122;

/// The processes whose parent is `parent`.
fn children(parent: i32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(Result::ok)
                .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
                .filter(|pid| {
                    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"));
                    let stat = stat.unwrap_or_default();
                    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
                    rest.split_whitespace().nth(1) == Some(&parent.to_string())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Polls until `done` holds; false after 20 s (a hang, not a timing).
fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// `SIGTERM` or `SIGINT` to the supervisor ends the run, even when magus
/// proper, which the signal is passed on to, does not end (stopped here by
/// the test): a final kill pass, then the exit, `128 + signal`. The
/// control, the sandbox off, leaves the spell's child running.
#[test]
fn sigterm_and_sigint_end_the_supervisor_after_a_kill_pass() {
    for case in cases_without_pid_namespace() {
        for sig in [Signal::SIGTERM, Signal::SIGINT] {
            for sandbox in [false, true] {
                let sleep = token();
                let _cleanup = KillSleepers(sleep);
                let h = Harness::new();
                h.write_spell("hang", &steps_spell(&[format!("sleep {sleep}")]));
                let mut child = command(&h, case, sandbox, "hang", &[])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap();
                let outer = child.id() as i32;
                let mut guard = Cleanup {
                    marker: "",
                    child: None,
                };
                assert!(
                    eventually(|| !sleepers(sleep).is_empty()),
                    "{case:?}: never started"
                );
                if sandbox {
                    // magus proper: the supervisor's only child.
                    let proper = children(outer);
                    assert_eq!(proper.len(), 1, "{case:?}: {proper:?}");
                    kill(Pid::from_raw(proper[0]), Signal::SIGSTOP).unwrap();
                }
                kill(Pid::from_raw(outer), sig).unwrap();
                let start = Instant::now();
                let status = loop {
                    if let Some(status) = child.try_wait().unwrap() {
                        break Some(status);
                    }
                    if start.elapsed() > Duration::from_secs(20) {
                        break None;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                };
                guard.child = status.is_none().then_some(child);
                let left = sleepers(sleep);
                let context =
                    format!("{case:?} {sig:?} sandbox {sandbox}: {status:?} left {left:?}");
                if !sandbox {
                    assert!(!left.is_empty(), "control: {context}");
                    continue;
                }
                eprintln!("{context}: ended {:?} after the signal", start.elapsed());
                assert_eq!(
                    status.and_then(|s| s.code()),
                    Some(128 + sig as i32),
                    "{context}"
                );
                assert!(left.is_empty(), "{context}");
            }
        }
    }
}

/// Writes 128 MiB to each of `/tmp` and `/dev/shm`, 1 MiB at a time,
/// then up to 20,000 empty files, each until the first error.
const FILL_TMPFS: &str = r#"
import errno, os
def fill(path):
    written, why = 0, "none"
    try:
        with open(path, "wb", buffering=0) as f:
            while written < 128:
                f.write(b"x" * (1 << 20))
                written += 1
    except OSError as e:
        why = errno.errorcode.get(e.errno, str(e.errno))
    try:
        os.unlink(path)
    except OSError:
        pass
    return written, why
for d in ("/tmp", "/dev/shm"):
    written, why = fill(os.path.join(d, "fill"))
    print("WROTE", d, written, why, flush=True)
os.mkdir("/tmp/many")
made, why = 0, "none"
try:
    while made < 20000:
        open("/tmp/many/%d" % made, "wb").close()
        made += 1
except OSError as e:
    why = errno.errorcode.get(e.errno, str(e.errno))
print("FILES", made, why, flush=True)
"#;

/// The `(count, error)` of the line `<prefix> <count> <error>`.
fn counted(stdout: &str, prefix: &str) -> Option<(u64, String)> {
    let line = stdout.lines().find(|l| l.starts_with(prefix))?;
    let mut rest = line[prefix.len()..].split_whitespace();
    Some((rest.next()?.parse().ok()?, rest.next()?.to_string()))
}

/// The jail's `/tmp` and `/dev/shm` are tmpfs of `limits.memory` bytes
/// (and one inode per 16 KiB): a child writing 128 MiB under a 64 MiB
/// limit stops at 64 with `ENOSPC`, and at 4,096 files. The control, no
/// `memory` limit, writes all of it (the default is a quarter of RAM).
#[test]
fn a_child_cannot_fill_ram_through_tmp_or_dev_shm() {
    for user in users() {
        for limited in [false, true] {
            let config = match limited {
                true => "sandbox:\n  enabled: true\n  limits: {memory: 64MiB}\n",
                false => "sandbox:\n  enabled: true\n",
            };
            let h = Harness::with_config(config);
            h.write_spell("r", RUN_SPELL);
            let args = ["/usr/bin/python3", "-c", FILL_TMPFS];
            let case = Case::new(user, Kernel::AsIs);
            let out = capture(&mut command(&h, case, true, "r", &args));
            let context = format!("{user:?} limited {limited}: {}", out.dump());
            assert_eq!(out.status, Some(0), "{context}");
            for dir in ["/tmp", "/dev/shm"] {
                let (mib, why) = counted(&out.stdout, &format!("WROTE {dir} "))
                    .unwrap_or_else(|| panic!("{context}"));
                match limited {
                    true => assert!(mib <= 64 && why == "ENOSPC", "{dir}: {context}"),
                    false => assert!(mib == 128 && why == "none", "{dir}: {context}"),
                }
            }
            let (files, why) =
                counted(&out.stdout, "FILES ").unwrap_or_else(|| panic!("{context}"));
            match limited {
                true => assert!(files <= 4096 && why == "ENOSPC", "{context}"),
                false => assert!(files == 20000 && why == "none", "{context}"),
            }
        }
    }
}
