//! TLS termination for the hosts a secret is bound to (docs/secrets.md):
//! the child's TLS ends here with a leaf certificate of the per-run CA;
//! its one HTTP/1.1 request is read, its headers get the real value in
//! place of the placeholder (Basic credentials included), the secret's
//! rules are checked, and the request goes on over TLS to the real host,
//! verified against the roots magus trusts; the response comes back as
//! is. Every other host stays a plain tunnel (`serve.rs`).

use super::events::Event;
use super::leg::{Conn, Flow, Leg, READ_AT_ONCE};
use super::request::{body_framing, Advance, BodyEnd, BodyFraming, Target, MAX_HEAD};
use super::vault::{contains, Held, Vault};
use rustls::client::UnbufferedClientConnection;
use rustls::pki_types::ServerName;
use rustls::server::UnbufferedServerConnection;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};

/// Most headers a request may have.
const MAX_HEADERS: usize = 100;

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
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
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
        let received = relay_response(&mut up, &mut down);
        let _ = down.close();
        Ok(Served {
            sent,
            received,
            refusal: None,
        })
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

/// Why a placeholder in a body is refused.
const IN_A_BODY: &str = "was in a request body, where it is never replaced";

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

/// The largest piece of a plain request's body moved at once.
const BODY_PIECE: usize = READ_AT_ONCE;

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

/// The request to send upstream.
#[derive(Debug)]
pub(crate) struct Rewritten {
    pub head: Vec<u8>,
    pub framing: BodyFraming,
    pub expect_continue: bool,
}

/// Headers not passed on: connection management (one request per
/// tunnel), the proxy's own, `Host` (set to the tunnel's host), `Expect`
/// (the proxy answers `100 Continue` itself), and the body's framing,
/// which is sent as the proxy read it ([`framing_header`]).
fn dropped(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "host",
        "connection",
        "keep-alive",
        "upgrade",
        "expect",
        "te",
        "content-length",
        "transfer-encoding",
    ]
    .contains(&name.as_str())
        || name.starts_with("proxy-")
}

/// Checks and rewrites one request head for the bound host `target`.
pub(crate) fn rewrite(vault: &Vault, target: &Target, head: &[u8]) -> Result<Rewritten, Refusal> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err(Refusal::Malformed("not an HTTP/1.1 request head")),
    }
    let (Some(method), Some(path)) = (request.method, request.path) else {
        return Err(Refusal::Malformed("not an HTTP/1.1 request head"));
    };
    if !path.starts_with('/') {
        return Err(Refusal::Malformed("the request target is not a path"));
    }
    if let Some(held) = vault.found_in(&percent_decoded(path.as_bytes())) {
        return Err(exfiltration(
            held,
            "was in the URL, where it is never replaced",
        ));
    }
    let framing = body_framing(&request).map_err(Refusal::Malformed)?;
    let mut used: Vec<&Held> = Vec::new();
    let authority = match target.port {
        443 => target.host.clone(),
        port => format!("{}:{port}", target.host),
    };
    let mut out = format!("{method} {path} HTTP/1.1\r\nHost: {authority}\r\n").into_bytes();
    let mut expect_continue = false;
    let mut overrides: Vec<&str> = Vec::new();
    for header in request.headers.iter() {
        if header.name.eq_ignore_ascii_case("expect") {
            expect_continue = header.value.eq_ignore_ascii_case(b"100-continue");
        }
        if dropped(header.name) {
            continue;
        }
        if overriding(header.name) {
            overrides.push(header.name);
        }
        let value = substitute_header(vault, target, header.name, header.value, &mut used)?;
        out.extend_from_slice(header.name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(&value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(framing_header(&request, framing).as_bytes());
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    for held in used {
        check_echoes(held, method, &request)?;
        check_rules(held, method, path)?;
        check_overrides(held, method, path, &overrides)?;
    }
    Ok(Rewritten {
        head: out,
        framing,
        expect_continue,
    })
}

/// The body's framing as one header in its plain spelling, in place of
/// the client's (`Content-Length: 0005`, `transfer-encoding: Chunked`, a
/// repeated length): a host, or the front end before it, that reads one
/// of those otherwise than the proxy did would take the rest of the body
/// for a request of its own, past the rules. A request that declared no
/// length gets none.
fn framing_header(request: &httparse::Request<'_, '_>, framing: BodyFraming) -> String {
    let declared = request
        .headers
        .iter()
        .any(|h| h.name.eq_ignore_ascii_case("content-length"));
    match framing {
        BodyFraming::Chunked => "Transfer-Encoding: chunked\r\n".to_string(),
        BodyFraming::Length(n) if declared || n > 0 => format!("Content-Length: {n}\r\n"),
        BodyFraming::Length(_) => String::new(),
    }
}

fn exfiltration(held: &Held, why: &str) -> Refusal {
    Refusal::Exfiltration {
        secret: held.binding.name.clone(),
        why: why.to_string(),
    }
}

/// One header's value with each bound placeholder replaced (inside Basic
/// credentials too); a placeholder of a secret not bound to `target` is
/// refused.
fn substitute_header<'v>(
    vault: &'v Vault,
    target: &Target,
    name: &str,
    value: &[u8],
    used: &mut Vec<&'v Held>,
) -> Result<Vec<u8>, Refusal> {
    let basic = name.eq_ignore_ascii_case("authorization")
        && value.len() > 6
        && value[..6].eq_ignore_ascii_case(b"basic ");
    if basic {
        if let Some(decoded) = base64_decode(value[6..].trim_ascii()) {
            if vault.found_in(&decoded).is_some() {
                let replaced = replace_bound(vault, target, name, &decoded, used)?;
                let mut out = b"Basic ".to_vec();
                out.extend_from_slice(base64_encode(&replaced).as_bytes());
                return Ok(out);
            }
        }
    }
    replace_bound(vault, target, name, value, used)
}

/// The decoded user and password of each `Authorization: Basic` header in
/// a request head (a client encodes the placeholder there itself).
pub(crate) fn basic_credentials(head: &[u8]) -> Vec<Vec<u8>> {
    const NAME: &[u8] = b"authorization:";
    head.split(|&b| b == b'\n')
        .filter(|line| line.len() > NAME.len() && line[..NAME.len()].eq_ignore_ascii_case(NAME))
        .map(|line| line[NAME.len()..].trim_ascii())
        .filter(|value| value.len() > 6 && value[..6].eq_ignore_ascii_case(b"basic "))
        .filter_map(|value| base64_decode(value[6..].trim_ascii()))
        .collect()
}

fn replace_bound<'v>(
    vault: &'v Vault,
    target: &Target,
    name: &str,
    value: &[u8],
    used: &mut Vec<&'v Held>,
) -> Result<Vec<u8>, Refusal> {
    let mut out = value.to_vec();
    for held in &vault.secrets {
        if !contains(&out, held.placeholder.as_bytes()) {
            continue;
        }
        if !held.binding.bound_to(&target.host, target.port) {
            let why =
                format!("was in the `{name}` header of a request to a host it is not bound to");
            return Err(exfiltration(held, &why));
        }
        out = replace_all(&out, held.placeholder.as_bytes(), held.value());
        if !used.iter().any(|u| std::ptr::eq(*u, held)) {
            used.push(held);
        }
    }
    Ok(out)
}

