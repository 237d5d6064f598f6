//! `magus run`: the startup sequence that puts a spell in the sandbox, in
//! the only order that works.
//!
//! 1. Read the declared policy (`magus.yaml`, whether the sandbox is on).
//!    When the environment holds anything a child may not get, mark every
//!    inherited descriptor above stderr close-on-exec (a parent may have
//!    left one open on a secret) and re-execute with the scrubbed
//!    environment at once, so `/proc/<magus>/environ` holds no secret and
//!    the grants are resolved once, by the re-executed process.
//! 2. Resolve the policy (before anything is restricted, so `magus.yaml`
//!    and `$HOME` can still be read) and verify it against `magus.lock` and
//!    an enclosing run's `MAGUS_SANDBOX_FINGERPRINT` (MGS2010).
//! 3. Enter the jail (user, IPC, PID and mount namespaces and the view
//!    compiled from the policy; mounting is impossible once Landlock is
//!    on, so a nested magus keeps the enclosing run's), for `network: deny`
//!    and `hosts` a loopback-only network namespace (for `hosts`, the
//!    proxy's listeners are made inside it; the proxy, outside, is forked
//!    by the jail's original process at the spell's first launch), drop
//!    every capability, install the
//!    syscall guard (seccomp, with the network rules), then Landlock — all
//!    on the lone main thread. The process that waits for magus (the
//!    namespace's init, or a subreaper where no namespace can be made)
//!    kills whatever is left when magus ends, and holds `sandbox.limits`
//!    (see `isolate`).
//! 4. Run the spell with the gated bindings.
//!
//! Without the kernel layer (macOS, Windows, `--no-default-features`:
//! `cfg(kernel_layer)` unset) the descriptor marking, the re-exec and step 3
//! do not exist; MGS2005 says so at every sandboxed run.
//!
//! The library's facade (`crate::sandbox`) drives these steps, for this
//! CLI and for an embedder alike: `Sandbox::load` is step 1,
//! `Sandbox::install` steps 2 and 3 (`confine_process`), `Installed::enter`
//! step 4.

use super::report::{startup_report, ReportInput, StartupReport};
use super::spells::{SpellError, SpellReader};
use super::{GlobalArgs, EXIT_CONFIG};
use crate::bindings;
use crate::diag::{Code, Diagnostic, Renderer};
use crate::enforce::gate::HiddenPrograms;
use crate::enforce::{self, Domain, ReexecState};
use crate::policy::{
    effective_fingerprint, Access, ChildEnv, NormalPath, Policy, SandboxState, Startup,
    FINGERPRINT_VAR,
};
use crate::sandbox::{CompatLevel, Runtime, Sandbox, Spell};
#[cfg(kernel_layer)]
use kernel_imports::*;

/// What only the kernel layer's steps use.
#[cfg(kernel_layer)]
mod kernel_imports {
    pub(super) use super::super::hosts::ProxySlot;
    pub(super) use crate::diag::render;
    pub(super) use crate::enforce::jail::ahead::Ahead;
    pub(super) use crate::enforce::jail::UserNamespace;
    pub(super) use crate::enforce::jail::USERNS_VAR;
    pub(super) use crate::enforce::leftovers::Watch;
    pub(super) use crate::enforce::limits::{BoundSource, OwnUserNamespace, ProcessBound};
    pub(super) use crate::enforce::network::{NetnsUnavailable, NetworkPlan};
    pub(super) use crate::enforce::seccomp::GuardMode;
    pub(super) use crate::enforce::unix_sockets::UnixSockets;
    pub(super) use crate::enforce::{
        JailPlan, JailStatus, JailUnavailable, LandlockRequest, LandlockStatus, SyscallGuard,
        Unavailable, Unenforced, UsernsRequest, ViewInputs,
    };
    pub(super) use crate::policy::limits::Seconds;
    pub(super) use crate::policy::{Declared, Grant, Limits, DAEMON_SOCKET_VAR};
    pub(super) use crate::proxy::Proxy;
}
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// Variables magus itself needs after the re-exec, to resolve the same
/// policy and colour its diagnostics as asked; they are no secret, and
/// children still do not get them.
#[cfg(kernel_layer)]
const KEPT_FOR_MAGUS: [&str; 3] = ["TMPDIR", "XDG_CACHE_HOME", "CLICOLOR_FORCE"];

/// What to do once the sandbox is up: run one spell's `main`, or the
/// `test` blocks of some spells (all of them when none is named).
pub(super) enum Job {
    Run {
        spell: String,
        args: Vec<String>,
    },
    Test {
        spells: Vec<String>,
        filter: Option<String>,
    },
}

/// Does `job` in the sandbox, started through the library's facade
/// (`crate::sandbox`); returns the exit status.
pub(super) fn run(
    global: &GlobalArgs,
    env: &[(OsString, OsString)],
    reexec: Option<ReexecState>,
    job: Job,
) -> i32 {
    let renderer = Renderer::new(global.message_format);
    match start(global, env, reexec, job, &renderer) {
        Ok(status) | Err(status) => status,
    }
}

