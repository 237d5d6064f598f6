//! One TLS connection of the terminating proxy (a leg: to the child, or
//! on to the real host), driven through rustls's unbuffered API.
//!
//! Why not rustls's `StreamOwned`: it reads a socket 4 KiB at a time into
//! a buffer of its own, copies each record's plaintext out again to its
//! reader, and allocates every record it encrypts. A leg reads its socket
//! [`READ_AT_ONCE`] bytes at a time into its own buffer, hands each
//! record's plaintext out where rustls left it, and encrypts into the one
//! buffer it writes from: a bound host's body moves through the proxy with
//! two copies fewer per byte, and in a sixtieth of the system calls.
//!
//! A body's records can also be *staged*: encrypted, but not sent until
//! the caller releases them (`intercept::body::forward_records` releases a
//! record only once what follows it shows no placeholder straddling it).

use rustls::client::{ClientConnectionData, UnbufferedClientConnection};
use rustls::server::{ServerConnectionData, UnbufferedServerConnection};
use rustls::unbuffered::{
    ConnectionState, EncodeError, EncryptError, UnbufferedConnectionCommon, UnbufferedStatus,
};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::ops::DerefMut;

/// How much of the socket one read takes.
pub(crate) const READ_AT_ONCE: usize = 256 * 1024;

/// Released ciphertext is written once this much of it waits.
const SEND_AT: usize = 256 * 1024;

/// Room a read needs past what is buffered: a whole record.
const RECORD_ROOM: usize = 18 * 1024;

/// The two kinds of unbuffered connection, one method apart.
pub(crate) trait Conn: DerefMut<Target = UnbufferedConnectionCommon<Self::Data>> {
    type Data;
    fn process<'c, 'i>(
        &'c mut self,
        incoming: &'i mut [u8],
    ) -> UnbufferedStatus<'c, 'i, Self::Data>;
}

impl Conn for UnbufferedServerConnection {
    type Data = ServerConnectionData;
    fn process<'c, 'i>(
        &'c mut self,
        incoming: &'i mut [u8],
    ) -> UnbufferedStatus<'c, 'i, ServerConnectionData> {
        self.process_tls_records(incoming)
    }
}

impl Conn for UnbufferedClientConnection {
    type Data = ClientConnectionData;
    fn process<'c, 'i>(
        &'c mut self,
        incoming: &'i mut [u8],
    ) -> UnbufferedStatus<'c, 'i, ClientConnectionData> {
        self.process_tls_records(incoming)
    }
}

/// Whether a reader of records wants more of those already at hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    More,
    Enough,
}

/// What a turn of the connection asks for next.
enum Next {
    /// Records were handed out, or there was something to send: go on.
    Again,
    /// Nothing to do until the peer sends more.
    Wait,
    /// The peer closed its side.
    Closed,
}

/// What a turn on the way to encrypting asks for next.
enum Staging {
    Done,
    Again,
    /// The handshake waits for the peer.
    Wait,
}

/// One TLS leg and its socket.
pub(crate) struct Leg<C: Conn> {
    conn: C,
    sock: TcpStream,
    /// `incoming[start..end]`: read from the socket, not yet consumed.
    incoming: Vec<u8>,
    start: usize,
    end: usize,
    /// `outgoing[..released]` may be written; the rest is staged.
    outgoing: Vec<u8>,
    out_len: usize,
    released: usize,
    /// Staged records: where each one's ciphertext ends, and its
    /// plaintext length.
    staged: VecDeque<(usize, usize)>,
    /// Plaintext handed out by rustls but not yet read.
    backlog: Vec<u8>,
    backlog_at: usize,
    /// Plaintext bytes released so far.
    released_plain: u64,
    peer_closed: bool,
}

impl<C: Conn> Leg<C> {
    /// A leg over `sock`, whose first bytes are `early` (already read).
    pub(crate) fn new(conn: C, sock: TcpStream, early: Vec<u8>) -> Leg<C> {
        let end = early.len();
        let mut incoming = early;
        incoming.resize(end.max(READ_AT_ONCE), 0);
        Leg {
            conn,
            sock,
            incoming,
            start: 0,
            end,
            outgoing: vec![0; 2 * SEND_AT],
            out_len: 0,
            released: 0,
            staged: VecDeque::new(),
            backlog: Vec::new(),
            backlog_at: 0,
            released_plain: 0,
            peer_closed: false,
        }
    }

