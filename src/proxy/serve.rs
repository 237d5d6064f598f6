//! The proxy process's work: accept on the two listeners (at most
//! [`MAX_CLIENTS`] at once), read what the client asks for (through
//! `request`: an HTTP request head, or a SOCKS5 request), decide on the
//! *name* before anything is resolved, connect, and move bytes both ways
//! (for plain HTTP, one request's worth from the client). The main thread
//! accepts; one thread per connection and direction; each refusal and
//! each finished connection is reported to magus.

use super::address::{barred, is_localhost};
use super::events::{rebinding_text, Event, RefusalReason, Resolved};
use super::intercept::{self, basic_credentials, hold_body, percent_decoded, Interceptor, Refusal};
use super::placement::{settle, Settled, BULK};
use super::request::{
    read_http_head, read_socks_greeting, read_socks_request, tunneled_head, Advance, BodyEnd,
    BodyFraming, Head, Target, CMD_CONNECT, MAX_HEAD, NO_AUTH, SOCKS_VERSION,
};
use super::vault::Vault;
use crate::policy::HostList;
use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// The pipe (or buffer) each relay direction moves bytes through.
const RELAY_BUFFER: usize = 1024 * 1024;
/// The congestion control of legs between two sockets of this host
/// (see [`unpaced`]).
const SHORT_PATH_CONGESTION: &str = "reno";
/// Most clients served at once. Each holds one or two threads of the
/// proxy, which runs outside the sandbox and outside `limits.processes`:
/// without a bound, a child holding thousands of idle connections made
/// it start a thread for each, against the user's (and the machine's)
/// thread limits. Beyond it a new client is answered "busy" and closed
/// at once ([`turn_away`]).
pub(crate) const MAX_CLIENTS: usize = 256;
/// How long a connect to a listed host may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the proxy waits, when magus finishes, for open connections to
/// end (so their bytes are counted).
const DRAIN_TIMEOUT: Duration = Duration::from_millis(500);

/// What every connection thread shares.
///
/// A refusal is written to magus before the client hears it, so that it
/// is there when magus looks after the child exits (MGS2011 then names the
/// right call); refusals are rare, so waiting on the channel is fine. The
/// many `Closed` events go through a queue and a writer thread instead, so
/// a magus busy in a long call never stalls a relay. The writer starts
/// with the first queued event: a run that never connects pays for no
/// thread, and its `End` is written straight away.
pub(super) struct Shared {
    pub hosts: HostList,
    /// The TLS side for a run's secrets; `None` without `secrets:`.
    pub secrets: Option<Interceptor>,
    report: Arc<Mutex<UnixStream>>,
    writer: Mutex<Option<Writer>>,
    active: Mutex<usize>,
    idle: Condvar,
}

/// The queue to the writer thread, and the thread.
struct Writer {
    queue: mpsc::Sender<Event>,
    thread: JoinHandle<()>,
}

impl Writer {
    fn start(report: &Arc<Mutex<UnixStream>>) -> io::Result<Writer> {
        let (queue, events) = mpsc::channel::<Event>();
        let report = Arc::clone(report);
        let thread = thread::Builder::new().spawn(move || {
            for event in events {
                write_event(&report, &event);
            }
        })?;
        Ok(Writer { queue, thread })
    }
}

impl Shared {
    pub(super) fn new(hosts: HostList, secrets: Option<Interceptor>, report: UnixStream) -> Shared {
        Shared {
            hosts,
            secrets,
            report: Arc::new(Mutex::new(report)),
            writer: Mutex::new(None),
            active: Mutex::new(0),
            idle: Condvar::new(),
        }
    }

    /// Writes a refusal now (see the type's doc).
    fn tell_now(&self, event: &Event) {
        write_event(&self.report, event);
    }

    /// Queues an event for the writer thread (started here if need be;
    /// where no thread can start, the event is written now).
    fn tell_later(&self, event: Event) {
        let Ok(mut writer) = self.writer.lock() else {
            return;
        };
        if writer.is_none() {
            *writer = Writer::start(&self.report).ok();
        }
        match writer.as_ref() {
            Some(w) => {
                let _ = w.queue.send(event);
            }
            None => write_event(&self.report, &event),
        }
    }

    /// Counts a new client in, unless [`MAX_CLIENTS`] are being served.
    fn try_enter(&self) -> bool {
        let Ok(mut n) = self.active.lock() else {
            return false;
        };
        if *n >= MAX_CLIENTS {
            return false;
        }
        *n += 1;
        true
    }

    fn leave(&self) {
        if let Ok(mut n) = self.active.lock() {
            *n = n.saturating_sub(1);
            self.idle.notify_all();
        }
    }

    /// Waits (bounded) until no connection is open, lets the writer write
    /// what is queued, then says `End`.
    pub(super) fn finish(&self) {
        if let Ok(n) = self.active.lock() {
            let _ = self.idle.wait_timeout_while(n, DRAIN_TIMEOUT, |n| *n > 0);
        }
        let writer = self.writer.lock().ok().and_then(|mut w| w.take());
        if let Some(Writer { queue, thread }) = writer {
            drop(queue);
            let _ = thread.join();
        }
        write_event(&self.report, &Event::End);
    }
}