/// [`run`], with every failure already said and turned into its status.
fn start(
    global: &GlobalArgs,
    env: &[(OsString, OsString)],
    reexec: Option<ReexecState>,
    job: Job,
    renderer: &Renderer,
) -> Result<i32, i32> {
    let config_error = |d: &Diagnostic| {
        renderer.emit(d);
        EXIT_CONFIG
    };
    let cwd = super::current_dir(renderer)?;
    let workspace = super::workspace_arg(global, &cwd);
    let spell = match &job {
        Job::Run { spell, .. } => Some(spell.as_str()),
        Job::Test { spells, .. } => match spells.as_slice() {
            [one] => Some(one.as_str()),
            _ => None,
        },
    };
    let sandbox = Sandbox::load_from(workspace, spell, env.to_vec(), reexec)
        .map_err(|e| config_error(e.diagnostic()))?;
    let spells = read_spells(sandbox.policy(), &job).map_err(|e| {
        renderer.emit(&e.diagnostic);
        e.status
    })?;
    let installed = sandbox
        .install(CompatLevel::BestEffort)
        .map_err(|e| config_error(e.diagnostic()))?;
    for d in installed.diagnostics() {
        renderer.emit(d);
    }
    installed
        .enter(move |runtime| execute(runtime, spells, job))
        .map_err(|e| config_error(e.diagnostic()))
}

/// What step 3 leaves for step 4: the process is confined, and this is
/// everything the spell's run needs, moved onto the interpreter's thread.
pub(crate) struct Confinement {
    pub policy: Policy,
    pub domain: Domain,
    #[cfg(kernel_layer)]
    pub proxy: Option<Proxy>,
    pub hidden: HiddenPrograms,
    pub child_env: ChildEnv,
    pub report: StartupReport,
}

/// Steps 2 and 3 of the module doc, for a policy resolved and checked
/// against the lock (step 1, `Sandbox::load`); `Sandbox::install` is its
/// only caller. The diagnostics to say before the spell are `report.now`;
/// may re-execute the process.
pub(crate) fn confine_process(
    startup: Startup,
    env: &[(OsString, OsString)],
    reexec: Option<ReexecState>,
) -> Result<Confinement, Box<Diagnostic>> {
    let options = crate::diag::output_options();
    #[cfg(kernel_layer)]
    let renderer = Renderer::new(options.format);
    let policy = startup.policy;
    let mut child_env = match policy.state() {
        SandboxState::On => policy.child_env(env),
        SandboxState::Off => unsandboxed_env(env),
    };
    #[cfg(kernel_layer)]
    super::hosts::inherit_outer_proxy(&policy, env, &mut child_env);
    #[cfg(not(kernel_layer))]
    if let Some(never) = reexec {
        match never {}
    }
    if policy.state() == SandboxState::On {
        #[cfg(kernel_layer)]
        {
            keep_inherited_descriptors()?;
            match reexec {
                // Decided in step 1 (`Sandbox::load`) already; this only
                // guards against a secret-bearing environment ever
                // reaching a spell.
                None if needs_reexec(&child_env) => {
                    let kept = super::secrets::kept_for_magus(&policy);
                    return Err(reexec_scrubbed(env, &child_env, &kept));
                }
                None => {}
                Some(state) => restore_stripped(&mut child_env, state),
            }
        }
        give_temporary_directory(&policy, env, &mut child_env);
    }
    export_fingerprint(&policy, &mut child_env);
    // network.hosts: decided here; the proxy process is forked outside
    // the jail and before any restriction (by the jail's original process
    // at the first launch, see `enter_jail`), so it keeps the host's
    // network; its listeners are made in `confine`, inside the children's
    // namespace.
    #[cfg(kernel_layer)]
    let secrets = prepare_secrets(&policy, env)?;
    #[cfg(not(kernel_layer))]
    if policy.state() == SandboxState::On && !policy.secrets().is_empty() {
        return Err(Box::new(
            Diagnostic::error("this spell declares `secrets:`, which cannot be kept from it here: magus was built without its kernel layer (Linux, the `kernel` feature)")
                .with_note("magus hands a secret only to its proxy, outside the sandbox, and only the kernel layer forces a child's traffic through it; magus never falls back to passing the value")
                .with_help("run the spell with magus built for Linux with the default `kernel` feature, or remove its `secrets:`"),
        ));
    }
    #[cfg(kernel_layer)]
    let mut proxy = super::hosts::wanted(
        &policy,
        env,
        &mut child_env,
        secrets.as_ref().map(|s| std::sync::Arc::clone(&s.vault)),
    );
    // Before Landlock, which does not grant /dev/ptmx.
    bindings::prepare_terminal(options.format);
    let mut resolution = startup.diagnostics;
    // Before the jail hides the ungranted PATH directories.
    let hidden = match policy.state() {
        SandboxState::On => HiddenPrograms::snapshot(&policy, child_path(&child_env)),
        SandboxState::Off => HiddenPrograms::default(),
    };
    #[cfg(kernel_layer)]
    let domain = confine(&policy, &mut proxy, env, &renderer, &mut resolution)?;
    #[cfg(kernel_layer)]
    let proxy = proxy.into_running();
    #[cfg(kernel_layer)]
    if let Some(secrets) = secrets {
        let Prepared {
            vault,
            placeholders,
            bundle,
        } = secrets;
        // magus proper's reference: the proxy (or the process that forks
        // it) holds its own; the last one wipes the values.
        drop(vault);
        super::secrets::give_children(&policy, &placeholders, &bundle, &mut child_env)?;
    }
    #[cfg(kernel_layer)]
    super::hosts::point_children(proxy.as_ref(), &mut child_env);
    #[cfg(not(kernel_layer))]
    let domain = interpreter_only_domain(&policy, &mut resolution);
    let report = startup_report(ReportInput {
        policy: &policy,
        config: startup.config.as_ref(),
        env,
        child_env: &child_env,
        resolution,
        verbosity: options.verbosity,
    });
    Ok(Confinement {
        policy,
        domain,
        #[cfg(kernel_layer)]
        proxy,
        hidden,
        child_env,
        report,
    })
}

