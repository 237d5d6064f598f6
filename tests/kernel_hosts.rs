//! `network: {hosts: [...]}` through the real `magus` binary, as root and as
//! uid 65534: children reach a listed host through magus's proxy (HTTP,
//! CONNECT, SOCKS5, git over dumb HTTP), an unlisted one gets MGS2011, and
//! every way around the proxy fails without a byte reaching the server.
//! Every server is started here, on 127.0.0.1; each attack has a control
//! run with the sandbox off that does reach the server.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use support::counting_server::CountingServer;
use support::{can_switch_user, capture, open_to_everyone, Harness, RunOutput};

/// A static file server on 127.0.0.1 that counts every TCP connection it
/// accepts, so "nothing reached it" is a number.
struct FileServer;

impl FileServer {
    fn start(root: PathBuf) -> CountingServer {
        CountingServer::start(move |stream| serve_one(stream, &root))
    }
}

fn serve_one(stream: TcpStream, root: &Path) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut first = String::new();
    if reader.read_line(&mut first).is_err() {
        return;
    }
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) if line == "\r\n" => break,
            Ok(_) => {}
        }
    }
    let path = first.split_whitespace().nth(1).unwrap_or("/");
    let path = path.split('?').next().unwrap_or("/");
    let file = root.join(path.trim_start_matches('/'));
    let mut stream = stream;
    let (status, body) = match std::fs::read(&file) {
        Ok(body) if file.is_file() => ("200 OK", body),
        _ if path == "/" => ("200 OK", b"hello from the test server\n".to_vec()),
        _ => ("404 Not Found", b"not found\n".to_vec()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&body);
}

/// A python3 HTTPS server with a self-signed certificate for `localhost`.
struct TlsServer {
    child: Child,
    port: u16,
}

impl TlsServer {
    fn start(dir: &Path) -> Option<TlsServer> {
        let (key, cert) = (dir.join("key.pem"), dir.join("cert.pem"));
        let made = Command::new("openssl")
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            ])
            .args(["-subj", "/CN=localhost", "-keyout"])
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .ok()?;
        assert!(made.success(), "openssl req failed");
        let script = format!(
            "import http.server, ssl\n\
             s = http.server.HTTPServer(('127.0.0.1', 0), http.server.SimpleHTTPRequestHandler)\n\
             c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n\
             c.load_cert_chain({:?}, {:?})\n\
             s.socket = c.wrap_socket(s.socket, server_side=True)\n\
             print(s.server_address[1], flush=True)\n\
             s.serve_forever()\n",
            cert.display().to_string(),
            key.display().to_string()
        );
        let mut child = Command::new("/usr/bin/python3")
            .args(["-c", &script])
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the TLS server's port");
        Some(TlsServer { child, port })
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn hosts_config(hosts: &str) -> String {
    format!("sandbox:\n  enabled: true\n  network:\n    hosts: {hosts}\n")
}

const SANDBOX_OFF: &str = "sandbox:\n  enabled: false\n";

/// A spell running the workspace's `net.sh` and returning its status; the
/// `sh.run` call is on line 3, column 12.
const SHELL_SPELL: &str =
    "import \"sh\";\nfun main(args: [str]) > int {\n    return sh.run([\"/bin/sh\", \"net.sh\"]);\n}\n";

/// Who runs magus.
#[derive(Debug, Clone, Copy)]
enum User {
    Caller,
    Nobody,
}

/// How the children's network is held: in the loopback-only network
/// namespace (the proxy listens inside it), or, with user namespaces
/// refused (`MAGUS_SANDBOX_USERNS=0`), the partial mode of Landlock and
/// seccomp on the host's network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Namespace,
    Partial,
}

/// Who runs magus, and in which mode.
#[derive(Debug, Clone, Copy)]
struct Case {
    user: User,
    mode: Mode,
}

impl Case {
    const CALLER: Case = Case {
        user: User::Caller,
        mode: Mode::Namespace,
    };
    const CALLER_PARTIAL: Case = Case {
        user: User::Caller,
        mode: Mode::Partial,
    };

    /// The run said its mode: nothing in the namespace, the partial line
    /// (and why) without one.
    fn assert_mode_said(self, out: &RunOutput) {
        let partial = out.stderr.contains("network by host name is partial");
        match self.mode {
            Mode::Namespace => assert!(!partial, "{self:?}: {}", out.dump()),
            Mode::Partial => assert!(
                partial
                    && out
                        .stderr
                        .contains("user namespaces disabled by MAGUS_SANDBOX_USERNS=0"),
                "{self:?}: {}",
                out.dump()
            ),
        }
    }
}

/// Every user and mode the tests run in.
fn cases() -> Vec<Case> {
    let users = if can_switch_user() {
        vec![User::Caller, User::Nobody]
    } else {
        eprintln!("uid 65534 part skipped: not root, or no setpriv");
        vec![User::Caller]
    };
    users
        .into_iter()
        .flat_map(|user| {
            [Mode::Namespace, Mode::Partial]
                .into_iter()
                .map(move |mode| Case { user, mode })
        })
        .collect()
}

/// `magus [extra] run NAME` as the case's user, in its mode.
fn run_as(h: &Harness, case: Case, name: &str, extra: &[&str]) -> RunOutput {
    open_to_everyone(&h.root);
    let magus = h.command();
    let mut cmd = match case.user {
        User::Caller => h.command(),
        User::Nobody => {
            let mut cmd = Command::new("setpriv");
            cmd.env_clear()
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(env!("CARGO_BIN_EXE_magus"))
                .current_dir(&h.root);
            for (k, v) in magus.get_envs() {
                if let Some(v) = v {
                    cmd.env(k, v);
                }
            }
            cmd
        }
    };
    if case.mode == Mode::Partial {
        cmd.env("MAGUS_SANDBOX_USERNS", "0");
    }
    cmd.arg("--workspace")
        .arg(&h.ws)
        .args(extra)
        .args(["run", name]);
    capture(&mut cmd)
}

/// Runs `script` in `case` under `config` and returns the run.
fn run_script(config: &str, script: &str, case: Case, extra: &[&str]) -> RunOutput {
    let h = Harness::with_config(config);
    h.write_spell("net", SHELL_SPELL);
    std::fs::write(h.ws_path("net.sh"), script).unwrap();
    let out = run_as(&h, case, "net", extra);
    h.assert_no_leak(&out);
    out
}

fn curl() -> &'static str {
    "curl -fsS --max-time 10"
}

#[test]
fn a_listed_host_is_reached_over_http_connect_and_socks5() {
    let site = tempfile::tempdir().unwrap();
    let server = FileServer::start(site.path().to_path_buf());
    let tls = TlsServer::start(site.path()).expect("openssl and python3 for the TLS server");
    let p = server.port;
    let script = format!(
        "{c} http://localhost:{p}/ && {c} -k https://localhost:{q}/ -o /dev/null -w 'tls %{{http_code}}\\n' \
         && if [ -n \"$ALL_PROXY\" ]; then {c} --socks5-hostname 127.0.0.1:${{ALL_PROXY##*:}} http://localhost:{p}/; \
         else {c} http://localhost:{p}/; fi",
        c = curl(),
        q = tls.port
    );
    for case in cases() {
        let control = run_script(SANDBOX_OFF, &script, case, &[]);
        assert_eq!(control.status, Some(0), "control: {}", control.dump());
        let before = server.hits();
        let out = run_script(
            &hosts_config("[localhost]"),
            &script,
            case,
            &["--message-format", "json"],
        );
        assert_eq!(out.status, Some(0), "{case:?}: {}", out.dump());
        assert_eq!(
            out.stdout.matches("hello from the test server").count(),
            2,
            "{}",
            out.dump()
        );
        assert!(out.stdout.contains("tls 200"), "{}", out.dump());
        assert_eq!(server.hits() - before, 2, "{}", out.dump());
        let egress = egress_rows(&out.stderr);
        let row = egress
            .iter()
            .find(|r| r["host"] == "localhost" && r["port"] == p)
            .unwrap_or_else(|| panic!("no egress row: {}", out.dump()));
        assert_eq!(row["connections"], 2, "{}", out.dump());
        assert!(row["received"].as_u64().unwrap() > 50, "{}", out.dump());
        case.assert_mode_said(&out);
    }
}

