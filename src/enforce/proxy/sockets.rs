//! The socket filter of host mode without a network namespace: a seccomp
//! filter, installed on magus (and so inherited by every child) on top of
//! the syscall guard, that leaves children TCP (which Landlock limits to
//! the proxy's ports) and unix sockets, and closes what Landlock does not
//! see: UDP and every other socket type, other families (raw, packet,
//! netlink excepted for interface queries), MPTCP, TCP Fast Open (a
//! connect hidden in `sendto`/`sendmsg`) and io_uring (whose socket and
//! connect operations bypass seccomp).
//!
//! Kept apart from `enforce::seccomp` on purpose: the `network: deny`
//! work (issue #12) owns that filter; once it lands, these rules can join
//! its network rules.

use super::ProxyError;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

/// `MSG_FASTOPEN`: a `sendto`/`sendmsg` that connects.
const MSG_FASTOPEN: u64 = 0x2000_0000;
/// The socket type lives in the low bits; the rest are `SOCK_*` flags.
const SOCK_TYPE_MASK: u64 = 0xf;
/// Families children keep: unix, IPv4, IPv6 (TCP only), netlink (glibc's
/// `getaddrinfo` asks the interface list through it; no route changes
/// without `CAP_NET_ADMIN`, which children do not have).
const KEPT_FAMILIES: [u64; 4] = [
    libc::AF_UNIX as u64,
    libc::AF_INET as u64,
    libc::AF_INET6 as u64,
    libc::AF_NETLINK as u64,
];

/// The compiled socket filter.
#[derive(Debug, Clone)]
pub struct SocketGuard {
    program: BpfProgram,
}

impl SocketGuard {
    /// Compiles the filter for the running architecture.
    pub fn build() -> Result<SocketGuard, ProxyError> {
        let filter = SeccompFilter::new(
            refused_calls().map_err(filter_error)?,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EACCES as u32),
            TargetArch::try_from(std::env::consts::ARCH).map_err(filter_error)?,
        )
        .map_err(filter_error)?;
        let program = BpfProgram::try_from(filter).map_err(filter_error)?;
        Ok(SocketGuard { program })
    }

    /// Installs the filter on the calling thread (inherited by children).
    pub fn install_on_self(&self) -> Result<(), ProxyError> {
        seccompiler::apply_filter(&self.program).map_err(|e| match e {
            seccompiler::Error::Prctl(source) | seccompiler::Error::Seccomp(source) => {
                ProxyError::Install(source)
            }
            other => ProxyError::Filter(other.to_string()),
        })
    }
}

fn filter_error(e: impl std::fmt::Display) -> ProxyError {
    ProxyError::Filter(e.to_string())
}

type Rules = BTreeMap<i64, Vec<SeccompRule>>;

fn refused_calls() -> Result<Rules, seccompiler::BackendError> {
    let mut rules = Rules::new();
    rules.insert(libc::SYS_socket, socket_rules()?);
    rules.insert(libc::SYS_sendto, vec![flag_set(3, MSG_FASTOPEN)?]);
    rules.insert(libc::SYS_sendmsg, vec![flag_set(2, MSG_FASTOPEN)?]);
    rules.insert(libc::SYS_sendmmsg, vec![flag_set(3, MSG_FASTOPEN)?]);
    // An empty rule list refuses every call of that number.
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    Ok(rules)
}

/// `socket(family, type, protocol)` is refused when the family is not kept,
/// or an IP socket is not a plain stream (UDP, raw, SCTP...) or asks for a
/// protocol other than TCP (MPTCP is `IPPROTO_MPTCP` on a stream socket).
fn socket_rules() -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
    let other_family = KEPT_FAMILIES
        .iter()
        .map(|&f| cond(0, SeccompCmpOp::Ne, f))
        .collect::<Result<Vec<_>, _>>()?;
    let mut rules = vec![SeccompRule::new(other_family)?];
    for family in [libc::AF_INET as u64, libc::AF_INET6 as u64] {
        for kind in (0..=SOCK_TYPE_MASK).filter(|k| *k != libc::SOCK_STREAM as u64) {
            rules.push(SeccompRule::new(vec![
                cond(0, SeccompCmpOp::Eq, family)?,
                cond(1, SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK), kind)?,
            ])?);
        }
        rules.push(SeccompRule::new(vec![
            cond(0, SeccompCmpOp::Eq, family)?,
            cond(2, SeccompCmpOp::Ne, 0)?,
            cond(2, SeccompCmpOp::Ne, libc::IPPROTO_TCP as u64)?,
        ])?);
    }
    Ok(rules)
}

fn cond(
    arg: u8,
    op: SeccompCmpOp,
    value: u64,
) -> Result<SeccompCondition, seccompiler::BackendError> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value)
}

fn flag_set(arg: u8, flag: u64) -> Result<SeccompRule, seccompiler::BackendError> {
    SeccompRule::new(vec![cond(arg, SeccompCmpOp::MaskedEq(flag), flag)?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_compiles_for_this_arch() {
        assert!(SocketGuard::build().unwrap().program.len() > 40);
    }
}
