//! `magus sandbox check`: the resolved policy on stdout (each path, its
//! rights and where it came from), then every startup diagnostic.

use super::lock::LockReport;
use super::report::{startup_report, ReportInput};
use super::{load, GlobalArgs, EXIT_CONFIG};
use crate::diag::{Diagnostic, MessageFormat, Renderer, Verbosity};
use crate::enforce::jail::{protect, UserNamespace};
use crate::enforce::limits::{self, OwnUserNamespace};
use crate::enforce::network::NetworkPlan;
use crate::enforce::{self, JailPlan, JailStatus, LandlockStatus, ViewInputs};
use crate::policy::{
    self, Grant, GrantSource, Network, Policy, SandboxState, Startup, StateSource,
};
use serde_json::json;
use std::ffi::OsString;
use std::io::Write;

/// `magus sandbox check`: the policy to stdout, diagnostics to stderr.
pub(super) fn sandbox_check(global: &GlobalArgs, env: &[(OsString, OsString)]) -> i32 {
    let renderer = Renderer::new(global.message_format);
    let startup = match load(global, env) {
        Ok(startup) => startup,
        Err(status) => return status,
    };
    let policy = &startup.policy;
    let kernel = KernelReport::probe(policy, env);
    let plan = JailPlan::compile(policy, &ViewInputs::from_env(env));
    let lock = LockReport::of(policy);
    let report = match global.message_format {
        MessageFormat::Human => human_report(policy, &kernel, &lock, &plan),
        MessageFormat::Json => json_report(policy, &kernel, &lock, &plan),
    };
    let _ = std::io::stdout().lock().write_all(report.as_bytes());
    let mut diagnostics = startup_diagnostics(&startup, env, &kernel);
    diagnostics.extend(lock.diagnostic);
    for d in &diagnostics {
        renderer.emit(d);
    }
    if diagnostics.iter().any(Diagnostic::is_error) {
        EXIT_CONFIG
    } else {
        0
    }
}

/// Every diagnostic `magus run` would give at startup, in the same words,
/// in full (as under `-v`): the start-up report decides them.
fn startup_diagnostics(
    startup: &Startup,
    env: &[(OsString, OsString)],
    kernel: &KernelReport,
) -> Vec<Diagnostic> {
    let policy = &startup.policy;
    let mut resolution = startup.diagnostics.clone();
    let child_env = policy.child_env(env);
    if policy.state() == SandboxState::On {
        if let LandlockStatus::Unavailable { reason } = &kernel.landlock {
            resolution.push(super::run::landlock_unavailable(*reason));
        }
        resolution.extend(super::run::network_fallback(
            kernel.network,
            &kernel.landlock,
        ));
    }
    let jail = match &kernel.jail {
        JailStatus::Entered { user_namespace } => super::run::Jail::Entered(*user_namespace),
        JailStatus::Unavailable { reason } => super::run::Jail::Missing(reason.clone()),
    };
    if policy.state() == SandboxState::On {
        resolution.extend(super::run::partial_enforcement(&kernel.landlock, &jail));
    }
    startup_report(ReportInput {
        policy,
        config: startup.config.as_ref(),
        env,
        child_env: &child_env,
        resolution,
        verbosity: Verbosity::Verbose,
    })
    .all()
}

/// The kernel protections `magus run` would put in force, found without
/// restricting this process.
struct KernelReport {
    landlock: LandlockStatus,
    jail: JailStatus,
    network: NetworkPlan,
}

impl KernelReport {
    fn probe(policy: &Policy, env: &[(OsString, OsString)]) -> KernelReport {
        let request = super::run::landlock_request(env);
        KernelReport {
            landlock: crate::enforce::landlock::probe(policy.network(), request),
            jail: crate::enforce::jail::probe(super::run::userns_request(env)),
            network: enforce::network::probe(policy.network(), super::run::userns_request(env)),
        }
    }