fn replace_all(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut i = 0;
    while i < haystack.len() {
        if haystack[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(haystack[i]);
            i += 1;
        }
    }
    out
}

/// The secret's rules, on the path without its query. Where rules exist,
/// a request a server could read as another is refused whatever its path
/// ([`ambiguous_path`]), and so is Symfony's and Laravel's `_method`
/// query parameter, which those frameworks act on instead of the method.
fn check_rules(held: &Held, method: &str, path: &str) -> Result<(), Refusal> {
    let bare = path.split('?').next().unwrap_or(path);
    let query = path.split_once('?').map_or("", |(_, q)| q);
    let refused = match held.binding.refuses(method, bare) {
        Some(rules) => Some(rules),
        None if held.binding.rules.is_empty() => None,
        None if ambiguous_path(bare) || method_parameter(query) => Some(rules_text(held)),
        None => None,
    };
    match refused {
        None => Ok(()),
        Some(rules) => Err(Refusal::Rule {
            secret: held.binding.name.clone(),
            request: format!("{method} {bare}"),
            rules,
        }),
    }
}

fn rules_text(held: &Held) -> String {
    held.binding
        .rules
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" or ")
}

/// Whether some server could resolve `path` (the request target before
/// its query) to another path than the one the rules were checked on:
/// the rules see the bytes as sent, while servers decode escapes, drop
/// `;params` from each segment and then remove dot segments (Tomcat and
/// Jetty read `/api/..;/admin` as `/admin`), take `\` for `/` (IIS,
/// some routers), trim trailing spaces and dots (Windows: `..%20`),
/// keep a `#` that no client sends as part of the path
/// (`/api/x#/../../admin`), or fold Unicode (a full-width `．`). So any
/// of these is refused where rules exist: a segment of dots alone (after
/// its params, decoded and trimmed), `\`, `#`, a byte outside printable
/// ASCII, a `%` without two hex digits after it, and an escape for `.`,
/// `/`, `\`, `;`, `%` (double encoding), a control character or a
/// non-ASCII byte.
fn ambiguous_path(path: &str) -> bool {
    let dot_segment = path
        .split('/')
        .map(|s| s.split(';').next().unwrap_or(s))
        .any(dots_only);
    let odd_byte = path
        .bytes()
        .any(|b| b == b'\\' || b == b'#' || !(0x21..0x7f).contains(&b));
    dot_segment || odd_byte || escapes(path.as_bytes()).any(|b| !plain_escape(b))
}

/// Whether a path segment (its params dropped) is dots alone once
/// decoded and trimmed: `.`, `..`, and what Windows servers trim to them
/// (`..%20`, `...`).
fn dots_only(segment: &str) -> bool {
    let decoded = percent_decoded(segment.as_bytes());
    let trimmed = decoded.trim_ascii();
    !trimmed.is_empty() && trimmed.iter().all(|&b| b == b'.')
}

/// The bytes `path`'s escapes stand for; a `%` not followed by two hex
/// digits (`%%32%65`, which decodes to `%2e` and then to `.`) stands
/// for `%`, which [`plain_escape`] refuses.
fn escapes(path: &[u8]) -> impl Iterator<Item = u8> + '_ {
    let hex = |b: Option<&u8>| b.and_then(|&b| (b as char).to_digit(16));
    let at = path.iter().enumerate().filter(|(_, &b)| b == b'%');
    at.map(
        move |(i, _)| match (hex(path.get(i + 1)), hex(path.get(i + 2))) {
            (Some(h), Some(l)) => u8::try_from(h * 16 + l).unwrap_or(b'%'),
            _ => b'%',
        },
    )
}

/// An escaped byte every server reads as that one character of a path
/// segment (a space, `?`, `@`...).
fn plain_escape(byte: u8) -> bool {
    (0x20..0x7f).contains(&byte) && !b"./\\;%#".contains(&byte)
}

/// Whether a query string has a `_method` parameter (its name escaped or
/// not, any case).
fn method_parameter(query: &str) -> bool {
    query.split('&').any(|pair| {
        let name = pair.split('=').next().unwrap_or(pair);
        percent_decoded(name.as_bytes()).eq_ignore_ascii_case(b"_method")
    })
}

