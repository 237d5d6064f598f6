//! The `network:` setting made real (docs/network.md): which mechanism enforces
//! it on this machine ([`NetworkPlan`]), the loopback-only network
//! namespace of `network: deny`, and the seccomp rules that close what
//! Landlock's TCP rights and the namespace do not see (MPTCP, TCP Fast
//! Open, UDP, raw, packet and vsock sockets, `listen`, io_uring). It
//! decides nothing about the policy and prints nothing; `src/cli` says what
//! is in force.

use std::collections::BTreeMap;
use std::fmt;
use std::os::fd::AsRawFd;

use nix::errno::Errno;
use nix::sched::{unshare, CloneFlags};
use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, geteuid, ForkResult};
use seccompiler::{SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompRule};

use super::error::EnforceError;
use super::jail::UsernsRequest;
use super::process::is_single_threaded;
use crate::policy::Network;

/// Why `network: deny` could not get its own network namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetnsUnavailable {
    /// `MAGUS_SANDBOX_USERNS=0`.
    ForcedOff,
    /// Another thread already runs; `unshare` needs a lone thread.
    ThreadsRunning,
    /// `unshare(CLONE_NEWNET)` was refused (no user namespace, no privilege).
    Unshare(Errno),
    /// The namespace was made but its loopback could not be brought up.
    Loopback(Errno),
    /// The probe's child could not be started or died.
    Probe,
}

impl fmt::Display for NetnsUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ForcedOff => write!(
                f,
                "user namespaces disabled by {}=0",
                super::jail::USERNS_VAR
            ),
            Self::ThreadsRunning => f.write_str("another thread was already running"),
            Self::Unshare(e) => write!(f, "a network namespace was refused: {}", e.desc()),
            Self::Loopback(e) => write!(f, "cannot bring up loopback: {}", e.desc()),
            Self::Probe => f.write_str("the probe could not run"),
        }
    }
}

/// The mechanism that enforces the `network:` setting on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkPlan {
    /// `allow`: the host network; magus and children hold no capability to
    /// change it (`CAP_NET_ADMIN`, `CAP_NET_RAW` are dropped).
    Host,
    /// `deny`: a network namespace holding only loopback.
    LoopbackNamespace,
    /// `deny` without namespaces: seccomp refuses every socket family but
    /// `AF_UNIX`, and io_uring.
    UnixSocketsOnly { why: NetnsUnavailable },
    /// Port lists: Landlock's TCP rights, plus seccomp closing the rest.
    TcpPorts { listen: Listen },
    /// `hosts`: children in a loopback-only network namespace, where
    /// magus's proxy listens; it dials out from the host's namespace.
    ProxyNamespace,
    /// `hosts` without namespaces (partial): Landlock keeps children's TCP
    /// connect to the proxy's ports, seccomp closes everything else, as
    /// for port lists without `bind_tcp`.
    ProxyPorts { why: NetnsUnavailable },
}

/// Whether `listen(2)` stays allowed under port lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listen {
    /// `bind_tcp` names ports: servers may listen on them.
    Allowed,
    /// No `bind_tcp` port: `listen` is refused (it would auto-bind an
    /// ephemeral port, which Landlock does not check).
    Refused,
}

/// The seccomp rules a plan needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkSeccomp {
    /// No network rule.
    None,
    /// Inside the loopback-only namespace: socket families a network
    /// namespace does not isolate (`AF_VSOCK` reaches the hypervisor's host
    /// from any namespace, Bluetooth, ...) refused, `setns` (back into the
    /// host's namespace), and io_uring, whose `IORING_OP_SOCKET` would
    /// make them past the filter.
    NamespacedOnly,
    /// Every socket family but `AF_UNIX` refused, and io_uring.
    UnixOnly,
    /// TCP over IPv4/IPv6 (plus unix and netlink) only; MPTCP, Fast Open,
    /// UDP, ICMP, raw and packet sockets and io_uring refused.
    TcpOnly { listen: Listen },
}

impl NetworkPlan {
    /// The plan for a setting when the namespace step went as `netns` says
    /// (only read for `deny`).
    pub fn for_setting(network: &Network, netns: Result<(), NetnsUnavailable>) -> Self {
        match network {
            Network::Allow => NetworkPlan::Host,
            Network::Deny => match netns {
                Ok(()) => NetworkPlan::LoopbackNamespace,
                Err(why) => NetworkPlan::UnixSocketsOnly { why },
            },
            Network::Ports { bind_tcp, .. } => NetworkPlan::TcpPorts {
                listen: match bind_tcp.is_empty() {
                    true => Listen::Refused,
                    false => Listen::Allowed,
                },
            },
            Network::Hosts(_) => match netns {
                Ok(()) => NetworkPlan::ProxyNamespace,
                Err(why) => NetworkPlan::ProxyPorts { why },
            },
        }
    }

