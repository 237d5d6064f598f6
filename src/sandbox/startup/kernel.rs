//! The start-up's kernel path (Linux, `cfg(kernel_layer)`): the scrubbing
//! re-exec, the namespaces made ahead, and step 3 of `startup` in order:
//! the jail (user, IPC, PID and mount namespaces and the view compiled
//! from the policy; mounting is impossible once Landlock is on, so a
//! nested magus keeps the enclosing run's), the loopback-only network
//! namespace of `network: deny` and `hosts` (with the proxy's listeners
//! made inside it), no capabilities, the syscall guard, then Landlock, all
//! on the lone main thread. The process that waits for magus (the
//! namespace's init, or a subreaper where no namespace can be made) kills
//! whatever is left when magus ends, and holds `sandbox.limits`.

use super::notices::{
    landlock_unavailable, network_fallback, over_processes_diagnostic, over_time_diagnostic,
    partial_enforcement, search_truncated, unenforced_processes,
};
use super::proxy_slot::{self, ProxySlot};
use super::secrets;
use crate::bindings::{Session, TempDirs};
use crate::diag::{render, Diagnostic, OutputOptions};
use crate::enforce::jail::ahead::{self, Ahead};
use crate::enforce::jail::{Building, Built, UserNamespace, USERNS_VAR};
use crate::enforce::leftovers::Watch;
use crate::enforce::limits::{LimitsPlan, OwnUserNamespace, ProcessBound};
use crate::enforce::network::NetworkPlan;
use crate::enforce::run_temp::RunTemp;
use crate::enforce::seccomp::GuardMode;
use crate::enforce::unix_sockets::UnixSockets;
use crate::enforce::{
    self, Domain, JailPlan, JailUnavailable, LandlockRequest, LandlockStatus, ReexecState,
    SyscallGuard, Unavailable, UsernsRequest, ViewInputs,
};
use crate::policy::{
    ChildEnv, Declared, Grant, Policy, SandboxState, DAEMON_SOCKET_VAR, FINGERPRINT_VAR,
};
use crate::proxy::Proxy;
use std::ffi::{OsStr, OsString};

/// The jail's namespaces being made ahead by a helper, from `load` to
/// `confine` (none: not wanted, or the helper could not start).
pub(crate) type StartedAhead = Option<Ahead>;

/// This run's own proxy, running or deferred to the jail's original
/// process (none without `network.hosts`, or in a nested run).
pub(crate) type RunProxy = Option<Proxy>;

/// What step 3 leaves: the kernel's domain, the run's proxy, whose
/// temporary directories children get, and the policy in force when it
/// is not the one resolved (a run with no jail of its own:
/// `Policy::without_jail`).
pub(crate) struct Confined {
    pub domain: Domain,
    pub proxy: RunProxy,
    pub temp_dirs: TempDirs,
    pub unjailed: Option<Policy>,
}

/// Step 1's re-exec, decided on the declared policy alone: when the
/// environment holds a secret, this process is replaced (and the call
/// does not return); the error says why it could not be.
pub(crate) fn reexec_before_resolution(
    declared: &Declared,
    env: &[(OsString, OsString)],
    reexec: Option<&ReexecState>,
) -> Result<(), Box<Diagnostic>> {
    if reexec.is_some() {
        return Ok(());
    }
    match scrubbed_before_resolution(declared, env) {
        Some(child_env) => {
            let kept = secrets::kept_for_magus(&declared.without_grants());
            Err(reexec_scrubbed(env, &child_env, &kept))
        }
        None => Ok(()),
    }
}

/// A nested run hands its children the enclosing run's proxy variables
/// (before the scrubbing re-exec's guard, so that they survive it).
pub(crate) fn inherit_outer_proxy(
    policy: &Policy,
    env: &[(OsString, OsString)],
    child_env: &mut ChildEnv,
) {
    proxy_slot::inherit_outer_proxy(policy, env, child_env);
}