    /// Hands `each` the plaintext of the peer's records, as they come,
    /// until `each` has enough or no whole record is left in what the
    /// socket gave: the socket is read only while none was handed out.
    /// What an earlier read left unread comes first, as one piece.
    /// Returns whether the peer is still open.
    pub(crate) fn read_records(
        &mut self,
        each: &mut dyn FnMut(&[u8]) -> io::Result<Flow>,
    ) -> io::Result<bool> {
        let mut handed = false;
        if self.backlog_at < self.backlog.len() {
            let held = std::mem::take(&mut self.backlog);
            let at = std::mem::replace(&mut self.backlog_at, 0);
            handed = true;
            if each(&held[at..])? == Flow::Enough {
                return Ok(true);
            }
        }
        loop {
            if self.peer_closed {
                return Ok(false);
            }
            match self.turn(&mut |p| {
                handed = true;
                each(p)
            })? {
                (Next::Again, Flow::More) => {}
                (Next::Again, Flow::Enough) => return Ok(true),
                (Next::Wait, _) if handed => return Ok(true),
                (Next::Wait, _) => self.fill()?,
                (Next::Closed, _) => {
                    self.peer_closed = true;
                    return Ok(false);
                }
            }
        }
    }

    /// One call into rustls, and what it asked for done.
    fn turn(
        &mut self,
        each: &mut dyn FnMut(&[u8]) -> io::Result<Flow>,
    ) -> io::Result<(Next, Flow)> {
        let mut flow = Flow::More;
        let mut transmit = false;
        let UnbufferedStatus { discard, state } =
            self.conn.process(&mut self.incoming[self.start..self.end]);
        let next = match state.map_err(io::Error::other)? {
            ConnectionState::ReadTraffic(mut records) => {
                while let Some(record) = records.next_record() {
                    flow = each(record.map_err(io::Error::other)?.payload)?;
                    if flow == Flow::Enough {
                        break;
                    }
                }
                Next::Again
            }
            ConnectionState::EncodeTlsData(mut data) => {
                encode(&mut data, &mut self.outgoing, &mut self.out_len)?;
                Next::Again
            }
            ConnectionState::TransmitTlsData(data) => {
                data.done();
                transmit = true;
                Next::Again
            }
            ConnectionState::BlockedHandshake | ConnectionState::WriteTraffic(_) => Next::Wait,
            ConnectionState::PeerClosed | ConnectionState::Closed => Next::Closed,
            other => return Err(unexpected(&other)),
        };
        self.start += discard;
        if transmit {
            self.transmit()?;
        }
        Ok((next, flow))
    }

