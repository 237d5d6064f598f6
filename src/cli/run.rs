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
//!    a loopback-only network namespace, drop every capability, install the
//!    syscall guard (seccomp, with the network rules), then Landlock — all
//!    on the lone main thread. The process that waits for magus (the
//!    namespace's init, or a subreaper where no namespace can be made)
//!    kills whatever is left when magus ends, and holds `sandbox.limits`
//!    (see `isolate`).
//! 4. Run the spell with the gated bindings.

use super::report::{startup_report, ReportInput, StartupReport};
use super::spells::{read_spell, SpellError};
use super::{declare, GlobalArgs, EXIT_CANNOT_RUN, EXIT_CONFIG, EXIT_DENIED, EXIT_SPELL_FAILED};
use crate::bindings::{self, Session};
use crate::buzz::{BuzzError, Interpreter};
use crate::diag::{render, Code, Diagnostic, Renderer};
use crate::enforce::gate::{Gate, HiddenPrograms};
use crate::enforce::jail::UserNamespace;
use crate::enforce::jail::USERNS_VAR;
use crate::enforce::landlock::{Unavailable, Unenforced};
use crate::enforce::limits::{OwnUserNamespace, ProcessBound};
use crate::enforce::network::{NetnsUnavailable, NetworkPlan};
use crate::enforce::proxy::Proxy;
use crate::enforce::seccomp::GuardMode;
use crate::enforce::{
    self, Domain, JailPlan, JailStatus, JailUnavailable, LandlockRequest, LandlockStatus,
    ReexecState, SyscallGuard, UsernsRequest, ViewInputs,
};
use crate::policy::limits::Seconds;
use crate::policy::Limits;
use crate::policy::{
    effective_fingerprint, Access, ChildEnv, Declared, Network, NormalPath, Policy, SandboxState,
    DAEMON_SOCKET_VAR, FINGERPRINT_VAR,
};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Variables magus itself needs after the re-exec, to resolve the same
/// policy and colour its diagnostics as asked; they are no secret, and
/// children still do not get them.
const KEPT_FOR_MAGUS: [&str; 3] = ["TMPDIR", "XDG_CACHE_HOME", "CLICOLOR_FORCE"];

/// What to do once the sandbox is up: run one spell's `main`, or the
/// `test` blocks of some spells (all of them when none is named).
pub(super) enum Job {
    Run { spell: String, args: Vec<String> },
    Test { spells: Vec<String> },
}