/// The rows of the JSON egress summary.
fn egress_rows(stderr: &str) -> Vec<serde_json::Value> {
    stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["kind"] == "egress")
        .and_then(|v| v["egress"].as_array().cloned())
        .unwrap_or_default()
}

#[test]
fn git_clones_a_dumb_http_repository_through_the_proxy() {
    let site = tempfile::tempdir().unwrap();
    support::dumb_http_repository(site.path(), "cloned through the proxy\n");
    let server = FileServer::start(site.path().to_path_buf());
    let script = format!(
        "git clone -q http://localhost:{}/repo.git clone && cat clone/README",
        server.port
    );
    for case in cases() {
        let out = run_script(&hosts_config("[localhost]"), &script, case, &[]);
        assert_eq!(out.status, Some(0), "{case:?}: {}", out.dump());
        assert!(
            out.stdout.contains("cloned through the proxy"),
            "{}",
            out.dump()
        );
    }
}

#[test]
fn an_unlisted_literal_is_refused_with_mgs2011_at_the_spell_line() {
    let server = FileServer::start(tempfile::tempdir().unwrap().keep());
    let script = format!("{} http://127.0.0.1:{}/", curl(), server.port);
    for case in cases() {
        let control = run_script(SANDBOX_OFF, &script, case, &[]);
        assert!(
            control.stdout.contains("hello from the test server"),
            "control: {}",
            control.dump()
        );
        let before = server.hits();
        let out = run_script(&hosts_config("[localhost]"), &script, case, &[]);
        assert_ne!(out.status, Some(0), "{}", out.dump());
        assert!(!out.stdout.contains("hello"), "{}", out.dump());
        assert_eq!(
            server.hits(),
            before,
            "the server was reached: {}",
            out.dump()
        );
        assert!(
            out.stderr.contains(&format!(
                "warning[MGS2011]: connection to `127.0.0.1:{}`",
                server.port
            )),
            "{}",
            out.dump()
        );
        assert!(out.stderr.contains("net.buzz:3:12"), "{}", out.dump());
        assert!(
            out.stderr
                .contains(&format!("- \"127.0.0.1:{}\"", server.port)),
            "{}",
            out.dump()
        );
        assert!(
            out.stderr.contains("curl: (22)") && out.stderr.contains("403"),
            "{}",
            out.dump()
        );
        let json = run_script(
            &hosts_config("[localhost]"),
            &script,
            case,
            &["--message-format", "json"],
        );
        let d = json
            .stderr
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|v| v["code"] == "MGS2011")
            .unwrap_or_else(|| panic!("no JSON MGS2011: {}", json.dump()));
        assert_eq!(d["spell"]["line"], 3, "{d}");
        assert!(d["help"].as_str().unwrap().contains("hosts:"), "{d}");
    }
}

