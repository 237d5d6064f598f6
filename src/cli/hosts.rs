//! `magus run`'s part of network by host name: start the proxy before any
//! restriction, point children at it, close their other routes, say the
//! mode is partial, and end the run with its egress summary. Kept out of
//! `run.rs` so the start-up sequence there stays a list of steps.

use crate::bindings::{egress, Session};
use crate::diag::{Diagnostic, MessageFormat, Verbosity};
use crate::enforce::proxy::{Proxy, PARTIAL_REASON, PROXY_VARS};
use crate::policy::{ChildEnv, Network, Policy, SandboxState, FINGERPRINT_VAR};
use std::ffi::OsString;
use std::io::Write;

/// Whether this run filters hosts at all.
fn hosts_in_force(policy: &Policy) -> bool {
    policy.state() == SandboxState::On && matches!(policy.network(), Network::Hosts(_))
}

/// Starts the proxy when `network.hosts` is in force and gives children
/// the proxy variables. Must run while magus is single-threaded, before
/// the PID namespace, seccomp and Landlock.
///
/// A nested magus (inside a sandboxed spell) starts no proxy of its own:
/// the enclosing run's Landlock domain lets it connect only to the outer
/// proxy, so it hands its children the outer proxy's variables.
pub(super) fn start(
    policy: &Policy,
    env: &[(OsString, OsString)],
    child_env: &mut ChildEnv,
) -> Result<Option<Proxy>, Box<Diagnostic>> {
    let Network::Hosts(hosts) = policy.network() else {
        return Ok(None);
    };
    if !hosts_in_force(policy) {
        return Ok(None);
    }
    if inherit_outer_proxy(policy, env, child_env) {
        return Ok(None);
    }
    let proxy = Proxy::start(hosts).map_err(|e| {
        Box::new(
            Diagnostic::error(format!("cannot start the network proxy: {e}"))
                .with_note("`network.hosts` needs magus's proxy; no spell runs without it"),
        )
    })?;
    set_vars(child_env, proxy.child_vars());
    Ok(Some(proxy))
}

/// A nested run hands its children the enclosing run's proxy variables.
/// Called before the scrubbing re-exec too, so that they survive it (they
/// are then part of the child environment the re-exec keeps). Returns
/// whether this run is nested.
pub(super) fn inherit_outer_proxy(
    policy: &Policy,
    env: &[(OsString, OsString)],
    child_env: &mut ChildEnv,
) -> bool {
    if !hosts_in_force(policy) || crate::policy::lookup(env, FINGERPRINT_VAR).is_none() {
        return false;
    }
    let inherited: Vec<(OsString, OsString)> = env
        .iter()
        .filter(|(k, _)| PROXY_VARS.iter().any(|v| k == v))
        .cloned()
        .collect();
    set_vars(child_env, inherited);
    true
}

fn set_vars(child_env: &mut ChildEnv, vars: Vec<(OsString, OsString)>) {
    child_env
        .vars
        .retain(|(k, _)| !PROXY_VARS.iter().any(|v| k == v));
    child_env
        .stripped
        .retain(|name| !PROXY_VARS.contains(&name.as_str()));
    child_env.vars.extend(vars);
}

/// The network rule Landlock enforces: with a proxy, connect to its two
/// ports only. A nested run adds no rule of its own: the enclosing run's
/// domain, which it cannot leave, already limits it to the outer proxy.
pub(super) fn landlock_network(policy: &Policy, proxy: Option<&Proxy>) -> Network {
    match (proxy, policy.network()) {
        (Some(proxy), _) => proxy.landlock_network(),
        (None, Network::Hosts(_)) => Network::Allow,
        (None, other) => (*other).clone(),
    }
}

/// The first Landlock ABI with TCP rights.
const NET_ABI: u8 = 4;

/// Said at every run with `hosts`: without #12's network namespace this
/// mode is partial; `abi` is the Landlock ABI in force (`None`: no
/// Landlock), which decides whether direct TCP is closed at all.
pub(super) fn partial_mode(policy: &Policy, abi: Option<u8>) -> Option<Diagnostic> {
    if !hosts_in_force(policy) {
        return None;
    }
    let tcp = match abi {
        Some(abi) if abi >= NET_ABI => "Landlock limits TCP connect to the proxy's ports".to_string(),
        Some(abi) => format!("Landlock ABI {abi} has no TCP rights (4 needed): a child that ignores the proxy variables can connect anywhere over TCP"),
        None => "Landlock is off: a child that ignores the proxy variables can connect anywhere over TCP".to_string(),
    };
    Some(
        Diagnostic::warning(
            "network by host name is partial here: children reach the network through magus's proxy, but are not in a network namespace",
        )
        .with_note(PARTIAL_REASON)
        .with_note(format!("{tcp}; seccomp refuses UDP, raw and packet sockets, MPTCP, TCP Fast Open and io_uring")),
    )
}

/// The end of a run: stop the proxy, then say the egress summary (always
/// in JSON, under `-v` in human output).
pub(crate) fn finish(
    session: &Session,
    format: MessageFormat,
    verbosity: Verbosity,
    emit: &dyn Fn(&Diagnostic),
) {
    let Some(summary) = session.finish_egress() else {
        return;
    };
    match format {
        MessageFormat::Json => {
            let line = serde_json::json!({
                "severity": "note",
                "kind": "egress",
                "message": "network egress through the proxy",
                "egress": summary.to_json(),
            });
            let _ = writeln!(std::io::stderr().lock(), "{line}");
        }
        MessageFormat::Human if verbosity == Verbosity::Verbose => {
            emit(&egress::summary_diagnostic(&summary));
        }
        MessageFormat::Human => {}
    }
}