/// Does `job` in the sandbox; returns the exit status.
pub(super) fn run(
    global: &GlobalArgs,
    env: &[(OsString, OsString)],
    reexec: Option<ReexecState>,
    job: Job,
) -> i32 {
    let renderer = Renderer::new(global.message_format);
    let declared = match declare(global, env) {
        Ok(declared) => declared,
        Err(status) => return status,
    };
    if reexec.is_none() {
        if let Some(child_env) = scrubbed_before_resolution(&declared, env) {
            return reexec_scrubbed(env, &child_env, &renderer);
        }
    }
    let startup = declared.resolve(env);
    let policy = startup.policy;
    if let Err(d) = super::lock::verify_for_run(&policy, env) {
        renderer.emit(&d);
        return EXIT_CONFIG;
    }
    let spells = match read_spells(policy.workspace(), &job) {
        Ok(found) => found,
        Err(e) => {
            renderer.emit(&e.diagnostic);
            return e.status;
        }
    };
    let mut child_env = match policy.state() {
        SandboxState::On => policy.child_env(env),
        SandboxState::Off => unsandboxed_env(env),
    };
    super::hosts::inherit_outer_proxy(&policy, env, &mut child_env);
    if policy.state() == SandboxState::On {
        if let Err(d) = keep_inherited_descriptors() {
            renderer.emit(&d);
            return EXIT_CONFIG;
        }
        match reexec {
            // Decided in step 1 already; this only guards against a
            // secret-bearing environment ever reaching a spell.
            None if needs_reexec(&child_env) => return reexec_scrubbed(env, &child_env, &renderer),
            None => {}
            Some(state) => restore_stripped(&mut child_env, state),
        }
        give_temporary_directory(&policy, env, &mut child_env);
    }
    export_fingerprint(&policy, &mut child_env);
    // hosts: netns listener (issue #17 + #12). The proxy's listeners are
    // created here, on the host's loopback, and its process is forked
    // before any restriction (and before the jail's namespaces). Once the
    // children's network namespace carries `hosts` too, create them inside
    // it instead (see the README's "Network by host name").
    let proxy = match super::hosts::start(&policy, env, &mut child_env) {
        Ok(proxy) => proxy,
        Err(d) => {
            renderer.emit(&d);
            return EXIT_CONFIG;
        }
    };
    // Before Landlock, which does not grant /dev/ptmx.
    bindings::prepare_terminal(global.message_format);
    let mut resolution = startup.diagnostics;
    // Before the jail hides the ungranted PATH directories.
    let hidden = match policy.state() {
        SandboxState::On => HiddenPrograms::snapshot(&policy, child_path(&child_env)),
        SandboxState::Off => HiddenPrograms::default(),
    };
    let network = super::hosts::landlock_network(&policy, proxy.as_ref());
    let domain = match confine(&policy, &network, env, &renderer, &mut resolution) {
        Ok(domain) => domain,
        Err(d) => {
            renderer.emit(&d);
            return EXIT_CONFIG;
        }
    };
    resolution.extend(super::hosts::partial_mode(&policy, domain.status().abi()));
    let report = startup_report(ReportInput {
        policy: &policy,
        config: startup.config.as_ref(),
        env,
        child_env: &child_env,
        resolution,
        verbosity: global.verbosity(),
    });
    for d in &report.now {
        renderer.emit(d);
    }
    let work = Work {
        policy,
        domain,
        proxy,
        hidden,
        child_env,
        report,
        spells,
        job,
        renderer,
    };
    match crate::buzz::stack::run_on_interpreter_stack(move || execute(work)) {
        Ok(status) => status,
        Err(e) => {
            renderer.emit(&Diagnostic::error(format!(
                "cannot start the interpreter thread: {e}"
            )));
            EXIT_CONFIG
        }
    }
}

