//! `network:` through the real `magus` binary, tried as an attacker would
//! (docs/network.md, docs/escape-suite.md), as root and as uid 65534. Listeners magus does not
//! control sit on 127.0.0.1 and ::1; a child of the spell (`tests/net/
//! probe.c`, compiled here) tries one trick per row and every run is
//! judged twice: by what the probe says, and by what the listeners saw.
//! The control (sandbox off) must get every row through, so a blocked row
//! means something.

mod support;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use support::{capture, Harness, RunOutput};

// ------------------------------------------------------------ listeners

/// Everything any listener received, in one buffer: each row's marker is
/// unique, so finding it says which row got through.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<u8>>>);

impl Seen {
    fn add(&self, bytes: &[u8]) {
        self.0.lock().unwrap().extend_from_slice(bytes);
        self.0.lock().unwrap().push(b'\n');
    }

    fn contains(&self, marker: &str) -> bool {
        let all = self.0.lock().unwrap();
        all.windows(marker.len()).any(|w| w == marker.as_bytes())
    }
}

/// The listeners of one test: TCP on two ports of 127.0.0.1 and one of
/// ::1, UDP echo on both, a `NETLINK_USERSOCK` socket in the host's
/// network namespace, and (as root) a raw ICMP socket.
struct Listeners {
    tcp4: u16,
    tcp6: u16,
    tcp4_other: u16,
    udp4: u16,
    udp6: u16,
    netlink: u32,
    seen: Seen,
}

impl Listeners {
    fn start() -> Listeners {
        let seen = Seen::default();
        let tcp4 = tcp_listener((Ipv4Addr::LOCALHOST, 0).into(), &seen);
        let tcp6 = tcp_listener((Ipv6Addr::LOCALHOST, 0).into(), &seen);
        let tcp4_other = tcp_listener((Ipv4Addr::LOCALHOST, 0).into(), &seen);
        let udp4 = udp_echo((Ipv4Addr::LOCALHOST, 0).into(), &seen);
        let udp6 = udp_echo((Ipv6Addr::LOCALHOST, 0).into(), &seen);
        let netlink = netlink_user_listener(&seen);
        if is_root() {
            icmp_listener(&seen);
        }
        Listeners {
            tcp4,
            tcp6,
            tcp4_other,
            udp4,
            udp6,
            netlink,
            seen,
        }
    }
}

fn tcp_listener(addr: std::net::SocketAddr, seen: &Seen) -> u16 {
    let listener = TcpListener::bind(addr).expect("bind a TCP listener");
    let port = listener.local_addr().unwrap().port();
    let seen = seen.clone();
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let seen = seen.clone();
            thread::spawn(move || read_all(stream, &seen));
        }
    });
    port
}

fn read_all(mut stream: TcpStream, seen: &Seen) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(3)));
    let mut buf = [0u8; 512];
    while let Ok(n) = stream.read(&mut buf) {
        if n == 0 {
            break;
        }
        seen.add(&buf[..n]);
    }
}

fn udp_echo(addr: std::net::SocketAddr, seen: &Seen) -> u16 {
    let socket = UdpSocket::bind(addr).expect("bind a UDP listener");
    let port = socket.local_addr().unwrap().port();
    let seen = seen.clone();
    thread::spawn(move || {
        let mut buf = [0u8; 512];
        while let Ok((n, from)) = socket.recv_from(&mut buf) {
            seen.add(&buf[..n]);
            let _ = socket.send_to(&buf[..n], from);
        }
    });
    port
}

/// A `NETLINK_USERSOCK` socket bound to a port id of its own: any process
/// of the host's network namespace may send to it, without privilege (a
/// message channel beside the TCP that port lists watch).
fn netlink_user_listener(seen: &Seen) -> u32 {
    use nix::sys::socket::{
        bind, socket, AddressFamily, NetlinkAddr, SockFlag, SockProtocol, SockType,
    };
    let fd: OwnedFd = socket(
        AddressFamily::Netlink,
        SockType::Raw,
        SockFlag::empty(),
        SockProtocol::NetlinkUserSock,
    )
    .expect("a NETLINK_USERSOCK socket");
    // Port ids are per namespace and chosen by us, one per listener (the
    // tests of this binary run at once): from the test's pid and a count,
    // below 2^31 for the probe's `atoi`.
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let count = NEXT.fetch_add(1, Ordering::Relaxed) & 0xfff;
    let id = 0x4000_0000 | ((std::process::id() & 0x3_ffff) << 12) | count;
    bind(fd.as_raw_fd(), &NetlinkAddr::new(id, 0)).expect("bind the netlink listener");
    let seen = seen.clone();
    thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while let Ok(n) = nix::unistd::read(&fd, &mut buf) {
            seen.add(&buf[..n]);
        }
    });
    id
}

