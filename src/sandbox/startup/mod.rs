//! The start-up sequence that puts a spell in the sandbox, in the only
//! order that works, as two linear steps: [`load`] (read the policy,
//! re-execute without secrets, resolve, check the lock) and [`confine`]
//! (the child environment, then the kernel's confinement). What differs by
//! platform lives in one file each: `kernel.rs` (Linux, `cfg(kernel_layer)`)
//! and `portable.rs` (the interpreter layer alone); this file holds no `cfg`.
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
//! 3. Confine: the jail, the network namespace, no capabilities, the
//!    syscall guard, Landlock (`kernel.rs` says how, step by step).
//! 4. Run the spell with the gated bindings (`Installed::enter`).
//!
//! The facade drives it: `Sandbox::load` is steps 1 and 2,
//! `Sandbox::install` step 3, for the CLI and an embedder alike.

#[cfg(kernel_layer)]
mod kernel;
mod notices;
#[cfg(not(kernel_layer))]
mod portable;
#[cfg(kernel_layer)]
pub(crate) mod proxy_slot;
mod report;
#[cfg(kernel_layer)]
mod secrets;

#[cfg(kernel_layer)]
use kernel as platform;
#[cfg(not(kernel_layer))]
use portable as platform;

#[cfg(kernel_layer)]
pub(crate) use kernel::{landlock_request, unix_sockets, userns_request, Jail};
#[cfg(not(kernel_layer))]
pub(crate) use notices::interpreter_only;
#[cfg(kernel_layer)]
pub(crate) use notices::{landlock_unavailable, network_fallback, partial_enforcement};
pub(crate) use platform::{finish, with_proxy, RunProxy, StartedAhead};
pub(crate) use report::{startup_report, ReportInput, StartupReport};

use crate::bindings;
use crate::diag::{Diagnostic, OutputOptions};
use crate::enforce::gate::HiddenPrograms;
use crate::enforce::{Domain, ReexecState};
use crate::policy::lock_file::LockState;
use crate::policy::{
    self, check_lock, check_nested, effective_fingerprint, Access, ChildEnv, NormalPath, Policy,
    SandboxState, Startup, StartupInput, WorkspaceArg, FINGERPRINT_VAR,
};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// What [`load`] leaves for [`confine`]: the resolved policy, and the
/// namespaces already being made for the jail (kernel path only).
pub(crate) struct Loaded {
    pub startup: Startup,
    pub ahead: StartedAhead,
}

/// Steps 1 and 2: the declared policy, the scrubbing re-exec (which does
/// not return when it happens), the namespaces started ahead, the grants
/// resolved, the lock checked. Nothing is restricted yet.
pub(crate) fn load(
    workspace: WorkspaceArg<'_>,
    spell: Option<&str>,
    env: &[(OsString, OsString)],
    reexec: Option<&ReexecState>,
) -> Result<Loaded, Box<Diagnostic>> {
    let input = StartupInput {
        workspace,
        env,
        spell,
    };
    let declared = policy::declare(input).map_err(|e| Box::new(e.to_diagnostic()))?;
    // Said after the lock's check: a lock beside a planted config that
    // turns the sandbox off already refuses it (MGS2010).
    let nested = declared.refuse_planted_nested();
    // Before the grants are resolved, so they are resolved once, by the
    // re-executed process.
    platform::reexec_before_resolution(&declared, env, reexec)?;
    let ahead = platform::start_ahead(&declared, env);
    let startup = declared.resolve(env);
    verify_lock(&startup.policy, env)?;
    nested.map_err(|e| Box::new(e.to_diagnostic()))?;
    Ok(Loaded { startup, ahead })
}

/// The lock checks of a run, in order: the workspace's `magus.lock`, then
/// the policy of an enclosing sandboxed run. Any failure is an error and
/// no spell may run.
fn verify_lock(policy: &Policy, env: &[(OsString, OsString)]) -> Result<(), Box<Diagnostic>> {
    match check_lock(policy) {
        Err(e) => return Err(Box::new(e.to_diagnostic())),
        Ok(LockState::Mismatch(m)) => return Err(Box::new(m.to_diagnostic())),
        Ok(LockState::Absent | LockState::Matches { .. }) => {}
    }
    check_nested(env, policy).map_err(|m| Box::new(m.to_diagnostic()))
}