/// One JSON line to magus; a lost magus is noticed by the control loop,
/// so a failed write is ignored here.
fn write_event(report: &Mutex<UnixStream>, event: &Event) {
    let Ok(mut line) = serde_json::to_vec(event) else {
        return;
    };
    line.push(b'\n');
    if let Ok(mut stream) = report.lock() {
        let _ = stream.write_all(&line);
    }
}

/// Which protocol a listener speaks.
#[derive(Debug, Clone, Copy)]
pub(super) enum Protocol {
    Http,
    Socks5,
}

/// Serves until `control` turns readable (magus's `finish`, or the
/// channel's end): this thread polls both listeners and the channel, so
/// a run that never connects starts no thread at all (the threads the
/// proxy once started here competed with magus's own start-up for the
/// second core); each client gets a thread of its own.
pub(super) fn serve_until_told(
    http: &TcpListener,
    socks: &TcpListener,
    control: &UnixStream,
    shared: &Arc<Shared>,
) {
    // A connection that goes away between the poll and the accept must
    // not block this loop.
    if http.set_nonblocking(true).is_err() || socks.set_nonblocking(true).is_err() {
        return;
    }
    // Accepted sockets inherit it: every client is on this host.
    unpaced(http);
    unpaced(socks);
    loop {
        let Some([told, http_ready, socks_ready]) =
            wait_readable([control.as_fd(), http.as_fd(), socks.as_fd()])
        else {
            return;
        };
        if told {
            return;
        }
        if http_ready {
            accept_one(http, Protocol::Http, shared);
        }
        if socks_ready {
            accept_one(socks, Protocol::Socks5, shared);
        }
    }
}

/// Waits until a client connects (`true`), or magus tells the proxy to
/// stop, or goes, first (`false`). Nothing is accepted or read.
pub(super) fn first_client(http: &TcpListener, socks: &TcpListener, control: &UnixStream) -> bool {
    match wait_readable([control.as_fd(), http.as_fd(), socks.as_fd()]) {
        Some([told, http_ready, socks_ready]) => !told && (http_ready || socks_ready),
        None => false,
    }
}