/// A raw ICMP socket sees every echo request sent to the host's loopback.
fn icmp_listener(seen: &Seen) {
    use nix::sys::socket::{socket, AddressFamily, SockFlag, SockProtocol, SockType};
    let fd: OwnedFd = socket(
        AddressFamily::Inet,
        SockType::Raw,
        SockFlag::empty(),
        SockProtocol::Icmp,
    )
    .expect("a raw ICMP socket (root)");
    let seen = seen.clone();
    thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while let Ok(n) = nix::unistd::read(&fd, &mut buf) {
            seen.add(&buf[..n]);
        }
    });
}

/// Sends `marker` over loopback UDP every 50 ms while it lives, for the
/// packet-socket row to sniff.
struct Beacon {
    stop: Arc<AtomicBool>,
}

impl Beacon {
    fn start(marker: String) -> Beacon {
        let stop = Arc::new(AtomicBool::new(false));
        let done = stop.clone();
        let sink = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let to = sink.local_addr().unwrap();
        let from = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let _ = from.send_to(marker.as_bytes(), to);
                thread::sleep(Duration::from_millis(50));
            }
            drop(sink);
        });
        Beacon { stop }
    }
}

impl Drop for Beacon {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The peer of the `listen` row: waits for the port the probe wrote, then
/// connects from outside magus and sends the marker.
fn peer_for_listen(port_file: PathBuf, marker: String, done: Arc<AtomicBool>, seen: Seen) {
    thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done.load(Ordering::Relaxed) && Instant::now() < deadline {
            let text = std::fs::read_to_string(&port_file).unwrap_or_default();
            if let Ok(port) = text.trim().parse::<u16>() {
                if let Ok(mut s) = TcpStream::connect((Ipv4Addr::LOCALHOST, port)) {
                    let _ = s.write_all(marker.as_bytes());
                    seen.add(format!("peer-connected {marker}").as_bytes());
                }
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
    });
}

// ------------------------------------------------------------ the runs

/// Who runs magus: the user running the tests (root in CI), or uid 65534.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum User {
    Invoker,
    Nobody,
}

impl User {
    fn wrapper(self) -> &'static [&'static str] {
        match self {
            User::Invoker => &[],
            User::Nobody => &[
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
            ],
        }
    }
}

/// The setting under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The control: sandbox off.
    Off,
    Allow,
    /// `deny` with namespaces (the loopback-only network namespace).
    Deny,
    /// `deny` with `MAGUS_SANDBOX_USERNS=0`: the seccomp fallback.
    DenyFallback,
    /// `{connect_tcp: [tcp4, tcp6]}`.
    Ports,
}

/// One attack: its name, the probe's row and where it aims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Tcp4,
    Tcp6,
    Tcp4Other,
    Udp4,
    Udp6,
    Icmp,
    Listen,
    Packet,
    /// The hypervisor's host over vsock (CID 2, port 1).
    VsockHost,
    /// The host namespace's `NETLINK_USERSOCK` listener.
    NetlinkUser,
}

const ROWS: [(&str, &str, Target); 17] = [
    ("tcp4", "tcp", Target::Tcp4),
    ("tcp6", "tcp", Target::Tcp6),
    ("tcp4-unlisted-port", "tcp", Target::Tcp4Other),
    // The tricks below aim at the port no port list names: Landlock's TCP
    // rights do not see them (landlock-lsm/linux#54, #41).
    ("mptcp4", "mptcp", Target::Tcp4Other),
    ("fastopen-sendto4", "fastopen", Target::Tcp4Other),
    ("fastopen-connect4", "fastopen-connect", Target::Tcp4Other),
    ("udp4", "udp", Target::Udp4),
    ("udp6", "udp", Target::Udp6),
    ("icmp-echo", "icmp", Target::Icmp),
    ("listen-unbound", "listen", Target::Listen),
    ("packet-socket", "packet", Target::Packet),
    ("vsock-to-host", "vsock", Target::VsockHost),
    ("netlink-usersock", "netlink-user", Target::NetlinkUser),
    ("uring-tcp4-listed-port", "uring-tcp", Target::Tcp4),
    ("uring-tcp4", "uring-tcp", Target::Tcp4Other),
    ("uring-mptcp4", "uring-mptcp", Target::Tcp4Other),
    ("uring-udp4", "uring-udp", Target::Udp4),
];