/// A run's secrets, ready before the jail: the vault for the proxy, the
/// placeholders and CA bundle for children.
#[cfg(kernel_layer)]
struct Prepared {
    vault: std::sync::Arc<crate::proxy::vault::Vault>,
    placeholders: Vec<(String, String)>,
    bundle: String,
}

/// Reads the secrets' values (before the jail) and makes the vault;
/// `None` for a spell without `secrets:`. Refused where the proxy could
/// be gone around: sandbox off, a nested run, no user namespaces.
#[cfg(kernel_layer)]
fn prepare_secrets(
    policy: &Policy,
    env: &[(OsString, OsString)],
) -> Result<Option<Prepared>, Box<Diagnostic>> {
    use super::secrets::{bundle, read_values, unsupported};
    if policy.secrets().is_empty() {
        return Ok(None);
    }
    if policy.state() != SandboxState::On {
        return Err(unsupported("the sandbox is off for this run"));
    }
    if nesting(env) == Nesting::InsideMagus {
        return Err(unsupported("this magus runs inside another magus's sandbox, whose proxy it cannot give a secret to"));
    }
    if userns_request(env) != UsernsRequest::Allowed {
        return Err(unsupported(
            "user namespaces are turned off for magus (MAGUS_SANDBOX_USERNS=0)",
        ));
    }
    let values = read_values(policy, env)?;
    let roots = crate::policy::lookup(env, "SSL_CERT_FILE").map(PathBuf::from);
    let vault = crate::proxy::vault::Vault::new(values, roots).map_err(|e| {
        Box::new(Diagnostic::error(format!(
            "cannot prepare the secrets: {e}"
        )))
    })?;
    let bundle = bundle(vault.authority.cert_pem(), env);
    Ok(Some(Prepared {
        placeholders: vault.child_vars(),
        vault: std::sync::Arc::new(vault),
        bundle,
    }))
}

/// The spells `job` names (every spell of the workspace for a bare
/// `magus test`), read before the sandbox closes.
fn read_spells(policy: &Policy, job: &Job) -> Result<Vec<(PathBuf, String)>, SpellError> {
    let workspace = policy.workspace();
    let names: Vec<String> = match job {
        Job::Run { spell, .. } => vec![spell.clone()],
        Job::Test { spells, .. } if spells.is_empty() => {
            let mut all = super::spells::spell_files(&workspace.join("spells"));
            all.sort();
            all.into_iter().map(|(name, _)| name).collect()
        }
        Job::Test { spells, .. } => spells.clone(),
    };
    let reader = SpellReader::new(policy);
    names.iter().map(|name| reader.read_spell(name)).collect()
}

/// The `PATH` children get.
fn child_path(child_env: &ChildEnv) -> Option<&OsStr> {
    child_env
        .vars
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_os_str())
}

/// Children get a `TMPDIR` they may write to: magus's own when the policy
/// grants it (it does by default), else `/tmp`.
fn give_temporary_directory(
    policy: &Policy,
    env: &[(OsString, OsString)],
    child_env: &mut ChildEnv,
) {
    let writable = |dir: &Path| {
        NormalPath::new(dir.to_path_buf())
            .is_ok_and(|p| policy.check(&p, Access::Write).is_allowed())
    };
    let own = crate::policy::lookup(env, "TMPDIR").map(PathBuf::from);
    let dir = own
        .filter(|d| d.is_absolute() && writable(d))
        .or_else(|| Some(PathBuf::from("/tmp")).filter(|d| writable(d)));
    let Some(dir) = dir else {
        return;
    };
    child_env.vars.retain(|(k, _)| k != "TMPDIR");
    child_env.vars.push(("TMPDIR".into(), dir.into_os_string()));
    child_env.stripped.retain(|name| name != "TMPDIR");
}

/// Step 1: descriptors magus inherited above stderr reach no
/// child, nor the re-executed magus.
#[cfg(kernel_layer)]
fn keep_inherited_descriptors() -> Result<(), Box<Diagnostic>> {
    enforce::process::close_inherited_on_exec().map_err(|e| {
        Box::new(
            Diagnostic::error(format!(
                "cannot mark inherited file descriptors close-on-exec: {e}"
            ))
            .with_note("a child could read a file its parent left open for magus"),
        )
    })
}

/// `MAGUS_SANDBOX_FINGERPRINT` for the spell and its children, replacing
/// an inherited one (a nested run has just checked that they are equal).
fn export_fingerprint(policy: &Policy, child_env: &mut ChildEnv) {
    let Some(fingerprint) = effective_fingerprint(policy) else {
        return;
    };
    child_env.vars.retain(|(k, _)| k != FINGERPRINT_VAR);
    child_env
        .vars
        .push((FINGERPRINT_VAR.into(), fingerprint.to_string().into()));
}

