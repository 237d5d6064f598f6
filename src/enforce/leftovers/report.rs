//! What the sweep tells the user: one MGS2014 warning for each entry set
//! aside or put back (what, where it went, how to take it back), and,
//! under `-v` and always in JSON, the executables the run wrote in the
//! workspace.

use std::path::Path;

use super::{names, Executables, Findings, Item, Left, Outcome, Watch};
use crate::diag::{
    shell_word, shown, Code, Diagnostic, MessageFormat, OutputOptions, Renderer, Verbosity,
};

/// How many executables a run's note names, at most.
const MAX_LISTED: usize = 50;

/// How many removed bytecode files the one bytecode warning names.
const BYTECODE_LISTED: usize = 5;

/// How many entries set aside are said one by one; a run that left
/// thousands (to drown the terminal) gets one line for the rest.
const MAX_SAID: usize = 50;

/// Sweeps what the run left ([`Watch::after`]) and says what it did on
/// stderr, as the run's output options ask. Call once no process of the
/// run is left.
pub(crate) fn sweep_and_say(watch: &Watch, output: OutputOptions) {
    emit(&watch.after(executables_wanted(output)), output);
}

/// Whether the run's output shows the executables it wrote: under `-v`,
/// and always in JSON.
pub(crate) fn executables_wanted(options: OutputOptions) -> Executables {
    match options.verbosity == Verbosity::Verbose || options.format == MessageFormat::Json {
        true => Executables::List,
        false => Executables::Skip,
    }
}

/// Says what `found` holds on stderr, as the run's output options ask.
pub(crate) fn emit(found: &Findings, output: OutputOptions) {
    let renderer = Renderer::for_output(output);
    for diagnostic in diagnostics(found) {
        renderer.emit(&diagnostic);
    }
    if let Some(note) = executables(&found.executables) {
        renderer.emit(&note);
    }
}

/// The warnings for what was set aside or put back, and one for the
/// bytecode removed.
pub(crate) fn diagnostics(found: &Findings) -> Vec<Diagnostic> {
    let (removed, items): (Vec<&Item>, Vec<&Item>) = found
        .items
        .iter()
        .partition(|i| i.left == Left::Bytecode && i.outcome == Outcome::Removed);
    let mut said: Vec<Diagnostic> = items.iter().take(MAX_SAID).map(|i| item(i)).collect();
    said.extend(bytecode(&removed));
    if let Some(more) = items.len().checked_sub(MAX_SAID).filter(|n| *n > 0) {
        let listed = found.manifest.as_ref().map_or_else(
            || "see the quarantine's MANIFEST".to_string(),
            |m| format!("`{}` lists them all", shown(m)),
        );
        said.push(
            Diagnostic::warning(format!(
                "and {more} more entries the run left behind were set aside or put back"
            ))
            .with_code(Code::Mgs2014)
            .with_note(listed),
        );
    }
    if found.truncated {
        said.push(
            Diagnostic::warning(format!(
                "the check after the run stopped after {} entries: what the run left deeper in \
                 the workspace was not looked at",
                found.entries
            ))
            .with_code(Code::Mgs2014)
            .with_help(
                "grant narrower `rw` directories, or keep generated trees out of the workspace",
            ),
        );
    }
    said
}

/// One warning for every bytecode file removed: a spell that runs Python
/// writes a whole cache each run, which would read as a wall of warnings
/// one by one.
fn bytecode(removed: &[&Item]) -> Option<Diagnostic> {
    let first = removed.first()?;
    let n = removed.len();
    let (files, them) = match n {
        1 => ("file".to_string(), "it"),
        _ => (format!("{n} files"), "them"),
    };
    let mut d = Diagnostic::warning(format!(
        "the run wrote Python bytecode ({files} in `__pycache__`), which python would run later, \
         outside the sandbox, instead of the sources beside {them}"
    ))
    .with_code(Code::Mgs2014)
    .with_path(shown(&first.path))
    .with_note(format!(
        "magus removed {them}: python compiles the sources again at the next import"
    ));
    for item in removed.iter().take(BYTECODE_LISTED) {
        d = d.with_note(format!("removed: {}", shown(&item.path)));
    }
    if n > BYTECODE_LISTED {
        d = d.with_note(format!("and {} more", n - BYTECODE_LISTED));
    }
    Some(d.with_help(
        "a spell that runs Python can keep it from writing bytecode: \
         env.set(\"PYTHONDONTWRITEBYTECODE\", \"1\") before it starts python",
    ))
}

