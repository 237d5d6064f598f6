//! A bound host's response on its way back to the child: in its head
//! (and the head of each interim `1xx` response before it), every value
//! the proxy holds, and each `Basic` credential it made with one, is
//! masked (`*` for each byte, so lengths stay). Hosts send request
//! headers back in response headers no list of names foresees: Stripe
//! answers with the `Idempotency-Key` it was sent, Microsoft Graph with
//! `client-request-id`, a framework builds a `Location` from
//! `X-Forwarded-Prefix`, a sliding session re-issues the cookie; with the
//! placeholder in such a header, the host got the value and handed it to
//! the spell.
//!
//! Only the head: it is never compressed or chunked, and it is held whole
//! before it goes on, whatever it holds, so what the child sees, and when,
//! does not depend on the value. A body is passed on as it comes. Masking
//! it could not be complete (the spell can ask for `gzip`; a host's own
//! chunked framing can split the value), and holding back its last bytes
//! whenever they could begin the value would tell the spell, by where the
//! stream pauses, whether bytes it had the host reflect are the value's
//! first ones: byte by byte, the whole value (docs/secrets.md, "What is
//! not covered").

use memchr::memmem::Finder;
use std::io::{Read, Write};

/// What each masked byte becomes.
const MASK: u8 = b'*';

/// The largest response head passed on: a host that sends more stops the
/// response there (a head cut anywhere could split a value).
const MAX_RESPONSE_HEAD: usize = 256 * 1024;

/// Where the response is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// In a head, not yet whole.
    Head,
    /// In the final response's body: passed on as is.
    Body,
    /// The head was too large: nothing more is passed on.
    Stopped,
}

/// The masking of one response, met a piece at a time.
pub(super) struct Masker {
    needles: Vec<Finder<'static>>,
    part: Part,
    /// The head read so far.
    head: Vec<u8>,
}

impl Masker {
    /// A masker for `needles` (empty ones are ignored).
    pub(super) fn new(needles: Vec<Vec<u8>>) -> Masker {
        let needles = needles
            .into_iter()
            .filter(|n| !n.is_empty())
            .map(|n| Finder::new(&n).into_owned())
            .collect();
        Masker {
            needles,
            part: Part::Head,
            head: Vec::new(),
        }
    }

    /// Takes the next bytes of the response and appends to `out` what may
    /// go on now; `last`: the host ended the response with them. Returns
    /// whether more may follow.
    pub(super) fn push(&mut self, bytes: &[u8], last: bool, out: &mut Vec<u8>) -> bool {
        match self.part {
            Part::Body => {
                out.extend_from_slice(bytes);
                return true;
            }
            Part::Stopped => return false,
            Part::Head => {}
        }
        let mut searched = self.head.len().saturating_sub(2);
        self.head.extend_from_slice(bytes);
        while self.part == Part::Head {
            let Some(end) = head_end(&self.head, searched) else {
                break;
            };
            // What follows this head: the next head, or the body.
            let rest = self.head.split_off(end);
            self.pass_head(out);
            if !interim(&self.head) {
                self.part = Part::Body;
            }
            self.head = rest;
            searched = 0;
        }
        match self.part {
            Part::Body => out.append(&mut self.head),
            Part::Head if self.head.len() > MAX_RESPONSE_HEAD => {
                self.head.clear();
                self.part = Part::Stopped;
            }
            // A head the host cut short: what it sent, masked.
            Part::Head if last => {
                self.pass_head(out);
                self.head.clear();
            }
            Part::Head | Part::Stopped => {}
        }
        self.part != Part::Stopped
    }

    /// Appends the head read so far to `out`, each needle masked.
    fn pass_head(&self, out: &mut Vec<u8>) {
        let base = out.len();
        out.extend_from_slice(&self.head);
        for finder in &self.needles {
            let n = finder.needle().len();
            for at in finder.find_iter(&self.head) {
                out[base + at..base + at + n].fill(MASK);
            }
        }
    }
}

/// Where the head in `bytes` ends (after its empty line, `\r\n` or a
/// bare `\n` as lenient servers send it), looking from `from` on.
fn head_end(bytes: &[u8], from: usize) -> Option<usize> {
    memchr::memchr_iter(b'\n', &bytes[from..])
        .map(|i| from + i + 1)
        .find_map(|after| match &bytes[after..] {
            [b'\n', ..] => Some(after + 1),
            [b'\r', b'\n', ..] => Some(after + 2),
            _ => None,
        })
}

/// Whether `head` is an interim response (`1xx` but `101`), after which
/// the final response's head comes.
fn interim(head: &[u8]) -> bool {
    let code = head.get(9..12).unwrap_or_default();
    head.starts_with(b"HTTP/1.") && code.first() == Some(&b'1') && code != b"101"
}

