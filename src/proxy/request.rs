//! What a sandboxed client sends the proxy, read from bytes alone: an HTTP
//! request head (via `httparse`) turned into the target to check and the
//! head to send upstream, where that request's body ends, and a SOCKS5
//! greeting and request. No socket, no decision: `serve.rs` decides and
//! moves bytes, and the `proxy` fuzz target (`fuzz/fuzz_targets/proxy.rs`)
//! reaches everything here, since this code runs outside the sandbox on
//! bytes a child chose.

use crate::policy::hosts::normalize_host;
use std::io::{self, Read};

/// The largest request head (or SOCKS request) the proxy reads.
pub(crate) const MAX_HEAD: usize = 64 * 1024;
/// Most headers a request may have.
const MAX_HEADERS: usize = 100;
/// The largest chunk a chunked request body may announce (2^31 - 1): a
/// server that keeps the size in 32 bits must not see a size other than
/// ours, or it would take the rest of our "chunk" for a new request.
const MAX_CHUNK: u64 = 0x7fff_ffff;
/// Most hex digits of a chunk size (leading zeros included).
const MAX_CHUNK_DIGITS: u8 = 8;

/// Where a client wants to go, as it asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Normalised name or IP literal (or, for a name no rule can match,
    /// its escaped spelling, which no rule matches either).
    pub host: String,
    pub port: u16,
}

/// A parsed request head: what the client asked for and how to forward it.
#[derive(Debug)]
pub struct Head {
    pub target: Target,
    /// The head to send upstream (origin-form); empty for a tunnel.
    pub upstream_head: Vec<u8>,
    /// Where the request's body ends; `None` for a tunnel (`CONNECT`: raw
    /// bytes both ways), else one plain request.
    pub body: Option<BodyFraming>,
    /// Bytes read past the head (a body, an early TLS hello, or whatever
    /// the client sent after its request).
    pub rest: Vec<u8>,
}

/// Reads until a whole head parses. The outer error is the reader's; the
/// inner one is a bad request, said to the client.
pub fn read_http_head(client: &mut impl Read) -> io::Result<Result<Head, &'static str>> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        let n = client.read(&mut chunk)?;
        if n == 0 {
            return Ok(Err("the connection closed before a whole request head"));
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&buf) {
            Ok(httparse::Status::Complete(len)) => {
                return Ok(head_of(&request, buf[len..].to_vec()));
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => {}
            Ok(httparse::Status::Partial) => return Ok(Err("the request head is too large")),
            Err(_) => return Ok(Err("not an HTTP request")),
        }
    }
}

/// The [`Head`] of a parsed request.
pub(crate) fn head_of(
    request: &httparse::Request<'_, '_>,
    rest: Vec<u8>,
) -> Result<Head, &'static str> {
    let (Some(method), Some(path)) = (request.method, request.path) else {
        return Err("not an HTTP request");
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let target = authority(path, None).ok_or("CONNECT needs host:port")?;
        return Ok(Head {
            target,
            upstream_head: Vec::new(),
            body: None,
            rest,
        });
    }
    let (scheme, after) = path
        .split_once("://")
        .ok_or("a proxy request needs an absolute URL (http://host/...)")?;
    if !scheme.eq_ignore_ascii_case("http") {
        return Err("only http:// URLs are forwarded; https goes through CONNECT");
    }
    let end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let target = authority(&after[..end], Some(80)).ok_or("the URL has no valid host")?;
    let body = body_framing(request)?;
    // The fragment is the client's own; what is left of the path may be
    // empty (`http://host#x`), which is `/` in origin form.
    let origin = match after[end..].split('#').next().unwrap_or("") {
        "" => "/".to_string(),
        p if p.starts_with('?') => format!("/{p}"),
        p => p.to_string(),
    };
    Ok(Head {
        target,
        upstream_head: origin_form_head(method, &origin, &after[..end], request),
        body: Some(body),
        rest,
    })
}