    /// Reads more of the socket; its end without a `close_notify` is an
    /// error (a cut-off stream must not pass for a whole one).
    fn fill(&mut self) -> io::Result<()> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if self.incoming.len() - self.end < RECORD_ROOM {
            self.incoming.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.incoming.len() - self.end < RECORD_ROOM {
            // A handshake message larger than a read (rustls allows 64 KiB).
            self.incoming.resize(self.end + READ_AT_ONCE, 0);
        }
        let n = self.sock.read(&mut self.incoming[self.end..])?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the peer closed without close_notify",
            ));
        }
        self.end += n;
        Ok(())
    }

    /// Encrypts `plain` into the outgoing buffer, staged: not written
    /// until released. Drives the handshake first where it is not done.
    pub(crate) fn stage(&mut self, plain: &[u8]) -> io::Result<()> {
        loop {
            match self.try_stage(plain)? {
                Staging::Done => return Ok(()),
                Staging::Again => {}
                Staging::Wait => {
                    self.transmit()?;
                    self.fill()?;
                }
            }
        }
    }

    /// One call into rustls on the way to encrypting `plain`.
    fn try_stage(&mut self, plain: &[u8]) -> io::Result<Staging> {
        let mut transmit = false;
        let UnbufferedStatus { discard, state } =
            self.conn.process(&mut self.incoming[self.start..self.end]);
        let staging = match state.map_err(io::Error::other)? {
            ConnectionState::WriteTraffic(mut traffic) => {
                let at = self.out_len;
                encrypt(&mut traffic, plain, &mut self.outgoing, &mut self.out_len)?;
                if at < self.out_len {
                    self.staged.push_back((self.out_len, plain.len()));
                }
                Staging::Done
            }
            // What the peer sent meanwhile is kept for the next read.
            ConnectionState::ReadTraffic(mut records) => {
                while let Some(record) = records.next_record() {
                    let payload = record.map_err(io::Error::other)?.payload;
                    self.backlog.extend_from_slice(payload);
                }
                Staging::Again
            }
            ConnectionState::EncodeTlsData(mut data) => {
                encode(&mut data, &mut self.outgoing, &mut self.out_len)?;
                Staging::Again
            }
            ConnectionState::TransmitTlsData(data) => {
                data.done();
                transmit = true;
                Staging::Again
            }
            ConnectionState::BlockedHandshake => Staging::Wait,
            ConnectionState::PeerClosed | ConnectionState::Closed => {
                return Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "the peer closed the connection",
                ))
            }
            other => return Err(unexpected(&other)),
        };
        self.start += discard;
        if transmit {
            self.transmit()?;
        }
        Ok(staging)
    }

    /// Releases staged records from the oldest on while at least `after`
    /// bytes of plaintext staged after them remain staged; writes what is
    /// released once enough of it waits.
    pub(crate) fn release_keeping(&mut self, after: usize) -> io::Result<()> {
        let mut behind: usize = self.staged.iter().map(|&(_, len)| len).sum();
        while let Some(&(end, len)) = self.staged.front() {
            if behind - len < after {
                break;
            }
            behind -= len;
            self.released = end;
            self.released_plain += len as u64;
            self.staged.pop_front();
        }
        if self.released >= SEND_AT {
            self.send_released()?;
        }
        Ok(())
    }

    /// Releases everything staged and writes it.
    pub(crate) fn release_all(&mut self) -> io::Result<()> {
        let staged: usize = self.staged.drain(..).map(|(_, len)| len).sum();
        self.released_plain += staged as u64;
        self.released = self.out_len;
        self.send_released()
    }

    /// Writes what has been released (handshake bytes queued behind
    /// staged records wait for them: records must leave in order).
    fn transmit(&mut self) -> io::Result<()> {
        if self.staged.is_empty() {
            self.released = self.out_len;
        }
        self.send_released()
    }

    /// Writes `outgoing[..released]` and moves what is staged to the front.
    pub(crate) fn send_released(&mut self) -> io::Result<()> {
        if self.released == 0 {
            return Ok(());
        }
        self.sock.write_all(&self.outgoing[..self.released])?;
        self.outgoing.copy_within(self.released..self.out_len, 0);
        self.out_len -= self.released;
        for entry in self.staged.iter_mut() {
            entry.0 -= self.released;
        }
        self.released = 0;
        Ok(())
    }

    /// Sends a `close_notify` after whatever is released.
    pub(crate) fn close(&mut self) -> io::Result<()> {
        let UnbufferedStatus { discard, state } =
            self.conn.process(&mut self.incoming[self.start..self.end]);
        if let Ok(ConnectionState::WriteTraffic(mut traffic)) = state {
            // An alert record is a few dozen bytes.
            if self.outgoing.len() - self.out_len < 256 {
                self.outgoing.resize(self.out_len + 256, 0);
            }
            if let Ok(n) = traffic.queue_close_notify(&mut self.outgoing[self.out_len..]) {
                self.out_len += n;
            }
        }
        self.start += discard;
        self.release_all()
    }

    /// The plaintext bytes released so far.
    pub(crate) fn plain_released(&self) -> u64 {
        self.released_plain
    }

    /// Ends the connection at once: what is staged never leaves.
    pub(crate) fn abandon(&mut self) {
        self.staged.clear();
        self.out_len = self.released;
        let _ = self.sock.shutdown(Shutdown::Both);
    }
}

impl<C: Conn> Read for Leg<C> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.backlog_at < self.backlog.len() {
            let n = out.len().min(self.backlog.len() - self.backlog_at);
            out[..n].copy_from_slice(&self.backlog[self.backlog_at..self.backlog_at + n]);
            self.backlog_at += n;
            if self.backlog_at == self.backlog.len() {
                self.backlog.clear();
                self.backlog_at = 0;
            }
            return Ok(n);
        }
        let mut filled = 0;
        let mut rest = std::mem::take(&mut self.backlog);
        let result = self.read_records(&mut |plain| {
            let n = plain.len().min(out.len() - filled);
            out[filled..filled + n].copy_from_slice(&plain[..n]);
            filled += n;
            rest.extend_from_slice(&plain[n..]);
            Ok(match filled == out.len() {
                true => Flow::Enough,
                false => Flow::More,
            })
        });
        self.backlog = rest;
        result?;
        Ok(filled)
    }
}

impl<C: Conn> Write for Leg<C> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stage(buf)?;
        self.release_all()?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.release_all()
    }
}