/// With the sandbox on: no inherited descriptor reaches a child, and the
/// names the first process stripped are said again. The re-exec was
/// decided in `load` already; here it only guards against a
/// secret-bearing environment ever reaching a spell.
pub(crate) fn scrub_or_restore(
    env: &[(OsString, OsString)],
    child_env: &mut ChildEnv,
    reexec: Option<ReexecState>,
) -> Result<(), Box<Diagnostic>> {
    keep_inherited_descriptors()?;
    match reexec {
        None if needs_reexec(child_env) => Err(reexec_scrubbed(env, child_env, &[])),
        None => Ok(()),
        Some(state) => {
            restore_stripped(child_env, state);
            Ok(())
        }
    }
}

/// Step 3: the proxy decided (`network.hosts`; forked outside the jail
/// and before any restriction, by the jail's original process at the
/// first launch, see `enter_jail`), the kernel's confinement, and the
/// children pointed at the proxy.
pub(crate) fn confine(
    policy: &Policy,
    env: &[(OsString, OsString)],
    child_env: &mut ChildEnv,
    ahead: StartedAhead,
    output: OutputOptions,
    said: &mut Vec<Diagnostic>,
) -> Result<Confined, Box<Diagnostic>> {
    let prepared = prepare_secrets(policy, env)?;
    let vault = prepared.as_ref().map(|p| std::sync::Arc::clone(&p.vault));
    let mut slot = proxy_slot::wanted(policy, env, child_env, vault);
    let (domain, jail, unjailed) = confine_kernel(policy, &mut slot, env, ahead, output, said)?;
    let proxy = slot.into_running();
    proxy_slot::point_children(proxy.as_ref(), child_env);
    if let Some(prepared) = prepared {
        let secrets::Prepared {
            vault,
            placeholders,
            bundle,
        } = prepared;
        // magus proper's reference: the proxy (or the process that forks
        // it) holds its own; the last one dropped wipes the values.
        drop(vault);
        secrets::give_children(policy, &placeholders, &bundle, child_env)?;
    }
    // In a jail of its own, `/tmp`, `/dev/shm` and `$TMPDIR` are the run's;
    // without one, the directory made for it is.
    let own_temp = unjailed.as_ref().is_some_and(|p| p.run_temp().is_some());
    let temp_dirs = match jail {
        Some(Jail::Entered(_)) => TempDirs::PerRun,
        _ if own_temp => TempDirs::PerRun,
        _ => TempDirs::Host,
    };
    Ok(Confined {
        domain,
        proxy,
        temp_dirs,
        unjailed,
    })
}

/// Reads the secrets' values (before the jail) and makes the vault;
/// `None` for a spell without `secrets:`. Refused where the proxy could
/// be gone around: sandbox off, a nested run, no user namespaces.
fn prepare_secrets(
    policy: &Policy,
    env: &[(OsString, OsString)],
) -> Result<Option<secrets::Prepared>, Box<Diagnostic>> {
    use secrets::unsupported;
    if policy.secrets().is_empty() {
        return Ok(None);
    }
    if policy.state() != SandboxState::On {
        return Err(unsupported("the sandbox is off for this run"));
    }
    if nesting(env) == Nesting::InsideMagus {
        return Err(unsupported(
            "this magus runs inside another magus's sandbox, whose proxy it cannot give a secret to",
        ));
    }
    if userns_request(env) != UsernsRequest::Allowed {
        return Err(unsupported(
            "user namespaces are turned off for magus (MAGUS_SANDBOX_USERNS=0)",
        ));
    }
    secrets::prepare(policy, env).map(Some)
}

/// The MGS2005 a Landlock probe finds, or nothing when a domain would be
/// in force.
pub(crate) fn kernel_missing(policy: &Policy, env: &[(OsString, OsString)]) -> Option<Diagnostic> {
    let request = landlock_request(env);
    match enforce::landlock::probe(policy.network(), request) {
        LandlockStatus::Unavailable { reason } => Some(landlock_unavailable(reason)),
        LandlockStatus::Enforced { .. } => None,
    }
}

/// Variables magus itself needs after the re-exec, to resolve the same
/// policy and colour its diagnostics as asked; they are no secret, and
/// children still do not get them.
const KEPT_FOR_MAGUS: [&str; 3] = ["TMPDIR", "XDG_CACHE_HOME", "CLICOLOR_FORCE"];

/// Step 1: descriptors magus inherited above stderr reach no
/// child, nor the re-executed magus.
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

