//! Workspace discovery and the per-invocation override of `enabled`.
//!
//! The environment is always an explicit input (a slice of name/value
//! pairs), never read from the process here, so every rule is testable.

use super::config::CONFIG_FILE_NAME;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// The variable that overrides `sandbox.enabled` for one invocation.
pub(crate) const ENABLED_VAR: &str = "MAGUS_SANDBOX_ENABLED";

/// How the workspace root is chosen.
#[derive(Debug, Clone, Copy)]
pub enum WorkspaceArg<'a> {
    /// The nearest ancestor of this directory (itself included) that holds
    /// `magus.yaml`.
    Discover { start: &'a Path },
    /// This directory (`--workspace DIR`), with or without a `magus.yaml`.
    Explicit(&'a Path),
}

/// A workspace root and its configuration file, if it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Workspace {
    /// The real (canonical) root.
    pub root: PathBuf,
    pub config: Option<PathBuf>,
    /// Found by discovery inside other workspaces: the `magus.yaml` of
    /// each enclosing one, nearest first. Spells' programs in any of them
    /// may write here, and plant a chain of configs (one turning the
    /// sandbox off at every level), so this workspace's own `magus.yaml`
    /// may have been planted by one (`super::load::declare` decides what
    /// that allows).
    pub enclosing: Vec<PathBuf>,
}