/// Which of `fds` can be read (or are closed); `None` if `poll` fails.
fn wait_readable(fds: [BorrowedFd<'_>; 3]) -> Option<[bool; 3]> {
    let mut polled = fds.map(|fd| PollFd::new(fd, PollFlags::POLLIN));
    loop {
        match poll(&mut polled, PollTimeout::NONE) {
            Ok(_) => break,
            Err(Errno::EINTR) => continue,
            Err(_) => return None,
        }
    }
    Some(polled.map(|fd| fd.revents().is_some_and(|r| !r.is_empty())))
}

/// Accepts one client (if one is still there) and serves it on a thread
/// of its own. Accepted sockets are blocking: `accept4` does not pass
/// the listener's `O_NONBLOCK` on.
fn accept_one(listener: &TcpListener, protocol: Protocol, shared: &Arc<Shared>) {
    let Ok((client, _)) = listener.accept() else {
        return;
    };
    if !shared.try_enter() {
        turn_away(client, protocol);
        shared.tell_later(Event::TurnedAway);
        return;
    }
    let worker = Arc::clone(shared);
    let spawned = thread::Builder::new().spawn(move || {
        let _ = match protocol {
            Protocol::Http => http(client, &worker),
            Protocol::Socks5 => socks5(client, &worker),
        };
        worker.leave();
    });
    if spawned.is_err() {
        // The client was dropped unanswered with the closure.
        shared.leave();
    }
}

/// Answers a client the proxy has no room for, before reading anything
/// (a read could block this accepting thread), and closes it: HTTP 503
/// with the reason, or SOCKS5's "no acceptable method", the only refusal
/// its greeting has. A fresh socket's send buffer takes either whole.
fn turn_away(mut client: TcpStream, protocol: Protocol) {
    let _ = client.set_nonblocking(true);
    let _ = match protocol {
        Protocol::Http => client.write_all(busy_http().as_bytes()),
        Protocol::Socks5 => client.write_all(&[SOCKS_VERSION, NO_ACCEPTABLE_METHOD]),
    };
    let _ = client.shutdown(Shutdown::Write);
}

/// SOCKS5's method byte for "none of yours is acceptable".
const NO_ACCEPTABLE_METHOD: u8 = 0xff;

/// The whole answer to an HTTP client turned away.
fn busy_http() -> String {
    let body = format!(
        "magus: the proxy is serving {MAX_CLIENTS} connections at once; try again when some have ended\n"
    );
    format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Why a request did not get through.
enum Failure {
    /// By a rule: the reason, and for the rebinding rule where the name led.
    Refused(RefusalReason, Vec<Resolved>),
    Unreachable(io::Error),
}

/// The decision on the name, then the rebinding-checked connect.
fn open(shared: &Shared, target: &Target) -> Result<TcpStream, Failure> {
    let hosts = &shared.hosts;
    if !hosts.permits(&target.host, target.port) {
        let reason = match hosts.lists_name(&target.host) {
            true => RefusalReason::PortNotListed,
            false => RefusalReason::NotListed,
        };
        return Err(Failure::Refused(reason, Vec::new()));
    }
    let addrs = resolve(&target.host, target.port).map_err(Failure::Unreachable)?;
    let (allowed, refused) = sort_addresses(hosts, target, &addrs);
    if allowed.is_empty() && !addrs.is_empty() {
        return Err(Failure::Refused(RefusalReason::PrivateAddress, refused));
    }
    let mut last = io::Error::new(io::ErrorKind::NotFound, "the name has no address");
    for addr in allowed {
        match connect(addr) {
            Ok(stream) => return Ok(stream),
            Err(e) => last = e,
        }
    }
    Err(Failure::Unreachable(last))
}

/// The addresses `host` names on `port`. `localhost` and its sub-domains
/// are loopback (RFC 6761, 6.3), answered here: the system resolver sent
/// `app.localhost` to the network's DNS server, so a label a child chose
/// left the machine in a query (under `hosts: ["*.localhost"]`), and the
/// server's answer, not the name, chose where the proxy connected.
fn resolve(host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    let local = crate::policy::hosts::normalize_host(host).is_some_and(|h| is_localhost(&h));
    if local {
        let v4 = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        return Ok(vec![v4, SocketAddr::from((Ipv6Addr::LOCALHOST, port))]);
    }
    Ok((host, port).to_socket_addrs()?.collect())
}

/// The addresses the name resolved to that the DNS-rebinding rule lets
/// the proxy connect to, and the others (each once), with why.
fn sort_addresses<'a>(
    hosts: &HostList,
    target: &Target,
    addrs: &'a [SocketAddr],
) -> (Vec<&'a SocketAddr>, Vec<Resolved>) {
    let mut allowed = Vec::new();
    let mut refused: Vec<Resolved> = Vec::new();
    for addr in addrs {
        match barred(hosts, &target.host, addr.ip(), target.port) {
            None => allowed.push(addr),
            Some(_) if refused.iter().any(|r| r.address == addr.ip()) => {}
            Some(why) => refused.push(Resolved {
                address: addr.ip(),
                why: why.to_string(),
            }),
        }
    }
    (allowed, refused)
}

/// A connection to `addr`; one on this host is [`unpaced`] from its SYN,
/// as a congestion control chosen later does not undo BBR's pacing.
fn connect(addr: &SocketAddr) -> io::Result<TcpStream> {
    if !addr.ip().is_loopback() {
        return TcpStream::connect_timeout(addr, CONNECT_TIMEOUT);
    }
    use nix::sys::socket::{self, getsockopt, sockopt, AddressFamily, SockFlag, SockType};
    let family = match addr {
        SocketAddr::V4(_) => AddressFamily::Inet,
        SocketAddr::V6(_) => AddressFamily::Inet6,
    };
    let flags = SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK;
    let fd = socket::socket(family, SockType::Stream, flags, None)?;
    unpaced(&fd);
    match socket::connect(fd.as_raw_fd(), &socket::SockaddrStorage::from(*addr)) {
        Ok(()) | Err(Errno::EINPROGRESS) => {}
        Err(e) => return Err(e.into()),
    }
    if !wait_writable(fd.as_fd(), CONNECT_TIMEOUT)? {
        return Err(io::Error::new(io::ErrorKind::TimedOut, "connect timed out"));
    }
    match getsockopt(&fd, sockopt::SocketError)? {
        0 => {}
        e => return Err(io::Error::from_raw_os_error(e)),
    }
    let stream = TcpStream::from(fd);
    stream.set_nonblocking(false)?;
    Ok(stream)
}

/// Whether `fd` turned writable (or failed) within `limit`.
fn wait_writable(fd: BorrowedFd<'_>, limit: Duration) -> io::Result<bool> {
    let timeout = PollTimeout::try_from(limit).unwrap_or(PollTimeout::MAX);
    let mut polled = [PollFd::new(fd, PollFlags::POLLOUT)];
    loop {
        match poll(&mut polled, timeout) {
            Ok(n) => return Ok(n > 0),
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Sends without pacing: Reno, which any process may choose, instead of
/// the host's default where that is BBR. BBR paces every connection
/// with a high-resolution timer, re-armed for nearly every packet; on a
/// virtual machine each re-arm is an exit to the hypervisor, and on a
/// leg between two sockets of this host there is no queue to pace for
/// (docs/benchmarks.md, "The proxy transfer": it was most of the relay's
/// CPU). Legs to other hosts keep the host's choice. A refusal leaves the
/// default.
fn unpaced(socket: &impl AsFd) {
    use nix::sys::socket::{setsockopt, sockopt};
    let _ = setsockopt(
        socket,
        sockopt::TcpCongestion,
        &SHORT_PATH_CONGESTION.into(),
    );
}

/// Reports a refusal to magus (before the client hears of it) and
/// returns the line the client is told.
fn refuse(
    shared: &Shared,
    target: &Target,
    reason: RefusalReason,
    resolved: Vec<Resolved>,
    via: &str,
) -> String {
    let why = match reason {
        RefusalReason::PrivateAddress => rebinding_text(&target.host, &resolved),
        other => other.text().to_string(),
    };
    shared.tell_now(&Event::Refused {
        host: target.host.clone(),
        port: target.port,
        reason,
        via: via.to_string(),
        resolved,
    });
    format!(
        "magus: {}:{} refused: {why} (MGS2011)",
        target.host, target.port
    )
}

// ---- HTTP -----------------------------------------------------------------

fn http(mut client: TcpStream, shared: &Shared) -> io::Result<()> {
    let mut head = match read_http_head(&mut client)? {
        Ok(head) => head,
        Err(why) => return respond(&mut client, "400 Bad Request", why),
    };
    if let Some(line) = plain_refusal(shared, &mut client, &mut head)? {
        return respond(&mut client, "403 Forbidden", &line);
    }
    let upstream = match open(shared, &head.target) {
        Ok(upstream) => upstream,
        Err(Failure::Refused(reason, resolved)) => {
            let line = refuse(shared, &head.target, reason, resolved, "http");
            return respond(&mut client, "403 Forbidden", &line);
        }
        Err(Failure::Unreachable(e)) => {
            let line = format!(
                "magus: cannot reach {}:{}: {e}",
                head.target.host, head.target.port
            );
            return respond(&mut client, "502 Bad Gateway", &line);
        }
    };
    let mut upstream = upstream;
    let Some(framing) = head.body else {
        client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
        if let Some(tls) = bound(shared, &head.target) {
            return intercept(tls, client, head.rest, upstream, shared, &head.target);
        }
        if let Some(tls) = &shared.secrets {
            let early = std::mem::take(&mut head.rest);
            match cleartext_request(&mut client, &upstream, &head.target, early)? {
                Cleartext::Request(inner) => {
                    let vault = Arc::clone(&tls.vault);
                    return tunneled_request(client, upstream, shared, inner, vault);
                }
                Cleartext::Other(early) => head.rest = early,
            }
        }
        upstream.write_all(&head.rest)?;
        return relay(
            client,
            upstream,
            shared,
            &head.target,
            head.rest.len() as u64,
        );
    };
    upstream.write_all(&head.upstream_head)?;
    if let Some(tls) = &shared.secrets {
        let vault = Arc::clone(&tls.vault);
        return relay_checked(client, upstream, shared, head, framing, vault);
    }
    let mut body = BodyEnd::new(framing);
    let early = body_part(&mut body, &head.rest);
    upstream.write_all(early)?;
    if early.len() < head.rest.len() {
        // A request sent with the first (pipelined): dropped, and the
        // server told that nothing follows (see `forward_body`).
        let _ = upstream.shutdown(Shutdown::Write);
    }
    let sent = (head.upstream_head.len() + early.len()) as u64;
    relay_one_request(client, upstream, shared, &head.target, sent, body)
}

/// Holds a plain request's body (where the proxy holds secrets) and looks
/// for a placeholder in all it carries (for a `CONNECT`, its target's
/// name); the line to refuse it with, once the refusal is reported.
fn plain_refusal(
    shared: &Shared,
    client: &mut TcpStream,
    head: &mut Head,
) -> io::Result<Option<String>> {
    if let (Some(_), Some(framing)) = (&shared.secrets, head.body) {
        hold_plain_body(client, head, framing)?;
    }
    let credentials = basic_credentials(&head.upstream_head);
    let mut carried = vec![head.target.host.as_bytes(), &head.upstream_head, &head.rest];
    carried.extend(credentials.iter().map(Vec::as_slice));
    let kind = match head.body {
        None => "in the name of a `CONNECT` target",
        Some(_) => "in a plain-HTTP request (never replaced: only TLS to a bound host is)",
    };
    let refusal = placeholder_in(shared, &carried, kind);
    Ok(refusal.map(|r| say_secret_refusal(shared, &head.target, &r)))
}

/// What a client sends first through a tunnel to a host no secret is
/// bound to, where the proxy holds secrets.
enum Cleartext {
    /// A plain HTTP request (Node's undici tunnels `http://` too): the
    /// proxy can read it, so it is checked as one sent to the proxy.
    Request(Head),
    /// Anything else (TLS, a protocol whose server speaks first, no
    /// request): relayed as is, these bytes first.
    Other(Vec<u8>),
}

/// Reads what the client sends first in the tunnel to `target` (`early`:
/// what came with its `CONNECT`) as far as it takes to tell a plain HTTP
/// request from anything else.
fn cleartext_request(
    client: &mut TcpStream,
    upstream: &TcpStream,
    target: &Target,
    mut early: Vec<u8>,
) -> io::Result<Cleartext> {
    let first = match early.first() {
        Some(&b) => Some(b),
        None => client_speaks_first(client, upstream)?,
    };
    // Every method is upper-case ASCII; TLS begins with 0x16.
    if !first.is_some_and(|b| b.is_ascii_uppercase()) {
        return Ok(Cleartext::Other(early));
    }
    let mut chunk = [0u8; 4096];
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 100];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&early) {
            Ok(httparse::Status::Complete(len)) => {
                let rest = early[len..].to_vec();
                return Ok(match tunneled_head(&request, target, rest) {
                    Ok(head) => Cleartext::Request(head),
                    Err(_) => Cleartext::Other(early),
                });
            }
            Ok(httparse::Status::Partial) if early.len() < MAX_HEAD => {}
            _ => return Ok(Cleartext::Other(early)),
        }
        let n = client.read(&mut chunk)?;
        if n == 0 {
            return Ok(Cleartext::Other(early));
        }
        early.extend_from_slice(&chunk[..n]);
    }
}

/// Waits until the client or the upstream sends: the client's first byte
/// (left unread), or `None` if the upstream spoke first or the client
/// closed.
fn client_speaks_first(client: &TcpStream, upstream: &TcpStream) -> io::Result<Option<u8>> {
    let mut fds = [
        PollFd::new(client.as_fd(), PollFlags::POLLIN),
        PollFd::new(upstream.as_fd(), PollFlags::POLLIN),
    ];
    loop {
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => break,
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    let ready = |fd: &PollFd<'_>| fd.revents().is_some_and(|r| !r.is_empty());
    if ready(&fds[1]) || !ready(&fds[0]) {
        return Ok(None);
    }
    let mut first = [0u8; 1];
    Ok(match client.peek(&mut first)? {
        0 => None,
        _ => Some(first[0]),
    })
}

/// Serves a plain HTTP request read from a tunnel (see [`Cleartext`]):
/// refused as one sent to the proxy would be (the upstream gets nothing),
/// else forwarded as one request, its body checked as it streams.
fn tunneled_request(
    mut client: TcpStream,
    mut upstream: TcpStream,
    shared: &Shared,
    mut head: Head,
    vault: Arc<Vault>,
) -> io::Result<()> {
    if let Some(line) = plain_refusal(shared, &mut client, &mut head)? {
        let _ = upstream.shutdown(Shutdown::Both);
        return respond(&mut client, "403 Forbidden", &line);
    }
    let framing = head.body.unwrap_or(BodyFraming::Length(0));
    upstream.write_all(&head.upstream_head)?;
    relay_checked(client, upstream, shared, head, framing, vault)
}

/// Reads a plain request's body (up to the bound the TLS side holds) into
/// `head.rest` before anything goes upstream: clients write a body after
/// its head (Python's `requests`, Node's `fetch`), and a placeholder in
/// it must stop the request whole, not after its head reached the host.
/// A client waiting on `Expect: 100-continue` is told to go on here (and
/// the host is not asked).
fn hold_plain_body(
    client: &mut TcpStream,
    head: &mut Head,
    framing: BodyFraming,
) -> io::Result<()> {
    if take_expect_continue(&mut head.upstream_head) {
        client.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    head.rest = hold_body(client, std::mem::take(&mut head.rest), framing)?;
    Ok(())
}

/// Drops an `Expect: 100-continue` line from a request head; whether
/// there was one.
fn take_expect_continue(head: &mut Vec<u8>) -> bool {
    const NAME: &[u8] = b"expect:";
    let is_expect = |line: &[u8]| {
        line.len() > NAME.len()
            && line[..NAME.len()].eq_ignore_ascii_case(NAME)
            && line[NAME.len()..]
                .trim_ascii()
                .eq_ignore_ascii_case(b"100-continue")
    };
    let kept: Vec<u8> = head
        .split_inclusive(|&b| b == b'\n')
        .filter(|line| !is_expect(line))
        .flatten()
        .copied()
        .collect();
    let found = kept.len() != head.len();
    *head = kept;
    found
}

/// The part of `input` that belongs to the request body `body` follows.
fn body_part<'a>(body: &mut BodyEnd, input: &'a [u8]) -> &'a [u8] {
    match body.advance(input) {
        Advance::More(n) | Advance::Ended(n) | Advance::Malformed(n) => &input[..n],
    }
}

fn respond(client: &mut TcpStream, status: &str, line: &str) -> io::Result<()> {
    let body = format!("{line}\n");
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(reply.as_bytes())?;
    let _ = client.shutdown(Shutdown::Write);
    // Let the client read the reply before the socket is reset by unread data.
    let _ = client.set_read_timeout(Some(Duration::from_millis(200)));
    let _ = io::copy(&mut client.take(MAX_HEAD as u64), &mut io::sink());
    Ok(())
}

// ---- SOCKS5 (RFC 1928) ----------------------------------------------------

const NO_ACCEPTABLE: u8 = 0xff;
const REPLY_OK: u8 = 0;
const REPLY_NOT_ALLOWED: u8 = 2;
const REPLY_HOST_UNREACHABLE: u8 = 4;
const REPLY_REFUSED: u8 = 5;
const REPLY_COMMAND: u8 = 7;
const REPLY_ADDRESS_TYPE: u8 = 8;

fn socks5(mut client: TcpStream, shared: &Shared) -> io::Result<()> {
    if !read_socks_greeting(&mut client)? {
        return client.write_all(&[SOCKS_VERSION, NO_ACCEPTABLE]);
    }
    client.write_all(&[SOCKS_VERSION, NO_AUTH])?;
    let request = read_socks_request(&mut client)?;
    let Some(target) = request.target else {
        return socks_reply(&mut client, REPLY_ADDRESS_TYPE);
    };
    if request.command != CMD_CONNECT {
        return socks_reply(&mut client, REPLY_COMMAND);
    }
    if let Some(refusal) = placeholder_in(
        shared,
        &[target.host.as_bytes()],
        "in the name of a SOCKS5 target",
    ) {
        say_secret_refusal(shared, &target, &refusal);
        return socks_reply(&mut client, REPLY_NOT_ALLOWED);
    }
    match open(shared, &target) {
        Ok(upstream) => {
            socks_reply(&mut client, REPLY_OK)?;
            if let Some(tls) = bound(shared, &target) {
                return intercept(tls, client, Vec::new(), upstream, shared, &target);
            }
            let mut upstream = upstream;
            if let Some(tls) = &shared.secrets {
                match cleartext_request(&mut client, &upstream, &target, Vec::new())? {
                    Cleartext::Request(inner) => {
                        let vault = Arc::clone(&tls.vault);
                        return tunneled_request(client, upstream, shared, inner, vault);
                    }
                    Cleartext::Other(early) => {
                        upstream.write_all(&early)?;
                        let sent = early.len() as u64;
                        return relay(client, upstream, shared, &target, sent);
                    }
                }
            }
            relay(client, upstream, shared, &target, 0)
        }
        Err(Failure::Refused(reason, resolved)) => {
            refuse(shared, &target, reason, resolved, "socks5");
            socks_reply(&mut client, REPLY_NOT_ALLOWED)
        }
        Err(Failure::Unreachable(e)) if e.kind() == io::ErrorKind::ConnectionRefused => {
            socks_reply(&mut client, REPLY_REFUSED)
        }
        Err(Failure::Unreachable(_)) => socks_reply(&mut client, REPLY_HOST_UNREACHABLE),
    }
}

/// A reply with an all-zero bound address (clients ignore it for CONNECT).
fn socks_reply(client: &mut TcpStream, code: u8) -> io::Result<()> {
    client.write_all(&[SOCKS_VERSION, code, 0, 1, 0, 0, 0, 0, 0, 0])
}

// ---- secrets ---------------------------------------------------------------

/// The TLS side, if a secret is bound to `target` (its tunnel is then
/// terminated rather than relayed).
fn bound<'s>(shared: &'s Shared, target: &Target) -> Option<&'s Interceptor> {
    shared
        .secrets
        .as_ref()
        .filter(|tls| tls.vault.binds(&target.host, target.port))
}

