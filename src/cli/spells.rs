//! `magus list` (and bare `magus`, `magus run`): the workspace's spells,
//! each with the first sentence of its opening comment. Reading a spell
//! is the library's (`crate::sandbox::spell_reader`).

use super::{load, GlobalArgs};
use crate::sandbox::spell_reader::{spell_files, SpellReader};
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

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
}
