//! The start-up's portable path (macOS, Windows, `--no-default-features`:
//! `cfg(kernel_layer)` unset): no descriptor marking, no re-exec, no jail
//! and no kernel domain. MGS2005 says so at every sandboxed run; only the
//! gate in the interpreter confines the spell.

use super::notices::interpreter_only;
use crate::bindings::{Session, TempDirs};
use crate::diag::{Diagnostic, OutputOptions};
use crate::enforce::{Domain, ReexecState};
use crate::policy::{ChildEnv, Declared, Policy, SandboxState};
use std::ffi::OsString;

/// Nothing is made ahead of a jail that does not exist.
pub(crate) struct StartedAhead;

/// No proxy: `network:` is not enforced here.
pub(crate) type RunProxy = ();

/// What step 3 leaves: a domain that confines nothing but says why.
pub(crate) struct Confined {
    pub domain: Domain,
    pub proxy: RunProxy,
    pub temp_dirs: TempDirs,
    /// Always `None`: children are not confined here, so withholding the
    /// host's temporary directories from the gate alone protects nothing.
    pub unjailed: Option<Policy>,
}

/// No re-exec here: the state of one cannot exist (`ReexecState` is
/// uninhabited without the kernel layer).
pub(crate) fn reexec_before_resolution(
    _declared: &Declared,
    _env: &[(OsString, OsString)],
    reexec: Option<&ReexecState>,
) -> Result<(), Box<Diagnostic>> {
    match reexec {
        Some(never) => match *never {},
        None => Ok(()),
    }
}

pub(crate) fn start_ahead(_declared: &Declared, _env: &[(OsString, OsString)]) -> StartedAhead {
    StartedAhead
}

/// No proxy, outer or own.
pub(crate) fn inherit_outer_proxy(
    _policy: &Policy,
    _env: &[(OsString, OsString)],
    _child_env: &mut ChildEnv,
) {
}

/// Nothing to scrub: magus is never re-executed here.
pub(crate) fn scrub_or_restore(
    _env: &[(OsString, OsString)],
    _child_env: &mut ChildEnv,
    reexec: Option<ReexecState>,
) -> Result<(), Box<Diagnostic>> {
    match reexec {
        Some(never) => match never {},
        None => Ok(()),
    }
}

/// Step 3 without a kernel layer: nothing confines children, and MGS2005
/// is said at every sandboxed run, as where Landlock is missing.
pub(crate) fn confine(
    policy: &Policy,
    _env: &[(OsString, OsString)],
    _child_env: &mut ChildEnv,
    _ahead: StartedAhead,
    _output: OutputOptions,
    said: &mut Vec<Diagnostic>,
) -> Result<Confined, Box<Diagnostic>> {
    if policy.state() == SandboxState::On && !policy.secrets().is_empty() {
        return Err(Box::new(
            Diagnostic::error("this spell declares `secrets:`, which cannot be kept from it here: magus was built without its kernel layer (Linux, the `kernel` feature)")
                .with_note("magus hands a secret only to its proxy, outside the sandbox, and only the kernel layer forces a child's traffic through it; magus never falls back to passing the value")
                .with_help("run the spell with magus built for Linux with the default `kernel` feature, or remove its `secrets:`"),
        ));
    }
    if policy.state() == SandboxState::On {
        said.push(interpreter_only());
    }
    Ok(Confined {
        domain: Domain::interpreter_only(),
        proxy: (),
        // Without the kernel layer there is no jail: the host's directories.
        temp_dirs: TempDirs::Host,
        unjailed: None,
    })
}

/// No kernel domain can ever be had here.
pub(crate) fn kernel_missing(
    _policy: &Policy,
    _env: &[(OsString, OsString)],
) -> Option<Diagnostic> {
    Some(interpreter_only())
}

/// No proxy to attach.
pub(crate) fn with_proxy(session: Session, _proxy: RunProxy) -> Session {
    session
}

/// No proxy to stop.
pub(crate) fn finish(_session: &Session, _output: OutputOptions, _emit: &dyn Fn(&Diagnostic)) {}

/// Never re-executed here.
pub(crate) fn take_reexec_state() -> Option<ReexecState> {
    None
}