/// Every setting, the sandbox-off control first.
const MODES: [Mode; 5] = [
    Mode::Off,
    Mode::Allow,
    Mode::Deny,
    Mode::DenyFallback,
    Mode::Ports,
];

/// Rows whose control may fail for want of a kernel feature (vsock on a
/// machine that is no VM, MPTCP or io_uring turned off by sysctl): where
/// the sandbox-off control fails they are skipped, the reason printed.
/// Every other row must get through in the control.
const MACHINE_DEPENDENT: [&str; 6] = [
    "vsock-to-host",
    "mptcp4",
    "uring-mptcp4",
    "uring-tcp4",
    "uring-tcp4-listed-port",
    "uring-udp4",
];

/// Whether a row gets through: the documented behaviour of each setting.
fn expected(mode: Mode, user: User, row: &str) -> bool {
    let privileged_row = row == "packet-socket";
    match mode {
        Mode::Off => !privileged_row || (user == User::Invoker && is_root()),
        // No CAP_NET_RAW for anyone; ICMP goes out through a ping socket.
        // io_uring is refused under every setting (its requests are out
        // of seccomp's sight: tests/jail.rs).
        Mode::Allow => !privileged_row && !row.starts_with("uring-"),
        Mode::Deny | Mode::DenyFallback => false,
        Mode::Ports => row == "tcp4" || row == "tcp6",
    }
}

/// The compiled probe (once per test binary).
fn probe_binary() -> &'static Path {
    static PROBE: OnceLock<PathBuf> = OnceLock::new();
    PROBE.get_or_init(|| support::compile_c("net/probe.c", "netprobe"))
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// A workspace for `user` with the probe copied in and `network` set.
fn workspace(user: User, mode: Mode, l: &Listeners) -> Harness {
    let network = match mode {
        Mode::Off | Mode::Allow => "allow".to_string(),
        Mode::Deny | Mode::DenyFallback => "deny".to_string(),
        Mode::Ports => format!("{{connect_tcp: [{}, {}]}}", l.tcp4, l.tcp6),
    };
    let mut h = Harness::with_config(&format!(
        "sandbox:\n  enabled: true\n  network: {network}\n"
    ));
    match mode {
        Mode::Off => h.set_env("MAGUS_SANDBOX_ENABLED", "0"),
        Mode::DenyFallback => h.set_env("MAGUS_SANDBOX_USERNS", "0"),
        _ => {}
    }
    std::fs::copy(probe_binary(), h.ws_path("probe")).unwrap();
    if user == User::Nobody {
        for dir in [&h.root, &h.ws, &h.home] {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        }
    }
    h
}

/// The spell: runs `rows.sh` in the workspace and prints what it printed.
const SPELL: &str = "import \"std\";\nimport \"sh\";\nfun main(args: [str]) > int {\n    final out = sh.output([\"/bin/sh\", \"rows.sh\"]);\n    std.print(out.stdout);\n    std.print(out.stderr);\n    return out.status;\n}\n";

fn target_args(target: Target, l: &Listeners) -> (&'static str, u32) {
    match target {
        Target::Tcp4 => ("127.0.0.1", l.tcp4.into()),
        Target::Tcp6 => ("::1", l.tcp6.into()),
        Target::Tcp4Other => ("127.0.0.1", l.tcp4_other.into()),
        Target::Udp4 => ("127.0.0.1", l.udp4.into()),
        Target::Udp6 => ("::1", l.udp6.into()),
        Target::Icmp | Target::Listen | Target::Packet => ("127.0.0.1", 0),
        Target::VsockHost => ("host", 1),
        // The port id, which the probe takes in place of a port.
        Target::NetlinkUser => ("host", l.netlink),
    }
}

/// The marker of one row of one run.
fn marker(user: User, mode: Mode, row: &str, nonce: u64) -> String {
    format!("MGSNET-{user:?}-{mode:?}-{row}-{nonce:x}")
}

