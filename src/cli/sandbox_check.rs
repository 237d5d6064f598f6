//! `magus sandbox check`: the resolved policy on stdout (each path, its
//! rights and where it came from), then every startup diagnostic.
//! `KernelReport` is the platform line: with the kernel layer it probes
//! Landlock, the jail and the network; without it, it says the
//! interpreter layer is all there is.

use super::sandbox_lock::LockReport;
use super::{declare, GlobalArgs, EXIT_CONFIG};
use crate::diag::{Diagnostic, MessageFormat, Verbosity};
#[cfg(kernel_layer)]
use crate::enforce::jail::{protect, UserNamespace};
#[cfg(kernel_layer)]
use crate::enforce::limits::{self, OwnUserNamespace};
#[cfg(kernel_layer)]
use crate::enforce::network::NetworkPlan;
#[cfg(kernel_layer)]
use crate::enforce::{self, JailPlan, JailStatus, LandlockStatus, ViewInputs};
use crate::policy::config::ConfigFile;
use crate::policy::{
    self, Grant, GrantSource, Network, Policy, SandboxState, Startup, StateSource,
};
use crate::sandbox::exit::NO_SPELL as EXIT_NO_SPELL;
use crate::sandbox::startup::{self, startup_report, ReportInput};
use serde_json::json;
use std::ffi::OsString;
use std::io::Write;