/// With the sandbox off, children get magus's whole environment, the
/// daemon socket included, and nothing is said about stripping.
fn unsandboxed_env(env: &[(OsString, OsString)]) -> ChildEnv {
    ChildEnv {
        vars: env.to_vec(),
        stripped: Vec::new(),
        daemon_socket: crate::policy::DaemonSocket::Absent,
    }
}

/// Step 1, decided on the declared policy alone, before anything is
/// resolved (the re-executed process resolves and checks everything
/// once): the environment to re-execute with, when one is needed.
#[cfg(kernel_layer)]
pub(crate) fn scrubbed_before_resolution(
    declared: &Declared,
    env: &[(OsString, OsString)],
) -> Option<ChildEnv> {
    let policy = declared.without_grants();
    if policy.state() != SandboxState::On {
        return None;
    }
    let mut child_env = policy.child_env(env);
    super::hosts::inherit_outer_proxy(&policy, env, &mut child_env);
    needs_reexec(&child_env).then_some(child_env)
}

/// `network: deny` and `hosts` in a run of its own (not nested): starts
/// making the jail's user and network namespaces on the other core while
/// the grants are resolved and the view planned (`jail::ahead`).
#[cfg(kernel_layer)]
pub(crate) fn start_namespaces_ahead(declared: &Declared, env: &[(OsString, OsString)]) {
    let policy = declared.without_grants();
    let wanted = policy.state() == SandboxState::On
        && enforce::network::needs_namespace(policy.network())
        && nesting(env) == Nesting::Outermost
        && userns_request(env) == UsernsRequest::Allowed;
    if wanted {
        enforce::jail::ahead::start();
    }
}

#[cfg(kernel_layer)]
fn needs_reexec(child_env: &ChildEnv) -> bool {
    !child_env.stripped.is_empty() || child_env.daemon_socket_withheld()
}

/// Replaces this process with one that holds only the scrubbed
/// environment; inherited descriptors above stderr are closed on exec.
#[cfg(kernel_layer)]
pub(crate) fn reexec_scrubbed(
    env: &[(OsString, OsString)],
    child_env: &ChildEnv,
    kept_for_secrets: &[String],
) -> Box<Diagnostic> {
    if let Err(d) = keep_inherited_descriptors() {
        return d;
    }
    let mut kept = child_env.vars.clone();
    kept.extend(
        env.iter()
            .filter(|(k, _)| KEPT_FOR_MAGUS.iter().any(|name| k == OsStr::new(name)))
            .cloned(),
    );
    // Read by magus for secrets by reference; `give_children` keeps them
    // from children.
    kept.retain(|(k, _)| !kept_for_secrets.iter().any(|n| k == OsStr::new(n)));
    kept.extend(
        env.iter()
            .filter(|(k, _)| kept_for_secrets.iter().any(|n| k == OsStr::new(n)))
            .cloned(),
    );
    let mut stripped: Vec<OsString> = child_env.stripped.iter().map(OsString::from).collect();
    if child_env.daemon_socket_withheld() {
        stripped.push(DAEMON_SOCKET_VAR.into());
    }
    let Err(e) = enforce::reexec_scrubbed(&kept, &stripped);
    Box::new(Diagnostic::error(format!(
        "cannot re-execute magus with a scrubbed environment: {e}"
    )))
}

/// After the re-exec the environment is already clean: take the names the
/// first process stripped, so MGS2003 and MGS2008 still say them.
#[cfg(kernel_layer)]
fn restore_stripped(child_env: &mut ChildEnv, state: ReexecState) {
    for name in state.stripped {
        let name = name.to_string_lossy().into_owned();
        if name == DAEMON_SOCKET_VAR {
            child_env.daemon_socket = crate::policy::DaemonSocket::Withheld;
        } else if !KEPT_FOR_MAGUS.contains(&name.as_str()) {
            child_env.stripped.push(name);
        }
    }
    child_env.stripped.sort();
    child_env.stripped.dedup();
}

