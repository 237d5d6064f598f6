//! Unix sockets without the jail, through the real `magus` binary: uid
//! 65534 on a kernel that refuses user namespaces, and root where every
//! namespace is refused (`tests/jail/nouserns.c`). A real tmux server and
//! a real ssh-agent of the same user listen outside the sandbox; a child
//! reaches them with the sandbox off (the control) and not with it on,
//! unless `magus.yaml` grants the socket. Ordinary work still runs.

mod support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::runas::{
    assert_one_warning, hand_over, wrapper, Kernel, User, AS_NOBODY, SHELL_SPELL,
};
use support::{capture, Harness, RunOutput};

/// The two ways a run ends up without the jail, each as the user it
/// concerns: uid 65534 where user namespaces are refused (Ubuntu's
/// default since 23.10), root where every namespace is (a container).
fn cases() -> Vec<(User, Kernel)> {
    if !nix::unistd::geteuid().is_root() {
        return Vec::new();
    }
    vec![
        (User::Nobody, Kernel::NoUserNamespaces),
        (User::Root, Kernel::NoNamespaces),
    ]
}

fn unique(tag: &str) -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(7);
    format!("magus-{tag}-{}-{:x}", std::process::id(), h.finish())
}

/// A workspace run by `user` under a kernel that refuses namespaces.
struct Run {
    h: Harness,
    user: User,
    kernel: Kernel,
}

impl Run {
    fn new(user: User, kernel: Kernel, config: &str) -> Run {
        let h = Harness::with_config(config);
        h.write_spell("t", SHELL_SPELL);
        let run = Run { h, user, kernel };
        run.chown(&run.h.root.clone());
        run
    }

    fn chown(&self, path: &Path) {
        hand_over(path, self.user);
    }

    /// `program` run as the run's user, outside magus.
    fn as_user(&self, program: &str) -> Command {
        user_command(self.user, &self.h.home, program)
    }

    /// `sh.shell(script)` in a run, the sandbox on or off.
    fn shell(&self, on: bool, script: &str) -> RunOutput {
        let mut cmd = self.h.wrapped_command(&wrapper(self.user, self.kernel));
        if !on {
            cmd.env("MAGUS_SANDBOX_ENABLED", "0");
        }
        cmd.arg("--workspace")
            .arg(&self.h.ws)
            .args(["run", "t", script]);
        capture(&mut cmd)
    }
}

fn context(user: User, on: bool, out: &RunOutput) -> String {
    format!("{user:?}, sandbox on: {on}\n{}", out.dump())
}

/// A directory in `/tmp` (where the user's daemons keep their sockets,
/// and which the sandbox grants), owned by the run's user; removed at the
/// end.
struct SocketDir(PathBuf);

