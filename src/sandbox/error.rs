//! The facade's errors: one type per stage, each carrying the diagnostic
//! `magus` would print (rendered by `diag`, never assembled here from
//! strings the caller must parse).

use super::exit::{
    CANNOT_RUN as EXIT_CANNOT_RUN, DENIED as EXIT_DENIED, SPELL_FAILED as EXIT_SPELL_FAILED,
};
use crate::buzz::BuzzError;
use crate::diag::{Code, Diagnostic};
use std::path::Path;

/// Defines an error type of one stage: a diagnostic, shown by `Display`
/// as its message (one sentence) and by `Debug` as `magus` prints it.
macro_rules! stage_error {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(thiserror::Error)]
        #[error("{}", .diagnostic.message)]
        pub struct $name {
            diagnostic: Box<Diagnostic>,
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                debug_as_rendered(&self.diagnostic, f)
            }
        }

        impl $name {
            pub(crate) fn new(diagnostic: impl Into<Box<Diagnostic>>) -> $name {
                $name {
                    diagnostic: diagnostic.into(),
                }
            }

            /// The error as `magus` reports it: message, location, help.
            pub fn diagnostic(&self) -> &Diagnostic {
                &self.diagnostic
            }
        }
    };
}

stage_error!(
    /// Why [`Sandbox::load`](crate::Sandbox::load) found no usable policy:
    /// no workspace, a bad `magus.yaml` (with its line and column), a bad
    /// `MAGUS_SANDBOX_ENABLED`, or a policy `magus.lock` does not match.
    LoadError
);

stage_error!(
    /// Why [`Sandbox::install`](crate::Sandbox::install) (or
    /// [`Installed::enter`](crate::Installed::enter)) could not put the
    /// sandbox in force.
    InstallError
);

impl From<Box<Diagnostic>> for InstallError {
    fn from(diagnostic: Box<Diagnostic>) -> InstallError {
        InstallError::new(diagnostic)
    }
}

/// Why a spell could not be read or did not end with an exit status.
#[derive(thiserror::Error)]
#[error("{}", .diagnostic.message)]
pub struct SpellError {
    diagnostic: Box<Diagnostic>,
    status: i32,
}

impl std::fmt::Debug for SpellError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_as_rendered(&self.diagnostic, f)
    }
}

/// `Debug` of the facade's errors: the diagnostic as `magus` prints it,
/// not a dump of its fields, since `Debug` is what Rust prints for an
/// error that `?` returns from `main` (`Error: error[MGS2010]: ...`).
fn debug_as_rendered(diagnostic: &Diagnostic, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.write_str(diagnostic.to_string().trim_end())
}

impl SpellError {
    pub(crate) fn new(diagnostic: Diagnostic, status: i32) -> SpellError {
        SpellError {
            diagnostic: Box::new(diagnostic),
            status,
        }
    }

    /// A spell that cannot start: a syntax error, or too large.
    pub(crate) fn cannot_run(error: BuzzError) -> SpellError {
        SpellError::new(error.to_diagnostic(), EXIT_CANNOT_RUN)
    }

    /// A spell the checker refused (its findings are said already): the
    /// summary line, as rustc's "aborting due to previous errors".
    pub(crate) fn refused_by_check(path: &Path, status: i32) -> SpellError {
        let diagnostic = Diagnostic::error(format!(
            "`{}` did not pass the check: nothing ran",
            path.display()
        ))
        .with_help("`magus check` shows the same findings without running anything");
        SpellError::new(diagnostic, status)
    }

    /// A spell stopped by an uncaught sandbox denial or another failure.
    pub(crate) fn failed(error: BuzzError) -> SpellError {
        let diagnostic = error.to_diagnostic();
        let status = match diagnostic.code {
            Some(Code::Mgs2001 | Code::Mgs2002 | Code::Mgs2007) => EXIT_DENIED,
            _ => EXIT_SPELL_FAILED,
        };
        SpellError::new(diagnostic, status)
    }