/// Headers some servers act on instead of the request line's method or
/// path (method override for clients that can only send GET and POST;
/// the URL a front end rewrote from, trusted by IIS, Symfony and Zend),
/// or instead of `Host` (the site a shared front end serves). Legitimate
/// API clients do not send them with a token.
const OVERRIDING: [&str; 10] = [
    "x-http-method-override",
    "x-http-method",
    "x-method-override",
    "x-original-method",
    "x-original-url",
    "x-rewrite-url",
    "x-forwarded-host",
    "x-forwarded-server",
    "x-host",
    "forwarded",
];

/// Whether `name` is one of [`OVERRIDING`], spelled with `-` or `_` (a
/// CGI-style gateway gives both to the application as the same variable).
fn overriding(name: &str) -> bool {
    let name = name.replace('_', "-");
    OVERRIDING.iter().any(|o| name.eq_ignore_ascii_case(o))
}

/// A request that carries the secret's value and a header in
/// [`OVERRIDING`] is refused: the host could act on another method, path
/// or site than the rules and the binding were checked on.
fn check_overrides(
    held: &Held,
    method: &str,
    path: &str,
    overrides: &[&str],
) -> Result<(), Refusal> {
    let Some(name) = overrides.first() else {
        return Ok(());
    };
    let bare = path.split('?').next().unwrap_or(path);
    let rules = match held.binding.rules.is_empty() {
        true => "its own method, path and host".to_string(),
        false => rules_text(held),
    };
    Err(Refusal::Rule {
        secret: held.binding.name.clone(),
        request: format!("{method} {bare} with `{name}`"),
        rules,
    })
}

/// Headers whose value hosts commonly send back in the response (CORS
/// reflects `Origin` and `Access-Control-Request-*`; request-id and
/// tracing middlewares echo their ids; error pages and logs the caller
/// can read quote `User-Agent`, `Referer`, the content type, ranges and
/// validators; forwarding headers are logged and echoed), or that are
/// standard and never carry a credential. The placeholder in one of them
/// is refused rather than replaced: the value would come back to the
/// spell. A credential belongs in `Authorization`, `Cookie`, or an API's
/// own header.
const ECHOED: [&str; 28] = [
    "origin",
    "referer",
    "user-agent",
    "from",
    "access-control-request-method",
    "access-control-request-headers",
    "x-request-id",
    "x-correlation-id",
    "request-id",
    "correlation-id",
    "x-amzn-trace-id",
    "x-cloud-trace-context",
    "traceparent",
    "tracestate",
    "baggage",
    "accept",
    "accept-language",
    "accept-encoding",
    "accept-charset",
    "content-type",
    "content-language",
    "range",
    "if-match",
    "if-none-match",
    "if-range",
    "x-forwarded-for",
    "x-real-ip",
    "via",
];

/// The value may not go where the host sends it back: in a header of
/// [`ECHOED`] (or one that reads as such a header: `X_Request_Id`), or
/// in a `TRACE` or `TRACK` request, which a host that allows it answers
/// with the whole request head, `Authorization` included.
fn check_echoes(
    held: &Held,
    method: &str,
    request: &httparse::Request<'_, '_>,
) -> Result<(), Refusal> {
    if method.eq_ignore_ascii_case("TRACE") || method.eq_ignore_ascii_case("TRACK") {
        let why = format!(
            "would go in a `{method}` request, which hosts answer with the request's headers"
        );
        return Err(exfiltration(held, &why));
    }
    let placeholder = held.placeholder.as_bytes();
    let echoed = request.headers.iter().find(|h| {
        let name = h.name.replace('_', "-");
        ECHOED.iter().any(|e| name.eq_ignore_ascii_case(e)) && contains(h.value, placeholder)
    });
    match echoed {
        Some(h) => Err(exfiltration(
            held,
            &format!("was in the `{}` header, which hosts send back in their responses; a secret goes in `Authorization`, `Cookie` or a header of the API's own", h.name),
        )),
        None => Ok(()),
    }
}

/// How much of a request body is read before anything is sent upstream.
const BODY_HOLD: usize = 1024 * 1024;

/// Reads the body after `rest` until it ends (by its framing) or
/// [`BODY_HOLD`] bytes are held; returns what was read.
pub(crate) fn hold_body(
    down: &mut impl Read,
    rest: Vec<u8>,
    framing: BodyFraming,
) -> io::Result<Vec<u8>> {
    let mut body = BodyEnd::new(framing);
    let mut held = rest;
    let mut seen = 0;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if let Advance::Ended(_) | Advance::Malformed(_) = body.advance(&held[seen..]) {
            return Ok(held);
        }
        seen = held.len();
        if body.finished() || held.len() >= BODY_HOLD {
            return Ok(held);
        }
        let n = down.read(&mut buf)?;
        if n == 0 {
            return Ok(held);
        }
        held.extend_from_slice(&buf[..n]);
    }
}

/// The placeholder check of a body met a piece at a time: each piece is
/// searched, and so is its join with the bytes before it, so a
/// placeholder cut across pieces (records, reads) is found wherever it
/// is cut.
pub(crate) struct BodyCheck<'v> {
    vault: &'v Vault,
    body: BodyEnd,
    /// One byte less than the longest placeholder: as much of one as can
    /// end a piece without being whole in it.
    keep: usize,
    /// The last `keep` bytes seen.
    tail: Vec<u8>,
}