    /// What seccomp must add for this plan.
    pub fn seccomp(self) -> NetworkSeccomp {
        match self {
            NetworkPlan::Host => NetworkSeccomp::None,
            NetworkPlan::LoopbackNamespace | NetworkPlan::ProxyNamespace => {
                NetworkSeccomp::NamespacedOnly
            }
            NetworkPlan::UnixSocketsOnly { .. } => NetworkSeccomp::UnixOnly,
            NetworkPlan::TcpPorts { listen } => NetworkSeccomp::TcpOnly { listen },
            // Children reach only the proxy, by TCP (Landlock keeps them to
            // its ports); everything else is closed as for port lists.
            NetworkPlan::ProxyPorts { .. } => NetworkSeccomp::TcpOnly {
                listen: Listen::Refused,
            },
        }
    }

    /// One line for `magus sandbox check` and the docs.
    pub fn describe(self) -> String {
        match self {
            NetworkPlan::Host => "host network; no capability to change it \
                (CAP_NET_ADMIN, CAP_NET_RAW dropped)"
                .into(),
            NetworkPlan::LoopbackNamespace => "network namespace with loopback only \
                (children reach no other host); seccomp refuses the socket families no \
                namespace isolates (vsock, Bluetooth, ...), setns and io_uring"
                .into(),
            NetworkPlan::UnixSocketsOnly { why } => format!(
                "seccomp: every socket family but AF_UNIX refused, io_uring refused \
                 (no network namespace: {why})"
            ),
            NetworkPlan::TcpPorts { listen } => format!(
                "Landlock TCP rights for the listed ports; seccomp refuses UDP (DNS \
                 included), ICMP, raw, packet and MPTCP sockets, TCP Fast Open, io_uring{}",
                match listen {
                    Listen::Refused => " and listen",
                    Listen::Allowed => "",
                }
            ),
            NetworkPlan::ProxyNamespace => crate::proxy::MECHANISM.into(),
            NetworkPlan::ProxyPorts { why } => format!(
                "{} (no network namespace: {why})",
                crate::proxy::MECHANISM_PARTIAL
            ),
        }
    }
}

/// The `network:` step of start-up: for `deny` and `hosts`, moves magus
/// into a new network namespace holding only an up loopback, or says why
/// it cannot.
///
/// Call once, on the lone main thread, after the user namespace exists
/// (when not root) and before capabilities are dropped (bringing `lo` up
/// needs `CAP_NET_ADMIN` in the namespace) and before seccomp and Landlock.
/// Children inherit the namespace; it is never made per child.
///
/// Where magus was born in the namespace made ahead for the jail
/// ([`super::jail::ahead`]), there is nothing to make.
pub fn enter(network: &Network, request: UsernsRequest) -> NetworkPlan {
    if needs_namespace(network) && super::jail::ahead::joined_network() {
        return NetworkPlan::for_setting(network, Ok(()));
    }
    plan_with(network, request, enter_loopback_namespace)
}

/// Whether `network` puts children in a loopback-only namespace.
pub(crate) fn needs_namespace(network: &Network) -> bool {
    matches!(network, Network::Deny | Network::Hosts(_))
}

/// The plan for `network`, where `make` makes (or tries) the namespace of
/// `deny` once the preconditions hold.
fn plan_with(
    network: &Network,
    request: UsernsRequest,
    make: fn() -> Result<(), NetnsUnavailable>,
) -> NetworkPlan {
    let netns = match needs_namespace(network) {
        true => may_make_namespace(request).and_then(|()| make()),
        false => Ok(()),
    };
    NetworkPlan::for_setting(network, netns)
}

/// A namespace may be made only when allowed, and on a lone thread.
fn may_make_namespace(request: UsernsRequest) -> Result<(), NetnsUnavailable> {
    if request == UsernsRequest::ForcedOff {
        return Err(NetnsUnavailable::ForcedOff);
    }
    if !is_single_threaded() {
        return Err(NetnsUnavailable::ThreadsRunning);
    }
    Ok(())
}

pub(super) fn enter_loopback_namespace() -> Result<(), NetnsUnavailable> {
    unshare(CloneFlags::CLONE_NEWNET).map_err(NetnsUnavailable::Unshare)?;
    // From here a failure leaves magus in an empty namespace, which is
    // still no network: the seccomp fallback is added on top.
    bring_loopback_up().map_err(NetnsUnavailable::Loopback)
}

