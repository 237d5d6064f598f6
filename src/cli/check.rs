//! `magus sandbox check`: the resolved policy on stdout (each path, its
//! rights and where it came from), then every startup diagnostic.

use super::lock::LockReport;
use super::report::{startup_report, ReportInput};
use super::{load, GlobalArgs, EXIT_CONFIG};
use crate::diag::{Diagnostic, MessageFormat, Renderer, Verbosity};
use crate::enforce::pidns::UserNamespace;
use crate::enforce::{self, LandlockStatus, PidIsolation};
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
    let lock = LockReport::of(policy);
    let report = match global.message_format {
        MessageFormat::Human => human_report(policy, &kernel, &lock),
        MessageFormat::Json => json_report(policy, &kernel, &lock),
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
    if policy.state == SandboxState::On {
        if let LandlockStatus::Unavailable { reason } = &kernel.landlock {
            resolution.push(super::run::landlock_unavailable(*reason));
        }
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
    pid: PidIsolation,
}

impl KernelReport {
    fn probe(policy: &Policy, env: &[(OsString, OsString)]) -> KernelReport {
        let request = super::run::landlock_request(env);
        KernelReport {
            landlock: crate::enforce::landlock::probe(&policy.network, request),
            pid: crate::enforce::probe_private_pid_namespace(),
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

    fn pid_text(&self) -> String {
        match self.pid {
            PidIsolation::PrivateNamespace { user_namespace } => {
                let via = match user_namespace {
                    UserNamespace::NotNeeded => "as root",
                    UserNamespace::Created => "in a user namespace",
                };
                format!("private PID namespace and /proc for magus and its children ({via})")
            }
            PidIsolation::Unavailable { reason } => format!(
                "shared with the machine ({reason}); children rely on Landlock ptrace scoping"
            ),
        }
    }
}

fn state_text(policy: &Policy) -> String {
    let state = match policy.state {
        SandboxState::On => "on",
        SandboxState::Off => "off",
    };
    let why = match policy.state_source {
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
        Network::Deny => "deny (no TCP connect or bind)".into(),
        Network::Ports {
            connect_tcp,
            bind_tcp,
        } => format!("connect_tcp {connect_tcp:?}, bind_tcp {bind_tcp:?}"),
        Network::Hosts(list) => format!(
            "hosts {} via magus's proxy ({})",
            crate::enforce::proxy::hosts_text(list),
            crate::enforce::proxy::MECHANISM
        ),
    }
}

fn human_report(policy: &Policy, kernel: &KernelReport, lock: &LockReport) -> String {
    let mut out = String::new();
    let config = policy
        .config_file
        .as_ref()
        .map_or("none".into(), |f| f.display().to_string());
    let fingerprint = policy
        .fingerprint()
        .map_or("none (no sandbox section)".into(), |f| f.to_string());
    out.push_str(&format!("workspace    {}\n", policy.workspace.display()));
    out.push_str(&format!("config       {config}\n"));
    out.push_str(&format!("sandbox      {}\n", state_text(policy)));
    out.push_str(&format!("fingerprint  {fingerprint}\n"));
    out.push_str(&format!("lock         {}\n\npaths\n", lock.text));
    let width = policy
        .grants
        .iter()
        .map(|g| g.path.display().to_string().chars().count())
        .max()
        .unwrap_or(0);
    for grant in &policy.grants {
        let path = grant.path.display().to_string();
        out.push_str(&format!(
            "  {}  {path:<width$}  {}\n",
            grant.mode,
            source_text(grant)
        ));
    }
    let passthrough: Vec<String> = policy.passthrough.iter().map(|p| p.to_string()).collect();
    let passthrough = match passthrough.is_empty() {
        true => "none".to_string(),
        false => passthrough.join(", "),
    };
    out.push_str(&format!("\nenv passthrough  {passthrough}\n"));
    out.push_str(&format!(
        "network          {}\n",
        network_text(&policy.network)
    ));
    out.push_str("\nkernel\n");
    out.push_str(&format!("  landlock  {}\n", kernel.landlock_text()));
    out.push_str(&format!("  /proc     {}\n", kernel.pid_text()));
    out.push_str("  terminal  TIOCSTI and TIOCLINUX refused to children (seccomp)\n");
    out.push_str(
        "  syscalls  modules, kexec, bpf, perf events, port I/O and device nodes refused to \
         children (seccomp)\n",
    );
    let dropped: Vec<String> = enforce::capabilities::DROPPED
        .iter()
        .map(|capability| capability.to_string())
        .collect();
    out.push_str(&format!(
        "  caps      {} dropped by magus and its children\n",
        dropped.join(", ")
    ));
    out
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

fn json_report(policy: &Policy, kernel: &KernelReport, lock: &LockReport) -> String {
    let network = match &policy.network {
        Network::Allow => json!("allow"),
        Network::Deny => json!("deny"),
        Network::Ports {
            connect_tcp,
            bind_tcp,
        } => json!({"connect_tcp": connect_tcp, "bind_tcp": bind_tcp}),
        Network::Hosts(list) => json!({
            "hosts": list.rules.iter().map(|r| r.to_string()).collect::<Vec<_>>(),
            "mechanism": crate::enforce::proxy::MECHANISM,
        }),
    };
    let value = json!({
        "workspace": policy.workspace.display().to_string(),
        "config": policy.config_file.as_ref().map(|f| f.display().to_string()),
        "sandbox": state_text(policy),
        "fingerprint": policy.fingerprint().map(|f| f.to_string()),
        "lock": lock.tag,
        "grants": policy.grants.iter().map(json_grant).collect::<Vec<_>>(),
        "passthrough": policy.passthrough.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
        "network": network,
        "kernel": {
            "landlock": kernel.landlock_text(),
            "landlock_abi": kernel.landlock.abi(),
            "proc": kernel.pid_text(),
        },
    });
    format!("{value}\n")
}