/// Runs every row under `mode` as `user`; returns `(row, probe line,
/// reached a listener)`.
fn run_rows(
    user: User,
    mode: Mode,
    l: &Listeners,
    packet_marker: &str,
) -> Vec<(String, String, bool)> {
    let h = workspace(user, mode, l);
    let nonce = std::process::id() as u64 ^ (Instant::now().elapsed().as_nanos() as u64);
    let mut script = String::new();
    for (name, row, target) in ROWS {
        let (host, port) = target_args(target, l);
        let mark = match target {
            Target::Packet => packet_marker.to_string(),
            _ => marker(user, mode, name, nonce),
        };
        let extra = if target == Target::Listen {
            " port-file"
        } else {
            ""
        };
        script.push_str(&format!(
            "printf '%s ' {name}; ./probe {row} {host} {port} {mark}{extra}\n"
        ));
    }
    std::fs::write(h.ws_path("rows.sh"), script).unwrap();
    h.write_spell("net", SPELL);
    let done = Arc::new(AtomicBool::new(false));
    let listen_marker = marker(user, mode, "listen-unbound", nonce);
    peer_for_listen(
        h.ws_path("port-file"),
        listen_marker,
        done.clone(),
        l.seen.clone(),
    );
    let out = run(&h, user.wrapper());
    done.store(true, Ordering::Relaxed);
    thread::sleep(Duration::from_millis(200));
    assert_eq!(out.status, Some(0), "{user:?} {mode:?}\n{}", out.dump());
    h.assert_no_leak(&out);
    ROWS.iter()
        .map(|(name, _, target)| {
            let line = out
                .lines_starting(&format!("{name} "))
                .first()
                .map(|l| l.to_string())
                .unwrap_or_else(|| panic!("no line for {name}\n{}", out.dump()));
            let reached = match target {
                Target::Packet => line.contains("ok sniffed"),
                Target::VsockHost => line.contains("ok host-answered"),
                Target::Listen => line.contains("ok accepted"),
                _ => l.seen.contains(&marker(user, mode, name, nonce)),
            };
            (name.to_string(), line, reached)
        })
        .collect()
}

fn run(h: &Harness, wrapper: &[&str]) -> RunOutput {
    let mut cmd = h.wrapped_command(wrapper);
    cmd.arg("--workspace").arg(&h.ws).args(["run", "net"]);
    capture(&mut cmd)
}

/// The users this machine can test: root and uid 65534 when root, else
/// the current user alone (printed).
fn users() -> Vec<User> {
    if is_root() && Command::new("setpriv").arg("--version").output().is_ok() {
        vec![User::Invoker, User::Nobody]
    } else {
        println!("not root: only the current user is tested");
        vec![User::Invoker]
    }
}

/// Opens `net.ipv4.ping_group_range` to every group while it lives (root
/// only), so an unprivileged ICMP echo has a working control; restored on
/// drop.
struct PingRange(Option<String>);

const PING_RANGE: &str = "/proc/sys/net/ipv4/ping_group_range";

impl PingRange {
    fn open() -> PingRange {
        let old = std::fs::read_to_string(PING_RANGE).ok();
        if is_root() {
            std::fs::write(PING_RANGE, "0 2147483647").expect("open ping_group_range");
        }
        PingRange(old)
    }
}

impl Drop for PingRange {
    fn drop(&mut self) {
        if let (true, Some(old)) = (is_root(), &self.0) {
            let _ = std::fs::write(PING_RANGE, old.trim());
        }
    }
}

