//! One proxy-parsing case: any bytes a sandboxed client sends the proxy,
//! read as an HTTP request head and as a SOCKS5 greeting and request,
//! must give a target or a refusal, never a panic; and what the proxy
//! would forward must say what it checked. Shared by the `proxy` fuzz
//! target and the corpus replay test.

use magus_sandbox::testing::policy::hosts::normalize_host;
use magus_sandbox::testing::proxy::request::{
    authority, read_http_head, read_socks_greeting, read_socks_request, Advance, BodyEnd, Head,
};
use std::io::Cursor;

/// Runs both readers on `data`; a forwarded head that disagrees with
/// the checked target, or a body end that depends on how the bytes were
/// split, is a failure.
pub(crate) fn check(data: &[u8]) -> Result<(), String> {
    if let Ok(Ok(head)) = read_http_head(&mut Cursor::new(data)) {
        check_head(&head)?;
    }
    let mut socks = Cursor::new(data);
    if read_socks_greeting(&mut socks).is_ok() {
        if let Ok(request) = read_socks_request(&mut socks) {
            if let Some(target) = request.target {
                check_host(&target.host)?;
            }
        }
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Some(target) = authority(text, Some(80)) {
            check_host(&target.host)?;
        }
    }
    Ok(())
}

/// A checked host is normalised already, or is a spelling no rule can
/// match (normalising it fails).
fn check_host(host: &str) -> Result<(), String> {
    match normalize_host(host) {
        Some(again) if again != host => Err(format!("{host:?} normalises again to {again:?}")),
        _ => Ok(()),
    }
}

fn check_head(head: &Head) -> Result<(), String> {
    check_host(&head.target.host)?;
    let Some(framing) = head.body else {
        return match head.upstream_head.is_empty() {
            true => Ok(()),
            false => Err("a tunnel (no body framing) with a head to send upstream".into()),
        };
    };
    check_upstream_head(head)?;
    let whole = BodyEnd::new(framing).advance(&head.rest);
    let split = in_pieces(BodyEnd::new(framing), &head.rest);
    if whole != split {
        return Err(format!("body end {whole:?} whole, {split:?} in pieces"));
    }
    Ok(())
}

/// The head sent upstream parses as exactly one request, in origin form,
/// with one `Host`, which names the checked target.
fn check_upstream_head(head: &Head) -> Result<(), String> {
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut request = httparse::Request::new(&mut headers);
    let len = match request.parse(&head.upstream_head) {
        Ok(httparse::Status::Complete(len)) => len,
        other => return Err(format!("the upstream head does not parse: {other:?}")),
    };
    if len != head.upstream_head.len() {
        return Err("the upstream head holds more than one request head".into());
    }
    if !request.path.is_some_and(|p| p.starts_with('/')) {
        return Err(format!("not origin-form: {:?}", request.path));
    }
    let hosts: Vec<&[u8]> = request
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("host"))
        .map(|h| h.value)
        .collect();
    let [host] = hosts[..] else {
        return Err(format!("{} Host headers upstream", hosts.len()));
    };
    let sent = std::str::from_utf8(host)
        .ok()
        .and_then(|h| authority(h, Some(80)));
    match sent {
        Some(t) if t == head.target => Ok(()),
        other => Err(format!(
            "Host upstream is {other:?}, checked {:?}",
            head.target
        )),
    }
}

/// [`BodyEnd::advance`] over `input` cut into pieces of 1, 2, 3, ...
/// bytes, the total it reports in the same form as one call would.
fn in_pieces(mut body: BodyEnd, input: &[u8]) -> Advance {
    let (mut at, mut size) = (0, 1);
    loop {
        let piece = &input[at..(at + size).min(input.len())];
        match body.advance(piece) {
            Advance::More(n) if at + n >= input.len() => return Advance::More(at + n),
            Advance::More(n) => at += n,
            Advance::Ended(n) => return Advance::Ended(at + n),
            Advance::Malformed(n) => return Advance::Malformed(at + n),
        }
        size += 1;
    }
}