/// A placeholder in what the proxy read of a request that is not
/// terminated (its target's name, a plain-HTTP head and the start of its
/// body), escaped or not.
fn placeholder_in(shared: &Shared, parts: &[&[u8]], kind: &str) -> Option<Refusal> {
    let vault = &shared.secrets.as_ref()?.vault;
    let held = parts.iter().find_map(|p| {
        vault
            .found_in(p)
            .or_else(|| vault.found_in(&percent_decoded(p)))
    })?;
    Some(Refusal::Exfiltration {
        secret: held.binding.name.clone(),
        why: format!("was on its way to a host it is not bound to ({kind})"),
    })
}

/// Reports an MGS2013 refusal to magus (before the client hears of it)
/// and returns the line the client is told.
fn say_secret_refusal(shared: &Shared, target: &Target, refusal: &Refusal) -> String {
    if let Some(event) = refusal.event(target) {
        shared.tell_now(&event);
    }
    refusal.line(target)
}

/// Serves a tunnel to a bound host through the TLS side.
fn intercept(
    tls: &Interceptor,
    client: TcpStream,
    early: Vec<u8>,
    upstream: TcpStream,
    shared: &Shared,
    target: &Target,
) -> io::Result<()> {
    let tell = |refusal: &Refusal| {
        say_secret_refusal(shared, target, refusal);
    };
    let served = tls.serve(client, early, upstream, target, &tell)?;
    shared.tell_later(Event::Closed {
        host: target.host.clone(),
        port: target.port,
        sent: served.sent,
        received: served.received,
    });
    Ok(())
}