/// The [`Head`] of a request sent in origin form (`GET /path`) inside a
/// tunnel to `target`: read by the proxy only where it holds secrets, and
/// then forwarded as a plain request to the proxy is (its own `Host`,
/// `Connection: close`).
pub(crate) fn tunneled_head(
    request: &httparse::Request<'_, '_>,
    target: &Target,
    rest: Vec<u8>,
) -> Result<Head, &'static str> {
    let (Some(method), Some(path)) = (request.method, request.path) else {
        return Err("not an HTTP request");
    };
    if !path.starts_with('/') {
        return Err("not an origin-form request");
    }
    let body = body_framing(request)?;
    let authority = match target.host.contains(':') {
        true => format!("[{}]:{}", target.host, target.port),
        false => format!("{}:{}", target.host, target.port),
    };
    Ok(Head {
        target: target.clone(),
        upstream_head: origin_form_head(method, path, &authority, request),
        body: Some(body),
        rest,
    })
}

/// The headers the proxy does not pass on: its own, and connection
/// management (hop-by-hop; `Upgrade` would turn the connection into
/// another protocol that the proxy cannot follow).
fn dropped_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["host", "connection", "keep-alive", "upgrade"].contains(&name.as_str())
        || name.starts_with("proxy-")
}

/// The head sent upstream: origin-form target, `Host` set to the checked
/// authority (a different `Host` would pick another site on a shared
/// server), the client's other headers without the dropped ones, and
/// `Connection: close`: one request per upstream connection.
fn origin_form_head(
    method: &str,
    origin: &str,
    authority: &str,
    request: &httparse::Request<'_, '_>,
) -> Vec<u8> {
    let mut out = format!("{method} {origin} HTTP/1.1\r\nHost: {authority}\r\n").into_bytes();
    for header in request.headers.iter() {
        if dropped_header(header.name) {
            continue;
        }
        out.extend_from_slice(header.name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(header.value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    out
}

/// `host:port`, `[v6]:port`, or `host` with `default` port; `None` for
/// anything else (user info, empty host, bad port).
pub fn authority(text: &str, default: Option<u16>) -> Option<Target> {
    if text.contains('@') {
        return None;
    }
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => port_number(p)?,
            None if after.is_empty() => default?,
            None => return None,
        };
        (inside, port)
    } else {
        match text.rsplit_once(':') {
            Some((h, p)) => (h, port_number(p)?),
            None => (text, default?),
        }
    };
    if port == 0 || host.is_empty() {
        return None;
    }
    Some(Target {
        host: normalize_host(host).unwrap_or_else(|| host.escape_debug().to_string()),
        port,
    })
}

/// Decimal digits only: `u16::from_str` also takes `+443`, which the
/// `Host` sent upstream would then carry as written.
fn port_number(text: &str) -> Option<u16> {
    match text.bytes().all(|b| b.is_ascii_digit()) {
        true => text.parse().ok(),
        false => None,
    }
}

// ---- where a request's body ends ------------------------------------------

/// How a request's body is delimited (RFC 9112, section 6): after it, the
/// proxy passes nothing more from the client upstream, so a second request
/// on the same connection never reaches a host it did not check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFraming {
    /// `Content-Length` bytes (0 without either header).
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// The framing the request's headers declare. Anything two parsers could
/// read two ways is refused: both `Content-Length` and
/// `Transfer-Encoding`, a coding other than `chunked` alone, differing or
/// non-decimal lengths, chunked in an HTTP/1.0 request.
pub(crate) fn body_framing(
    request: &httparse::Request<'_, '_>,
) -> Result<BodyFraming, &'static str> {
    let mut length: Option<u64> = None;
    let mut chunked = false;
    for header in request.headers.iter() {
        if underscored_framing(header.name) {
            return Err("a Content-Length or Transfer-Encoding spelled with `_`, which some servers read as `-`");
        }
        if header.name.eq_ignore_ascii_case("content-length") {
            let value = decimal(header.value).ok_or("a Content-Length that is not a number")?;
            if length.is_some_and(|l| l != value) {
                return Err("two different Content-Length headers");
            }
            length = Some(value);
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            let value = std::str::from_utf8(header.value).unwrap_or("").trim();
            if chunked || !value.eq_ignore_ascii_case("chunked") {
                return Err("a Transfer-Encoding other than one `chunked` is not forwarded");
            }
            chunked = true;
        }
    }
    match (length, chunked) {
        (Some(_), true) => Err("both Content-Length and Transfer-Encoding"),
        (None, true) if request.version == Some(0) => Err("chunked in an HTTP/1.0 request"),
        (None, true) => Ok(BodyFraming::Chunked),
        (length, false) => Ok(BodyFraming::Length(length.unwrap_or(0))),
    }
}

