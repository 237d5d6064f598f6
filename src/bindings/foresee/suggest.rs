//! `magus sandbox suggest SPELL`: the smallest `spells: NAME:` section
//! that lets the spell's literal calls through the gate. Each need is put
//! to the gate; only what it refuses for want of a grant is proposed, with
//! the narrowest mode, and never a credential store (MGS2001's rule).

use super::table::Gated;
use super::{calls, Session};
use crate::buzz::Program;
use crate::enforce::gate::{shown_path, yaml_key};
use crate::enforce::gate::{Denial, DenialReason, GateError, PathUse};
use crate::policy::credentials::credential_store;
use crate::policy::{ChildEnv, Mode};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What a spell's literal calls need beyond its policy.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Suggestion {
    /// Grants to add, each path with the narrowest mode that serves.
    pub allow: Vec<(PathBuf, Mode)>,
    /// Variables to pass through.
    pub passthrough: Vec<String>,
    /// What no entry may allow, each with why (a credential store, a
    /// protected path).
    pub refused: Vec<String>,
}

impl Suggestion {
    /// Whether the spell needs nothing added.
    pub(crate) fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.passthrough.is_empty()
    }

    /// The `spells: NAME:` section, YAML to paste into magus.yaml, and a
    /// comment line for each need no entry can meet.
    pub(crate) fn to_yaml(&self, spell: &str, home: Option<&Path>) -> String {
        let mut out = format!(
            "# add to magus.yaml (into the spell's section, if it has one already):\n\
             spells:\n  {}:\n",
            yaml_key(spell)
        );
        if !self.allow.is_empty() {
            out.push_str("    allow:\n");
            for (path, mode) in &self.allow {
                let shown = shown_path(path, home);
                out.push_str(&format!("      - path: {}\n", yaml_key_path(&shown)));
                out.push_str(&format!("        mode: {mode}\n"));
            }
        }
        if !self.passthrough.is_empty() {
            let names: Vec<String> = self.passthrough.iter().map(|n| yaml_key(n)).collect();
            out.push_str(&format!(
                "    env:\n      passthrough: [{}]\n",
                names.join(", ")
            ));
        }
        for refused in &self.refused {
            out.push_str(&format!("# not proposed: {refused}\n"));
        }
        out
    }
}

/// A path as a YAML scalar: as it is when plain, else quoted.
fn yaml_key_path(shown: &str) -> String {
    let plain = shown
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '~' | '.' | '_' | '-' | '+'));
    match plain && !shown.is_empty() {
        true => shown.to_string(),
        false => serde_json::to_string(shown).unwrap_or_else(|_| format!("{shown:?}")),
    }
}

/// `path`, or its nearest ancestor that exists.
fn existing(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .find(|p| std::fs::symlink_metadata(p).is_ok())
        .map(Path::to_path_buf)
}

/// `/` or the home directory itself: never proposed whole.
fn is_too_wide(path: &Path, home: Option<&Path>) -> bool {
    path.parent().is_none() || home == Some(path)
}

/// What the literal calls of `program` and the files it imports need that
/// `session`'s policy refuses.
pub(crate) fn suggest(program: &Program, session: &Session) -> Suggestion {
    let mut found = Suggestion::default();
    let imported = super::imports::imported(program, session);
    let files = std::iter::once(program).chain(&imported);
    for call in files.flat_map(calls) {
        for need in &call.needs {
            found.add(need, session);
        }
    }
    found.narrow();
    found
}

impl Suggestion {
    fn add(&mut self, need: &Gated, session: &Session) {
        match need {
            Gated::Variable(name) => {
                let probe = [(OsString::from(name), OsString::from("x"))];
                let passes = !ChildEnv::build(&probe, session.gate().policy().passthrough())
                    .vars
                    .is_empty();
                if !passes && !self.passthrough.contains(name) {
                    self.passthrough.push(name.clone());
                }
            }
            Gated::Path { op, usage, spelled } => {
                let gate = session.gate();
                let Some(denial) = gate.foresee(*op, *usage, spelled) else {
                    return;
                };
                // A removal needs its directory writable, which covers
                // the entry: one grant, not two.
                let entry_refused = gate.foresee(*op, PathUse::Write, spelled).is_some();
                let target = match (usage, entry_refused) {
                    (PathUse::Remove, true) => denial.checked.parent().map(Path::to_path_buf),
                    _ => None,
                };
                self.grant(&denial, target, session.home());
            }
            Gated::Program(name) => {
                let path = session.child_path();
                if let Err(GateError::Denied(denial)) =
                    session.gate().resolve_program(name, path.as_deref())
                {
                    self.grant(&denial, None, session.home());
                }
            }
        }
    }