    fn landlock_text(&self) -> String {
        match &self.landlock {
            LandlockStatus::Enforced { abi, unenforced } if unenforced.is_empty() => {
                format!("enforced (ABI {abi}), every requested right")
            }
            LandlockStatus::Enforced { abi, unenforced } => {
                let missing: Vec<String> = unenforced.iter().map(|u| u.to_string()).collect();
                format!(
                    "enforced (ABI {abi}); not enforced by this kernel: {}",
                    missing.join(", ")
                )
            }
            LandlockStatus::Unavailable { reason } => {
                format!("unavailable ({reason}): interpreter-level gate only")
            }
        }
    }

    fn jail_text(&self) -> String {
        match &self.jail {
            JailStatus::Entered { user_namespace } => {
                let via = match user_namespace {
                    UserNamespace::NotNeeded => "as root, no user namespace: mounts not locked",
                    UserNamespace::Created => "in a user namespace",
                };
                format!(
                    "user, IPC, PID and mount namespaces; a view of the grants only, with its \
                     own /proc, /tmp, /dev/shm and devpts ({via})"
                )
            }
            JailStatus::Unavailable { reason } => format!(
                "none ({reason}): children see the host's filesystem and processes; \
                 Landlock, seccomp and dropped capabilities still hold"
            ),
        }
    }
}

fn state_text(policy: &Policy) -> String {
    let state = match policy.state() {
        SandboxState::On => "on",
        SandboxState::Off => "off",
    };
    let why = match policy.state_source() {
        StateSource::Default => "default".to_string(),
        StateSource::Config(at) => format!("magus.yaml line {}", at.line),
        StateSource::Environment => policy::ENABLED_VAR.to_string(),
    };
    format!("{state} ({why})")
}

fn source_text(grant: &Grant) -> String {
    match &grant.source {
        GrantSource::Config { spelled, line, .. } => {
            format!("magus.yaml line {line} ({spelled})")
        }
        other => other.to_string(),
    }
}

fn network_text(network: &Network) -> String {
    match network {
        Network::Allow => "allow".into(),
        Network::Deny => "deny (no network: loopback only, or no socket but AF_UNIX)".into(),
        Network::Ports {
            connect_tcp,
            bind_tcp,
        } => format!(
            "connect_tcp {connect_tcp:?}, bind_tcp {bind_tcp:?} (TCP only: no UDP, so no DNS \
             lookups; /etc/hosts still works)"
        ),
        Network::Hosts(list) => format!(
            "hosts {} via magus's proxy (mechanism: kernel, network, below)",
            crate::enforce::proxy::hosts_text(list)
        ),
    }
}

fn human_report(
    policy: &Policy,
    kernel: &KernelReport,
    lock: &LockReport,
    plan: &JailPlan,
) -> String {
    let mut out = String::new();
    let config = policy
        .config_file()
        .as_ref()
        .map_or("none".into(), |f| f.display().to_string());
    let fingerprint = policy
        .fingerprint()
        .map_or("none (no sandbox section)".into(), |f| f.to_string());
    out.push_str(&format!("workspace    {}\n", policy.workspace().display()));
    out.push_str(&format!("config       {config}\n"));
    out.push_str(&format!("sandbox      {}\n", state_text(policy)));
    out.push_str(&format!("fingerprint  {fingerprint}\n"));
    out.push_str(&format!("lock         {}\n\npaths\n", lock.text));
    let width = policy
        .grants()
        .iter()
        .map(|g| g.path.display().to_string().chars().count())
        .max()
        .unwrap_or(0);
    for grant in policy.grants() {
        let path = grant.path.display().to_string();
        out.push_str(&format!(
            "  {}  {path:<width$}  {}\n",
            grant.mode,
            source_text(grant)
        ));
    }
    let passthrough: Vec<String> = policy.passthrough().iter().map(|p| p.to_string()).collect();
    let passthrough = match passthrough.is_empty() {
        true => "none".to_string(),
        false => passthrough.join(", "),
    };
    out.push_str(&format!("\nenv passthrough  {passthrough}\n"));
    out.push_str(&format!(
        "network          {}\n",
        network_text(policy.network())
    ));
    out.push_str(&carve_out_text(plan));
    out.push_str(&format!(
        "limits           {}\n",
        limits_lines(policy, kernel).join("\n                 ")
    ));
    out.push_str("\nkernel\n");
    out.push_str(&format!("  landlock  {}\n", kernel.landlock_text()));
    out.push_str(&format!("  jail      {}\n", kernel.jail_text()));
    out.push_str(&format!("  network   {}\n", kernel.network.describe()));
    out.push_str("  terminal  TIOCSTI and TIOCLINUX refused to children (seccomp)\n");
    out.push_str(
        "  syscalls  modules, kexec, bpf, perf events, port I/O, device nodes, file handles, \
         mounts, new namespaces, keyrings and fanotify refused to children (seccomp)\n",
    );
    out.push_str(
        "  caps      none: every set cleared (bounding and ambient too) and securebits locked, \
         root included\n",
    );
    out
}