fn item(item: &Item) -> Diagnostic {
    let path = shown(&item.path);
    let what = match item.left {
        Left::Repository
            if item
                .path
                .file_name()
                .is_some_and(|n| n.eq_ignore_ascii_case(".hg")) =>
        {
            format!(
                "the run created `{path}`: Mercurial would take it for a repository and run the \
                 hooks and extensions its hgrc names, outside the sandbox"
            )
        }
        Left::Repository => format!(
            "the run created `{path}`: git would take it for a repository and run the commands \
             its config and hooks name, outside the sandbox"
        ),
        Left::BareRepository => format!(
            "the run made `{}` a repository to git (`HEAD` beside `objects` and `refs`); git \
             would run the commands its config names there, outside the sandbox; `{path}` was \
             part of it",
            shown(item.path.parent().unwrap_or(Path::new("/")))
        ),
        Left::RunLater => format!(
            "the run created or changed `{path}`, which {} obeys later, outside the sandbox",
            tool(&item.path)
        ),
        Left::StartupFile => format!(
            "the run created or changed `{path}`, a start-up file that a shell, git, ssh or a \
             build tool reads and obeys later, outside the sandbox"
        ),
        Left::Protected => format!(
            "a child changed `{path}`, which children may not write (nothing held it read-only \
             during this run)"
        ),
        Left::Flooded => format!(
            "a child wrote more than {} entries into `{path}`, which children may not write: \
             filled so, what it planted there could lie past what magus looks through after a run",
            super::noted::MAX_SET_ASIDE
        ),
        Left::BrokenHead => format!(
            "a child made `{path}` invalid, so git would look above it for another repository"
        ),
        Left::Bytecode => format!(
            "the run wrote `{path}`, Python bytecode that python would run later, outside the \
             sandbox, instead of its source"
        ),
        Left::Submodule => format!(
            "the run created `{path}`: `git submodule update` would use it as the submodule's \
             repository instead of cloning, and run the commands its config and hooks name, \
             outside the sandbox"
        ),
    };
    let diagnostic = Diagnostic::warning(what)
        .with_code(Code::Mgs2014)
        .with_path(shown(&item.path));
    outcome(diagnostic, &item.path, &item.outcome)
}

fn outcome(d: Diagnostic, path: &Path, outcome: &Outcome) -> Diagnostic {
    let back = |to: &Path| {
        format!(
            "if it was intended, inspect it and move it back: mv {} {}",
            shell_word(to),
            shell_word(path)
        )
    };
    match outcome {
        Outcome::Moved(to) => d
            .with_note(format!("magus moved it to `{}`", shown(to)))
            .with_help(back(to)),
        Outcome::Replaced(to) => d
            .with_note(format!(
                "magus moved the run's version to `{}` and put back the one it noted when the run started",
                shown(to)
            ))
            .with_help(back(to)),
        Outcome::PutBack => d.with_note("magus put back the version it noted when the run started"),
        Outcome::Removed => d.with_note("magus removed it: its tool makes it again from the sources"),
        Outcome::Failed(why) => d
            .with_note(format!("magus could not set it aside: {why}"))
            .with_help("remove it before you run git, cargo, npm or a shell there"),
    }
}

/// Which tool reads the run-later file at `path`.
fn tool(path: &Path) -> &'static str {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase());
    let parent = path
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().to_ascii_lowercase());
    match (name.as_deref(), parent.as_deref()) {
        (Some(".gitmodules"), _) => "git",
        (Some("rebase-merge"), _) => "git (`git rebase --continue` runs its `exec` lines)",
        (Some(".npmrc" | ".yarnrc.yml" | ".yarnrc"), _) => "npm or yarn",
        (Some(".pnpmfile.cjs"), _) => "pnpm",
        (Some("bunfig.toml"), _) => "bun",
        (Some(".envrc"), _) => "direnv",
        (Some("mise.toml" | ".mise.toml" | "mise.local.toml" | ".mise.local.toml"), _) => "mise",
        (Some(name), _) if names::is_any(std::ffi::OsStr::new(name), &names::VERSION_FILES) => {
            "mise (a `path:` version puts a directory of the run's first in `PATH`)"
        }
        (Some(".mcp.json" | ".claude.json" | "opencode.json"), _) => "an editor's agent",
        (Some(".ripgreprc"), _) => "ripgrep",
        (Some("rust-toolchain.toml" | "rust-toolchain"), _) => "rustup",
        (Some(".irbrc" | "irb.rc" | "_irbrc" | "$irbrc" | ".pryrc"), _) => {
            "Ruby's prompt (irb, pry, `rails console`) started there"
        }
        (Some(".rprofile" | ".renviron"), _) => "R started there",
        (Some(".ghci"), _) => "GHCi started there",
        (Some(".octaverc"), _) => "Octave started there",
        (Some("magus.yaml" | "magus.lock"), _) => "magus",
        (Some("__pycache__"), _) | (_, Some("__pycache__")) => "python",
        (_, Some(".cargo")) | (Some(".cargo"), _) => "cargo",
        (
            _,
            Some(
                ".claude" | ".cursor" | ".gemini" | ".roo" | ".kilocode" | ".amazonq" | ".continue",
            ),
        ) => "a coding agent",
        (_, Some(".mise")) => "mise",
        _ if python_module(path) => {
            "python (`python3 -m`, `-c` and its prompt, run there, import it in place of the \
             standard library's module of that name)"
        }
        _ => "an editor",
    }
}

