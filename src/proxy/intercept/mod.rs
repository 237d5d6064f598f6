//! TLS termination for the hosts a secret is bound to (docs/secrets.md):
//! the child's TLS ends here with a leaf certificate of the per-run CA;
//! its one HTTP/1.1 request is read, its headers get the real value in
//! place of the placeholder (`head.rs`), the secret's rules are checked
//! (`rules.rs`), its body is checked as it streams (`body.rs`), and the
//! request goes on over TLS to the real host, verified against the roots
//! magus trusts; the response comes back with every value masked
//! (`response.rs`). Every other host stays a plain tunnel (`serve.rs`).

mod body;
mod head;
mod response;
mod rules;

pub(crate) use body::{forward_body, hold_body};
pub(crate) use head::{basic_credentials, percent_decoded};

use super::events::Event;
use super::leg::{Conn, Leg};
use super::request::{Target, MAX_HEAD};
use super::vault::Vault;
use body::{forward_records, IN_A_BODY};
use head::{exfiltration, rewrite, Rewritten};
use response::{relay_masked, Masker};
use rustls::client::UnbufferedClientConnection;
use rustls::pki_types::ServerName;
use rustls::server::UnbufferedServerConnection;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};

/// The proxy's TLS side for a run's secrets, set up before the proxy
/// confines itself (the roots file may lie anywhere).
pub(crate) struct Interceptor {
    pub vault: Arc<Vault>,
    client: Arc<ClientConfig>,
    servers: Mutex<HashMap<String, Arc<ServerConfig>>>,
}

/// Why a request to a bound host was refused, said as MGS2013.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The placeholder was going where its value may not.
    Exfiltration { secret: String, why: String },
    /// The request broke the secret's rules.
    Rule {
        secret: String,
        request: String,
        rules: String,
    },
    /// Not a request the proxy can read.
    Malformed(&'static str),
}

impl Refusal {
    /// The event for magus (none for a malformed request).
    pub(crate) fn event(&self, target: &Target) -> Option<Event> {
        let (secret, why, rules) = match self {
            Refusal::Exfiltration { secret, why } => (secret, why.clone(), None),
            Refusal::Rule {
                secret,
                request,
                rules,
            } => (
                secret,
                format!("the request `{request}` is outside the secret's rules"),
                Some(rules.clone()),
            ),
            Refusal::Malformed(_) => return None,
        };
        Some(Event::SecretRefused {
            host: target.host.clone(),
            port: target.port,
            secret: secret.clone(),
            why,
            rules,
        })
    }

    /// The line the client is told.
    pub(crate) fn line(&self, target: &Target) -> String {
        match self {
            Refusal::Exfiltration { secret, why } => format!(
                "magus: request to {}:{} refused: the secret `{secret}` {why} (MGS2013)",
                target.host, target.port
            ),
            Refusal::Rule {
                secret,
                request,
                rules,
            } => format!(
                "magus: `{request}` to {}:{} refused: the secret `{secret}` allows only {rules} (MGS2013)",
                target.host, target.port
            ),
            Refusal::Malformed(why) => format!("magus: bad request: {why}"),
        }
    }
}

/// Why the TLS side could not be set up.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InterceptError {
    #[error("TLS: {0}")]
    Tls(#[from] rustls::Error),
    #[error("no trusted root certificate could be loaded")]
    NoRoots,
}

/// rustls's default provider, `aws-lc-rs`: every byte of a bound host's
/// body is decrypted and encrypted again here, and its AES-GCM is the
/// fastest rustls offers (about 1.5 times `ring`'s, docs/benchmarks.md);
/// it also brings post-quantum key exchange to the leg to the real host.
pub(super) fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