/// Every row, every setting, both users: each row gets through exactly
/// where [`expected`] says, and a blocked row's marker reaches no
/// listener. The sandbox-off control gets every row through.
#[test]
fn each_setting_blocks_exactly_its_rows() {
    let listeners = Listeners::start();
    let _range = PingRange::open();
    let packet_marker = format!("MGSNET-packet-{:x}", std::process::id());
    let _beacon = Beacon::start(packet_marker.clone());
    let mut report = BTreeMap::new();
    let mut wrong = Vec::new();
    for user in users() {
        let mut unavailable: Vec<String> = Vec::new();
        for mode in MODES {
            for (row, line, reached) in run_rows(user, mode, &listeners, &packet_marker) {
                if row == "icmp-echo" && !is_root() {
                    continue; // no listener can see ICMP without root
                }
                let want = expected(mode, user, &row);
                let machine_lacks = mode == Mode::Off && want && !reached;
                if machine_lacks && MACHINE_DEPENDENT.contains(&row.as_str()) {
                    println!("skipped {row} for {user:?}: the control fails here: {line}");
                    unavailable.push(row.clone());
                }
                if unavailable.contains(&row) {
                    continue;
                }
                let says_ok = line.contains(" ok ");
                if reached != want || says_ok != want {
                    wrong.push(format!(
                        "{user:?} {mode:?} {line} (reached: {reached}, want {want})"
                    ));
                }
                report.insert(format!("{user:?} {mode:?} {row}"), line);
            }
        }
    }
    for (k, v) in &report {
        println!("{k:40} {v}");
    }
    assert!(
        wrong.is_empty(),
        "unexpected outcomes:\n{}",
        wrong.join("\n")
    );
}

// ------------------------------------------------ the host's addresses

/// As root, a child adds an address and a route to loopback. The run
/// happens in a throw-away network namespace (so the test never changes
/// the machine); after magus exits, the namespace is inspected from
/// outside. Only the sandbox-off control changes it: no setting leaves
/// a child `CAP_NET_ADMIN`.
#[test]
fn no_setting_lets_root_change_addresses_or_routes() {
    if !is_root() {
        println!("skipped: changing addresses needs root for the control run");
        return;
    }
    let outside = "ip link set lo up; \"$0\" \"$@\"; echo ==after==; ip -o addr show dev lo; ip route show table all";
    let script = "ip addr add 192.0.2.77/32 dev lo; echo addr=$?; ip route add 198.51.100.0/24 dev lo; echo route=$?\n";
    let listeners = Listeners::start();
    for mode in [
        Mode::Off,
        Mode::Allow,
        Mode::Deny,
        Mode::DenyFallback,
        Mode::Ports,
    ] {
        let h = workspace(User::Invoker, mode, &listeners);
        std::fs::write(h.ws_path("rows.sh"), script).unwrap();
        h.write_spell("net", SPELL);
        let wrapper = ["unshare", "--net", "--", "sh", "-c", outside];
        let out = run(&h, &wrapper);
        let (inside, after) = out
            .stdout
            .split_once("==after==")
            .unwrap_or_else(|| panic!("{}", out.dump()));
        let changed = after.contains("192.0.2.77") || after.contains("198.51.100.0/24");
        let succeeded = inside.contains("addr=0") || inside.contains("route=0");
        let want = mode == Mode::Off;
        assert_eq!(
            (changed, succeeded),
            (want, want),
            "{mode:?}\n{}",
            out.dump()
        );
    }
}

// ---------------------------------------------- allow: ordinary tools

/// A static HTTP server on 127.0.0.1 serving `dir` (git's "dumb" HTTP
/// protocol needs nothing more). Returns its port.
fn http_server(dir: PathBuf) -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let dir = dir.clone();
            thread::spawn(move || serve_one(stream, &dir));
        }
    });
    port
}

fn serve_one(mut stream: TcpStream, dir: &Path) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let path = head.split_whitespace().nth(1).unwrap_or("/");
    let path = path
        .split('?')
        .next()
        .unwrap_or("/")
        .trim_start_matches('/');
    let file = dir.join(path);
    let reply = match (path.contains(".."), std::fs::read(&file)) {
        (false, Ok(body)) => {
            let mut r = format!(
                "HTTP/1.0 200 OK\r\nContent-Length: {}\r\nContent-Type: text/plain\r\n\r\n",
                body.len()
            )
            .into_bytes();
            r.extend(body);
            r
        }
        _ => b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec(),
    };
    let _ = stream.write_all(&reply);
}

/// A DNS stub on 127.0.0.1: answers every query with `203.0.113.7`.
fn dns_stub() -> u16 {
    let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = socket.local_addr().unwrap().port();
    thread::spawn(move || {
        let mut buf = [0u8; 512];
        while let Ok((n, from)) = socket.recv_from(&mut buf) {
            if n < 12 {
                continue;
            }
            let mut reply = buf[..n].to_vec();
            reply[2] = 0x81; // response, recursion desired
            reply[3] = 0x80; // recursion available, no error
            reply[6..8].copy_from_slice(&[0, 1]); // one answer
            reply.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 203, 0, 113, 7]);
            let _ = socket.send_to(&reply, from);
        }
    });
    port
}

