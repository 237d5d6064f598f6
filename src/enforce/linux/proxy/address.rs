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
//!   reserves them for loopback: no DNS answer is involved);
//! - an address that is itself listed as an IP literal (`hosts: [10.0.0.5]`)
//!   may be reached under any listed name, on a port that literal allows.
//!
//! The machine's own addresses (every interface's, noted when the proxy
//! starts) count as loopback, public ones included: a DNS answer pointing
//! a listed name at the machine itself would reach its own services.

use crate::policy::HostList;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

/// The machine's own addresses, noted once by [`note_own_addresses`].
static OWN: OnceLock<Vec<IpAddr>> = OnceLock::new();

/// Notes the addresses of the machine's interfaces. Call in the proxy
/// before it confines itself (the list comes from a netlink socket), when
/// the first client has connected. An address added later is not seen;
/// the run is short.
pub fn note_own_addresses() {
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

/// Whether the proxy may connect to `addr:port` for the listed name `host`
/// (normalised).
pub fn may_connect(hosts: &HostList, host: &str, addr: IpAddr, port: u16) -> bool {
    let own = OWN.get().map_or(&[][..], Vec::as_slice);
    may_connect_beside(hosts, host, addr, port, own)
}

/// [`may_connect`] on a machine whose own addresses are `own`.
fn may_connect_beside(
    hosts: &HostList,
    host: &str,
    addr: IpAddr,
    port: u16,
    own: &[IpAddr],
) -> bool {
    let addr = canonical(addr);
    if is_public(addr) && !own.contains(&addr) {
        return true;
    }
    if addr.is_loopback() && is_localhost(host) {
        return true;
    }
    hosts.permits(&addr.to_string(), port)
}

/// `::ffff:a.b.c.d` is `a.b.c.d` for every purpose here.
fn canonical(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

fn is_localhost(host: &str) -> bool {
    host == "localhost" || host.ends_with(".localhost")
}

fn is_public(addr: IpAddr) -> bool {
    match addr {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let shared_cgnat = a == 100 && (64..128).contains(&b);
    let protocol_assignments = a == 192 && b == 0 && c == 0;
    let benchmarking = a == 198 && (b == 18 || b == 19);
    let reserved = a >= 240;
    !(ip.is_unspecified()
        || a == 0
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || shared_cgnat
        || protocol_assignments
        || benchmarking
        || reserved)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let [first, second, third, fourth, ..] = ip.segments();
    let unique_local = first & 0xfe00 == 0xfc00;
    let link_local = first & 0xffc0 == 0xfe80;
    // fec0::/10, deprecated but still routed inside some sites.
    let site_local = first & 0xffc0 == 0xfec0;
    let documentation = (first == 0x2001 && second == 0x0db8) || first & 0xfff0 == 0x3ff0;
    // NAT64 and 6to4 embed an IPv4 address that may be private.
    let embeds_v4 = first == 0x0064 || first == 0x2002;
    // `::a.b.c.d` (deprecated IPv4-compatible addresses).
    let compatible_v4 = ip.segments()[..6].iter().all(|s| *s == 0);
    // 100::/64 (discard), 5f00::/16 (segment-routing identifiers).
    let discard = first == 0x0100 && second == 0 && third == 0 && fourth == 0;
    let segment_routing = first == 0x5f00;
    // 2001::/23, IANA's protocol assignments (Teredo, which embeds an IPv4
    // address, benchmarking, ORCHID identifiers...), but for the few it
    // lists as globally reachable (anycast services, AMT, AS112).
    let global_assignment = matches!(
        ip.segments(),
        [_, 1, 0, 0, 0, 0, 0, 1 | 2] | [_, 3, ..] | [_, 4, 0x0112, ..]
    );
    let protocol_assignment = first == 0x2001 && second < 0x0200 && !global_assignment;
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || unique_local
        || link_local
        || site_local
        || documentation
        || embeds_v4
        || compatible_v4
        || discard
        || segment_routing
        || protocol_assignment)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::HostRule;

    fn list(entries: &[&str]) -> HostList {
        HostList {
            rules: entries
                .iter()
                .map(|e| HostRule::parse(e).unwrap())
                .collect(),
        }
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
        let v4: IpAddr = "203.0.114.1".parse().unwrap();
        let mapped: IpAddr = "::ffff:203.0.114.1".parse().unwrap();
        let v6: IpAddr = "2a01:4f8::1".parse().unwrap();
        let other: IpAddr = "151.101.1.1".parse().unwrap();
        assert!(!may_connect_beside(&hosts, "thisbox.example", v4, 80, &own));
        assert!(!may_connect_beside(
            &hosts,
            "thisbox.example",
            mapped,
            80,
            &own
        ));
        assert!(may_connect_beside(
            &hosts,
            "thisbox.example",
            other,
            80,
            &own
        ));
        // Listed as a literal: reachable, as a listed private address is.
        assert!(may_connect_beside(&hosts, "thisbox.example", v6, 80, &own));
    }
}
