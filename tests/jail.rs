//! The jail (docs/jail.md) attacked through the real `magus` binary, as root
//! and as uid 65534: each attack first runs with the sandbox off (the
//! control, which must succeed, so a pass means something), then on.
//! Probes live in `tests/jail/probe.py`; each prints `<NAME>-OK` only when
//! its attack worked.

mod support;

use std::io::{BufRead, BufReader};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use support::runas::assert_one_warning;
use support::{capture, Harness, RunOutput};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum User {
    Root,
    Nobody,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sandbox {
    On,
    Off,
    /// On, but without Landlock and the jail: the gate and the syscall
    /// guard only. The control where `MAGUS_SANDBOX_ENABLED=0` cannot run
    /// (a workspace with a `magus.lock` refuses it, MGS2010). The sweep
    /// after the run still sets aside what a run left that would run
    /// later (docs/leftovers.md): a control for those attacks is `Off`.
    GateOnly,
    /// On, with the jail but without Landlock: what the view alone holds.
    JailOnly,
}

const NOBODY: u32 = 65534;

/// Runs one shell line as a child and prints its status.
const SHELL_SPELL: &str = "import \"std\";\nimport \"sh\";\nfun main(args: [str]) > int {\n    std.print(\"STATUS {sh.shell(args[0])}\");\n    return 0;\n}\n";

/// Runs `args` as a direct child of magus (so its parent is magus).
const RUN_SPELL: &str = "import \"std\";\nimport \"sh\";\nfun main(args: [str]) > int {\n    std.print(\"STATUS {sh.run(args)}\");\n    return 0;\n}\n";

const PROBE: &str = include_str!("jail/probe.py");

/// The users the tests run as on this machine: root, and uid 65534 when
/// the test runs as root (it switches with `setpriv`).
fn users() -> Vec<User> {
    match nix::unistd::geteuid().is_root() {
        true => vec![User::Root, User::Nobody],
        false => Vec::new(),
    }
}

/// A harness whose workspace holds the probe and the spells, owned by the
/// user the run is for.
struct Jail {
    h: Harness,
    user: User,
    kernel: Kernel,
}

/// How the kernel answers a run's namespace requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kernel {
    AsIs,
    /// `unshare`/`clone` with `CLONE_NEWUSER` fail with `EPERM`
    /// (`tests/jail/nouserns.c`), as under Ubuntu 24.04's AppArmor default.
    NoUserNamespaces,
    /// Every namespace flag fails, as in a container without
    /// `CAP_SYS_ADMIN`.
    NoNamespaces,
}

impl Jail {
    fn new(user: User) -> Jail {
        Jail::with_config(user, support::SANDBOX_ON)
    }

    fn with_config(user: User, config: &str) -> Jail {
        let h = Harness::with_config(config);
        h.write_spell("t", SHELL_SPELL);
        h.write_spell("r", RUN_SPELL);
        std::fs::write(h.ws_path("probe.py"), PROBE).unwrap();
        Jail {
            h,
            user: User::Root,
            kernel: Kernel::AsIs,
        }
        .handed_to(user)
    }

    /// This harness, set up as root, given to `user` for the run.
    fn handed_to(self, user: User) -> Jail {
        let jail = Jail {
            h: self.h,
            user,
            kernel: Kernel::AsIs,
        };
        jail.hand_over();
        jail
    }

    /// This harness where the kernel makes no jail: no user namespaces
    /// for an ordinary user, no namespaces at all for root.
    fn without_jail(self) -> Jail {
        let kernel = match self.user {
            User::Root => Kernel::NoNamespaces,
            User::Nobody => Kernel::NoUserNamespaces,
        };
        Jail {
            h: self.h,
            user: self.user,
            kernel,
        }
    }

    /// Gives the harness to the run's user (again, after planting).
    fn hand_over(&self) {
        if self.user == User::Nobody {
            let status = Command::new("chown")
                .args(["-R", "65534:65534"])
                .arg(&self.h.root)
                .status()
                .unwrap();
            assert!(status.success());
        }
    }

    fn uid(&self) -> u32 {
        match self.user {
            User::Root => 0,
            User::Nobody => NOBODY,
        }
    }

    fn command(&self, sandbox: Sandbox) -> Command {
        let nouserns = nouserns_binary().to_str().unwrap();
        let mut wrapper = match self.kernel {
            Kernel::AsIs => vec![],
            Kernel::NoUserNamespaces => vec![nouserns],
            Kernel::NoNamespaces => vec![nouserns, "--all"],
        };
        if self.user == User::Nobody {
            wrapper.extend([
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
            ]);
        }
        let mut cmd = self.h.wrapped_command(&wrapper);
        match sandbox {
            Sandbox::On => {}
            Sandbox::Off => {
                cmd.env("MAGUS_SANDBOX_ENABLED", "0");
            }
            Sandbox::GateOnly => {
                cmd.env("MAGUS_SANDBOX_LANDLOCK", "0");
                cmd.env("MAGUS_SANDBOX_USERNS", "0");
            }
            Sandbox::JailOnly => {
                cmd.env("MAGUS_SANDBOX_LANDLOCK", "0");
            }
        }
        cmd.arg("--workspace").arg(&self.h.ws).arg("run");
        cmd
    }

    /// `sh.shell(script)` in a run.
    fn shell(&self, sandbox: Sandbox, script: &str) -> RunOutput {
        capture(self.command(sandbox).arg("t").arg(script))
    }

    /// `probe.py ARGS` as a direct child of magus.
    fn probe(&self, sandbox: Sandbox, args: &[&str]) -> RunOutput {
        let probe = self.h.ws_path("probe.py");
        let mut cmd = self.command(sandbox);
        cmd.args(["r", "/usr/bin/python3"]).arg(probe).args(args);
        capture(&mut cmd)
    }
}

fn context(user: User, sandbox: Sandbox, out: &RunOutput) -> String {
    format!("{user:?}, sandbox {sandbox:?}\n{}", out.dump())
}

/// The control saw every marker; the jailed run saw none and no secret.
fn assert_attack(
    user: User,
    control: &RunOutput,
    jailed: &RunOutput,
    markers: &[&str],
    secret: &str,
) {
    for marker in markers {
        assert!(
            control.stdout.contains(marker),
            "control lacks {marker}: {}",
            context(user, Sandbox::Off, control)
        );
        assert!(
            !jailed.stdout.contains(marker),
            "the attack worked ({marker}): {}",
            context(user, Sandbox::On, jailed)
        );
    }
    if !secret.is_empty() {
        assert!(control.stdout.contains(secret), "{}", control.dump());
        assert!(
            !jailed.stdout.contains(secret) && !jailed.stderr.contains(secret),
            "the secret leaked: {}",
            context(user, Sandbox::On, jailed)
        );
    }
    assert_eq!(jailed.status, Some(0), "{}", jailed.dump());
}

fn unique(tag: &str) -> String {
    format!("magus-jail-{tag}-{}-{}", std::process::id(), rand_core())
}

fn rand_core() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(7);
    h.finish()
}

/// A process outside the sandbox serving `secret` on unix sockets (a
/// path starting with `@` is an abstract name).
struct Listener(Child);

impl Listener {
    fn serve(paths: &[PathBuf], secret: &str) -> Listener {
        let script = r#"
import os, select, socket, sys
socks = []
for p in sys.argv[2:]:
    s = socket.socket(socket.AF_UNIX)
    if p.startswith("@"):
        s.bind("\0" + p[1:])
    else:
        s.bind(p); os.chmod(p, 0o777)
    s.listen(8); socks.append(s)
print("ready", flush=True)
while True:
    for s in select.select(socks, [], [])[0]:
        c, _ = s.accept(); c.sendall(sys.argv[1].encode()); c.close()
"#;
        let mut child = Command::new("/usr/bin/python3")
            .arg("-c")
            .arg(script)
            .arg(secret)
            .args(paths)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        let stdout = child.stdout.take().unwrap();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "ready");
        Listener(child)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn unix_sockets_in_tmp_and_run_user_cannot_be_reached() {
    for user in users() {
        let jail = Jail::new(user);
        let run_user = PathBuf::from(format!("/run/user/{}", jail.uid()));
        std::fs::create_dir_all(&run_user).unwrap();
        let _ = Command::new("chown")
            .arg(format!("{0}:{0}", jail.uid()))
            .arg(&run_user)
            .status();
        let secret = unique("socket-secret");
        let paths = [
            PathBuf::from("/tmp").join(unique("sock")),
            run_user.join(unique("bus")),
        ];
        let _listener = Listener::serve(&paths, &secret);
        for path in &paths {
            let path = path.to_str().unwrap();
            let control = jail.probe(Sandbox::Off, &["sock", path]);
            let jailed = jail.probe(Sandbox::On, &["sock", path]);
            assert_attack(user, &control, &jailed, &["SOCK-OK"], &secret);
        }
        for path in &paths {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Abstract unix sockets live in the network namespace, which under
/// `network: allow` is the host's: a session bus or an X server listening
/// on an abstract name outside the sandbox. Landlock's scoping (ABI 6)
/// refuses the connection.
#[test]
fn abstract_unix_sockets_outside_cannot_be_reached_under_network_allow() {
    for user in users() {
        let jail = Jail::new(user);
        let secret = unique("abstract-secret");
        let name = format!("@{}", unique("abstract"));
        let _listener = Listener::serve(&[PathBuf::from(&name)], &secret);
        let control = jail.probe(Sandbox::Off, &["sock", &name]);
        let jailed = jail.probe(Sandbox::On, &["sock", &name]);
        assert_attack(user, &control, &jailed, &["SOCK-OK"], &secret);
    }
}

/// A process of the user's session, outside the sandbox, running as the
/// run's user.
fn victim(user: User) -> Child {
    let mut cmd = match user {
        User::Root => Command::new("sleep"),
        User::Nobody => {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "sleep"]);
            c
        }
    };
    cmd.arg("300").spawn().unwrap()
}

/// Whether `child` is still running (not ended by a signal).
fn survives(child: &mut Child) -> bool {
    std::thread::sleep(std::time::Duration::from_millis(100));
    child.try_wait().unwrap().is_none()
}

/// A child signals a process of the user's session by its PID (never
/// `kill -1`: as root that would be every process on the machine). In the
/// jail the process is not in the PID namespace; without one (user
/// namespaces refused, uid 65534) Landlock's signal scope (ABI 6)
/// refuses it. The control, the sandbox off, kills it.
#[test]
fn processes_of_the_session_cannot_be_signalled() {
    let mut cases = vec![(User::Root, Kernel::AsIs), (User::Nobody, Kernel::AsIs)];
    cases.push((User::Nobody, Kernel::NoUserNamespaces));
    for (user, kernel) in cases.into_iter().filter(|(u, _)| users().contains(u)) {
        let mut jail = Jail::new(user);
        jail.kernel = kernel;
        let script = |pid: u32| format!("kill -TERM {pid} && echo KILL-OK");
        let mut control_victim = victim(user);
        let control = jail.shell(Sandbox::Off, &script(control_victim.id()));
        assert!(!survives(&mut control_victim), "{}", control.dump());
        let mut victim = victim(user);
        let jailed = jail.shell(Sandbox::On, &script(victim.id()));
        let alive = survives(&mut victim);
        let _ = victim.kill();
        let _ = victim.wait();
        assert!(alive, "{kernel:?}: {}", context(user, Sandbox::On, &jailed));
        assert_attack(user, &control, &jailed, &["KILL-OK"], "");
    }
}

/// Without Landlock, the view alone keeps an ungranted file out of reach:
/// it is not there to open, list or stat, and the view's own root is
/// read-only.
#[test]
fn the_view_alone_hides_what_is_not_granted() {
    for user in users() {
        let jail = Jail::new(user);
        let key = jail.h.home_path(".ssh/id_rsa");
        let secret = std::fs::read_to_string(&key).unwrap().trim().to_string();
        let (k, dir) = (key.display(), jail.h.home.display());
        let script = format!(
            "cat {k} && echo READ-OK; ls -A {dir} | grep -q . && echo LIST-OK; stat {k} >/dev/null && echo STAT-OK; \
             touch /planted && echo ROOT-WRITE-OK"
        );
        let control = jail.shell(Sandbox::Off, &script);
        let jailed = jail.shell(Sandbox::JailOnly, &script);
        let mut markers = vec!["READ-OK", "LIST-OK", "STAT-OK"];
        if user == User::Root {
            markers.push("ROOT-WRITE-OK");
            let _ = std::fs::remove_file("/planted");
        }
        assert_attack(user, &control, &jailed, &markers, &secret);
        assert!(
            !jailed.stdout.contains("ROOT-WRITE-OK"),
            "{}",
            jailed.dump()
        );
    }
}

/// Another terminal of the user's session (a pty made by the test, owned
/// by the run's user, a line already typed into it): a child reads the
/// typed line and writes to its screen by the terminal's name. In the jail
/// `/dev/pts` is the run's own; without one (uid 65534 with user
/// namespaces refused, Ubuntu's default; root with every namespace
/// refused) it was the host's, granted whole, and both worked: now only
/// the run's own terminals in it are granted. The control, the sandbox
/// off, reads the line and writes.
#[test]
fn another_terminal_cannot_be_opened() {
    for (user, kernel) in with_and_without_the_jail() {
        let mut jail = Jail::new(user);
        jail.kernel = kernel;
        let pty = nix::pty::openpty(None, None).unwrap();
        let slave = std::fs::read_link(format!("/proc/self/fd/{}", pty.slave.as_raw_fd())).unwrap();
        let _ = Command::new("chown")
            .arg(jail.uid().to_string())
            .arg(&slave)
            .status();
        let typed = unique("typed-password");
        let type_line = || {
            let line = format!("{typed}\n");
            assert_eq!(
                nix::unistd::write(&pty.master, line.as_bytes()),
                Ok(line.len())
            );
        };
        let script = format!(
            "timeout 5 head -n 1 {0}; echo injected > {0} && echo PTS-OK",
            slave.display()
        );
        type_line();
        let control = jail.shell(Sandbox::Off, &script);
        type_line();
        let jailed = jail.shell(Sandbox::On, &script);
        let who = format!("{user:?} {kernel:?}");
        assert!(jailed.stdout.contains("STATUS"), "{who}: {}", jailed.dump());
        assert_attack(user, &control, &jailed, &["PTS-OK"], &typed);
    }
}

/// Each user in the jail, and in the two ways a machine refuses it: uid
/// 65534 with user namespaces refused (Ubuntu's default), root with every
/// namespace refused (a container without `CAP_SYS_ADMIN`).
fn with_and_without_the_jail() -> Vec<(User, Kernel)> {
    let cases = [
        (User::Root, Kernel::AsIs),
        (User::Nobody, Kernel::AsIs),
        (User::Nobody, Kernel::NoUserNamespaces),
        (User::Root, Kernel::NoNamespaces),
    ];
    let users = users();
    cases
        .into_iter()
        .filter(|(u, _)| users.contains(u))
        .collect()
}

/// A file in the fake HOME (not granted) that only a capability reaches.
fn planted(jail: &Jail, name: &str, secret: &str, owner: u32, mode: u32) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = jail.h.home_path(name);
    std::fs::write(&path, secret).unwrap();
    std::os::unix::fs::chown(&path, Some(owner), Some(owner)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

#[test]
fn root_capabilities_read_nothing() {
    let jail = Jail::new(User::Root);
    let secret = unique("cap-secret");
    // Owned by someone else, mode 0600: only CAP_DAC_OVERRIDE reads it. A
    // copy inside the workspace shows the capability, not the view, stops it.
    let outside = planted(&jail, "other-user-secret", &secret, 4321, 0o600);
    let inside = jail.h.ws_path("other-user-secret");
    std::fs::copy(&outside, &inside).unwrap();
    std::os::unix::fs::chown(&inside, Some(4321), Some(4321)).unwrap();
    let script = format!("cat {} && echo DAC-OK", inside.display());
    let control = jail.shell(Sandbox::Off, &script);
    let jailed = jail.shell(Sandbox::On, &script);
    assert_attack(User::Root, &control, &jailed, &["DAC-OK"], &secret);
    // Without the jail's user namespace (where the owner is unmapped) and
    // without Landlock, only the emptied capability sets stand in the way.
    let caps_only = jail.shell(Sandbox::GateOnly, &script);
    assert_attack(User::Root, &control, &caps_only, &["DAC-OK"], &secret);
    // A file handle made outside, opened from inside (CAP_DAC_READ_SEARCH).
    let named = Command::new("/usr/bin/python3")
        .arg(jail.h.ws_path("probe.py"))
        .args(["handle-name", outside.to_str().unwrap()])
        .output()
        .unwrap();
    let handle = String::from_utf8(named.stdout).unwrap();
    let args = ["handle-open", jail.h.ws.to_str().unwrap(), handle.trim()];
    let control = jail.probe(Sandbox::Off, &args);
    let jailed = jail.probe(Sandbox::On, &args);
    assert_attack(User::Root, &control, &jailed, &["HANDLE-OK"], &secret);
    let caps_only = jail.probe(Sandbox::GateOnly, &args);
    assert_attack(User::Root, &control, &caps_only, &["HANDLE-OK"], &secret);
}

#[test]
fn metadata_outside_the_grants_cannot_change() {
    for user in users() {
        let jail = Jail::new(user);
        let target = jail.h.home_path(".ssh/id_rsa");
        let t = target.display();
        let uid = jail.uid();
        let lines = [
            format!("chmod 777 {t} && echo CHMOD-OK"),
            format!("chown {uid}:{uid} {t} && echo CHOWN-OK"),
            format!("/usr/bin/python3 -c \"import os; os.setxattr('{t}', 'user.magus', b'1')\" && echo XATTR-OK"),
        ];
        let script = lines.join("; ");
        let before = std::fs::metadata(&target).unwrap();
        let jailed = jail.shell(Sandbox::On, &script);
        let after = std::fs::metadata(&target).unwrap();
        use std::os::unix::fs::MetadataExt;
        assert_eq!(before.mode(), after.mode(), "{}", jailed.dump());
        assert!(xattr_absent(&target), "{}", jailed.dump());
        let control = jail.shell(Sandbox::Off, &script);
        assert_attack(
            user,
            &control,
            &jailed,
            &["CHMOD-OK", "CHOWN-OK", "XATTR-OK"],
            "",
        );
    }
}

fn xattr_absent(path: &Path) -> bool {
    let out = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg("import os,sys; print(os.listxattr(sys.argv[1]))")
        .arg(path)
        .output()
        .unwrap();
    !String::from_utf8_lossy(&out.stdout).contains("user.magus")
}

/// A program that prints its effective uid and capabilities.
const WHOAMI_C: &str = r#"#include <stdio.h>
#include <unistd.h>
#include <string.h>
int main(void) {
    char line[256];
    FILE *f = fopen("/proc/self/status", "r");
    printf("EUID %d\n", (int)geteuid());
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "CapEff:", 7)) printf("%s", line);
    return 0;
}
"#;

#[test]
fn set_uid_and_file_capabilities_give_nothing() {
    let Some(jail) = users()
        .contains(&User::Nobody)
        .then(|| Jail::new(User::Nobody))
    else {
        return;
    };
    let src = jail.h.root.join("whoami.c");
    std::fs::write(&src, WHOAMI_C).unwrap();
    let suid = jail.h.ws_path("suid-whoami");
    let fcap = jail.h.ws_path("fcap-whoami");
    for out in [&suid, &fcap] {
        let cc = Command::new("cc")
            .arg("-o")
            .arg(out)
            .arg(&src)
            .status()
            .unwrap();
        assert!(cc.success());
    }
    Command::new("chmod")
        .arg("4755")
        .arg(&suid)
        .status()
        .unwrap();
    let setcap = Command::new("setcap")
        .args(["cap_dac_read_search+ep"])
        .arg(&fcap)
        .status();
    let has_fcap = setcap.is_ok_and(|s| s.success());
    let script = format!(
        "{} ; {} ; cp {} ./mine && chmod u+s ./mine && echo MADE-SUID-OK",
        suid.display(),
        fcap.display(),
        fcap.display()
    );
    let control = jail.shell(Sandbox::Off, &script);
    let jailed = jail.shell(Sandbox::On, &script);
    assert!(control.stdout.contains("EUID 0\n"), "{}", control.dump());
    assert!(!jailed.stdout.contains("EUID 0\n"), "{}", jailed.dump());
    let caps = |out: &RunOutput| -> Vec<String> {
        let lines = out.stdout.lines().filter(|l| l.starts_with("CapEff"));
        lines.map(str::to_string).collect()
    };
    let given = caps(&control)
        .iter()
        .filter(|l| !l.ends_with("0000000000000000"))
        .count();
    // The set-uid copy gives root's capabilities, and the file-capability
    // copy (where `setcap` exists) gives its one.
    assert_eq!(given, 1 + usize::from(has_fcap), "{}", control.dump());
    // In the jail the set-uid copy runs with none, and the kernel refuses
    // to start the file-capability copy at all (its capabilities are
    // outside the empty bounding set).
    let jailed_caps = caps(&jailed);
    assert!(!jailed_caps.is_empty(), "{}", jailed.dump());
    assert!(
        jailed_caps.iter().all(|l| l.ends_with("0000000000000000")),
        "{}",
        jailed.dump()
    );
    assert_attack(User::Nobody, &control, &jailed, &["MADE-SUID-OK"], "");
}

/// A workspace holding a repository, a nested one, a submodule's git
/// directory and a lock.
fn repository_jail(user: User, lock: bool) -> Jail {
    let jail = Jail::new(User::Root);
    let ws = &jail.h.ws;
    let git = |dir: &Path, args: &[&str]| {
        let ok = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .status()
            .unwrap();
        assert!(ok.success());
    };
    git(ws, &["init", "-q", "."]);
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    git(&ws.join("sub"), &["init", "-q", "."]);
    let module = ws.join(".git/modules/m");
    for dir in ["hooks", "objects", "refs"] {
        std::fs::create_dir_all(module.join(dir)).unwrap();
    }
    std::fs::write(module.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(module.join("config"), "[core]\n").unwrap();
    // A submodule's work tree, whose `.git` file points at that directory.
    std::fs::create_dir_all(ws.join("m")).unwrap();
    std::fs::write(ws.join("m/.git"), "gitdir: ../.git/modules/m\n").unwrap();
    if lock {
        let cmd = jail
            .h
            .command()
            .arg("--workspace")
            .arg(ws)
            .args(["sandbox", "lock"])
            .output();
        assert!(cmd.unwrap().status.success());
    }
    jail.handed_to(user)
}

#[test]
fn policy_files_and_git_code_stay_read_only() {
    let attacks = [
        ("echo x >> magus.yaml", "YAML"),
        ("echo x >> magus.lock", "LOCK"),
        ("mv magus.lock lock.bak && mv lock.bak magus.lock", "MVLOCK"),
        ("rm magus.lock", "RMLOCK"),
        ("echo x > .git/hooks/pre-commit", "HOOK"),
        ("echo x >> .git/config", "CONFIG"),
        ("echo x >> sub/.git/config", "NESTED"),
        ("echo x > sub/.git/hooks/post-checkout", "NESTEDHOOK"),
        ("echo x > .git/modules/m/hooks/pre-commit", "MODULEHOOK"),
        ("echo x >> .git/modules/m/config", "MODULECONFIG"),
        // A remote named outside the config, whose own hooks a `git push`
        // runs (a bare repository planted inside `.git`: red team,
        // 2026-12-07).
        (
            "mkdir -p .git/remotes && echo 'URL: /x' > .git/remotes/origin",
            "REMOTES",
        ),
        (
            "mkdir -p .git/branches && echo /x > .git/branches/origin",
            "BRANCHES",
        ),
    ];
    let mut script: Vec<String> = attacks
        .iter()
        .map(|(line, tag)| format!("{line} && echo {tag}-OK"))
        .collect();
    script.push(
        "git -c user.name=t -c user.email=t@t commit -q --allow-empty -m x && git status --short >/dev/null && echo COMMIT-WORKS".into(),
    );
    let script = script.join("; ");
    for user in users() {
        let control = repository_jail(user, true).shell(Sandbox::GateOnly, &script);
        let jail = repository_jail(user, true);
        let yaml = std::fs::read(jail.h.ws_path("magus.yaml")).unwrap();
        let jailed = jail.shell(Sandbox::On, &script);
        let markers: Vec<String> = attacks.iter().map(|(_, tag)| format!("{tag}-OK")).collect();
        let markers: Vec<&str> = markers.iter().map(String::as_str).collect();
        assert_attack(user, &control, &jailed, &markers, "");
        assert!(jailed.stdout.contains("COMMIT-WORKS"), "{}", jailed.dump());
        assert_eq!(std::fs::read(jail.h.ws_path("magus.yaml")).unwrap(), yaml);
        assert!(jail.h.ws_path("magus.lock").exists());
    }
}

/// `core.fsmonitor` set to print `PWNED-<tag>`: git runs it at `git status`.
fn fsmonitor(tag: &str) -> String {
    format!("printf '[core]\\n\\tfsmonitor = \"echo PWNED-{tag} >&2; false\"\\n'")
}

/// What `git status` run outside the sandbox, after the run, printed in
/// the workspace, the nested repository and the gitlinked submodule.
fn git_status_everywhere(jail: &Jail) -> String {
    let mut seen = String::new();
    for dir in [".", "sub", "m"] {
        let out = Command::new("git")
            .args(["-c", "safe.directory=*", "-C"])
            .arg(jail.h.ws_path(dir))
            .arg("status")
            .output()
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&out.stderr));
    }
    seen
}