/// Step 1, decided on the declared policy alone, before anything is
/// resolved (the re-executed process resolves and checks everything
/// once): the environment to re-execute with, when one is needed.
fn scrubbed_before_resolution(
    declared: &Declared,
    env: &[(OsString, OsString)],
) -> Option<ChildEnv> {
    let policy = declared.without_grants();
    if policy.state() != SandboxState::On {
        return None;
    }
    let mut child_env = policy.child_env(env);
    proxy_slot::inherit_outer_proxy(&policy, env, &mut child_env);
    needs_reexec(&child_env).then_some(child_env)
}

/// `network: deny` and `hosts` in a run of its own (not nested): starts
/// making the jail's user and network namespaces on the other core while
/// the grants are resolved and the view planned (`jail::ahead`).
pub(crate) fn start_ahead(declared: &Declared, env: &[(OsString, OsString)]) -> StartedAhead {
    let policy = declared.without_grants();
    let wanted = policy.state() == SandboxState::On
        && enforce::network::needs_namespace(policy.network())
        && nesting(env) == Nesting::Outermost
        && userns_request(env) == UsernsRequest::Allowed;
    wanted.then(ahead::start).flatten()
}

fn needs_reexec(child_env: &ChildEnv) -> bool {
    !child_env.stripped.is_empty() || child_env.daemon_socket_withheld()
}

