//! The workspace's spells: finding one by name (`build`, `build.buzz`, or
//! a path), "did you mean" for a near name, and the listing that `magus`,
//! `magus run` and `magus list` print, each spell with the first sentence
//! of its opening comment.

use super::{load, GlobalArgs, EXIT_CANNOT_RUN, EXIT_DENIED, EXIT_NO_SPELL};
use crate::diag::{edit_distance, Diagnostic, Location, SourceKind};
use crate::enforce::gate::{Denial, Gate, GateError};
use crate::policy::Policy;
use std::cell::OnceCell;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Why a spell could not be read, with the exit status that says so.
pub(crate) struct SpellError {
    pub diagnostic: Box<Diagnostic>,
    pub status: i32,
}

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
                SpellReadError::Denied(denial) => (denial.to_diagnostic(None), EXIT_DENIED),
                SpellReadError::Io(e) => unreadable(spell, &path, &dir, e),
            };
            SpellError {
                diagnostic: Box::new(diagnostic),
                status,
            }
        })?;
        let source = String::from_utf8(bytes).map_err(|e| {
            let offset = e.utf8_error().valid_up_to();
            let at = Location::at_byte(SourceKind::Spell, path.clone(), e.as_bytes(), offset);
            SpellError {
                diagnostic: Box::new(
                    Diagnostic::error(format!("spell {} is not valid UTF-8", path.display()))
                        .with_location(at)
                        .with_label(format!("first bad byte (offset {offset})")),
                ),
                status: EXIT_CANNOT_RUN,
            }
        })?;
        Ok((path, source))
    }

    /// The bytes of `path`, through the gate when the file lies in the
    /// workspace and the sandbox is on, else as given. The gate is handed
    /// the path relative to the workspace, so a workspace whose own path
    /// is not UTF-8 works.
    fn read(&self, path: &Path) -> Result<Vec<u8>, SpellReadError> {
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
    let status = if missing {
        EXIT_NO_SPELL
    } else {
        EXIT_CANNOT_RUN
    };
    (d, status)
}

/// Why a spell file's bytes could not be had.
enum SpellReadError {
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

/// `magus`, `magus run` and `magus list`: each spell with its description
/// (only the names under `--names`).
pub(super) fn list(global: &GlobalArgs, env: &[(OsString, OsString)], names_only: bool) -> i32 {
    let startup = match load(global, env) {
        Ok(startup) => startup,
        Err(status) => return status,
    };
    let dir = startup.policy.workspace().join("spells");
    let reader = SpellReader::new(&startup.policy);
    let mut spells: Vec<(String, PathBuf)> = spell_files(&dir)
        .into_iter()
        .map(|(name, path)| (printable(&name), path))
        .collect();
    spells.sort();
    let width = spells
        .iter()
        .map(|(n, _)| n.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    if names_only {
        for (name, _) in &spells {
            out.push_str(name);
            out.push('\n');
        }
        let _ = std::io::stdout().write_all(out.as_bytes());
        return 0;
    }
    for (name, path) in &spells {
        let summary = printable(&description(&reader, path).unwrap_or_default());
        out.push_str(format!("{name:<width$}  {summary}").trim_end());
        out.push('\n');
    }
    if spells.is_empty() {
        out.push_str(&format!("no spells in {}\n", dir.display()));
    }
    let _ = std::io::stdout().write_all(out.as_bytes());
    0
}

/// `text` with each control character escaped (`\u{1b}`): a child can
/// name a spell, or write its opening comment, with escape sequences that
/// a terminal would act on (set its title or clipboard, or answer into
/// its own input) when `magus list` prints them.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| match c.is_control() {
            true => c.escape_default().to_string(),
            false => c.to_string(),
        })
        .collect()
}

/// `(name, path)` of every `*.buzz` file in `dir`.
pub(super) fn spell_files(dir: &Path) -> Vec<(String, PathBuf)> {
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

/// The first sentence of a spell's opening comment, whole; none for a
/// spell the sandbox does not let magus read.
fn description(reader: &SpellReader<'_>, path: &Path) -> Option<String> {
    let text = String::from_utf8(reader.read(path).ok()?).ok()?;
    Some(first_sentence(&opening_comment(&text)))
}

/// The `//` lines at the top of a spell (blank lines before them skipped),
/// joined with spaces.
fn opening_comment(text: &str) -> String {
    let lines = text.lines().map(str::trim).skip_while(|l| l.is_empty());
    let words: Vec<&str> = lines
        .map_while(|l| l.strip_prefix("//"))
        .map(|l| l.trim_start_matches('/').trim())
        .collect();
    words.join(" ").trim().to_string()
}

/// Up to and including the first `.`, `!` or `?` that ends a sentence
/// (followed by a space or the end); all of it when there is none.
fn first_sentence(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        let ends = matches!(c, '.' | '!' | '?');
        if ends && chars.get(i + 1).is_none_or(|n| n.is_whitespace()) {
            return chars[..=i].iter().collect();
        }
    }
    text.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_is_the_first_sentence_whole() {
        let text = "// Your first spell. Run it with `magus run hello` (add words after it to\n// see them arrive).\nimport \"std\";\n";
        assert_eq!(first_sentence(&opening_comment(text)), "Your first spell.");
        let text = "\n// Builds the docs with `cargo doc` for every crate in\n// the workspace, then opens them\nfun main() > void {}\n";
        assert_eq!(
            first_sentence(&opening_comment(text)),
            "Builds the docs with `cargo doc` for every crate in the workspace, then opens them"
        );
        assert_eq!(first_sentence("Uses v1.2 of x. Then y."), "Uses v1.2 of x.");
        assert_eq!(opening_comment("import \"std\";\n// late\n"), "");
    }

    #[test]
    fn control_characters_are_listed_escaped() {
        assert_eq!(printable("build"), "build");
        assert_eq!(
            printable("x\u{1b}]52;c;aGk=\u{7}"),
            "x\\u{1b}]52;c;aGk=\\u{7}"
        );
        assert_eq!(printable("caf\u{e9}"), "caf\u{e9}");
    }

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