/// A repository whose config enables `extensions.worktreeConfig` (as
/// `git sparse-checkout` does) reads `.git/config.worktree` too, which
/// did not exist: a child wrote one with a `core.fsmonitor`, and the
/// user's next `git status`, outside the sandbox, ran it. The jail now
/// makes it empty and binds it read-only where the config enables it;
/// `git status` and `git commit` still work in the run.
#[test]
fn a_planted_config_worktree_does_not_run_at_the_next_git_status() {
    let script = format!(
        "{} > .git/config.worktree && echo WORKTREECONFIG-OK; \
         git -c user.name=t -c user.email=t@t commit -q --allow-empty -m x && git status --short >/dev/null && echo COMMIT-WORKS",
        fsmonitor("worktree")
    );
    let setup = |user: User| {
        let jail = repository_jail(User::Root, false);
        for (key, value) in [
            ("core.repositoryformatversion", "1"),
            ("extensions.worktreeConfig", "true"),
        ] {
            let ok = Command::new("git")
                .arg("-C")
                .arg(&jail.h.ws)
                .args(["config", key, value])
                .status()
                .unwrap();
            assert!(ok.success());
        }
        jail.handed_to(user)
    };
    for user in users() {
        let control = setup(user);
        let control_out = control.shell(Sandbox::GateOnly, &script);
        assert!(
            git_status_everywhere(&control).contains("PWNED-worktree"),
            "control: {}",
            control_out.dump()
        );
        let jail = setup(user);
        let jailed = jail.shell(Sandbox::On, &script);
        assert_attack(user, &control_out, &jailed, &["WORKTREECONFIG-OK"], "");
        assert!(jailed.stdout.contains("COMMIT-WORKS"), "{}", jailed.dump());
        let seen = git_status_everywhere(&jail);
        assert!(
            !seen.contains("PWNED"),
            "{user:?}: {seen}\n{}",
            jailed.dump()
        );
        let left = std::fs::read(jail.h.ws_path(".git/config.worktree")).unwrap();
        assert!(
            left.is_empty(),
            "{user:?}: {}",
            String::from_utf8_lossy(&left)
        );
    }
}

/// `.gitattributes` (committed, so writable) and `.git/info/attributes`
/// (the rest of `.git` stays writable) can name a filter, diff or merge
/// driver for every file, but git runs a driver only when a config
/// defines its command (`filter.NAME.clean`): a child writes both
/// attribute files and tries to define the driver in the repository's
/// config, the global one and an included file (red team round 6). The
/// user's `git add`, `git diff` and `git status` afterwards, outside the
/// sandbox, run nothing. The control (no jail: the config is writable)
/// runs the planted driver.
#[test]
fn git_attributes_name_no_command_without_a_config_to_define_it() {
    let driver = "sh -c \"echo PWNED-filter >&2; cat\"";
    let script = format!(
        "printf '* filter=evil diff=evil merge=evil\\n' > .gitattributes; \
         mkdir -p .git/info && cp .gitattributes .git/info/attributes; \
         git config filter.evil.clean '{driver}' && echo CONFIG-OK; \
         git config diff.evil.textconv '{driver}' && echo TEXTCONV-OK; \
         git config --global filter.evil.clean '{driver}' && echo GLOBAL-OK; \
         echo changed >> magus.lock.txt; git add -A 2>/dev/null; echo STATUS-DONE"
    );
    let user_git = |jail: &Jail| {
        let mut seen = String::new();
        for args in [&["add", "-A"][..], &["diff", "HEAD"], &["status"]] {
            let out = Command::new("git")
                .args([
                    "-c",
                    "safe.directory=*",
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@t",
                ])
                .arg("-C")
                .arg(&jail.h.ws)
                .args(args)
                .env("HOME", jail.h.home_path(""))
                .output()
                .unwrap();
            seen.push_str(&String::from_utf8_lossy(&out.stderr));
        }
        seen
    };
    for user in users() {
        let control = repository_jail(user, false);
        let control_out = control.shell(Sandbox::GateOnly, &script);
        assert!(
            user_git(&control).contains("PWNED-filter"),
            "control: {}",
            control_out.dump()
        );
        let jail = repository_jail(user, false);
        let jailed = jail.shell(Sandbox::On, &script);
        assert_attack(
            user,
            &control_out,
            &jailed,
            &["CONFIG-OK", "TEXTCONV-OK"],
            "",
        );
        assert!(!jailed.stdout.contains("GLOBAL-OK"), "{}", jailed.dump());
        assert!(jailed.stdout.contains("STATUS-DONE"), "{}", jailed.dump());
        let seen = user_git(&jail);
        assert!(
            !seen.contains("PWNED"),
            "{user:?}: {seen}\n{}",
            jailed.dump()
        );
    }
}