/// Replaces this process with one that holds only the scrubbed
/// environment; inherited descriptors above stderr are closed on exec.
fn reexec_scrubbed(
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
    // Read by magus for secrets by reference (`secrets::give_children`
    // keeps them from children).
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
/// Without a jail of its own, the run's policy withholds the host's
/// temporary directories (returned: the gate checks the same).
fn confine_kernel(
    policy: &Policy,
    proxy: &mut ProxySlot,
    env: &[(OsString, OsString)],
    ahead: StartedAhead,
    output: OutputOptions,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<(Domain, Option<Jail>, Option<Policy>), Box<Diagnostic>> {
    if policy.state() == SandboxState::Off {
        return Ok((Domain::unconfined(Unavailable::ForcedOff), None, None));
    }
    let setting = proxy_slot::network_setting(policy, proxy);
    let (jail, building, unjailed) = match nesting(env) {
        Nesting::Outermost => {
            // `deny` and `hosts`: the namespaces are being made ahead
            // (`start_ahead`), on the other core.
            isolate(policy, env, output, diagnostics, ahead, proxy)?
        }
        Nesting::InsideMagus => (Jail::Inherited, None, None),
    };
    let policy = unjailed.as_ref().unwrap_or(policy);
    // The network step (issue #12): magus is in its user namespace and
    // still holds CAP_SYS_ADMIN and CAP_NET_ADMIN there (`lo` is brought
    // up), and the syscall guard does not yet refuse `unshare`; once per
    // run, never per child. Where the jail was entered with the namespace
    // made ahead, magus was born in it and there is nothing to do. The
    // proxy's listeners are made right after, inside the namespace,
    // before seccomp refuses `listen`.
    let network_plan = enforce::network::enter(&setting, userns_request(env));
    if !policy.secrets().is_empty() && network_plan != NetworkPlan::ProxyNamespace {
        return Err(secrets::unsupported(
            "no network namespace could be made for the spell's programs (user namespaces are refused on this machine)",
        ));
    }
    let network = proxy_slot::listen(proxy, network_plan, &setting)?;
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
    let (ahead, in_view) = split_grants(policy, &jail, building.as_ref());
    let request = landlock_request(env);
    let open = |grant: &Grant| building.as_ref()?.open_on_host(&grant.path);
    let rules = enforce::landlock::begin(&ahead, &network, request, open);
    let built = building.map(Building::wait_until_built);
    let domain = rules
        .and_then(|r| r.finish(&in_view))
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
    built
        .map_or(Ok(()), Built::wait_until_sealed)
        .map_err(|reason| {
            Box::new(
                Diagnostic::error(format!("cannot build the jail: {reason}"))
                    .with_note("no spell ran"),
            )
        })?;
    proxy_slot::hand_over(proxy)?;
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
    diagnostics.extend(proxy_slot::partial_mode(
        network_plan,
        domain.status().abi(),
    ));
    Ok((domain, Some(jail), unjailed))
}

/// What children may do with unix sockets: nothing to add in the jail,
/// refused without it unless `magus.yaml` grants a socket.
pub(crate) fn unix_sockets(landlock: &LandlockStatus, jail: &Jail, policy: &Policy) -> UnixSockets {
    let jailed = !matches!(jail, Jail::Missing(_));
    enforce::unix_sockets::decide(jailed, landlock, policy.grants())
}

/// The grants whose Landlock rules can be made before the view is built
/// (it binds their host inode), and those made in the view: its own
/// mounts, and every grant where this run has no jail of its own. Without
/// any jail, `/dev/pts` is the host's: only the run's own terminals in it
/// are granted (`terminal::own_terminals_only`).
fn split_grants(
    policy: &Policy,
    jail: &Jail,
    building: Option<&Building>,
) -> (Vec<Grant>, Vec<Grant>) {
    if let Jail::Missing(_) = jail {
        let grants = policy.grants().to_vec();
        return (Vec::new(), enforce::terminal::own_terminals_only(grants));
    }
    if !building.is_some_and(Building::host_root_held) {
        return (Vec::new(), policy.grants().to_vec());
    }
    policy
        .grants()
        .iter()
        .cloned()
        .partition(|g| !enforce::jail::plan::fresh_in_view(g))
}

/// Step 3, first part: the jail (or, where namespaces are refused, the
/// subreaper that kills survivors, and the run's policy without the
/// host's temporary directories), with `sandbox.limits` hooked in.
///
/// The limits plan made here goes to the process that waits for magus:
/// the jail's PID 1 (`in_new_pid_namespace`, `arm_deadline`, in
/// `jail::reaper`) or the supervisor; `apply_to_self` here, in magus
/// proper, returns how `processes` is held; `apply_to_child` runs in
/// `child::vfork`.
fn isolate(
    policy: &Policy,
    env: &[(OsString, OsString)],
    output: OutputOptions,
    diagnostics: &mut Vec<Diagnostic>,
    ahead: Option<Ahead>,
    proxy: &mut ProxySlot,
) -> Result<(Jail, Option<Building>, Option<Policy>), Box<Diagnostic>> {
    let limits = policy.limits();
    // Rendered only where a wall time can run out.
    let over_time = match limits.wall_time {
        Some(_) => render(&over_time_diagnostic(limits), output.format),
        None => String::new(),
    };
    let plan = match proxy {
        ProxySlot::Absent => LimitsPlan::new(*limits, over_time),
        _ => LimitsPlan::new(*limits, over_time).reading_proxy_reports(),
    };
    let (jail, building, watch) =
        enter_jail(policy, env, diagnostics, ahead, proxy, output, &plan)?;
    let mut unjailed = None;
    let own_user_namespace = match &jail {
        Jail::Entered(UserNamespace::Created) => OwnUserNamespace::Yes,
        Jail::Entered(UserNamespace::NotNeeded) | Jail::Inherited => OwnUserNamespace::No,
        Jail::Missing(_) => {
            let over = over_processes_diagnostic(limits);
            let plan = plan.clone().supervised(render(&over, output.format));
            let watch = watch.unwrap_or_else(|| Watch::before(Default::default()));
            let run_temp = run_temp(env, diagnostics);
            unjailed = Some(policy.without_jail(run_temp.as_ref().map(|t| t.path().to_owned())));
            let supervised = enforce::survivors::supervise_without_pid_namespace(
                watch,
                run_temp.as_ref(),
                output,
                &plan,
            );
            if let Err(e) = supervised {
                diagnostics.push(Diagnostic::warning(format!(
                    "processes a spell starts may outlive the run: no PID namespace, and no supervisor ({e})"
                )));
            }
            OwnUserNamespace::No
        }
    };
    if enforce::limits::apply_to_self(&plan, own_user_namespace) == ProcessBound::Unenforced {
        diagnostics.push(unenforced_processes());
    }
    Ok((jail, building, unjailed))
}

/// The temporary directory of a run with no jail of its own, made under
/// the host's `$TMPDIR` (else `/tmp`); none, with a warning, when it
/// cannot be made (children then have no `$TMPDIR` they may write).
fn run_temp(env: &[(OsString, OsString)], diagnostics: &mut Vec<Diagnostic>) -> Option<RunTemp> {
    let parent = crate::policy::lookup(env, "TMPDIR").map(std::path::Path::new);
    RunTemp::make(parent)
        .map_err(|e| {
            diagnostics.push(Diagnostic::warning(format!(
                "cannot make a temporary directory for the run ({}): children have none they may write",
                e.desc()
            )));
        })
        .ok()
}

/// What became of the jail for this run.
pub(crate) enum Jail {
    Entered(UserNamespace),
    /// A nested magus lives in the enclosing run's jail already.
    Inherited,
    Missing(JailUnavailable),
}

/// Compiles the view from the policy and enters it. Where namespaces are
/// refused the run goes on with Landlock, the syscall guard and no
/// capabilities, and says what is missing; a view that fails once the
/// namespaces exist ends the run, naming the failing step.
fn enter_jail(
    policy: &Policy,
    env: &[(OsString, OsString)],
    diagnostics: &mut Vec<Diagnostic>,
    ahead: Option<Ahead>,
    proxy: &mut ProxySlot,
    output: OutputOptions,
    limits: &LimitsPlan,
) -> Result<(Jail, Option<Building>, Option<Watch>), Box<Diagnostic>> {
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
    let request = userns_request(env);
    match enforce::jail::enter_with(&plan, request, made, outside, output, limits) {
        Ok(building) => Ok((
            Jail::Entered(building.user_namespace()),
            Some(building),
            None,
        )),
        Err(reason) if reason.leaves_process_usable() => {
            // No original process waits outside to fork the proxy: fork it
            // now, before `isolate` puts `sandbox.limits` on this process.
            proxy.undefer();
            proxy.start()?;
            // Nothing holds the protected paths read-only: noted now,
            // before any child exists, and put back after the run.
            let watch = Watch::before(plan.leftovers);
            Ok((Jail::Missing(reason), None, Some(watch)))
        }
        Err(reason) => Err(Box::new(
            Diagnostic::error(format!("cannot build the jail: {reason}"))
                .with_note("no spell ran")
                .with_help(format!(
                    "`{USERNS_VAR}=0` runs without the jail (every run then says what is missing)"
                )),
        )),
    }
}

/// `MAGUS_SANDBOX_USERNS=0` behaves as a kernel that refuses user
/// namespaces (for testing the fallback).
pub(crate) fn userns_request(env: &[(OsString, OsString)]) -> UsernsRequest {
    UsernsRequest::from_env_value(crate::policy::lookup(env, USERNS_VAR))
}

/// Whether this magus was started from a sandboxed spell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Nesting {
    Outermost,
    /// `MAGUS_SANDBOX_FINGERPRINT` is set (and matched, see `lock`).
    InsideMagus,
}

/// A nested magus skips the jail: it already lives in the enclosing run's,
/// whose syscall guard refuses new namespaces and mounts anyway.
fn nesting(env: &[(OsString, OsString)]) -> Nesting {
    match crate::policy::lookup(env, FINGERPRINT_VAR) {
        Some(_) => Nesting::InsideMagus,
        None => Nesting::Outermost,
    }
}

/// `MAGUS_SANDBOX_LANDLOCK=0` forces interpreter-only mode.
pub(crate) fn landlock_request(env: &[(OsString, OsString)]) -> LandlockRequest {
    let value = env.iter().find(|(k, _)| k == "MAGUS_SANDBOX_LANDLOCK");
    LandlockRequest::from_env_value(value.map(|(_, v)| v.as_os_str()))
}

/// The run's session with its proxy, whose refusals `sh.*` reports.
pub(crate) fn with_proxy(session: Session, proxy: RunProxy) -> Session {
    session.with_egress(proxy)
}

/// The end of a run: the proxy stops and its summary is said.
pub(crate) fn finish(session: &Session, output: OutputOptions, emit: &dyn Fn(&Diagnostic)) {
    proxy_slot::finish(session, output.format, output.verbosity, emit);
}

/// The re-exec's own variables, taken out of the environment.
pub(crate) fn take_reexec_state() -> Option<ReexecState> {
    enforce::take_reexec_state()
}