/// A spell child that connects straight to 127.0.0.1:PORT (TCP), sends a
/// UDP datagram to it, and asks the proxy for an unlisted name.
fn around_the_proxy(tcp_port: u16, udp_port: u16) -> String {
    let py = format!(
        "import socket, os\n\
         s = socket.socket(); s.settimeout(3)\n\
         print('tcp', s.connect_ex(('127.0.0.1', {tcp_port})))\n\
         try:\n    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.sendto(b'leak', ('127.0.0.1', {udp_port})); print('udp sent')\n\
         except OSError as e:\n    print('udp refused', e.errno)\n\
         p = os.environ.get('HTTP_PROXY', '')\n\
         if p:\n    h, port = p.rsplit('/', 1)[1].split(':')\n    c = socket.create_connection((h, int(port)))\n    c.sendall(b'CONNECT evil.example:{tcp_port} HTTP/1.1\\r\\nHost: evil.example\\r\\n\\r\\n')\n    print('connect', c.recv(100).split(b'\\r\\n')[0].decode())\n"
    );
    format!(
        "{c} --noproxy '*' http://localhost:{tcp_port}/; echo noproxy=$?; /usr/bin/python3 -c {}",
        shell_quote(&py),
        c = curl()
    )
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

#[test]
fn going_around_the_proxy_fails_and_nothing_reaches_the_server() {
    let server = FileServer::start(tempfile::tempdir().unwrap().keep());
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let script = around_the_proxy(server.port, udp_port);
    let mut buf = [0u8; 16];
    for case in cases() {
        let before = server.hits();
        let control = run_script(SANDBOX_OFF, &script, case, &[]);
        assert!(
            control.stdout.contains("noproxy=0"),
            "control: {}",
            control.dump()
        );
        assert!(
            control.stdout.contains("tcp 0"),
            "control: {}",
            control.dump()
        );
        assert!(
            control.stdout.contains("udp sent"),
            "control: {}",
            control.dump()
        );
        assert_eq!(
            udp.recv(&mut buf).ok(),
            Some(4),
            "control UDP did not arrive"
        );
        assert_eq!(server.hits() - before, 2, "control: {}", control.dump());

        let before = server.hits();
        let out = run_script(&hosts_config("[localhost]"), &script, case, &[]);
        assert!(!out.stdout.contains("noproxy=0"), "{}", out.dump());
        assert!(!out.stdout.contains("tcp 0"), "{}", out.dump());
        // In the namespace a datagram may be sent, to the namespace's own
        // loopback; without one, seccomp refuses the socket.
        if case.mode == Mode::Partial {
            assert!(out.stdout.contains("udp refused"), "{}", out.dump());
        }
        assert!(
            out.stdout.contains("connect HTTP/1.1 403 Forbidden"),
            "{}",
            out.dump()
        );
        assert!(
            udp.recv(&mut buf).is_err(),
            "a datagram got out: {}",
            out.dump()
        );
        assert_eq!(
            server.hits(),
            before,
            "the server was reached: {}",
            out.dump()
        );
        assert!(out.stderr.contains("`evil.example:"), "{}", out.dump());
        case.assert_mode_said(&out);
    }
}

#[test]
fn a_port_restriction_refuses_other_ports() {
    let dir = tempfile::tempdir().unwrap().keep();
    let (listed, other) = (FileServer::start(dir.clone()), FileServer::start(dir));
    let script = format!(
        "{c} http://localhost:{}/; {c} http://localhost:{}/; echo other=$?",
        listed.port,
        other.port,
        c = curl()
    );
    let config = hosts_config(&format!("[\"localhost:{}\"]", listed.port));
    for case in cases() {
        let before = other.hits();
        let out = run_script(&config, &script, case, &["-v"]);
        assert_eq!(
            out.stdout.matches("hello from the test server").count(),
            1,
            "{}",
            out.dump()
        );
        assert_eq!(other.hits(), before, "{}", out.dump());
        assert!(
            out.stderr.contains("listed for other ports only"),
            "{}",
            out.dump()
        );
        assert!(
            out.stderr
                .contains(&format!("- \"localhost:{}\"", other.port)),
            "{}",
            out.dump()
        );
        // `-v` ends the run with the egress summary, per host and port.
        let summary = [
            format!("localhost:{}  1 connection(s)", listed.port),
            format!(
                "localhost:{}  0 connection(s), 0 B out, 0 B in, 1 refused",
                other.port
            ),
        ];
        for line in summary {
            assert!(out.stderr.contains(&line), "{line}\n{}", out.dump());
        }
        let quiet = run_script(&config, &script, case, &[]);
        assert!(!quiet.stderr.contains("network egress"), "{}", quiet.dump());
    }
}

/// The DNS-rebinding rule: `127.1` is a *name* (not an IP literal) that
/// resolves to 127.0.0.1; listed alone it is refused, and MGS2011 says
/// where it led, which rule that broke, and the entry that allows it;
/// listed with that entry it is reached.
#[test]
fn a_listed_name_resolving_to_loopback_is_refused_unless_its_address_is_listed() {
    let server = FileServer::start(tempfile::tempdir().unwrap().keep());
    let py = format!(
        "import os, socket\n\
         h, port = os.environ['HTTP_PROXY'].rsplit('/', 1)[1].split(':')\n\
         c = socket.create_connection((h, int(port)))\n\
         c.sendall(b'GET http://127.1:{p}/ HTTP/1.1\\r\\nHost: 127.1\\r\\n\\r\\n')\n\
         print(b''.join(iter(lambda: c.recv(4096), b'')).decode(errors='replace'))\n",
        p = server.port
    );
    let script = format!("/usr/bin/python3 -c {}", shell_quote(&py));
    for case in cases() {
        let before = server.hits();
        let out = run_script(&hosts_config("[\"127.1\"]"), &script, case, &[]);
        assert!(out.stdout.contains("403 Forbidden"), "{}", out.dump());
        assert!(out.stdout.contains("DNS-rebinding rule"), "{}", out.dump());
        assert_eq!(server.hits(), before, "{}", out.dump());
        assert!(
            out.stderr
                .contains("warning[MGS2011]: connection to `127.1:"),
            "{}",
            out.dump()
        );
        let said = "`127.1` resolved to 127.0.0.1, in 127.0.0.0/8 (loopback): \
                    a listed name may not lead to a private or reserved address";
        assert!(out.stderr.contains(said), "{}", out.dump());
        assert!(
            out.stdout.contains(said),
            "the 403 says it too: {}",
            out.dump()
        );
        let entry = format!("\"127.0.0.1:{}\"", server.port);
        assert!(out.stderr.contains(&format!("- {entry}")), "{}", out.dump());
        // The entry MGS2011 offers is enough.
        let config = hosts_config(&format!("[\"127.1\", {entry}]"));
        let allowed = run_script(&config, &script, case, &[]);
        assert!(
            allowed.stdout.contains("hello from the test server"),
            "{}",
            allowed.dump()
        );
    }
}

#[test]
fn without_landlock_the_partial_line_says_tcp_is_open() {
    let server = FileServer::start(tempfile::tempdir().unwrap().keep());
    let script = format!("{} --noproxy '*' http://127.0.0.1:{}/", curl(), server.port);
    let h = Harness::with_config(&hosts_config("[localhost]"));
    h.write_spell("net", SHELL_SPELL);
    std::fs::write(h.ws_path("net.sh"), &script).unwrap();
    let mut forced_off = h.command();
    forced_off
        .env("MAGUS_SANDBOX_LANDLOCK", "0")
        .env("MAGUS_SANDBOX_USERNS", "0")
        .arg("--workspace")
        .arg(&h.ws)
        .args(["run", "net"]);
    let out = capture(&mut forced_off);
    assert!(
        out.stderr.contains("Landlock is off: a child that ignores the proxy variables can connect anywhere over TCP"),
        "{}",
        out.dump()
    );
    // The warning is true: the direct connect does get through.
    assert!(
        out.stdout.contains("hello from the test server"),
        "{}",
        out.dump()
    );
    let on = run_script(
        &hosts_config("[localhost]"),
        &script,
        Case::CALLER_PARTIAL,
        &[],
    );
    assert!(
        on.stderr
            .contains("Landlock limits TCP connect to the proxy's ports"),
        "{}",
        on.dump()
    );
    assert!(!on.stdout.contains("hello"), "{}", on.dump());
    // With a namespace, Landlock off changes nothing for the network: the
    // children's namespace has no route to the server.
    let before = server.hits();
    let mut namespaced = h.command();
    namespaced
        .env("MAGUS_SANDBOX_LANDLOCK", "0")
        .arg("--workspace")
        .arg(&h.ws)
        .args(["run", "net"]);
    let out = capture(&mut namespaced);
    assert!(!out.stdout.contains("hello"), "{}", out.dump());
    assert!(
        !out.stderr.contains("network by host name is partial"),
        "{}",
        out.dump()
    );
    assert_eq!(server.hits(), before, "{}", out.dump());
}

#[test]
fn socks5_refuses_an_unlisted_name_with_not_allowed_and_mgs2011() {
    let server = FileServer::start(tempfile::tempdir().unwrap().keep());
    let script = format!(
        "{} --socks5-hostname 127.0.0.1:${{ALL_PROXY##*:}} http://unlisted.example:{}/",
        curl(),
        server.port
    );
    for case in cases() {
        let before = server.hits();
        let out = run_script(&hosts_config("[localhost]"), &script, case, &[]);
        assert_ne!(out.status, Some(0), "{}", out.dump());
        // curl's words for SOCKS5 reply 2, "connection not allowed by ruleset".
        assert!(
            out.stderr.contains("curl: (97)") && out.stderr.contains("(2)"),
            "{}",
            out.dump()
        );
        assert!(
            out.stderr
                .contains("warning[MGS2011]: connection to `unlisted.example:"),
            "{}",
            out.dump()
        );
        assert!(
            out.stderr.contains("asked through the SOCKS5 proxy"),
            "{}",
            out.dump()
        );
        assert_eq!(server.hits(), before, "{}", out.dump());
    }
}

/// A nested magus (a spell running `magus run`) starts no proxy of its own:
/// its children use the outer proxy, and the outer run names the refusal.
#[test]
fn a_nested_magus_uses_the_outer_proxy() {
    let server = FileServer::start(tempfile::tempdir().unwrap().keep());
    let magus = Path::new(env!("CARGO_BIN_EXE_magus"));
    let bin = magus.parent().unwrap().display().to_string();
    let config = format!(
        "sandbox:\n  enabled: true\n  allow:\n    - path: {bin}\n      mode: ro\n  network:\n    hosts: [localhost]\n"
    );
    let h = Harness::with_config(&config);
    h.write_spell("net", SHELL_SPELL);
    let inner = format!(
        "{c} http://localhost:{p}/; {c} http://127.0.0.1:{p}/; echo inner-refused=$?",
        c = curl(),
        p = server.port
    );
    std::fs::write(h.ws_path("net.sh"), &inner).unwrap();
    let outer = format!(
        "import \"sh\";\nfun main(args: [str]) > int {{\n    return sh.run([{}, \"-q\", \"run\", \"net\"]);\n}}\n",
        support::buzz_str(magus.to_str().unwrap())
    );
    h.write_spell("outer", &outer);
    for case in [Case::CALLER, Case::CALLER_PARTIAL] {
        let before = server.hits();
        let out = run_as(&h, case, "outer", &[]);
        assert_eq!(out.status, Some(0), "{case:?}: {}", out.dump());
        assert!(
            out.stdout.contains("hello from the test server"),
            "{}",
            out.dump()
        );
        assert!(out.stdout.contains("inner-refused=22"), "{}", out.dump());
        assert_eq!(server.hits() - before, 1, "{}", out.dump());
        assert!(out.stderr.contains("outer.buzz:3:12"), "{}", out.dump());
        assert_eq!(out.stderr_count("warning[MGS2011]"), 1, "{}", out.dump());
    }
}

/// In the namespace, loopback is the children's own: a server a build
/// starts (a test fixture) is reached directly, while the host's loopback
/// stays out of reach.
#[test]
fn children_reach_their_own_servers_on_the_namespace_loopback() {
    let host_server = FileServer::start(tempfile::tempdir().unwrap().keep());
    let py = format!(
        "import socket, threading\n\
         l = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen()\n\
         threading.Thread(target=lambda: l.accept()[0].sendall(b'own server'), daemon=True).start()\n\
         c = socket.create_connection(l.getsockname()); print(c.recv(100).decode())\n\
         h = socket.socket(); h.settimeout(3)\n\
         print('host', h.connect_ex(('127.0.0.1', {})))\n",
        host_server.port
    );
    let script = format!("/usr/bin/python3 -c {}", shell_quote(&py));
    for case in cases().into_iter().filter(|c| c.mode == Mode::Namespace) {
        let before = host_server.hits();
        let out = run_script(&hosts_config("[localhost]"), &script, case, &[]);
        assert_eq!(out.status, Some(0), "{case:?}: {}", out.dump());
        assert!(out.stdout.contains("own server"), "{}", out.dump());
        assert!(!out.stdout.contains("host 0"), "{}", out.dump());
        assert_eq!(host_server.hits(), before, "{}", out.dump());
    }
}

#[test]
fn sandbox_check_lists_the_hosts_and_the_mechanism() {
    let h = Harness::with_config(&hosts_config(
        "[crates.io, \"*.crates.io\", \"github.com:443\"]",
    ));
    let out = capture(
        h.command()
            .arg("--workspace")
            .arg(&h.ws)
            .args(["sandbox", "check"]),
    );
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert!(
        out.stdout
            .contains("hosts [crates.io, github.com:443, *.crates.io] via magus's proxy"),
        "{}",
        out.dump()
    );
    assert!(
        out.stdout
            .contains("network   proxy outside the children's loopback-only network namespace"),
        "{}",
        out.dump()
    );
    let partial = capture(
        h.command()
            .env("MAGUS_SANDBOX_USERNS", "0")
            .arg("--workspace")
            .arg(&h.ws)
            .args(["sandbox", "check"]),
    );
    assert!(
        partial.stdout.contains("partial: no network namespace")
            && partial.stdout.contains(
                "(no network namespace: user namespaces disabled by MAGUS_SANDBOX_USERNS=0)"
            ),
        "{}",
        partial.dump()
    );
    let json = capture(h.command().arg("--workspace").arg(&h.ws).args([
        "--message-format",
        "json",
        "sandbox",
        "check",
    ]));
    let v: serde_json::Value = serde_json::from_str(json.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(v["network"]["hosts"][1], "github.com:443", "{v}");
    let mechanism = v["network"]["mechanism"].as_str().unwrap_or_default();
    assert!(mechanism.contains("loopback-only network namespace"), "{v}");
}

#[test]
fn widening_the_hosts_of_a_locked_workspace_is_mgs2010() {
    let h = Harness::with_config(&hosts_config("[crates.io]"));
    let lock = capture(
        h.command()
            .arg("--workspace")
            .arg(&h.ws)
            .args(["sandbox", "lock"]),
    );
    assert_eq!(lock.status, Some(0), "{}", lock.dump());
    h.write_spell("noop", "fun main(args: [str]) > void {}\n");
    assert_eq!(h.run("noop", &[]).status, Some(0));
    h.write_config(&hosts_config("[crates.io, \"*.evil.example\"]"));
    let out = h.run("noop", &[]);
    assert_ne!(out.status, Some(0), "{}", out.dump());
    assert!(out.stderr.contains("error[MGS2010]"), "{}", out.dump());
    assert!(
        out.stderr
            .contains("widened: + network host *.evil.example"),
        "{}",
        out.dump()
    );
    let mut lines = String::new();
    let _ =
        std::fs::File::open(h.ws_path("magus.lock")).and_then(|mut f| f.read_to_string(&mut lines));
    assert!(lines.contains("network hosts [\"crates.io\"]"), "{lines}");
}

/// Crafted requests to the proxy, each printed as `TAG answer`: the
/// listed server is `localhost:{A}`, the unlisted one `127.0.0.1:{B}`.
const CRAFTED: &str = r#"
import os, socket, struct
A, B = {A}, {B}
def proxy(var):
    h, p = os.environ[var].rsplit("/", 1)[1].split(":")
    return socket.create_connection((h, int(p)), timeout=5)
def http(tag, raw):
    c = proxy("HTTP_PROXY")
    c.sendall(raw.encode())
    data = b"".join(iter(lambda: c.recv(4096), b""))
    print(tag, data.split(b"\r\n")[0].decode(), "hello" if b"hello from" in data else "")
def first_line(tag, raw):
    c = proxy("HTTP_PROXY")
    c.sendall(raw.encode())
    print(tag, c.recv(4096).split(b"\r\n")[0].decode())
def socks(tag, atyp, addr, port):
    c = proxy("ALL_PROXY")
    c.sendall(b"\x05\x01\x00"); c.recv(2)
    c.sendall(b"\x05\x01\x00" + bytes([atyp]) + addr + struct.pack(">H", port))
    print(tag, "reply", c.recv(10)[1])
http("ABS-HOSTHEADER", f"GET http://127.0.0.1:{B}/ HTTP/1.1\r\nHost: localhost:{A}\r\n\r\n")
http("ABS-PORT", f"GET http://localhost:{B}/ HTTP/1.1\r\nHost: localhost:{A}\r\n\r\n")
http("CONNECT-PORT", f"CONNECT localhost:{B} HTTP/1.1\r\nHost: localhost:{A}\r\n\r\n")
http("USERINFO", f"GET http://localhost:{A}@127.0.0.1:{B}/ HTTP/1.1\r\n\r\n")
first_line("CONNECT-USERINFO", f"CONNECT localhost:{A}@127.0.0.1:{B} HTTP/1.1\r\nHost: localhost:{A}\r\n\r\n")
http("FRAGMENT", f"GET http://127.0.0.1:{B}#@localhost:{A}/ HTTP/1.1\r\n\r\n")
http("BACKSLASH", f"GET http://127.0.0.1:{B}\\@localhost:{A}/ HTTP/1.1\r\n\r\n")
http("SMUGGLE", f"GET http://localhost:{A}/ HTTP/1.1\r\nContent-Length: 0\r\n\r\nGET http://127.0.0.1:{B}/ HTTP/1.1\r\nHost: 127.0.0.1:{B}\r\n\r\n")
http("UPPER-DOT", f"GET http://LOCALHOST.:{A}/ HTTP/1.1\r\n\r\n")
socks("SOCKS-V4", 1, bytes([127, 0, 0, 1]), B)
socks("SOCKS-MAPPED", 4, bytes(10) + b"\xff\xff" + bytes([127, 0, 0, 1]), B)
socks("SOCKS-NAME-PORT", 3, b"\x09localhost", B)
socks("SOCKS-TRAILING-DOT", 3, b"\x0alocalhost.", B)
for tag, host in [("127-1", "127.1"), ("HEX", "0x7f.1"), ("DECIMAL", "2130706433"),
                  ("OCTAL", "0177.0.0.1"), ("V6", "[::1]"), ("V6-MAPPED", "[::ffff:127.0.0.1]"),
                  ("V6-COMPAT", "[::127.0.0.1]"), ("ZONE", "[fe80::1%25lo]"), ("PERCENT", "%6cocalhost"),
                  ("FULLWIDTH", "\uff4cocalhost"), ("IDNA", "xn--localhost-"), ("ZERO", "0.0.0.0"),
                  ("DOUBLE-DOT", "localhost.."), ("HOSTS-HEADER-ONLY", "")]:
    line = f"GET http://{host}:{B}/ HTTP/1.1\r\nHost: localhost:{A}\r\n\r\n"
    if not host:
        line = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{B}\r\n\r\n"
    try:
        http("SPELLING-" + tag, line)
    except Exception as e:
        print("SPELLING-" + tag, "error", e)
    if host:
        first_line("CONNECT-SPELLING-" + tag, f"CONNECT {host}:{B} HTTP/1.1\r\nHost: localhost:{A}\r\n\r\n")
for tag, atyp, addr in [("V6", 4, bytes(15) + b"\x01"), ("V6-COMPAT", 4, bytes(12) + bytes([127, 0, 0, 1])),
                        ("ZERO", 1, bytes(4)), ("NAME-IP", 3, b"\x09127.0.0.1"), ("NAME-HEX", 3, b"\x060x7f.1"),
                        ("NAME-V6", 3, b"\x05[::1]"), ("NAME-DECIMAL", 3, b"\x0a2130706433"),
                        ("NAME-NUL", 3, b"\x0blocalhost\x00x")]:
    socks("SOCKS-" + tag, atyp, addr, B)
"#;

/// Requests shaped to slip an unlisted destination past the check: the
/// listed name in a `Host` header or the user info of an absolute URL, a
/// fragment or backslash trick, a second request smuggled after the
/// first, a port the entry does not name, SOCKS5 with IPv4 and
/// IPv4-mapped IPv6 literals; the unlisted server spelled every other
/// way (`127.1`, `0x7f.1`, decimal, octal, `[::1]`, IPv4-mapped and
/// -compatible IPv6, a zone, `%`-encoding, full-width letters, punycode,
/// `0.0.0.0`, a NUL in a SOCKS name) by HTTP (absolute URL and `CONNECT`,
/// user info included) and SOCKS5. Nothing reaches the unlisted server; the
/// listed one is reached under `LOCALHOST.` (the name is compared in
/// lower case without its trailing dot). The control, the sandbox off,
/// reaches the unlisted server directly.
#[test]
fn crafted_requests_reach_only_the_listed_host() {
    let listed = FileServer::start(tempfile::tempdir().unwrap().keep());
    let unlisted = FileServer::start(tempfile::tempdir().unwrap().keep());
    let py = CRAFTED
        .replace("{A}", &listed.port.to_string())
        .replace("{B}", &unlisted.port.to_string());
    let script = format!("/usr/bin/python3 -c {}", shell_quote(&py));
    let direct = format!("{} http://127.0.0.1:{}/", curl(), unlisted.port);
    let control = run_script(SANDBOX_OFF, &direct, Case::CALLER, &[]);
    assert!(control.stdout.contains("hello from"), "{}", control.dump());
    assert_eq!(unlisted.hits(), 1, "{}", control.dump());
    let config = hosts_config(&format!("[\"localhost:{}\"]", listed.port));
    for case in cases() {
        let out = run_script(&config, &script, case, &[]);
        let line = |tag: &str| {
            out.lines_starting(&format!("{tag} "))
                .first()
                .map(|l| l.to_string())
                .unwrap_or_default()
        };
        for tag in ["ABS-HOSTHEADER", "ABS-PORT", "CONNECT-PORT", "FRAGMENT"] {
            assert!(line(tag).contains("403"), "{case:?} {tag}: {}", out.dump());
        }
        for tag in ["USERINFO", "BACKSLASH"] {
            let answer = line(tag);
            assert!(
                answer.contains("400") || answer.contains("403"),
                "{case:?} {tag}: {}",
                out.dump()
            );
        }
        for tag in ["SMUGGLE", "UPPER-DOT"] {
            assert!(
                line(tag).contains("200 OK hello"),
                "{case:?} {tag}: {}",
                out.dump()
            );
        }
        for tag in ["SOCKS-V4", "SOCKS-MAPPED", "SOCKS-NAME-PORT"] {
            assert!(
                line(tag).contains("reply 2"),
                "{case:?} {tag}: {}",
                out.dump()
            );
        }
        assert!(
            !line("SOCKS-TRAILING-DOT").contains("reply 0"),
            "{case:?}: {}",
            out.dump()
        );
        for tag in out.lines_starting("SPELLING-") {
            assert!(
                tag.contains(" 400 ") || tag.contains(" 403 ") || tag.contains(" error "),
                "{case:?} {tag}: {}",
                out.dump()
            );
        }
        let socks_lines = out.lines_starting("SOCKS-");
        assert_eq!(socks_lines.len(), 12, "{case:?}: {}", out.dump());
        for tag in socks_lines {
            assert!(!tag.contains("reply 0"), "{case:?} {tag}: {}", out.dump());
        }
        assert_eq!(out.lines_starting("SPELLING-").len(), 14, "{}", out.dump());
        let tunnels = out.lines_starting("CONNECT-");
        assert_eq!(tunnels.len(), 15, "{case:?}: {}", out.dump());
        for tag in tunnels {
            assert!(
                tag.contains(" 400 ") || tag.contains(" 403 "),
                "{case:?} {tag}: {}",
                out.dump()
            );
        }
        assert_eq!(unlisted.hits(), 1, "{case:?}: {}", out.dump());
    }
}

/// A network of the run's own where `address` is on loopback (no module
/// needed), a web server on `address:port` serves `$OWN_DIR/www`, and
/// `name` is `address` (in an `/etc/hosts` bound for this run only):
/// `"$@"` runs there, then the server stops.
fn serving_at(address: &str, name: &str, port: u16) -> String {
    format!(
        r#"set -e
ip link set lo up
ip addr add {address}/32 dev lo
printf '{address} {name}\n' > "$OWN_DIR/hosts"
mount --bind "$OWN_DIR/hosts" /etc/hosts
/usr/bin/python3 -m http.server --bind {address} {port} --directory "$OWN_DIR/www" >/dev/null 2>&1 &
server=$!
for i in $(seq 50); do curl -s --noproxy '*' -o /dev/null http://{address}:{port}/ && break; sleep 0.1; done
set +e
"$@"; status=$?
kill $server
exit $status
"#
    )
}

/// The machine's own public address (203.0.114.1) and a name for it,
/// `thisbox.test` (see [`serving_at`]).
fn own_address() -> String {
    serving_at("203.0.114.1", "thisbox.test", 8123)
}

/// A listed name pointed at the machine's own public address (by a DNS
/// answer its owner controls; here `/etc/hosts`) does not let the proxy,
/// which runs outside the sandbox, reach the machine's own services: the
/// address is the machine's, so it is refused as loopback is. The
/// control, sandbox off, reaches the service directly.
#[test]
fn a_listed_name_at_the_machines_own_public_address_is_refused() {
    if !nix::unistd::geteuid().is_root() || !Path::new("/usr/sbin/ip").exists() {
        eprintln!("skipped: needs root and ip(8)");
        return;
    }
    let own = tempfile::tempdir().unwrap();
    std::fs::create_dir(own.path().join("www")).unwrap();
    std::fs::write(own.path().join("www/own.txt"), "own-service-secret\n").unwrap();
    let run = |config: &str| {
        let h = Harness::with_config(config);
        h.write_spell("net", SHELL_SPELL);
        let script = format!("{} http://thisbox.test:8123/own.txt", curl());
        std::fs::write(h.ws_path("net.sh"), script).unwrap();
        in_namespace(&h, &own_address(), own.path())
    };
    let control = run(SANDBOX_OFF);
    assert!(
        control.stdout.contains("own-service-secret"),
        "{}",
        control.dump()
    );
    let out = run(&hosts_config("[thisbox.test]"));
    assert!(!out.stdout.contains("own-service-secret"), "{}", out.dump());
    assert!(
        out.stderr
            .contains("warning[MGS2011]: connection to `thisbox.test:8123`"),
        "{}",
        out.dump()
    );
    assert!(
        out.stderr.contains(
            "`thisbox.test` resolved to 203.0.114.1, one of this machine's own addresses"
        ),
        "{}",
        out.dump()
    );
}

/// Inside a network namespace of the test's: `registry.test` is
/// 198.18.0.5 (benchmarking, reserved, where some networks put a registry
/// mirror), an address of the namespace's `lo`, with a web server on it.
fn reserved_registry() -> String {
    serving_at("198.18.0.5", "registry.test", 8124)
}

/// The issue's case: a listed registry name that resolves to a reserved
/// address. MGS2011 (one, though curl asks three times) names the address,
/// its block and the rule, and offers the entry that allows it; with that
/// entry added the registry is reached. The control, sandbox off, reaches
/// it directly.
#[test]
fn a_listed_name_at_a_reserved_address_names_the_address_and_the_rule() {
    if !nix::unistd::geteuid().is_root() || !Path::new("/usr/sbin/ip").exists() {
        eprintln!("skipped: needs root and ip(8)");
        return;
    }
    let own = tempfile::tempdir().unwrap();
    std::fs::create_dir(own.path().join("www")).unwrap();
    std::fs::write(own.path().join("www/index.txt"), "registry-index\n").unwrap();
    let run = |config: &str| {
        let h = Harness::with_config(config);
        h.write_spell("net", SHELL_SPELL);
        let script = format!(
            "for i in 1 2 3; do {} http://registry.test:8124/index.txt; done",
            curl()
        );
        std::fs::write(h.ws_path("net.sh"), script).unwrap();
        in_namespace(&h, &reserved_registry(), own.path())
    };
    let control = run(SANDBOX_OFF);
    assert!(
        control.stdout.contains("registry-index"),
        "{}",
        control.dump()
    );
    let out = run(&hosts_config("[registry.test]"));
    assert!(!out.stdout.contains("registry-index"), "{}", out.dump());
    assert_eq!(out.stderr_count("warning[MGS2011]"), 1, "{}", out.dump());
    for said in [
        "connection to `registry.test:8124` refused 3 times",
        "`registry.test` resolved to 198.18.0.5, in 198.18.0.0/15 (benchmarking, reserved): \
         a listed name may not lead to a private or reserved address",
        "- \"198.18.0.5:8124\"",
    ] {
        assert!(out.stderr.contains(said), "{said}\n{}", out.dump());
    }
    let allowed = run(&hosts_config("[registry.test, \"198.18.0.5:8124\"]"));
    assert_eq!(
        allowed.stdout.matches("registry-index").count(),
        3,
        "{}",
        allowed.dump()
    );
}

/// `magus run net` in a network and mount namespace of its own, set up by
/// `script` (which gets `OWN_DIR`, and runs magus as its arguments).
fn in_namespace(h: &Harness, script: &str, own: &Path) -> RunOutput {
    let magus = h.command();
    let mut cmd = Command::new("unshare");
    cmd.args(["--net", "--mount", "--", "/bin/sh", "-c", script, "sh"]);
    cmd.arg(magus.get_program()).args(magus.get_args());
    cmd.arg("--workspace").arg(&h.ws).args(["run", "net"]);
    cmd.env_clear().current_dir(&h.root);
    for (k, v) in magus.get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    cmd.env("OWN_DIR", own);
    capture(&mut cmd)
}

/// Retries are one diagnostic: seven refusals of one host and port in one
/// call are one MGS2011 that says "refused 7 times"; another port in the
/// same call is another. The control, sandbox off, reaches the server
/// eight times; nothing reaches it through the proxy.
#[test]
fn retries_of_one_host_are_one_mgs2011_with_a_count() {
    let dir = tempfile::tempdir().unwrap().keep();
    let (server, other) = (FileServer::start(dir.clone()), FileServer::start(dir));
    let script = format!(
        "for i in 1 2 3 4 5 6 7; do {c} http://127.0.0.1:{p}/; done; {c} http://127.0.0.1:{q}/; exit 0",
        c = curl(),
        p = server.port,
        q = other.port
    );
    for case in cases() {
        let control = run_script(SANDBOX_OFF, &script, case, &[]);
        assert_eq!(
            control.stdout.matches("hello from the test server").count(),
            8,
            "control: {}",
            control.dump()
        );
        let before = (server.hits(), other.hits());
        let out = run_script(&hosts_config("[localhost]"), &script, case, &[]);
        assert_eq!((server.hits(), other.hits()), before, "{}", out.dump());
        assert_eq!(out.stderr_count("warning[MGS2011]"), 2, "{}", out.dump());
        let seven = format!(
            "warning[MGS2011]: connection to `127.0.0.1:{}` refused 7 times by the sandbox's network proxy",
            server.port
        );
        let once = format!(
            "warning[MGS2011]: connection to `127.0.0.1:{}` refused by the sandbox's network proxy",
            other.port
        );
        assert!(out.stderr.contains(&seven), "{}", out.dump());
        assert!(out.stderr.contains(&once), "{}", out.dump());
        assert_eq!(out.stderr_count("net.buzz:3:12"), 2, "{}", out.dump());
    }
}

/// One request as a [`VhostServer`] saw it.
#[derive(Debug, Clone)]
struct Seen {
    host: String,
    path: String,
    body: Vec<u8>,
}

/// A shared front end on 127.0.0.1 (a CDN, a virtual-hosting server): it
/// serves whichever site a request's `Host` names and keeps every
/// connection open for the next request, `Connection: close` or not. It
/// records every request it serves.
struct VhostServer {
    port: u16,
    seen: Arc<std::sync::Mutex<Vec<Seen>>>,
}

impl VhostServer {
    fn start() -> VhostServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = Arc::clone(&log);
                std::thread::spawn(move || serve_vhost(stream, &log));
            }
        });
        VhostServer { port, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        std::thread::sleep(Duration::from_millis(100));
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

/// Serves requests on one connection until the client ends it.
fn serve_vhost(stream: TcpStream, log: &std::sync::Mutex<Vec<Seen>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut stream = stream;
    while let Some(seen) = read_vhost_request(&mut reader) {
        let body = format!("vhost {} {}\n", seen.host, seen.path);
        log.lock().unwrap().push(seen);
        let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
        if stream
            .write_all(format!("{head}{body}").as_bytes())
            .is_err()
        {
            return;
        }
    }
}

fn read_vhost_request(reader: &mut impl BufRead) -> Option<Seen> {
    let mut first = String::new();
    if reader.read_line(&mut first).ok()? == 0 {
        return None;
    }
    let (mut host, mut length, mut chunked) = (String::new(), 0usize, false);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        let (name, value) = line.split_once(':')?;
        let value = value.trim().to_string();
        match name.to_ascii_lowercase().as_str() {
            "host" => host = value,
            "content-length" => length = value.parse().ok()?,
            "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
            _ => {}
        }
    }
    let body = match chunked {
        true => read_chunks(reader)?,
        false => {
            let mut body = vec![0u8; length];
            reader.read_exact(&mut body).ok()?;
            body
        }
    };
    let path = first.split_whitespace().nth(1).unwrap_or("").to_string();
    Some(Seen { host, path, body })
}