fn encode<D>(
    data: &mut rustls::unbuffered::EncodeTlsData<'_, D>,
    outgoing: &mut Vec<u8>,
    out_len: &mut usize,
) -> io::Result<()> {
    loop {
        match data.encode(&mut outgoing[*out_len..]) {
            Ok(n) => {
                *out_len += n;
                return Ok(());
            }
            Err(EncodeError::InsufficientSize(need)) => {
                outgoing.resize(*out_len + need.required_size, 0);
            }
            Err(e) => return Err(io::Error::other(e)),
        }
    }
}

fn encrypt<D>(
    traffic: &mut rustls::unbuffered::WriteTraffic<'_, D>,
    plain: &[u8],
    outgoing: &mut Vec<u8>,
    out_len: &mut usize,
) -> io::Result<()> {
    loop {
        match traffic.encrypt(plain, &mut outgoing[*out_len..]) {
            Ok(n) => {
                *out_len += n;
                return Ok(());
            }
            Err(EncryptError::InsufficientSize(need)) => {
                outgoing.resize(*out_len + need.required_size, 0);
            }
            Err(e) => return Err(io::Error::other(e)),
        }
    }
}

fn unexpected<D>(state: &ConnectionState<'_, '_, D>) -> io::Error {
    io::Error::other(format!("unexpected TLS state {state:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::test_support::{
        capturing_host_with, leg_from_peer, leg_to_host, serving, serving_only,
    };
    use crate::proxy::vault::Authority;

    /// Closes a leg the peer wrote `data` to, waits for the peer, and
    /// checks the leg read exactly that.
    fn closed_having_read(
        mut leg: Leg<UnbufferedServerConnection>,
        peer: std::thread::JoinHandle<Vec<u8>>,
        got: &[u8],
        data: &[u8],
    ) {
        let _ = leg.close();
        drop(leg);
        peer.join().expect("peer");
        assert_eq!(got.len(), data.len(), "the leg read {} bytes", got.len());
        assert!(got == data, "the bytes differ");
    }

    /// A [`Leg`] gives back every byte the peer sent, in order, through
    /// the handshake, many records per socket read, and the peer's close.
    #[test]
    fn a_leg_reads_every_byte_the_peer_sent_in_order() {
        let ca = Authority::new().expect("test CA");
        let data: Vec<u8> = (0..3 * 1024 * 1024 + 123)
            .map(|i| (i % 251) as u8)
            .collect();
        let (mut leg, peer) = leg_from_peer(&ca, serving(&ca), data.clone(), 100_000);
        let mut got = Vec::new();
        let mut buf = vec![0u8; 200_000];
        loop {
            let n = leg.read(&mut buf).expect("read");
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        closed_having_read(leg, peer, &got, &data);
    }

    /// A read that takes part of a record leaves the rest for the next:
    /// the records handed out after it start with that rest (the request
    /// head is read so, then the body record by record).
    #[test]
    fn records_after_a_short_read_start_with_what_it_left() {
        let ca = Authority::new().expect("test CA");
        let data: Vec<u8> = (0..200_000).map(|i| (i % 241) as u8).collect();
        let (mut leg, peer) = leg_from_peer(&ca, serving(&ca), data.clone(), 16 * 1024);
        let mut got = vec![0u8; 1000];
        let n = leg.read(&mut got).expect("read");
        got.truncate(n);
        while leg
            .read_records(&mut |piece| {
                got.extend_from_slice(piece);
                Ok(Flow::More)
            })
            .expect("records")
        {}
        closed_having_read(leg, peer, &got, &data);
    }

    /// Real hosts and clients may speak only TLS 1.2: both legs carry
    /// every byte with such a peer, the handshake and the close included.
    #[test]
    fn both_legs_carry_every_byte_with_a_peer_that_speaks_only_tls_1_2() {
        let ca = Authority::new().expect("test CA");
        let only_12 = [&rustls::version::TLS12];
        let data: Vec<u8> = (0..300_000).map(|i| (i % 253) as u8).collect();
        // The child's side: a server leg, the peer a client.
        let config = serving_only(&ca, &only_12);
        let (mut down, peer) = leg_from_peer(&ca, config, data.clone(), 16 * 1024);
        let mut got = Vec::new();
        down.read_to_end(&mut got).expect("read");
        closed_having_read(down, peer, &got, &data);
        // The host's side: a client leg, the peer a server.
        let (host_port, host) = capturing_host_with(serving_only(&ca, &only_12));
        let mut up = leg_to_host(&ca, host_port);
        up.write_all(&data).expect("write");
        up.close().expect("close");
        let sent = host.join().expect("host");
        drop(up);
        assert!(sent == data, "the host got {} bytes", sent.len());
    }
}