impl Interceptor {
    /// Loads the roots (magus's `SSL_CERT_FILE`, else the system's).
    pub(crate) fn new(vault: Arc<Vault>) -> Result<Interceptor, InterceptError> {
        let mut roots = RootCertStore::empty();
        let certs = match &vault.roots_file {
            Some(file) => read_pem_certs(file),
            None => rustls_native_certs::load_native_certs().certs,
        };
        roots.add_parsable_certificates(certs);
        if roots.is_empty() {
            return Err(InterceptError::NoRoots);
        }
        let mut client = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        client.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Interceptor {
            vault,
            client: Arc::new(client),
            servers: Mutex::new(HashMap::new()),
        })
    }

    /// The server side for `host`, its leaf made on first use.
    fn server_config(&self, host: &str) -> io::Result<Arc<ServerConfig>> {
        let mut servers = self.servers.lock().map_err(|_| other("poisoned"))?;
        if let Some(config) = servers.get(host) {
            return Ok(Arc::clone(config));
        }
        let (chain, key) = self
            .vault
            .authority
            .leaf(host)
            .map_err(|e| other(&e.to_string()))?;
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .and_then(|b| b.with_no_client_auth().with_single_cert(chain, key))
            .map_err(|e| other(&e.to_string()))?;
        // HTTP/1.1 only: the request is read with httparse.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = Arc::new(config);
        servers.insert(host.to_string(), Arc::clone(&config));
        Ok(config)
    }

    /// Serves one tunnel to a bound host: `client` has been told the
    /// tunnel is open (`early`: what it sent past the `CONNECT` head);
    /// `upstream` is connected to the real host. Returns the bytes sent
    /// and received, and the refusal to report, if any.
    pub(crate) fn serve(
        &self,
        client: TcpStream,
        early: Vec<u8>,
        upstream: TcpStream,
        target: &Target,
        tell: &dyn Fn(&Refusal),
    ) -> io::Result<Served> {
        // Each TLS record is written as it is made; without this, Nagle's
        // algorithm holds a small one back until the peer's delayed ACK
        // (about 40 ms on the first request).
        let _ = client.set_nodelay(true);
        let _ = upstream.set_nodelay(true);
        let conn =
            UnbufferedServerConnection::new(self.server_config(&target.host)?).map_err(tls_err)?;
        let mut down = Leg::new(conn, client, early);
        let (head, rest) = read_head(&mut down)?;
        let rewritten = match rewrite(&self.vault, target, &head) {
            Ok(r) => r,
            Err(refusal) => return Ok(refused(&mut down, target, tell, refusal, 0)),
        };
        let name = ServerName::try_from(target.host.clone()).map_err(|e| other(&e.to_string()))?;
        let conn =
            UnbufferedClientConnection::new(Arc::clone(&self.client), name).map_err(tls_err)?;
        let mut up = Leg::new(conn, upstream, Vec::new());
        if rewritten.expect_continue {
            down.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        }
        // A body that fits in memory is read and checked whole before the
        // head (which carries the value) leaves: a refused request then
        // reaches the host not at all.
        let rest = hold_body(&mut down, rest, rewritten.framing)?;
        if let Some(held) = self.vault.found_in(&rest) {
            let refusal = exfiltration(held, IN_A_BODY);
            return Ok(refused(&mut down, target, tell, refusal, 0));
        }
        up.write_all(&rewritten.head)?;
        let head_sent = rewritten.head.len() as u64;
        let sent = match forward_records(&self.vault, &mut down, &mut up, rest, rewritten.framing)?
        {
            Ok(n) => head_sent + n,
            Err((refusal, n)) => {
                // The upstream gets no more (and no close_notify): the
                // request stays incomplete, so the host acts on nothing.
                up.abandon();
                return Ok(refused(&mut down, target, tell, refusal, head_sent + n));
            }
        };
        up.flush()?;
        let received = relay_masked(&mut up, &mut down, &mut self.masker(&rewritten));
        let _ = down.close();
        Ok(Served {
            sent,
            received,
            refusal: None,
        })
    }
}

impl Interceptor {
    /// The masking of a response to `request`: every value the vault
    /// holds (a host may send back one it was given before, or another
    /// secret's bound to it too) and the credentials made with them.
    fn masker(&self, request: &Rewritten) -> Masker {
        let values = self.vault.secrets.iter().map(|s| s.value().to_vec());
        Masker::new(values.chain(request.encoded.iter().cloned()).collect())
    }
}