/// `magus sandbox check`: the policy to stdout, diagnostics to stderr.
pub(super) fn sandbox_check(
    global: &GlobalArgs,
    env: &[(OsString, OsString)],
    spell: Option<&str>,
) -> i32 {
    let renderer = global.renderer();
    let startup = match load_for(global, env, spell) {
        Ok(startup) => startup,
        Err(status) => return status,
    };
    let policy = &startup.policy;
    let kernel = KernelReport::probe(policy, env);
    let lock = LockReport::of(policy);
    let report = match global.message_format {
        MessageFormat::Human => human_report(policy, startup.config.as_ref(), &kernel, &lock),
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

/// The workspace's policy, or with `spell` the effective policy of that
/// spell of the workspace (a name that is none is an error, with the
/// nearest name).
fn load_for(
    global: &GlobalArgs,
    env: &[(OsString, OsString)],
    spell: Option<&str>,
) -> Result<Startup, i32> {
    let declared = declare(global, env, spell)?;
    let startup = declared.resolve(env);
    let Some(name) = startup.policy.spell_name().or(spell) else {
        return Ok(startup);
    };
    let known = policy::spell_names(startup.policy.workspace());
    if known.iter().any(|k| k == name) {
        return Ok(startup);
    }
    let mut d = Diagnostic::error(format!("no spell `{name}` in this workspace's spells/"));
    d = match crate::diag::nearest(name, known.iter().map(String::as_str)) {
        Some(near) => d.with_help(format!("did you mean `{near}`?")),
        None => d.with_help("`magus list` shows the workspace's spells"),
    };
    global.renderer().emit(&d);
    Err(EXIT_NO_SPELL)
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
        resolution.extend(kernel.warnings(policy));
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
#[cfg(kernel_layer)]
struct KernelReport {
    landlock: LandlockStatus,
    jail: JailStatus,
    network: NetworkPlan,
    plan: JailPlan,
}

#[cfg(kernel_layer)]
impl KernelReport {
    fn probe(policy: &Policy, env: &[(OsString, OsString)]) -> KernelReport {
        let request = startup::landlock_request(env);
        KernelReport {
            landlock: crate::enforce::probe_landlock(policy.network(), request),
            jail: crate::enforce::jail::probe(startup::userns_request(env)),
            network: enforce::network::probe(policy.network(), startup::userns_request(env)),
            plan: JailPlan::compile(policy, &ViewInputs::from_env(env)),
        }
    }

    /// What `magus run` would warn about the kernel, in the same words.
    fn warnings(&self, policy: &Policy) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        if let LandlockStatus::Unavailable { reason } = &self.landlock {
            out.push(startup::landlock_unavailable(*reason));
        }
        out.extend(startup::network_fallback(self.network, &self.landlock));
        let jail = match &self.jail {
            JailStatus::Entered { user_namespace } => startup::Jail::Entered(*user_namespace),
            JailStatus::Unavailable { reason } => startup::Jail::Missing(reason.clone()),
        };
        let sockets = startup::unix_sockets(&self.landlock, &jail, policy);
        out.extend(startup::partial_enforcement(
            &self.landlock,
            &jail,
            &sockets,
        ));
        out
    }

    /// The human report from the carve-outs to the end.
    fn human(&self, policy: &Policy) -> String {
        let mut out = carve_out_text(&self.plan);
        if !policy.hidden().is_empty() {
            out.push_str(
                "\nhidden inside grants (credential stores: empty in the jail, MGS2001 to fs.*)\n",
            );
            for path in policy.hidden() {
                out.push_str(&format!("  {}\n", path.display()));
            }
        }
        out.push_str(&format!(
            "limits           {}\n",
            limits_lines(policy, self).join("\n                 ")
        ));
        out.push_str("\nkernel\n");
        out.push_str(&format!("  landlock  {}\n", self.landlock_text()));
        out.push_str(&format!("  jail      {}\n", self.jail_text()));
        out.push_str(&format!("  network   {}\n", self.network.describe()));
        out.push_str("  terminal  TIOCSTI, TIOCLINUX and TIOCSETD refused to children (seccomp)\n");
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

    /// The JSON report's `carve_outs`, `limits` and `kernel` members.
    fn json(&self, policy: &Policy) -> [(&'static str, serde_json::Value); 3] {
        let carve_outs: Vec<serde_json::Value> = self
            .plan
            .carve_outs()
            .map(
                |(path, reason)| json!({"path": path.display().to_string(), "why": reason.to_string()}),
            )
            .collect();
        let kernel = json!({
            "landlock": self.landlock_text(),
            "landlock_abi": self.landlock.abi(),
            "jail": self.jail_text(),
            "network": self.network.describe(),
        });
        [
            ("carve_outs", json!(carve_outs)),
            ("limits", json!(limits_lines(policy, self))),
            ("kernel", kernel),
        ]
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
                 Landlock, seccomp and dropped capabilities still hold; the host's /tmp, \
                 /dev/shm and $TMPDIR are not granted (a run gets a directory of its own)"
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
        GrantSource::Config {
            spelled,
            line,
            spell: None,
            ..
        } => format!("magus.yaml line {line} ({spelled})"),
        GrantSource::Config {
            spelled,
            line,
            spell: Some(name),
            ..
        } => format!("magus.yaml line {line} ({spelled}), spells: {name}:"),
        other => other.to_string(),
    }
}

/// Without the kernel layer there is nothing to probe: the interpreter
/// layer is all there is, on every platform.
#[cfg(not(kernel_layer))]
struct KernelReport;

#[cfg(not(kernel_layer))]
impl KernelReport {
    const LAYER: &'static str = "interpreter layer only";
    const CHILDREN: &'static str = "not confined: children can read any file you can; only fs.* \
        is confined (sh.* programs are checked and children get the filtered environment)";

    fn probe(_policy: &Policy, _env: &[(OsString, OsString)]) -> KernelReport {
        KernelReport
    }

    fn warnings(&self, _policy: &Policy) -> Vec<Diagnostic> {
        vec![startup::interpreter_only()]
    }

    fn layer_text(&self) -> String {
        format!(
            "{}: no kernel confinement on {}",
            Self::LAYER,
            crate::enforce::platform()
        )
    }

    fn limits_text(policy: &Policy) -> &'static str {
        match policy.limits().is_empty() {
            true => "none",
            false => "declared, not enforced (interpreter layer only)",
        }
    }

    fn human(&self, policy: &Policy) -> String {
        format!(
            "limits           {}\n\nkernel\n  layer     {}\n  children  {}\n",
            Self::limits_text(policy),
            self.layer_text(),
            Self::CHILDREN
        )
    }

    fn json(&self, policy: &Policy) -> [(&'static str, serde_json::Value); 3] {
        [
            ("carve_outs", json!([])),
            ("limits", json!([Self::limits_text(policy)])),
            (
                "kernel",
                json!({"layer": self.layer_text(), "children": Self::CHILDREN}),
            ),
        ]
    }
}

#[cfg(kernel_layer)]
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
            crate::proxy::hosts_text(list)
        ),
    }
}

/// Without the kernel layer nothing enforces `network:`: the setting is
/// said as declared, and that it does not hold.
#[cfg(not(kernel_layer))]
fn network_text(network: &Network) -> String {
    let declared = match network {
        Network::Allow => return "allow".into(),
        Network::Deny => "deny".to_string(),
        Network::Ports {
            connect_tcp,
            bind_tcp,
        } => format!("connect_tcp {connect_tcp:?}, bind_tcp {bind_tcp:?}"),
        Network::Hosts(list) => format!("hosts [{}]", hosts_list(list).join(", ")),
    };
    format!("{declared} (declared, not enforced: interpreter layer only)")
}

#[cfg(not(kernel_layer))]
fn hosts_list(list: &crate::policy::HostList) -> Vec<String> {
    list.rules.iter().map(|r| r.to_string()).collect()
}

/// Each preset named in `hosts:`, expanded (its rules are in the hosts
/// line already): `  @crates-io = index.crates.io:443, ...  (cargo: ...)`.
fn preset_lines(network: &Network) -> String {
    let Network::Hosts(list) = network else {
        return String::new();
    };
    list.presets
        .iter()
        .map(|p| {
            let rules: Vec<String> = p.rules().iter().map(|r| r.to_string()).collect();
            format!(
                "  {:<14} = {}  ({})\n",
                p.spelled(),
                rules.join(", "),
                p.purpose
            )
        })
        .collect()
}

/// The presets named in `hosts:`, expanded, for JSON.
fn presets_json(list: &crate::policy::HostList) -> serde_json::Value {
    let map: serde_json::Map<String, serde_json::Value> = list
        .presets
        .iter()
        .map(|p| {
            let rules: Vec<String> = p.rules().iter().map(|r| r.to_string()).collect();
            (p.spelled(), json!(rules))
        })
        .collect();
    serde_json::Value::Object(map)
}

/// Whether the spell has its own section, and where.
fn spell_text(config: Option<&ConfigFile>, name: &str) -> String {
    let section = config.and_then(|c| c.spell(name)).map(|s| s.at.line);
    match section {
        Some(line) => {
            format!("the workspace's policy and `spells: {name}:` at magus.yaml line {line}")
        }
        None => "the workspace's policy: it has no `spells:` section".into(),
    }
}

fn human_report(
    policy: &Policy,
    config_file: Option<&ConfigFile>,
    kernel: &KernelReport,
    lock: &LockReport,
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
    if let Some(name) = policy.spell_name() {
        out.push_str(&format!(
            "spell        {name} ({})\n",
            spell_text(config_file, name)
        ));
    }
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
    out.push_str(&preset_lines(policy.network()));
    out.push_str(&secret_lines(policy));
    out.push_str(&kernel.human(policy));
    out
}

/// The spell's secrets by reference (docs/secrets.md), one per line:
/// names, sources, hosts and rules, never a value.
fn secret_lines(policy: &Policy) -> String {
    let mut out = String::new();
    for (i, secret) in policy.secrets().iter().enumerate() {
        let label = if i == 0 { "secrets" } else { "" };
        let line = secret.canonical();
        let line = line.strip_prefix("secret ").unwrap_or(&line);
        out.push_str(&format!("{label:<16} {line}\n"));
    }
    if !out.is_empty() {
        out.push_str("                 (the spell sees a placeholder; magus's proxy adds the value for these hosts only)\n");
    }
    out
}

/// The protected carve-outs of the jail's view, each with why.
#[cfg(kernel_layer)]
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
    for link in &plan.links {
        out.push_str(&format!(
            "  {} -> {}  a link to it: put back after the run if a child changes it\n",
            link.dir.join(&link.name).display(),
            link.target.display()
        ));
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
#[cfg(kernel_layer)]
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
            spell,
        } => {
            json!({"kind": "config", "spelled": spelled, "line": line, "column": column, "spell": spell})
        }
    };
    json!({
        "path": grant.path.display().to_string(),
        "mode": grant.mode.as_str(),
        "source": source,
    })
}

