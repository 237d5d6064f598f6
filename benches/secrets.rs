//! Secrets by reference (docs/secrets.md, docs/benchmarks.md), three costs:
//! - `secrets_startup`: `magus run` of an empty spell with `network.hosts`,
//!   with a `secrets:` entry against without (target ≤ 15 ms wall), the
//!   installed-style copy of the binary as in `benches/run.rs`;
//! - `secrets_first_request`: a spell that runs `curl` once against a
//!   local HTTPS server, the host bound to the secret (TLS terminated by
//!   the proxy) against the same host as a plain tunnel (the secret bound
//!   elsewhere): the difference is the first bound request's extra cost;
//! - `secrets_upload_100MiB`: a 100 MiB HTTPS POST through the terminating
//!   proxy against direct TLS to the same server (target ≥ 0.5×), each
//!   iteration a new connection (the proxy serves one request per tunnel).

use criterion::{criterion_group, Criterion, Throughput};
use magus_sandbox::testing::policy::{HostList, HostRule, Position, SecretBinding, SecretSource};
use magus_sandbox::testing::proxy::vault::Vault;
use magus_sandbox::testing::proxy::Proxy;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::StreamOwned;
use rustls::{ClientConfig, ClientConnection, RootCertStore, ServerConfig, ServerConnection};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

const TRANSFER: usize = 100 << 20;
const CHUNK: usize = 256 << 10;
const VALUE: &str = "ghp_bench_real_value_0123456789";

/// Forked before criterion (or any server) makes a thread.
static PROXY: OnceLock<(Proxy, Arc<Vault>)> = OnceLock::new();

/// The two ends' provider: `ring`, the reference the upload target was
/// first measured against, or with `MAGUS_BENCH_ENDS=aws-lc-rs` the
/// proxy's own (docs/benchmarks.md gives both).
#[allow(deprecated)]
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    match std::env::var("MAGUS_BENCH_ENDS").as_deref() {
        Ok("aws-lc-rs") => Arc::new(rustls::crypto::aws_lc_rs::default_provider()),
        _ => Arc::new(rustls::crypto::ring::default_provider()),
    }
}

/// The server's own CA (its PEM file is the roots magus trusts) and the
/// server's leaf for `localhost`.
struct TestCa {
    pem: PathBuf,
    chain: Vec<CertificateDer<'static>>,
    key: Vec<u8>,
}

fn test_ca(dir: &Path) -> TestCa {
    let ca_key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "magus bench CA");
    params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign];
    let ca_cert = params.self_signed(&ca_key).expect("CA");
    let pem = dir.join("bench-ca.pem");
    std::fs::write(&pem, ca_cert.pem()).expect("CA file");
    let issuer = rcgen::Issuer::new(params, ca_key);
    let key = rcgen::KeyPair::generate().expect("key");
    let leaf = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .expect("params")
        .signed_by(&key, &issuer)
        .expect("leaf");
    TestCa {
        pem,
        chain: vec![leaf.der().clone(), ca_cert.der().clone()],
        key: key.serialize_der(),
    }
}

/// An HTTPS server for `localhost`: each connection gets one request,
/// whose `Content-Length` body it reads (and drops), and a `200` with
/// `Connection: close`.
fn https_server(ca: &TestCa) -> u16 {
    let key = PrivateKeyDer::try_from(ca.key.clone()).expect("key");
    let config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(ca.chain.clone(), key)
        .expect("server config");
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").expect("server");
    let port = listener.local_addr().expect("port").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let config = Arc::clone(&config);
            std::thread::spawn(move || serve_one(config, stream));
        }
    });
    port
}

fn serve_one(config: Arc<ServerConfig>, stream: TcpStream) {
    let Ok(conn) = ServerConnection::new(config) else {
        return;
    };
    let mut tls = StreamOwned::new(conn, stream);
    let mut buf = vec![0u8; CHUNK];
    let mut head = Vec::new();
    let end = loop {
        match tls.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
    };
    let text = String::from_utf8_lossy(&head[..end]).to_ascii_lowercase();
    let length: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut got = head.len() - end;
    while got < length {
        match tls.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => got += n,
        }
    }
    let reply = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n";
    let _ = tls.write_all(reply);
    tls.conn.send_close_notify();
    let _ = tls.flush();
}

fn client_config(roots_pem: &[u8]) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(roots_pem) {
        roots.add(cert.expect("PEM")).expect("root");
    }
    let config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

