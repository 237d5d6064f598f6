//! What a run says before and while its spell starts: the one place that
//! decides which start-up diagnostics are printed, when, and how much of
//! each (`magus run` and `magus sandbox check` both ask it).
//!
//! - said at every run, before the spell: the sandbox being off by default
//!   (with the line that turns it on), unresolvable `allow` entries
//!   (MGS2004), Landlock being unavailable (MGS2005);
//! - said at the first child launch: stripped variables (MGS2003, one line,
//!   the names under `-v`), the withheld daemon socket (MGS2008);
//! - said at the first launch that meets a version manager's shim: MGS2006.
//!
//! A new "said at every run" warning (the jail's, for instance) reaches
//! [`StartupReport::now`] through [`ReportInput::resolution`]; the filter
//! for `-q`/`-v` is the renderer's (see `diag::output`).

use crate::bindings::ShimNote;
use crate::diag::{Code, Diagnostic, Verbosity};
use crate::policy::config::ConfigFile;
use crate::policy::shims::find_shims;
use crate::policy::{Access, ChildEnv, NormalPath, Policy, SandboxState, StateSource};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Everything a run says at start-up, grouped by when it is said.
#[derive(Debug, Default)]
pub(crate) struct StartupReport {
    /// Before the spell starts.
    pub now: Vec<Diagnostic>,
    /// At the first child launch.
    pub at_first_launch: Vec<Diagnostic>,
    /// At the first launch of a program in a version manager's directory.
    pub at_shim: Vec<ShimNote>,
}

impl StartupReport {
    /// Every diagnostic, in the order a run would say them
    /// (`magus sandbox check` shows them all at once).
    pub(crate) fn all(self) -> Vec<Diagnostic> {
        let mut all = self.now;
        all.extend(self.at_first_launch);
        all.extend(self.at_shim.into_iter().map(|s| s.diagnostic));
        all
    }
}

/// The inputs of [`startup_report`].
pub(crate) struct ReportInput<'a> {
    pub policy: &'a Policy,
    pub config: Option<&'a ConfigFile>,
    pub env: &'a [(OsString, OsString)],
    pub child_env: &'a ChildEnv,
    /// What resolving and confining found, said before the spell at every
    /// run: MGS2004, MGS2005, and any other "said at every run" warning of
    /// the kernel layer (`startup::confine` pushes them here).
    pub resolution: Vec<Diagnostic>,
    pub verbosity: Verbosity,
}

/// Decides what the run says, and when.
pub(crate) fn startup_report(input: ReportInput<'_>) -> StartupReport {
    let mut report = StartupReport::default();
    report.now.extend(sandbox_off(input.policy, input.config));
    report.now.extend(input.resolution);
    if input.policy.state() == SandboxState::Off {
        return report;
    }
    report.at_first_launch = launch_notes(input.child_env, input.verbosity);
    report.at_shim = shim_notes(input.policy, input.env, &input.child_env.stripped);
    report
}

/// The one line said at every run whose sandbox is off only because
/// nothing turned it on. An explicit `enabled: false` (or
/// `MAGUS_SANDBOX_ENABLED=0`) is a choice and stays quiet.
fn sandbox_off(policy: &Policy, config: Option<&ConfigFile>) -> Option<Diagnostic> {
    if policy.state() != SandboxState::Off || policy.state_source() != StateSource::Default {
        return None;
    }
    let why = match config.map(|c| c.sandbox.is_some()) {
        None => "the workspace has no magus.yaml",
        Some(false) => "magus.yaml has no `sandbox:` section",
        Some(true) => "`sandbox:` in magus.yaml does not set `enabled`",
    };
    Some(Diagnostic::warning(format!(
        "the sandbox is off: {why}; add `sandbox: {{enabled: true}}` to magus.yaml to turn it on"
    )))
}

/// MGS2003 and MGS2008, one line each (the names and notes under `-v`).
fn launch_notes(child_env: &ChildEnv, verbosity: Verbosity) -> Vec<Diagnostic> {
    let mut notes = child_env.diagnostics();
    if verbosity >= Verbosity::Verbose {
        return notes;
    }
    for note in &mut notes {
        if note.code == Some(Code::Mgs2003) {
            *note = withheld_line(child_env.stripped.len());
        } else {
            // One line each by default: the detail is one `-v` away.
            note.notes.clear();
        }
    }
    notes
}

/// MGS2003 as said by default.
fn withheld_line(count: usize) -> Diagnostic {
    let noun = if count == 1 { "variable" } else { "variables" };
    Diagnostic::note(format!(
        "{count} environment {noun} withheld from child processes \
         (`magus run -v` or `magus sandbox check` names them)"
    ))
    .with_code(Code::Mgs2003)
}

/// One MGS2006 note per version manager found on `PATH` that lost its
/// variables or is not granted, with the directories whose programs
/// trigger it.
pub(super) fn shim_notes(
    policy: &Policy,
    env: &[(OsString, OsString)],
    stripped: &[String],
) -> Vec<ShimNote> {
    let Some(path_var) = crate::policy::lookup(env, "PATH") else {
        return Vec::new();
    };
    let home = crate::policy::lookup(env, "HOME").map(PathBuf::from);
    let granted = |dir: &Path| {
        let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        NormalPath::new(real).is_ok_and(|real| policy.check(&real, Access::Execute).is_allowed())
    };
    find_shims(path_var, stripped, granted)
        .iter()
        .map(|finding| {
            let mut dirs = vec![finding.path_entry.clone(), finding.root.clone()];
            dirs.extend(std::fs::canonicalize(&finding.path_entry));
            dirs.extend(std::fs::canonicalize(&finding.root));
            ShimNote {
                dirs,
                diagnostic: finding.to_diagnostic(home.as_deref()),
            }
        })
        .collect()
}
