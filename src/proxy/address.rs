//! The DNS-rebinding rule: which resolved addresses a listed name may be
//! connected to. A name on the list is trusted for its *name*; what it
//! resolves to is checked again here, so that a listed public name whose
//! DNS answer is changed to `127.0.0.1` or `10.0.0.5` cannot turn the
//! proxy (which runs outside the sandbox) against the machine or its LAN.
//!
//! The rule: an address that is not globally routable (loopback, private,
//! link-local and site-local, shared CGNAT, unspecified, multicast,
//! documentation, IANA's protocol assignments in 2001::/23 such as Teredo,
//! one that embeds an IPv4 address: NAT64, 6to4...) is refused, except
//! - `localhost` and `*.localhost` may reach loopback addresses (RFC 6761
//!   reserves them for loopback: the proxy answers them itself, no DNS
//!   answer is involved);
//! - an address that is itself listed as an IP literal (`hosts: [10.0.0.5]`)
//!   may be reached under any listed name, on a port that literal allows.
//!
//! The machine's own addresses (every interface's, noted when the proxy
//! starts) count as loopback, public ones included: a DNS answer pointing
//! a listed name at the machine itself would reach its own services.
//! A refusal names the rule it applied ([`Barred`]: the block, as IANA's
//! special-purpose registries name it, or "this machine's own"), so
//! MGS2011 can say where the name led.

use crate::policy::HostList;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

/// The machine's own addresses, noted once by [`note_own_addresses`] when
/// the proxy process starts. Global: a fact of the machine, read by every
/// connection thread's check of where a name led.
static OWN: OnceLock<Vec<IpAddr>> = OnceLock::new();

/// Notes the addresses of the machine's interfaces. Call in the proxy
/// before it confines itself (the list comes from a netlink socket), when
/// the first client has connected. An address added later is not seen;
/// the run is short.
pub(super) fn note_own_addresses() {
    let own = nix::ifaddrs::getifaddrs()
        .map(|all| {
            all.filter_map(|i| i.address)
                .filter_map(|a| match (a.as_sockaddr_in(), a.as_sockaddr_in6()) {
                    (Some(v4), _) => Some(IpAddr::V4(v4.ip())),
                    (_, Some(v6)) => Some(IpAddr::V6(v6.ip())),
                    _ => None,
                })
                .map(canonical)
                .collect()
        })
        .unwrap_or_default();
    let _ = OWN.set(own);
}

/// Why a listed name may not lead to an address: the rule it broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Barred {
    /// The address is in a block that is not globally routable.
    Block(&'static Block),
    /// The address is one of this machine's own.
    Own,
}

impl std::fmt::Display for Barred {
    /// `in 198.18.0.0/15 (benchmarking, reserved)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Barred::Block(block) => write!(f, "in {}/{} ({})", block.net, block.len, block.what),
            Barred::Own => f.write_str("one of this machine's own addresses"),
        }
    }
}

/// A block of addresses that are not globally routable, and what it is.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Block {
    net: IpAddr,
    len: u8,
    what: &'static str,
}

const fn v4(a: u8, b: u8, c: u8, len: u8, what: &'static str) -> Block {
    Block {
        net: IpAddr::V4(Ipv4Addr::new(a, b, c, 0)),
        len,
        what,
    }
}

const fn v6(first: u16, second: u16, len: u8, what: &'static str) -> Block {
    Block {
        net: IpAddr::V6(Ipv6Addr::new(first, second, 0, 0, 0, 0, 0, 0)),
        len,
        what,
    }
}

/// IANA's special-purpose IPv4 blocks that are not globally reachable
/// (RFC 6890 and its updates); the first block that holds an address
/// names it.
const V4_BLOCKS: [Block; 14] = [
    v4(0, 0, 0, 8, "\"this network\", not a destination"),
    v4(10, 0, 0, 8, "private"),
    v4(100, 64, 0, 10, "shared address space, carrier-grade NAT"),
    v4(127, 0, 0, 8, "loopback"),
    v4(169, 254, 0, 16, "link-local"),
    v4(172, 16, 0, 12, "private"),
    v4(192, 0, 0, 24, "IETF protocol assignments"),
    v4(192, 0, 2, 24, "documentation, TEST-NET-1"),
    v4(192, 168, 0, 16, "private"),
    v4(198, 18, 0, 15, "benchmarking, reserved"),
    v4(198, 51, 100, 24, "documentation, TEST-NET-2"),
    v4(203, 0, 113, 24, "documentation, TEST-NET-3"),
    v4(224, 0, 0, 4, "multicast"),
    v4(240, 0, 0, 4, "reserved, and broadcast"),
];