fn read_chunks(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size).ok()?;
        let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
        let mut data = vec![0u8; size + 2];
        if size == 0 {
            let mut end = String::new();
            while end != "\r\n" {
                end.clear();
                if reader.read_line(&mut end).ok()? == 0 {
                    return None;
                }
            }
            return Some(body);
        }
        reader.read_exact(&mut data).ok()?;
        body.extend_from_slice(&data[..size]);
    }
}

/// Requests on one connection to the HTTP proxy (or, in the control run,
/// which has no proxy variables, straight to the front end at `A`), each
/// printed as `TAG answer...`: the first request names the listed
/// `localhost:A`; what follows it on the same connection names another
/// site by its `Host` header or by an absolute URL to `127.0.0.1:B`.
const KEEP_ALIVE: &str = r#"
import os, socket
A, B = {A}, {B}
def connect():
    url = os.environ.get("HTTP_PROXY", f"http://127.0.0.1:{A}")
    h, p = url.rsplit("/", 1)[1].split(":")
    return socket.create_connection((h, int(p)), timeout=5)
def answers(c):
    data = b""
    try:
        for chunk in iter(lambda: c.recv(4096), b""):
            data += chunk
    except socket.timeout:
        pass
    return [l.decode() for l in data.split(b"\r\n") if l.startswith((b"HTTP/", b"vhost"))]