impl<'v> BodyCheck<'v> {
    pub(crate) fn new(vault: &'v Vault, framing: BodyFraming) -> BodyCheck<'v> {
        let longest = vault.secrets.iter().map(|s| s.placeholder.len()).max();
        let keep = longest.unwrap_or(1).saturating_sub(1);
        BodyCheck {
            vault,
            body: BodyEnd::new(framing),
            keep,
            tail: Vec::with_capacity(2 * keep),
        }
    }

    /// Checks the next bytes of the stream: returns how many of them
    /// belong to the body and whether the body ends with them, or the
    /// refusal of a placeholder found.
    pub(crate) fn piece(&mut self, plain: &[u8]) -> Result<(usize, bool), Refusal> {
        let (n, ended) = match self.body.advance(plain) {
            Advance::More(n) => (n, false),
            Advance::Ended(n) | Advance::Malformed(n) => (n, true),
        };
        let piece = &plain[..n];
        self.tail.extend_from_slice(&piece[..n.min(self.keep)]);
        let found = self
            .vault
            .found_in(&self.tail)
            .or_else(|| self.vault.found_in(piece));
        if let Some(held) = found {
            return Err(exfiltration(held, IN_A_BODY));
        }
        if n >= self.keep {
            self.tail.clear();
            self.tail.extend_from_slice(&piece[n - self.keep..]);
        } else {
            let cut = self.tail.len().saturating_sub(self.keep);
            self.tail.drain(..cut);
        }
        Ok((n, ended || self.body.finished()))
    }
}

/// Copies a plain request's body (already read part `rest` first) to the
/// host, refusing it at the first placeholder: the last bytes of each
/// piece are held back until the next piece shows no placeholder
/// straddles them. Pieces are read into one buffer, after the held bytes,
/// and written from it: no copy per piece but the held tail's.
pub(crate) fn forward_body(
    vault: &Vault,
    down: &mut impl Read,
    up: &mut impl Write,
    rest: Vec<u8>,
    framing: BodyFraming,
) -> io::Result<Result<u64, Refusal>> {
    let mut check = BodyCheck::new(vault, framing);
    let keep = check.keep;
    let mut sent = 0u64;
    let mut buf = rest;
    let mut len = buf.len();
    buf.resize(len.max(keep + BODY_PIECE), 0);
    // `buf[..held]` was checked and held back; `buf[held..len]` is new.
    let mut held = 0;
    loop {
        let (n, ended) = match check.piece(&buf[held..len]) {
            Ok(piece) => piece,
            Err(refusal) => return Ok(Err(refusal)),
        };
        len = held + n;
        let flush = match ended {
            true => len,
            false => len.saturating_sub(keep),
        };
        up.write_all(&buf[..flush])?;
        sent += flush as u64;
        if ended {
            return Ok(Ok(sent));
        }
        buf.copy_within(flush..len, 0);
        held = len - flush;
        let read = down.read(&mut buf[held..])?;
        if read == 0 {
            return Ok(Ok(sent));
        }
        len = held + read;
    }
}

/// Moves a bound host's request body from the child's leg to the host's
/// (`rest`, already read, first). Each record's plaintext is checked
/// where rustls left it and encrypted for the host, staged; a staged
/// record leaves once the bytes after it show no placeholder begins in
/// it. Returns the body bytes sent, and on a refusal also those sent
/// before it.
pub(crate) fn forward_records<D: Conn, U: Conn>(
    vault: &Vault,
    down: &mut Leg<D>,
    up: &mut Leg<U>,
    rest: Vec<u8>,
    framing: BodyFraming,
) -> io::Result<Result<u64, (Refusal, u64)>> {
    let mut check = BodyCheck::new(vault, framing);
    let before = up.plain_released();
    let mut outcome = None;
    take_piece(&mut check, up, &rest, &mut outcome)?;
    while outcome.is_none() {
        let open =
            down.read_records(&mut |plain| take_piece(&mut check, up, plain, &mut outcome))?;
        // Before the child's leg waits on its socket again.
        up.send_released()?;
        if !open {
            break;
        }
    }
    match outcome {
        Some(Err(refusal)) => Ok(Err((refusal, up.plain_released() - before))),
        _ => {
            up.release_all()?;
            Ok(Ok(up.plain_released() - before))
        }
    }
}

/// One piece of a body, checked, then staged on the host's leg.
fn take_piece<U: Conn>(
    check: &mut BodyCheck<'_>,
    up: &mut Leg<U>,
    plain: &[u8],
    outcome: &mut Option<Result<(), Refusal>>,
) -> io::Result<Flow> {
    match check.piece(plain) {
        Err(refusal) => {
            *outcome = Some(Err(refusal));
            Ok(Flow::Enough)
        }
        Ok((n, ended)) => {
            if n > 0 {
                up.stage(&plain[..n])?;
            }
            if ended {
                *outcome = Some(Ok(()));
                return Ok(Flow::Enough);
            }
            up.release_keeping(check.keep)?;
            Ok(Flow::More)
        }
    }
}

/// The response, as is, until the host ends it.
fn relay_response(up: &mut impl Read, down: &mut impl Write) -> u64 {
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = match up.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if down.write_all(&buf[..n]).is_err() {
            break;
        }
        total += n as u64;
    }
    let _ = down.flush();
    total
}

fn respond(down: &mut impl Write, status: &str, line: &str) {
    let body = format!("{line}\n");
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = down.write_all(reply.as_bytes());
    let _ = down.flush();
}

