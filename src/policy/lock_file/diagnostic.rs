//! How `magus.lock` problems read to a user: MGS2010 in its three forms
//! (fingerprint, undeclared, nested) and the errors of a lock that cannot
//! be read or trusted. Each type of the lock file builds its own
//! diagnostic; `diag` only renders it.

use super::{Change, LockError, Mismatch, Undeclared};
use crate::diag::{Code, Diagnostic, Location, SourceKind};
use crate::policy::{ENABLED_VAR, FINGERPRINT_VAR};
use std::path::Path;

impl LockError {
    /// An error diagnostic pointing at the offending line where there is one.
    pub(crate) fn to_diagnostic(&self) -> Diagnostic {
        let d = Diagnostic::error(self.to_string());
        let located = |file: &Path, line: u32| Location {
            kind: SourceKind::Config,
            file: file.to_path_buf(),
            line,
            column: 1,
        };
        let d = match self {
            LockError::Malformed { file, line, .. }
            | LockError::Inconsistent { file, line, .. } => d.with_location(located(file, *line)),
            _ => d,
        };
        match self {
            LockError::Write { .. } => d,
            _ => d.with_help(
                "magus.lock is written by `magus sandbox lock`: review the `sandbox:` section \
                 of magus.yaml, then run it to rewrite the lock",
            ),
        }
    }
}

impl Undeclared {
    pub(crate) fn explanation(self) -> String {
        match self {
            Undeclared::SectionRemoved => {
                "magus.lock pins a sandbox policy, but magus.yaml declares no `sandbox:` section".into()
            }
            Undeclared::DisabledInConfig => {
                "magus.lock pins a sandbox policy, but magus.yaml sets `sandbox.enabled: false`".into()
            }
            Undeclared::NotEnabled => "magus.lock pins a sandbox policy, but magus.yaml does not set \
                 `sandbox.enabled: true` (the sandbox is off by default)"
                .into(),
            Undeclared::DisabledByEnvironment => format!(
                "magus.lock pins a sandbox policy, but {ENABLED_VAR}=0 turns the sandbox off for this run"
            ),
        }
    }
}

/// `sha256:` and the first 12 hex digits: enough to tell two apart.
fn short(fingerprint: &str) -> String {
    match fingerprint.get(..19) {
        Some(head) if fingerprint.len() > 19 => format!("{head}…"),
        _ => fingerprint.to_string(),
    }
}

impl Mismatch {
    /// The MGS2010 error.
    pub(crate) fn to_diagnostic(&self) -> Diagnostic {
        match self {
            Mismatch::Fingerprint {
                spell,
                locked,
                declared,
                changes,
            } => fingerprint_diagnostic(spell.as_deref(), locked, declared, changes),
            Mismatch::Undeclared(why) => {
                Diagnostic::error("sandbox policy does not match magus.lock (undeclared)")
                    .with_code(Code::Mgs2010)
                    .with_note(why.explanation())
                    .with_help(format!(
                        "restore the `sandbox:` section with `enabled: true` (or unset {ENABLED_VAR}); \
                         to turn the sandbox off for good, delete magus.lock in the same reviewed change"
                    ))
            }
            Mismatch::Nested { outer, inner } => nested_diagnostic(outer, inner.as_deref()),
        }
    }
}

fn fingerprint_diagnostic(
    spell: Option<&str>,
    locked: &str,
    declared: &str,
    changes: &[Change],
) -> Diagnostic {
    let mut d = Diagnostic::error("sandbox policy does not match magus.lock (fingerprint)")
        .with_code(Code::Mgs2010);
    if let Some(name) = spell {
        d = d.with_note(format!(
            "spell `{name}` runs under the `sandbox:` section and `spells: {name}:`; \
             other spells run on while their own policy matches"
        ));
    }
    d = d.with_note(format!(
        "locked {}, declared {}",
        short(locked),
        short(declared)
    ));
    for change in changes {
        d = d.with_note(change.to_string());
    }
    if changes.is_empty() {
        d = d.with_note("no effective change: only redundant `allow` entries differ");
    }
    d.with_help(
        "review the change; if it is intended, run `magus sandbox lock` and commit magus.lock",
    )
}

fn nested_diagnostic(outer: &str, inner: Option<&str>) -> Diagnostic {
    let inner = match inner {
        Some(fp) => format!("this workspace's policy is {}", short(fp)),
        None => "this run's sandbox is off".to_string(),
    };
    Diagnostic::error(
        "nested magus with a different policy: it cannot widen what the kernel already confines",
    )
    .with_code(Code::Mgs2010)
    .with_note(format!(
        "the spell that started it runs under {} ({FINGERPRINT_VAR}); {inner}",
        short(outer)
    ))
    .with_help(
        "make both workspaces declare the same sandbox policy, or run the inner spell on its own, \
         outside the sandboxed spell",
    )
}