/// Step 3 of the module doc: the jail, capabilities, syscall guard,
/// Landlock. Whatever could not be put in force is said in one warning.
#[cfg(kernel_layer)]
fn confine(
    policy: &Policy,
    proxy: &mut ProxySlot,
    env: &[(OsString, OsString)],
    renderer: &Renderer,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<Domain, Box<Diagnostic>> {
    if policy.state() == SandboxState::Off {
        return Ok(Domain::unconfined(Unavailable::ForcedOff));
    }
    let setting = super::hosts::network_setting(policy, proxy);
    let jail = match nesting(env) {
        Nesting::Outermost => {
            // `deny` and `hosts`: the namespaces are being made ahead
            // (`start_namespaces_ahead`), on the other core.
            let ahead = enforce::jail::ahead::take_started();
            isolate(policy, env, renderer, diagnostics, ahead, proxy)?
        }
        Nesting::InsideMagus => Jail::Inherited,
    };
    // The network step (issue #12): magus is in its user namespace and
    // still holds CAP_SYS_ADMIN and CAP_NET_ADMIN there (`lo` is brought
    // up), and the syscall guard does not yet refuse `unshare`; once per
    // run, never per child. Where the jail was entered with the namespace
    // made ahead, magus was born in it and there is nothing to do. The
    // proxy's listeners are made right after, inside the namespace,
    // before seccomp refuses `listen`.
    let network_plan = enforce::network::enter(&setting, userns_request(env));
    if !policy.secrets().is_empty() && network_plan != NetworkPlan::ProxyNamespace {
        return Err(super::secrets::unsupported(
            "no network namespace could be made for the spell's programs (user namespaces are refused on this machine)",
        ));
    }
    let network = super::hosts::listen(proxy, network_plan, &setting)?;
    enforce::capabilities::drop_all_capabilities()
        .map_err(|e| Box::new(Diagnostic::error(format!("cannot drop capabilities: {e}"))))?;
    let mode = match jail {
        Jail::Entered(_) | Jail::Inherited => GuardMode::Jailed,
        Jail::Missing(_) => GuardMode::Unjailed,
    };
    let guard = SyscallGuard::build(mode, network_plan.seccomp()).and_then(|g| g.install_on_self());
    guard.map_err(|e| {
        Box::new(Diagnostic::error(format!(
            "cannot install the syscall guard: {e}"
        )))
    })?;
    // Magus proper was forked while PID 1 builds the view: the work above
    // reads no path. Landlock's rules for the grants the view binds are
    // made meanwhile, on the host's inodes (the view shows the same ones);
    // those of the view's own mounts (the private `/tmp`, `/proc`...) once
    // it is built, in it.
    let landlock_failed = |e: enforce::EnforceError| {
        Box::new(Diagnostic::error(format!(
            "cannot install the Landlock sandbox: {e}"
        )))
    };
    let (ahead, in_view) = split_grants(policy);
    let request = landlock_request(env);
    let open = |grant: &Grant| enforce::jail::open_on_host(&grant.path);
    let building = enforce::landlock::begin(&ahead, &network, request, open);
    enforce::jail::wait_until_built();
    let domain = building
        .and_then(|b| b.finish(&in_view))
        .map_err(landlock_failed)?;
    // Landlock's ptrace scoping is missing where Landlock is; a child
    // must not inject calls into magus either way (`untraceable`).
    enforce::untraceable::refuse_tracing().map_err(|e| {
        Box::new(Diagnostic::error(format!(
            "cannot make magus untraceable by its children: {e}"
        )))
    })?;
    enforce::limits::refuse_core_dumps().map_err(|e| {
        Box::new(Diagnostic::error(format!(
            "cannot turn core dumps off for the run: {e}"
        )))
    })?;
    enforce::jail::wait_until_sealed().map_err(|reason| {
        Box::new(
            Diagnostic::error(format!("cannot build the jail: {reason}")).with_note("no spell ran"),
        )
    })?;
    super::hosts::hand_over(proxy)?;
    let sockets = unix_sockets(domain.status(), &jail, policy);
    sockets.install_for_children().map_err(|e| {
        Box::new(Diagnostic::error(format!(
            "cannot refuse unix sockets to children: {e}"
        )))
    })?;
    if let LandlockStatus::Unavailable { reason } = domain.status() {
        diagnostics.push(landlock_unavailable(*reason));
    }
    diagnostics.extend(partial_enforcement(domain.status(), &jail, &sockets));
    diagnostics.extend(network_fallback(network_plan, domain.status()));
    diagnostics.extend(super::hosts::partial_mode(
        network_plan,
        domain.status().abi(),
    ));
    Ok(domain)
}

/// What children may do with unix sockets: nothing to add in the jail,
/// refused without it unless `magus.yaml` grants a socket.
#[cfg(kernel_layer)]
pub(super) fn unix_sockets(landlock: &LandlockStatus, jail: &Jail, policy: &Policy) -> UnixSockets {
    let jailed = !matches!(jail, Jail::Missing(_));
    enforce::unix_sockets::decide(jailed, landlock, policy.grants())
}

/// The grants whose Landlock rules can be made before the view is built
/// (it binds their host inode), and those made in the view: its own
/// mounts, and every grant where this run has no jail of its own.
#[cfg(kernel_layer)]
fn split_grants(policy: &Policy) -> (Vec<Grant>, Vec<Grant>) {
    if !enforce::jail::host_root_held() {
        return (Vec::new(), policy.grants().to_vec());
    }
    policy
        .grants()
        .iter()
        .cloned()
        .partition(|g| !enforce::jail::plan::fresh_in_view(g))
}

/// Step 3, first part: the jail (or, where namespaces are refused, the
/// subreaper that kills survivors), with `sandbox.limits` hooked in.
///
/// `enforce::limits` hooks: `prepare` here; `in_new_pid_namespace` and
/// `arm_deadline` in the jail's PID 1 (`jail::reaper`); `apply_to_self`
/// here, in magus proper; `apply_to_child` in `child::vfork`.
#[cfg(kernel_layer)]
fn isolate(
    policy: &Policy,
    env: &[(OsString, OsString)],
    renderer: &Renderer,
    diagnostics: &mut Vec<Diagnostic>,
    ahead: Option<Ahead>,
    proxy: &mut ProxySlot,
) -> Result<Jail, Box<Diagnostic>> {
    if !policy.limits().is_empty() {
        let over_time = over_time_diagnostic(policy.limits());
        enforce::limits::prepare(*policy.limits(), render(&over_time, renderer.format));
    }
    let (jail, watch) = enter_jail(policy, env, diagnostics, ahead, proxy)?;
    let own_user_namespace = match &jail {
        Jail::Entered(UserNamespace::Created) => OwnUserNamespace::Yes,
        Jail::Entered(UserNamespace::NotNeeded) | Jail::Inherited => OwnUserNamespace::No,
        Jail::Missing(_) => {
            let over = over_processes_diagnostic();
            enforce::limits::prepare_supervised(render(&over, renderer.format));
            let watch = watch.unwrap_or_else(|| Watch::before(Default::default()));
            if let Err(e) = enforce::survivors::supervise_without_pid_namespace(watch) {
                diagnostics.push(Diagnostic::warning(format!(
                    "processes a spell starts may outlive the run: no PID namespace, and no supervisor ({e})"
                )));
            }
            OwnUserNamespace::No
        }
    };
    enforce::limits::apply_to_self(own_user_namespace);
    if enforce::limits::process_bound() == ProcessBound::Unenforced {
        diagnostics.push(unenforced_processes());
    }
    Ok(jail)
}

/// Said by the process that waits for magus when the wall time runs out.
#[cfg(kernel_layer)]
fn over_time_diagnostic(limits: &Limits) -> Diagnostic {
    let wall = limits.wall_time.map_or(0, |d| d.as_secs());
    Diagnostic::error(format!(
        "the run exceeded sandbox.limits.wall_time ({}); magus and every process it started were killed",
        Seconds(wall)
    ))
    .with_help("raise `limits.wall_time` in magus.yaml (and re-lock) if the spell needs longer")
}

/// Said by the supervisor (no PID namespace) when the run holds more
/// processes than its bound and no `pids` cgroup made the forks fail.
#[cfg(kernel_layer)]
fn over_processes_diagnostic() -> Diagnostic {
    let (count, source) = enforce::limits::supervised_processes();
    let bound = match source {
        BoundSource::Declared => format!("sandbox.limits.processes ({count})"),
        BoundSource::Default => {
            format!("the run's default bound of {count} processes (no PID namespace)")
        }
    };
    Diagnostic::error(format!(
        "the run exceeded {bound}, threads included; magus and every process it started were killed"
    ))
    .with_help("raise `limits.processes` in magus.yaml (and re-lock) if the spell needs more")
}

#[cfg(kernel_layer)]
fn unenforced_processes() -> Diagnostic {
    Diagnostic::warning(
        "sandbox.limits.processes is not enforced: real root ignores RLIMIT_NPROC and this kernel keeps no per-namespace pid_max",
    )
    .with_help("run on Linux 6.14 or newer, or as an ordinary user")
}

/// What became of the jail for this run.
#[cfg(kernel_layer)]
pub(super) enum Jail {
    Entered(UserNamespace),
    /// A nested magus lives in the enclosing run's jail already.
    Inherited,
    Missing(JailUnavailable),
}

/// Compiles the view from the policy and enters it. Where namespaces are
/// refused the run goes on with Landlock, the syscall guard and no
/// capabilities, and says what is missing; a view that fails once the
/// namespaces exist ends the run, naming the failing step.
#[cfg(kernel_layer)]
fn enter_jail(
    policy: &Policy,
    env: &[(OsString, OsString)],
    diagnostics: &mut Vec<Diagnostic>,
    ahead: Option<Ahead>,
    proxy: &mut ProxySlot,
) -> Result<(Jail, Option<Watch>), Box<Diagnostic>> {
    let plan = JailPlan::compile(policy, &ViewInputs::from_env(env));
    if plan.search_truncated {
        diagnostics.push(search_truncated());
    }
    let made = ahead.map(Ahead::take).unwrap_or_default();
    // The original process stays in the host's namespaces and forks the
    // proxy when magus proper asks, at the spell's first launch.
    let outside = proxy
        .defer()?
        .map(|launcher| Box::new(launcher) as Box<dyn enforce::jail::Outside>);
    match enforce::jail::enter_with(&plan, userns_request(env), made, outside) {
        JailStatus::Entered { user_namespace } => Ok((Jail::Entered(user_namespace), None)),
        JailStatus::Unavailable { reason } if reason.leaves_process_usable() => {
            // No original process waits outside to fork the proxy: fork it
            // now, before `isolate` puts `sandbox.limits` on this process.
            proxy.undefer();
            proxy.start()?;
            // Nothing holds the protected paths read-only: noted now,
            // before any child exists, and put back after the run.
            let watch = Watch::before(plan.leftovers);
            Ok((Jail::Missing(reason), Some(watch)))
        }
        JailStatus::Unavailable { reason } => Err(Box::new(
            Diagnostic::error(format!("cannot build the jail: {reason}"))
                .with_note("no spell ran")
                .with_help(format!(
                    "`{USERNS_VAR}=0` runs without the jail (every run then says what is missing)"
                )),
        )),
    }
}

/// The repository search hit its limit: say so, every run, since deeper
/// hooks and config stay writable for children.
#[cfg(kernel_layer)]
fn search_truncated() -> Diagnostic {
    Diagnostic::warning(format!(
        "the search for git repositories in writable grants stopped after {} directories: \
         the hooks and config of deeper repositories are not protected from children",
        enforce::jail::protect::MAX_DIRS
    ))
    .with_help("grant narrower `rw` directories in magus.yaml")
}

/// `MAGUS_SANDBOX_USERNS=0` behaves as a kernel that refuses user
/// namespaces (for testing the fallback).
#[cfg(kernel_layer)]
pub(super) fn userns_request(env: &[(OsString, OsString)]) -> UsernsRequest {
    UsernsRequest::from_env_value(crate::policy::lookup(env, USERNS_VAR))
}

/// The warning said at every run when part of the sandbox is not in force:
/// Landlock rights the kernel lacks, no jail (and so no PID namespace).
#[cfg(kernel_layer)]
pub(super) fn partial_enforcement(
    landlock: &LandlockStatus,
    jail: &Jail,
    sockets: &UnixSockets,
) -> Option<Diagnostic> {
    let mut missing = Vec::new();
    let mut help = Vec::new();
    if let LandlockStatus::Enforced { abi, unenforced } = landlock {
        let rights: Vec<String> = unenforced
            .iter()
            .filter(|u| !covered_by_jail(u, jail))
            .map(ToString::to_string)
            .collect();
        if !rights.is_empty() {
            missing.push(format!("Landlock ABI {abi} lacks: {}", rights.join(", ")));
            help.push("a newer kernel enforces the missing Landlock rights".to_string());
        }
    }
    if let Jail::Missing(reason) = jail {
        missing.push(format!(
            "no jail ({reason}): children see the host's filesystem outside the grants \
             (unix sockets in /tmp and /run/user, other terminals in /dev/pts, other \
             sessions' /tmp and /dev/shm files, metadata of ungranted paths), \
             every process in /proc with its command line (no PID namespace), \
             and protected paths inside writable grants; {}",
            unjailed_refusals(sockets)
        ));
        help.push(jail_help(reason));
    }
    if let Jail::Entered(UserNamespace::NotNeeded) = jail {
        missing.push(
            "no user namespace (refused to root): the jail's mounts are not locked; \
             children hold no capability and the syscall guard refuses mount and umount, \
             so they cannot peel them"
                .to_string(),
        );
        help.push(
            "allow user namespaces for root (sysctl user.max_user_namespaces > 0)".to_string(),
        );
    }
    if missing.is_empty() {
        return None;
    }
    Some(
        Diagnostic::warning(format!(
            "the sandbox is only partly in force: {}",
            missing.join("; ")
        ))
        .with_help(help.join("; ")),
    )
}

/// What the syscall guard refuses children where there is no jail, and
/// what stays open to them for want of it.
#[cfg(kernel_layer)]
fn unjailed_refusals(sockets: &UnixSockets) -> String {
    const IPC: &str = "System V IPC, POSIX message queues and keyrings";
    match sockets {
        UnixSockets::Refused => format!(
            "unix sockets (stream socketpairs aside), {IPC} are refused instead, \
             except a socket magus.yaml grants by name"
        ),
        UnixSockets::OpenedBy(path) => format!(
            "{IPC} are refused instead; unix sockets are not, because magus.yaml grants \
             the socket {}, and seccomp cannot tell one socket from another: children can \
             reach every socket the user can (tmux, ssh-agent, the session bus)",
            path.display()
        ),
        UnixSockets::Confined => {
            format!("{IPC} are refused instead, and Landlock keeps unix sockets to the grants")
        }
    }
}

/// What the jail makes up for: without `resolve_unix` (ABI 9) Landlock
/// lets a child connect to any pathname socket it can name, but in the
/// jail only sockets inside the grants exist.
#[cfg(kernel_layer)]
fn covered_by_jail(missing: &Unenforced, jail: &Jail) -> bool {
    let jailed = matches!(jail, Jail::Entered(_) | Jail::Inherited);
    jailed
        && matches!(
            missing,
            Unenforced::FsRight {
                name: "resolve_unix",
                ..
            }
        )
}

#[cfg(kernel_layer)]
fn jail_help(reason: &JailUnavailable) -> String {
    match reason {
        JailUnavailable::UsernsForcedOff => {
            format!("unset {USERNS_VAR} (it is meant for testing)")
        }
        JailUnavailable::Unshare(_) | JailUnavailable::IdMap(_) => {
            "allow user namespaces for magus: install contrib/apparmor/magus \
             (README, \"User namespaces\"), or set the sysctl \
             kernel.apparmor_restrict_unprivileged_userns=0 / \
             kernel.unprivileged_userns_clone=1"
                .to_string()
        }
        _ => "`magus sandbox check` shows the kernel's state".to_string(),
    }
}

/// MGS2012, at every run: `deny` enforced by the seccomp fallback, or port
/// lists on a kernel whose Landlock cannot restrict TCP ports.
#[cfg(kernel_layer)]
pub fn network_fallback(plan: NetworkPlan, landlock: &LandlockStatus) -> Option<Diagnostic> {
    match plan {
        NetworkPlan::UnixSocketsOnly { why } => Some(deny_by_seccomp(why)),
        NetworkPlan::TcpPorts { .. } if !landlock_restricts_tcp(landlock) => {
            Some(ports_unenforced(landlock))
        }
        _ => None,
    }
}

#[cfg(kernel_layer)]
fn landlock_restricts_tcp(landlock: &LandlockStatus) -> bool {
    match landlock {
        LandlockStatus::Enforced { unenforced, .. } => !unenforced
            .iter()
            .any(|u| matches!(u, Unenforced::Network { .. })),
        LandlockStatus::Unavailable { .. } => false,
    }
}

#[cfg(kernel_layer)]
fn deny_by_seccomp(why: NetnsUnavailable) -> Diagnostic {
    Diagnostic::warning(format!(
        "`network: deny` is enforced by seccomp, not a network namespace ({why})"
    ))
    .with_code(Code::Mgs2012)
    .with_note("children can create no socket but AF_UNIX, loopback included, and cannot use io_uring")
    .with_help("allow unprivileged user namespaces for magus (`magus explain MGS2012` shows how) to get a loopback-only namespace instead")
}

#[cfg(kernel_layer)]
fn ports_unenforced(landlock: &LandlockStatus) -> Diagnostic {
    let why = match landlock.abi() {
        Some(abi) => format!("Landlock ABI {abi} has no TCP rights; they need ABI 4, Linux 6.7"),
        None => "Landlock is unavailable".to_string(),
    };
    Diagnostic::warning(format!(
        "the TCP port lists of `network:` are not enforced ({why})"
    ))
    .with_code(Code::Mgs2012)
    .with_note("children may connect to and bind any TCP port; UDP, ICMP, raw, packet and MPTCP sockets, TCP Fast Open and io_uring stay refused (seccomp)")
    .with_help("run on Linux 6.7 or newer with Landlock enabled, or use `network: deny`")
}

/// Whether this magus was started from a sandboxed spell.
#[cfg(kernel_layer)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Nesting {
    Outermost,
    /// `MAGUS_SANDBOX_FINGERPRINT` is set (and matched, see `lock`).
    InsideMagus,
}