/// A TCP connection to the server: direct, or a tunnel through the proxy.
fn connect(server: u16, proxy: Option<u16>) -> TcpStream {
    let Some(proxy) = proxy else {
        return TcpStream::connect(("127.0.0.1", server)).expect("direct");
    };
    let mut s = TcpStream::connect(("127.0.0.1", proxy)).expect("proxy");
    write!(
        s,
        "CONNECT localhost:{server} HTTP/1.1\r\nHost: localhost\r\n\r\n"
    )
    .expect("CONNECT");
    let mut reply = Vec::new();
    let mut byte = [0u8; 1];
    while !reply.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut byte).expect("CONNECT reply");
        reply.push(byte[0]);
    }
    assert!(reply.starts_with(b"HTTP/1.1 200"), "{reply:?}");
    s
}

/// One POST of [`TRANSFER`] bytes over a new TLS connection, carrying
/// `token`; panics unless the server said `200`.
fn upload(config: &Arc<ClientConfig>, server: u16, proxy: Option<u16>, token: &str) -> Duration {
    let start = Instant::now();
    let name = ServerName::try_from("localhost").expect("name");
    let conn = ClientConnection::new(Arc::clone(config), name).expect("client");
    let mut tls = StreamOwned::new(conn, connect(server, proxy));
    let head = format!(
        "POST /upload HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\nContent-Length: {TRANSFER}\r\n\r\n"
    );
    tls.write_all(head.as_bytes()).expect("head");
    let chunk = vec![0x5au8; CHUNK];
    for _ in 0..TRANSFER / CHUNK {
        tls.write_all(&chunk).expect("body");
    }
    tls.flush().expect("flush");
    let mut reply = Vec::new();
    let _ = tls.read_to_end(&mut reply);
    let took = start.elapsed();
    assert!(
        reply.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&reply)
    );
    took
}

/// `iters` direct and proxied runs back to back, alternating which goes
/// first; the proxied time over the direct time as criterion's "time"
/// per iteration (as in `benches/proxy.rs`).
fn ratio_of_sums(
    iters: u64,
    mut direct: impl FnMut() -> Duration,
    mut proxied: impl FnMut() -> Duration,
) -> Duration {
    let (mut d, mut p) = (Duration::ZERO, Duration::ZERO);
    for i in 0..iters {
        if i % 2 == 0 {
            d += direct();
            p += proxied();
        } else {
            p += proxied();
            d += direct();
        }
    }
    Duration::from_secs_f64(p.as_secs_f64() / d.as_secs_f64() * iters as f64)
}

fn bench_upload(c: &mut Criterion) {
    let (proxy, vault) = PROXY.get().expect("proxy started");
    let ca = CA.get().expect("CA made in main");
    let server = https_server(ca);
    let direct = client_config(&std::fs::read(&ca.pem).expect("CA"));
    let through = client_config(vault.authority.cert_pem().as_bytes());
    let placeholder = vault.secrets[0].placeholder.clone();
    let port = proxy.http_port();
    let mut group = c.benchmark_group("secrets_upload_100MiB");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(TRANSFER as u64));
    group.bench_function("direct_tls", |b| {
        b.iter_custom(|n| (0..n).map(|_| upload(&direct, server, None, VALUE)).sum())
    });
    group.bench_function("terminating_proxy", |b| {
        b.iter_custom(|n| {
            (0..n)
                .map(|_| upload(&through, server, Some(port), &placeholder))
                .sum()
        })
    });
    group.bench_function("ratio_proxied_over_direct_in_s", |b| {
        b.iter_custom(|n| {
            ratio_of_sums(
                n,
                || upload(&direct, server, None, VALUE),
                || upload(&through, server, Some(port), &placeholder),
            )
        })
    });
    group.finish();
}

/// The bench server's CA, made in `main` (the proxy trusts its PEM).
static CA: OnceLock<TestCa> = OnceLock::new();

// ---- through the real binary ---------------------------------------------

const EMPTY_SPELL: &str = "fun main(args: [str]) > void {}\n";

