//! `magus run`: the startup sequence that puts a spell in the sandbox, in
//! the only order that works.
//!
//! 1. Resolve the policy (before anything is restricted, so `magus.yaml`
//!    and `$HOME` can still be read) and verify it against `magus.lock` and
//!    an enclosing run's `MAGUS_SANDBOX_FINGERPRINT` (MGS2010).
//! 2. Mark every inherited descriptor above stderr close-on-exec (a parent
//!    may have left one open on a secret), then re-execute with the scrubbed
//!    environment, so `/proc/<magus>/environ` holds no secret (DESIGN §6).
//! 3. Enter a private PID namespace (mounting `/proc` is impossible once
//!    Landlock is on, so a nested magus keeps the enclosing run's), drop the
//!    capabilities that reach past Landlock, install the syscall guard
//!    (seccomp), then Landlock — all on the lone main thread. The process
//!    that waits for magus (the namespace's init, or a subreaper where no
//!    namespace can be made) kills whatever is left when magus ends, and
//!    holds `sandbox.limits` (see `isolate`).
//! 4. Run the spell with the gated bindings.

use super::{load, GlobalArgs, EXIT_CONFIG, EXIT_DENIED, EXIT_SPELL_FAILED};
use crate::bindings::{self, Session};
use crate::buzz::{BuzzError, Interpreter};
use crate::diag::{render, Code, Diagnostic, Renderer};
use crate::enforce::gate::Gate;
use crate::enforce::landlock::Unavailable;
use crate::enforce::limits::{OwnUserNamespace, ProcessBound};
use crate::enforce::pidns::UserNamespace;
use crate::enforce::{
    self, Domain, LandlockRequest, LandlockStatus, PidIsolation, ReexecState, SyscallGuard,
};
use crate::policy::limits::Seconds;
use crate::policy::shims::find_shims;
use crate::policy::{
    effective_fingerprint, Access, ChildEnv, Limits, NormalPath, Policy, SandboxState,
    DAEMON_SOCKET_VAR, FINGERPRINT_VAR,
};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Variables magus itself needs to resolve the same policy after the
/// re-exec; they are no secret, and children still do not get them.
const KEPT_FOR_MAGUS: [&str; 2] = ["TMPDIR", "XDG_CACHE_HOME"];

/// Runs the spell `spell` with `args`; returns the exit status.
pub(super) fn run(
    global: &GlobalArgs,
    env: &[(OsString, OsString)],
    reexec: Option<ReexecState>,
    spell: &str,
    args: Vec<String>,
) -> i32 {
    let renderer = Renderer::new(global.message_format);
    let startup = match load(global, env) {
        Ok(startup) => startup,
        Err(status) => return status,
    };
    let policy = startup.policy;
    if let Err(d) = super::lock::verify_for_run(&policy, env) {
        renderer.emit(&d);
        return EXIT_CONFIG;
    }
    let (file, source) = match read_spell(&policy.workspace, spell) {
        Ok(found) => found,
        Err(d) => {
            renderer.emit(&d);
            return EXIT_CONFIG;
        }
    };
    let mut child_env = match policy.state {
        SandboxState::On => policy.child_env(env),
        SandboxState::Off => unsandboxed_env(env),
    };
    if policy.state == SandboxState::On {
        if let Err(d) = keep_inherited_descriptors() {
            renderer.emit(&d);
            return EXIT_CONFIG;
        }
        match reexec {
            None if needs_reexec(&child_env) => return reexec_scrubbed(env, &child_env, &renderer),
            None => {}
            Some(state) => restore_stripped(&mut child_env, state),
        }
    }
    export_fingerprint(&policy, &mut child_env);
    let mut diagnostics = startup.diagnostics;
    let domain = match confine(&policy, env, &renderer, &mut diagnostics) {
        Ok(domain) => domain,
        Err(d) => {
            renderer.emit(&d);
            return EXIT_CONFIG;
        }
    };
    if policy.state == SandboxState::On {
        diagnostics.extend(shim_warnings(&policy, env, &child_env.stripped));
    }
    for d in &diagnostics {
        renderer.emit(d);
    }
    execute(policy, domain, child_env, &file, &source, args, renderer)
}

/// Step 2, first half: descriptors magus inherited above stderr reach no
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