    /// The entry that lifts `denial` (on `target` when given), or why none
    /// may.
    fn grant(&mut self, denial: &Denial, target: Option<PathBuf>, home: Option<&Path>) {
        let real = denial.leads_to.as_deref().unwrap_or(&denial.checked);
        let path = target.unwrap_or_else(|| real.to_path_buf());
        if denial.reason != DenialReason::NotGranted {
            self.refused
                .push(format!("`{}`: {}", denial.spelled, denial.message()));
            return;
        }
        if let Some(store) = credential_store(&path, home).or_else(|| credential_store(real, home))
        {
            self.refused.push(format!(
                "`{}`: `{store}` is a credential store (`magus explain MGS2001`)",
                denial.spelled
            ));
            return;
        }
        // A grant must exist when the sandbox is installed (MGS2004): a
        // file the run makes is granted by the directory it goes in.
        let Some(path) = existing(&path).filter(|p| !is_too_wide(p, home)) else {
            self.refused.push(format!(
                "`{}`: nothing of it exists yet but `/` or `~`, too wide a grant",
                denial.spelled
            ));
            return;
        };
        let mode = denial.access.needed_mode();
        match self.allow.iter_mut().find(|(p, _)| *p == path) {
            Some((_, held)) => *held = (*held).max(mode),
            None => self.allow.push((path, mode)),
        }
    }

    /// Drops each entry another one already covers (an ancestor with at
    /// least its mode), and repeated refusals.
    fn narrow(&mut self) {
        let all = self.allow.clone();
        self.allow.retain(|(path, mode)| {
            !all.iter()
                .any(|(p, m)| p != path && path.starts_with(p) && m >= mode)
        });
        let mut seen = std::collections::HashSet::new();
        self.refused.retain(|r| seen.insert(r.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::Suggestion;
    use crate::policy::Mode;
    use std::path::{Path, PathBuf};

    /// An entry an ancestor already covers with at least its mode goes;
    /// the section is YAML a user pastes, with `~` for the home and odd
    /// names quoted.
    #[test]
    fn covered_entries_go_and_the_section_is_pasteable() {
        let mut s = Suggestion {
            allow: vec![
                (PathBuf::from("/srv/data/in.txt"), Mode::Ro),
                (PathBuf::from("/srv/data"), Mode::Rw),
                (PathBuf::from("/srv/tools/x"), Mode::Rw),
                (PathBuf::from("/srv/tools"), Mode::Ro),
                (PathBuf::from("/home/u/my dir"), Mode::Ro),
            ],
            passthrough: vec!["TOKEN".into()],
            refused: vec!["a".into(), "a".into()],
        };
        s.narrow();
        let kept: Vec<&Path> = s.allow.iter().map(|(p, _)| p.as_path()).collect();
        assert_eq!(
            kept,
            [
                Path::new("/srv/data"),
                Path::new("/srv/tools/x"),
                Path::new("/srv/tools"),
                Path::new("/home/u/my dir"),
            ]
        );
        let yaml = s.to_yaml("my spell", Some(Path::new("/home/u")));
        let want = "# add to magus.yaml (into the spell's section, if it has one already):\n\
                    spells:\n  \"my spell\":\n    allow:\n      \
                    - path: /srv/data\n        mode: rw\n      \
                    - path: /srv/tools/x\n        mode: rw\n      \
                    - path: /srv/tools\n        mode: ro\n      \
                    - path: \"~/my dir\"\n        mode: ro\n    \
                    env:\n      passthrough: [TOKEN]\n# not proposed: a\n";
        assert_eq!(yaml, want);
        // magus.yaml's own parser takes it, section and all.
        let config = format!("sandbox:\n  enabled: true\n{yaml}");
        let parsed =
            crate::policy::config::parse_config(Path::new("magus.yaml"), config.as_bytes());
        let parsed = parsed.expect("a valid magus.yaml");
        assert_eq!(parsed.spells.len(), 1);
    }
}