// ---- relaying -------------------------------------------------------------

/// Copies both ways until both ends are done, then reports the bytes.
fn relay(
    client: TcpStream,
    upstream: TcpStream,
    shared: &Shared,
    target: &Target,
    already_sent: u64,
) -> io::Result<()> {
    let half_close = HalfClose::Allowed;
    relay_with(
        client,
        upstream,
        shared,
        target,
        already_sent,
        pump,
        half_close,
    )
}

/// [`relay`] for one plain-HTTP request: the client's bytes go upstream
/// only until its body ends (`body`); what it sends after that (a second,
/// pipelined request, perhaps for another host or with another `Host`) is
/// read and dropped, never forwarded, while the response comes back. A
/// server that keeps its connection open despite `Connection: close`
/// would otherwise serve that request unchecked.
fn relay_one_request(
    client: TcpStream,
    upstream: TcpStream,
    shared: &Shared,
    target: &Target,
    already_sent: u64,
    body: BodyEnd,
) -> io::Result<()> {
    let forward = move |from, to| forward_body(from, to, body);
    let half_close = HalfClose::EndsRequest;
    relay_with(
        client,
        upstream,
        shared,
        target,
        already_sent,
        forward,
        half_close,
    )
}

/// [`relay_one_request`] for a proxy holding secrets, `head` already
/// sent: the body (`head.rest` first) streams through the same check as a
/// bound host's ([`intercept::forward_body`]), so a placeholder past what
/// was held before the head left cuts the request off there (the host
/// gets an incomplete request, the run an MGS2013).
fn relay_checked(
    client: TcpStream,
    upstream: TcpStream,
    shared: &Shared,
    head: Head,
    framing: BodyFraming,
    vault: Arc<Vault>,
) -> io::Result<()> {
    let (target, already_sent, rest) = (&head.target, head.upstream_head.len() as u64, head.rest);
    let refused: Arc<Mutex<Option<Refusal>>> = Arc::default();
    let found = Arc::clone(&refused);
    let forward = move |mut from: TcpStream, mut to: TcpStream| match intercept::forward_body(
        &vault, &mut from, &mut to, rest, framing,
    ) {
        Ok(Ok(sent)) => sent + forward_body(from, to, BodyEnd::new(BodyFraming::Length(0))),
        Ok(Err(refusal)) => {
            let _ = to.shutdown(Shutdown::Both);
            *found.lock().unwrap_or_else(|e| e.into_inner()) = Some(refusal);
            0
        }
        Err(_) => {
            let _ = to.shutdown(Shutdown::Write);
            0
        }
    };
    let half_close = HalfClose::EndsRequest;
    relay_with(
        client,
        upstream,
        shared,
        target,
        already_sent,
        forward,
        half_close,
    )?;
    let refusal = refused.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(refusal) = refusal {
        say_secret_refusal(shared, target, &refusal);
    }
    Ok(())
}