FIRST = f"GET http://localhost:{A}/first HTTP/1.1\r\nHost: localhost:{A}\r\n\r\n"
def second(tag):
    return (f"GET /exfil-{tag}-host HTTP/1.1\r\nHost: unlisted.example\r\n\r\n"
            f"GET http://127.0.0.1:{B}/exfil-{tag}-absolute HTTP/1.1\r\nHost: 127.0.0.1:{B}\r\n\r\n")
def once(tag, raw):
    c = connect()
    c.sendall(raw.encode())
    print(tag, *answers(c))
once("PIPELINED", FIRST + second("pipelined"))
c = connect()
c.sendall(FIRST.encode())
first = c.recv(4096)
c.sendall(second("keepalive").encode())
print("KEEPALIVE", *[l.decode() for l in first.split(b"\r\n") if l.startswith((b"HTTP/", b"vhost"))], "then", *answers(c))
once("LENGTH", f"POST http://localhost:{A}/upload-length HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello" + second("length"))
once("CHUNKED", f"POST http://localhost:{A}/upload-chunked HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n" + second("chunked"))
once("BOTH", f"POST http://localhost:{A}/upload-both HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + second("both"))
"#;

/// Plain-HTTP keep-alive through the proxy: after a request for the
/// listed `localhost:A`, a second one on the same client connection (sent
/// with the first, or after its answer; after a `Content-Length` or a
/// chunked body) names an unlisted site by `Host` or an unlisted
/// `127.0.0.1:B` by absolute URL. The front end at A serves any `Host`
/// and ignores `Connection: close`, so whatever the proxy passes on after
/// the first request reaches the unlisted site. Only the first request
/// (with its body) is forwarded; both hosts' exfiltration paths are never
/// requested, and a request with both `Content-Length` and
/// `Transfer-Encoding` is refused (400). The control, sandbox off, sends
/// the same bytes to the front end directly, and it serves every one.
#[test]
fn a_keep_alive_connection_carries_only_its_first_checked_request() {
    let front = VhostServer::start();
    let unlisted = FileServer::start(tempfile::tempdir().unwrap().keep());
    let py = KEEP_ALIVE
        .replace("{A}", &front.port.to_string())
        .replace("{B}", &unlisted.port.to_string());
    let script = format!("/usr/bin/python3 -c {}", shell_quote(&py));
    let control = run_script(SANDBOX_OFF, &script, Case::CALLER, &[]);
    let paths: Vec<String> = front.seen().into_iter().map(|s| s.path).collect();
    for tag in ["pipelined", "keepalive", "length", "chunked"] {
        let path = format!("/exfil-{tag}-host");
        assert!(
            paths.contains(&path),
            "control {tag}: {paths:?} {}",
            control.dump()
        );
    }
    let config = hosts_config(&format!("[\"localhost:{}\"]", front.port));
    for case in cases() {
        let out = run_script(&config, &script, case, &[]);
        let seen = front.seen();
        let listed = format!("localhost:{}", front.port);
        let strays: Vec<&Seen> = seen.iter().filter(|s| s.host != listed).collect();
        assert!(strays.is_empty(), "{case:?}: {strays:?} {}", out.dump());
        assert!(
            seen.iter().all(|s| !s.path.contains("exfil")),
            "{case:?}: {seen:?} {}",
            out.dump()
        );
        for (path, body) in [("/upload-length", "hello"), ("/upload-chunked", "hello")] {
            assert!(
                seen.iter()
                    .any(|s| s.path == path && s.body == body.as_bytes()),
                "{case:?} {path}: {seen:?} {}",
                out.dump()
            );
        }
        for tag in ["PIPELINED", "KEEPALIVE"] {
            let line = out.lines_starting(&format!("{tag} ")).join("\n");
            assert!(
                line.contains("HTTP/1.1 200 OK vhost localhost:"),
                "{case:?} {tag}: {}",
                out.dump()
            );
        }
        let both = out.lines_starting("BOTH ").join("\n");
        assert!(both.contains("400"), "{case:?}: {}", out.dump());
        assert_eq!(unlisted.hits(), 0, "{case:?}: {}", out.dump());
    }
}

/// Holds 900 idle connections to the HTTP proxy (in the control, with no
/// proxy variables, to the server at `A`), says how many the other end
/// closed, lets them go, and asks for `localhost:A` once more.
const HOLD_CONNECTIONS: &str = r#"
import os, socket, time
A = {A}
url = os.environ.get("HTTP_PROXY", f"http://127.0.0.1:{A}")
h, p = url.rsplit("/", 1)[1].split(":")
held = []
for i in range(900):
    try:
        held.append(socket.create_connection((h, int(p)), timeout=5))
    except OSError as e:
        print("CONNECT-FAILED", e)
        break
print("HELD", len(held), flush=True)
time.sleep(2)
closed = busy = 0
for c in held:
    c.setblocking(False)
    try:
        got = c.recv(4096)
        if got.startswith(b"HTTP/1.1 503 "):
            busy += 1
            got = c.recv(4096)
        if got == b"":
            closed += 1
    except BlockingIOError:
        pass
    except OSError:
        closed += 1
print("CLOSED", closed, flush=True)
print("BUSY", busy, flush=True)
for c in held:
    c.close()
time.sleep(0.5)
c = socket.create_connection((h, int(p)), timeout=5)
c.sendall(f"GET http://localhost:{A}/ HTTP/1.1\r\nHost: localhost:{A}\r\n\r\n".encode())
print("AFTER", c.recv(4096).split(b"\r\n")[0].decode())
"#;

/// The most threads any child of the magus whose command line names
/// `ws` had, sampled until `stop` is set: the proxy is such a child.
fn watch_proxy_threads(ws: PathBuf, stop: Arc<std::sync::atomic::AtomicBool>) -> usize {
    let ws = ws.into_os_string().into_encoded_bytes();
    let mut most = 0;
    while !stop.load(Ordering::SeqCst) {
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let pid = entry.file_name();
            let Some(threads) = threads_if_child_of(&pid.to_string_lossy(), &ws) else {
                continue;
            };
            most = most.max(threads);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    most
}

/// `Threads:` of process `pid` when its parent's command line holds `ws`.
fn threads_if_child_of(pid: &str, ws: &[u8]) -> Option<usize> {
    pid.parse::<u32>().ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let ppid = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?;
    let cmdline = std::fs::read(format!("/proc/{ppid}/cmdline")).ok()?;
    if !cmdline.windows(ws.len()).any(|w| w == ws) {
        return None;
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("Threads:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A child holds 900 idle connections to the HTTP proxy, which runs
/// outside the sandbox and outside `limits.processes`: it started a
/// thread for each (an attack on the user's and the machine's thread
/// limits, from a run bounded to 64 processes). The proxy now serves at
/// most 256 clients at once and answers the rest "503" and closes them
/// at once, and magus says how many it turned away; once the child lets
/// go, a request goes through again. The control (sandbox off, no
/// proxy) holds the 900 connections to the server directly. The proxy's
/// threads are counted from outside, as root.
#[test]
fn idle_connections_do_not_grow_the_proxy_without_bound() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: counting the proxy's threads needs root");
        return;
    }
    let server = FileServer::start(tempfile::tempdir().unwrap().keep());
    let py = HOLD_CONNECTIONS.replace("{A}", &server.port.to_string());
    let script = format!("/usr/bin/python3 -c {}", shell_quote(&py));
    let control = run_script(SANDBOX_OFF, &script, Case::CALLER, &[]);
    assert!(control.stdout.contains("HELD 900"), "{}", control.dump());
    let config = format!(
        "{}  limits:\n    processes: 64\n",
        hosts_config(&format!("[\"localhost:{}\"]", server.port))
    );
    for case in cases() {
        let h = Harness::with_config(&config);
        h.write_spell("net", SHELL_SPELL);
        std::fs::write(h.ws_path("net.sh"), &script).unwrap();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let watcher = {
            let (ws, stop) = (h.ws.clone(), Arc::clone(&stop));
            std::thread::spawn(move || watch_proxy_threads(ws, stop))
        };
        let out = run_as(&h, case, "net", &[]);
        stop.store(true, Ordering::SeqCst);
        let most = watcher.join().unwrap();
        h.assert_no_leak(&out);
        assert!(out.stdout.contains("HELD 900"), "{case:?}: {}", out.dump());
        assert!(
            most > 0 && most < 300,
            "{case:?}: {most} threads: {}",
            out.dump()
        );
        let closed: usize = out.lines_starting("CLOSED ")[0][7..].parse().unwrap();
        assert!(closed >= 900 - 256, "{case:?}: {}", out.dump());
        let busy: usize = out.lines_starting("BUSY ")[0][5..].parse().unwrap();
        assert!(busy >= 900 - 256, "{case:?}: {}", out.dump());
        let said = format!("the network proxy turned {busy} connection(s) away");
        assert!(out.stderr.contains(&said), "{case:?}: {}", out.dump());
        assert!(
            out.stdout.contains("AFTER HTTP/1.1 200"),
            "{case:?}: {}",
            out.dump()
        );
    }
}

/// The processes forked by the magus whose command line holds `ws` that
/// live in this test's (the host's) PID namespace, each with whether it
/// is in this test's network namespace too. The jail's PID 1 is not one
/// (its `NSpid` has two numbers); the proxy, once forked, is, and so is,
/// for a millisecond at the start, the helper that makes the namespaces.
fn host_children_of(ws: &[u8]) -> Vec<(String, bool)> {
    let own_net = std::fs::read_link("/proc/self/ns/net").unwrap();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            continue;
        };
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.split_whitespace().collect::<Vec<_>>())
        };
        let (Some(ppid), Some(nspid)) = (field("PPid:"), field("NSpid:")) else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", ppid[0])).unwrap_or_default();
        if nspid.len() != 1 || !cmdline.windows(ws.len()).any(|w| w == ws) {
            continue;
        }
        // A process on its way out has no namespace links left: such a
        // sample says nothing (taken for "elsewhere", it made the proxy's
        // last sample, and so the proxy, look as if it lived in another
        // namespace).
        let Ok(net) = std::fs::read_link(format!("/proc/{pid}/ns/net")) else {
            continue;
        };
        found.push((pid, net == own_net));
    }
    found
}