/// `Content_Length` or `Transfer_Encoding` (any case, any mix of `_` and
/// `-` with at least one `_`): the proxy reads no framing from it, while
/// a server behind a CGI-style gateway (where both spellings become
/// `HTTP_CONTENT_LENGTH`) does, and would take part of the body for a
/// request of its own.
fn underscored_framing(name: &str) -> bool {
    let dashed = name.replace('_', "-");
    name.contains('_')
        && (dashed.eq_ignore_ascii_case("content-length")
            || dashed.eq_ignore_ascii_case("transfer-encoding"))
}

/// 1 to 19 decimal digits, optionally surrounded by spaces or tabs.
fn decimal(value: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(value).ok()?.trim_matches([' ', '\t']);
    if text.is_empty() || text.len() > 19 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Follows a request body through the bytes the client sends, one piece
/// at a time, to say where it ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyEnd {
    state: State,
}

/// Where [`BodyEnd`] is in the body (chunked: RFC 9112, section 7.1,
/// read strictly: CRLF line ends only, no spaces around the size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// This many bytes of body left (a length, or a chunk's data).
    Bytes {
        left: u64,
        chunked: bool,
    },
    /// In a chunk size: its value so far and how many digits.
    Size {
        value: u64,
        digits: u8,
    },
    /// In a chunk extension (after `;`), until CR.
    Extension {
        value: u64,
    },
    /// After a size line's CR.
    SizeLf {
        value: u64,
    },
    /// After a chunk's data: its CR, then its LF.
    DataCr,
    DataLf,
    /// At the start of a trailer line (or of the final empty line).
    TrailerStart,
    /// Inside a trailer line, until CR; then its LF.
    TrailerLine,
    TrailerLf,
    /// After the final empty line's CR.
    FinalLf,
    Done,
    /// The body cannot be delimited: nothing more is forwarded.
    Broken,
}

/// What [`BodyEnd::advance`] found in a piece of input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advance {
    /// The first `n` bytes belong to the body, which goes on.
    More(usize),
    /// The first `n` bytes end the body; the rest is not part of it.
    Ended(usize),
    /// The body is malformed; the first `n` bytes came before the fault.
    Malformed(usize),
}

impl BodyEnd {
    pub fn new(framing: BodyFraming) -> BodyEnd {
        let state = match framing {
            BodyFraming::Length(0) => State::Done,
            BodyFraming::Length(n) => State::Bytes {
                left: n,
                chunked: false,
            },
            BodyFraming::Chunked => State::Size {
                value: 0,
                digits: 0,
            },
        };
        BodyEnd { state }
    }

    /// Whether the body has ended (or is broken): nothing more to forward.
    pub fn finished(&self) -> bool {
        matches!(self.state, State::Done | State::Broken)
    }