/// A workspace inside the user's repository (`magus.yaml` in
/// `monorepo/app`): the repository's `.git` is above the workspace, out of
/// the view, but a child may create one at the workspace root (`git
/// init` with a `core.fsmonitor`, or a `.git` file naming a planted git
/// directory), which git finds before the user's: the user's next `git
/// status` there, outside the sandbox, ran it (red team round 6). After
/// the run magus moves it into the workspace's quarantine and says so
/// (MGS2014); git then finds the user's repository again. The control (no jail) runs the planted command.
#[test]
fn a_git_directory_planted_at_the_root_of_a_workspace_inside_a_repository_is_set_aside() {
    // git asks the fsmonitor only once there is an index: `git add`.
    let planted_dir = format!(
        "git init -q . && {} >> .git/config && git add magus.yaml",
        fsmonitor("shadow")
    );
    let planted_file = format!(
        "mkdir -p .cache/g && git init -q --bare .cache/g && {} >> .cache/g/config && \
         echo \"gitdir: $PWD/.cache/g\" > .git && git config core.bare false && git add magus.yaml",
        fsmonitor("shadow")
    );
    // The workspace root made a bare repository whose work tree is
    // itself: git finds it before the repository above (found by a
    // red-team run).
    let planted_bare = format!(
        "git init -q --bare . && git config -f config core.bare false && \
         git config -f config core.worktree . && {} >> config && git add magus.yaml",
        fsmonitor("shadow")
    );
    let setup = |user: User| {
        let jail = Jail::new(User::Root);
        let ok = Command::new("git")
            .arg("-C")
            .arg(&jail.h.root)
            .args(["init", "-q", "."])
            .status()
            .unwrap();
        assert!(ok.success());
        jail.handed_to(user)
    };
    let status = |jail: &Jail| {
        let out = Command::new("git")
            .args(["-c", "safe.directory=*", "-C"])
            .arg(&jail.h.ws)
            .args(["status", "--short"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    for user in users() {
        let planted = [
            (&planted_dir, ".git"),
            (&planted_file, ".git"),
            (&planted_bare, "HEAD"),
        ];
        for (script, name) in planted {
            let control = setup(user);
            let control_out = control.shell(Sandbox::Off, script);
            assert!(
                status(&control).contains("PWNED-shadow"),
                "control: {}",
                control_out.dump()
            );
            let jail = setup(user);
            let jailed = jail.shell(Sandbox::On, script);
            assert!(jailed.stdout.contains("STATUS 0"), "{}", jailed.dump());
            let seen = status(&jail);
            assert!(
                !seen.contains("PWNED"),
                "{user:?}: {seen}\n{}",
                jailed.dump()
            );
            assert!(
                jailed.stderr.contains("warning[MGS2014]")
                    && jailed.stderr.contains("magus moved it to")
                    && jail.h.ws_path(".magus/quarantine").is_dir()
                    && jail.h.ws_path(name).symlink_metadata().is_err(),
                "{user:?}: {}",
                jailed.dump()
            );
        }
    }
}

/// A Mercurial workspace: a child that adds `[hooks]` to `.hg/hgrc` (or
/// writes the first one) has hg run its command at the user's next `hg
/// status`, outside the sandbox; one that adds `share-safe` to
/// `.hg/requires` makes hg read a config of its choosing; in a share
/// (`hg share`: `shared` and `share-safe` in `requires`), one that
/// re-points `.hg/sharedpath` at a `.hg` of its own makes hg read that
/// directory's `hgrc` (red team round 6); `.hg/hgrc-not-shared`, read
/// like `hgrc`, is written or planted the same way (red team, 2026-12-07).
/// hg itself need not be installed: what is tested is that the files stay
/// as they were.
#[test]
fn a_mercurial_repositorys_config_and_requirements_stay_read_only() {
    let script = "printf '[hooks]\\npre-status = echo PWNED-hg\\n' >> .hg/hgrc && echo HGRC-OK; \
                  printf '[hooks]\\npre-status = echo PWNED-ns\\n' >> .hg/hgrc-not-shared && echo NOTSHARED-OK; \
                  echo share-safe >> .hg/requires && echo REQUIRES-OK; \
                  mkdir -p planted/.hg && printf '[hooks]\\npre-status = echo PWNED-share\\n' > planted/.hg/hgrc; \
                  echo \"$PWD/planted/.hg\" > .hg/sharedpath && echo SHAREDPATH-OK; \
                  echo data > .hg/store/planted && echo STORE-WRITABLE";
    let requires = "dotencode\nfncache\nrevlogv1\nstore\n";
    let shared = "share-safe\nshared\n";
    for (hgrc_at_start, share) in [(None, false), (Some("[ui]\nusername = u\n"), true)] {
        let requires = match share {
            true => format!("{requires}{shared}"),
            false => requires.to_string(),
        };
        let sharedpath = "/srv/source/.hg\n";
        let setup = |user: User| {
            let jail = Jail::new(User::Root);
            std::fs::create_dir_all(jail.h.ws_path(".hg/store")).unwrap();
            std::fs::write(jail.h.ws_path(".hg/requires"), &requires).unwrap();
            std::fs::write(jail.h.ws_path(".hg/sharedpath"), sharedpath).unwrap();
            if let Some(text) = hgrc_at_start {
                std::fs::write(jail.h.ws_path(".hg/hgrc"), text).unwrap();
            }
            jail.handed_to(user)
        };
        for user in users() {
            let control = setup(user).shell(Sandbox::GateOnly, script);
            let jail = setup(user);
            let jailed = jail.shell(Sandbox::On, script);
            let markers = ["HGRC-OK", "NOTSHARED-OK", "REQUIRES-OK", "SHAREDPATH-OK"];
            assert_attack(user, &control, &jailed, &markers, "");
            let now = std::fs::read_to_string(jail.h.ws_path(".hg/sharedpath")).unwrap();
            assert_eq!(now, sharedpath, "{user:?}");
            // The rest of `.hg` stays writable, for `hg commit`.
            assert!(
                jailed.stdout.contains("STORE-WRITABLE"),
                "{}",
                jailed.dump()
            );
            let hgrc = std::fs::read_to_string(jail.h.ws_path(".hg/hgrc")).unwrap();
            assert_eq!(hgrc, hgrc_at_start.unwrap_or(""), "{user:?}");
            // Read like `hgrc` (hg 6.3, in a repository `hg init` made:
            // a red-team run): made empty and kept so.
            let ns = std::fs::read_to_string(jail.h.ws_path(".hg/hgrc-not-shared"));
            assert_eq!(ns.unwrap_or_default(), "", "{user:?}");
            let now = std::fs::read_to_string(jail.h.ws_path(".hg/requires")).unwrap();
            assert_eq!(now, requires, "{user:?}");
        }
    }
}

/// A workspace whose `.git` is a symbolic link to its git directory (as
/// Android's `repo` makes them), and whose `.git/hooks` is a link to a
/// directory of the work tree: a link cannot be bound read-only (a mount
/// follows it), and a child pointed `.git` at a copy of the git directory
/// with a `core.fsmonitor` of its own, or put such a directory in its
/// place, or pointed `hooks` at hooks of its own; the user's next `git
/// status` or `git commit`, outside the sandbox, ran them. After the run
/// magus puts each link back, keeps what stood there aside, and says so.
#[test]
fn a_swapped_git_link_is_put_back_after_the_run() {
    let attacks = [
        (
            "LINK",
            "cp -r store evil && {} >> evil/config && rm .git && ln -s evil .git",
        ),
        ("DIR", "rm .git && cp -r store .git && {} >> .git/config"),
        (
            "HOOKS",
            "mkdir evil && printf '#!/bin/sh\\necho PWNED-link >&2\\n' > evil/pre-commit && chmod +x evil/pre-commit && rm store/hooks && ln -s ../evil store/hooks",
        ),
    ];
    for user in users() {
        for (tag, attack) in attacks {
            let script = format!(
                "{} && echo SWAP-OK",
                attack.replace("{}", &fsmonitor("link"))
            );
            let setup = || {
                let jail = Jail::new(User::Root);
                let ws = &jail.h.ws;
                let ok = Command::new("git")
                    .arg("-C")
                    .arg(ws)
                    .args(["init", "-q", "."])
                    .status();
                assert!(ok.unwrap().success());
                std::fs::rename(ws.join(".git"), ws.join("store")).unwrap();
                std::os::unix::fs::symlink("store", ws.join(".git")).unwrap();
                std::fs::remove_dir_all(ws.join("store/hooks")).unwrap();
                std::fs::create_dir(ws.join("githooks")).unwrap();
                std::os::unix::fs::symlink("../githooks", ws.join("store/hooks")).unwrap();
                jail.handed_to(user)
            };
            // `git status`, then `git commit` (which runs `pre-commit`).
            let status = |jail: &Jail| {
                let git = |args: &[&str]| {
                    let out = Command::new("git")
                        .args(["-c", "safe.directory=*", "-c", "user.name=t"])
                        .args(["-c", "user.email=t@t", "-C"])
                        .arg(&jail.h.ws)
                        .args(args)
                        .output()
                        .unwrap();
                    String::from_utf8_lossy(&out.stderr).into_owned()
                };
                git(&["status"]) + &git(&["commit", "-q", "--allow-empty", "-m", "x"])
            };
            let control = setup();
            let control_out = control.shell(Sandbox::Off, &script);
            assert!(
                control_out.stdout.contains("SWAP-OK"),
                "{tag}: {}",
                control_out.dump()
            );
            assert!(
                status(&control).contains("PWNED-link"),
                "{tag}: {}",
                control_out.dump()
            );
            let jail = setup();
            let jailed = jail.shell(Sandbox::On, &script);
            let seen = status(&jail);
            assert!(
                !seen.contains("PWNED"),
                "{user:?} {tag}: {seen}\n{}",
                jailed.dump()
            );
            for (link, target) in [(".git", "store"), ("store/hooks", "../githooks")] {
                assert_eq!(
                    std::fs::read_link(jail.h.ws_path(link)).unwrap(),
                    PathBuf::from(target),
                    "{user:?} {tag}: {}",
                    jailed.dump()
                );
            }
            assert!(
                jailed.stderr.contains("put the link back"),
                "{}",
                jailed.dump()
            );
        }
    }
}

/// A `core.hooksPath` that is a symbolic link in the work tree (`.hk ->
/// tools/hooks`): the bind holds `tools/hooks`, and a child pointed the
/// link at hooks of its own, which the user's next `git commit` ran.
/// After the run magus puts the link back.
#[test]
fn a_linked_hooks_path_is_put_back_after_the_run() {
    let script = "mkdir evil && printf '#!/bin/sh\\necho PWNED-hookspath >&2\\n' > evil/pre-commit && chmod +x evil/pre-commit && rm .hk && ln -s evil .hk && echo SWAP-OK";
    for user in users() {
        let setup = || {
            let jail = Jail::new(User::Root);
            let ws = &jail.h.ws;
            let git = |args: &[&str]| {
                let ok = Command::new("git").arg("-C").arg(ws).args(args).status();
                assert!(ok.unwrap().success());
            };
            git(&["init", "-q", "."]);
            std::fs::create_dir_all(ws.join("tools/hooks")).unwrap();
            std::os::unix::fs::symlink("tools/hooks", ws.join(".hk")).unwrap();
            git(&["config", "core.hooksPath", ".hk"]);
            jail.handed_to(user)
        };
        let commit = |jail: &Jail| {
            let out = Command::new("git")
                .args(["-c", "safe.directory=*", "-c", "user.name=t"])
                .args(["-c", "user.email=t@t", "-C"])
                .arg(&jail.h.ws)
                .args(["commit", "-q", "--allow-empty", "-m", "x"])
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stderr).into_owned()
        };
        let control = setup();
        let control_out = control.shell(Sandbox::GateOnly, script);
        assert!(
            commit(&control).contains("PWNED-hookspath"),
            "{}",
            control_out.dump()
        );
        let jail = setup();
        let jailed = jail.shell(Sandbox::On, script);
        let seen = commit(&jail);
        assert!(
            !seen.contains("PWNED"),
            "{user:?}: {seen}\n{}",
            jailed.dump()
        );
        assert_eq!(
            std::fs::read_link(jail.h.ws_path(".hk")).unwrap(),
            PathBuf::from("tools/hooks"),
            "{}",
            jailed.dump()
        );
    }
}

/// A git config that sends git into the work tree (husky's
/// `core.hooksPath`, an `include.path` of a config committed to the
/// repository, an alias or command given by path) made the read-only
/// `.git/config` and `.git/hooks` beside the point: a child rewrote what
/// they name, or swapped the hooks directory, and the user's next `git
/// status` or `git commit`, outside the sandbox, ran it. Each named path
/// under a writable grant is now bound read-only too (a missing hooks
/// directory is made first), see `src/enforce/linux/jail/gitconfig.rs`.
#[test]
fn git_config_named_paths_stay_read_only() {
    let hook = |tag: &str, file: &str| {
        format!("printf '#!/bin/sh\\necho PWNED-{tag} >&2\\n' > {file} && chmod +x {file}")
    };
    let attacks = [
        ("HOOKSPATH", hook("HOOKSPATH", ".husky/pre-commit")),
        (
            "INCLUDE",
            format!("{} > .gitconfig.shared", fsmonitor("INCLUDE")),
        ),
        ("PROGRAM", hook("PROGRAM", "tools/lint.sh")),
        (
            "SWAP",
            format!(
                "mv .husky .husky-old && cp -r .husky-old .husky && {}",
                hook("SWAP", ".husky/post-commit")
            ),
        ),
        (
            "MISSING",
            format!(
                "mkdir -p sub/hooks-dir && {}",
                hook("MISSING", "sub/hooks-dir/post-commit")
            ),
        ),
    ];
    let script: Vec<String> = attacks
        .iter()
        .map(|(tag, line)| format!("({line}) && echo {tag}-PLANTED"))
        .collect();
    let script = script.join("; ");
    let git = |dir: &Path, args: &[&str]| {
        Command::new("git")
            .args([
                "-c",
                "safe.directory=*",
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-C",
            ])
            .arg(dir)
            .args(args)
            .output()
            .unwrap()
    };
    let repository = |user: User| {
        let jail = Jail::new(User::Root);
        let ws = jail.h.ws.clone();
        let setup = [
            vec!["init", "-q", "."],
            vec!["config", "core.hooksPath", ".husky"],
            vec!["config", "include.path", "../.gitconfig.shared"],
            vec!["config", "alias.lint", "!./tools/lint.sh"],
        ];
        for args in setup {
            assert!(git(&ws, &args).status.success());
        }
        std::fs::create_dir_all(ws.join(".husky")).unwrap();
        std::fs::create_dir_all(ws.join("tools")).unwrap();
        std::fs::write(ws.join(".gitconfig.shared"), "").unwrap();
        for file in [".husky/pre-commit", "tools/lint.sh"] {
            std::fs::write(ws.join(file), "#!/bin/sh\n").unwrap();
            let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
            std::fs::set_permissions(ws.join(file), mode).unwrap();
        }
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        assert!(git(&ws.join("sub"), &["init", "-q", "."]).status.success());
        assert!(
            git(&ws.join("sub"), &["config", "core.hooksPath", "hooks-dir"])
                .status
                .success()
        );
        jail.handed_to(user)
    };
    // What the user's git runs afterwards, outside the sandbox.
    let afterwards = |jail: &Jail| {
        let ws = &jail.h.ws;
        let mut seen = String::new();
        for (dir, args) in [
            (ws.clone(), vec!["status"]),
            (ws.clone(), vec!["commit", "-q", "--allow-empty", "-m", "x"]),
            (ws.clone(), vec!["lint"]),
            (
                ws.join("sub"),
                vec!["commit", "-q", "--allow-empty", "-m", "x"],
            ),
        ] {
            seen.push_str(&String::from_utf8_lossy(&git(&dir, &args).stderr));
        }
        seen
    };
    for user in users() {
        let control_jail = repository(user);
        let control = control_jail.shell(Sandbox::Off, &script);
        let ran = afterwards(&control_jail);
        let jail = repository(user);
        let jailed = jail.shell(Sandbox::On, &script);
        let after = afterwards(&jail);
        for (tag, _) in &attacks {
            assert!(
                control.stdout.contains(&format!("{tag}-PLANTED")),
                "{}",
                control.dump()
            );
            assert!(
                ran.contains(&format!("PWNED-{tag}")),
                "control {tag}: {ran}"
            );
            assert!(
                !after.contains(&format!("PWNED-{tag}")),
                "{user:?} {tag}: {after}\n{}",
                jailed.dump()
            );
        }
        assert_eq!(jailed.status, Some(0), "{}", jailed.dump());
    }
}

/// The read-only binds over `.git/hooks` and `.git/config` held the files,
/// not the places git looks: a child renamed `.git` (or a nested
/// repository, or a submodule's git directory) aside and copied it back
/// with a `core.fsmonitor`, rewrote a submodule's `.git` file to point at
/// a planted git directory, or wrote `.git/commondir` (git then takes
/// config and hooks from the directory it names). Each ran its command,
/// unconfined, at the user's next `git status`. Now every directory
/// between a grant and a protected path is a mount point (`EBUSY`),
/// `.git` files and existing `commondir` files are bound read-only, and a
/// `commondir` a child creates is removed once the run has ended.
#[test]
fn git_directories_cannot_be_swapped_for_planted_ones() {
    let monitor = |tag: &str, file: &str| format!("{} >> {file}", fsmonitor(tag));
    let attacks = [
        (
            "RENAME",
            format!("mv .git .git-old && cp -r .git-old .git && {}", monitor("RENAME", ".git/config")),
        ),
        (
            "NESTED",
            format!(
                "mv sub sub-old && mkdir sub && cp -r sub-old/.git sub/.git && {}",
                monitor("NESTED", "sub/.git/config")
            ),
        ),
        (
            "MODULE",
            format!(
                "mv .git/modules/m .git/modules/m-old && cp -r .git/modules/m-old .git/modules/m && {}",
                monitor("MODULE", ".git/modules/m/config")
            ),
        ),
        (
            "GITLINK",
            format!(
                "mkdir evil && cp -r .git/modules/m/. evil/ && {} && echo \"gitdir: $PWD/evil\" > m/.git",
                monitor("GITLINK", "evil/config")
            ),
        ),
        (
            "COMMONDIR",
            format!(
                "mkdir evil && cp -r .git/. evil/ && {} && echo \"$PWD/evil\" > .git/commondir",
                monitor("COMMONDIR", "evil/config")
            ),
        ),
    ];
    for user in users() {
        for (tag, attack) in &attacks {
            let pwned = format!("PWNED-{tag}");
            let script = format!("{attack} && echo {tag}-PLANTED");
            let control = repository_jail(user, false);
            let out = control.shell(Sandbox::Off, &script);
            assert!(
                out.stdout.contains(&format!("{tag}-PLANTED")),
                "{}",
                out.dump()
            );
            let seen = git_status_everywhere(&control);
            assert!(
                seen.contains(&pwned),
                "control {user:?} {tag}: {seen}\n{}",
                out.dump()
            );

            let jail = repository_jail(user, false);
            let jailed = jail.shell(Sandbox::On, &script);
            let seen = git_status_everywhere(&jail);
            assert!(
                !seen.contains("PWNED"),
                "{tag} planted: {seen}\n{}",
                context(user, Sandbox::On, &jailed)
            );
            assert_eq!(jailed.status, Some(0), "{}", jailed.dump());
            if *tag == "COMMONDIR" {
                assert!(
                    jailed.stderr.contains("/.git/commondir`")
                        && jailed.stderr.contains("magus removed it"),
                    "{}",
                    jailed.dump()
                );
            }
        }
    }
}

/// `magus.yaml` grants `data` (read-only), which does not exist yet. A
/// child of one run makes `data` a symbolic link to `$HOME`; the next run
/// resolved the grant through it and granted the whole home, `~/.ssh`
/// included (only a warning said so). Now an entry that leads outside
/// every writable place through a link that lies in one is skipped
/// (MGS2004). Controls: with the sandbox off the second run reads the key
/// through the link, and `~/.ssh` granted by its real path is read in the
/// jail (so the harness sees the grant when there is one).
#[test]
fn a_planted_symlink_does_not_widen_the_next_runs_grants() {
    let config = "sandbox:\n  enabled: true\n  allow:\n    - path: data\n      mode: ro\n";
    let plant = "ln -s \"$HOME\" data && echo PLANTED";
    let read = "cat data/.ssh/id_rsa; cat \"$HOME/.ssh/id_rsa\"";
    for user in users() {
        let jail = Jail::with_config(user, config);
        let key = jail.h.secret("~/.ssh/id_rsa").to_string();
        let off = jail.shell(Sandbox::Off, plant);
        assert!(off.stdout.contains("PLANTED"), "{}", off.dump());
        let control = jail.shell(Sandbox::Off, read);
        assert!(control.stdout.contains(&key), "{}", control.dump());
        std::fs::remove_file(jail.h.ws_path("data")).unwrap();

        let planted = jail.shell(Sandbox::On, plant);
        assert!(planted.stdout.contains("PLANTED"), "{}", planted.dump());
        let jailed = jail.shell(Sandbox::On, read);
        assert!(
            !jailed.stdout.contains(&key),
            "{}",
            context(user, Sandbox::On, &jailed)
        );
        jail.h.assert_no_leak(&jailed);
        assert!(
            jailed.stderr.contains("MGS2004")
                && jailed
                    .stderr
                    .contains("a symbolic link in a directory that spells can"),
            "{}",
            jailed.dump()
        );

        // Granted by name: a store inside a wider grant is hidden.
        let home = jail.h.home.display();
        let direct = format!(
            "sandbox:\n  enabled: true\n  allow:\n    - path: {home}/.ssh\n      mode: ro\n"
        );
        jail.h.write_config(&direct);
        let granted = jail.shell(Sandbox::On, read);
        assert!(granted.stdout.contains(&key), "{}", granted.dump());
    }
}

/// The jail gives each run a `/tmp` of its own, so a host directory under
/// `/tmp` is no place the children write: a link a child planted to one
/// (`ln -s /tmp/tmux-1000 data`, where `data` was missing) made the next
/// run bind the host's directory (the user's tmux socket) into its view,
/// while a warning said the entry "adds nothing". Now the link is refused
/// as planted (MGS2004). Control: sandbox off, the link reads the host's
/// file; and the same directory spelled by name is the user's own choice:
/// granted, without "adds nothing".
#[test]
fn a_planted_link_to_a_host_directory_under_tmp_does_not_widen_the_next_run() {
    let host_dir = PathBuf::from("/tmp").join(unique("host-tmux"));
    std::fs::create_dir_all(&host_dir).unwrap();
    std::fs::set_permissions(
        &host_dir,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let marker = format!("HOST-TMP-SECRET-{}", unique("m"));
    std::fs::write(host_dir.join("socket-ish"), &marker).unwrap();
    std::fs::set_permissions(
        host_dir.join("socket-ish"),
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    let config = "sandbox:\n  enabled: true\n  allow:\n    - path: data\n      mode: rw\n";
    let plant = format!("ln -s {} data && echo PLANTED", host_dir.display());
    let read = "cat data/socket-ish";
    for user in users() {
        let jail = Jail::with_config(user, config);
        let off = jail.shell(Sandbox::Off, &plant);
        assert!(off.stdout.contains("PLANTED"), "{}", off.dump());
        let control = jail.shell(Sandbox::Off, read);
        assert!(control.stdout.contains(&marker), "{}", control.dump());
        std::fs::remove_file(jail.h.ws_path("data")).unwrap();

        let planted = jail.shell(Sandbox::On, &plant);
        assert!(planted.stdout.contains("PLANTED"), "{}", planted.dump());
        let jailed = jail.shell(Sandbox::On, read);
        assert!(
            !jailed.stdout.contains(&marker) && !jailed.stderr.contains(&marker),
            "{}",
            context(user, Sandbox::On, &jailed)
        );
        assert!(
            jailed.stderr.contains("MGS2004") && !jailed.stderr.contains("adds nothing"),
            "{}",
            jailed.dump()
        );

        let direct = format!(
            "sandbox:\n  enabled: true\n  allow:\n    - path: {}\n      mode: ro\n",
            host_dir.display()
        );
        jail.h.write_config(&direct);
        let named = jail.shell(
            Sandbox::On,
            &format!("cat {}/socket-ish", host_dir.display()),
        );
        assert!(named.stdout.contains(&marker), "{}", named.dump());
        assert!(!named.stderr.contains("adds nothing"), "{}", named.dump());
    }
    std::fs::remove_dir_all(&host_dir).unwrap();
}

/// magus's cache (`$XDG_CACHE_HOME/magus`) is granted `rw` like a
/// `sandbox.allow` entry, and so was `$TMPDIR`. Without the jail (here:
/// user namespaces refused, as on Ubuntu 24.04) children shared the
/// host's `/tmp`, so with `TMPDIR=/tmp/<me>` a child of one run replaced
/// that directory with a link to `~/.ssh`, and the next run granted the
/// keys `rw`, to its children and to `fs.*`. Now a machine directory
/// reached through a link lying in a writable place is not granted, with a
/// warning; and without the jail neither `$TMPDIR` nor `/tmp` is granted
/// unless magus.yaml names it, as here (`/tmp`), so the attack is made on
/// the cache. Control: the sandbox off reads the key through the link.
#[test]
fn a_planted_machine_dir_link_does_not_widen_the_next_runs_grants() {
    let config = "sandbox:\n  enabled: true\n  allow:\n    - path: /tmp\n      mode: rw\n";
    for user in users() {
        let mut jail = Jail::with_config(user, config);
        // No jail: root builds one without a user namespace unless every
        // namespace is refused.
        jail.kernel = match user {
            User::Root => Kernel::NoNamespaces,
            User::Nobody => Kernel::NoUserNamespaces,
        };
        let cache_home = PathBuf::from("/tmp").join(unique("cache"));
        let cache = cache_home.join("magus");
        std::fs::create_dir_all(&cache).unwrap();
        if user == User::Nobody {
            let nobody = Some(nix::unistd::Uid::from_raw(NOBODY));
            nix::unistd::chown(&cache_home, nobody, None).unwrap();
            nix::unistd::chown(&cache, nobody, None).unwrap();
        }
        jail.h.set_env("XDG_CACHE_HOME", &cache_home);
        let key = jail.h.secret("~/.ssh/id_rsa").to_string();
        let ssh = jail.h.home_path(".ssh");
        let c = cache.display();
        let plant = format!("rm -r {c} && ln -s {} {c} && echo PLANTED", ssh.display());
        let read = format!("cat {c}/id_rsa");

        let planted = jail.shell(Sandbox::On, &plant);
        assert!(planted.stdout.contains("PLANTED"), "{}", planted.dump());
        let control = jail.shell(Sandbox::Off, &read);
        let next = jail.shell(Sandbox::On, &read);
        let _ = std::fs::remove_file(&cache);
        let _ = std::fs::remove_dir_all(&cache_home);
        assert!(control.stdout.contains(&key), "{}", control.dump());
        assert!(
            !next.stdout.contains(&key),
            "{}",
            context(user, Sandbox::On, &next)
        );
        jail.h.assert_no_leak(&next);
        assert!(
            next.stderr.contains("magus cache") && next.stderr.contains("could have planted it"),
            "{}",
            next.dump()
        );
    }
}

/// A grant that holds a credential store without naming it: `~/.cargo`
/// (what a Rust build needs) holds `~/.cargo/credentials.toml`, the
/// crates.io token; `~/.config` holds `~/.config/op` and the GitHub CLI's
/// `~/.config/gh/hosts.yml`. Children read them all. In the jail each is
/// now hidden (an empty read-only directory, `/dev/null` over a file),
/// and cannot be renamed from under the mask; the rest of the grant works.
#[test]
fn credential_stores_inside_a_grant_are_hidden() {
    let config = "sandbox:\n  enabled: true\n  allow:\n    - path: ~/.config\n      mode: ro\n    - path: ~/.cargo\n      mode: rw\n";
    for user in users() {
        let jail = Jail::with_config(user, config);
        let cargo = format!("[registry]\ntoken = \"cargo-{}\"\n", unique("token"));
        let gh = format!("github.com:\n    oauth_token: gh-{}\n", unique("token"));
        // git's other credential file, inside `~/.config/git`, which the
        // jail binds read-only as git's start-up directory (a red-team
        // run read it, 2026-12-08).
        let git = format!("https://u:git-{}@example.com\n", unique("token"));
        std::fs::create_dir_all(jail.h.home_path(".cargo/registry")).unwrap();
        std::fs::create_dir_all(jail.h.home_path(".config/gh")).unwrap();
        std::fs::create_dir_all(jail.h.home_path(".config/git")).unwrap();
        std::fs::write(jail.h.home_path(".cargo/credentials.toml"), &cargo).unwrap();
        std::fs::write(jail.h.home_path(".config/gh/hosts.yml"), &gh).unwrap();
        std::fs::write(jail.h.home_path(".config/git/credentials"), &git).unwrap();
        jail.hand_over();
        let script = "cat ~/.cargo/credentials.toml ~/.config/gh/hosts.yml ~/.config/op/config \
            ~/.config/git/credentials; \
            echo x > ~/.cargo/credentials.toml; mv ~/.cargo/credentials.toml ~/.cargo/moved; \
            cat ~/.cargo/moved; echo ok > ~/.cargo/registry/f && echo RW-OK";
        let control = jail.shell(Sandbox::Off, script);
        let op = jail.h.secret("~/.config/op/config").to_string();
        for secret in [
            cargo.lines().nth(1).unwrap(),
            gh.lines().nth(1).unwrap().trim(),
            &op,
            git.trim(),
        ] {
            assert!(
                control.stdout.contains(secret),
                "control lacks {secret}: {}",
                control.dump()
            );
        }
        // The control moved and overwrote it: plant it again.
        let _ = std::fs::remove_file(jail.h.home_path(".cargo/moved"));
        std::fs::write(jail.h.home_path(".cargo/credentials.toml"), &cargo).unwrap();
        jail.hand_over();
        let jailed = jail.shell(Sandbox::On, script);
        for secret in [
            cargo.lines().nth(1).unwrap(),
            gh.lines().nth(1).unwrap().trim(),
            &op,
            git.trim(),
        ] {
            assert!(
                !jailed.stdout.contains(secret) && !jailed.stderr.contains(secret),
                "{secret} leaked: {}",
                context(user, Sandbox::On, &jailed)
            );
        }
        jail.h.assert_no_leak(&jailed);
        assert!(jailed.stdout.contains("RW-OK"), "{}", jailed.dump());
        let kept = std::fs::read_to_string(jail.h.home_path(".cargo/credentials.toml")).unwrap();
        assert_eq!(kept, cargo, "the token file changed");

        // `fs.*` too, in the jail and without it (where only the gate
        // refuses it: Landlock cannot carve a path out of a grant).
        let read = "import \"std\";\nimport \"fs\";\nfun main(args: [str]) > int {\n    try {\n        std.print(\"READ {fs.read(args[0])}\");\n    } catch (e: SandboxError) {\n        std.print(\"CAUGHT {e.code}\");\n    }\n    return 0;\n}\n";
        jail.h.write_spell("f", read);
        jail.hand_over();
        let token = jail.h.home_path(".cargo/credentials.toml");
        let token = token.to_str().unwrap();
        let control = capture(jail.command(Sandbox::Off).args(["f", token]));
        assert!(
            control.stdout.contains(cargo.lines().nth(1).unwrap()),
            "{}",
            control.dump()
        );
        let mut unjailed = jail.without_jail();
        // Through a link a child made that stays beneath `~/.cargo`
        // (found by a red-team run): the gate opened it beneath the grant
        // without asking where it led.
        let link = unjailed.h.home_path(".cargo/registry/tok");
        std::os::unix::fs::symlink("../credentials.toml", &link).unwrap();
        let link = link.to_str().unwrap().to_string();
        let through = capture(unjailed.command(Sandbox::Off).args(["f", &link]));
        assert!(
            through.stdout.contains(cargo.lines().nth(1).unwrap()),
            "{}",
            through.dump()
        );
        for kernel in [Kernel::AsIs, unjailed.kernel] {
            unjailed.kernel = kernel;
            for path in [token, link.as_str()] {
                let out = capture(unjailed.command(Sandbox::On).args(["f", path]));
                assert!(
                    out.stdout.contains("CAUGHT MGS2001"),
                    "{kernel:?} {path}: {}",
                    out.dump()
                );
                unjailed.h.assert_no_leak(&out);
                assert!(
                    !out.stdout.contains(cargo.lines().nth(1).unwrap()),
                    "{kernel:?} {path}: {}",
                    out.dump()
                );
            }
        }
    }
}

/// `fs.read` of magus's own memory (`/proc/self/mem`, where the spell
/// runs; found openable by a red-team run, 2026-12-08): refused, in the
/// jail, without it and with the gate alone. The control, the sandbox
/// off, opens it (the read then fails: nothing is mapped at offset 0).
#[test]
fn the_spells_own_memory_is_refused_to_fs() {
    let spell = "import \"std\";\nimport \"fs\";\nfun main(args: [str]) > int {\n    foreach (p in [\"/proc/self/mem\", \"/proc/thread-self/mem\"]) {\n        try {\n            _ = fs.read(p);\n            std.print(\"READ {p}\");\n        } catch (e: SandboxError) {\n            std.print(\"CAUGHT {e.code}\");\n        } catch {\n            std.print(\"OPENED {p}\");\n        }\n    }\n    return 0;\n}\n";
    for user in users() {
        let jail = Jail::new(user);
        jail.h.write_spell("mem", spell);
        jail.hand_over();
        let control = capture(jail.command(Sandbox::Off).arg("mem"));
        assert_eq!(
            control.stdout.matches("OPENED").count(),
            2,
            "{}",
            control.dump()
        );
        let refused = |jail: &Jail, sandbox: Sandbox| {
            let out = capture(jail.command(sandbox).arg("mem"));
            let what = format!("{user:?} {:?} {sandbox:?}", jail.kernel);
            assert_eq!(
                out.stdout.matches("CAUGHT MGS2001").count(),
                2,
                "{what}: {}",
                out.dump()
            );
        };
        refused(&jail, Sandbox::On);
        let unjailed = jail.without_jail();
        refused(&unjailed, Sandbox::On);
        refused(&unjailed, Sandbox::GateOnly);
    }
}

/// A directory holding a hidden store, moved aside by `fs.move`, left the
/// store where nothing hid it (found by a red-team run, 2026-12-08): with
/// `~/.config` granted `rw`, the spell moved `~/.config/gh` aside, read
/// `hosts.yml` at its new path, wrote a token there, and moved it back,
/// in every mode but the jail's view. Now the move is refused (MGS2002),
/// in the jail, without it, and with the gate alone; the control moves
/// and reads.
#[test]
fn a_directory_holding_a_hidden_store_cannot_be_moved_aside() {
    let config = "sandbox:\n  enabled: true\n  allow:\n    - path: ~/.config\n      mode: rw\n";
    let spell = "import \"std\";\nimport \"fs\";\nfun main(args: [str]) > int {\n    final h = args[0];\n    try {\n        fs.move(\"{h}/.config/gh\", \"{h}/.config/gh-moved\");\n        std.print(\"READ {fs.read(\"{h}/.config/gh-moved/hosts.yml\")}\");\n        fs.write(\"{h}/.config/gh-moved/hosts.yml\", \"PLANTED\");\n        fs.move(\"{h}/.config/gh-moved\", \"{h}/.config/gh\");\n    } catch (e: SandboxError) {\n        std.print(\"CAUGHT {e.code}\");\n    }\n    return 0;\n}\n";
    for user in users() {
        let jail = Jail::with_config(user, config);
        let gh = format!("github.com:\n    oauth_token: gh-{}\n", unique("token"));
        let hosts = jail.h.home_path(".config/gh/hosts.yml");
        std::fs::create_dir_all(hosts.parent().unwrap()).unwrap();
        std::fs::write(&hosts, &gh).unwrap();
        jail.h.write_spell("m", spell);
        jail.hand_over();
        let home = jail.h.home_path("");
        let home = home.to_str().unwrap().trim_end_matches('/').to_string();
        let token = gh.lines().nth(1).unwrap().trim();
        let control = capture(jail.command(Sandbox::Off).args(["m", &home]));
        assert!(control.stdout.contains(token), "{}", control.dump());
        std::fs::write(&hosts, &gh).unwrap();
        jail.hand_over();
        let refused = |jail: &Jail, sandbox: Sandbox| {
            let out = capture(jail.command(sandbox).args(["m", &home]));
            let what = format!("{:?} {sandbox:?}", jail.kernel);
            assert!(
                out.stdout.contains("CAUGHT MGS2002"),
                "{what}: {}",
                out.dump()
            );
            assert!(!out.stdout.contains(token), "{what}: {}", out.dump());
            jail.h.assert_no_leak(&out);
            assert_eq!(std::fs::read_to_string(&hosts).unwrap(), gh, "{what}");
        };
        refused(&jail, Sandbox::On);
        let unjailed = jail.without_jail();
        refused(&unjailed, Sandbox::On);
        refused(&unjailed, Sandbox::GateOnly);
    }
}

/// `stow`'s two layouts of a dotfiles repository (found by a red-team
/// run): `~/.ssh` a link into a granted `~/dotfiles`, and `~/.aws` a real
/// directory whose `credentials` is a link into it. The keys' real paths,
/// inside the grant, were neither hidden nor refused: a child `cat`ted
/// both, `fs.read` read both. Now both are hidden in the view and refused
/// to `fs.*` (with the jail and without it), the rest of the grant still
/// readable; the control, the sandbox off, reads the keys.
#[test]
fn credential_stores_linked_into_a_grant_are_hidden() {
    let config = "sandbox:\n  enabled: true\n  allow:\n    - path: ~/dotfiles\n      mode: ro\n";
    for user in users() {
        let jail = Jail::with_config(user, config);
        let key = jail.h.secret("~/.ssh/id_rsa").to_string();
        let aws = jail.h.secret("~/.aws/credentials").to_string();
        let dot = jail.h.home_path("dotfiles");
        std::fs::create_dir_all(dot.join("ssh")).unwrap();
        std::fs::create_dir_all(dot.join("aws")).unwrap();
        std::fs::write(dot.join("README"), "DOTFILES-README\n").unwrap();
        std::fs::rename(jail.h.home_path(".ssh"), dot.join("ssh/.ssh")).unwrap();
        std::os::unix::fs::symlink("dotfiles/ssh/.ssh", jail.h.home_path(".ssh")).unwrap();
        let credentials = jail.h.home_path(".aws/credentials");
        std::fs::rename(&credentials, dot.join("aws/credentials")).unwrap();
        std::os::unix::fs::symlink("../dotfiles/aws/credentials", &credentials).unwrap();
        jail.hand_over();
        let script = "cat ~/dotfiles/ssh/.ssh/id_rsa; cat ~/dotfiles/aws/credentials; \
            cat ~/.ssh/id_rsa ~/.aws/credentials; cat ~/dotfiles/README";
        let control = jail.shell(Sandbox::Off, script);
        for secret in [&key, &aws] {
            assert!(
                control.stdout.contains(secret.as_str()),
                "{}",
                control.dump()
            );
        }
        let jailed = jail.shell(Sandbox::On, script);
        jail.h.assert_no_leak(&jailed);
        assert!(
            jailed.stdout.contains("DOTFILES-README"),
            "{}",
            context(user, Sandbox::On, &jailed)
        );

        let read = "import \"std\";\nimport \"fs\";\nfun main(args: [str]) > int {\n    try {\n        std.print(\"READ {fs.read(args[0])}\");\n    } catch (e: SandboxError) {\n        std.print(\"CAUGHT {e.code}\");\n    }\n    return 0;\n}\n";
        jail.h.write_spell("f", read);
        jail.hand_over();
        let paths = [dot.join("ssh/.ssh/id_rsa"), dot.join("aws/credentials")];
        let control = capture(jail.command(Sandbox::Off).arg("f").arg(&paths[0]));
        assert!(control.stdout.contains(&key), "{}", control.dump());
        let mut unjailed = jail.without_jail();
        for kernel in [Kernel::AsIs, unjailed.kernel] {
            unjailed.kernel = kernel;
            for path in &paths {
                let out = capture(unjailed.command(Sandbox::On).arg("f").arg(path));
                assert!(
                    out.stdout.contains("CAUGHT MGS2001"),
                    "{kernel:?} {}: {}",
                    path.display(),
                    out.dump()
                );
                unjailed.h.assert_no_leak(&out);
            }
        }
    }
}

/// A repository whose `.git/hooks` a child of an earlier run replaced
/// with a relative link climbing out of the workspace (`../../../home`):
/// the read-only bind of the hooks followed it at set-up and showed the
/// whole home in the view. The view alone (Landlock off) must still hide
/// the key; the control, the sandbox off, reads it.
#[test]
fn a_symlinked_git_hooks_directory_shows_nothing_in_the_view() {
    for user in users() {
        let jail = Jail::new(user);
        let git = jail.h.ws_path("r/.git");
        std::fs::create_dir_all(git.join("objects")).unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        // From `ws/r/.git`: up to the harness root, which holds `home`.
        std::os::unix::fs::symlink("../../../home", git.join("hooks")).unwrap();
        jail.hand_over();
        let key = jail.h.secret("~/.ssh/id_rsa").to_string();
        let read = "cat \"$HOME/.ssh/id_rsa\"; cat r/.git/hooks/.ssh/id_rsa";
        let control = jail.shell(Sandbox::Off, read);
        assert!(control.stdout.contains(&key), "{}", control.dump());
        for sandbox in [Sandbox::JailOnly, Sandbox::On] {
            let jailed = jail.shell(sandbox, read);
            assert!(
                !jailed.stdout.contains(&key),
                "{}",
                context(user, sandbox, &jailed)
            );
            jail.h.assert_no_leak(&jailed);
            assert_eq!(jailed.status, Some(0), "{}", jailed.dump());
        }
    }
}

/// `magus sandbox lock` wrote `magus.lock.tmp-<pid>` with a plain
/// create-or-truncate, then renamed it over `magus.lock`. A child of a
/// run can leave symbolic links under those names in the workspace; the
/// user's next `magus sandbox lock` then overwrote whatever they pointed
/// at (`~/.bashrc`). Here magus runs as PID 1 of a PID namespace, so the
/// name it uses, `magus.lock.tmp-1`, is known: the planted link must be
/// consumed (gone after the lock) and `~/.bashrc` left as it was.
#[test]
fn the_lock_is_not_written_through_a_planted_link() {
    for user in users() {
        let jail = Jail::new(user);
        let bashrc = jail.h.home_path(".bashrc");
        std::fs::write(&bashrc, "# the user's own bashrc\n").unwrap();
        jail.hand_over();
        let plant =
            "for n in 1 2; do ln -s \"$HOME/.bashrc\" magus.lock.tmp-$n; done && echo PLANTED";
        let planted = jail.shell(Sandbox::On, plant);
        assert!(planted.stdout.contains("PLANTED"), "{}", planted.dump());
        // The control: the child's links lead to the bashrc, which a
        // write through them would change.
        for n in [1, 2] {
            let link = jail.h.ws_path(&format!("magus.lock.tmp-{n}"));
            assert_eq!(std::fs::canonicalize(&link).unwrap(), bashrc);
        }
        let mut wrapper = match user {
            User::Root => vec!["unshare", "--pid", "--fork"],
            User::Nobody => vec![
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "unshare",
                "--user",
                "--map-current-user",
                "--pid",
                "--fork",
            ],
        };
        wrapper.push("--");
        let mut lock = jail.h.wrapped_command(&wrapper);
        lock.arg("--workspace")
            .arg(&jail.h.ws)
            .args(["sandbox", "lock"]);
        let out = capture(&mut lock);
        assert_eq!(out.status, Some(0), "{}", out.dump());
        assert_eq!(
            std::fs::read_to_string(&bashrc).unwrap(),
            "# the user's own bashrc\n",
            "{user:?}: the lock went through the link"
        );
        let lock_file = std::fs::symlink_metadata(jail.h.ws_path("magus.lock")).unwrap();
        assert!(lock_file.is_file(), "{}", out.dump());
        assert!(
            !jail.h.ws_path("magus.lock.tmp-1").exists(),
            "magus was not PID 1, the test proves nothing: {}",
            out.dump()
        );
    }
}

#[test]
fn fs_refuses_git_at_any_depth() {
    for user in users() {
        let jail = repository_jail(user, false);
        let targets = [
            ".git/config",
            "sub/.git/config",
            ".git/modules/m/hooks/x",
            "sub/.git/hooks/y",
        ];
        let body: String = targets
            .iter()
            .map(|t| format!("    try {{ fs.write(\"{t}\", \"x\"); std.print(\"WROTE {t}\"); }} catch (e: SandboxError) {{ std.print(\"REFUSED {{e.code}} {t}\"); }}\n"))
            .collect();
        let spell = format!("import \"std\";\nimport \"fs\";\nfun main(args: [str]) > int {{\n{body}    return 0;\n}}\n");
        jail.h.write_spell("gitfs", &spell);
        jail.hand_over();
        let out = capture(jail.command(Sandbox::On).arg("gitfs"));
        for t in targets {
            assert!(
                out.stdout.contains(&format!("REFUSED MGS2002 {t}")),
                "{t}: {}",
                out.dump()
            );
        }
        let control = capture(jail.command(Sandbox::Off).arg("gitfs"));
        assert_eq!(
            control.stdout.matches("WROTE").count(),
            targets.len(),
            "{}",
            control.dump()
        );
    }
}

#[test]
fn path_directories_and_startup_files_under_rw_grants_stay_read_only() {
    let config = "sandbox:\n  enabled: true\n  allow:\n    - path: \"~\"\n      mode: rw\n";
    let script = "echo evil > ~/.local/bin/evil && echo BIN-OK; echo evil >> ~/.bashrc && echo RC-OK; \
                  echo evil >> ~/.gitconfig && echo GITCONFIG-OK; mkdir -p ~/bin && echo evil > ~/bin/evil && echo NEWBIN-OK; \
                  mkdir -p ~/.config/git && echo evil > ~/.config/git/config && echo XDGGIT-OK; \
                  mv ~/.config ~/.config-old && mkdir -p ~/.config/git && echo evil > ~/.config/git/config && echo MOVEDCONFIG-OK; \
                  echo fine > ~/notes.txt && echo NOTES-WORK";
    for user in users() {
        let setup = || {
            let mut jail = Jail::with_config(user, config);
            for file in [".local/bin/tool", ".bashrc", ".gitconfig"] {
                let path = jail.h.home_path(file);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, "#\n").unwrap();
            }
            let home = jail.h.home.display().to_string();
            jail.h.set_env(
                "PATH",
                format!("{home}/.local/bin:{home}/bin:/usr/bin:/bin"),
            );
            jail.hand_over();
            jail
        };
        let control = setup().shell(Sandbox::Off, script);
        let jail = setup();
        let jailed = jail.shell(Sandbox::On, script);
        let markers = [
            "BIN-OK",
            "RC-OK",
            "GITCONFIG-OK",
            "NEWBIN-OK",
            "XDGGIT-OK",
            "MOVEDCONFIG-OK",
        ];
        assert_attack(user, &control, &jailed, &markers, "");
        assert!(jailed.stdout.contains("NOTES-WORK"), "{}", jailed.dump());
        assert_eq!(
            std::fs::read_to_string(jail.h.home_path(".bashrc")).unwrap(),
            "#\n"
        );
    }
}

/// Start-up files and `PATH` directories a dotfile manager keeps as
/// symbolic links (`~/.bashrc -> dotfiles/bashrc`, as GNU Stow makes
/// them; home-manager links into `/nix/store`), under an `rw` grant of
/// `~`: the bind holds the file the link leads to, not the link, and a
/// child removed the link and put a file or directory of its own in its
/// place, which the user's next shell ran. After the run magus puts each
/// link back, keeps what stood there aside, and says so.
#[test]
fn linked_startup_files_and_path_directories_are_put_back_after_the_run() {
    let config = "sandbox:\n  enabled: true\n  allow:\n    - path: \"~\"\n      mode: rw\n";
    let script = "echo evil >> ~/.bashrc && echo APPEND-OK; \
                  rm ~/.bashrc && echo evil > ~/.bashrc && echo RC-OK; \
                  rm ~/bin && mkdir ~/bin && echo evil > ~/bin/ls && echo BIN-OK; \
                  rm ~/.config && mkdir -p ~/.config/git && echo evil > ~/.config/git/config && echo XDG-OK";
    for user in users() {
        let setup = || {
            let mut jail = Jail::with_config(user, config);
            std::fs::create_dir_all(jail.h.home_path("dotfiles/bin")).unwrap();
            std::fs::write(jail.h.home_path("dotfiles/bashrc"), "#\n").unwrap();
            std::os::unix::fs::symlink("dotfiles/bashrc", jail.h.home_path(".bashrc")).unwrap();
            std::os::unix::fs::symlink("dotfiles/bin", jail.h.home_path("bin")).unwrap();
            // The harness's `~/.config` (with its planted `op` store) moves
            // under the dotfiles.
            std::fs::rename(
                jail.h.home_path(".config"),
                jail.h.home_path("dotfiles/config"),
            )
            .unwrap();
            std::fs::create_dir_all(jail.h.home_path("dotfiles/config/git")).unwrap();
            std::fs::write(jail.h.home_path("dotfiles/config/git/config"), "#\n").unwrap();
            std::os::unix::fs::symlink("dotfiles/config", jail.h.home_path(".config")).unwrap();
            let home = jail.h.home.display().to_string();
            jail.h.set_env("PATH", format!("{home}/bin:/usr/bin:/bin"));
            jail.hand_over();
            jail
        };
        let control = setup();
        let control_out = control.shell(Sandbox::Off, script);
        assert!(
            control_out.stdout.contains("RC-OK")
                && control_out.stdout.contains("BIN-OK")
                && control_out.stdout.contains("XDG-OK"),
            "{}",
            control_out.dump()
        );
        assert!(control.h.home_path(".bashrc").is_file() && control.h.home_path("bin/ls").exists());
        let jail = setup();
        let jailed = jail.shell(Sandbox::On, script);
        assert!(!jailed.stdout.contains("APPEND-OK"), "{}", jailed.dump());
        let links = [
            (".bashrc", "dotfiles/bashrc"),
            ("bin", "dotfiles/bin"),
            (".config", "dotfiles/config"),
        ];
        for (link, target) in links {
            assert_eq!(
                std::fs::read_link(jail.h.home_path(link)).unwrap(),
                PathBuf::from(target),
                "{user:?}: {}",
                jailed.dump()
            );
        }
        assert_eq!(
            std::fs::read_to_string(jail.h.home_path(".bashrc")).unwrap(),
            "#\n"
        );
        assert_eq!(
            std::fs::read_to_string(jail.h.home_path("dotfiles/config/git/config")).unwrap(),
            "#\n"
        );
        assert!(!jail.h.home_path("bin/ls").exists(), "{}", jailed.dump());
        assert_eq!(
            jailed.stderr.matches("put the link back").count(),
            3,
            "{}",
            jailed.dump()
        );
    }
}

/// Start-up files of tools a red-team run found unlisted (2026-12-07),
/// under an `rw` grant of `~`: rustup's `~/.cargo/env` (sourced by the
/// `~/.profile` and `~/.bashrc` it edits), a first `~/.config/tmux/tmux.conf`
/// (`run-shell`), a program in a new `~/.local/bin` (Debian's `~/.profile`
/// puts it first on `PATH` once it exists), a D-Bus session service, and
/// `~/.inputrc` (a readline macro types a command into every bash line).
/// Each is refused or, made where nothing stood, set aside after the run;
/// the control, the sandbox off, writes them all.
#[test]
fn tool_start_up_files_under_rw_grants_stay_read_only() {
    let config = "sandbox:\n  enabled: true\n  allow:\n    - path: \"~\"\n      mode: rw\n";
    let script = "echo evil >> ~/.cargo/env && echo CARGOENV-OK; \
                  mkdir -p ~/.config/tmux && echo 'run-shell evil' > ~/.config/tmux/tmux.conf && echo TMUX-OK; \
                  mkdir -p ~/.local/bin && echo evil > ~/.local/bin/git && echo LOCALBIN-OK; \
                  mkdir -p ~/.local/share/dbus-1/services && echo evil > ~/.local/share/dbus-1/services/evil.service && echo DBUS-OK; \
                  echo evil > ~/.inputrc && echo INPUTRC-WRITTEN; \
                  echo GOFLAGS=-toolexec=evil >> ~/.config/go/env && echo GOENV-OK; \
                  mkdir -p ~/.local/share/jupyter/kernels/py && echo '{}' > ~/.local/share/jupyter/kernels/py/kernel.json && echo KERNEL-WRITTEN; \
                  mkdir -p ~/.config/tool && echo fine > ~/.config/tool/settings && echo CONFIG-WORKS";
    for user in users() {
        let setup = || {
            let jail = Jail::with_config(user, config);
            std::fs::create_dir_all(jail.h.home_path(".cargo")).unwrap();
            std::fs::write(jail.h.home_path(".cargo/env"), "#\n").unwrap();
            // Go's user settings, as `go env -w` leaves them (a red-team
            // run, 2026-12-08: `GOFLAGS=-toolexec=` ran at `go build`).
            std::fs::create_dir_all(jail.h.home_path(".config/go")).unwrap();
            std::fs::write(jail.h.home_path(".config/go/env"), "#\n").unwrap();
            std::fs::create_dir_all(jail.h.home_path(".local/share")).unwrap();
            jail.hand_over();
            jail
        };
        let control = setup().shell(Sandbox::Off, script);
        for written in ["INPUTRC-WRITTEN", "KERNEL-WRITTEN"] {
            assert!(control.stdout.contains(written), "{}", control.dump());
        }
        let jail = setup();
        let jailed = jail.shell(Sandbox::On, script);
        let markers = [
            "CARGOENV-OK",
            "TMUX-OK",
            "LOCALBIN-OK",
            "DBUS-OK",
            "GOENV-OK",
        ];
        assert_attack(user, &control, &jailed, &markers, "");
        assert!(jailed.stdout.contains("CONFIG-WORKS"), "{}", jailed.dump());
        for kept in [".cargo/env", ".config/go/env"] {
            let now = std::fs::read_to_string(jail.h.home_path(kept)).unwrap();
            assert_eq!(now, "#\n", "{user:?} {kept}");
        }
        for file in [
            ".config/tmux/tmux.conf",
            ".local/bin/git",
            ".local/share/dbus-1/services/evil.service",
            ".inputrc",
            ".local/share/jupyter/kernels/py/kernel.json",
        ] {
            assert!(
                !jail.h.home_path(file).exists(),
                "{file}: {}",
                jailed.dump()
            );
        }
    }
}

/// What the desktop session runs at the next login, under an `rw` grant
/// of `~`: an XDG autostart entry, a systemd user unit (in either place)
/// enabled by a link, an `environment.d` file setting `LD_PRELOAD`, and
/// the files the default `~/.bashrc` of Debian (`~/.bash_aliases`) and
/// Fedora (`~/.bashrc.d/*`) sources, and `~/.xprofile`. Each would run
/// unconfined without the user touching the workspace again; before, a
/// child wrote every one of them.
#[test]
fn login_autostart_places_under_rw_grants_stay_read_only() {
    let config = "sandbox:\n  enabled: true\n  allow:\n    - path: \"~\"\n      mode: rw\n";
    let script = "mkdir -p ~/.config/autostart && echo '[Desktop Entry]' > ~/.config/autostart/evil.desktop && echo AUTOSTART-OK; \
                  mkdir -p ~/.config/systemd/user/default.target.wants && echo '[Service]' > ~/.config/systemd/user/evil.service && echo UNIT-OK; \
                  mkdir -p ~/.local/share/systemd/user && echo '[Service]' > ~/.local/share/systemd/user/evil.service && echo DATAUNIT-OK; \
                  mkdir -p ~/.config/environment.d && echo LD_PRELOAD=/tmp/evil.so > ~/.config/environment.d/evil.conf && echo ENVD-OK; \
                  echo evil >> ~/.bash_aliases && echo ALIASES-OK; \
                  mkdir -p ~/.bashrc.d && echo evil > ~/.bashrc.d/evil && echo BASHRCD-OK; \
                  echo evil >> ~/.xprofile && echo XPROFILE-OK; \
                  mv ~/.config/autostart ~/.config/a && echo MOVED-OK; \
                  mkdir -p ~/.config/tool && echo fine > ~/.config/tool/settings && echo CONFIG-WORKS";
    let planted = [
        ".config/autostart/evil.desktop",
        ".config/systemd/user/evil.service",
        ".local/share/systemd/user/evil.service",
        ".config/environment.d/evil.conf",
        ".bashrc.d/evil",
    ];
    for user in users() {
        let setup = || {
            let jail = Jail::with_config(user, config);
            std::fs::create_dir_all(jail.h.home_path(".config")).unwrap();
            std::fs::create_dir_all(jail.h.home_path(".local")).unwrap();
            for file in [".bash_aliases", ".xprofile"] {
                std::fs::write(jail.h.home_path(file), "#\n").unwrap();
            }
            jail.hand_over();
            jail
        };
        let control = setup().shell(Sandbox::Off, script);
        let jail = setup();
        let jailed = jail.shell(Sandbox::On, script);
        let markers = [
            "AUTOSTART-OK",
            "UNIT-OK",
            "DATAUNIT-OK",
            "ENVD-OK",
            "ALIASES-OK",
            "BASHRCD-OK",
            "XPROFILE-OK",
            "MOVED-OK",
        ];
        assert_attack(user, &control, &jailed, &markers, "");
        assert!(jailed.stdout.contains("CONFIG-WORKS"), "{}", jailed.dump());
        for file in planted {
            assert!(
                !jail.h.home_path(file).exists(),
                "{file}: {}",
                jailed.dump()
            );
        }
        for file in [".bash_aliases", ".xprofile"] {
            assert_eq!(
                std::fs::read_to_string(jail.h.home_path(file)).unwrap(),
                "#\n"
            );
        }
    }
}

/// Build tools' user-wide configs under an `rw` grant of their directory
/// (what a build needs): a child added `build.rustc-wrapper` to
/// `~/.cargo/config.toml` or a script to `~/.gradle/init.d`, which the
/// user's next `cargo build` or Gradle build ran, outside the sandbox.
#[test]
fn build_tool_configs_under_rw_grants_stay_read_only() {
    let config = "sandbox:\n  enabled: true\n  allow:\n    - path: ~/.cargo\n      mode: rw\n    - path: ~/.gradle\n      mode: rw\n";
    let script = "printf '[build]\\nrustc-wrapper = \"/tmp/evil\"\\n' >> ~/.cargo/config.toml && echo CARGO-OK; \
                  echo 'println \"evil\"' > ~/.gradle/init.d/evil.gradle && echo GRADLE-OK; \
                  mv ~/.cargo/config.toml ~/.cargo/c && echo MOVED-OK; \
                  mkdir -p ~/.cargo/registry && echo fine > ~/.cargo/registry/f && echo REGISTRY-WORKS";
    for user in users() {
        let setup = || {
            let jail = Jail::with_config(user, config);
            std::fs::create_dir_all(jail.h.home_path(".gradle/init.d")).unwrap();
            std::fs::create_dir_all(jail.h.home_path(".cargo")).unwrap();
            std::fs::write(jail.h.home_path(".cargo/config.toml"), "#\n").unwrap();
            jail.hand_over();
            jail
        };
        let control = setup().shell(Sandbox::Off, script);
        let jail = setup();
        let jailed = jail.shell(Sandbox::On, script);
        assert_attack(
            user,
            &control,
            &jailed,
            &["CARGO-OK", "GRADLE-OK", "MOVED-OK"],
            "",
        );
        assert!(
            jailed.stdout.contains("REGISTRY-WORKS"),
            "{}",
            jailed.dump()
        );
        let kept = std::fs::read_to_string(jail.h.home_path(".cargo/config.toml")).unwrap();
        assert_eq!(kept, "#\n");
    }
}

/// Runs `python3 -c code` outside the sandbox.
fn python(code: &str, args: &[&str]) -> String {
    let out = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(code)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

const SHM_CREATE: &str = r#"
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
shm = libc.shmget(int(sys.argv[1], 0), 4096, 0o1000 | 0o666)
addr = libc.shmat(shm, None, 0)
ctypes.memmove(addr, sys.argv[2].encode(), len(sys.argv[2]))
print(shm)
"#;

/// Another session's files in `/tmp` and `/dev/shm` (a Kerberos ticket
/// cache, an application's shared memory), and its System V shared
/// memory: the jail gives the run its own `/tmp` and `/dev/shm`. Without
/// the jail (user namespaces refused, Ubuntu's default; root with every
/// namespace refused) both were the host's and granted whole: a child of
/// uid 65534 read a planted `/tmp/krb5cc_*` and appended to it. Now the
/// host's are not granted there (the run gets a directory of its own as
/// `$TMPDIR`), and a write leaves the file as it was.
#[test]
fn other_sessions_tmp_shm_and_sysv_ipc_are_unreachable() {
    for (user, kernel) in with_and_without_the_jail() {
        let mut jail = Jail::new(user);
        jail.kernel = kernel;
        let secret = unique("session-secret");
        let tmp = PathBuf::from("/tmp").join(unique("krb5cc_other"));
        let shm = PathBuf::from("/dev/shm").join(unique("other"));
        for file in [&tmp, &shm] {
            std::fs::write(file, &secret).unwrap();
            std::os::unix::fs::chown(file, Some(jail.uid()), Some(jail.uid())).unwrap();
        }
        let key = format!("0x4d4a{:04x}", std::process::id() & 0xffff);
        let id = python(SHM_CREATE, &[&key, &secret]);
        let script = format!(
            "cat {0} && echo TMP-OK; cat {1} && echo SHM-FILE-OK; \
             [ -s {0} ] && echo planted >> {0} && echo TMP-WRITE-OK",
            tmp.display(),
            shm.display()
        );
        let control = jail.shell(Sandbox::Off, &script);
        std::fs::write(&tmp, &secret).unwrap();
        let jailed = jail.shell(Sandbox::On, &script);
        let after = std::fs::read_to_string(&tmp).unwrap();
        let markers = ["TMP-OK", "SHM-FILE-OK", "TMP-WRITE-OK"];
        assert_attack(user, &control, &jailed, &markers, &secret);
        assert_eq!(after, secret, "{user:?} {kernel:?}: {}", jailed.dump());
        let control = jail.probe(Sandbox::Off, &["sysv", &key]);
        let jailed = jail.probe(Sandbox::On, &["sysv", &key]);
        let _ = Command::new("ipcrm").args(["-m", id.trim()]).status();
        let _ = std::fs::remove_file(&tmp);
        let _ = std::fs::remove_file(&shm);
        assert_attack(user, &control, &jailed, &["SHM-OK"], &secret);
    }
}

/// Starts magus in a new session keyring holding `secret` as a user key.
const WITH_KEY: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
add_key, keyctl = {"x86_64": (248, 250), "aarch64": (217, 219), "riscv64": (217, 219)}[os.uname().machine]
assert libc.syscall(keyctl, 1, None) >= 0  # KEYCTL_JOIN_SESSION_KEYRING
key = libc.syscall(add_key, b"user", b"magus-jail-secret", sys.argv[1].encode(), len(sys.argv[1]), -3)
assert key >= 0
os.execv(sys.argv[2], sys.argv[2:])
"#;

#[test]
fn the_session_keyring_is_unreachable() {
    if !users().contains(&User::Root) {
        return;
    }
    let jail = Jail::new(User::Root);
    let secret = unique("key-secret");
    let run = |sandbox: Sandbox| {
        let inner = jail.command(sandbox);
        let mut cmd = Command::new("/usr/bin/python3");
        cmd.arg("-c")
            .arg(WITH_KEY)
            .arg(&secret)
            .arg(inner.get_program());
        cmd.args(inner.get_args());
        cmd.args(["r", "/usr/bin/python3"])
            .arg(jail.h.ws_path("probe.py"));
        cmd.args(["keyring", "magus-jail-secret"]);
        cmd.env_clear();
        for (k, v) in inner.get_envs() {
            if let Some(v) = v {
                cmd.env(k, v);
            }
        }
        cmd.current_dir(&jail.h.root);
        capture(&mut cmd)
    };
    let (control, jailed) = (run(Sandbox::Off), run(Sandbox::On));
    assert_attack(User::Root, &control, &jailed, &["KEY-OK"], &secret);
}

#[test]
fn protected_mounts_cannot_be_peeled() {
    let attacks = [
        ("umount magus.yaml", "UMOUNT"),
        ("mount -o remount,rw,bind magus.yaml", "REMOUNT"),
        ("unshare -Urm sh -c 'umount magus.yaml; echo x >> magus.yaml'", "NS-UMOUNT"),
        ("unshare -Urm sh -c 'mount -o remount,rw,bind magus.yaml && echo x >> magus.yaml'", "NS-REMOUNT"),
        ("unshare -Urm sh -c 'mount --bind -o ro magus.yaml magus.yaml && mount -o remount,rw,bind magus.yaml && umount magus.yaml'", "TOOLS"),
    ];
    let script: Vec<String> = attacks
        .iter()
        .map(|(l, t)| format!("{l} && echo {t}-OK"))
        .collect();
    let script = script.join("; ");
    for user in users() {
        let jail = Jail::new(user);
        let before = std::fs::read(jail.h.ws_path("magus.yaml")).unwrap();
        let jailed = jail.shell(Sandbox::On, &script);
        assert_eq!(
            std::fs::read(jail.h.ws_path("magus.yaml")).unwrap(),
            before,
            "{}",
            jailed.dump()
        );
        let control = jail.shell(Sandbox::Off, &script);
        // Off, there is no read-only bind to peel: the control shows the
        // tools work (a user namespace, binds, remounts and umounts).
        assert!(control.stdout.contains("TOOLS-OK"), "{}", control.dump());
        for (_, tag) in attacks {
            let marker = format!("{tag}-OK");
            assert!(
                !jailed.stdout.contains(&marker),
                "{marker}: {}",
                jailed.dump()
            );
        }
    }
}

/// A child that crashes leaves no core dump: it cannot raise
/// `RLIMIT_CORE` (0, soft and hard), and the kernel writes nothing where
/// `kernel.core_pattern` is a file (this machine's `core`) or hands the
/// crash to a pipe helper (systemd-coredump, apport) that would keep the
/// child's memory outside the sandbox after the run. The control, sandbox
/// off, raises the limit and leaves a `core` file in the workspace.
#[test]
fn a_crashing_child_leaves_no_core_dump() {
    let pattern = std::fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap_or_default();
    let file_pattern = !pattern.starts_with('|');
    let script = "ulimit -c unlimited 2>/dev/null && echo LIMIT-RAISED; \
                  grep 'core file' /proc/self/limits | tr -s ' '; \
                  /usr/bin/python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGSEGV)'; \
                  ls core* >/dev/null 2>&1 && echo CORE-WRITTEN; rm -f core*";
    let markers: &[&str] = match file_pattern {
        true => &["LIMIT-RAISED", "CORE-WRITTEN"],
        false => {
            eprintln!("core_pattern is a pipe ({pattern:?}): no core file to look for");
            &["LIMIT-RAISED"]
        }
    };
    for user in users() {
        let jail = Jail::new(user);
        let control = jail.shell(Sandbox::Off, script);
        for sandbox in [Sandbox::On, Sandbox::GateOnly] {
            let jailed = jail.shell(sandbox, script);
            assert_attack(user, &control, &jailed, markers, "");
            assert!(
                jailed.stdout.contains("Max core file size 0 0 bytes"),
                "{}",
                context(user, sandbox, &jailed)
            );
            jail.h.assert_no_leak(&jailed);
        }
    }
}

#[test]
fn another_workspace_leaves_nothing_in_tmp() {
    for user in users() {
        let secret = unique("leftover");
        let (tmp, shm) = (
            format!("/tmp/{}", unique("left")),
            format!("/dev/shm/{}", unique("left")),
        );
        let write = format!("echo {secret} > {tmp} && echo {secret} > {shm}");
        let read = format!("cat {tmp} && echo READ-TMP-OK; cat {shm} && echo READ-SHM-OK");
        let (a, b) = (Jail::new(user), Jail::new(user));
        a.shell(Sandbox::Off, &write);
        let control = b.shell(Sandbox::Off, &read);
        let _ = std::fs::remove_file(&tmp);
        let _ = std::fs::remove_file(&shm);
        let wrote = a.shell(Sandbox::On, &write);
        assert!(wrote.stdout.contains("STATUS 0"), "{}", wrote.dump());
        let jailed = b.shell(Sandbox::On, &read);
        assert!(!Path::new(&tmp).exists() && !Path::new(&shm).exists());
        assert_attack(
            user,
            &control,
            &jailed,
            &["READ-TMP-OK", "READ-SHM-OK"],
            &secret,
        );
    }
}

/// Root with no capability may still write sysctls (they check only the
/// file's mode): `kernel.core_pattern` names a program the kernel runs as
/// root, outside every namespace, at the next crash. The attack writes
/// the current value back (harmless, and it proves the write). Landlock's
/// `ro` grant of `/proc` refuses it; where Landlock is missing the view's
/// read-only `/proc` must.
#[test]
fn root_cannot_write_sysctls_even_without_landlock() {
    if !users().contains(&User::Root) {
        return;
    }
    let jail = Jail::new(User::Root);
    let script = "p=$(cat /proc/sys/kernel/core_pattern) && printf '%s\\n' \"$p\" > /proc/sys/kernel/core_pattern && echo SYSCTL-OK";
    let control = jail.shell(Sandbox::Off, script);
    for sandbox in [Sandbox::On, Sandbox::JailOnly] {
        let jailed = jail.shell(sandbox, script);
        assert!(jailed.stdout.contains("STATUS "), "{}", jailed.dump());
        assert!(control.stdout.contains("SYSCTL-OK"), "{}", control.dump());
        assert!(
            !jailed.stdout.contains("SYSCTL-OK"),
            "{}",
            context(User::Root, sandbox, &jailed)
        );
    }
}

#[test]
fn fanotify_as_root_is_refused() {
    if !users().contains(&User::Root) {
        return;
    }
    let jail = Jail::new(User::Root);
    let home = jail.h.home.display().to_string();
    let control = jail.probe(Sandbox::Off, &["fanotify", &home]);
    let jailed = jail.probe(Sandbox::On, &["fanotify", &home]);
    assert_attack(User::Root, &control, &jailed, &["FANOTIFY-OK"], "");
}

#[test]
fn magus_itself_cannot_be_read_or_traced() {
    for user in users() {
        let jail = Jail::new(user);
        let control = jail.probe(Sandbox::Off, &["parent", "x"]);
        let markers = ["MEM-OK", "VMREAD-OK", "GETFD-OK", "PTRACE-OK"];
        // Without Landlock, by magus not being dumpable (`untraceable`).
        for sandbox in [Sandbox::On, Sandbox::JailOnly, Sandbox::GateOnly] {
            let jailed = jail.probe(sandbox, &["parent", "x"]);
            assert_attack(user, &control, &jailed, &markers, "");
            assert!(jailed.stdout.contains("PARENT-DONE"), "{}", jailed.dump());
        }
    }
}

const INJECT: &str = include_str!("jail/inject.py");

/// Where Landlock's ptrace scoping is missing (no Landlock: the jail alone,
/// or the gate alone), a child traced magus's own processes and made them
/// act for it (`tests/jail/inject.py`): magus proper, whose syscall guard
/// allows `openat2` (the gate needs it), created a set-uid file in the
/// workspace, root's a set-uid-root program; the survivor supervisor of a
/// run without the jail, outside the guard, connected out under
/// `network: deny` (uid 65534: root's holds capabilities a child lacks).
/// magus's processes are not dumpable (`src/enforce/linux/untraceable.rs`).
/// The control injects the same calls into magus with the sandbox off.
#[test]
fn magus_processes_cannot_be_made_to_act_for_a_child() {
    if std::env::consts::ARCH != "x86_64" {
        return; // the probe sets x86_64 registers
    }
    for user in users() {
        let jail = Jail::with_config(user, "sandbox:\n  enabled: true\n  network: deny\n");
        std::fs::write(jail.h.ws_path("inject.py"), INJECT).unwrap();
        jail.hand_over();
        let inject = |sandbox: Sandbox, args: &[&str]| {
            let mut cmd = jail.command(sandbox);
            cmd.args(["r", "/usr/bin/python3"])
                .arg(jail.h.ws_path("inject.py"))
                .args(args);
            let out = capture(&mut cmd);
            assert!(out.stdout.contains("INJECT-DONE"), "{}", out.dump());
            out
        };
        let suid = jail.h.ws_path("suid");
        let setuid = ["parent", "setuid", suid.to_str().unwrap()];
        let control = inject(Sandbox::Off, &setuid);
        assert!(
            control.stdout.contains("INJECT-SETUID-OK"),
            "{user:?} {}",
            control.dump()
        );
        std::fs::remove_file(&suid).unwrap();
        for sandbox in [Sandbox::JailOnly, Sandbox::GateOnly] {
            let out = inject(sandbox, &setuid);
            assert!(
                !out.stdout.contains("INJECT-SETUID-OK") && !suid.exists(),
                "{}",
                context(user, sandbox, &out)
            );
        }

        let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        server.set_nonblocking(true).unwrap();
        let port = server.local_addr().unwrap().port().to_string();
        let received = || -> Vec<String> {
            let mut got = Vec::new();
            while let Ok((mut stream, _)) = server.accept() {
                use std::io::Read;
                stream.set_nonblocking(false).unwrap();
                let mut text = String::new();
                let _ = stream.read_to_string(&mut text);
                got.push(text);
            }
            got
        };
        let control = inject(Sandbox::Off, &["parent", "connect", &port, "from-magus"]);
        assert!(
            control.stdout.contains("INJECT-CONNECT-OK"),
            "{}",
            control.dump()
        );
        assert_eq!(received(), ["from-magus"], "{}", control.dump());
        for target in ["parent", "grandparent"] {
            let out = inject(Sandbox::GateOnly, &[target, "connect", &port, target]);
            assert!(
                !out.stdout.contains("INJECT-CONNECT-OK"),
                "{target}: {}",
                context(user, Sandbox::GateOnly, &out)
            );
            assert!(received().is_empty(), "{target}: {}", out.dump());
        }
    }
}

#[test]
fn inherited_directory_handles_do_not_climb_out() {
    for user in users() {
        let jail = Jail::new(user);
        let secret = std::fs::read_to_string(jail.h.home_path(".ssh/id_rsa")).unwrap();
        let secret = secret.trim().to_string();
        let run = |sandbox: Sandbox| {
            let dir = std::fs::File::open(jail.h.home_path(".ssh")).unwrap();
            let fd = dir.as_raw_fd();
            let mut cmd = jail.command(sandbox);
            cmd.args(["r", "/usr/bin/python3"])
                .arg(jail.h.ws_path("probe.py"));
            cmd.args(["listdir-fd", "3", "id_rsa"]);
            // SAFETY: dup2/fcntl between fork and exec, async-signal-safe.
            // The handle is left open across exec (no close-on-exec), as
            // a careless parent would leave it.
            unsafe {
                cmd.pre_exec(move || {
                    let rc = match fd {
                        3 => libc::fcntl(3, libc::F_SETFD, 0),
                        _ => libc::dup2(fd, 3),
                    };
                    match rc {
                        -1 => Err(std::io::Error::last_os_error()),
                        _ => Ok(()),
                    }
                });
            }
            capture(&mut cmd)
        };
        let (control, jailed) = (run(Sandbox::Off), run(Sandbox::On));
        assert_attack(user, &control, &jailed, &["FD-OK"], &secret);
    }
}

#[test]
fn ordinary_work_runs_in_the_jail() {
    let lines = [
        "printf 'all:\\n\\tcc -o hello hello.c\\n' > Makefile && printf '#include <stdio.h>\\nint main(void){puts(\"hi\");return 0;}\\n' > hello.c && make -s && ./hello",
        "git init -q repo && cd repo && echo a > a && git add a && git -c user.name=t -c user.email=t@t commit -q -m first && git status --short",
        "git init -q --bare up.git && cd repo && git push -q ../up.git HEAD:refs/heads/main && git fetch -q ../up.git main",
        "/usr/bin/python3 -m venv --without-pip venv && ./venv/bin/python -c 'print(1)'",
        "mkdir -p d && echo x > d/f && tar czf d.tgz d && rm -r d && tar xzf d.tgz && test -f d/f",
        "seq 200000 | sort -r -S 64K -T /tmp | tail -n 1 | grep -qx 1",
        "echo hello > /tmp/x && grep -q hello /tmp/x",
        "ps ax | grep -q ps",
        "script -qc 'echo pty' /dev/null | grep -q pty",
        "/usr/bin/python3 -c 'import pty, os\npid, fd = pty.fork()\nif pid == 0: print(\"child\")\nelse: print(os.read(fd, 100))'",
    ];
    for user in users() {
        let jail = Jail::new(user);
        for (i, line) in lines.iter().enumerate() {
            let out = jail.shell(Sandbox::On, line);
            assert!(
                out.stdout.contains("STATUS 0"),
                "{user:?} line {i}: {line}\n{}",
                out.dump()
            );
        }
    }
}

#[test]
fn without_user_namespaces_every_run_warns_and_ipc_and_keyrings_are_closed() {
    for user in users() {
        let mut jail = Jail::new(user);
        jail.h.set_env("MAGUS_SANDBOX_USERNS", "0");
        let out = jail.shell(Sandbox::On, "echo fine");
        assert!(out.stdout.contains("STATUS 0"), "{}", out.dump());
        assert_eq!(
            out.stderr.matches("only partly in force").count(),
            1,
            "{}",
            out.dump()
        );
        assert!(out.stderr.contains("no jail"), "{}", out.dump());
        assert!(
            out.stderr.contains("MAGUS_SANDBOX_USERNS"),
            "{}",
            out.dump()
        );
        let mut check = match user {
            User::Root => jail.h.command(),
            User::Nobody => jail.h.command_as_nobody(),
        };
        let check = capture(
            check
                .arg("--workspace")
                .arg(&jail.h.ws)
                .args(["sandbox", "check"]),
        );
        assert!(
            check.stdout.contains("jail      none ("),
            "{}",
            check.dump()
        );
        assert!(
            check.stderr.contains("only partly in force"),
            "{}",
            check.dump()
        );
        let key = format!("0x4d4b{:04x}", std::process::id() & 0xffff);
        let secret = unique("nouserns-secret");
        let id = python(SHM_CREATE, &[&key, &secret]);
        let jailed = jail.probe(Sandbox::On, &["sysv", &key]);
        let control = jail.probe(Sandbox::Off, &["sysv", &key]);
        let _ = Command::new("ipcrm").args(["-m", id.trim()]).status();
        assert_attack(user, &control, &jailed, &["SHM-OK"], &secret);
    }
}

#[test]
fn sandbox_check_lists_each_carve_out_and_why() {
    let Some(user) = users().first().copied() else {
        return;
    };
    let jail = repository_jail(user, true);
    let out = capture(
        jail.h
            .command()
            .arg("--workspace")
            .arg(&jail.h.ws)
            .args(["sandbox", "check"]),
    );
    assert_eq!(out.status, Some(0), "{}", out.dump());
    for (path, why) in [
        ("magus.yaml", "magus policy file"),
        ("magus.lock", "magus policy file"),
        (".git/hooks", "git hooks/config"),
        (".git/config", "git hooks/config"),
        ("sub/.git/config", "git hooks/config"),
        (".git/modules/m/hooks", "git hooks/config"),
    ] {
        let line = format!("{}  {why}", jail.h.ws_path(path).display());
        assert!(out.stdout.contains(&line), "{line}\n{}", out.dump());
    }
}

#[test]
fn a_root_child_cannot_make_set_uid_or_file_capability_programs() {
    if !users().contains(&User::Root) {
        return;
    }
    let jail = Jail::new(User::Root);
    let script = "cp /usr/bin/id ./suid-id && chmod u+s ./suid-id && echo SUID-OK; \
                  cp /usr/bin/id ./sgid-id && chmod g+s ./sgid-id && echo SGID-OK; \
                  cp /usr/bin/id ./fcap-id && /usr/sbin/setcap cap_dac_override+ep ./fcap-id && echo FCAP-OK";
    let control = jail.shell(Sandbox::Off, script);
    for file in ["suid-id", "sgid-id", "fcap-id"] {
        let _ = std::fs::remove_file(jail.h.ws_path(file));
    }
    let jailed = jail.shell(Sandbox::On, script);
    let mut markers = vec!["SUID-OK", "SGID-OK"];
    if Path::new("/usr/sbin/setcap").exists() {
        markers.push("FCAP-OK");
    }
    assert_attack(User::Root, &control, &jailed, &markers, "");
    use std::os::unix::fs::PermissionsExt;
    for file in ["suid-id", "sgid-id"] {
        let mode = std::fs::metadata(jail.h.ws_path(file))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o6000, 0, "{file} is set-id: {}", jailed.dump());
    }
}

/// `openat2` carries its mode in memory, where seccomp cannot read it, so
/// it was the one way left for a child to create a set-uid file (which
/// runs as its owner when started later, outside the sandbox). Children
/// get `ENOSYS` for it; magus's own gate keeps it.
#[test]
fn a_child_cannot_create_a_set_uid_file_with_openat2() {
    let script = r#"python3 - <<'EOF'
import ctypes, os, struct
libc = ctypes.CDLL(None, use_errno=True)
for name, bits in (("o2-suid", 0o4755), ("o2-sgid", 0o2755)):
    how = ctypes.create_string_buffer(struct.pack("QQQ", os.O_CREAT | os.O_WRONLY, bits, 0))
    fd = libc.syscall(ctypes.c_long(437), ctypes.c_long(-100), name.encode(), how, ctypes.c_long(24))
    if fd >= 0:
        os.close(fd)
        if os.stat(name).st_mode & bits & 0o6000:
            print("MADE-" + name)
    else:
        print(name, "refused, errno", ctypes.get_errno())
EOF
echo plain-write > o2-plain && cat o2-plain"#;
    for user in users() {
        let jail = Jail::new(user);
        let control = jail.shell(Sandbox::Off, script);
        for file in ["o2-suid", "o2-sgid", "o2-plain"] {
            let _ = std::fs::remove_file(jail.h.ws_path(file));
        }
        let jailed = jail.shell(Sandbox::On, script);
        assert_attack(
            user,
            &control,
            &jailed,
            &["MADE-o2-suid", "MADE-o2-sgid"],
            "",
        );
        let refused = format!("o2-suid refused, errno {}", libc::ENOSYS);
        assert!(jailed.stdout.contains(&refused), "{}", jailed.dump());
        // Ordinary opens still work: programs fall back to `openat`.
        assert!(jailed.stdout.contains("plain-write"), "{}", jailed.dump());
        assert!(!jail.h.ws_path("o2-suid").exists(), "{}", jailed.dump());
    }
}

/// Runs `probe.py COMMAND NAME MODE` for each `(name, mode)`, in one shell
/// line that first removes what an earlier run (the control) made.
fn set_id_probes(command: &str, files: &[(&str, &str)]) -> String {
    let probes = files
        .iter()
        .map(|(name, mode)| format!("rm -f {name}; python3 probe.py {command} {name} {mode}"));
    probes.collect::<Vec<_>>().join("; ")
}

/// Runs `script` with the sandbox off, then on; asserts that the control
/// made every `set_id` file set-id and that the jailed run made none,
/// each refused with `errno`, and returns the jailed run.
fn assert_no_set_id_file(user: User, script: &str, set_id: &[&str], errno: &str) -> RunOutput {
    let jail = Jail::new(user);
    let control = jail.shell(Sandbox::Off, script);
    let jailed = jail.shell(Sandbox::On, script);
    for name in set_id {
        let made = format!("SETID-OK {name} ");
        assert!(
            control.stdout.contains(&made),
            "control: {}",
            context(user, Sandbox::Off, &control)
        );
        assert!(
            !jailed.stdout.contains(&made),
            "made: {}",
            context(user, Sandbox::On, &jailed)
        );
        let refused = format!("SETID-REFUSED {name} {errno}");
        assert!(
            jailed.stdout.contains(&refused),
            "{}",
            context(user, Sandbox::On, &jailed)
        );
        use std::os::unix::fs::PermissionsExt;
        if let Ok(meta) = std::fs::metadata(jail.h.ws_path(name)) {
            assert_eq!(
                meta.permissions().mode() & 0o6000,
                0,
                "{name}: {}",
                jailed.dump()
            );
        }
    }
    assert_eq!(jailed.status, Some(0), "{}", jailed.dump());
    jailed
}

/// `open(dir, O_TMPFILE, 04755)` makes an unnamed file with the mode, and
/// `linkat` of `/proc/self/fd/N` names it in the workspace: a set-uid
/// program that runs as its owner when started later, outside the
/// sandbox. The guard reads the mode under `O_TMPFILE` as under
/// `O_CREAT`; an ordinary `O_TMPFILE` still works.
#[test]
fn a_child_cannot_create_a_set_uid_file_with_o_tmpfile() {
    let script = set_id_probes(
        "tmpfile-setid",
        &[
            ("tf-suid", "4755"),
            ("tf-sgid", "2755"),
            ("tf-plain", "644"),
        ],
    );
    for user in users() {
        let errno = format!("open errno {}", libc::EPERM);
        let jailed = assert_no_set_id_file(user, &script, &["tf-suid", "tf-sgid"], &errno);
        assert!(
            jailed.stdout.contains("SETID-STRIPPED tf-plain"),
            "{}",
            jailed.dump()
        );
    }
}

/// io_uring's `IORING_OP_OPENAT` carries its mode in shared memory, out
/// of seccomp's sight: with it a child created set-uid files (and its
/// `SOCKET`/`CONNECT` go around the network rules). `io_uring_setup` is
/// refused for every child, under every network setting.
#[test]
fn io_uring_is_refused_so_it_cannot_create_a_set_uid_file() {
    let script = set_id_probes("uring-setid", &[("ur-suid", "4755"), ("ur-sgid", "2755")]);
    for user in users() {
        let errno = format!("io_uring_setup errno {}", libc::EPERM);
        assert_no_set_id_file(user, &script, &["ur-suid", "ur-sgid"], &errno);
    }
}

/// Mount points and options (`ro`/`rw`) from a mountinfo dump in stdout.
fn mount_options(out: &RunOutput) -> Vec<(String, bool)> {
    out.stdout
        .lines()
        .filter_map(|l| {
            let fields: Vec<&str> = l.split(' ').collect();
            let options = fields.get(5)?;
            Some((
                fields.get(4)?.to_string(),
                options.split(',').any(|o| o == "rw"),
            ))
        })
        .collect()
}

/// A recursive bind keeps each submount's flags: the host's `rw` mounts
/// under a read-only grant (`/sys/fs/cgroup` under `/sys`) are made
/// read-only in the view too, and so is the view's own root.
#[test]
fn read_only_grants_are_read_only_all_the_way_down() {
    for user in users() {
        let jail = Jail::new(user);
        let script = "cat /proc/self/mountinfo";
        let control = mount_options(&jail.shell(Sandbox::Off, script));
        let jailed_out = jail.shell(Sandbox::On, script);
        let jailed = mount_options(&jailed_out);
        let under_ro = |p: &str| {
            ["/usr", "/sys", "/etc", "/opt"]
                .iter()
                .any(|g| p.starts_with(g))
        };
        // The control: on the host some mount below /sys is writable (on
        // this machine, /sys/fs/cgroup); in the view it must show, ro.
        let writable_below: Vec<&String> = control
            .iter()
            .filter(|(p, rw)| *rw && p.starts_with("/sys/"))
            .map(|(p, _)| p)
            .collect();
        for point in &writable_below {
            let shown = jailed.iter().any(|(p, rw)| p == *point && !rw);
            assert!(
                shown,
                "{point} not read-only in the view: {}",
                jailed_out.dump()
            );
        }
        assert!(
            jailed.iter().any(|(p, _)| p == "/sys"),
            "{}",
            jailed_out.dump()
        );
        for (point, rw) in &jailed {
            let must_be_ro = point == "/" || under_ro(point);
            assert!(
                !(must_be_ro && *rw),
                "{point} is rw in the view: {}",
                jailed_out.dump()
            );
        }
    }
}

/// `tests/jail/nouserns.c`, compiled once per test binary into target/tmp.
fn nouserns_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| support::compile_c("jail/nouserns.c", "nouserns"))
}

/// A kernel that refuses namespaces for real (`EPERM` from `unshare`, not
/// `MAGUS_SANDBOX_USERNS=0`): root where even IPC and PID namespaces are
/// refused, uid 65534 where user namespaces are. Landlock, the syscall
/// guard and (for root) the emptied capability sets still hold, each
/// attack against a control run under the same kernel with the sandbox
/// off; the one warning names what is missing.
#[test]
fn refused_namespaces_leave_landlock_the_guard_and_no_capabilities() {
    let cases = [
        (User::Root, Kernel::NoNamespaces),
        (User::Nobody, Kernel::NoUserNamespaces),
    ];
    for (user, kernel) in cases.into_iter().filter(|(u, _)| users().contains(u)) {
        let mut jail = Jail::new(user);
        jail.kernel = kernel;
        let key = jail.h.home_path(".ssh/id_rsa");
        let secret = std::fs::read_to_string(&key).unwrap().trim().to_string();
        let script = format!("cat {} && echo READ-OK", key.display());
        let control = jail.shell(Sandbox::Off, &script);
        let jailed = jail.shell(Sandbox::On, &script);
        assert_attack(user, &control, &jailed, &["READ-OK"], &secret);
        assert_one_warning(
            user,
            &jailed,
            &[
                "no jail (user namespaces are refused: Operation not permitted)",
                "metadata of ungranted paths",
                "contrib/apparmor/magus",
            ],
        );
        let shm_key = format!("0x4d4c{:04x}", std::process::id() & 0xffff);
        let shm_secret = unique("refused-ns-shm");
        let id = python(SHM_CREATE, &[&shm_key, &shm_secret]);
        let control = jail.probe(Sandbox::Off, &["sysv", &shm_key]);
        let jailed = jail.probe(Sandbox::On, &["sysv", &shm_key]);
        let _ = Command::new("ipcrm").args(["-m", id.trim()]).status();
        assert_attack(user, &control, &jailed, &["SHM-OK"], &shm_secret);
        if user == User::Root {
            let cap_secret = unique("refused-ns-cap");
            let inside = jail.h.ws_path("other-user-secret");
            std::fs::write(&inside, &cap_secret).unwrap();
            std::os::unix::fs::chown(&inside, Some(4321), Some(4321)).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&inside, std::fs::Permissions::from_mode(0o600)).unwrap();
            let script = format!("cat {} && echo DAC-OK", inside.display());
            let control = jail.shell(Sandbox::Off, &script);
            let jailed = jail.shell(Sandbox::On, &script);
            assert_attack(user, &control, &jailed, &["DAC-OK"], &cap_secret);
        }
    }
}