/// `%XX` decoded (anything else as is), to find a placeholder written
/// with escapes.
pub(crate) fn percent_decoded(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if text[i] == b'%' && i + 2 < text.len() {
            if let (Some(h), Some(l)) = (hex(text[i + 1]), hex(text[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(text[i]);
        i += 1;
    }
    out
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64_encode(input: &[u8]) -> String {
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(B64[((n >> shift) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn base64_decode(input: &[u8]) -> Option<Vec<u8>> {
    let input: &[u8] = match input {
        [rest @ .., b'=', b'='] => rest,
        [rest @ .., b'='] => rest,
        all => all,
    };
    let mut out = Vec::with_capacity(input.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in input {
        let v = B64.iter().position(|&b| b == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::secrets::{tests_binding, PathRule, RequestRule};
    use rustls::{ClientConnection, ServerConnection, StreamOwned};
    use std::net::TcpListener;

    const VALUE: &[u8] = b"ghp_REAL-value-never-in-the-jail";

    fn vault(rules: Vec<RequestRule>, roots: Option<std::path::PathBuf>) -> Vault {
        let mut bound = tests_binding("GITHUB_TOKEN", "localhost");
        bound.rules = rules;
        let other = tests_binding("OTHER", "elsewhere.example");
        Vault::new(
            vec![(bound, VALUE.to_vec()), (other, b"other-value".to_vec())],
            roots,
        )
        .expect("vault")
    }

    fn target() -> Target {
        Target {
            host: "localhost".into(),
            port: 8443,
        }
    }

    fn head(v: &Vault, path: &str, header: &str) -> Vec<u8> {
        let header = header.replace("OTHERPH", &v.secrets[1].placeholder);
        let header = header.replace("PH", &v.secrets[0].placeholder);
        format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n{header}\r\n\r\n")
            .into_bytes()
    }

    #[test]
    fn the_bound_placeholder_becomes_the_value_in_headers_and_basic_credentials() {
        let v = vault(Vec::new(), None);
        let r = rewrite(&v, &target(), &head(&v, "/", "Authorization: Bearer PH")).expect("ok");
        let text = String::from_utf8_lossy(&r.head);
        assert!(
            text.contains("Authorization: Bearer ghp_REAL-value"),
            "{text}"
        );
        assert!(text.contains("Host: localhost:8443\r\n"), "{text}");
        assert!(text.contains("Connection: close\r\n"), "{text}");
        assert!(!text.contains("magus-secret-"), "{text}");

        let basic = base64_encode(format!("user:{}", v.secrets[0].placeholder).as_bytes());
        let h = format!("Authorization: Basic {basic}");
        let r = rewrite(&v, &target(), &head(&v, "/", &h)).expect("ok");
        let text = String::from_utf8_lossy(&r.head).to_string();
        let sent = text
            .split("Basic ")
            .nth(1)
            .and_then(|t| t.split("\r\n").next());
        let decoded = base64_decode(sent.expect("basic").as_bytes()).expect("base64");
        assert_eq!(decoded, [b"user:".as_slice(), VALUE].concat());
    }

    /// The host gets the framing the proxy read, in one plain header,
    /// whatever the client's spelling.
    #[test]
    fn the_body_framing_goes_upstream_as_the_proxy_read_it() {
        let v = vault(Vec::new(), None);
        let sent = |headers: &str| {
            let h = format!("POST / HTTP/1.1\r\nAuthorization: Bearer PH\r\n{headers}\r\n");
            let h = h.replace("PH", &v.secrets[0].placeholder);
            let r = rewrite(&v, &target(), h.as_bytes()).expect(headers);
            (String::from_utf8_lossy(&r.head).to_string(), r.framing)
        };
        let (text, framing) = sent("Content-Length: 0005\r\ncontent-length:  5 \r\n");
        assert_eq!(framing, BodyFraming::Length(5));
        assert_eq!(text.matches("ontent-").count(), 1, "{text}");
        assert!(text.contains("\r\nContent-Length: 5\r\n"), "{text}");
        let (text, framing) = sent("transfer-encoding: Chunked\r\n");
        assert_eq!(framing, BodyFraming::Chunked);
        assert!(
            text.contains("\r\nTransfer-Encoding: chunked\r\n"),
            "{text}"
        );
        assert_eq!(
            text.to_ascii_lowercase()
                .matches("transfer-encoding")
                .count(),
            1
        );
        let (text, _) = sent("");
        assert!(
            !text.to_ascii_lowercase().contains("content-length"),
            "{text}"
        );
    }

    #[test]
    fn a_placeholder_for_another_host_in_the_url_or_a_header_is_refused() {
        let v = vault(Vec::new(), None);
        let other = rewrite(&v, &target(), &head(&v, "/", "X-Token: OTHERPH"));
        assert!(
            matches!(other, Err(Refusal::Exfiltration { ref secret, .. }) if secret == "OTHER"),
            "{other:?}"
        );
        let escaped = v.secrets[0].placeholder.replace('m', "%6d");
        let url = rewrite(&v, &target(), &head(&v, &format!("/?t={escaped}"), "X: y"));
        assert!(matches!(url, Err(Refusal::Exfiltration { .. })), "{url:?}");
    }

    #[test]
    fn rules_refuse_other_methods_paths_and_dot_segments() {
        let rule = RequestRule {
            methods: vec!["GET".into()],
            paths: vec![PathRule::Glob("/repos/o/n/releases*".into())],
        };
        let v = vault(vec![rule], None);
        let auth = "Authorization: token PH";
        assert!(rewrite(&v, &target(), &head(&v, "/repos/o/n/releases/1?x=2", auth)).is_ok());
        for path in [
            "/user",
            "/repos/o/n/releases/../../../user",
            "/repos/o/n/releases%2f..%2f",
        ] {
            let r = rewrite(&v, &target(), &head(&v, path, auth));
            assert!(matches!(r, Err(Refusal::Rule { .. })), "{path}: {r:?}");
        }
        // Without the placeholder the rules do not apply: nothing is
        // replaced, so the host gets nothing of the secret's.
        assert!(rewrite(&v, &target(), &head(&v, "/user", "X: y")).is_ok());
    }

    /// Paths inside the rules as written that a lenient server resolves
    /// elsewhere (Tomcat's `..;`, IIS's `\`, a literal `#`, double or
    /// overlong encodings, Unicode dots) and Symfony's `_method`.
    #[test]
    fn rules_refuse_paths_a_server_could_read_as_another() {
        let rule = RequestRule {
            methods: vec!["GET".into()],
            paths: vec![PathRule::Glob("/api/*".into())],
        };
        let v = vault(vec![rule], None);
        let auth = "Authorization: token PH";
        for path in [
            "/api/x",
            "/api/x;v=1",
            "/api/a%20b?q=%2e%2e/..&x=1",
            "/api/a%3Fb",
            "/api/..x/.y",
        ] {
            let r = rewrite(&v, &target(), &head(&v, path, auth));
            assert!(r.is_ok(), "{path}: {r:?}");
        }
        for path in [
            "/api/..;/admin",
            "/api/.;x/x",
            "/api/x/..;jsessionid=1/..;/admin",
            "/api/\\..\\admin",
            "/api/x#/../../admin",
            "/api/%252e%252e/admin",
            "/api/%%32%65%%32%65/admin",
            "/api/x%",
            "/api/..%20/admin",
            "/api/x/.../admin",
            "/api/%c0%ae%c0%ae/admin",
            "/api/%3b/x",
            "/api/%00/x",
            "/api/\u{ff0e}\u{ff0e}/admin",
            "/api/x?_method=DELETE",
            "/api/x?a=1&%5Fmethod=DELETE",
        ] {
            let r = rewrite(&v, &target(), &head(&v, path, auth));
            assert!(matches!(r, Err(Refusal::Rule { .. })), "{path}: {r:?}");
        }
    }

    #[test]
    fn override_headers_trace_and_echoed_headers_are_refused_with_the_value() {
        let rule = RequestRule {
            methods: vec!["GET".into(), "POST".into()],
            paths: Vec::new(),
        };
        let v = vault(vec![rule], None);
        for header in [
            "X-HTTP-Method-Override: DELETE",
            "x-original-url: /admin",
            "X_HTTP_Method_Override: DELETE",
            "X-Forwarded-Host: other.example",
        ] {
            let h = format!("Authorization: Bearer PH\r\n{header}");
            let r = rewrite(&v, &target(), &head(&v, "/", &h));
            assert!(matches!(r, Err(Refusal::Rule { .. })), "{header}: {r:?}");
            // Without the value the header is the host's business.
            assert!(rewrite(&v, &target(), &head(&v, "/", header)).is_ok());
        }
        let open = vault(Vec::new(), None);
        let trace = format!(
            "TRACE / HTTP/1.1\r\nAuthorization: Bearer {}\r\n\r\n",
            open.secrets[0].placeholder
        );
        let r = rewrite(&open, &target(), trace.as_bytes());
        assert!(matches!(r, Err(Refusal::Exfiltration { .. })), "{r:?}");
        for header in [
            "Origin: https://PH",
            "X-Request-Id: PH",
            "X_Request_Id: PH",
            "User-Agent: PH",
            "Access-Control-Request-Headers: PH",
        ] {
            let h = format!("Authorization: Bearer PH\r\n{header}");
            let r = rewrite(&open, &target(), &head(&open, "/", &h));
            assert!(
                matches!(r, Err(Refusal::Exfiltration { .. })),
                "{header}: {r:?}"
            );
        }
        // An API's own header, and a cookie, still get the value.
        for header in ["X-Api-Key: PH", "PRIVATE-TOKEN: PH", "Cookie: s=PH"] {
            let r = rewrite(&open, &target(), &head(&open, "/", header)).expect(header);
            assert!(contains(&r.head, VALUE), "{header}");
        }
    }

    #[test]
    fn a_placeholder_in_the_body_stops_the_body_before_it_leaves() {
        let v = vault(Vec::new(), None);
        let ph = v.secrets[0].placeholder.clone();
        let body = format!("{}{ph}tail", "a".repeat(100));
        let (first, second) = body.as_bytes().split_at(110);
        let mut up = Vec::new();
        let framing = BodyFraming::Length(body.len() as u64);
        let r = forward_body(&v, &mut &second[..], &mut up, first.to_vec(), framing).expect("io");
        assert!(matches!(r, Err(Refusal::Exfiltration { .. })), "{r:?}");
        assert!(
            !contains(&up, b"magus-secret-"),
            "sent: {}",
            String::from_utf8_lossy(&up)
        );
        let clean = "b".repeat(300);
        let mut up = Vec::new();
        let framing = BodyFraming::Length(300);
        let r = forward_body(
            &v,
            &mut &[][..],
            &mut up,
            clean.clone().into_bytes(),
            framing,
        );
        assert_eq!(r.expect("io").expect("clean"), 300);
        assert_eq!(up, clean.as_bytes());
    }

    /// A TLS server for `localhost` under a test CA of its own, answering
    /// with the `Authorization` header it received.
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
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{auth}",
                auth.len()
            );
            tls.write_all(reply.as_bytes()).expect("reply");
            tls.conn.send_close_notify();
            let _ = tls.flush();
        });
        (port, roots)
    }

    use super::super::vault::Authority;

    /// A client side that trusts only the CA `ca_pem`.
    fn trusting(ca_pem: &str) -> Arc<ClientConfig> {
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

    /// A reader that hands out its bytes `step` at a time, as a socket
    /// may.
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(out.len()).min(self.bytes.len());
            out[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_placeholder_split_across_pieces_is_found_wherever_it_is_cut() {
        let v = vault(Vec::new(), None);
        let ph = v.secrets[0].placeholder.clone();
        let body = format!("{}{ph}{}", "a".repeat(1000), "b".repeat(1000));
        let framing = BodyFraming::Length(body.len() as u64);
        for step in [1, 7, 52, 53, 54, 999, 1010, 1030, 4096] {
            for first in [0, 990, 1000, 1001, 1052, 1053] {
                let (rest, tail) = body.as_bytes().split_at(first);
                let mut down = Trickle { bytes: tail, step };
                let mut up = Vec::new();
                let r = forward_body(&v, &mut down, &mut up, rest.to_vec(), framing).expect("io");
                assert!(
                    matches!(r, Err(Refusal::Exfiltration { .. })),
                    "step {step}, first {first}: {r:?}"
                );
                // Nothing of the placeholder left: only the `a`s before it.
                assert!(
                    up.len() <= 1000 && up.iter().all(|&b| b == b'a'),
                    "step {step}, first {first}: sent {}",
                    String::from_utf8_lossy(&up)
                );
            }
        }
        // Its prefix alone, cut anywhere, is no placeholder: the body
        // goes on whole and unchanged.
        let clean = format!("{}magus-secret-{}", "c".repeat(100), "x".repeat(3000));
        let framing = BodyFraming::Length(clean.len() as u64);
        for step in [1, 13, 52, 4096] {
            let (rest, tail) = clean.as_bytes().split_at(105);
            let mut up = Vec::new();
            let mut down = Trickle { bytes: tail, step };
            let r = forward_body(&v, &mut down, &mut up, rest.to_vec(), framing);
            assert_eq!(r.expect("io").expect("clean"), clean.len() as u64);
            assert_eq!(up, clean.as_bytes(), "step {step}");
        }
    }

    /// The server side of a test connection, for `localhost` under `ca`.
    fn serving(ca: &Authority) -> Arc<ServerConfig> {
        serving_only(ca, rustls::DEFAULT_VERSIONS)
    }

    /// The same, speaking only `versions`.
    fn serving_only(
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
    /// closes; returns what it read.
    fn writing_peer(
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
            for piece in data.chunks(record) {
                tls.write_all(piece).expect("write");
            }
            tls.conn.send_close_notify();
            tls.flush().expect("flush");
            // Until the other side closes: a socket closed with unread
            // bytes (the session tickets) would be reset.
            let mut got = Vec::new();
            let _ = tls.read_to_end(&mut got);
            got
        })
    }

    /// A host that keeps every byte of plaintext it receives until its
    /// peer goes (cleanly or not).
    fn capturing_host(ca: &Authority) -> (u16, std::thread::JoinHandle<Vec<u8>>) {
        capturing_host_with(serving(ca))
    }

    fn capturing_host_with(config: Arc<ServerConfig>) -> (u16, std::thread::JoinHandle<Vec<u8>>) {
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

    /// A [`Leg`] gives back every byte the peer sent, in order, through
    /// the handshake, many records per socket read, and the peer's close.
    #[test]
    fn a_leg_reads_every_byte_the_peer_sent_in_order() {
        let ca = Authority::new().expect("test CA");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let data: Vec<u8> = (0..3 * 1024 * 1024 + 123)
            .map(|i| (i % 251) as u8)
            .collect();
        let peer = writing_peer(&ca, port, data.clone(), 100_000);
        let (sock, _) = listener.accept().expect("accept");
        let conn = UnbufferedServerConnection::new(serving(&ca)).expect("conn");
        let mut leg = Leg::new(conn, sock, Vec::new());
        let mut got = Vec::new();
        let mut buf = vec![0u8; 200_000];
        loop {
            let n = leg.read(&mut buf).expect("read");
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        let _ = leg.close();
        drop(leg);
        peer.join().expect("peer");
        assert_eq!(got.len(), data.len());
        assert!(got == data, "the bytes differ");
    }

    proptest::proptest! {
        /// However a body is cut into pieces, the piece-by-piece check
        /// refuses it exactly when a placeholder is in the whole body,
        /// and otherwise counts every byte of it.
        #[test]
        fn the_check_by_pieces_agrees_with_a_search_of_the_whole(
            parts in proptest::collection::vec((0usize..4, 0usize..60), 0..12),
            cuts in proptest::collection::vec(1usize..80, 1..40),
        ) {
            let v = vault(Vec::new(), None);
            let ph = v.secrets[0].placeholder.clone();
            // Filler, the placeholder, a prefix of it, or its tail.
            let body: Vec<u8> = parts
                .iter()
                .flat_map(|&(kind, n)| match kind {
                    0 => vec![b'x'; n],
                    1 => ph.as_bytes().to_vec(),
                    2 => ph.as_bytes()[..n.min(ph.len())].to_vec(),
                    _ => ph.as_bytes()[n.min(ph.len())..].to_vec(),
                })
                .collect();
            let whole = v.found_in(&body).is_some();
            let mut check = BodyCheck::new(&v, BodyFraming::Length(body.len() as u64));
            let (mut at, mut refused, mut counted) = (0, false, 0);
            for cut in cuts.iter().cycle() {
                let piece = &body[at..(at + cut).min(body.len())];
                match check.piece(piece) {
                    Err(_) => {
                        refused = true;
                        break;
                    }
                    Ok((n, ended)) => {
                        counted += n;
                        at += piece.len();
                        if ended || at == body.len() {
                            break;
                        }
                    }
                }
            }
            proptest::prop_assert_eq!(refused, whole);
            if !whole {
                proptest::prop_assert_eq!(counted, body.len());
            }
        }
    }

    /// Real hosts and clients may speak only TLS 1.2: both legs carry
    /// every byte with such a peer, the handshake and the close included.
    #[test]
    fn both_legs_carry_every_byte_with_a_peer_that_speaks_only_tls_1_2() {
        let ca = Authority::new().expect("test CA");
        let only_12 = [&rustls::version::TLS12];
        let data: Vec<u8> = (0..300_000).map(|i| (i % 253) as u8).collect();
        // The child's side: a server leg, the peer a client.
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let peer = writing_peer(&ca, port, data.clone(), 16 * 1024);
        let (sock, _) = listener.accept().expect("accept");
        let conn = UnbufferedServerConnection::new(serving_only(&ca, &only_12)).expect("conn");
        let mut down = Leg::new(conn, sock, Vec::new());
        let mut got = Vec::new();
        down.read_to_end(&mut got).expect("read");
        let _ = down.close();
        drop(down);
        peer.join().expect("peer");
        assert!(got == data, "the child's leg read {} bytes", got.len());
        // The host's side: a client leg, the peer a server.
        let (host_port, host) = capturing_host_with(serving_only(&ca, &only_12));
        let name = ServerName::try_from("localhost").expect("name");
        let conn = UnbufferedClientConnection::new(trusting(ca.cert_pem()), name).expect("conn");
        let upstream = TcpStream::connect(("127.0.0.1", host_port)).expect("host");
        let mut up = Leg::new(conn, upstream, Vec::new());
        up.write_all(&data).expect("write");
        up.close().expect("close");
        let sent = host.join().expect("host");
        drop(up);
        assert!(sent == data, "the host got {} bytes", sent.len());
    }

    /// The child sends a body in records as small as it likes, to cut
    /// the placeholder across many of them: the host gets only what came
    /// before the placeholder, and a body with a mere prefix of one goes
    /// through whole.
    #[test]
    fn a_placeholder_cut_across_tiny_records_never_reaches_the_host() {
        let ca = Authority::new().expect("test CA");
        let v = vault(Vec::new(), None);
        let ph = v.secrets[0].placeholder.clone();
        let dirty = format!("{}{ph}{}", "a".repeat(1000), "b".repeat(1000));
        let clean = format!("{}magus-secret-{}", "c".repeat(1000), "x".repeat(3000));
        for record in [1, 7, 53, 1000, 16 * 1024] {
            for (body, refused) in [(&dirty, true), (&clean, false)] {
                let head = format!("POST / HTTP/1.1\r\nContent-Length: {}\r\n\r\n", body.len());
                let (host_port, host) = capturing_host(&ca);
                let front = TcpListener::bind("127.0.0.1:0").expect("front");
                let front_port = front.local_addr().expect("addr").port();
                let peer = writing_peer(&ca, front_port, body.as_bytes().to_vec(), record);
                let (sock, _) = front.accept().expect("accept");
                let conn = UnbufferedServerConnection::new(serving(&ca)).expect("conn");
                let mut down = Leg::new(conn, sock, Vec::new());
                let name = ServerName::try_from("localhost").expect("name");
                let conn =
                    UnbufferedClientConnection::new(trusting(ca.cert_pem()), name).expect("conn");
                let upstream = TcpStream::connect(("127.0.0.1", host_port)).expect("host");
                let mut up = Leg::new(conn, upstream, Vec::new());
                up.write_all(head.as_bytes()).expect("head");
                let framing = BodyFraming::Length(body.len() as u64);
                let r = forward_records(&v, &mut down, &mut up, Vec::new(), framing).expect("io");
                match r {
                    Ok(_) => {
                        let _ = up.close();
                    }
                    Err(_) => up.abandon(),
                }
                // The host reads to the end before this side's socket
                // closes: a socket closed with unread bytes (the host's
                // session tickets) is reset, and a reset loses what the
                // host had not read yet.
                let got = host.join().expect("host");
                drop(up);
                respond(&mut down, "200 OK", "done");
                let _ = down.close();
                drop(down);
                peer.join().expect("peer");
                let sent = &got[head.len()..];
                if refused {
                    assert!(
                        matches!(r, Err((Refusal::Exfiltration { .. }, n)) if n as usize == sent.len()),
                        "records of {record}: {r:?}"
                    );
                    assert!(
                        sent.len() <= 1000 && sent.iter().all(|&b| b == b'a'),
                        "records of {record}: sent {}",
                        String::from_utf8_lossy(sent)
                    );
                } else {
                    assert_eq!(r.expect("clean"), body.len() as u64, "records of {record}");
                    assert!(
                        sent == body.as_bytes(),
                        "records of {record}: {} bytes",
                        sent.len()
                    );
                }
            }
        }
    }

    #[test]
    fn a_tunnel_to_a_bound_host_carries_the_value_to_it_and_not_to_the_client() {
        let dir = tempfile::tempdir().expect("dir");
        let (port, roots) = echo_server(dir.path());
        let v = Arc::new(vault(Vec::new(), Some(roots)));
        let tls = Interceptor::new(Arc::clone(&v)).expect("interceptor");
        let front = TcpListener::bind("127.0.0.1:0").expect("front");
        let front_port = front.local_addr().expect("addr").port();
        // The child's side: trusts the per-run CA only.
        let ca_pem = v.authority.cert_pem().to_string();
        let placeholder = v.secrets[0].placeholder.clone();
        let child = std::thread::spawn(move || {
            let name = ServerName::try_from("localhost").expect("name");
            let conn = ClientConnection::new(trusting(&ca_pem), name).expect("conn");
            let sock = TcpStream::connect(("127.0.0.1", front_port)).expect("connect");
            let mut tls = StreamOwned::new(conn, sock);
            let req = format!(
                "GET /x HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {placeholder}\r\n\r\n"
            );
            tls.write_all(req.as_bytes()).expect("request");
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
        assert!(served.refusal.is_none());
        let reply = child.join().expect("child");
        // The echo is the residue docs/secrets.md names: a host that
        // echoes headers shows the value. Here it proves the host got it.
        assert!(
            reply.contains(&format!(
                "Authorization: Bearer {}",
                String::from_utf8_lossy(VALUE)
            )),
            "{reply}"
        );
    }
}
