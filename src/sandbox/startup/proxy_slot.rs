//! The start-up's part of network by host name: have the proxy forked
//! outside every restriction, hand it listeners made inside the
//! children's network namespace, point children at it, close their other
//! routes (and, with no namespace, say the mode is partial), and end the
//! run with its egress summary. Kept out of `kernel.rs` so the start-up
//! sequence there stays a list of steps.

use crate::bindings::{egress, Session};
use crate::diag::{Diagnostic, MessageFormat, Verbosity};
use crate::enforce::network::NetworkPlan;
use crate::policy::{ChildEnv, HostList, Network, Policy, SandboxState, FINGERPRINT_VAR};
use crate::proxy::vault::Vault;
use crate::proxy::{Launcher, Proxy, PARTIAL_REASON, PROXY_VARS};
use std::sync::Arc;

/// The secrets the proxy holds for this run, if any (docs/secrets.md).
type Guarded = Option<Arc<Vault>>;
use std::ffi::OsString;
use std::io::Write;

/// Whether this run filters hosts at all.
fn hosts_in_force(policy: &Policy) -> bool {
    policy.state() == SandboxState::On && matches!(policy.network(), Network::Hosts(_))
}

/// This run's proxy: decided early ([`wanted`]); in a jailed run forked
/// by the jail's original process at the spell's first launch
/// ([`ProxySlot::defer`]), otherwise forked just before the network step
/// ([`ProxySlot::start`]).
pub(crate) enum ProxySlot {
    /// No proxy of this run's own (no `hosts`, or a nested run).
    Absent,
    /// `hosts` is in force and the proxy is not forked yet.
    Wanted(HostList, Guarded),
    /// To be forked by the jail's original process (`Proxy::deferred`).
    Deferred(HostList, Guarded, Proxy),
    Running(Proxy),
}

impl ProxySlot {
    /// Forks the proxy if it is wanted and not running yet; a no-op
    /// otherwise. Must run while magus is single-threaded, before the
    /// jail, seccomp and Landlock (the proxy keeps the host's network and
    /// none of magus's restrictions).
    pub(crate) fn start(&mut self) -> Result<(), Box<Diagnostic>> {
        if let ProxySlot::Wanted(hosts, secrets) = self {
            let proxy =
                Proxy::start_guarding(hosts, secrets.take()).map_err(|e| proxy_failed(&e))?;
            *self = ProxySlot::Running(proxy);
        }
        Ok(())
    }

    /// Leaves the fork to the jail's original process, whose part
    /// (the [`Launcher`]) this returns if the proxy is wanted.
    pub(crate) fn defer(&mut self) -> Result<Option<Launcher>, Box<Diagnostic>> {
        let ProxySlot::Wanted(hosts, secrets) = self else {
            return Ok(None);
        };
        let (proxy, launcher) =
            Proxy::deferred_guarding(hosts, secrets.clone()).map_err(|e| proxy_failed(&e))?;
        *self = ProxySlot::Deferred(hosts.clone(), secrets.take(), proxy);
        Ok(Some(launcher))
    }

    /// The jail was not entered, so no original process waits to fork
    /// the proxy: wanted again, for [`ProxySlot::start`].
    pub(crate) fn undefer(&mut self) {
        if let ProxySlot::Deferred(hosts, secrets, _) = self {
            *self = ProxySlot::Wanted(std::mem::take(hosts), secrets.take());
        }
    }

    /// Whether this run has (or will have) a proxy of its own.
    pub(crate) fn is_own(&self) -> bool {
        !matches!(self, ProxySlot::Absent)
    }

    pub(crate) fn running(&mut self) -> Option<&mut Proxy> {
        match self {
            ProxySlot::Running(proxy) | ProxySlot::Deferred(_, _, proxy) => Some(proxy),
            _ => None,
        }
    }

    /// The proxy, running or deferred; `None` also for one never started.
    pub(crate) fn into_running(self) -> Option<Proxy> {
        match self {
            ProxySlot::Running(proxy) | ProxySlot::Deferred(_, _, proxy) => Some(proxy),
            _ => None,
        }
    }
}

/// Whether this run needs a proxy of its own: `network.hosts` is in force
/// and this is not a nested magus (inside a sandboxed spell), which
/// starts none: the enclosing run's namespace (or Landlock domain) lets
/// it reach only the outer proxy, so it hands its children the outer
/// proxy's variables.
pub(crate) fn wanted(
    policy: &Policy,
    env: &[(OsString, OsString)],
    child_env: &mut ChildEnv,
    secrets: Guarded,
) -> ProxySlot {
    let Network::Hosts(hosts) = policy.network() else {
        return ProxySlot::Absent;
    };
    if !hosts_in_force(policy) || inherit_outer_proxy(policy, env, child_env) {
        return ProxySlot::Absent;
    }
    // A secret's hosts are reachable for the spell, as the places its
    // value goes (the proxy terminates TLS for them).
    let mut hosts = hosts.clone();
    for secret in policy.secrets() {
        hosts.rules.extend(secret.hosts.iter().cloned());
    }
    hosts.rules.sort();
    hosts.rules.dedup();
    ProxySlot::Wanted(hosts, secrets)
}