/// Runs `run` while sampling [`host_children_of`] the workspace every
/// 20 ms; returns the run and, for each process that was there in at
/// least two samples (the proxy lives through the spell's 600 ms sleep,
/// but two test binaries on two cores leave the sampler few turns; the
/// namespace helper may last as long, and is told apart by its network
/// namespace), whether it was in this test's network namespace.
fn watched(h: &Harness, run: impl FnOnce() -> RunOutput) -> (RunOutput, Vec<bool>) {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let ws = h.ws.clone().into_os_string().into_encoded_bytes();
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut seen = std::collections::BTreeMap::<String, (usize, bool)>::new();
            while !stop.load(Ordering::SeqCst) {
                for (pid, host_net) in host_children_of(&ws) {
                    let entry = seen.entry(pid).or_insert((0, host_net));
                    *entry = (entry.0 + 1, host_net);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let lasting = seen.into_values().filter(|(samples, _)| *samples >= 2);
            lasting.map(|(_, host_net)| host_net).collect()
        })
    };
    let out = run();
    stop.store(true, Ordering::SeqCst);
    (out, watcher.join().unwrap())
}

/// The proxy is forked by the jail's original process when the spell
/// starts its first program, in the host's PID and network namespaces,
/// beside the jail and never in it; a run that starts no program has no
/// proxy process at all. The control: the same spell with one launch
/// first, watched the same way, shows the proxy.
#[test]
fn the_proxy_is_forked_outside_the_jail_at_the_first_launch() {
    let idle = "import \"buzz:os\";\nfun main(args: [str]) > void {\n    os.sleep(600.0);\n}\n";
    let launch = "import \"buzz:os\";\nimport \"sh\";\nfun main(args: [str]) > void {\n    sh.run([\"/bin/true\"]);\n    os.sleep(600.0);\n}\n";
    for case in cases().into_iter().filter(|c| c.mode == Mode::Namespace) {
        let h = Harness::with_config(&hosts_config("[localhost]"));
        h.write_spell("idle", idle);
        h.write_spell("launch", launch);
        let (out, seen) = watched(&h, || run_as(&h, case, "launch", &[]));
        assert_eq!(out.status, Some(0), "{case:?}: {}", out.dump());
        // The proxy, in the host's network namespace. The namespace
        // helper (`jail::ahead`), a child in the children's new namespace,
        // may be seen too; it is not the proxy and is not asked about.
        assert_eq!(
            seen.iter().filter(|host_net| **host_net).count(),
            1,
            "{case:?}: the proxy, in the host's namespaces: {seen:?}\n{}",
            out.dump()
        );
        let (out, seen) = watched(&h, || run_as(&h, case, "idle", &[]));
        assert_eq!(out.status, Some(0), "{case:?}: {}", out.dump());
        assert!(!seen.contains(&true), "{case:?}: a proxy: {seen:?}");
    }
}