/// Root on a kernel that refuses only user namespaces still gets the jail
/// (its mount, IPC and PID namespaces need no user namespace): the view
/// hides the user's sockets and files, metadata outside the grants stays
/// as it was, and the one warning says the mounts are not locked.
#[test]
fn root_without_user_namespaces_still_builds_the_jail() {
    if !users().contains(&User::Root) {
        return;
    }
    let mut jail = Jail::new(User::Root);
    jail.kernel = Kernel::NoUserNamespaces;
    let key = jail.h.home_path(".ssh/id_rsa");
    let secret = std::fs::read_to_string(&key).unwrap().trim().to_string();
    let k = key.display();
    let script = format!("cat {k} && echo READ-OK; chmod 777 {k} && echo CHMOD-OK");
    let before = std::fs::metadata(&key).unwrap();
    let jailed = jail.shell(Sandbox::On, &script);
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        before.mode(),
        std::fs::metadata(&key).unwrap().mode(),
        "{}",
        jailed.dump()
    );
    let control = jail.shell(Sandbox::Off, &script);
    std::fs::set_permissions(&key, before.permissions()).unwrap();
    assert_attack(
        User::Root,
        &control,
        &jailed,
        &["READ-OK", "CHMOD-OK"],
        &secret,
    );
    assert_one_warning(User::Root, &jailed, &["the jail's mounts are not locked"]);
    assert!(!jailed.stderr.contains("no jail"), "{}", jailed.dump());
    let socket_secret = unique("nouserns-socket");
    let path = PathBuf::from("/tmp").join(unique("sock"));
    let _listener = Listener::serve(std::slice::from_ref(&path), &socket_secret);
    let p = path.to_str().unwrap();
    let control = jail.probe(Sandbox::Off, &["sock", p]);
    let jailed = jail.probe(Sandbox::On, &["sock", p]);
    let _ = std::fs::remove_file(&path);
    assert_attack(User::Root, &control, &jailed, &["SOCK-OK"], &socket_secret);
}