fn json_report(policy: &Policy, kernel: &KernelReport, lock: &LockReport) -> String {
    let network = match policy.network() {
        Network::Allow => json!("allow"),
        Network::Deny => json!("deny"),
        Network::Ports {
            connect_tcp,
            bind_tcp,
        } => json!({"connect_tcp": connect_tcp, "bind_tcp": bind_tcp}),
        #[cfg(kernel_layer)]
        Network::Hosts(list) => json!({
            "hosts": list.rules.iter().map(|r| r.to_string()).collect::<Vec<_>>(),
            "presets": presets_json(list),
            "mechanism": kernel.network.describe(),
        }),
        #[cfg(not(kernel_layer))]
        Network::Hosts(list) => json!({
            "hosts": hosts_list(list),
            "presets": presets_json(list),
            "mechanism": "none: not enforced without the kernel layer",
        }),
    };
    let mut value = json!({
        "workspace": policy.workspace().display().to_string(),
        "config": policy.config_file().as_ref().map(|f| f.display().to_string()),
        "sandbox": state_text(policy),
        "spell": policy.spell_name(),
        "fingerprint": policy.fingerprint().map(|f| f.to_string()),
        "lock": lock.tag,
        "grants": policy.grants().iter().map(json_grant).collect::<Vec<_>>(),
        "passthrough": policy.passthrough().iter().map(|p| p.to_string()).collect::<Vec<_>>(),
        "network": network,
        "secrets": policy.secrets().iter().map(|s| s.canonical()).collect::<Vec<_>>(),
    });
    for (key, member) in kernel.json(policy) {
        value[key] = member;
    }
    format!("{value}\n")
}