/// The protected carve-outs of the jail's view, each with why.
fn carve_out_text(plan: &JailPlan) -> String {
    let mut out = String::from("\nread-only inside writable grants (for children, in the jail)\n");
    let mut any = false;
    for (path, reason) in plan.carve_outs() {
        out.push_str(&format!("  {}  {reason}\n", path.display()));
        any = true;
    }
    if !any {
        out.push_str("  none\n");
    }
    if plan.search_truncated {
        out.push_str(&format!(
            "  (the repository search stopped after {} directories: deeper .git directories are not protected)\n",
            protect::MAX_DIRS
        ));
    }
    out
}

/// `sandbox.limits` and how a run would hold each bound; `none` when
/// nothing is declared.
fn limits_lines(policy: &Policy, kernel: &KernelReport) -> Vec<String> {
    let (pid_namespace, own_user_ns) = match &kernel.jail {
        JailStatus::Entered {
            user_namespace: UserNamespace::Created,
        } => (true, OwnUserNamespace::Yes),
        JailStatus::Entered { .. } => (true, OwnUserNamespace::No),
        JailStatus::Unavailable { .. } => (false, OwnUserNamespace::No),
    };
    let bound = limits::predict_process_bound(policy.limits(), pid_namespace, own_user_ns);
    let lines = limits::describe(policy.limits(), bound);
    if lines.is_empty() {
        return vec!["none".into()];
    }
    lines
}

fn json_grant(grant: &Grant) -> serde_json::Value {
    let source = match &grant.source {
        GrantSource::Builtin(why) => json!({"kind": "builtin", "reason": why}),
        GrantSource::Workspace => json!({"kind": "workspace"}),
        GrantSource::Config {
            spelled,
            line,
            column,
        } => json!({"kind": "config", "spelled": spelled, "line": line, "column": column}),
    };
    json!({
        "path": grant.path.display().to_string(),
        "mode": grant.mode.as_str(),
        "source": source,
    })
}

fn json_report(
    policy: &Policy,
    kernel: &KernelReport,
    lock: &LockReport,
    plan: &JailPlan,
) -> String {
    let carve_outs: Vec<serde_json::Value> = plan
        .carve_outs()
        .map(
            |(path, reason)| json!({"path": path.display().to_string(), "why": reason.to_string()}),
        )
        .collect();
    let network = match policy.network() {
        Network::Allow => json!("allow"),
        Network::Deny => json!("deny"),
        Network::Ports {
            connect_tcp,
            bind_tcp,
        } => json!({"connect_tcp": connect_tcp, "bind_tcp": bind_tcp}),
        Network::Hosts(list) => json!({
            "hosts": list.rules.iter().map(|r| r.to_string()).collect::<Vec<_>>(),
            "mechanism": kernel.network.describe(),
        }),
    };
    let value = json!({
        "workspace": policy.workspace().display().to_string(),
        "config": policy.config_file().as_ref().map(|f| f.display().to_string()),
        "sandbox": state_text(policy),
        "fingerprint": policy.fingerprint().map(|f| f.to_string()),
        "lock": lock.tag,
        "grants": policy.grants().iter().map(json_grant).collect::<Vec<_>>(),
        "passthrough": policy.passthrough().iter().map(|p| p.to_string()).collect::<Vec<_>>(),
        "network": network,
        "carve_outs": carve_outs,
        "limits": limits_lines(policy, kernel),
        "kernel": {
            "landlock": kernel.landlock_text(),
            "landlock_abi": kernel.landlock.abi(),
            "jail": kernel.jail_text(),
            "network": kernel.network.describe(),
        },
    });
    format!("{value}\n")
}