/// The spells `job` names (every spell of the workspace for a bare
/// `magus test`), read before the sandbox closes.
fn read_spells(workspace: &Path, job: &Job) -> Result<Vec<(PathBuf, String)>, SpellError> {
    let names: Vec<String> = match job {
        Job::Run { spell, .. } => vec![spell.clone()],
        Job::Test { spells } if spells.is_empty() => {
            let mut all = super::spells::spell_files(&workspace.join("spells"));
            all.sort();
            all.into_iter().map(|(name, _)| name).collect()
        }
        Job::Test { spells } => spells.clone(),
    };
    names
        .iter()
        .map(|name| read_spell(workspace, name))
        .collect()
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
fn scrubbed_before_resolution(
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

fn needs_reexec(child_env: &ChildEnv) -> bool {
    !child_env.stripped.is_empty() || child_env.daemon_socket_withheld()
}

/// Replaces this process with one that holds only the scrubbed
/// environment; inherited descriptors above stderr are closed on exec.
fn reexec_scrubbed(env: &[(OsString, OsString)], child_env: &ChildEnv, renderer: &Renderer) -> i32 {
    if let Err(d) = keep_inherited_descriptors() {
        renderer.emit(&d);
        return EXIT_CONFIG;
    }
    let mut kept = child_env.vars.clone();
    kept.extend(
        env.iter()
            .filter(|(k, _)| KEPT_FOR_MAGUS.iter().any(|name| k == OsStr::new(name)))
            .cloned(),
    );
    let mut stripped: Vec<OsString> = child_env.stripped.iter().map(OsString::from).collect();
    if child_env.daemon_socket_withheld() {
        stripped.push(DAEMON_SOCKET_VAR.into());
    }
    let Err(e) = enforce::reexec_scrubbed(&kept, &stripped);
    renderer.emit(&Diagnostic::error(format!(
        "cannot re-execute magus with a scrubbed environment: {e}"
    )));
    EXIT_CONFIG
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
fn confine(
    policy: &Policy,
    network: &Network,
    env: &[(OsString, OsString)],
    renderer: &Renderer,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<Domain, Box<Diagnostic>> {
    if policy.state() == SandboxState::Off {
        return Ok(Domain::unconfined(Unavailable::ForcedOff));
    }
    let jail = match nesting(env) {
        Nesting::Outermost => isolate(policy, env, renderer, diagnostics)?,
        Nesting::InsideMagus => Jail::Inherited,
    };
    // The network step (issue #12): magus is in its user namespace and
    // still holds CAP_SYS_ADMIN and CAP_NET_ADMIN there (`lo` is brought
    // up), and the syscall guard does not yet refuse `unshare`; once per
    // run, never per child.
    let network_plan = enforce::network::enter(policy.network(), userns_request(env));
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
    let request = landlock_request(env);
    let domain = enforce::install_on_self(policy.grants(), network, request).map_err(|e| {
        Box::new(Diagnostic::error(format!(
            "cannot install the Landlock sandbox: {e}"
        )))
    })?;
    enforce::jail::wait_until_sealed().map_err(|reason| {
        Box::new(
            Diagnostic::error(format!("cannot build the jail: {reason}")).with_note("no spell ran"),
        )
    })?;
    if let LandlockStatus::Unavailable { reason } = domain.status() {
        diagnostics.push(landlock_unavailable(*reason));
    }
    diagnostics.extend(partial_enforcement(domain.status(), &jail));
    diagnostics.extend(network_fallback(network_plan, domain.status()));
    Ok(domain)
}

/// Step 3, first part: the jail (or, where namespaces are refused, the
/// subreaper that kills survivors), with `sandbox.limits` hooked in.
///
/// `enforce::limits` hooks: `prepare` here; `in_new_pid_namespace` and
/// `arm_deadline` in the jail's PID 1 (`jail::reaper`); `apply_to_self`
/// here, in magus proper; `apply_to_child` in `child::vfork`.
fn isolate(
    policy: &Policy,
    env: &[(OsString, OsString)],
    renderer: &Renderer,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<Jail, Box<Diagnostic>> {
    if !policy.limits().is_empty() {
        let over_time = over_time_diagnostic(policy.limits());
        enforce::limits::prepare(*policy.limits(), render(&over_time, renderer.format));
    }
    let jail = enter_jail(policy, env, diagnostics)?;
    let own_user_namespace = match &jail {
        Jail::Entered(UserNamespace::Created) => OwnUserNamespace::Yes,
        Jail::Entered(UserNamespace::NotNeeded) | Jail::Inherited => OwnUserNamespace::No,
        Jail::Missing(_) => {
            if let Err(e) = enforce::survivors::supervise_without_pid_namespace() {
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
fn over_time_diagnostic(limits: &Limits) -> Diagnostic {
    let wall = limits.wall_time.map_or(0, |d| d.as_secs());
    Diagnostic::error(format!(
        "the run exceeded sandbox.limits.wall_time ({}); magus and every process it started were killed",
        Seconds(wall)
    ))
    .with_help("raise `limits.wall_time` in magus.yaml (and re-lock) if the spell needs longer")
}

fn unenforced_processes() -> Diagnostic {
    Diagnostic::warning(
        "sandbox.limits.processes is not enforced: real root ignores RLIMIT_NPROC and this kernel keeps no per-namespace pid_max",
    )
    .with_help("run on Linux 6.14 or newer, or as an ordinary user")
}

/// What became of the jail for this run.
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
fn enter_jail(
    policy: &Policy,
    env: &[(OsString, OsString)],
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<Jail, Box<Diagnostic>> {
    let plan = JailPlan::compile(policy, &ViewInputs::from_env(env));
    if plan.search_truncated {
        diagnostics.push(search_truncated());
    }
    match enforce::jail::enter(&plan, userns_request(env)) {
        JailStatus::Entered { user_namespace } => Ok(Jail::Entered(user_namespace)),
        JailStatus::Unavailable { reason } if reason.leaves_process_usable() => {
            Ok(Jail::Missing(reason))
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
pub(super) fn userns_request(env: &[(OsString, OsString)]) -> UsernsRequest {
    UsernsRequest::from_env_value(crate::policy::lookup(env, USERNS_VAR))
}

/// The warning said at every run when part of the sandbox is not in force:
/// Landlock rights the kernel lacks, no jail (and so no PID namespace).
pub(super) fn partial_enforcement(landlock: &LandlockStatus, jail: &Jail) -> Option<Diagnostic> {
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
             every process in /proc, and protected paths inside writable grants; \
             System V IPC and keyrings are refused instead"
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

/// What the jail makes up for: without `resolve_unix` (ABI 9) Landlock
/// lets a child connect to any pathname socket it can name, but in the
/// jail only sockets inside the grants exist.
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
pub fn network_fallback(plan: NetworkPlan, landlock: &LandlockStatus) -> Option<Diagnostic> {
    match plan {
        NetworkPlan::UnixSocketsOnly { why } => Some(deny_by_seccomp(why)),
        NetworkPlan::TcpPorts { .. } if !landlock_restricts_tcp(landlock) => {
            Some(ports_unenforced(landlock))
        }
        _ => None,
    }
}

fn landlock_restricts_tcp(landlock: &LandlockStatus) -> bool {
    match landlock {
        LandlockStatus::Enforced { unenforced, .. } => !unenforced
            .iter()
            .any(|u| matches!(u, Unenforced::Network { .. })),
        LandlockStatus::Unavailable { .. } => false,
    }
}

fn deny_by_seccomp(why: NetnsUnavailable) -> Diagnostic {
    Diagnostic::warning(format!(
        "`network: deny` is enforced by seccomp, not a network namespace ({why})"
    ))
    .with_code(Code::Mgs2012)
    .with_note("children can create no socket but AF_UNIX, loopback included, and cannot use io_uring")
    .with_help("allow unprivileged user namespaces for magus (`magus explain MGS2012` shows how) to get a loopback-only namespace instead")
}

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
pub(super) fn landlock_request(env: &[(OsString, OsString)]) -> LandlockRequest {
    let value = env.iter().find(|(k, _)| k == "MAGUS_SANDBOX_LANDLOCK");
    LandlockRequest::from_env_value(value.map(|(_, v)| v.as_os_str()))
}

/// MGS2005: said once, at startup, whenever no kernel domain is in force.
pub fn landlock_unavailable(reason: Unavailable) -> Diagnostic {
    Diagnostic::warning(format!(
        "Landlock is unavailable ({reason}): only the interpreter-level gate is in force"
    ))
    .with_code(Code::Mgs2005)
    .with_note("spells' fs.*, sh.* and env.* are still checked, but programs they start are not confined by the kernel")
    .with_help("run on Linux 5.13 or newer with Landlock enabled (`magus sandbox check` shows the kernel's state)")
}

/// Everything step 4 needs, moved onto the interpreter's thread.
struct Work {
    policy: Policy,
    domain: Domain,
    proxy: Option<Proxy>,
    hidden: HiddenPrograms,
    child_env: ChildEnv,
    report: StartupReport,
    spells: Vec<(PathBuf, String)>,
    job: Job,
    renderer: Renderer,
}

/// Step 4: the spell runs with the gated bindings, from the workspace root,
/// on the interpreter's own large stack.
fn execute(work: Work) -> i32 {
    let Work {
        policy,
        domain,
        proxy,
        hidden,
        child_env,
        report,
        spells,
        job,
        renderer,
    } = work;
    let workspace = policy.workspace().to_path_buf();
    let heap_budget = heap_budget(&policy);
    if let Err(e) = std::env::set_current_dir(&workspace) {
        let message = format!("cannot enter the workspace {}: {e}", workspace.display());
        renderer.emit(&Diagnostic::error(message));
        return EXIT_CONFIG;
    }
    let gate = Gate::new(Rc::new(policy), workspace).with_hidden_programs(hidden);
    let sink: bindings::DiagnosticSink = Rc::new(move |d: &Diagnostic| renderer.emit(d));
    let session = Session::new(
        gate,
        domain,
        child_env.vars,
        report.at_first_launch,
        sink.clone(),
    );
    let session = Rc::new(session.with_shim_notes(report.at_shim).with_egress(proxy));
    let interpreter = |file: &Path| {
        Interpreter::new(file, bindings::modules(&session))
            .with_loader(bindings::source_loader(&session))
            .with_libraries(bindings::libraries())
            .with_stack_budget(crate::buzz::stack::stack_budget(
                crate::buzz::stack::interpreter_stack(),
            ))
            .with_heap_budget(heap_budget)
    };
    let status = match job {
        Job::Run { args, .. } => {
            let Some((file, source)) = spells.first() else {
                return EXIT_CONFIG;
            };
            let program = match crate::buzz::parse(file, source) {
                Ok(program) => program,
                Err(e) => {
                    sink(&e.to_diagnostic());
                    return EXIT_CANNOT_RUN;
                }
            };
            match interpreter(file).run(&program, args) {
                Ok(status) => spell_status(status, &sink),
                Err(e) => failed(&e, &sink),
            }
        }
        Job::Test { .. } => super::test::run_tests(&spells, interpreter, &sink),
    };
    let options = crate::diag::output_options();
    super::hosts::finish(&session, options.format, options.verbosity, &*sink);
    status
}

/// The spell's own status, which must fit an exit status.
fn spell_status(status: i32, sink: &bindings::DiagnosticSink) -> i32 {
    if (0..=255).contains(&status) {
        return status;
    }
    sink(
        &Diagnostic::error(format!("the spell's status {status} is not an exit status"))
            .with_note("`main` (or `std.exit`) gave a status outside 0-255")
            .with_help("return a status from 0 to 255 (0 for success)"),
    );
    EXIT_SPELL_FAILED
}

/// The interpreter's heap budget: `limits.memory` with the sandbox on,
/// else the default; never more than a quarter of an `RLIMIT_DATA` magus was
/// started under (a nested run inherits its parent's `limits.memory`),
/// since a budget is checked between steps and one step may double a
/// value (old and new held at once: three times the budget), while the
/// rlimit would abort the allocation itself.
fn heap_budget(policy: &Policy) -> usize {
    let declared = match (policy.state(), policy.limits().memory) {
        (SandboxState::On, Some(bytes)) => usize::try_from(bytes).unwrap_or(usize::MAX),
        _ => crate::buzz::heap::DEFAULT_HEAP_BUDGET,
    };
    let inherited = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_DATA)
        .map_or(usize::MAX, |(soft, _)| {
            usize::try_from(soft / 4).unwrap_or(usize::MAX)
        });
    declared.min(inherited)
}

/// Reports why the spell stopped and picks the exit status.
fn failed(error: &BuzzError, sink: &bindings::DiagnosticSink) -> i32 {
    let diagnostic = error.to_diagnostic();
    sink(&diagnostic);
    match diagnostic.code {
        Some(Code::Mgs2001 | Code::Mgs2002 | Code::Mgs2007) => EXIT_DENIED,
        _ => EXIT_SPELL_FAILED,
    }
}