/// `git init`, one commit, a bare clone ready for dumb HTTP, and a file.
fn served_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    support::dumb_http_repository(dir.path(), "served-by-the-test\n");
    std::fs::write(dir.path().join("hello.txt"), "hello-over-http\n").unwrap();
    dir
}

const DNS_QUERY: &str = "import socket, struct, sys\nq = struct.pack('>HHHHHH', 0x4d47, 0x0100, 1, 0, 0, 0) + b'\\x07example\\x04test\\x00' + struct.pack('>HH', 1, 1)\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.settimeout(3)\ns.sendto(q, ('127.0.0.1', int(sys.argv[1])))\nr = s.recv(512)\nprint('dns-answer', '.'.join(str(b) for b in r[-4:]))\n";

/// `network: allow` keeps ordinary tools working over loopback: curl, a
/// git clone over HTTP, and a UDP DNS query to a resolver stub. Under a
/// port list naming the HTTP port, curl and git still work and the DNS
/// query fails: UDP is refused under port lists (the documented choice).
#[test]
fn allow_keeps_git_curl_and_dns_working_and_port_lists_refuse_udp_dns() {
    let served = served_dir();
    let http = http_server(served.path().to_path_buf());
    let dns = dns_stub();
    let script = format!(
        "curl -sS http://127.0.0.1:{http}/hello.txt\ngit clone -q http://127.0.0.1:{http}/repo.git clone && cat clone/README\npython3 dns.py {dns} || echo dns-failed\n"
    );
    for user in users() {
        for (network, dns_works) in [
            ("allow".to_string(), true),
            (format!("{{connect_tcp: [{http}]}}"), false),
        ] {
            let mut h = Harness::with_config(&format!(
                "sandbox:\n  enabled: true\n  network: {network}\n"
            ));
            h.set_env("GIT_CONFIG_NOSYSTEM", "1");
            std::fs::write(h.ws_path("rows.sh"), &script).unwrap();
            std::fs::write(h.ws_path("dns.py"), DNS_QUERY).unwrap();
            if user == User::Nobody {
                for dir in [&h.root, &h.ws, &h.home] {
                    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
                }
            }
            h.write_spell("net", SPELL);
            let out = run(&h, user.wrapper());
            let what = format!("{user:?} {network}\n{}", out.dump());
            assert!(out.stdout.contains("hello-over-http"), "curl: {what}");
            assert!(out.stdout.contains("served-by-the-test"), "git: {what}");
            assert_eq!(
                out.stdout.contains("dns-answer 203.0.113.7"),
                dns_works,
                "dns: {what}"
            );
            assert_eq!(out.stdout.contains("dns-failed"), !dns_works, "dns: {what}");
        }
    }
}

// ------------------------------------------- bind_tcp, check, MGS2012

