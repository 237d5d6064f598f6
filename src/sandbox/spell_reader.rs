//! Reading the workspace's spells: finding one by name (`build`,
//! `build.buzz`, or a path), through the gate when it lies in the
//! workspace, with "did you mean" for a near name. Reads only; the
//! listing `magus list` prints is the CLI's.

use super::exit::{CANNOT_RUN, DENIED, NO_SPELL};
use super::SpellError;
use crate::diag::{edit_distance, Diagnostic, Location, SourceKind};
use crate::enforce::gate::{Denial, Gate, GateError};
use crate::policy::Policy;
use std::cell::OnceCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// The spell's path and source: `spells/NAME.buzz` (`NAME` or
/// `NAME.buzz`), or a path to a file (anything with a `/`, relative to the
/// current directory).
///
/// A spell in the workspace is read through the gate of `policy`, as an
/// import is: a child of an earlier run can link `spells/x.buzz` to
/// `~/.npmrc`, and `magus list`, `check` or a parse error would print the
/// linked file. A path outside the workspace is the user's own choice and
/// is read as given.
pub(crate) fn read_spell(policy: &Policy, spell: &str) -> Result<(PathBuf, String), SpellError> {
    SpellReader::new(policy).read_spell(spell)
}

/// Reads the spells of one workspace through one gate, made when the
/// first spell inside the workspace is read (`magus list`, `check` and
/// `test` read many).
pub(crate) struct SpellReader<'a> {
    policy: &'a Policy,
    gate: OnceCell<Gate>,
}

