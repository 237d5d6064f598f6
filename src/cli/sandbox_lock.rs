//! `magus sandbox lock`: writes `magus.lock` from the declared policy, and
//! the lock checks `magus run` and `magus sandbox check` share. The result
//! goes to stdout; what changed since the previous lock is listed, so the
//! person locking sees what they accept.

use super::{load, GlobalArgs, EXIT_CONFIG};
use crate::diag::Diagnostic;
use crate::policy::lock_file::{diff, lock_file, Lock, LockState};
use crate::policy::{check_lock, CanonicalPolicy, CanonicalSection, Policy};
use std::ffi::OsString;
use std::io::Write;
use std::path::Path;

/// `magus sandbox lock`.
pub(super) fn sandbox_lock(global: &GlobalArgs, env: &[(OsString, OsString)]) -> i32 {
    let renderer = global.renderer();
    let startup = match load(global, env) {
        Ok(startup) => startup,
        Err(status) => return status,
    };
    let policy = &startup.policy;
    let declared = match lockable(policy) {
        Ok(declared) => declared,
        Err(d) => {
            renderer.emit(&d);
            return EXIT_CONFIG;
        }
    };
    let file = lock_file(policy.workspace());
    let previous = Lock::read(&file);
    let sections = startup
        .config
        .iter()
        .flat_map(|c| &c.spells)
        .map(CanonicalSection::from_declared)
        .collect();
    let lock = Lock::new(declared.clone(), sections);
    if let Ok(Some(old)) = &previous {
        if old.fingerprint == lock.fingerprint {
            say(&format!(
                "{} is up to date ({})\n",
                file.display(),
                lock.fingerprint
            ));
            return 0;
        }
    }
    if let Err(e) = lock.write(&file) {
        renderer.emit(&e.to_diagnostic());
        return EXIT_CONFIG;
    }
    if let Err(e) = &previous {
        say(&format!("replaced an unreadable lock: {e}\n"));
    }
    say(&report(&file, &lock, previous.ok().flatten().as_ref()));
    0
}

/// The declared policy, when there is one worth locking.
fn lockable(policy: &Policy) -> Result<&CanonicalPolicy, Box<Diagnostic>> {
    let Some(declared) = &policy.declared() else {
        return Err(Box::new(
            Diagnostic::error("there is no `sandbox:` section in magus.yaml to lock")
                .with_help("declare the sandbox first:\nsandbox:\n  enabled: true\n  allow: []"),
        ));
    };
    if !declared.enabled {
        return Err(Box::new(
            Diagnostic::error(
                "the declared sandbox is not enabled: a lock of it would stop every run",
            )
            .with_help("set `enabled: true` in the `sandbox:` section of magus.yaml, then lock"),
        ));
    }
    Ok(declared)
}

/// What was written and, against the previous lock, what changed.
fn report(file: &Path, lock: &Lock, previous: Option<&Lock>) -> String {
    let mut out = format!("wrote {} ({})\n", file.display(), lock.fingerprint);
    if let Some(old) = previous {
        for change in diff(&old.policy, &lock.policy) {
            out.push_str(&format!("  {change}\n"));
        }
        for name in spell_names(old, lock) {
            for change in diff(&old.effective(Some(name)), &lock.effective(Some(name))) {
                out.push_str(&format!("  spell {name}: {change}\n"));
            }
        }
    }
    out.push_str("review it and commit it with magus.yaml\n");
    out
}

/// The spells either lock has a section for, sorted, each once.
fn spell_names<'a>(old: &'a Lock, new: &'a Lock) -> Vec<&'a str> {
    let mut names: Vec<&str> = old
        .spells
        .iter()
        .chain(&new.spells)
        .map(|s| s.section.name.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

fn say(text: &str) {
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// The lock state as `magus sandbox check` reports it.
pub(super) struct LockReport {
    /// `none`, `matches`, `differs` or `unreadable` (the JSON `lock` field).
    pub tag: &'static str,
    /// The human line.
    pub text: String,
    /// The MGS2010 or lock-file error, when the lock does not hold.
    pub diagnostic: Option<Diagnostic>,
}

impl LockReport {
    pub(super) fn of(policy: &Policy) -> LockReport {
        let (tag, text, diagnostic) = match check_lock(policy) {
            Ok(LockState::Absent) => (
                "none",
                "none (`magus sandbox lock` pins this policy)".into(),
                None,
            ),
            Ok(LockState::Matches { fingerprint }) => (
                "matches",
                format!("matches magus.lock ({fingerprint})"),
                None,
            ),
            Ok(LockState::Mismatch(m)) => (
                "differs",
                "differs from magus.lock (MGS2010)".into(),
                Some(m.to_diagnostic()),
            ),
            Err(e) => (
                "unreadable",
                "unreadable (see the error below)".into(),
                Some(e.to_diagnostic()),
            ),
        };
        LockReport {
            tag,
            text,
            diagnostic,
        }
    }
}