/// `clone3` hides its flags from seccomp, so the guard makes it fail with
/// `ENOSYS` (libc then falls back to `clone`, whose flags it reads).
#[test]
fn clone3_fails_as_unimplemented() {
    for user in users() {
        let jail = Jail::new(user);
        let control = jail.probe(Sandbox::Off, &["clone3"]);
        let jailed = jail.probe(Sandbox::On, &["clone3"]);
        assert_attack(user, &control, &jailed, &["CLONE3-REACHED"], "");
        assert!(jailed.stdout.contains("CLONE3-ENOSYS"), "{}", jailed.dump());
    }
}

/// Started by a spell: forks a process that puts itself in the terminal's
/// foreground (again and again, `SIGTTOU` ignored, so it wins the terminal
/// back from the shell) and saves what is typed there to `argv[1]`, while
/// the spell ends at once.
const THIEF: &str = r#"
import os, select, signal, sys, time
for s in (signal.SIGTTOU, signal.SIGTTIN, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
if os.fork() == 0:
    os.setpgid(0, 0)
    end = time.time() + 8
    while time.time() < end:
        try:
            os.tcsetpgrp(0, os.getpgrp())
        except OSError:
            pass
        if select.select([0], [], [], 0.05)[0]:
            try:
                data = os.read(0, 100)
            except OSError:
                continue
            with open(sys.argv[1], "ab") as f:
                f.write(data)
    os._exit(0)
print("THIEF-STARTED", flush=True)
"#;

/// Plays the user's shell on a new pty: a session leader running `argv[2:]`
/// (magus) as its foreground job, taking the terminal back when it exits,
/// as bash does; then the user types a password. Prints all the terminal
/// showed.
const TERMINAL: &str = r#"
import os, pty, select, signal, subprocess, sys, time
pid, master = pty.fork()
if pid == 0:
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    job = subprocess.Popen(sys.argv[2:], process_group=0)
    os.tcsetpgrp(0, job.pid)
    job.wait()
    os.tcsetpgrp(0, os.getpgrp())
    print("MAGUS-DONE", flush=True)
    time.sleep(3)
    os._exit(0)
out, typed, start = b"", False, time.time()
while time.time() - start < 60:
    if select.select([master], [], [], 0.2)[0]:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        out += data
    if b"MAGUS-DONE" in out and not typed:
        time.sleep(1)
        os.write(master, sys.argv[1].encode() + b"\n")
        typed = True
os.waitpid(pid, 0)
print(out.decode(errors="replace"))
"#;

/// A child that takes the terminal's foreground cannot outlive magus to
/// read the line the user types next (a password at the shell's next
/// prompt): the run's PID namespace, or without one the supervisor, ends
/// it when magus ends. With the sandbox off it survives and reads it.
#[test]
fn no_child_stays_in_the_terminals_foreground_after_the_run() {
    for user in users() {
        let jail = Jail::new(user);
        std::fs::write(jail.h.ws_path("thief.py"), THIEF).unwrap();
        jail.hand_over();
        let stolen = jail.h.ws_path("stolen");
        let typed = unique("typed-password");
        let run = |sandbox: Sandbox| {
            let _ = std::fs::remove_file(&stolen);
            let mut magus = jail.command(sandbox);
            magus
                .args(["r", "/usr/bin/python3", "thief.py"])
                .arg(&stolen);
            let mut cmd = Command::new("/usr/bin/python3");
            cmd.arg("-c").arg(TERMINAL).arg(&typed);
            cmd.arg(magus.get_program()).args(magus.get_args());
            cmd.env_clear().current_dir(&jail.h.ws);
            for (k, v) in magus.get_envs() {
                if let Some(v) = v {
                    cmd.env(k, v);
                }
            }
            let out = capture(&mut cmd);
            let got = std::fs::read_to_string(&stolen).unwrap_or_default();
            (out, got)
        };
        let (control, got) = run(Sandbox::Off);
        assert!(
            control.stdout.contains("THIEF-STARTED") && got.contains(&typed),
            "control did not steal the line: {}",
            context(user, Sandbox::Off, &control)
        );
        for sandbox in [Sandbox::On, Sandbox::GateOnly] {
            let (out, got) = run(sandbox);
            assert!(
                out.stdout.contains("THIEF-STARTED") && out.stdout.contains("MAGUS-DONE"),
                "{}",
                context(user, sandbox, &out)
            );
            assert!(
                !got.contains(&typed),
                "a child read the next typed line: {}",
                context(user, sandbox, &out)
            );
        }
    }
}

/// What a root child would do to the machine's network with netlink, raw
/// and packet sockets: add a route, send an audit record, sniff or forge
/// packets. Prints `<NAME>-OK` for each that worked.
const NET_PRIVILEGE: &str = r#"
import socket, struct
def attempt(name, call):
    try:
        if call():
            print(name + "-OK")
    except OSError as e:
        print(name, e.errno)
def ack(sock, kind, flags, body):
    head = struct.pack("IHHII", 16 + len(body), kind, flags, 1, 0)
    sock.sendto(head + body, (0, 0))
    error = struct.unpack_from("i", sock.recv(4096), 16)[0]
    if error:
        raise OSError(-error, "refused")
    return True
def route():
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
    # A blackhole route to 203.0.113.0/24 (needs no interface up).
    rtm = struct.pack("BBBBBBBBI", socket.AF_INET, 24, 0, 0, 254, 3, 0, 6, 0)
    dst = struct.pack("HH", 8, 1) + bytes([203, 0, 113, 0])
    return ack(s, 24, 0x1 | 0x4 | 0x400 | 0x200, rtm + dst)
def audit():
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9)
    return ack(s, 1107, 0x1 | 0x4, b"magus-audit\0")