const MANY_THEN_ONE_REFUSED: &str = r#"
import os, subprocess, urllib.request
A = {A}
ok = 0
for i in range(600):
    with urllib.request.urlopen(f"http://localhost:{A}/", timeout=10) as r:
        ok += r.status == 200
print("OK", ok, flush=True)
code = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "10",
                       f"http://127.0.0.1:{A}/"], capture_output=True, text=True).stdout
print("UNLISTED", code, flush=True)
"#;

/// One call whose child makes 600 connections, then one the list
/// refuses: the proxy reports each to magus, the refusal before it
/// answers. magus read those reports only after the call, so a few
/// hundred of them filled the channel, the refusal blocked the proxy,
/// and the child (and the run) waited for ever; now they are read as
/// they come, the refused client gets its 403, and MGS2011 is said. The
/// control (sandbox off) makes the same 600 and reaches `127.0.0.1`.
#[test]
fn many_connections_in_one_call_never_stall_the_proxy() {
    let server = FileServer::start(tempfile::tempdir().unwrap().keep());
    let py = MANY_THEN_ONE_REFUSED.replace("{A}", &server.port.to_string());
    let script = format!("/usr/bin/python3 -c {}", shell_quote(&py));
    let control = run_script(SANDBOX_OFF, &script, Case::CALLER, &[]);
    assert!(
        control.stdout.contains("OK 600") && control.stdout.contains("UNLISTED 200"),
        "{}",
        control.dump()
    );
    let config = hosts_config(&format!("[\"localhost:{}\"]", server.port));
    for case in cases().into_iter().filter(|c| c.mode == Mode::Namespace) {
        let out = run_script(&config, &script, case, &["-v"]);
        assert!(out.stdout.contains("OK 600"), "{case:?}: {}", out.dump());
        assert!(
            out.stdout.contains("UNLISTED 403"),
            "{case:?}: {}",
            out.dump()
        );
        let said = format!(
            "warning[MGS2011]: connection to `127.0.0.1:{}`",
            server.port
        );
        assert!(out.stderr.contains(&said), "{case:?}: {}", out.dump());
        let summary = format!("localhost:{}  600 connection(s)", server.port);
        assert!(out.stderr.contains(&summary), "{case:?}: {}", out.dump());
    }
}