/// The IPv6 counterpart; `::1` and `::` come before the block that holds
/// them, so that they are named for what they are. `::ffff:a.b.c.d` is
/// never looked up here: it is judged as `a.b.c.d` (`canonical`).
const V6_BLOCKS: [Block; 16] = [
    Block {
        net: IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        len: 128,
        what: "unspecified",
    },
    Block {
        net: IpAddr::V6(Ipv6Addr::LOCALHOST),
        len: 128,
        what: "loopback",
    },
    v6(0, 0, 96, "IPv4-compatible, deprecated"),
    // NAT64 (64:ff9b::/96 and its neighbours) embeds an IPv4 address
    // that may be private.
    v6(0x0064, 0, 16, "NAT64, embeds an IPv4 address"),
    v6(0x0100, 0, 64, "discard-only"),
    v6(0x2001, 0, 32, "Teredo, embeds an IPv4 address"),
    v6(0x2001, 0x0db8, 32, "documentation"),
    // The few globally reachable assignments in it are let through
    // before this table is consulted (`global_assignment`).
    v6(0x2001, 0, 23, "IETF protocol assignments"),
    v6(0x2002, 0, 16, "6to4, embeds an IPv4 address"),
    v6(0x3fff, 0, 20, "documentation"),
    v6(0x3ff0, 0, 12, "unassigned, beside the documentation block"),
    v6(0x5f00, 0, 16, "segment-routing identifiers"),
    v6(0xfc00, 0, 7, "unique local, private"),
    v6(0xfe80, 0, 10, "link-local"),
    v6(0xfec0, 0, 10, "site-local, deprecated"),
    v6(0xff00, 0, 8, "multicast"),
];

impl Block {
    fn holds(&self, addr: IpAddr) -> bool {
        match (self.net, addr) {
            (IpAddr::V4(net), IpAddr::V4(a)) => same_prefix(
                u128::from(u32::from(net)) << 96,
                u128::from(u32::from(a)) << 96,
                self.len,
            ),
            (IpAddr::V6(net), IpAddr::V6(a)) => {
                same_prefix(u128::from(net), u128::from(a), self.len)
            }
            _ => false,
        }
    }
}

/// Whether the first `len` bits of `a` and `b` (left-aligned) agree.
fn same_prefix(a: u128, b: u128, len: u8) -> bool {
    match len {
        0 => true,
        len if len >= 128 => a == b,
        len => (a ^ b) >> (128 - u32::from(len)) == 0,
    }
}

/// Why the proxy may not connect to `addr:port` for the listed name
/// `host` (normalised); `None` if it may.
pub(super) fn barred(hosts: &HostList, host: &str, addr: IpAddr, port: u16) -> Option<Barred> {
    let own = OWN.get().map_or(&[][..], Vec::as_slice);
    barred_beside(hosts, host, addr, port, own)
}

/// [`barred`] on a machine whose own addresses are `own`.
fn barred_beside(
    hosts: &HostList,
    host: &str,
    addr: IpAddr,
    port: u16,
    own: &[IpAddr],
) -> Option<Barred> {
    let addr = canonical(addr);
    let why = match block_of(addr) {
        Some(block) => Barred::Block(block),
        None if own.contains(&addr) => Barred::Own,
        None => return None,
    };
    if addr.is_loopback() && is_localhost(host) {
        return None;
    }
    if hosts.permits(&addr.to_string(), port) {
        return None;
    }
    Some(why)
}

/// `::ffff:a.b.c.d` is `a.b.c.d` for every purpose here.
fn canonical(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

pub(super) fn is_localhost(host: &str) -> bool {
    host == "localhost" || host.ends_with(".localhost")
}

/// The block that makes `addr` not globally routable; `None` for a
/// public address.
fn block_of(addr: IpAddr) -> Option<&'static Block> {
    match addr {
        IpAddr::V4(_) => V4_BLOCKS.iter().find(|b| b.holds(addr)),
        IpAddr::V6(v6) if global_assignment(v6) => None,
        IpAddr::V6(_) => V6_BLOCKS.iter().find(|b| b.holds(addr)),
    }
}