attempt("ROUTE", route)
attempt("AUDIT", audit)
attempt("RAW", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP) is not None)
attempt("PACKET", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0x0300) is not None)
"#;

/// A root child can neither change the network (a route by
/// `NETLINK_ROUTE`), write audit records, nor open raw or packet sockets,
/// under `network: allow` or `deny`: those need `CAP_NET_ADMIN`,
/// `CAP_AUDIT_WRITE` and `CAP_NET_RAW`, which no child holds. Every run is
/// in a throw-away network namespace (`unshare --net`), so the control,
/// sandbox off, changes no real route.
#[test]
fn a_root_child_cannot_use_network_privileges() {
    if !users().contains(&User::Root) || !Path::new("/usr/bin/unshare").exists() {
        return;
    }
    for network in ["allow", "deny"] {
        let config = format!("sandbox:\n  enabled: true\n  network: {network}\n");
        let jail = Jail::with_config(User::Root, &config);
        std::fs::write(jail.h.ws_path("net.py"), NET_PRIVILEGE).unwrap();
        let run = |off: bool| {
            let mut cmd = jail.h.wrapped_command(&["unshare", "--net"]);
            if off {
                cmd.env("MAGUS_SANDBOX_ENABLED", "0");
            }
            cmd.arg("--workspace").arg(&jail.h.ws).arg("run");
            capture(cmd.args(["r", "/usr/bin/python3", "net.py"]))
        };
        let control = run(true);
        let jailed = run(false);
        let mut markers = vec!["ROUTE-OK", "RAW-OK", "PACKET-OK"];
        // Audit records need a kernel with audit, which a container may lack.
        if control.stdout.contains("AUDIT-OK") {
            markers.push("AUDIT-OK");
        }
        assert_attack(User::Root, &control, &jailed, &markers, "");
    }
}

