//! The proxy process's work: accept on the two listeners, read what the
//! client asks for (an HTTP request head via `httparse`, or a SOCKS5
//! request), decide on the *name* before anything is resolved, connect,
//! and move bytes both ways. The main thread accepts; one thread per
//! connection and direction; each refusal and each finished connection
//! is reported to magus.

use super::address::may_connect;
use super::events::{Event, RefusalReason};
use super::placement::{settle, Settled, BULK};
use crate::policy::{hosts::normalize_host, HostList};
use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// The largest request head (or SOCKS request) the proxy reads.
const MAX_HEAD: usize = 64 * 1024;
/// Most headers a request may have.
const MAX_HEADERS: usize = 100;
/// The pipe (or buffer) each relay direction moves bytes through.
const RELAY_BUFFER: usize = 1024 * 1024;
/// The congestion control of legs between two sockets of this host
/// (see [`unpaced`]).
const SHORT_PATH_CONGESTION: &str = "reno";
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
    pub fn new(hosts: HostList, report: UnixStream) -> Shared {
        Shared {
            hosts,
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

    fn enter(&self) {
        if let Ok(mut n) = self.active.lock() {
            *n += 1;
        }
    }

    fn leave(&self) {
        if let Ok(mut n) = self.active.lock() {
            *n = n.saturating_sub(1);
            self.idle.notify_all();
        }
    }

    /// Waits (bounded) until no connection is open, lets the writer write
    /// what is queued, then says `End`.
    pub fn finish(&self) {
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
    let worker = Arc::clone(shared);
    shared.enter();
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

/// Where a client wants to go, as it asked.
#[derive(Debug, Clone)]
struct Target {
    /// Normalised name or IP literal.
    host: String,
    port: u16,
}

/// Why a request did not get through.
enum Failure {
    Refused(RefusalReason),
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
        return Err(Failure::Refused(reason));
    }
    let addrs: Vec<SocketAddr> = (target.host.as_str(), target.port)
        .to_socket_addrs()
        .map_err(Failure::Unreachable)?
        .collect();
    let allowed: Vec<&SocketAddr> = addrs
        .iter()
        .filter(|a| may_connect(hosts, &target.host, a.ip(), target.port))
        .collect();
    if allowed.is_empty() && !addrs.is_empty() {
        return Err(Failure::Refused(RefusalReason::PrivateAddress));
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

fn refuse(shared: &Shared, target: &Target, reason: RefusalReason, via: &str) {
    shared.tell_now(&Event::Refused {
        host: target.host.clone(),
        port: target.port,
        reason,
        via: via.to_string(),
    });
}

// ---- HTTP -----------------------------------------------------------------

/// A parsed request head: what the client asked for and how to forward it.
struct Head {
    target: Target,
    /// `CONNECT`: a tunnel; else the head to send upstream (origin-form).
    tunnel: bool,
    upstream_head: Vec<u8>,
    /// Bytes read past the head (a body, or an early TLS hello).
    rest: Vec<u8>,
}

fn http(mut client: TcpStream, shared: &Shared) -> io::Result<()> {
    let head = match read_http_head(&mut client)? {
        Ok(head) => head,
        Err(why) => return respond(&mut client, "400 Bad Request", why),
    };
    let upstream = match open(shared, &head.target) {
        Ok(upstream) => upstream,
        Err(Failure::Refused(reason)) => {
            refuse(shared, &head.target, reason, "http");
            let line = format!(
                "magus: {}:{} refused: {} (MGS2011)",
                head.target.host,
                head.target.port,
                reason.text()
            );
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
    let mut sent = head.rest.len() as u64;
    if head.tunnel {
        client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
    } else {
        upstream.write_all(&head.upstream_head)?;
        sent += head.upstream_head.len() as u64;
    }
    upstream.write_all(&head.rest)?;
    relay(client, upstream, shared, &head.target, sent)
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

/// Reads until a whole head parses. The outer error is the socket's;
/// the inner one is a bad request, said to the client.
fn read_http_head(client: &mut TcpStream) -> io::Result<Result<Head, &'static str>> {
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

fn head_of(request: &httparse::Request<'_, '_>, rest: Vec<u8>) -> Result<Head, &'static str> {
    let (Some(method), Some(path)) = (request.method, request.path) else {
        return Err("not an HTTP request");
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let target = authority(path, None).ok_or("CONNECT needs host:port")?;
        return Ok(Head {
            target,
            tunnel: true,
            upstream_head: Vec::new(),
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
    let origin = match &after[end..] {
        "" => "/".to_string(),
        p if p.starts_with('?') => format!("/{p}"),
        p => p.split('#').next().unwrap_or("/").to_string(),
    };
    Ok(Head {
        target,
        tunnel: false,
        upstream_head: origin_form_head(method, &origin, &after[..end], request),
        rest,
    })
}

/// The head sent upstream: origin-form target, `Host` set to the checked
/// authority (a different `Host` would pick another site on a shared
/// server), the client's other headers without the proxy's own and
/// connection management, and one request per upstream connection (so a
/// second request on the same client connection is never for an
/// unchecked host).
fn origin_form_head(
    method: &str,
    origin: &str,
    authority: &str,
    request: &httparse::Request<'_, '_>,
) -> Vec<u8> {
    let mut out = format!("{method} {origin} HTTP/1.1\r\nHost: {authority}\r\n").into_bytes();
    for header in request.headers.iter() {
        let name = header.name.to_ascii_lowercase();
        let dropped = ["host", "connection", "keep-alive"].contains(&name.as_str());
        if dropped || name.starts_with("proxy-") {
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
fn authority(text: &str, default: Option<u16>) -> Option<Target> {
    if text.contains('@') {
        return None;
    }
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if after.is_empty() => default?,
            None => return None,
        };
        (inside, port)
    } else {
        match text.rsplit_once(':') {
            Some((h, p)) => (h, p.parse().ok()?),
            None => (text, default?),
        }
    };
    if port == 0 {
        return None;
    }
    Some(Target {
        host: normalize_host(host).unwrap_or_else(|| host.escape_debug().to_string()),
        port,
    })
}

// ---- SOCKS5 (RFC 1928) ----------------------------------------------------

const SOCKS_VERSION: u8 = 5;
const NO_AUTH: u8 = 0;
const NO_ACCEPTABLE: u8 = 0xff;
const CMD_CONNECT: u8 = 1;
const REPLY_OK: u8 = 0;
const REPLY_NOT_ALLOWED: u8 = 2;
const REPLY_HOST_UNREACHABLE: u8 = 4;
const REPLY_REFUSED: u8 = 5;
const REPLY_COMMAND: u8 = 7;
const REPLY_ADDRESS_TYPE: u8 = 8;

fn socks5(mut client: TcpStream, shared: &Shared) -> io::Result<()> {
    let mut greeting = [0u8; 2];
    client.read_exact(&mut greeting)?;
    let mut methods = vec![0u8; usize::from(greeting[1])];
    client.read_exact(&mut methods)?;
    if greeting[0] != SOCKS_VERSION || !methods.contains(&NO_AUTH) {
        return client.write_all(&[SOCKS_VERSION, NO_ACCEPTABLE]);
    }
    client.write_all(&[SOCKS_VERSION, NO_AUTH])?;
    let mut request = [0u8; 4];
    client.read_exact(&mut request)?;
    let target = match read_socks_target(&mut client, request[3])? {
        Some(target) => target,
        None => return socks_reply(&mut client, REPLY_ADDRESS_TYPE),
    };
    if request[1] != CMD_CONNECT {
        return socks_reply(&mut client, REPLY_COMMAND);
    }
    match open(shared, &target) {
        Ok(upstream) => {
            socks_reply(&mut client, REPLY_OK)?;
            relay(client, upstream, shared, &target, 0)
        }
        Err(Failure::Refused(reason)) => {
            refuse(shared, &target, reason, "socks5");
            socks_reply(&mut client, REPLY_NOT_ALLOWED)
        }
        Err(Failure::Unreachable(e)) if e.kind() == io::ErrorKind::ConnectionRefused => {
            socks_reply(&mut client, REPLY_REFUSED)
        }
        Err(Failure::Unreachable(_)) => socks_reply(&mut client, REPLY_HOST_UNREACHABLE),
    }
}

/// The destination of a SOCKS request; `None` for an unknown address type.
fn read_socks_target(client: &mut TcpStream, kind: u8) -> io::Result<Option<Target>> {
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

/// A reply with an all-zero bound address (clients ignore it for CONNECT).
fn socks_reply(client: &mut TcpStream, code: u8) -> io::Result<()> {
    client.write_all(&[SOCKS_VERSION, code, 0, 1, 0, 0, 0, 0, 0, 0])
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
    // The relay adds no Nagle delay of its own: each end already chose.
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let (client_r, upstream_w) = (client.try_clone()?, upstream.try_clone()?);
    let up = thread::Builder::new().spawn(move || pump(client_r, upstream_w))?;
    let received = pump(upstream, client);
    let sent = up.join().unwrap_or(0) + already_sent;
    shared.tell_later(Event::Closed {
        host: target.host.clone(),
        port: target.port,
        sent,
        received,
    });
    Ok(())
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
            "a:b",
            "[::1",
        ] {
            assert!(authority(bad, None).is_none(), "{bad}");
        }
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

    fn head(text: &str) -> Result<Head, &'static str> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut request = httparse::Request::new(&mut headers);
        let len = match request.parse(text.as_bytes()).unwrap() {
            httparse::Status::Complete(len) => len,
            httparse::Status::Partial => panic!("partial"),
        };
        head_of(&request, text.as_bytes()[len..].to_vec())
    }

    #[test]
    fn absolute_form_becomes_origin_form_without_proxy_headers() {
        let h = head("GET http://LocalHost:8080/a?b HTTP/1.1\r\nHost: evil.example\r\nProxy-Authorization: x\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\nBODY").unwrap();
        assert!(!h.tunnel);
        assert_eq!((h.target.host.as_str(), h.target.port), ("localhost", 8080));
        let up = String::from_utf8(h.upstream_head).unwrap();
        assert_eq!(
            up,
            "GET /a?b HTTP/1.1\r\nHost: LocalHost:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        assert_eq!(h.rest, b"BODY");
        let c = head("CONNECT github.com:443 HTTP/1.1\r\nHost: github.com:443\r\n\r\n").unwrap();
        assert!(c.tunnel);
        assert_eq!((c.target.host.as_str(), c.target.port), ("github.com", 443));
        assert!(head("GET /relative HTTP/1.1\r\n\r\n").is_err());
        assert!(head("GET https://a.com/ HTTP/1.1\r\n\r\n").is_err());
        assert!(head("CONNECT a.com HTTP/1.1\r\n\r\n").is_err());
    }
}
