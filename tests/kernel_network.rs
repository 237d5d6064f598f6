//! `network:` through the real `magus` binary, tried as an attacker would
//! (DESIGN §6b, §12), as root and as uid 65534. Listeners magus does not
//! control sit on 127.0.0.1 and ::1; a child of the spell (`tests/net/
//! probe.c`, compiled here) tries one trick per row and every run is
//! judged twice: by what the probe says, and by what the listeners saw.
//! The control (sandbox off) must get every row through, so a blocked row
//! means something.

mod support;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::OwnedFd;
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
/// ::1, UDP echo on both, and (as root) a raw ICMP socket.
struct Listeners {
    tcp4: u16,
    tcp6: u16,
    tcp4_other: u16,
    udp4: u16,
    udp6: u16,
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
        if is_root() {
            icmp_listener(&seen);
        }
        Listeners {
            tcp4,
            tcp6,
            tcp4_other,
            udp4,
            udp6,
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

/// Who runs magus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum User {
    Root,
    Nobody,
}

impl User {
    fn wrapper(self) -> &'static [&'static str] {
        match self {
            User::Root => &[],
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
}

const ROWS: [(&str, &str, Target); 15] = [
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
    ("uring-tcp4-listed-port", "uring-tcp", Target::Tcp4),
    ("uring-tcp4", "uring-tcp", Target::Tcp4Other),
    ("uring-mptcp4", "uring-mptcp", Target::Tcp4Other),
    ("uring-udp4", "uring-udp", Target::Udp4),
];

/// Whether a row gets through: the documented behaviour of each setting.
fn expected(mode: Mode, user: User, row: &str) -> bool {
    let privileged_row = row == "packet-socket";
    match mode {
        Mode::Off => !privileged_row || user == User::Root,
        // No CAP_NET_RAW for anyone; ICMP goes out through a ping socket.
        Mode::Allow => !privileged_row,
        Mode::Deny | Mode::DenyFallback => false,
        Mode::Ports => row == "tcp4" || row == "tcp6",
    }
}

/// The compiled probe (once per test binary).
fn probe_binary() -> &'static Path {
    static PROBE: OnceLock<PathBuf> = OnceLock::new();
    PROBE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("magus-netprobe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("probe");
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/net/probe.c");
        let status = Command::new("cc")
            .args(["-O1", "-o"])
            .arg(&out)
            .arg(src)
            .status()
            .expect("run cc");
        assert!(status.success(), "cc failed to build the probe");
        out
    })
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

fn target_args(target: Target, l: &Listeners) -> (&'static str, u16) {
    match target {
        Target::Tcp4 => ("127.0.0.1", l.tcp4),
        Target::Tcp6 => ("::1", l.tcp6),
        Target::Tcp4Other => ("127.0.0.1", l.tcp4_other),
        Target::Udp4 => ("127.0.0.1", l.udp4),
        Target::Udp6 => ("::1", l.udp6),
        Target::Icmp | Target::Listen | Target::Packet => ("127.0.0.1", 0),
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
    ROWS.iter()
        .map(|(name, _, target)| {
            let line = out
                .lines_starting(&format!("{name} "))
                .first()
                .map(|l| l.to_string())
                .unwrap_or_else(|| panic!("no line for {name}\n{}", out.dump()));
            let reached = match target {
                Target::Packet => line.contains("ok sniffed"),
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
        vec![User::Root, User::Nobody]
    } else {
        println!("not root: only the current user is tested");
        vec![User::Root]
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
        for mode in [
            Mode::Off,
            Mode::Allow,
            Mode::Deny,
            Mode::DenyFallback,
            Mode::Ports,
        ] {
            for (row, line, reached) in run_rows(user, mode, &listeners, &packet_marker) {
                if row == "icmp-echo" && !is_root() {
                    continue; // no listener can see ICMP without root
                }
                let want = expected(mode, user, &row);
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
