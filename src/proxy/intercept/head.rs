//! The request head to a bound host: read, its headers given the real
//! value in place of the placeholder (inside Basic credentials too), its
//! framing set to what the proxy read, and checked against the secret's
//! rules (`rules.rs`) before it goes on.

use super::rules::{check_echoes, check_overrides, check_rules, overriding};
use super::Refusal;
use crate::proxy::request::{body_framing, BodyFraming, Target};
use crate::proxy::vault::{contains, Held, Vault};

/// Most headers a request may have.
const MAX_HEADERS: usize = 100;

/// The request to send upstream.
#[derive(Debug)]
pub(crate) struct Rewritten {
    pub head: Vec<u8>,
    pub framing: BodyFraming,
    pub expect_continue: bool,
    /// The `Basic` credentials made with a value (base64), which a host
    /// that echoes the header sends back as they are: masked in the
    /// response with the values (`response.rs`).
    pub encoded: Vec<Vec<u8>>,
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
    // An IPv6 literal in brackets: `::1:8443` is no authority a host reads.
    let host = match target.host.contains(':') {
        true => format!("[{}]", target.host),
        false => target.host.clone(),
    };
    let authority = match target.port {
        443 => host,
        port => format!("{host}:{port}"),
    };
    let mut out = format!("{method} {path} HTTP/1.1\r\nHost: {authority}\r\n").into_bytes();
    let mut expect_continue = false;
    let mut overrides: Vec<&str> = Vec::new();
    let mut encoded = Vec::new();
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
        let value = substitute_header(vault, target, header, &mut used, &mut encoded)?;
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
        encoded,
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

pub(super) fn exfiltration(held: &Held, why: &str) -> Refusal {
    Refusal::Exfiltration {
        secret: held.binding.name.clone(),
        why: why.to_string(),
    }
}

/// One header's value with each bound placeholder replaced (inside Basic
/// credentials too, whose new base64 is added to `encoded`); a
/// placeholder of a secret not bound to `target` is refused.
fn substitute_header<'v>(
    vault: &'v Vault,
    target: &Target,
    header: &httparse::Header<'_>,
    used: &mut Vec<&'v Held>,
    encoded: &mut Vec<Vec<u8>>,
) -> Result<Vec<u8>, Refusal> {
    let (name, value) = (header.name, header.value);
    if name.eq_ignore_ascii_case("authorization") {
        if let Some(decoded) = basic_decoded(value) {
            if vault.found_in(&decoded).is_some() {
                let replaced = replace_bound(vault, target, name, &decoded, used)?;
                let credentials = base64_encode(&replaced).into_bytes();
                let mut out = b"Basic ".to_vec();
                out.extend_from_slice(&credentials);
                encoded.push(credentials);
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
        .filter_map(|line| basic_decoded(line[NAME.len()..].trim_ascii()))
        .collect()
}

/// The decoded `user:password` of an `Authorization` value in the
/// `Basic` scheme; `None` for another scheme or text that is not base64.
fn basic_decoded(value: &[u8]) -> Option<Vec<u8>> {
    let scheme = value.get(..6)?;
    if value.len() == 6 || !scheme.eq_ignore_ascii_case(b"basic ") {
        return None;
    }
    base64_decode(value[6..].trim_ascii())
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
    use crate::proxy::test_support::{head, target, vault, VALUE};

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

    /// `Host` names the tunnel's host, an IPv6 literal in brackets.
    #[test]
    fn the_host_header_is_the_tunnels_authority() {
        let v = vault(Vec::new(), None);
        for (host, port, want) in [
            ("localhost", 443, "localhost"),
            ("::1", 8443, "[::1]:8443"),
            ("::1", 443, "[::1]"),
            ("127.0.0.1", 8443, "127.0.0.1:8443"),
        ] {
            let target = Target {
                host: host.into(),
                port,
            };
            let r = rewrite(&v, &target, &head(&v, "/", "X: y")).expect(host);
            let text = String::from_utf8_lossy(&r.head).to_string();
            assert!(text.contains(&format!("\r\nHost: {want}\r\n")), "{text}");
        }
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
}
