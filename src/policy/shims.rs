//! Recognising version-manager shims on `PATH` (MGS2006).
//!
//! mise, asdf, pyenv and friends put a shim directory on `PATH` and find
//! the real tool through their own variables and home directories. Under
//! the sandbox those variables are stripped and those directories are not
//! granted, so tools fail in confusing ways; this names the manager and the
//! exact `magus.yaml` lines that fix it.

use crate::diag::{Code, Diagnostic};
use std::path::{Path, PathBuf};

/// One version manager: how its `PATH` entries look and what it needs.
struct Manager {
    name: &'static str,
    /// A `PATH` entry containing one of these, followed by `/`, belongs to
    /// the manager; the manager's root is the entry up to the marker's end.
    markers: &'static [&'static str],
    /// The prefix of the manager's environment variables.
    var_prefix: &'static str,
}

const MANAGERS: [Manager; 9] = [
    Manager {
        name: "mise",
        markers: &["/.local/share/mise", "/.mise"],
        var_prefix: "MISE_",
    },
    Manager {
        name: "asdf",
        markers: &["/.asdf"],
        var_prefix: "ASDF_",
    },
    Manager {
        name: "pyenv",
        markers: &["/.pyenv"],
        var_prefix: "PYENV_",
    },
    Manager {
        name: "rbenv",
        markers: &["/.rbenv"],
        var_prefix: "RBENV_",
    },
    Manager {
        name: "nodenv",
        markers: &["/.nodenv"],
        var_prefix: "NODENV_",
    },
    Manager {
        name: "volta",
        markers: &["/.volta"],
        var_prefix: "VOLTA_",
    },
    Manager {
        name: "fnm",
        markers: &["/.local/share/fnm", "/.fnm", "/fnm_multishells"],
        var_prefix: "FNM_",
    },
    Manager {
        name: "nvm",
        markers: &["/.nvm"],
        var_prefix: "NVM_",
    },
    Manager {
        name: "direnv",
        markers: &["/.direnv"],
        var_prefix: "DIRENV_",
    },
];

/// What was found for one manager.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShimFinding {
    pub manager: &'static str,
    /// The `PATH` entry that belongs to it.
    pub path_entry: PathBuf,
    /// The manager's root directory, to grant `ro`.
    pub root: PathBuf,
    /// Its stripped variables.
    pub stripped: Vec<String>,
    /// Whether the `PATH` entry is granted for execution.
    pub granted: bool,
}

/// The managers on `path_var` whose variables were stripped or whose
/// directory is not granted; one finding per manager.
pub(crate) fn find_shims(
    path_var: &std::ffi::OsStr,
    stripped: &[String],
    is_granted: impl Fn(&Path) -> bool,
) -> Vec<ShimFinding> {
    let mut found: Vec<ShimFinding> = Vec::new();
    for entry in std::env::split_paths(path_var) {
        let Some((manager, root)) = classify(&entry) else {
            continue;
        };
        if found.iter().any(|f| f.manager == manager.name) {
            continue;
        }
        let stripped: Vec<String> = stripped
            .iter()
            .filter(|n| n.starts_with(manager.var_prefix))
            .cloned()
            .collect();
        let granted = is_granted(&entry);
        if !stripped.is_empty() || !granted {
            found.push(ShimFinding {
                manager: manager.name,
                path_entry: entry,
                root,
                stripped,
                granted,
            });
        }
    }
    found
}

fn classify(entry: &Path) -> Option<(&'static Manager, PathBuf)> {
    let text = format!("{}/", entry.to_string_lossy());
    MANAGERS.iter().find_map(|m| {
        m.markers.iter().find_map(|marker| {
            let at = text.find(&format!("{marker}/"))?;
            Some((m, PathBuf::from(&text[..at + marker.len()])))
        })
    })
}

impl ShimFinding {
    /// The MGS2006 warning, with the lines that fix it.
    pub(crate) fn to_diagnostic(&self, home: Option<&Path>) -> Diagnostic {
        let mut d = Diagnostic::warning(format!(
            "`{}` on PATH is a {} shim directory, and {} will likely fail in the sandbox",
            self.path_entry.display(),
            self.manager,
            self.manager
        ))
        .with_code(Code::Mgs2006)
        .with_path(self.path_entry.display().to_string());
        if !self.stripped.is_empty() {
            d = d.with_note(format!(
                "stripped from children: {}",
                self.stripped.join(", ")
            ));
        }
        if !self.granted {
            d = d.with_note(format!("`{}` is not granted", self.path_entry.display()));
        }
        d.with_help(self.fix(home))
    }

    fn fix(&self, home: Option<&Path>) -> String {
        let root = match home.and_then(|h| self.root.strip_prefix(h).ok()) {
            Some(rest) => format!("~/{}", rest.display()),
            None => self.root.display().to_string(),
        };
        let prefix = MANAGERS
            .iter()
            .find(|m| m.name == self.manager)
            .map_or("", |m| m.var_prefix);
        format!(
            "if you trust spells with {}, add to magus.yaml:\n\
             sandbox:\n  allow:\n    - path: {root}\n      mode: ro\n  env:\n    passthrough:\n      - \"{prefix}*\"",
            self.manager
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    // The PATH below is a Unix one, joined with `:`.
    #[cfg(unix)]
    #[test]
    fn finds_each_manager_once_with_its_root() {
        let path = OsStr::new(
            "/home/u/.local/share/mise/shims:/usr/bin:/home/u/.pyenv/shims:/home/u/.pyenv/bin:/home/u/.nvm/versions/node/v20/bin",
        );
        let stripped = vec!["PYENV_ROOT".to_string(), "GITHUB_TOKEN".to_string()];
        let found = find_shims(path, &stripped, |p| p.starts_with("/usr"));
        let names: Vec<_> = found.iter().map(|f| f.manager).collect();
        assert_eq!(names, ["mise", "pyenv", "nvm"]);
        assert_eq!(found[0].root, PathBuf::from("/home/u/.local/share/mise"));
        assert_eq!(found[1].root, PathBuf::from("/home/u/.pyenv"));
        assert_eq!(found[1].stripped, ["PYENV_ROOT"]);
        assert_eq!(found[2].root, PathBuf::from("/home/u/.nvm"));
    }

    #[test]
    fn a_granted_manager_with_nothing_stripped_is_fine() {
        let path = OsStr::new("/home/u/.pyenv/shims");
        assert!(find_shims(path, &[], |_| true).is_empty());
    }

    #[test]
    fn the_fix_names_passthrough_and_allow_lines() {
        let path = OsStr::new("/home/u/.asdf/shims");
        let found = find_shims(path, &["ASDF_DIR".into()], |_| false);
        let d = found[0].to_diagnostic(Some(Path::new("/home/u")));
        assert_eq!(d.code, Some(Code::Mgs2006));
        let help = d.help.unwrap();
        assert!(help.contains("- path: ~/.asdf\n      mode: ro"), "{help}");
        assert!(help.contains("- \"ASDF_*\""), "{help}");
    }
}