/// A nested magus skips the jail: it already lives in the enclosing run's,
/// whose syscall guard refuses new namespaces and mounts anyway.
#[cfg(kernel_layer)]
fn nesting(env: &[(OsString, OsString)]) -> Nesting {
    match crate::policy::lookup(env, FINGERPRINT_VAR) {
        Some(_) => Nesting::InsideMagus,
        None => Nesting::Outermost,
    }
}

/// `MAGUS_SANDBOX_LANDLOCK=0` forces interpreter-only mode.
#[cfg(kernel_layer)]
pub(crate) fn landlock_request(env: &[(OsString, OsString)]) -> LandlockRequest {
    let value = env.iter().find(|(k, _)| k == "MAGUS_SANDBOX_LANDLOCK");
    LandlockRequest::from_env_value(value.map(|(_, v)| v.as_os_str()))
}

/// MGS2005: said once, at startup, whenever no kernel domain is in force.
#[cfg(kernel_layer)]
pub fn landlock_unavailable(reason: Unavailable) -> Diagnostic {
    Diagnostic::warning(format!(
        "Landlock is unavailable ({reason}): only the interpreter-level gate is in force"
    ))
    .with_code(Code::Mgs2005)
    .with_note("spells' fs.*, sh.* and env.* are still checked, but programs they start are not confined by the kernel")
    .with_help("run on Linux 5.13 or newer with Landlock enabled (`magus sandbox check` shows the kernel's state)")
}