nix::ioctl_read_bad!(get_interface_flags, libc::SIOCGIFFLAGS, libc::ifreq);
nix::ioctl_write_ptr_bad!(set_interface_flags, libc::SIOCSIFFLAGS, libc::ifreq);

/// A `struct ifreq` naming `lo`, the rest zero. Allocates nothing and
/// touches no `errno` (the helper of `jail::ahead` uses it too).
pub(super) fn loopback_request() -> libc::ifreq {
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
        *slot = *byte as libc::c_char;
    }
    request
}

/// `ip link set lo up`, with the two ioctls the kernel offers for it.
fn bring_loopback_up() -> Result<(), Errno> {
    let fd = socket(
        AddressFamily::Inet,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    let mut request = loopback_request();
    // SAFETY: `request` is a valid ifreq naming an interface; the kernel
    // fills in `ifru_flags`.
    unsafe { get_interface_flags(fd.as_raw_fd(), &mut request) }?;
    // SAFETY: reading the union member the kernel just wrote.
    let flags = unsafe { request.ifr_ifru.ifru_flags };
    request.ifr_ifru.ifru_flags = flags | libc::IFF_UP as libc::c_short;
    // SAFETY: as above; the kernel only reads `request`.
    unsafe { set_interface_flags(fd.as_raw_fd(), &request) }?;
    Ok(())
}

/// What [`enter`] would choose here, asked in a throw-away child so this
/// process changes nothing (for `magus sandbox check`).
pub(crate) fn probe(network: &Network, request: UsernsRequest) -> NetworkPlan {
    plan_with(network, request, probe_loopback_namespace)
}

fn probe_loopback_namespace() -> Result<(), NetnsUnavailable> {
    // SAFETY: single-threaded (checked above); the child only makes
    // syscalls and `_exit`s.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            let code = match probe_in_child() {
                Ok(()) => 0,
                Err(errno) => errno as i32,
            };
            // SAFETY: _exit is always safe.
            unsafe { libc::_exit(code & 0xff) }
        }
        Ok(ForkResult::Parent { child }) => match waitpid(child, None) {
            Ok(WaitStatus::Exited(_, 0)) => Ok(()),
            Ok(WaitStatus::Exited(_, code)) => {
                Err(NetnsUnavailable::Unshare(Errno::from_raw(code)))
            }
            _ => Err(NetnsUnavailable::Probe),
        },
        Err(_) => Err(NetnsUnavailable::Probe),
    }
}

/// As `magus run` would: root unshares the network namespace directly,
/// anyone else inside a new user namespace (which the PID step makes).
fn probe_in_child() -> Result<(), Errno> {
    let flags = match geteuid().is_root() {
        true => CloneFlags::CLONE_NEWNET,
        false => CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET,
    };
    unshare(flags)
}

// ------------------------------------------------------------- seccomp

/// `SOCK_TYPE_MASK`: `type` carries `SOCK_NONBLOCK`/`SOCK_CLOEXEC` above it.
const SOCK_TYPE_MASK: u64 = 0xf;

/// `TCP_FASTOPEN` (server side), from `<linux/tcp.h>`.
const TCP_FASTOPEN: u64 = 23;

/// `TCP_ULP`: attaches an upper-layer protocol to a TCP socket. SMC's
/// (`"smc"`) turns it into an SMC socket whose connect the kernel makes
/// itself (`kernel_connect`), out of Landlock's sight; refused under port
/// lists (kTLS, the other user, goes with it).
const TCP_ULP: u64 = 31;

type Rules = BTreeMap<i64, Vec<SeccompRule>>;

/// The rules [`super::seccomp::SyscallGuard`] adds for `network`: each
/// matching call fails with `EPERM`. An empty rule list refuses every call
/// of that number.
pub(crate) fn seccomp_rules(network: NetworkSeccomp) -> Result<Rules, EnforceError> {
    let mut rules = Rules::new();
    match network {
        NetworkSeccomp::None => return Ok(rules),
        NetworkSeccomp::NamespacedOnly => {
            rules.insert(libc::SYS_socket, vec![family_is_not(&NAMESPACED)?]);
            // PID 1 of magus's PID namespace (its reaper) stays in the
            // host's network namespace; a root child could join it through
            // `/proc/1/ns/net` where Landlock's ptrace scoping is missing.
            rules.insert(libc::SYS_setns, Vec::new());
        }
        NetworkSeccomp::UnixOnly => {
            rules.insert(libc::SYS_socket, vec![family_is_not(&[libc::AF_UNIX])?]);
        }
        NetworkSeccomp::TcpOnly { listen } => {
            rules.insert(libc::SYS_socket, tcp_only_socket_rules()?);
            rules.extend(fast_open_rules()?);
            if listen == Listen::Refused {
                rules.insert(libc::SYS_listen, Vec::new());
            }
        }
    }
    // socketpair only makes AF_UNIX pairs today; refuse any other family
    // that a future kernel might add.
    rules.insert(libc::SYS_socketpair, vec![family_is_not(&[libc::AF_UNIX])?]);
    // io_uring's IORING_OP_SOCKET, CONNECT and SENDMSG never pass through
    // this filter (docs/network.md; Docker's default profile refuses it too).
    for nr in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.insert(nr, Vec::new());
    }
    // x32 calls need no twins: the guard refuses every one of them.
    Ok(rules)
}