/// Whether `path` is a module, a package's `__init__` or a link the sweep
/// set aside as Python's (`names::PYTHON_MODULES`).
fn python_module(path: &Path) -> bool {
    let name = path.file_name().unwrap_or_default();
    let package = path.parent().and_then(Path::file_name);
    names::is_python_module_file(name)
        || names::is_python_module(name)
        || names::is_package_init(name) && package.is_some_and(names::is_python_module)
}

/// The note listing the executables the run wrote in the workspace.
fn executables(paths: &[std::path::PathBuf]) -> Option<Diagnostic> {
    if paths.is_empty() {
        return None;
    }
    let mut note = Diagnostic::note(format!(
        "the run created or changed {} executable file{} in the workspace; check {} before you run {}",
        paths.len(),
        if paths.len() == 1 { "" } else { "s" },
        if paths.len() == 1 { "it" } else { "them" },
        if paths.len() == 1 { "it" } else { "them" },
    ));
    for path in paths.iter().take(MAX_LISTED) {
        note = note.with_note(format!("executable: {}", shown(path)));
    }
    if paths.len() > MAX_LISTED {
        note = note.with_note(format!("and {} more", paths.len() - MAX_LISTED));
    }
    Some(note)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn each_outcome_says_where_it_went_and_how_to_take_it_back() {
        let moved = Item {
            path: PathBuf::from("/w/src/HEAD"),
            left: Left::BareRepository,
            outcome: Outcome::Moved(PathBuf::from("/w/.magus/quarantine/r/src%2FHEAD")),
        };
        let text = crate::diag::render(&item(&moved), MessageFormat::Human);
        assert!(text.contains("warning[MGS2014]"), "{text}");
        assert!(text.contains("`/w/src` a repository to git"), "{text}");
        assert!(
            text.contains("mv '/w/.magus/quarantine/r/src%2FHEAD' '/w/src/HEAD'"),
            "{text}"
        );
    }

    #[test]
    fn bytecode_removed_is_one_warning_naming_the_first_files() {
        let pyc = |n: usize| Item {
            path: PathBuf::from(format!("/w/pkg/__pycache__/m{n}.cpython-312.pyc")),
            left: Left::Bytecode,
            outcome: Outcome::Removed,
        };
        let hook = Item {
            path: PathBuf::from("/w/.envrc"),
            left: Left::RunLater,
            outcome: Outcome::Moved(PathBuf::from("/w/.magus/quarantine/r/.envrc")),
        };
        let mut items: Vec<Item> = (0..7).map(pyc).collect();
        items.push(hook);
        let found = Findings {
            items,
            ..Findings::default()
        };
        let said = diagnostics(&found);
        assert_eq!(said.len(), 2, "{said:?}");
        let text = crate::diag::render(&said[1], MessageFormat::Human);
        assert!(
            text.contains("Python bytecode (7 files in `__pycache__`)"),
            "{text}"
        );
        assert!(
            text.contains("removed: /w/pkg/__pycache__/m4.cpython-312.pyc"),
            "{text}"
        );
        assert!(!text.contains("m5.cpython"), "{text}");
        assert!(text.contains("and 2 more"), "{text}");
        assert!(text.contains("PYTHONDONTWRITEBYTECODE"), "{text}");
        let envrc = crate::diag::render(&said[0], MessageFormat::Human);
        assert!(envrc.contains("`/w/.envrc`"), "{envrc}");
    }

    #[test]
    fn run_later_files_name_their_tool() {
        let cases = [
            ("/h/.cargo/config", "cargo"),
            ("/w/.envrc", "direnv"),
            ("/w/.vscode/tasks.json", "an editor"),
            ("/w/MAGUS.YAML", "magus"),
            ("/w/.yarnrc", "npm or yarn"),
            ("/w/crate/Rust-Toolchain.toml", "rustup"),
            ("/w/venv/__init__.py", "python (`python3 -m`, `-c` and its prompt, run there, import it in place of the standard library's module of that name)"),
            ("/w/sub/Mise.Toml", "mise"),
            ("/w/.gemini/settings.json", "a coding agent"),
            ("/w/pkg/__pycache__/m.cpython-312.pyc", "python"),
            ("/w/__PYCACHE__", "python"),
        ];
        for (path, expected) in cases {
            assert_eq!(tool(Path::new(path)), expected, "{path}");
        }
    }
}