/// The spell's path and source: `spells/NAME.buzz`, or a path to a file.
fn read_spell(workspace: &Path, spell: &str) -> Result<(PathBuf, String), Box<Diagnostic>> {
    let path = if spell.ends_with(".buzz") || spell.contains('/') {
        PathBuf::from(spell)
    } else {
        workspace.join("spells").join(format!("{spell}.buzz"))
    };
    let source = std::fs::read(&path).map_err(|e| {
        Diagnostic::error(format!(
            "cannot read spell `{spell}` at {}: {e}",
            path.display()
        ))
        .with_help("`magus list` shows the spells of this workspace")
    })?;
    let source = String::from_utf8(source).map_err(|e| {
        Box::new(Diagnostic::error(format!(
            "spell {} is not valid UTF-8 (first bad byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        )))
    })?;
    Ok((path, source))
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

fn needs_reexec(child_env: &ChildEnv) -> bool {
    !child_env.stripped.is_empty() || child_env.daemon_socket_withheld()
}

/// Replaces this process with one that holds only the scrubbed environment.
fn reexec_scrubbed(env: &[(OsString, OsString)], child_env: &ChildEnv, renderer: &Renderer) -> i32 {
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

/// Step 3 of the module doc: PID namespace, capabilities, syscall guard,
/// Landlock.
fn confine(
    policy: &Policy,
    env: &[(OsString, OsString)],
    renderer: &Renderer,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<Domain, Box<Diagnostic>> {
    if policy.state == SandboxState::Off {
        return Ok(Domain::unconfined(Unavailable::ForcedOff));
    }
    if nesting(env) == Nesting::Outermost {
        isolate(policy, renderer, diagnostics);
    }
    enforce::capabilities::drop_kernel_capabilities().map_err(|e| {
        Box::new(Diagnostic::error(format!(
            "cannot drop the capabilities that reach past Landlock: {e}"
        )))
    })?;
    let guard = SyscallGuard::build().and_then(|g| g.install_on_self());
    guard.map_err(|e| {
        Box::new(Diagnostic::error(format!(
            "cannot install the syscall guard: {e}"
        )))
    })?;
    let request = landlock_request(env);
    let domain =
        enforce::install_on_self(&policy.grants, &policy.network, request).map_err(|e| {
            Box::new(Diagnostic::error(format!(
                "cannot install the Landlock sandbox: {e}"
            )))
        })?;
    if let LandlockStatus::Unavailable { reason } = domain.status() {
        diagnostics.push(landlock_unavailable(*reason));
    }
    Ok(domain)
}

/// Step 3, first part: the PID namespace (or, where it is refused, the
/// subreaper that kills survivors), with `sandbox.limits` hooked in.
///
/// `enforce::limits` hooks: `prepare` here; `in_new_pid_namespace` and
/// `arm_deadline` in `pidns` (the namespace's init); `apply_to_self` here,
/// in magus proper; `apply_to_child` in `child::vfork`.
fn isolate(policy: &Policy, renderer: &Renderer, diagnostics: &mut Vec<Diagnostic>) {
    if !policy.limits.is_empty() {
        let over_time = over_time_diagnostic(&policy.limits);
        enforce::limits::prepare(policy.limits, render(&over_time, renderer.format));
    }
    let own_user_namespace = match enforce::enter_private_pid_namespace() {
        PidIsolation::PrivateNamespace {
            user_namespace: UserNamespace::Created,
        } => OwnUserNamespace::Yes,
        PidIsolation::PrivateNamespace { .. } => OwnUserNamespace::No,
        PidIsolation::Unavailable { .. } => {
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

/// Whether this magus was started from a sandboxed spell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Nesting {
    Outermost,
    /// `MAGUS_SANDBOX_FINGERPRINT` is set (and matched, see `lock`).
    InsideMagus,
}

/// A nested magus skips the PID namespace step: it already lives in the
/// enclosing run's namespace, and inside its Landlock domain `mount(2)` of
/// a new `/proc` is refused after the namespace is unshared, which would
/// leave a namespace whose init has died (every later `fork` fails with
/// `ENOMEM`).
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

/// MGS2006 warnings for version-manager shims on the child `PATH`.
pub(super) fn shim_warnings(
    policy: &Policy,
    env: &[(OsString, OsString)],
    stripped: &[String],
) -> Vec<Diagnostic> {
    let Some((_, path_var)) = env.iter().find(|(k, _)| k == "PATH") else {
        return Vec::new();
    };
    let home = env
        .iter()
        .find(|(k, _)| k == "HOME")
        .map(|(_, v)| PathBuf::from(v));
    let granted = |dir: &Path| {
        let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        NormalPath::new(real).is_ok_and(|real| policy.check(&real, Access::Execute).is_allowed())
    };
    find_shims(path_var, stripped, granted)
        .iter()
        .map(|finding| finding.to_diagnostic(home.as_deref()))
        .collect()
}

/// Step 4: the spell runs with the gated bindings, from the workspace root.
fn execute(
    policy: Policy,
    domain: Domain,
    child_env: ChildEnv,
    file: &Path,
    source: &str,
    args: Vec<String>,
    renderer: Renderer,
) -> i32 {
    let workspace = policy.workspace.clone();
    let heap_budget = heap_budget(&policy);
    if let Err(e) = std::env::set_current_dir(&workspace) {
        let message = format!("cannot enter the workspace {}: {e}", workspace.display());
        renderer.emit(&Diagnostic::error(message));
        return EXIT_CONFIG;
    }
    let launch_notes = child_env.diagnostics();
    let gate = Gate::new(Rc::new(policy), workspace);
    let sink: bindings::DiagnosticSink = Rc::new(move |d: &Diagnostic| renderer.emit(d));
    let session = Rc::new(Session::new(
        gate,
        domain,
        child_env.vars,
        launch_notes,
        sink.clone(),
    ));
    let program = match crate::buzz::parse(file, source) {
        Ok(program) => program,
        Err(e) => return failed(&e, &sink),
    };
    let mut interpreter =
        Interpreter::new(file, bindings::modules(&session)).with_heap_budget(heap_budget);
    match interpreter.run(&program, args) {
        Ok(status) => status,
        Err(e) => failed(&e, &sink),
    }
}

/// The interpreter's heap budget: `limits.memory` with the sandbox on,
/// else the default; never more than a quarter of an `RLIMIT_DATA` magus was
/// started under (a nested run inherits its parent's `limits.memory`),
/// since a budget is checked between steps and one step may double a
/// value (old and new held at once: three times the budget), while the
/// rlimit would abort the allocation itself.
fn heap_budget(policy: &Policy) -> usize {
    let declared = match (policy.state, policy.limits.memory) {
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
