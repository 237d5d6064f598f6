//! How a gate denial reads to a user: the one-line message (also the
//! `message` field of `SandboxError`), the rustc-style diagnostic, and the
//! fix: the exact `magus.yaml` lines that would allow it, or why no entry
//! can (protected paths, other processes, credential stores).

use super::{Denial, DenialReason, Protection};
use crate::diag::Diagnostic;
use crate::policy::credentials::{credential_help, credential_store};
use crate::policy::native::{folded, to_os};
use crate::policy::{Access, Mode};
use std::path::Path;

impl Denial {
    /// The one-line message, also the `message` field of `SandboxError`.
    pub fn message(&self) -> String {
        let verb = match self.access {
            Access::Read => "read of",
            Access::Write => "write to",
            Access::Execute => "launch of",
        };
        let why = match self.reason {
            DenialReason::NotGranted => "denied by the sandbox".to_string(),
            DenialReason::Protected => match self.protection.as_deref() {
                Some(Protection::Repository { dir, holds }) => format!(
                    "denied: it is a protected path, since git would take `{}` for a \
                     repository (it holds {})",
                    to_os(dir).display(),
                    names_of(holds)
                ),
                None => "denied: it is a protected path".to_string(),
            },
            DenialReason::ForeignProcess => "denied: it belongs to another process".to_string(),
            DenialReason::WindowsPath(kind) => format!("denied: it is {kind}"),
        };
        match &self.leads_to {
            Some(real) => format!(
                "{verb} `{}` (which leads to `{}`) {why}",
                self.spelled,
                to_os(real).display()
            ),
            None => format!("{verb} `{}` {why}", self.spelled),
        }
    }

    /// The diagnostic shown when the spell does not catch the error.
    /// `home` lets the suggested entry use `~`.
    pub fn to_diagnostic(&self, home: Option<&Path>) -> Diagnostic {
        let real = self.leads_to.as_deref().unwrap_or(&self.checked);
        let mut d = Diagnostic::error(self.message())
            .with_code(self.code())
            .with_path(self.spelled.clone())
            .with_label(format!("`{}` denied here", self.op));
        if let Some(real) = &self.leads_to {
            d = d.with_note(format!(
                "`{}` is a symlink into `{}`",
                self.spelled,
                to_os(real).display()
            ));
        }
        if self.checked.as_os_str() != self.spelled.as_str() && self.leads_to.is_none() {
            let checked = to_os(&self.checked);
            d = d.with_note(format!("checked as `{}`", checked.display()));
        }
        d.with_help(self.fix(real, home))
    }

    fn fix(&self, real: &Path, home: Option<&Path>) -> String {
        match self.reason {
            DenialReason::Protected if self.protection.is_some() => {
                "a spell may not make a directory into a git repository (`HEAD` beside \
                 `objects` and `refs`, or beside `commondir`) nor write such a directory's \
                 `config`: the next git command there, outside the sandbox, would run what \
                 that config names; no magus.yaml entry can allow this"
                    .to_string()
            }
            DenialReason::Protected => {
                "a spell may not change the sandbox policy or a repository's \
                 hooks and config (`.git`, `.hg`); no magus.yaml entry can allow this"
                    .to_string()
            }
            DenialReason::ForeignProcess => "reading another process's /proc entries is never \
                 allowed; no magus.yaml entry can allow this"
                .to_string(),
            DenialReason::WindowsPath(_) => "the sandbox takes drive paths (`C:\\dir\\file`) and \
                 relative ones; no magus.yaml entry can allow this spelling"
                .to_string(),
            DenialReason::NotGranted => allow_entry(real, self.access.needed_mode(), home),
        }
    }
}

/// `` `a` and `b` `` (each name quoted, the last two joined by "and").
fn names_of(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

/// The `magus.yaml` lines that would grant `path` with `mode`; for a
/// credential store, why no such lines are offered instead.
pub fn allow_entry(path: &Path, mode: Mode, home: Option<&Path>) -> String {
    // Windows compares paths without regard to case (a no-op elsewhere).
    let (path, home) = (folded(path), home.map(folded));
    let home = home.as_deref();
    if let Some(store) = credential_store(&path, home) {
        return credential_help(&store);
    }
    let shown = match home.and_then(|h| path.strip_prefix(h).ok()) {
        Some(rest) if rest.as_os_str().is_empty() => "~".to_string(),
        Some(rest) => format!("~/{}", rest.display()),
        None => to_os(&path).display().to_string(),
    };
    format!(
        "to allow it, add to magus.yaml (only if you trust this spell with it):\n\
         sandbox:\n  allow:\n    - path: {shown}\n      mode: {mode}"
    )
}