/// The families kept inside the loopback-only namespace and under port
/// lists: unix, IPv4, IPv6, and netlink (reading addresses; changing them
/// needs the dropped `CAP_NET_ADMIN`). Each is per network namespace.
const NAMESPACED: [libc::c_int; 4] = [
    libc::AF_UNIX,
    libc::AF_NETLINK,
    libc::AF_INET,
    libc::AF_INET6,
];

/// The netlink protocols kept where children share the host's network
/// namespace (port lists, and `hosts` without a namespace): routes and
/// addresses, socket diagnostics, generic netlink. Each carries messages
/// between the kernel and a process only, for anyone without
/// `CAP_NET_ADMIN`; `NETLINK_USERSOCK` lets any process send to any
/// other's socket, a channel to a listener outside the sandbox that no
/// port list sees.
const HOST_NETLINK: [u64; 3] = [
    libc::NETLINK_ROUTE as u64,
    libc::NETLINK_SOCK_DIAG as u64,
    libc::NETLINK_GENERIC as u64,
];

/// Under port lists: the [`NAMESPACED`] families, of netlink only the
/// [`HOST_NETLINK`] protocols, and of IPv4/IPv6 only stream sockets of
/// protocol TCP, which Landlock's TCP rights see. Everything else is
/// refused: UDP and ICMP datagrams, raw and packet sockets, SCTP, MPTCP,
/// vsock, `NETLINK_USERSOCK`.
fn tcp_only_socket_rules() -> Result<Vec<SeccompRule>, EnforceError> {
    let mut rules = vec![family_is_not(&NAMESPACED)?];
    let mut other_netlink = vec![arg_eq(0, libc::AF_NETLINK as u64)?];
    for protocol in HOST_NETLINK {
        other_netlink.push(arg_ne(2, protocol)?);
    }
    rules.push(SeccompRule::new(other_netlink)?);
    for family in [libc::AF_INET, libc::AF_INET6] {
        for kind in (0..=SOCK_TYPE_MASK).filter(|&t| t != libc::SOCK_STREAM as u64) {
            rules.push(SeccompRule::new(vec![
                arg_eq(0, family as u64)?,
                type_is(kind)?,
            ])?);
        }
        rules.push(SeccompRule::new(vec![
            arg_eq(0, family as u64)?,
            type_is(libc::SOCK_STREAM as u64)?,
            arg_ne(2, 0)?,
            arg_ne(2, libc::IPPROTO_TCP as u64)?,
        ])?);
    }
    Ok(rules)
}

/// TCP Fast Open sends data with the SYN, past Landlock's connect check
/// (landlock-lsm/linux#41): `MSG_FASTOPEN` on every send call, and the
/// `TCP_FASTOPEN_CONNECT` and `TCP_FASTOPEN` socket options; and
/// [`TCP_ULP`].
fn fast_open_rules() -> Result<Rules, EnforceError> {
    let fast_open = |flags_arg: u8| -> Result<Vec<SeccompRule>, EnforceError> {
        let flag = libc::MSG_FASTOPEN as u64;
        let cond = SeccompCondition::new(
            flags_arg,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::MaskedEq(flag),
            flag,
        )?;
        Ok(vec![SeccompRule::new(vec![cond])?])
    };
    let option = |name: u64| -> Result<SeccompRule, EnforceError> {
        let level = arg_eq(1, libc::IPPROTO_TCP as u64)?;
        Ok(SeccompRule::new(vec![level, arg_eq(2, name)?])?)
    };
    let mut rules = Rules::new();
    rules.insert(libc::SYS_sendto, fast_open(3)?);
    rules.insert(libc::SYS_sendmsg, fast_open(2)?);
    rules.insert(libc::SYS_sendmmsg, fast_open(3)?);
    rules.insert(
        libc::SYS_setsockopt,
        vec![
            option(libc::TCP_FASTOPEN_CONNECT as u64)?,
            option(TCP_FASTOPEN)?,
            option(TCP_ULP)?,
        ],
    );
    Ok(rules)
}