/// A workspace with the spells `empty` and `fetch` (one `curl` to the
/// server, with the secret's variable as a Bearer token), `hosts` and,
/// if `bound` is given, a secret bound to that host.
fn workspace(root: &Path, name: &str, server: u16, bound: Option<&str>) -> PathBuf {
    let ws = root.join(name);
    std::fs::create_dir_all(ws.join("spells")).expect("workspace");
    std::fs::write(ws.join("spells/empty.buzz"), EMPTY_SPELL).expect("spell");
    let fetch = format!(
        "import \"sh\";\nfun main(args: [str]) > int {{\n    return sh.run([\"/bin/sh\", \"-c\", \"curl -fsS -o /dev/null -H \\\"Authorization: Bearer $GITHUB_TOKEN\\\" https://localhost:{server}/x\"]);\n}}\n"
    );
    std::fs::write(ws.join("spells/fetch.buzz"), fetch).expect("spell");
    let mut config =
        format!("sandbox:\n  enabled: true\n  network:\n    hosts: [\"localhost:{server}\"]\n");
    if let Some(host) = bound {
        config.push_str("spells:\n");
        for spell in ["empty", "fetch"] {
            config.push_str(&format!(
                "  {spell}:\n    secrets:\n      - name: GITHUB_TOKEN\n        from: {{env: BENCH_TOKEN}}\n        hosts: [\"{host}\"]\n"
            ));
        }
    }
    std::fs::write(ws.join("magus.yaml"), config).expect("config");
    ws
}

fn run_spell(magus: &Path, ws: &Path, home: &Path, ca: &Path, spell: &str) {
    let out = Command::new(magus)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home)
        .env("BENCH_TOKEN", VALUE)
        .env("SSL_CERT_FILE", ca)
        .args(["--workspace".as_ref(), ws.as_os_str()])
        .args(["run", spell])
        .output()
        .expect("magus runs");
    assert!(
        out.status.success(),
        "magus run {spell}: {} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

fn bench_binary(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    // A copy, as an installed magus is (see `benches/run.rs`).
    let magus = dir.path().join("magus");
    std::fs::copy(env!("CARGO_BIN_EXE_magus"), &magus).expect("copy of magus");
    let ca = CA.get().expect("CA made in main");
    let server = https_server(ca);
    let here = format!("localhost:{server}");
    let without = workspace(dir.path(), "without", server, None);
    let bound = workspace(dir.path(), "bound", server, Some(&here));
    let elsewhere = workspace(dir.path(), "elsewhere", server, Some("api.github.com"));
    let mut group = c.benchmark_group("secrets_startup");
    group.bench_function("empty_spell_without_secrets", |b| {
        b.iter(|| run_spell(&magus, &without, &home, &ca.pem, "empty"))
    });
    group.bench_function("empty_spell_with_secrets", |b| {
        b.iter(|| run_spell(&magus, &bound, &home, &ca.pem, "empty"))
    });
    // The load of a shared machine moves between the two above: the two
    // runs back to back, their ratio as the "time" (1 s: equal).
    let timed = |ws: &Path| {
        let start = Instant::now();
        run_spell(&magus, ws, &home, &ca.pem, "empty");
        start.elapsed()
    };
    group.bench_function("ratio_with_over_without_in_s", |b| {
        b.iter_custom(|n| ratio_of_sums(n, || timed(&without), || timed(&bound)))
    });
    group.finish();
    if !have_curl() {
        eprintln!("secrets_first_request skipped: it needs curl on PATH");
        return;
    }
    let mut group = c.benchmark_group("secrets_first_request");
    group.bench_function("curl_plain_tunnel", |b| {
        b.iter(|| run_spell(&magus, &elsewhere, &home, &ca.pem, "fetch"))
    });
    group.bench_function("curl_bound_host_terminated", |b| {
        b.iter(|| run_spell(&magus, &bound, &home, &ca.pem, "fetch"))
    });
    group.finish();
}

fn have_curl() -> bool {
    Command::new("curl")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

criterion_group!(benches, bench_binary, bench_upload);

fn main() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    let ca = test_ca(dir.path());
    let binding = SecretBinding {
        name: "GITHUB_TOKEN".into(),
        source: SecretSource::Env("BENCH_TOKEN".into()),
        hosts: vec![HostRule::parse("localhost").expect("rule")],
        rules: Vec::new(),
        at: Position { line: 1, column: 1 },
    };
    let vault = Vault::new(
        vec![(binding, VALUE.as_bytes().to_vec())],
        Some(ca.pem.clone()),
    )
    .expect("vault");
    let vault = Arc::new(vault);
    let hosts = HostList::of(vec![HostRule::parse("localhost").expect("rule")]);
    let mut proxy = Proxy::start_guarding(&hosts, Some(Arc::clone(&vault))).expect("proxy");
    proxy.listen().expect("the proxy listens");
    let _ = PROXY.set((proxy, vault));
    let _ = CA.set(ca);
    benches();
    Criterion::default().configure_from_args().final_summary();
    drop(dir);
}