/// Without the kernel layer nothing confines children: MGS2005 is said at
/// every sandboxed run, as where Landlock is missing.
#[cfg(not(kernel_layer))]
fn interpreter_only_domain(policy: &Policy, diagnostics: &mut Vec<Diagnostic>) -> Domain {
    if policy.state() == SandboxState::On {
        diagnostics.push(interpreter_only());
    }
    Domain::interpreter_only()
}

/// MGS2005 of a magus built without the kernel layer: the platform, and
/// what is and is not confined.
#[cfg(not(kernel_layer))]
pub fn interpreter_only() -> Diagnostic {
    Diagnostic::warning(format!(
        "no kernel confinement on {}: only the interpreter layer is in force",
        enforce::platform()
    ))
    .with_code(Code::Mgs2005)
    .with_note("children can read any file you can; only fs.* is confined")
    .with_note("sh.* still refuses programs outside the grants and children get only the allowed environment; `network:` and `sandbox.limits` are not enforced")
    .with_help("run spells you do not trust on Linux, with a magus built with the default `kernel` feature (Landlock and the jail)")
}

/// Step 4: the spell runs with the gated bindings, from the workspace root,
/// on the interpreter's own large stack (`Installed::enter` put it there).
fn execute(runtime: &Runtime, spells: Vec<(PathBuf, String)>, job: Job) -> i32 {
    match job {
        Job::Run { args, .. } => {
            let Some((path, source)) = spells.into_iter().next() else {
                return EXIT_CONFIG;
            };
            match runtime.run(&Spell { path, source }, args) {
                Ok(status) => status,
                Err(e) => {
                    runtime.sink()(e.diagnostic());
                    e.exit_status()
                }
            }
        }
        Job::Test { filter, .. } => {
            let run = super::test::TestRun {
                workspace: runtime.policy().workspace(),
                filter: filter.as_deref(),
            };
            super::test::run_tests(
                &spells,
                &run,
                |file| runtime.interpreter(file),
                runtime.sink(),
            )
        }
    }
}

/// The interpreter's heap budget: `limits.memory` with the sandbox on,
/// else the default; never more than a quarter of an `RLIMIT_DATA` magus was
/// started under (a nested run inherits its parent's `limits.memory`),
/// since a budget is checked between steps and one step may double a
/// value (old and new held at once: three times the budget), while the
/// rlimit would abort the allocation itself.
pub(crate) fn heap_budget(policy: &Policy) -> usize {
    let declared = match (policy.state(), policy.limits().memory) {
        (SandboxState::On, Some(bytes)) => usize::try_from(bytes).unwrap_or(usize::MAX),
        _ => crate::buzz::heap::DEFAULT_HEAP_BUDGET,
    };
    let inherited = crate::buzz::stack::data_limit_over(4);
    declared.min(inherited)
}