/// `socket(family, ..)` with `family` none of `kept` (the kernel reads it
/// as an `int`, so only the low 32 bits count).
fn family_is_not(kept: &[libc::c_int]) -> Result<SeccompRule, EnforceError> {
    let conditions = kept
        .iter()
        .map(|&f| arg_ne(0, f as u64))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(SeccompRule::new(conditions)?)
}

fn type_is(kind: u64) -> Result<SeccompCondition, EnforceError> {
    let op = SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK);
    Ok(SeccompCondition::new(1, SeccompCmpArgLen::Dword, op, kind)?)
}

fn arg_eq(arg: u8, value: u64) -> Result<SeccompCondition, EnforceError> {
    arg_is(arg, SeccompCmpOp::Eq, value)
}

fn arg_ne(arg: u8, value: u64) -> Result<SeccompCondition, EnforceError> {
    arg_is(arg, SeccompCmpOp::Ne, value)
}

/// A condition on the low 32 bits of argument `arg` (socket families,
/// types, protocols and option names are all `int`s).
fn arg_is(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, EnforceError> {
    Ok(SeccompCondition::new(
        arg,
        SeccompCmpArgLen::Dword,
        op,
        value,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ports(bind: &[u16]) -> Network {
        Network::Ports {
            connect_tcp: vec![443],
            bind_tcp: bind.to_vec(),
        }
    }

    fn hosts() -> Network {
        let rule = crate::policy::HostRule::parse("crates.io").unwrap();
        Network::Hosts(crate::policy::HostList::of(vec![rule]))
    }

    #[test]
    fn each_setting_gets_its_mechanism() {
        let refused = Err(NetnsUnavailable::ForcedOff);
        let cases = [
            (Network::Allow, Ok(()), NetworkPlan::Host),
            (Network::Deny, Ok(()), NetworkPlan::LoopbackNamespace),
            (
                Network::Deny,
                refused,
                NetworkPlan::UnixSocketsOnly {
                    why: NetnsUnavailable::ForcedOff,
                },
            ),
            (
                ports(&[]),
                Ok(()),
                NetworkPlan::TcpPorts {
                    listen: Listen::Refused,
                },
            ),
            (
                ports(&[8080]),
                refused,
                NetworkPlan::TcpPorts {
                    listen: Listen::Allowed,
                },
            ),
            (hosts(), Ok(()), NetworkPlan::ProxyNamespace),
            (
                hosts(),
                refused,
                NetworkPlan::ProxyPorts {
                    why: NetnsUnavailable::ForcedOff,
                },
            ),
        ];
        for (network, netns, want) in cases {
            assert_eq!(
                NetworkPlan::for_setting(&network, netns),
                want,
                "{network:?}"
            );
        }
    }

    #[test]
    fn seccomp_covers_exactly_what_the_plan_needs() {
        let keys = |s| seccomp_rules(s).unwrap().into_keys().collect::<Vec<_>>();
        assert!(keys(NetworkSeccomp::None).is_empty());
        let namespaced = keys(NetworkSeccomp::NamespacedOnly);
        assert!(namespaced.contains(&libc::SYS_socket));
        assert!(namespaced.contains(&libc::SYS_io_uring_setup));
        assert!(!namespaced.contains(&libc::SYS_listen));
        assert!(namespaced.contains(&libc::SYS_setns));
        let unix = keys(NetworkSeccomp::UnixOnly);
        assert!(unix.contains(&libc::SYS_socket) && unix.contains(&libc::SYS_io_uring_setup));
        assert!(!unix.contains(&libc::SYS_listen));
        let refused = keys(NetworkSeccomp::TcpOnly {
            listen: Listen::Refused,
        });
        assert!(refused.contains(&libc::SYS_listen) && refused.contains(&libc::SYS_sendto));
        let allowed = keys(NetworkSeccomp::TcpOnly {
            listen: Listen::Allowed,
        });
        assert!(!allowed.contains(&libc::SYS_listen));
        let partial = NetworkPlan::ProxyPorts {
            why: NetnsUnavailable::ForcedOff,
        };
        assert_eq!(
            partial.seccomp(),
            NetworkSeccomp::TcpOnly {
                listen: Listen::Refused
            }
        );
        assert_eq!(
            NetworkPlan::ProxyNamespace.seccomp(),
            NetworkSeccomp::NamespacedOnly
        );
    }
}