/// What [`confine`] leaves for the run: the process is confined, and this
/// is everything the spell's run needs, moved onto the interpreter's
/// thread.
pub(crate) struct Confinement {
    pub policy: Policy,
    pub domain: Domain,
    pub proxy: RunProxy,
    /// Whether this process lives in a jail of its own, whose `/tmp` (and
    /// `/dev/shm`, `$TMPDIR`) are the run's and are discarded at its end.
    pub temp_dirs: bindings::TempDirs,
    pub hidden: HiddenPrograms,
    pub child_env: ChildEnv,
    pub report: StartupReport,
}

/// Step 3, for what [`load`] left: the children's environment, then the
/// kernel's confinement; what to say before the spell is `report.now`.
/// May re-execute the process (a guard: [`load`] has decided already).
pub(crate) fn confine(
    loaded: Loaded,
    env: &[(OsString, OsString)],
    reexec: Option<ReexecState>,
    output: OutputOptions,
) -> Result<Confinement, Box<Diagnostic>> {
    let Loaded { startup, ahead } = loaded;
    let policy = startup.policy;
    let mut child_env = match policy.state() {
        SandboxState::On => policy.child_env(env),
        SandboxState::Off => unsandboxed_env(env),
    };
    platform::inherit_outer_proxy(&policy, env, &mut child_env);
    if policy.state() == SandboxState::On {
        platform::scrub_or_restore(env, &mut child_env, reexec)?;
    }
    export_fingerprint(&policy, &mut child_env);
    // Before Landlock, which does not grant /dev/ptmx.
    bindings::prepare_terminal(output.format);
    // Before the jail hides the ungranted PATH directories.
    let hidden = match policy.state() {
        SandboxState::On => HiddenPrograms::snapshot(&policy, child_path(&child_env)),
        SandboxState::Off => HiddenPrograms::default(),
    };
    let mut said = startup.diagnostics;
    let platform::Confined {
        domain,
        proxy,
        temp_dirs,
        unjailed,
    } = platform::confine(&policy, env, &mut child_env, ahead, output, &mut said)?;
    let policy = unjailed.unwrap_or(policy);
    if policy.state() == SandboxState::On {
        give_temporary_directory(&policy, env, &mut child_env);
    }
    let report = startup_report(ReportInput {
        policy: &policy,
        config: startup.config.as_ref(),
        env,
        child_env: &child_env,
        resolution: said,
        verbosity: output.verbosity,
    });
    Ok(Confinement {
        policy,
        domain,
        proxy,
        temp_dirs,
        hidden,
        child_env,
        report,
    })
}

/// The `PATH` children get.
fn child_path(child_env: &ChildEnv) -> Option<&OsStr> {
    child_env
        .vars
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_os_str())
}

/// Children get a `TMPDIR` they may write to: the run's own directory
/// where it has no jail, else magus's own when the policy grants it (it
/// does by default), else `/tmp`. Said once the policy in force is known
/// (`confine` may have withheld the host's).
fn give_temporary_directory(
    policy: &Policy,
    env: &[(OsString, OsString)],
    child_env: &mut ChildEnv,
) {
    let writable = |dir: &Path| {
        NormalPath::new(dir.to_path_buf())
            .is_ok_and(|p| policy.check(&p, Access::Write).is_allowed())
    };
    let own = policy::lookup(env, "TMPDIR").map(PathBuf::from);
    let dir = policy
        .run_temp()
        .map(Path::to_path_buf)
        .or_else(|| own.filter(|d| d.is_absolute() && writable(d)))
        .or_else(|| Some(PathBuf::from("/tmp")).filter(|d| writable(d)));
    let Some(dir) = dir else {
        return;
    };
    child_env.vars.retain(|(k, _)| k != "TMPDIR");
    child_env.vars.push(("TMPDIR".into(), dir.into_os_string()));
    child_env.stripped.retain(|name| name != "TMPDIR");
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
        daemon_socket: policy::DaemonSocket::Absent,
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

/// When this process is the one the scrubbing re-exec started: the names
/// it stripped, taken out of the environment (once; call it before
/// anything reads the environment or starts a thread).
pub(crate) fn take_reexec_state() -> Option<ReexecState> {
    platform::take_reexec_state()
}

/// [`crate::sandbox::CompatLevel::HardRequirement`]'s kernel check, made
/// with probes only: the MGS2005 that says why no Landlock domain would be
/// in force, or nothing when one would.
pub(crate) fn kernel_missing(policy: &Policy, env: &[(OsString, OsString)]) -> Option<Diagnostic> {
    platform::kernel_missing(policy, env)
}