    /// The spell's own status, which must fit an exit status.
    pub(crate) fn check_status(status: i32) -> Result<i32, SpellError> {
        if (0..=255).contains(&status) {
            return Ok(status);
        }
        let diagnostic =
            Diagnostic::error(format!("the spell's status {status} is not an exit status"))
                .with_note("`main` (or `std.exit`) gave a status outside 0-255")
                .with_help("return a status from 0 to 255 (0 for success)");
        Err(SpellError::new(diagnostic, EXIT_SPELL_FAILED))
    }

    /// The error as `magus` reports it.
    pub fn diagnostic(&self) -> &Diagnostic {
        &self.diagnostic
    }

    /// The status `magus run` exits with for it: 1 the spell failed, 124
    /// stopped by a sandbox denial, 126 cannot run, 127 no such spell.
    pub fn exit_status(&self) -> i32 {
        self.status
    }
}

/// [`CompatLevel::HardRequirement`](crate::CompatLevel) with a policy that
/// turns the sandbox off.
pub(super) fn sandbox_off() -> Diagnostic {
    Diagnostic::error("the sandbox is required, but the policy turns it off")
        .with_help("set `sandbox.enabled: true` in magus.yaml and unset MAGUS_SANDBOX_ENABLED")
}

/// A warning `magus run` would go on with, as a refusal.
pub(super) fn required(mut missing: Diagnostic) -> Diagnostic {
    missing.severity = crate::diag::Severity::Error;
    missing.with_note(
        "the embedder required it (CompatLevel::HardRequirement); nothing was restricted",
    )
}

pub(super) fn no_interpreter_thread(e: &std::io::Error) -> Diagnostic {
    Diagnostic::error(format!("cannot start the interpreter thread: {e}"))
}

pub(super) fn no_workspace(workspace: &Path, e: &std::io::Error) -> Diagnostic {
    Diagnostic::error(format!(
        "cannot enter the workspace {}: {e}",
        workspace.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buzz::CallSite;

    fn site() -> CallSite {
        CallSite {
            file: "spells/x.buzz".into(),
            line: 3,
            column: 5,
        }
    }

    fn uncaught(code: Option<Code>) -> BuzzError {
        BuzzError::Uncaught {
            value: "SandboxError".into(),
            site: site(),
            diagnostic: code.map(|c| Box::new(Diagnostic::error("denied").with_code(c))),
        }
    }

    #[test]
    fn a_status_outside_0_to_255_is_a_failure() {
        for (status, expected) in [
            (0, Ok(0)),
            (255, Ok(255)),
            (256, Err(EXIT_SPELL_FAILED)),
            (-1, Err(EXIT_SPELL_FAILED)),
        ] {
            let got = SpellError::check_status(status).map_err(|e| e.exit_status());
            assert_eq!(got, expected, "status {status}");
        }
    }

    #[test]
    fn an_uncaught_denial_exits_124_and_other_failures_1() {
        let runtime = BuzzError::Runtime {
            site: site(),
            message: "boom".into(),
        };
        for (error, expected) in [
            (uncaught(Some(Code::Mgs2001)), EXIT_DENIED),
            (uncaught(Some(Code::Mgs2002)), EXIT_DENIED),
            (uncaught(Some(Code::Mgs2007)), EXIT_DENIED),
            (uncaught(None), EXIT_SPELL_FAILED),
            (runtime, EXIT_SPELL_FAILED),
        ] {
            let what = error.to_string();
            assert_eq!(SpellError::failed(error).exit_status(), expected, "{what}");
        }
    }

    #[test]
    fn a_syntax_error_cannot_run_and_keeps_its_location() {
        let error = SpellError::cannot_run(BuzzError::Syntax {
            site: site(),
            message: "expected `}`".into(),
            help: None,
        });
        assert_eq!(error.exit_status(), EXIT_CANNOT_RUN);
        let location = error.diagnostic().location.as_ref().expect("a location");
        assert_eq!((location.line, location.column), (3, 5));
    }
}
