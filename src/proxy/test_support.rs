//! What the proxy's tests share: a vault with a bound and an unbound
//! secret, request heads, and TLS peers (servers and clients under a test
//! CA of their own) to put on either side of a leg.

use super::intercept::provider;
use super::leg::Leg;
use super::request::Target;
use super::vault::{Authority, Vault};
use crate::policy::secrets::{tests_binding, RequestRule};
use rustls::client::UnbufferedClientConnection;
use rustls::pki_types::ServerName;
use rustls::server::UnbufferedServerConnection;
use rustls::StreamOwned;
use rustls::{ClientConfig, ClientConnection, RootCertStore, ServerConfig, ServerConnection};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

pub(super) const VALUE: &[u8] = b"ghp_REAL-value-never-in-the-jail";

pub(super) fn vault(rules: Vec<RequestRule>, roots: Option<std::path::PathBuf>) -> Vault {
    let mut bound = tests_binding("GITHUB_TOKEN", "localhost");
    bound.rules = rules;
    let other = tests_binding("OTHER", "elsewhere.example");
    Vault::new(
        vec![(bound, VALUE.to_vec()), (other, b"other-value".to_vec())],
        roots,
    )
    .expect("vault")
}

pub(super) fn target() -> Target {
    Target {
        host: "localhost".into(),
        port: 8443,
    }
}

pub(super) fn head(v: &Vault, path: &str, header: &str) -> Vec<u8> {
    let header = header.replace("OTHERPH", &v.secrets[1].placeholder);
    let header = header.replace("PH", &v.secrets[0].placeholder);
    format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n{header}\r\n\r\n")
        .into_bytes()
}

/// A client side that trusts only the CA `ca_pem`.
pub(super) fn trusting(ca_pem: &str) -> Arc<ClientConfig> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = RootCertStore::empty();
    let ca = rustls::pki_types::CertificateDer::from_pem_slice(ca_pem.as_bytes()).expect("ca");
    roots.add(ca).expect("add");
    let config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

/// The server side of a test connection, for `localhost` under `ca`.
pub(super) fn serving(ca: &Authority) -> Arc<ServerConfig> {
    serving_only(ca, rustls::DEFAULT_VERSIONS)
}

/// The same, speaking only `versions`.
pub(super) fn serving_only(
    ca: &Authority,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Arc<ServerConfig> {
    let (chain, key) = ca.leaf("localhost").expect("leaf");
    let config = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(versions)
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("server config");
    Arc::new(config)
}

/// A peer that connects to `port` trusting `ca`, writes `data` in
/// records of `record` bytes, closes, and reads until the other side
/// closes; returns what it read. It stops writing when the other side
/// has gone: a proxy that refuses a body closes before the rest of it
/// arrives, and under load the peer may still be writing then (a
/// broken pipe, once in about seven runs of the lib tests beside a
/// build).
pub(super) fn writing_peer(
    ca: &Authority,
    port: u16,
    data: Vec<u8>,
    record: usize,
) -> std::thread::JoinHandle<Vec<u8>> {
    let client = trusting(ca.cert_pem());
    std::thread::spawn(move || {
        let name = ServerName::try_from("localhost").expect("name");
        let conn = ClientConnection::new(client, name).expect("conn");
        let sock = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        let mut tls = StreamOwned::new(conn, sock);
        let written = data
            .chunks(record)
            .try_for_each(|piece| tls.write_all(piece));
        if written.is_ok() {
            tls.conn.send_close_notify();
            let _ = tls.flush();
        }
        // Until the other side closes: a socket closed with unread
        // bytes (the session tickets) would be reset.
        let mut got = Vec::new();
        let _ = tls.read_to_end(&mut got);
        got
    })
}

/// A host that keeps every byte of plaintext it receives until its
/// peer goes (cleanly or not).
pub(super) fn capturing_host(ca: &Authority) -> (u16, std::thread::JoinHandle<Vec<u8>>) {
    capturing_host_with(serving(ca))
}

pub(super) fn capturing_host_with(
    config: Arc<ServerConfig>,
) -> (u16, std::thread::JoinHandle<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let host = std::thread::spawn(move || {
        let (sock, _) = listener.accept().expect("accept");
        let conn = ServerConnection::new(config).expect("conn");
        let mut tls = StreamOwned::new(conn, sock);
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = tls.read(&mut buf) {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        got
    });
    (port, host)
}

/// A leg to the child, under `config`: its peer (returned, to join)
/// writes `data` in records of `record` bytes, as `writing_peer` does.
pub(super) fn leg_from_peer(
    ca: &Authority,
    config: Arc<ServerConfig>,
    data: Vec<u8>,
    record: usize,
) -> (
    Leg<UnbufferedServerConnection>,
    std::thread::JoinHandle<Vec<u8>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let peer = writing_peer(ca, port, data, record);
    let (sock, _) = listener.accept().expect("accept");
    let conn = UnbufferedServerConnection::new(config).expect("conn");
    (Leg::new(conn, sock, Vec::new()), peer)
}

/// A leg to the host on `port` for `localhost`, trusting only `ca`.
pub(super) fn leg_to_host(ca: &Authority, port: u16) -> Leg<UnbufferedClientConnection> {
    let name = ServerName::try_from("localhost").expect("name");
    let conn = UnbufferedClientConnection::new(trusting(ca.cert_pem()), name).expect("conn");
    let upstream = TcpStream::connect(("127.0.0.1", port)).expect("host");
    Leg::new(conn, upstream, Vec::new())
}