impl<'a> SpellReader<'a> {
    pub(crate) fn new(policy: &'a Policy) -> SpellReader<'a> {
        SpellReader {
            policy,
            gate: OnceCell::new(),
        }
    }

    /// [`read_spell`], through this reader's gate.
    pub(crate) fn read_spell(&self, spell: &str) -> Result<(PathBuf, String), SpellError> {
        let dir = self.policy.workspace().join("spells");
        let path = if spell.contains('/') {
            // Typed on the command line: relative to the current directory,
            // as in every tool, never to the workspace root; made absolute
            // here so the message names the file that was tried.
            std::path::absolute(spell).unwrap_or_else(|_| PathBuf::from(spell))
        } else {
            let name = spell.strip_suffix(".buzz").unwrap_or(spell);
            dir.join(format!("{name}.buzz"))
        };
        let bytes = self.read(&path).map_err(|e| {
            let (diagnostic, status) = match e {
                SpellReadError::Denied(denial) => (denial.to_diagnostic(None), DENIED),
                SpellReadError::Io(e) => unreadable(spell, &path, &dir, e),
            };
            SpellError::new(diagnostic, status)
        })?;
        let source = String::from_utf8(bytes).map_err(|e| {
            let offset = e.utf8_error().valid_up_to();
            let at = Location::at_byte(SourceKind::Spell, path.clone(), e.as_bytes(), offset);
            let d = Diagnostic::error(format!("spell {} is not valid UTF-8", path.display()))
                .with_location(at)
                .with_label(format!("first bad byte (offset {offset})"));
            SpellError::new(d, CANNOT_RUN)
        })?;
        Ok((path, source))
    }

    /// The bytes of `path`, through the gate when the file lies in the
    /// workspace and the sandbox is on, else as given. The gate is handed
    /// the path relative to the workspace, so a workspace whose own path
    /// is not UTF-8 works.
    pub(crate) fn read(&self, path: &Path) -> Result<Vec<u8>, SpellReadError> {
        let policy = self.policy;
        let inside = within_workspace(policy, path);
        let confined = policy.state() == crate::policy::SandboxState::On;
        let Some(relative) = inside.filter(|_| confined) else {
            return read_capped(std::fs::File::open(path)).map_err(SpellReadError::Io);
        };
        let Some(spelled) = relative.to_str() else {
            let e = std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path is not UTF-8");
            return Err(SpellReadError::Io(e));
        };
        let gate = self
            .gate
            .get_or_init(|| Gate::new(Rc::new(policy.clone()), policy.workspace().to_path_buf()));
        match gate.open_file(spelled) {
            Ok(file) => read_capped(Ok(file)).map_err(SpellReadError::Io),
            Err(GateError::Denied(denial)) => Err(SpellReadError::Denied(denial)),
            Err(GateError::Io { source, .. }) => Err(SpellReadError::Io(source)),
            Err(other) => Err(SpellReadError::Io(std::io::Error::other(other.to_string()))),
        }
    }
}

/// The error for a spell file that cannot be read, and its exit status.
fn unreadable(spell: &str, path: &Path, dir: &Path, e: std::io::Error) -> (Diagnostic, i32) {
    let missing = e.kind() == std::io::ErrorKind::NotFound;
    let mut d = Diagnostic::error(format!(
        "cannot read spell `{spell}` at {}: {e}",
        path.display()
    ));
    d = match near_name(spell, &spell_files(dir)) {
        Some(near) if missing => d.with_help(format!("did you mean `{near}`?")),
        _ => d.with_help("`magus list` shows the spells of this workspace"),
    };
    let status = if missing { NO_SPELL } else { CANNOT_RUN };
    (d, status)
}

/// Why a spell file's bytes could not be had.
pub(crate) enum SpellReadError {
    /// The sandbox refuses the file (a link out of the workspace).
    Denied(Denial),
    Io(std::io::Error),
}

/// `path` relative to the workspace when it lies inside it, resolved
/// lexically as the gate resolves a spelled path.
#[cfg(not(windows))]
fn within_workspace(policy: &Policy, path: &Path) -> Option<PathBuf> {
    let workspace = policy.workspace();
    let normal = crate::policy::normalize(workspace, path).ok()?;
    let relative = normal.as_path().strip_prefix(workspace).ok()?;
    Some(relative.to_path_buf())
}

/// On Windows through the Windows path model: `path` becomes a key
/// against the workspace's key and is compared case-folded, as the gate
/// compares (a `\\?\Z:\...` workspace is no POSIX path).
#[cfg(windows)]
fn within_workspace(policy: &Policy, path: &Path) -> Option<PathBuf> {
    use crate::policy::native;
    let workspace = crate::policy::NormalPath::new(policy.workspace_key()).ok()?;
    // An absolute path is the OS's own (`\\?\` included); a relative
    // one is spelled against the workspace.
    let key = if path.is_absolute() {
        native::from_os(path).ok()?
    } else {
        native::join(&workspace, path.to_str()?).ok()?
    };
    native::folded(key.as_path())
        .strip_prefix(native::folded(workspace.as_path()))
        .ok()?;
    let depth = workspace.as_path().components().count();
    Some(key.as_path().components().skip(depth).collect())
}

/// The spell name nearest to `wanted`, if one is near enough to be a typo.
fn near_name(wanted: &str, spells: &[(String, PathBuf)]) -> Option<String> {
    let wanted = wanted.strip_suffix(".buzz").unwrap_or(wanted);
    spells
        .iter()
        .map(|(name, _)| (edit_distance(wanted, name), name))
        .filter(|(d, name)| *d > 0 && *d <= (name.chars().count() / 3).max(1))
        .min()
        .map(|(_, name)| name.clone())
}

/// `(name, path)` of every `*.buzz` file in `dir`.
pub(crate) fn spell_files(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "buzz") && p.is_file())
        .filter_map(|p| Some((p.file_stem()?.to_string_lossy().into_owned(), p)))
        .collect()
}

/// The largest spell file magus reads: far above any real spell, and a
/// bound on what `magus run /dev/zero` or a runaway generated file costs.
const SPELL_SIZE_LIMIT: u64 = 16 * 1024 * 1024;

/// A spell file's bytes, refusing one over [`SPELL_SIZE_LIMIT`] (device
/// files and pipes included) instead of reading without end.
fn read_capped(file: std::io::Result<std::fs::File>) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    file?.take(SPELL_SIZE_LIMIT + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > SPELL_SIZE_LIMIT {
        return Err(std::io::Error::other(format!(
            "it is larger than {} MiB, the limit for a spell",
            SPELL_SIZE_LIMIT / (1024 * 1024)
        )));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_names_are_suggested() {
        let spells: Vec<(String, PathBuf)> = ["hello", "build", "steal"]
            .iter()
            .map(|n| (n.to_string(), PathBuf::new()))
            .collect();
        assert_eq!(near_name("hellp", &spells).as_deref(), Some("hello"));
        assert_eq!(near_name("biuld.buzz", &spells).as_deref(), Some("build"));
        assert_eq!(near_name("deploy", &spells), None);
        assert_eq!(edit_distance("sandbx", "sandbox"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }
}