fn proxy_failed(e: &crate::proxy::ProxyError) -> Box<Diagnostic> {
    Box::new(
        Diagnostic::error(format!("cannot start the network proxy: {e}"))
            .with_note("`network.hosts` needs magus's proxy; no spell runs without it"),
    )
}

/// The setting the network step enforces: a nested run with `hosts` makes
/// no namespace and adds no rule (the enclosing run's hold it).
pub(crate) fn network_setting(policy: &Policy, proxy: &ProxySlot) -> Network {
    match (proxy.is_own(), policy.network()) {
        (false, Network::Hosts(_)) => Network::Allow,
        (_, other) => other.clone(),
    }
}

/// After the network step, before seccomp and Landlock: makes the proxy's
/// listeners where magus now is (inside the children's namespace, or on
/// the host's loopback); [`hand_over`] sends them. Returns the network rule
/// Landlock enforces: in the namespace none is needed; without one,
/// connect to the proxy's two ports only.
pub(crate) fn listen(
    proxy: &mut ProxySlot,
    plan: NetworkPlan,
    setting: &Network,
) -> Result<Network, Box<Diagnostic>> {
    let Some(proxy) = proxy.running() else {
        return Ok(setting.clone());
    };
    proxy.bind().map_err(|e| proxy_failed(&e))?;
    Ok(match plan {
        NetworkPlan::ProxyNamespace => Network::Allow,
        _ => proxy.landlock_network(),
    })
}

/// Once magus is confined, before any child: the listeners [`listen`]
/// made go to a forked proxy, which sets itself up then
/// (`Proxy::bind`). A deferred one gets them at the first launch
/// (`Session::proxy_ready`).
pub(crate) fn hand_over(proxy: &mut ProxySlot) -> Result<(), Box<Diagnostic>> {
    match proxy {
        ProxySlot::Running(proxy) => proxy.hand_over().map_err(|e| proxy_failed(&e)),
        _ => Ok(()),
    }
}

/// Children get the proxy variables of this run's own proxy.
pub(crate) fn point_children(proxy: Option<&Proxy>, child_env: &mut ChildEnv) {
    if let Some(proxy) = proxy {
        set_vars(child_env, proxy.child_vars());
    }
}

/// A nested run hands its children the enclosing run's proxy variables.
/// Called before the scrubbing re-exec too, so that they survive it (they
/// are then part of the child environment the re-exec keeps). Returns
/// whether this run is nested.
pub(crate) fn inherit_outer_proxy(
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

/// The first Landlock ABI with TCP rights.
const NET_ABI: u8 = 4;

/// Said at every run with `hosts` where no network namespace could be
/// made: the mode is partial; `abi` is the Landlock ABI in force (`None`:
/// no Landlock), which decides whether direct TCP is closed at all.
pub(crate) fn partial_mode(plan: NetworkPlan, abi: Option<u8>) -> Option<Diagnostic> {
    let NetworkPlan::ProxyPorts { why } = plan else {
        return None;
    };
    let tcp = match abi {
        Some(abi) if abi >= NET_ABI => "Landlock limits TCP connect to the proxy's ports".to_string(),
        Some(abi) => format!("Landlock ABI {abi} has no TCP rights (4 needed): a child that ignores the proxy variables can connect anywhere over TCP"),
        None => "Landlock is off: a child that ignores the proxy variables can connect anywhere over TCP".to_string(),
    };
    Some(
        Diagnostic::warning(format!(
            "network by host name is partial here: children reach the network through magus's proxy, but are not in a network namespace ({why})"
        ))
        .with_note(PARTIAL_REASON)
        .with_note(format!("{tcp}; seccomp refuses UDP, raw and packet sockets, MPTCP, TCP Fast Open and io_uring"))
        .with_help("allow user namespaces for magus (README, \"User namespaces\") to put children in a loopback-only network namespace"),
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
    if let Some(d) = egress::turned_away_diagnostic(&summary) {
        emit(&d);
    }
    match format {
        MessageFormat::Json => {
            let line = serde_json::json!({
                "severity": "note",
                "kind": "egress",
                "message": "network egress through the proxy",
                "egress": summary.to_json(),
                "turned_away": summary.turned_away,
            });
            let _ = writeln!(std::io::stderr().lock(), "{line}");
        }
        MessageFormat::Human if verbosity == Verbosity::Verbose => {
            emit(&egress::summary_diagnostic(&summary));
        }
        MessageFormat::Human => {}
    }
}