/// What the upstream's end of its response means for the client's side.
#[derive(PartialEq)]
enum HalfClose {
    /// A tunnel: the client may go on sending after the server is done.
    Allowed,
    /// One request: its response is over, so the client's side stops too.
    EndsRequest,
}

/// Runs `up` (client to upstream) in a thread of its own and [`pump`]s the
/// way back here, then reports the bytes.
fn relay_with(
    client: TcpStream,
    upstream: TcpStream,
    shared: &Shared,
    target: &Target,
    already_sent: u64,
    up: impl FnOnce(TcpStream, TcpStream) -> u64 + Send + 'static,
    half_close: HalfClose,
) -> io::Result<()> {
    // The relay adds no Nagle delay of its own: each end already chose.
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let (client_r, upstream_w) = (client.try_clone()?, upstream.try_clone()?);
    let up = thread::Builder::new().spawn(move || up(client_r, upstream_w))?;
    let client_end = client.try_clone()?;
    let received = pump(upstream, client);
    if half_close == HalfClose::EndsRequest {
        let _ = client_end.shutdown(Shutdown::Read);
    }
    let sent = up.join().unwrap_or(0) + already_sent;
    shared.tell_later(Event::Closed {
        host: target.host.clone(),
        port: target.port,
        sent,
        received,
    });
    Ok(())
}