/// Tells a refusal (to magus, and to the client as a `403`).
fn refused<C: Conn>(
    down: &mut Leg<C>,
    target: &Target,
    tell: &dyn Fn(&Refusal),
    refusal: Refusal,
    sent: u64,
) -> Served {
    tell(&refusal);
    respond(down, "403 Forbidden", &refusal.line(target));
    Served {
        sent,
        received: 0,
        refusal: Some(refusal),
    }
}

/// What one intercepted tunnel did (a refusal was told as it happened).
#[derive(Debug)]
pub(crate) struct Served {
    pub sent: u64,
    pub received: u64,
    // Told as it happened; kept for the tests' look at what a tunnel did.
    #[cfg_attr(not(test), allow(dead_code))]
    pub refusal: Option<Refusal>,
}

fn read_pem_certs(file: &std::path::Path) -> Vec<rustls::pki_types::CertificateDer<'static>> {
    use rustls::pki_types::pem::PemObject;
    match rustls::pki_types::CertificateDer::pem_file_iter(file) {
        Ok(iter) => iter.filter_map(Result::ok).collect(),
        Err(_) => Vec::new(),
    }
}

fn other(why: &str) -> io::Error {
    io::Error::other(why.to_string())
}

fn tls_err(e: rustls::Error) -> io::Error {
    io::Error::other(e)
}