/// Why no workspace could be found or used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkspaceError {
    #[error("no {CONFIG_FILE_NAME} in `{}` or any parent directory", start.display())]
    NotFound { start: PathBuf },
    #[error("cannot use `{}` as the workspace: {source}", path.display())]
    Unusable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{}` is not a directory", .0.display())]
    NotADirectory(PathBuf),
    #[error("`{}` is not a regular file", .0.display())]
    ConfigNotAFile(PathBuf),
}

/// Finds the workspace root as `arg` says.
pub(crate) fn find_workspace(arg: WorkspaceArg<'_>) -> Result<Workspace, WorkspaceError> {
    match arg {
        WorkspaceArg::Discover { start } => discover(start),
        WorkspaceArg::Explicit(dir) => {
            let root = real_dir(dir)?;
            let file = root.join(CONFIG_FILE_NAME);
            let config = config_file(file)?;
            Ok(Workspace {
                root,
                config,
                enclosing: Vec::new(),
            })
        }
    }
}

fn discover(start: &Path) -> Result<Workspace, WorkspaceError> {
    let real = real_dir(start)?;
    let mut ancestors = real.ancestors();
    while let Some(dir) = ancestors.next() {
        if let Some(file) = config_file(dir.join(CONFIG_FILE_NAME))? {
            // Anything but a regular file above is no workspace of ours.
            let enclosing = ancestors
                .filter_map(|outer| config_file(outer.join(CONFIG_FILE_NAME)).ok().flatten())
                .collect();
            return Ok(Workspace {
                root: dir.to_path_buf(),
                config: Some(file),
                enclosing,
            });
        }
    }
    Err(WorkspaceError::NotFound { start: real })
}

/// `file` when it is a regular file (or a link to one), `None` when there
/// is nothing there; anything else named `magus.yaml` (a directory, a
/// socket) is an error rather than a workspace without configuration.
fn config_file(file: PathBuf) -> Result<Option<PathBuf>, WorkspaceError> {
    match std::fs::metadata(&file) {
        Ok(meta) if meta.is_file() => Ok(Some(file)),
        Ok(_) => Err(WorkspaceError::ConfigNotAFile(file)),
        Err(_) if std::fs::symlink_metadata(&file).is_ok() => {
            Err(WorkspaceError::ConfigNotAFile(file))
        }
        Err(_) => Ok(None),
    }
}

fn real_dir(dir: &Path) -> Result<PathBuf, WorkspaceError> {
    let real = std::fs::canonicalize(dir).map_err(|source| WorkspaceError::Unusable {
        path: dir.to_path_buf(),
        source,
    })?;
    if !real.is_dir() {
        return Err(WorkspaceError::NotADirectory(real));
    }
    Ok(real)
}

/// The value of `name` in `env` (the first occurrence, as `getenv` does).
/// Windows' variable names are case-insensitive (`Path` is `PATH`).
pub(crate) fn lookup<'e>(env: &'e [(OsString, OsString)], name: &str) -> Option<&'e OsStr> {
    let same = |n: &[u8]| match cfg!(windows) {
        true => n.eq_ignore_ascii_case(name.as_bytes()),
        false => n == name.as_bytes(),
    };
    env.iter()
        .find(|(n, _)| same(n.as_encoded_bytes()))
        .map(|(_, v)| v.as_os_str())
}

/// `MAGUS_SANDBOX_ENABLED` was set to something other than `1` or `0`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{ENABLED_VAR} is `{value}`; it must be `1` (on) or `0` (off)")]
pub struct BadOverride {
    /// The value, lossily decoded and escaped for display.
    pub value: String,
}

/// What `MAGUS_SANDBOX_ENABLED` says: `Some(true)` for `1`, `Some(false)`
/// for `0`, `None` when unset; any other value is an error.
pub(crate) fn enabled_override(env: &[(OsString, OsString)]) -> Result<Option<bool>, BadOverride> {
    match lookup(env, ENABLED_VAR).map(OsStr::as_encoded_bytes) {
        None => Ok(None),
        Some(b"1") => Ok(Some(true)),
        Some(b"0") => Ok(Some(false)),
        Some(other) => Err(BadOverride {
            value: String::from_utf8_lossy(other).escape_debug().to_string(),
        }),
    }
}

/// The directory of a workspace's spells, relative to its root.
pub(crate) const SPELLS_DIR: &str = "spells";

/// The names of the workspace's spells (`spells/NAME.buzz`), sorted: what
/// a key under `spells:` in `magus.yaml` may name.
pub(crate) fn spell_names(root: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root.join(SPELLS_DIR)) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            Some(name.strip_suffix(".buzz")?.to_string())
        })
        .filter(|name| !name.is_empty())
        .collect();
    names.sort();
    names
}

/// The name under `spells:` of the spell that `arg` (as given to `magus
/// run`) names: `NAME` or `NAME.buzz`, or a path (anything with a `/`) to
/// a file directly in the workspace's `spells/`. `None` for a spell file
/// elsewhere, which runs under the workspace's policy alone.
pub(crate) fn spell_name(root: &Path, arg: &str) -> Option<String> {
    if !arg.contains('/') {
        let name = arg.strip_suffix(".buzz").unwrap_or(arg);
        return (!name.is_empty()).then(|| name.to_string());
    }
    let path = std::path::absolute(arg).ok()?;
    let name = path.file_name()?.to_str()?.strip_suffix(".buzz")?;
    let parent = std::fs::canonicalize(path.parent()?).ok()?;
    (parent == root.join(SPELLS_DIR) && !name.is_empty()).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs.iter().map(|(n, v)| (n.into(), v.into())).collect()
    }

    #[test]
    fn override_table() {
        let cases = [
            (vec![], Ok(None)),
            (vec![(ENABLED_VAR, "1")], Ok(Some(true))),
            (vec![(ENABLED_VAR, "0")], Ok(Some(false))),
            (
                vec![(ENABLED_VAR, "yes")],
                Err(BadOverride {
                    value: "yes".into(),
                }),
            ),
            (
                vec![(ENABLED_VAR, "")],
                Err(BadOverride { value: "".into() }),
            ),
            (vec![("OTHER", "1")], Ok(None)),
        ];
        for (pairs, want) in cases {
            assert_eq!(enabled_override(&env(&pairs)), want, "{pairs:?}");
        }
    }

    #[test]
    fn discovery_finds_the_nearest_config() {
        let dir = tempfile::tempdir().unwrap();
        let outer = dir.path().join("outer");
        let inner = outer.join("inner/deep");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::write(outer.join(CONFIG_FILE_NAME), "").unwrap();
        let ws = find_workspace(WorkspaceArg::Discover { start: &inner }).unwrap();
        assert_eq!(ws.root, outer.canonicalize().unwrap());
        assert_eq!(ws.enclosing, Vec::<PathBuf>::new());
        std::fs::write(inner.join(CONFIG_FILE_NAME), "").unwrap();
        let ws = find_workspace(WorkspaceArg::Discover { start: &inner }).unwrap();
        assert_eq!(ws.root, inner.canonicalize().unwrap());
        let outer_config = outer.canonicalize().unwrap().join(CONFIG_FILE_NAME);
        assert_eq!(ws.enclosing, std::slice::from_ref(&outer_config));
        // Every enclosing config, nearest first.
        let middle = outer.join("inner");
        std::fs::write(middle.join(CONFIG_FILE_NAME), "").unwrap();
        let ws = find_workspace(WorkspaceArg::Discover { start: &inner }).unwrap();
        let middle_config = middle.canonicalize().unwrap().join(CONFIG_FILE_NAME);
        assert_eq!(ws.enclosing, [middle_config, outer_config]);
        let explicit = find_workspace(WorkspaceArg::Explicit(&inner)).unwrap();
        assert_eq!(explicit.enclosing, Vec::<PathBuf>::new());
    }

    #[test]
    fn explicit_workspace_needs_no_config() {
        let dir = tempfile::tempdir().unwrap();
        let ws = find_workspace(WorkspaceArg::Explicit(dir.path())).unwrap();
        assert_eq!(ws.config, None);
        let missing = dir.path().join("missing");
        let err = find_workspace(WorkspaceArg::Explicit(&missing)).unwrap_err();
        assert!(matches!(err, WorkspaceError::Unusable { .. }));
    }
}