/// The host's own inodes that the view shows to a root child as their
/// owner: the device nodes granted `rw` (`/dev/null`, `/dev/tty`) and the
/// top-level entries of `/proc`, whose mode the kernel keeps once for
/// every `/proc` of the machine. Landlock does not handle `chmod`, so
/// before the fix a root child in the full sandbox ran `chmod 000
/// /dev/null` (every non-root program on the machine then fails), or
/// `chmod 000 /proc/meminfo` (`free`, `top` fail for every user, in every
/// container, until reboot), or set their times. The attack writes each
/// current mode back (harmless, and it proves the change); the fix binds
/// device grants and mounts `/proc` read-only (`EROFS`), while reading
/// and writing the devices work as before.
#[test]
fn a_root_child_cannot_change_the_hosts_device_nodes_or_proc_entries() {
    if !users().contains(&User::Root) {
        return;
    }
    let same_mode = |path: &str, marker: &str| {
        format!("m=$(stat -c %a {path}) && chmod \"$m\" {path} && echo {marker}; ")
    };
    let script = [
        same_mode("/dev/null", "NULL-CHMOD-OK"),
        same_mode("/dev/tty", "TTY-CHMOD-OK"),
        same_mode("/proc/meminfo", "PROC-CHMOD-OK"),
        "touch -c /dev/null && echo NULL-TOUCH-OK; ".into(),
        "echo x > /dev/null && head -c 4 /dev/zero | wc -c | grep -q 4 && echo DEVICES-WORK".into(),
    ]
    .concat();
    let ctime = || {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata("/dev/null").unwrap();
        (m.ctime(), m.ctime_nsec(), m.mtime(), m.mtime_nsec())
    };
    let markers = [
        "NULL-CHMOD-OK",
        "TTY-CHMOD-OK",
        "PROC-CHMOD-OK",
        "NULL-TOUCH-OK",
    ];
    let mut jail = Jail::new(User::Root);
    let control = jail.shell(Sandbox::Off, &script);
    for kernel in [Kernel::AsIs, Kernel::NoUserNamespaces] {
        jail.kernel = kernel;
        for sandbox in [Sandbox::On, Sandbox::JailOnly] {
            let before = ctime();
            let jailed = jail.shell(sandbox, &script);
            let what = format!("{kernel:?}, {}", context(User::Root, sandbox, &jailed));
            assert_eq!(before, ctime(), "/dev/null changed: {what}");
            assert!(jailed.stdout.contains("DEVICES-WORK"), "{what}");
            assert_attack(User::Root, &control, &jailed, &markers, "");
        }
    }
}