/// Copies the rest of the request body from `from` to `to`, then drops
/// whatever else `from` sends until it ends; returns the bytes forwarded.
/// A malformed chunked body ends the forwarding where the fault is. The
/// first byte dropped half-closes `to`: a client that reuses its
/// connection for another request then sees this one end (and retries
/// on a new connection, which is checked) even where the server ignored
/// `Connection: close`.
fn forward_body(mut from: TcpStream, mut to: TcpStream, mut body: BodyEnd) -> u64 {
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let part = match body.finished() {
            true => &[][..],
            false => body_part(&mut body, &buf[..n]),
        };
        if to.write_all(part).is_err() {
            break;
        }
        total += part.len() as u64;
        if part.len() < n {
            let _ = to.shutdown(Shutdown::Write);
        }
    }
    let _ = to.shutdown(Shutdown::Write);
    total
}

/// Copies `from` to `to` until `from` ends, then half-closes `to`;
/// returns the bytes copied. `splice` through a pipe moves pages without
/// copying them into the proxy; a large buffer is the fallback.
fn pump(from: TcpStream, to: TcpStream) -> u64 {
    let total = match spliced(&from, &to) {
        Ok(total) => total,
        Err(Spliced::Unsupported) => buffered(&from, &to),
        Err(Spliced::Stopped(total)) => total,
    };
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
    total
}

/// Why [`spliced`] stopped early.
enum Spliced {
    /// Before any byte: the kernel cannot splice these (fall back).
    Unsupported,
    /// After this many bytes: a socket error ended the connection.
    Stopped(u64),
}

fn spliced(from: &TcpStream, to: &TcpStream) -> Result<u64, Spliced> {
    use nix::errno::Errno;
    use nix::fcntl::{fcntl, splice, FcntlArg, OFlag, SpliceFFlags};
    let (pipe_r, pipe_w) =
        nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|_| Spliced::Unsupported)?;
    let _ = fcntl(&pipe_w, FcntlArg::F_SETPIPE_SZ(RELAY_BUFFER as i32));
    // Never SPLICE_F_MORE: it is MSG_MORE on the socket, which corks a
    // short write (a request, a TLS record) until more data comes, and in
    // a request/response exchange none does (hundreds of ms per round
    // trip). Within one splice the kernel sets MSG_MORE itself while the
    // pipe still holds data.
    let flags = SpliceFFlags::SPLICE_F_MOVE;
    let mut total = 0u64;
    let mut settled = None;
    loop {
        let n = match splice(from, None, &pipe_w, None, RELAY_BUFFER, flags) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(Errno::EINTR) => continue,
            Err(Errno::EINVAL) if total == 0 => return Err(Spliced::Unsupported),
            Err(_) => return Err(Spliced::Stopped(total)),
        };
        let mut left = n;
        while left > 0 {
            match splice(&pipe_r, None, to, None, left, flags) {
                Ok(0) => return Err(Spliced::Stopped(total)),
                Ok(m) => left -= m,
                Err(Errno::EINTR) => {}
                Err(_) => return Err(Spliced::Stopped(total)),
            }
        }
        total += n as u64;
        settle_once_bulk(&mut settled, from, total);
    }
}