/// With `bind_tcp` naming a port, a server may bind and listen on it
/// (so `listen` is no longer refused), and binding any other port fails.
#[test]
fn bind_tcp_admits_a_server_on_its_port_only() {
    let free = |_| {
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    let (listed, other) = (free(0), free(1));
    let h = Harness::with_config(&format!(
        "sandbox:\n  enabled: true\n  network: {{connect_tcp: [], bind_tcp: [{listed}]}}\n"
    ));
    let script = format!(
        "python3 -c \"import socket\nfor p in ({listed}, {other}):\n  s = socket.socket()\n  try:\n    s.bind(('127.0.0.1', p)); s.listen(); print('listening', p)\n  except OSError as e:\n    print('refused', p, e.errno)\"\n"
    );
    std::fs::write(h.ws_path("rows.sh"), script).unwrap();
    h.write_spell("net", SPELL);
    let out = run(&h, &[]);
    assert!(
        out.stdout.contains(&format!("listening {listed}")),
        "{}",
        out.dump()
    );
    assert!(
        out.stdout.contains(&format!("refused {other} 13")),
        "{}",
        out.dump()
    );
}

/// `(network, a variable set, the check's network line, MGS2012 expected)`.
type CheckCase = (
    &'static str,
    Option<(&'static str, &'static str)>,
    &'static str,
    bool,
);

/// `magus sandbox check` names the mechanism for each setting, and a
/// fallback is MGS2012 at every run, human and JSON: `deny` without user
/// namespaces, and port lists without Landlock TCP rights (here Landlock
/// forced off, as on a kernel without it).
#[test]
fn check_names_the_mechanism_and_every_run_says_the_fallback() {
    let ports = "{connect_tcp: [443]}";
    let cases: [CheckCase; 5] = [
        (
            "allow",
            None,
            "host network; no capability to change it",
            false,
        ),
        ("deny", None, "network namespace with loopback only", false),
        (
            "deny",
            Some(("MAGUS_SANDBOX_USERNS", "0")),
            "seccomp: every socket family but AF_UNIX refused",
            true,
        ),
        (
            ports,
            None,
            "Landlock TCP rights for the listed ports",
            false,
        ),
        (
            ports,
            Some(("MAGUS_SANDBOX_LANDLOCK", "0")),
            "Landlock TCP rights for the listed ports",
            true,
        ),
    ];
    for (network, var, want, warned) in cases {
        let mut h = Harness::with_config(&format!(
            "sandbox:\n  enabled: true\n  network: {network}\n"
        ));
        if let Some((name, value)) = var {
            h.set_env(name, value);
        }
        let mut cmd = h.command();
        cmd.arg("--workspace").arg(&h.ws).args(["sandbox", "check"]);
        let out = capture(&mut cmd);
        let line = out
            .stdout
            .lines()
            .find(|l| l.starts_with("  network "))
            .unwrap_or_default();
        assert!(line.contains(want), "{network}: {}", out.dump());
        assert_eq!(
            out.stderr.contains("warning[MGS2012]"),
            warned,
            "{}",
            out.dump()
        );
        h.write_spell("net", "fun main(args: [str]) > int { return 0; }\n");
        let human = h.run("net", &[]);
        assert_eq!(
            human.stderr_count("warning[MGS2012]"),
            usize::from(warned),
            "{}",
            human.dump()
        );
        let json = h.run_with("net", &[], &["--message-format", "json"]);
        let fallback = json.stderr.lines().any(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap_or_default();
            v["code"] == "MGS2012"
                && v["severity"] == "warning"
                && v["explain"] == "magus explain MGS2012"
        });
        assert_eq!(fallback, warned, "{}", json.dump());
    }
}

// ------------------------------------------ rejoining the host's netns

/// As root, a child opens `/proc/1/ns/net` (PID 1 of magus's PID
/// namespace is its reaper, which stays in the host's network namespace),
/// joins it with `setns` and connects to the host's listener. Landlock's
/// ptrace scoping refuses the open; without Landlock
/// (`MAGUS_SANDBOX_LANDLOCK=0`, or a kernel without it) seccomp refuses
/// `setns`. The control, sandbox off, joins its own namespace with the same
/// calls and gets through.
#[test]
fn root_cannot_rejoin_the_hosts_network_namespace() {
    if !is_root() {
        println!("skipped: joining another network namespace needs root");
        return;
    }
    let listeners = Listeners::start();
    let cases = [
        (Mode::Off, None, true),
        (Mode::Deny, None, false),
        (Mode::Deny, Some("0"), false),
        (Mode::DenyFallback, Some("0"), false),
    ];
    for (mode, landlock, want) in cases {
        let mut h = workspace(User::Invoker, mode, &listeners);
        if let Some(value) = landlock {
            h.set_env("MAGUS_SANDBOX_LANDLOCK", value);
        }
        let mark = marker(User::Invoker, mode, "setns", u64::from(std::process::id()));
        let mark = format!("{mark}-{}", landlock.unwrap_or("on"));
        // The control joins its own namespace: outside magus, PID 1 is the
        // machine's init, which root may not enter from a container.
        let target = match mode {
            Mode::Off => "/proc/self/ns/net",
            _ => "/proc/1/ns/net",
        };
        let script = format!(
            "printf 'setns '; ./probe setns-tcp 127.0.0.1 {} {mark} {target}\n",
            listeners.tcp4
        );
        std::fs::write(h.ws_path("rows.sh"), script).unwrap();
        h.write_spell("net", SPELL);
        let out = run(&h, &[]);
        thread::sleep(Duration::from_millis(200));
        let reached = listeners.seen.contains(&mark);
        let said_ok = out.stdout.contains("setns ok ");
        let what = format!("{mode:?} landlock={landlock:?}\n{}", out.dump());
        assert_eq!((reached, said_ok), (want, want), "{what}");
    }
}