/// Creates the POSIX message queue `argv[1]`, owned by `argv[3]` (a uid),
/// holding the message `argv[2]`.
const MQUEUE_CREATE: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class Attr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long),
                ("msgsize", ctypes.c_long), ("curmsgs", ctypes.c_long), ("pad", ctypes.c_long * 4)]
os.setegid(int(sys.argv[3])); os.seteuid(int(sys.argv[3]))
q = libc.mq_open(sys.argv[1].encode(), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600, ctypes.byref(Attr(0, 4, 256, 0)))
assert q >= 0, ctypes.get_errno()
assert libc.mq_send(q, sys.argv[2].encode(), len(sys.argv[2]), 0) == 0, ctypes.get_errno()
"#;

/// POSIX message queues belong to the IPC namespace, as System V IPC does:
/// a queue of the user's session (an application's, holding a secret)
/// is the session's. In the jail the IPC namespace is the run's own;
/// without it the guard refused System V IPC but not `mq_open`, so in the
/// interpreter-only mode (no Landlock, user namespaces refused) a child,
/// root or not, read the session's queues, and could post to or remove
/// them.
#[test]
fn posix_message_queues_of_the_session_are_unreachable() {
    for user in users() {
        let jail = Jail::new(user);
        let name = format!("/{}", unique("mq"));
        let secret = unique("mqueue-secret");
        python(MQUEUE_CREATE, &[&name, &secret, &jail.uid().to_string()]);
        let runs: Vec<(Sandbox, RunOutput)> = [Sandbox::On, Sandbox::JailOnly, Sandbox::GateOnly]
            .into_iter()
            .map(|sandbox| (sandbox, jail.probe(sandbox, &["mqueue", &name])))
            .collect();
        let control = jail.probe(Sandbox::Off, &["mqueue", &name]);
        python(
            "import ctypes, sys; ctypes.CDLL(None).mq_unlink(sys.argv[1].encode())",
            &[&name],
        );
        for (sandbox, jailed) in &runs {
            let what = context(user, *sandbox, jailed);
            assert!(jailed.stdout.contains("STATUS "), "{what}");
            assert!(
                !jailed.stdout.contains("MQUEUE-OK"),
                "the attack worked: {what}"
            );
            assert_attack(user, &control, jailed, &["MQUEUE-OK"], &secret);
        }
    }
}

/// A child `chmod`s the terminal it inherited (its stdin, the user's own
/// pty) to `0666`: Landlock does not handle `chmod` and no mount guards a
/// descriptor opened before the jail, so other local users could then
/// read what the user types after the run, or write to the screen. The
/// process that waits outside every child puts the mode back (and warns)
/// once the last one has ended, in the jail and in every fallback.
#[test]
fn the_terminals_mode_is_put_back_after_the_run() {
    use std::os::unix::fs::PermissionsExt;
    for user in users() {
        let mut jail = Jail::new(user);
        let script = "chmod 0666 /proc/self/fd/0 && echo TTY-CHMOD-OK";
        let run = |jail: &Jail, sandbox: Sandbox| {
            let pty = nix::pty::openpty(None, None).unwrap();
            let slave =
                std::fs::read_link(format!("/proc/self/fd/{}", pty.slave.as_raw_fd())).unwrap();
            std::os::unix::fs::chown(&slave, Some(jail.uid()), None).unwrap();
            std::fs::set_permissions(&slave, std::fs::Permissions::from_mode(0o620)).unwrap();
            let mut cmd = jail.command(sandbox);
            cmd.arg("t").arg(script).stdin(Stdio::from(pty.slave));
            let out = capture(&mut cmd);
            let mode = std::fs::metadata(&slave).unwrap().permissions().mode() & 0o7777;
            drop(pty.master);
            (out, mode)
        };
        let (control, mode) = run(&jail, Sandbox::Off);
        assert!(
            control.stdout.contains("TTY-CHMOD-OK"),
            "{}",
            control.dump()
        );
        assert_eq!(mode, 0o666, "the control left the terminal as it was");
        for kernel in [Kernel::AsIs, Kernel::NoUserNamespaces] {
            jail.kernel = kernel;
            for sandbox in [Sandbox::On, Sandbox::GateOnly] {
                let (out, mode) = run(&jail, sandbox);
                let what = format!("{kernel:?}, {}", context(user, sandbox, &out));
                assert!(out.stdout.contains("TTY-CHMOD-OK"), "{what}");
                assert_eq!(mode, 0o620, "the terminal stayed {mode:o}: {what}");
                assert!(out.stderr.contains("magus put back 620"), "{what}");
            }
        }
    }
}