    /// Reads `input`, the next bytes from the client.
    pub fn advance(&mut self, input: &[u8]) -> Advance {
        let mut at = 0;
        while at < input.len() {
            match self.state {
                State::Done => return Advance::Ended(at),
                State::Broken => return Advance::Malformed(at),
                State::Bytes { left, chunked } => {
                    let take = left.min((input.len() - at) as u64);
                    at += take as usize;
                    self.state = match (left - take, chunked) {
                        (0, true) => State::DataCr,
                        (0, false) => State::Done,
                        (left, chunked) => State::Bytes { left, chunked },
                    };
                }
                _ => {
                    self.state = self.state.after(input[at]);
                    if self.state == State::Broken {
                        return Advance::Malformed(at);
                    }
                    at += 1;
                }
            }
        }
        match self.state {
            State::Done => Advance::Ended(at),
            State::Broken => Advance::Malformed(at),
            _ => Advance::More(at),
        }
    }
}

impl State {
    /// The state after one byte of chunked framing.
    fn after(self, byte: u8) -> State {
        match (self, byte) {
            (State::Size { value, digits }, b) if b.is_ascii_hexdigit() => {
                let digit = u64::from((b as char).to_digit(16).unwrap_or(0));
                let value = value * 16 + digit;
                match digits < MAX_CHUNK_DIGITS && value <= MAX_CHUNK {
                    true => State::Size {
                        value,
                        digits: digits + 1,
                    },
                    false => State::Broken,
                }
            }
            (State::Size { value, digits }, b';') if digits > 0 => State::Extension { value },
            (State::Size { value, digits }, b'\r') if digits > 0 => State::SizeLf { value },
            (State::Extension { .. }, b'\n') => State::Broken,
            (State::Extension { value }, b'\r') => State::SizeLf { value },
            (State::Extension { value }, _) => State::Extension { value },
            (State::SizeLf { value: 0 }, b'\n') => State::TrailerStart,
            (State::SizeLf { value }, b'\n') => State::Bytes {
                left: value,
                chunked: true,
            },
            (State::DataCr, b'\r') => State::DataLf,
            (State::DataLf, b'\n') => State::Size {
                value: 0,
                digits: 0,
            },
            (State::TrailerStart, b'\r') => State::FinalLf,
            (State::TrailerStart | State::TrailerLine, b'\n') => State::Broken,
            (State::TrailerLine, b'\r') => State::TrailerLf,
            (State::TrailerStart | State::TrailerLine, _) => State::TrailerLine,
            (State::TrailerLf, b'\n') => State::TrailerStart,
            (State::FinalLf, b'\n') => State::Done,
            _ => State::Broken,
        }
    }
}

// ---- SOCKS5 (RFC 1928) ----------------------------------------------------

pub(crate) const SOCKS_VERSION: u8 = 5;
pub(crate) const NO_AUTH: u8 = 0;
pub(crate) const CMD_CONNECT: u8 = 1;

/// Reads the greeting; whether it is SOCKS5 offering "no authentication".
pub fn read_socks_greeting(client: &mut impl Read) -> io::Result<bool> {
    let mut greeting = [0u8; 2];
    client.read_exact(&mut greeting)?;
    let mut methods = vec![0u8; usize::from(greeting[1])];
    client.read_exact(&mut methods)?;
    Ok(greeting[0] == SOCKS_VERSION && methods.contains(&NO_AUTH))
}

/// A SOCKS5 request: its command, and its destination (`None` for an
/// unknown address type).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocksRequest {
    pub command: u8,
    pub target: Option<Target>,
}

/// Reads the request that follows the greeting.
pub fn read_socks_request(client: &mut impl Read) -> io::Result<SocksRequest> {
    let mut request = [0u8; 4];
    client.read_exact(&mut request)?;
    Ok(SocksRequest {
        command: request[1],
        target: read_socks_target(client, request[3])?,
    })
}

