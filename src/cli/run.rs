//! `magus run`: the startup sequence that puts a spell in the sandbox, in
//! the only order that works.
//!
//! 1. Resolve the policy (before anything is restricted, so `magus.yaml`
//!    and `$HOME` can still be read) and verify it against `magus.lock` and
//!    an enclosing run's `MAGUS_SANDBOX_FINGERPRINT` (MGS2010).
//! 2. Mark every inherited descriptor above stderr close-on-exec (a parent
//!    may have left one open on a secret), then re-execute with the scrubbed
//!    environment, so `/proc/<magus>/environ` holds no secret.
//! 3. Enter a private PID namespace (mounting `/proc` is impossible once
//!    Landlock is on, so a nested magus keeps the enclosing run's), drop the
//!    capabilities that reach past Landlock, install the syscall guard
//!    (seccomp), then Landlock — all on the lone main thread.
//! 4. Run the spell with the gated bindings.

use super::report::{startup_report, ReportInput, StartupReport};
use super::spells::read_spell;
use super::{load, GlobalArgs, EXIT_CANNOT_RUN, EXIT_CONFIG, EXIT_DENIED, EXIT_SPELL_FAILED};
use crate::bindings::{self, Session};
use crate::buzz::{BuzzError, Interpreter};
use crate::diag::{Code, Diagnostic, Renderer};
use crate::enforce::gate::Gate;
use crate::enforce::landlock::Unavailable;
use crate::enforce::proxy::Proxy;
use crate::enforce::{self, Domain, LandlockRequest, LandlockStatus, ReexecState, SyscallGuard};
use crate::policy::{
    effective_fingerprint, Access, ChildEnv, Network, NormalPath, Policy, SandboxState,
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
        Err(e) => {
            renderer.emit(&e.diagnostic);
            return e.status;
        }
    };
    let mut child_env = match policy.state {
        SandboxState::On => policy.child_env(env),
        SandboxState::Off => unsandboxed_env(env),
    };
    super::hosts::inherit_outer_proxy(&policy, env, &mut child_env);
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
        give_temporary_directory(&policy, env, &mut child_env);
    }
    export_fingerprint(&policy, &mut child_env);
    // hosts: netns listener (issue #17 + #12). The proxy's listeners are
    // created here, on the host's loopback, and its process is forked
    // before any restriction. Once #12's namespace exists, create them
    // inside it instead (see the README's "Network by host name").
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
    let network = super::hosts::landlock_network(&policy, proxy.as_ref());
    let domain = match confine(&policy, &network, env, &mut resolution) {
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
    execute(
        policy, domain, proxy, child_env, report, &file, &source, args, renderer,
    )
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
    network: &Network,
    env: &[(OsString, OsString)],
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<Domain, Box<Diagnostic>> {
    if policy.state == SandboxState::Off {
        return Ok(Domain::unconfined(Unavailable::ForcedOff));
    }
    if nesting(env) == Nesting::Outermost {
        enforce::enter_private_pid_namespace();
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
    super::hosts::confine_sockets(policy)?;
    let request = landlock_request(env);
    let domain = enforce::install_on_self(&policy.grants, network, request).map_err(|e| {
        Box::new(Diagnostic::error(format!(
            "cannot install the Landlock sandbox: {e}"
        )))
    })?;
    if let LandlockStatus::Unavailable { reason } = domain.status() {
        diagnostics.push(landlock_unavailable(*reason));
    }
    Ok(domain)
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

/// Step 4: the spell runs with the gated bindings, from the workspace root.
#[allow(clippy::too_many_arguments)]
fn execute(
    policy: Policy,
    domain: Domain,
    proxy: Option<Proxy>,
    child_env: ChildEnv,
    report: StartupReport,
    file: &Path,
    source: &str,
    args: Vec<String>,
    renderer: Renderer,
) -> i32 {
    let workspace = policy.workspace.clone();
    if let Err(e) = std::env::set_current_dir(&workspace) {
        let message = format!("cannot enter the workspace {}: {e}", workspace.display());
        renderer.emit(&Diagnostic::error(message));
        return EXIT_CONFIG;
    }
    let gate = Gate::new(Rc::new(policy), workspace);
    let sink: bindings::DiagnosticSink = Rc::new(move |d: &Diagnostic| renderer.emit(d));
    let session = Session::new(
        gate,
        domain,
        child_env.vars,
        report.at_first_launch,
        sink.clone(),
    );
    let session = Rc::new(session.with_shim_notes(report.at_shim).with_egress(proxy));
    let program = match crate::buzz::parse(file, source) {
        Ok(program) => program,
        Err(e) => {
            sink(&e.to_diagnostic());
            return EXIT_CANNOT_RUN;
        }
    };
    let mut interpreter = Interpreter::new(file, bindings::modules(&session));
    let status = match interpreter.run(&program, args) {
        Ok(status) => spell_status(status, &sink),
        Err(e) => failed(&e, &sink),
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

/// Reports why the spell stopped and picks the exit status.
fn failed(error: &BuzzError, sink: &bindings::DiagnosticSink) -> i32 {
    let diagnostic = error.to_diagnostic();
    sink(&diagnostic);
    match diagnostic.code {
        Some(Code::Mgs2001 | Code::Mgs2002 | Code::Mgs2007) => EXIT_DENIED,
        _ => EXIT_SPELL_FAILED,
    }
}