/// A listed host that accepts and then never sends and never closes
/// (it holds each connection for two minutes, past any run here).
fn stalling_server() -> CountingServer {
    CountingServer::start(|mut stream| {
        let _ = std::io::copy(&mut stream, &mut std::io::sink());
        std::thread::sleep(Duration::from_secs(120));
    })
}

/// A background child (its stdio let go, so the call need not wait for
/// it) holds a CONNECT tunnel and a SOCKS5 one to the stalling host,
/// writes `held` in its temporary directory, and waits until the proxy goes.
const HOLD_STALLED_TUNNELS: &str = r#"
import os, socket
A = {A}
def proxy(var):
    return socket.create_connection(("127.0.0.1", int(os.environ[var].rsplit(":", 1)[1])))
http = proxy("HTTP_PROXY")
http.sendall(f"CONNECT localhost:{A} HTTP/1.1\r\nHost: localhost:{A}\r\n\r\n".encode())
assert http.recv(100).startswith(b"HTTP/1.1 200")
socks = proxy("ALL_PROXY")
socks.sendall(b"\x05\x01\x00")
assert socks.recv(2) == b"\x05\x00"
socks.sendall(b"\x05\x01\x00\x03\x09localhost" + A.to_bytes(2, "big"))
assert socks.recv(10)[1] == 0
open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "held"), "w").write("held\n")
http.recv(1)
"#;

/// Tunnels to a listed host that stalls (accepts, never sends, never
/// closes) do not hold the run: one a call's child gave up on (curl's
/// `--max-time`), and two a background child still holds when the spell
/// returns. The run ends once the spell is done (the proxy waits a
/// bounded time for open connections, then the run's end ends them),
/// long before `wall_time` would (its status would be 123, and its
/// output cut short). Not a timing assertion: `wall_time` only turns a
/// hang into a failure.
#[test]
fn a_stalled_tunnel_does_not_hold_the_run_until_wall_time() {
    let server = stalling_server();
    let py = HOLD_STALLED_TUNNELS.replace("{A}", &server.port.to_string());
    let script = format!(
        "/usr/bin/python3 -c {py} >/dev/null 2>&1 </dev/null &\n\
         t=${{TMPDIR:-/tmp}}; i=0; while [ ! -s $t/held ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done\n\
         cat $t/held\n\
         curl -sS -p -x \"$HTTPS_PROXY\" --max-time 2 http://localhost:{p}/; echo curl=$?\n\
         echo spell-done\n",
        py = shell_quote(&py),
        p = server.port
    );
    let config = format!(
        "{}  limits:\n    wall_time: 60s\n",
        hosts_config(&format!("[\"localhost:{}\"]", server.port))
    );
    for case in cases() {
        let before = server.hits();
        let out = run_script(&config, &script, case, &[]);
        assert_eq!(out.status, Some(0), "{case:?}: {}", out.dump());
        let said = ["held", "curl=28", "spell-done"];
        assert!(
            said.iter().all(|s| out.stdout.contains(s)),
            "{case:?}: {}",
            out.dump()
        );
        assert!(server.hits() - before >= 3, "{case:?}: {}", out.dump());
    }
}