/// Reads the decrypted request head; returns it and what followed it.
fn read_head(down: &mut impl Read) -> io::Result<(Vec<u8>, Vec<u8>)> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = find(&buf, b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(other("the request head is too large"));
        }
        let n = down.read(&mut chunk)?;
        if n == 0 {
            return Err(other("the connection closed before a whole request head"));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

pub(super) fn respond(down: &mut impl Write, status: &str, line: &str) {
    let body = format!("{line}\n");
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = down.write_all(reply.as_bytes());
    let _ = down.flush();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::request::Target;
    use crate::proxy::test_support::{trusting, vault, VALUE};
    use crate::proxy::vault::Authority;
    use rustls::{ClientConnection, ServerConnection, StreamOwned};
    use std::net::TcpListener;

    /// A TLS server for `localhost` under a test CA of its own, answering
    /// with the `Authorization` header it received in a header of its
    /// response, and in its body whether that header held the value.
    fn echo_server(dir: &std::path::Path) -> (u16, std::path::PathBuf) {
        let ca = Authority::new().expect("test CA");
        let roots = dir.join("test-roots.pem");
        std::fs::write(&roots, ca.cert_pem()).expect("roots");
        let (chain, key) = ca.leaf("localhost").expect("leaf");
        let config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("server config");
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        std::thread::spawn(move || {
            let (sock, _) = listener.accept().expect("accept");
            let conn = ServerConnection::new(config).expect("conn");
            let mut tls = StreamOwned::new(conn, sock);
            let (head, _) = read_head(&mut tls).expect("head");
            let text = String::from_utf8_lossy(&head).to_string();
            let auth = text
                .lines()
                .find(|l| l.starts_with("Authorization:"))
                .unwrap_or("none")
                .to_string();
            let value = String::from_utf8_lossy(VALUE);
            let said = format!("VALUE {}", auth.ends_with(&*value));
            let reply = format!(
                "HTTP/1.1 200 OK\r\nX-Echo: {auth}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{said}",
                said.len()
            );
            tls.write_all(reply.as_bytes()).expect("reply");
            tls.conn.send_close_notify();
            let _ = tls.flush();
        });
        (port, roots)
    }

    /// One tunnel to the bound host at `port`, served: a child that
    /// trusts only the per-run CA writes `request` in pieces of `piece`
    /// bytes and reads the reply. Returns what the tunnel did and the
    /// reply the child read.
    fn served_to_child(
        v: &Arc<Vault>,
        port: u16,
        request: Vec<u8>,
        piece: usize,
    ) -> (Served, String) {
        let tls = Interceptor::new(Arc::clone(v)).expect("interceptor");
        let front = TcpListener::bind("127.0.0.1:0").expect("front");
        let front_port = front.local_addr().expect("addr").port();
        let ca_pem = v.authority.cert_pem().to_string();
        let child = std::thread::spawn(move || {
            let name = ServerName::try_from("localhost").expect("name");
            let conn = ClientConnection::new(trusting(&ca_pem), name).expect("conn");
            let sock = TcpStream::connect(("127.0.0.1", front_port)).expect("connect");
            // A request cut short must end in a failure, not a hang.
            let _ = sock.set_read_timeout(Some(std::time::Duration::from_secs(20)));
            let mut tls = StreamOwned::new(conn, sock);
            for part in request.chunks(piece) {
                tls.write_all(part).expect("request");
            }
            let mut reply = Vec::new();
            let _ = tls.read_to_end(&mut reply);
            String::from_utf8_lossy(&reply).to_string()
        });
        let (client, _) = front.accept().expect("accept");
        let upstream = TcpStream::connect(("127.0.0.1", port)).expect("upstream");
        let target = Target {
            host: "localhost".into(),
            port,
        };
        let served = tls
            .serve(client, Vec::new(), upstream, &target, &|_| {})
            .expect("served");
        (served, child.join().expect("child"))
    }

    /// The host gets the value, and sends it back in a header of its
    /// response (as Stripe's API does with `Idempotency-Key`): the client
    /// reads it masked.
    #[test]
    fn a_tunnel_to_a_bound_host_carries_the_value_to_it_and_not_to_the_client() {
        let dir = tempfile::tempdir().expect("dir");
        let (port, roots) = echo_server(dir.path());
        let v = Arc::new(vault(Vec::new(), Some(roots)));
        let placeholder = v.secrets[0].placeholder.clone();
        let req = format!(
            "GET /x HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {placeholder}\r\n\r\n"
        );
        let (served, reply) = served_to_child(&v, port, req.into_bytes(), usize::MAX);
        assert!(served.refusal.is_none());
        assert!(reply.ends_with("\r\n\r\nVALUE true"), "{reply}");
        let mask = "*".repeat(VALUE.len());
        let echoed = format!("\r\nX-Echo: Authorization: Bearer {mask}\r\n");
        assert!(reply.contains(&echoed), "{reply}");
        assert!(!reply.contains(&*String::from_utf8_lossy(VALUE)), "{reply}");
    }

    /// A host that reads one request's `Content-Length` body and answers
    /// whether it was `expected`, byte for byte.
    fn checking_host(dir: &std::path::Path, expected: Vec<u8>) -> (u16, std::path::PathBuf) {
        let ca = Authority::new().expect("test CA");
        let roots = dir.join("test-roots.pem");
        std::fs::write(&roots, ca.cert_pem()).expect("roots");
        let config = crate::proxy::test_support::serving(&ca);
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        std::thread::spawn(move || {
            let (sock, _) = listener.accept().expect("accept");
            // A body cut short must end in a wrong answer, not a hang.
            let _ = sock.set_read_timeout(Some(std::time::Duration::from_secs(20)));
            let conn = ServerConnection::new(config).expect("conn");
            let mut tls = StreamOwned::new(conn, sock);
            let (head, mut body) = read_head(&mut tls).expect("head");
            let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
            let length: usize = text
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            let mut buf = vec![0u8; 64 * 1024];
            while body.len() < length {
                match tls.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => body.extend_from_slice(&buf[..n]),
                }
            }
            let said = format!("GOT {} SAME {}", body.len(), body == expected);
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{said}",
                said.len()
            );
            tls.write_all(reply.as_bytes()).expect("reply");
            tls.conn.send_close_notify();
            let _ = tls.flush();
        });
        (port, roots)
    }

    /// A body larger than the part held whole (1 MiB), written with its
    /// head in odd-sized pieces, so that the held part ends inside a
    /// record: the host gets every byte, in order.
    #[test]
    fn a_body_past_the_held_part_reaches_the_host_whole() {
        let dir = tempfile::tempdir().expect("dir");
        let body: Vec<u8> = (0..3 * 1024 * 1024 + 7).map(|i| (i % 239) as u8).collect();
        let (port, roots) = checking_host(dir.path(), body.clone());
        let v = Arc::new(vault(Vec::new(), Some(roots)));
        let mut request = format!(
            "POST /x HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(&body);
        let (served, reply) = served_to_child(&v, port, request, 10_007);
        assert!(served.refusal.is_none());
        assert!(
            reply.ends_with(&format!("GOT {} SAME true", 3 * 1024 * 1024 + 7)),
            "{reply}"
        );
    }

    /// A host that keeps every byte it is sent until none has come for
    /// half a second, then answers; returns what it got.
    fn recording_host(
        dir: &std::path::Path,
    ) -> (u16, std::path::PathBuf, std::thread::JoinHandle<Vec<u8>>) {
        let ca = Authority::new().expect("test CA");
        let roots = dir.join("test-roots.pem");
        std::fs::write(&roots, ca.cert_pem()).expect("roots");
        let config = crate::proxy::test_support::serving(&ca);
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let host = std::thread::spawn(move || {
            let (sock, _) = listener.accept().expect("accept");
            let _ = sock.set_read_timeout(Some(std::time::Duration::from_millis(500)));
            let mut tls = StreamOwned::new(ServerConnection::new(config).expect("conn"), sock);
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while let Ok(n) = tls.read(&mut buf) {
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            let reply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
            let _ = tls.write_all(reply.as_bytes());
            tls.conn.send_close_notify();
            let _ = tls.flush();
            got
        });
        (port, roots, host)
    }

    /// A second request after the first one's end, in the same TLS
    /// stream (pipelined; after a chunked body's last chunk; after a
    /// `Content-Length` body) never reaches the bound host: only the
    /// first, checked against the rules, goes on. The control: each
    /// stream holds a second request for `/admin` that a host reading it
    /// as it came would serve.
    #[test]
    fn a_second_request_in_the_stream_to_a_bound_host_goes_nowhere() {
        let second = "GET /admin HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer PH\r\n\r\n";
        for first in [
            "GET /x HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer PH\r\n\r\n",
            "POST /x HTTP/1.1\r\nAuthorization: Bearer PH\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            "POST /x HTTP/1.1\r\nAuthorization: Bearer PH\r\nContent-Length: 5\r\n\r\nhello",
        ] {
            for with_value in [true, false] {
                let dir = tempfile::tempdir().expect("dir");
                let (port, roots, host) = recording_host(dir.path());
                let v = Arc::new(vault(Vec::new(), Some(roots)));
                let ph = &v.secrets[0].placeholder;
                let tail = match with_value {
                    true => second.replace("PH", ph),
                    false => second.replace("Authorization: Bearer PH\r\n", ""),
                };
                let stream = format!("{}{tail}", first.replace("PH", ph));
                // The control: the stream holds the second request.
                let at = stream.find("GET /admin").expect("second");
                let mut headers = [httparse::EMPTY_HEADER; 8];
                let mut req = httparse::Request::new(&mut headers);
                assert!(req.parse(&stream.as_bytes()[at..]).is_ok_and(|s| s.is_complete()));
                let (served, _) = served_to_child(&v, port, stream.into_bytes(), 7);
                let got = String::from_utf8_lossy(&host.join().expect("host")).to_string();
                // With the placeholder in it, the second request is
                // refused whole when the proxy reads it with the first
                // (as part of what follows the first); when it comes
                // after the proxy is done with the first (under load, a
                // record at a time: 3 runs of the lib tests in 150), it is
                // dropped unread, as it is without the placeholder.
                if !with_value {
                    assert!(served.refusal.is_none(), "{first}");
                }
                if served.refusal.is_none() {
                    assert_eq!(got.matches(" HTTP/1.1\r\n").count(), 1, "{first}: {got}");
                }
                assert!(!got.contains("/admin"), "{first}: {got}");
            }
        }
    }
}