/// Copies the response from `up` to `down` until the host ends it, its
/// head masked (see the module doc); returns the bytes received.
pub(super) fn relay_masked(up: &mut impl Read, down: &mut impl Write, mask: &mut Masker) -> u64 {
    let mut buf = vec![0u8; 64 * 1024];
    let mut out = Vec::with_capacity(buf.len());
    let mut total = 0u64;
    loop {
        let n = match up.read(&mut buf) {
            Ok(0) | Err(_) => 0,
            Ok(n) => n,
        };
        // A body goes on from the buffer it was read into, uncopied.
        let (written, more) = match mask.part {
            Part::Body => (down.write_all(&buf[..n]), true),
            _ => {
                out.clear();
                let more = mask.push(&buf[..n], n == 0, &mut out);
                (down.write_all(&out), more)
            }
        };
        if written.is_err() || n == 0 || !more {
            break;
        }
        total += n as u64;
    }
    let _ = down.flush();
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(needles: &[&str], pieces: &[&str]) -> String {
        let mut m = Masker::new(needles.iter().map(|n| n.as_bytes().to_vec()).collect());
        let mut out = Vec::new();
        for (i, p) in pieces.iter().enumerate() {
            m.push(p.as_bytes(), i + 1 == pieces.len(), &mut out);
        }
        String::from_utf8(out).unwrap()
    }

    /// The value in a head, wherever reads cut it, is masked; the body
    /// goes on as it came (with its own copy: the documented residue).
    #[test]
    fn a_value_in_the_head_is_masked_wherever_the_pieces_cut_it() {
        let head = "HTTP/1.1 200 OK\r\nIdempotency-Key: ghp_SECRET\r\nX: ghp_SECRET\r\n\r\n";
        let text = format!("{head}body ghp_SECRET");
        let want = format!(
            "{}body ghp_SECRET",
            head.replace("ghp_SECRET", "**********")
        );
        for cut in 0..=text.len() {
            for second in cut..=text.len() {
                let pieces = [&text[..cut], &text[cut..second], &text[second..], ""];
                assert_eq!(masked(&["ghp_SECRET"], &pieces), want, "{cut} {second}");
            }
        }
    }

    /// A head ended by bare line feeds, as lenient servers send it, ends
    /// there: the body after it is not held as part of it.
    #[test]
    fn a_head_with_bare_line_feeds_ends_at_its_empty_line() {
        let text = "HTTP/1.1 200 OK\nA: ghp_SECRET\n\nghp_SECRET body";
        let mut m = Masker::new(vec![b"ghp_SECRET".to_vec()]);
        let mut out = Vec::new();
        assert!(m.push(text.as_bytes(), false, &mut out));
        assert_eq!(out, b"HTTP/1.1 200 OK\nA: **********\n\nghp_SECRET body");
    }

    /// Interim responses first: the final head is masked too, and a value
    /// inside another is masked whole.
    #[test]
    fn the_final_head_after_interim_ones_is_masked() {
        let text = "HTTP/1.1 103 Early Hints\r\nLink: <xabcdef>\r\n\r\nHTTP/1.1 200 OK\r\nSet-Cookie: s=xabcdef; abc\r\n\r\nabc";
        let got = masked(&["abc", "xabcdef"], &[text, ""]);
        assert_eq!(
            got,
            "HTTP/1.1 103 Early Hints\r\nLink: <*******>\r\n\r\nHTTP/1.1 200 OK\r\nSet-Cookie: s=*******; ***\r\n\r\nabc"
        );
    }

    /// What goes on, and when, depends on where the head ends, never on
    /// the value: a body whose last bytes could begin the value is not
    /// held back (that pause would tell the spell so).
    #[test]
    fn a_body_goes_on_at_once_whatever_its_last_bytes() {
        let mut m = Masker::new(vec![b"ghp_SECRET".to_vec()]);
        let mut out = Vec::new();
        assert!(m.push(b"HTTP/1.1 200 OK\r\nA: b\r\n", false, &mut out));
        assert!(out.is_empty(), "a head goes on whole");
        assert!(m.push(b"\r\ndata: ghp_SEC", false, &mut out));
        assert_eq!(out, b"HTTP/1.1 200 OK\r\nA: b\r\n\r\ndata: ghp_SEC");
    }

    /// A reader that hands out its bytes `step` at a time, as a leg may.
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.step.min(out.len()).min(self.bytes.len());
            out[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    /// The relay passes every byte of a large body on, in order, after
    /// the masked head, however the reads cut it.
    #[test]
    fn the_relay_passes_the_body_whole_after_the_masked_head() {
        let head = b"HTTP/1.1 200 OK\r\nIdempotency-Key: ghp_SECRET\r\n\r\n".to_vec();
        let body: Vec<u8> = (0..1024 * 1024 + 3).map(|i| (i % 251) as u8).collect();
        let response = [head.clone(), body.clone()].concat();
        for step in [1 + head.len() / 2, 4096, 70_000] {
            let mut up = Trickle {
                bytes: &response,
                step,
            };
            let mut down = Vec::new();
            let mut m = Masker::new(vec![b"ghp_SECRET".to_vec()]);
            let received = relay_masked(&mut up, &mut down, &mut m);
            assert_eq!(received, response.len() as u64, "step {step}");
            let want_head = String::from_utf8(head.clone())
                .unwrap()
                .replace("ghp_SECRET", "**********");
            assert_eq!(&down[..head.len()], want_head.as_bytes(), "step {step}");
            assert!(down[head.len()..] == body[..], "step {step}");
        }
    }

    #[test]
    fn a_head_too_large_stops_the_response() {
        let mut m = Masker::new(vec![b"ghp_SECRET".to_vec()]);
        let mut out = Vec::new();
        let long = vec![b'a'; MAX_RESPONSE_HEAD + 1];
        assert!(!m.push(&long, false, &mut out));
        assert!(out.is_empty());
    }
}