/// The destination of a SOCKS request; `None` for an unknown address type.
fn read_socks_target(client: &mut impl Read, kind: u8) -> io::Result<Option<Target>> {
    let host = match kind {
        1 => {
            let mut ip = [0u8; 4];
            client.read_exact(&mut ip)?;
            std::net::Ipv4Addr::from(ip).to_string()
        }
        3 => {
            let mut len = [0u8; 1];
            client.read_exact(&mut len)?;
            let mut name = vec![0u8; usize::from(len[0])];
            client.read_exact(&mut name)?;
            let name = String::from_utf8_lossy(&name).into_owned();
            normalize_host(&name).unwrap_or_else(|| name.escape_debug().to_string())
        }
        4 => {
            let mut ip = [0u8; 16];
            client.read_exact(&mut ip)?;
            std::net::Ipv6Addr::from(ip).to_string()
        }
        _ => return Ok(None),
    };
    let mut port = [0u8; 2];
    client.read_exact(&mut port)?;
    Ok(Some(Target {
        host,
        port: u16::from_be_bytes(port),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_parse_or_are_refused() {
        let t = authority("Example.COM:443", None).unwrap();
        assert_eq!((t.host.as_str(), t.port), ("example.com", 443));
        let t = authority("[::1]:8080", None).unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 8080));
        let t = authority("localhost", Some(80)).unwrap();
        assert_eq!((t.host.as_str(), t.port), ("localhost", 80));
        for bad in [
            "user@evil.com:443",
            "example.com",
            "example.com:0",
            "example.com:+443",
            ":443",
            "a:b",
            "[::1",
        ] {
            assert!(authority(bad, None).is_none(), "{bad}");
        }
    }

    fn head(text: &str) -> Result<Head, &'static str> {
        read_http_head(&mut text.as_bytes()).unwrap()
    }

    #[test]
    fn absolute_form_becomes_origin_form_without_proxy_headers() {
        let h = head("GET http://LocalHost:8080/a?b HTTP/1.1\r\nHost: evil.example\r\nProxy-Authorization: x\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\nAccept: */*\r\n\r\nBODY").unwrap();
        assert_eq!((h.target.host.as_str(), h.target.port), ("localhost", 8080));
        let up = String::from_utf8(h.upstream_head).unwrap();
        assert_eq!(
            up,
            "GET /a?b HTTP/1.1\r\nHost: LocalHost:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        assert_eq!(h.rest, b"BODY");
        assert_eq!(h.body, Some(BodyFraming::Length(0)));
        let c = head("CONNECT github.com:443 HTTP/1.1\r\nHost: github.com:443\r\n\r\n").unwrap();
        assert_eq!(c.body, None);
        assert_eq!((c.target.host.as_str(), c.target.port), ("github.com", 443));
        let f = head("GET http://a.com#x/y HTTP/1.1\r\n\r\n").unwrap();
        assert!(f.upstream_head.starts_with(b"GET / HTTP/1.1\r\n"));
        assert!(head("GET /relative HTTP/1.1\r\n\r\n").is_err());
        assert!(head("GET https://a.com/ HTTP/1.1\r\n\r\n").is_err());
        assert!(head("CONNECT a.com HTTP/1.1\r\n\r\n").is_err());
    }

    #[test]
    fn body_framing_refuses_what_two_parsers_could_read_two_ways() {
        let framing = |headers: &str, version: &str| {
            head(&format!("POST http://a.com/ {version}\r\n{headers}\r\n")).map(|h| h.body)
        };
        let ok = [
            ("", Some(BodyFraming::Length(0))),
            ("Content-Length: 12\r\n", Some(BodyFraming::Length(12))),
            (
                "Content-Length: 3\r\ncontent-length: 3\r\n",
                Some(BodyFraming::Length(3)),
            ),
            ("Transfer-Encoding: Chunked\r\n", Some(BodyFraming::Chunked)),
        ];
        for (headers, want) in ok {
            assert_eq!(framing(headers, "HTTP/1.1"), Ok(want), "{headers}");
        }
        for headers in [
            "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n",
            "Content-Length: 3\r\nContent-Length: 4\r\n",
            "Content-Length: +3\r\n",
            "Content-Length: 3, 3\r\n",
            "Content-Length: 0x10\r\n",
            "Content-Length: 99999999999999999999\r\n",
            "Transfer-Encoding: gzip, chunked\r\n",
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
            "Transfer-Encoding: identity\r\n",
            "Content_Length: 3\r\n",
            "transfer_encoding: chunked\r\n",
            "Content-Length: 3\r\nTransfer_Encoding: chunked\r\n",
        ] {
            assert!(framing(headers, "HTTP/1.1").is_err(), "{headers}");
        }
        assert!(framing("Transfer-Encoding: chunked\r\n", "HTTP/1.0").is_err());
    }

    /// Where `input` ends the body when it comes one byte at a time.
    fn byte_by_byte(framing: BodyFraming, input: &[u8]) -> Advance {
        let mut end = BodyEnd::new(framing);
        let mut total = 0;
        for byte in input {
            match end.advance(std::slice::from_ref(byte)) {
                Advance::More(n) => total += n,
                Advance::Ended(n) => return Advance::Ended(total + n),
                Advance::Malformed(n) => return Advance::Malformed(total + n),
            }
        }
        Advance::More(total)
    }

    #[test]
    fn body_ends_where_its_framing_says() {
        let cases: [(BodyFraming, &[u8], Advance); 10] = [
            (BodyFraming::Length(0), b"GET /", Advance::Ended(0)),
            (BodyFraming::Length(3), b"abcGET /", Advance::Ended(3)),
            (BodyFraming::Length(9), b"abc", Advance::More(3)),
            (
                BodyFraming::Chunked,
                b"3\r\nabc\r\n0\r\n\r\nGET",
                Advance::Ended(13),
            ),
            (
                BodyFraming::Chunked,
                b"A;x=y\r\n0123456789\r\n0\r\nT: 1\r\n\r\nX",
                Advance::Ended(30),
            ),
            (BodyFraming::Chunked, b"3\r\nabc\r\n", Advance::More(8)),
            (BodyFraming::Chunked, b"3\nabc", Advance::Malformed(1)),
            (BodyFraming::Chunked, b" 3\r\n", Advance::Malformed(0)),
            (
                BodyFraming::Chunked,
                b"100000000\r\n",
                Advance::Malformed(8),
            ),
            (BodyFraming::Chunked, b"3\r\nabcX", Advance::Malformed(6)),
        ];
        for (framing, input, want) in cases {
            assert_eq!(BodyEnd::new(framing).advance(input), want, "{input:?}");
            assert_eq!(
                byte_by_byte(framing, input),
                want,
                "byte by byte: {input:?}"
            );
        }
    }

    #[test]
    fn socks_requests_read_each_address_type() {
        let mut v4: &[u8] = &[5, 1, 0, 1, 127, 0, 0, 1, 0x1f, 0x90];
        let r = read_socks_request(&mut v4).unwrap();
        assert_eq!(r.command, CMD_CONNECT);
        assert_eq!(r.target.unwrap().host, "127.0.0.1");
        let mut name: &[u8] = b"\x05\x01\x00\x03\x0aLocalHost.\x00\x50";
        let t = read_socks_request(&mut name).unwrap().target.unwrap();
        assert_eq!((t.host.as_str(), t.port), ("localhost", 80));
        let mut unknown: &[u8] = &[5, 1, 0, 9];
        assert_eq!(read_socks_request(&mut unknown).unwrap().target, None);
        let mut short: &[u8] = &[5, 1, 0, 3, 9, b'a'];
        assert!(read_socks_request(&mut short).is_err());
        let mut greeting: &[u8] = &[5, 2, 2, 0];
        assert!(read_socks_greeting(&mut greeting).unwrap());
    }
}