impl SocketDir {
    fn new(run: &Run) -> SocketDir {
        let dir = PathBuf::from("/tmp").join(unique("sockets"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        run.chown(&dir);
        SocketDir(dir)
    }
}

impl Drop for SocketDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A tmux server of the run's user on its own socket, with one session
/// whose shell runs what is typed into it; killed at the end.
struct Tmux {
    socket: PathBuf,
    session: String,
    server: Option<i32>,
    user: User,
    home: PathBuf,
}

impl Tmux {
    fn start(run: &Run, dir: &SocketDir) -> Tmux {
        let mut tmux = Tmux {
            socket: dir.0.join("tmux.sock"),
            session: unique("session"),
            server: None,
            user: run.user,
            home: run.h.home.clone(),
        };
        let out = tmux
            .command()
            .args(["-f", "/dev/null", "new-session", "-d", "-s", &tmux.session])
            .arg("/bin/sh")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let pid = tmux
            .command()
            .args(["display-message", "-p", "#{pid}"])
            .output();
        tmux.server = String::from_utf8_lossy(&pid.unwrap().stdout)
            .trim()
            .parse()
            .ok();
        assert!(tmux.server.is_some(), "the tmux server's pid");
        tmux
    }

    fn command(&self) -> Command {
        let mut cmd = user_command(self.user, &self.home, "tmux");
        cmd.arg("-S").arg(&self.socket);
        cmd
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self
            .command()
            .arg("kill-server")
            .stderr(Stdio::null())
            .status();
        if let Some(pid) = self.server {
            let pid = nix::unistd::Pid::from_raw(pid);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// `program` run as `user`, outside magus, with a plain environment.
fn user_command(user: User, home: &Path, program: &str) -> Command {
    let mut cmd = match user {
        User::Nobody => {
            let mut c = Command::new(AS_NOBODY[0]);
            c.args(&AS_NOBODY[1..]).arg(program);
            c
        }
        User::Root => Command::new(program),
    };
    cmd.env_clear()
        .env("HOME", home)
        .env("PATH", support::DEFAULT_PATH)
        .env("SHELL", "/bin/sh")
        .current_dir(home);
    cmd
}

/// A real ssh-agent of the run's user (`-D`: in the foreground, so it is
/// this test's child), holding one key whose comment is `comment`.
struct Agent {
    socket: PathBuf,
    child: Child,
}

impl Agent {
    fn start(run: &Run, dir: &SocketDir, comment: &str) -> Agent {
        let socket = dir.0.join("agent.sock");
        let child = run
            .as_user("ssh-agent")
            .args(["-D", "-a"])
            .arg(&socket)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let agent = Agent { socket, child };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !agent.socket.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let key = dir.0.join("key");
        let made = run
            .as_user("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"])
            .arg(&key)
            .status()
            .unwrap();
        assert!(made.success());
        let added = run
            .as_user("ssh-add")
            .env("SSH_AUTH_SOCK", &agent.socket)
            .arg(&key)
            .output()
            .unwrap();
        assert!(added.status.success(), "{added:?}");
        agent
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits (a bounded while) for the shell in the tmux session to have run
/// what was typed: a file appears.
fn appears(path: &Path) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if path.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// The red team's attacks on a tmux server and an ssh-agent of the same
/// user: typed commands run outside the sandbox, and the agent lists (and
/// would sign with) its keys. Each succeeds with the sandbox off and fails
/// with it on, refused with `EPERM` by the syscall guard, and the run's
/// one warning says so.
#[test]
fn the_users_tmux_server_and_ssh_agent_cannot_be_reached() {
    for (user, kernel) in cases() {
        let run = Run::new(user, kernel, support::SANDBOX_ON);
        let dir = SocketDir::new(&run);
        let tmux = Tmux::start(&run, &dir);
        let comment = unique("agent-key");
        let agent = Agent::start(&run, &dir, &comment);
        // Outside every grant: only the server's own shell can write it.
        let marker = run.h.home_path(&unique("typed"));
        let script = format!(
            "tmux -S {sock} send-keys -t {session} 'touch {marker}' Enter && echo SENT-OK; \
             tmux -S {sock} display-message -p 'TMUX-#{{session_name}}'; \
             SSH_AUTH_SOCK={agent} ssh-add -l && echo AGENT-OK",
            sock = tmux.socket.display(),
            session = tmux.session,
            marker = marker.display(),
            agent = agent.socket.display(),
        );
        let shown = format!("TMUX-{}", tmux.session);
        let jailed = run.shell(true, &script);
        for leaked in ["SENT-OK", "AGENT-OK", shown.as_str(), comment.as_str()] {
            assert!(
                !jailed.stdout.contains(leaked),
                "the attack worked ({leaked}): {}",
                context(user, true, &jailed)
            );
        }
        assert!(jailed.stdout.contains("STATUS "), "{}", jailed.dump());
        assert!(
            jailed.stderr.contains("Operation not permitted"),
            "refused by the guard: {}",
            jailed.dump()
        );
        assert!(!appears_soon(&marker), "{}", jailed.dump());
        assert_one_warning(
            user,
            &jailed,
            &["unix sockets (stream socketpairs aside)", "command line"],
        );
        let control = run.shell(false, &script);
        for worked in ["SENT-OK", "AGENT-OK", shown.as_str(), comment.as_str()] {
            assert!(
                control.stdout.contains(worked),
                "control lacks {worked}: {}",
                context(user, false, &control)
            );
        }
        assert!(
            appears(&marker),
            "the typed command ran: {}",
            control.dump()
        );
        drop(agent);
        drop(tmux);
    }
}

/// Whether `path` shows up within a short while (for the run whose typed
/// command must not have been sent; a real send shows within
/// milliseconds, see [`appears`]).
fn appears_soon(path: &Path) -> bool {
    std::thread::sleep(Duration::from_millis(300));
    path.exists()
}

/// A datagram `socketpair` reaches any datagram socket by path
/// (`sendto` names it, connected or not): `/dev/log`, journald, a
/// daemon's control socket. Refused with the sandbox on; the control
/// delivers.
#[test]
fn a_datagram_socketpair_cannot_send_to_a_path() {
    let code = "import socket, sys\n\
                a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)\n\
                a.sendto(sys.argv[2].encode(), sys.argv[1])\n\
                print('DGRAM-OK')";
    for (user, kernel) in cases() {
        let run = Run::new(user, kernel, support::SANDBOX_ON);
        let dir = SocketDir::new(&run);
        let path = dir.0.join("dgram.sock");
        let receiver = UnixDatagram::bind(&path).unwrap();
        receiver.set_nonblocking(true).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
        let secret = unique("datagram");
        let script = format!("/usr/bin/python3 -c \"{code}\" {} {secret}", path.display());
        let jailed = run.shell(true, &script);
        assert!(
            !jailed.stdout.contains("DGRAM-OK"),
            "{}",
            context(user, true, &jailed)
        );
        assert!(
            jailed.stderr.contains("PermissionError"),
            "{}",
            jailed.dump()
        );
        assert_eq!(received(&receiver), None, "{}", jailed.dump());
        let control = run.shell(false, &script);
        assert!(
            control.stdout.contains("DGRAM-OK"),
            "{}",
            context(user, false, &control)
        );
        assert_eq!(received(&receiver).as_deref(), Some(secret.as_str()));
    }
}

fn received(socket: &UnixDatagram) -> Option<String> {
    let mut buf = [0u8; 256];
    let n = socket.recv(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf[..n]).into_owned())
}

/// An `allow:` entry naming the tmux socket lets the child reach it with
/// the sandbox on, and the warning says what that opens.
#[test]
fn a_socket_granted_by_name_can_be_reached() {
    for (user, kernel) in cases() {
        let staging = Run::new(user, kernel, support::SANDBOX_ON);
        let dir = SocketDir::new(&staging);
        let tmux = Tmux::start(&staging, &dir);
        let config = format!(
            "sandbox:\n  enabled: true\n  allow:\n    - path: {}\n      mode: rw\n",
            tmux.socket.display()
        );
        staging.h.write_config(&config);
        staging.chown(&staging.h.ws.join("magus.yaml"));
        let script = format!(
            "tmux -S {} display-message -p 'TMUX-#{{session_name}}'",
            tmux.socket.display()
        );
        let out = staging.shell(true, &script);
        assert!(
            out.stdout.contains(&format!("TMUX-{}", tmux.session)),
            "{}",
            context(user, true, &out)
        );
        let named = format!("grants the socket {}", tmux.socket.display());
        assert_one_warning(user, &out, &[&named, "every socket the user can"]);
    }
}

/// Ordinary work under the refusal: user and group names (glibc asks nscd
/// and systemd's NSS modules over unix sockets first), git, Python's
/// socket module and its stream pairs, a pipeline, and curl to a loopback
/// HTTP server under `network: allow`.
#[test]
fn ordinary_work_runs_without_unix_sockets() {
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    let body = unique("http-body");
    let served = body.clone();
    std::thread::spawn(move || {
        for mut stream in server.incoming().flatten() {
            let mut request = [0u8; 1024];
            let _ = stream.read(&mut request);
            let reply = format!(
                "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{served}",
                served.len()
            );
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    let lines = [
        "id && id -un && getent passwd root | grep -q ^root: && getent hosts localhost".to_string(),
        // Without the jail the host's `/tmp` is not granted: temporary
        // files go in the run's own `$TMPDIR`.
        "ls -l /usr >/dev/null && t=$(mktemp) && ls -l \"$t\" >/dev/null && ls -l /usr/bin/passwd | grep -q ' root root '"
            .to_string(),
        "git init -q repo && cd repo && echo a > a && git add a && \
         git -c user.name=t -c user.email=t@t commit -q -m first && git status --short && git log --oneline | grep -q first"
            .to_string(),
        "/usr/bin/python3 -c 'import socket; a, b = socket.socketpair(); a.send(b\"x\"); assert b.recv(1) == b\"x\"'"
            .to_string(),
        "seq 20000 | sort -rn | head -n 1 | grep -qx 20000".to_string(),
        format!("curl -sS --noproxy '*' http://127.0.0.1:{port}/ | grep -q {body}"),
    ];
    for (user, kernel) in cases() {
        let run = Run::new(user, kernel, support::SANDBOX_ON);
        for (i, line) in lines.iter().enumerate() {
            let out = run.shell(true, line);
            assert!(
                out.stdout.contains("STATUS 0"),
                "{user:?} line {i}: {line}\n{}",
                out.dump()
            );
        }
    }
}

/// magus itself needs no unix socket of its own once the guard is in
/// force (its channels are socketpairs made before): a nested magus, a
/// child of the run and so under the refusal, runs a spell whose child
/// is refused in turn. The control: the same spell's child makes its
/// socket with the sandbox off.
#[test]
fn a_nested_magus_runs_under_the_refusal() {
    let magus = env!("CARGO_BIN_EXE_magus");
    let config =
        format!("sandbox:\n  enabled: true\n  allow:\n    - path: {magus}\n      mode: ro\n");
    let inner = "/usr/bin/python3 -c \"import socket; socket.socket(socket.AF_UNIX); print(\\\"MADE-OK\\\")\"";
    for (user, kernel) in cases() {
        let run = Run::new(user, kernel, &config);
        let ws = run.h.ws.display().to_string();
        let script = format!("{magus} --workspace {ws} run t '{inner}' && echo NESTED-OK");
        let out = run.shell(true, &script);
        assert!(
            out.stdout.contains("NESTED-OK"),
            "{}",
            context(user, true, &out)
        );
        assert!(
            out.stdout.contains("STATUS 1"),
            "the inner child: {}",
            out.dump()
        );
        assert!(!out.stdout.contains("MADE-OK"), "{}", out.dump());
        let control = run.shell(false, &script);
        assert!(
            control.stdout.contains("MADE-OK"),
            "{}",
            context(user, false, &control)
        );
    }
}
