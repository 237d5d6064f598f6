//! A request body on its way to a host: held whole where it fits, checked
//! piece by piece for a placeholder wherever pieces are cut, and moved on
//! (from plain sockets, or record by record between two TLS legs).

use super::head::exfiltration;
use super::Refusal;
use crate::proxy::leg::{Conn, Flow, Leg, READ_AT_ONCE};
use crate::proxy::request::{Advance, BodyEnd, BodyFraming};
use crate::proxy::vault::Vault;
use std::io::{self, Read, Write};

/// Why a placeholder in a body is refused.
pub(super) const IN_A_BODY: &str = "was in a request body, where it is never replaced";

/// The largest piece of a plain request's body moved at once.
const BODY_PIECE: usize = READ_AT_ONCE;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::intercept::respond;
    use crate::proxy::test_support::{capturing_host, leg_from_peer, leg_to_host, serving, vault};
    use crate::proxy::vault::{contains, Authority};

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
                let bytes = body.as_bytes().to_vec();
                let (mut down, peer) = leg_from_peer(&ca, serving(&ca), bytes, record);
                let mut up = leg_to_host(&ca, host_port);
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
}