/// The few assignments in 2001::/23 that IANA lists as globally
/// reachable: anycast services (2001:1::1, 2001:1::2), AMT (2001:3::/32),
/// AS112 (2001:4:112::/48).
fn global_assignment(ip: Ipv6Addr) -> bool {
    matches!(
        ip.segments(),
        [0x2001, 1, 0, 0, 0, 0, 0, 1 | 2] | [0x2001, 3, ..] | [0x2001, 4, 0x0112, ..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::HostRule;

    fn may_connect(hosts: &HostList, host: &str, addr: IpAddr, port: u16) -> bool {
        barred(hosts, host, addr, port).is_none()
    }

    fn list(entries: &[&str]) -> HostList {
        HostList::of(
            entries
                .iter()
                .map(|e| HostRule::parse(e).unwrap())
                .collect(),
        )
    }

    #[test]
    fn non_public_addresses_are_refused_for_ordinary_names() {
        let hosts = list(&["crates.io"]);
        for addr in [
            "127.0.0.1",
            "127.1.2.3",
            "10.0.0.5",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
            "fec0::1",
            "2001:0:4136:e378:8000:63bf:f5ff:fffe",
            "2001:db8::1",
            "3fff::1",
            "100::1",
            "2001:2::1",
            "2001:10::1",
            "2001:20::1",
            "2001:1::3",
            "5f00::1",
        ] {
            let addr: IpAddr = addr.parse().unwrap();
            assert!(!may_connect(&hosts, "crates.io", addr, 443), "{addr}");
        }
        // Public neighbours of the refused ranges stay reachable.
        for addr in [
            "151.101.1.1",
            "2a04:4e42::1",
            "::ffff:151.101.1.1",
            "2001:4860::8888",
            "2001:1::1",
            "2001:1::2",
            "2001:3::1",
            "2001:4:112::1",
            "2620:fe::fe",
        ] {
            let addr: IpAddr = addr.parse().unwrap();
            assert!(may_connect(&hosts, "crates.io", addr, 443), "{addr}");
        }
    }

    #[test]
    fn localhost_reaches_loopback_and_listed_literals_are_exceptions() {
        let hosts = list(&["localhost", "registry.corp", "10.0.0.5:8080"]);
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(may_connect(&hosts, "localhost", loopback, 80));
        assert!(may_connect(&hosts, "a.localhost", loopback, 80));
        let private: IpAddr = "10.0.0.5".parse().unwrap();
        assert!(!may_connect(&hosts, "localhost", private, 80));
        assert!(may_connect(&hosts, "registry.corp", private, 8080));
        assert!(!may_connect(&hosts, "registry.corp", private, 80));
        assert!(!may_connect(&hosts, "registry.corp", loopback, 8080));
    }

    #[test]
    fn the_machines_own_public_address_is_refused_unless_listed() {
        let own: Vec<IpAddr> = ["203.0.114.1", "2a01:4f8::1"]
            .iter()
            .map(|a| a.parse().unwrap())
            .collect();
        let hosts = list(&["thisbox.example", "2a01:4f8::1"]);
        let why = |addr: &str| {
            let addr: IpAddr = addr.parse().unwrap();
            barred_beside(&hosts, "thisbox.example", addr, 80, &own)
        };
        assert_eq!(why("203.0.114.1"), Some(Barred::Own));
        assert_eq!(why("::ffff:203.0.114.1"), Some(Barred::Own));
        assert_eq!(why("151.101.1.1"), None);
        // Listed as a literal: reachable, as a listed private address is.
        assert_eq!(why("2a01:4f8::1"), None);
        assert_eq!(
            Barred::Own.to_string(),
            "one of this machine's own addresses"
        );
    }

    /// Each refusal names the block the address is in, as IANA's
    /// registry names it; the most specific block wins.
    #[test]
    fn a_barred_address_names_its_block() {
        let hosts = list(&["registry.example"]);
        for (addr, said) in [
            ("198.18.0.5", "in 198.18.0.0/15 (benchmarking, reserved)"),
            (
                "203.0.113.80",
                "in 203.0.113.0/24 (documentation, TEST-NET-3)",
            ),
            ("127.0.0.1", "in 127.0.0.0/8 (loopback)"),
            ("10.1.2.3", "in 10.0.0.0/8 (private)"),
            ("169.254.169.254", "in 169.254.0.0/16 (link-local)"),
            (
                "255.255.255.255",
                "in 240.0.0.0/4 (reserved, and broadcast)",
            ),
            ("::ffff:192.168.1.1", "in 192.168.0.0/16 (private)"),
            ("::1", "in ::1/128 (loopback)"),
            ("::", "in ::/128 (unspecified)"),
            ("::127.0.0.1", "in ::/96 (IPv4-compatible, deprecated)"),
            (
                "64:ff9b::a00:1",
                "in 64::/16 (NAT64, embeds an IPv4 address)",
            ),
            ("2001::1", "in 2001::/32 (Teredo, embeds an IPv4 address)"),
            ("2001:db8::1", "in 2001:db8::/32 (documentation)"),
            ("2001:10::1", "in 2001::/23 (IETF protocol assignments)"),
            ("3fff::1", "in 3fff::/20 (documentation)"),
            ("fd00::1", "in fc00::/7 (unique local, private)"),
            ("fe80::1", "in fe80::/10 (link-local)"),
            ("ff02::1", "in ff00::/8 (multicast)"),
        ] {
            let addr: IpAddr = addr.parse().unwrap();
            let why = barred_beside(&hosts, "registry.example", addr, 443, &[]);
            assert_eq!(why.map(|w| w.to_string()).as_deref(), Some(said), "{addr}");
        }
    }
}