/// Settles the relay thread on a CPU once the direction carries bulk
/// data (`placement`'s module doc says why).
fn settle_once_bulk(settled: &mut Option<Settled>, from: &TcpStream, total: u64) {
    if settled.is_none() && total >= BULK {
        *settled = Some(settle(from.as_fd()));
    }
}

/// The fallback: one large buffer.
fn buffered(mut from: &TcpStream, mut to: &TcpStream) -> u64 {
    let mut buf = vec![0u8; RELAY_BUFFER];
    let mut total = 0u64;
    let mut settled = None;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
        total += n as u64;
        settle_once_bulk(&mut settled, from, total);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `localhost` names are answered without the resolver: a name no
    /// resolver knows (here it failed with "Name or service not known",
    /// after a query to the network's DNS server) is loopback, in any
    /// case and with a trailing dot; other names still go to it.
    #[test]
    fn localhost_names_are_loopback_without_a_lookup() {
        let loopback: Vec<SocketAddr> = vec![
            (Ipv4Addr::LOCALHOST, 8080).into(),
            (Ipv6Addr::LOCALHOST, 8080).into(),
        ];
        for host in [
            "localhost",
            "magus-no-such-label-7f3a.localhost",
            "A.B.LocalHost.",
        ] {
            assert_eq!(resolve(host, 8080).unwrap(), loopback, "{host}");
        }
        for host in ["localhost.example", "notlocalhost", "127.0.0.2"] {
            assert!(
                resolve(host, 8080).map_or(true, |a| a != loopback),
                "{host}"
            );
        }
    }

    #[test]
    fn expect_continue_is_taken_out_of_a_head_and_nothing_else() {
        let mut head =
            b"POST / HTTP/1.1\r\nHost: h\r\nexpect:  100-Continue \r\nX-A: b\r\n\r\n".to_vec();
        assert!(take_expect_continue(&mut head));
        assert_eq!(head, b"POST / HTTP/1.1\r\nHost: h\r\nX-A: b\r\n\r\n");
        let mut other =
            b"POST / HTTP/1.1\r\nExpect: other\r\nX-Expect: 100-continue\r\n\r\n".to_vec();
        let before = other.clone();
        assert!(!take_expect_continue(&mut other));
        assert_eq!(other, before);
    }

    #[test]
    fn basic_credentials_are_decoded_from_a_head() {
        // `user:magus-secret-x`, as a client encodes it.
        let head =
            b"GET / HTTP/1.1\r\nauthorization: basic dXNlcjptYWd1cy1zZWNyZXQteA==\r\nX: y\r\n\r\n";
        assert_eq!(
            basic_credentials(head),
            vec![b"user:magus-secret-x".to_vec()]
        );
        assert!(basic_credentials(b"GET / HTTP/1.1\r\nAuthorization: Bearer x\r\n\r\n").is_empty());
    }

    fn congestion(socket: &impl AsFd) -> String {
        use nix::sys::socket::{getsockopt, sockopt};
        let name = getsockopt(socket, sockopt::TcpCongestion).unwrap();
        name.to_string_lossy().trim_end_matches('\0').to_string()
    }

    #[test]
    fn legs_on_this_host_are_unpaced_from_their_first_packet() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        unpaced(&listener);
        let addr = listener.local_addr().unwrap();
        let upstream = connect(&addr).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        assert_eq!(congestion(&upstream), SHORT_PATH_CONGESTION);
        assert_eq!(congestion(&accepted), SHORT_PATH_CONGESTION);
        // Blocking again, and carrying bytes.
        (&upstream).write_all(b"ping").unwrap();
        let mut got = [0u8; 4];
        (&accepted).read_exact(&mut got).unwrap();
        assert_eq!(&got, b"ping");
        drop(listener);
        let refused = connect(&addr).unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::ConnectionRefused);
    }

    /// The busy answer is one well-formed response whose length header
    /// counts its body, so a client shows the reason.
    #[test]
    fn the_busy_answer_is_a_whole_503() {
        let answer = busy_http();
        let mut headers = [httparse::EMPTY_HEADER; 8];
        let mut response = httparse::Response::new(&mut headers);
        let httparse::Status::Complete(head) = response.parse(answer.as_bytes()).unwrap() else {
            panic!("incomplete head: {answer:?}");
        };
        assert_eq!(response.code, Some(503));
        let length = response
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("content-length"))
            .map(|h| {
                std::str::from_utf8(h.value)
                    .unwrap()
                    .parse::<usize>()
                    .unwrap()
            });
        assert_eq!(length, Some(answer.len() - head));
        assert!(answer[head..].contains(&MAX_CLIENTS.to_string()));
    }

    /// A client beyond the limit hears why before its connection ends.
    #[test]
    fn a_client_turned_away_reads_the_reason_then_the_end() {
        for (protocol, expected) in [
            (Protocol::Http, busy_http().into_bytes()),
            (Protocol::Socks5, vec![SOCKS_VERSION, NO_ACCEPTABLE_METHOD]),
        ] {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (accepted, _) = listener.accept().unwrap();
            turn_away(accepted, protocol);
            let mut got = Vec::new();
            client.read_to_end(&mut got).unwrap();
            assert_eq!(got, expected);
        }
    }
}
