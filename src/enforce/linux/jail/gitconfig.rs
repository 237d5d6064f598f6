//! Paths a git config names, so the jail binds them read-only too.
//!
//! Binding `.git/config` and `.git/hooks` read-only is not enough when the
//! config sends git elsewhere in the work tree, which children may write:
//! husky's `core.hooksPath = .husky/_` (its hooks call `.husky/pre-commit`),
//! `include.path = ../.gitconfig` (a shared config committed to the
//! repository, which can set `core.fsmonitor`, run by the next `git
//! status`), or a command given by path (`core.fsmonitor =
//! ./tools/watch.sh`, `alias.x = !./x.sh`). A child that rewrote one of
//! those ran its code outside the sandbox at the user's next `git status`
//! or `git commit` (`tests/jail.rs`, `git_config_named_paths_stay_read_only`).
//!
//! This reads the config as git does for these keys (sections and keys in
//! any case, quoted values, comments, continued lines) and follows existing
//! includes a few levels down. It names candidates only: the caller binds
//! those that exist under a writable grant. Deliberately not a complete
//! git: a command hidden behind a shell (`!sh -c './x'`) is not found.

use std::path::{Path, PathBuf};

/// How deep includes are followed (git itself stops at 10).
const MAX_INCLUDE_DEPTH: usize = 4;

/// What a config names.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Named {
    /// `core.hooksPath` directories.
    pub hook_dirs: Vec<PathBuf>,
    /// Included config files (`include.path`, `includeIf.*.path`), and
    /// programs given by path in any value.
    pub files: Vec<PathBuf>,
}

/// Where relative paths of one config lead.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bases<'a> {
    /// `~/` in a value.
    pub home: Option<&'a Path>,
    /// Where git runs hooks and commands: the work tree (for a bare
    /// repository, the git directory); `None` for a global config, whose
    /// relative names depend on the repository.
    pub work_tree: Option<&'a Path>,
}

/// The paths named by the config file `config` and, recursively, by the
/// files it includes.
pub(crate) fn named_paths(config: &Path, bases: Bases<'_>) -> Named {
    let mut named = Named::default();
    collect(config, bases, 0, &mut named);
    named
}

/// Every `section.key = value` of the config file `config` (section and
/// key lower-cased, subsections dropped), or `None` when it cannot be
/// read whole (missing, not a file, over 1 MiB). Includes are entries
/// like any other: not followed.
pub(crate) fn entries(config: &Path) -> Option<Vec<(String, String, String)>> {
    const MAX_LEN: u64 = 1 << 20;
    let meta = std::fs::symlink_metadata(config).ok()?;
    if !meta.is_file() || meta.len() > MAX_LEN {
        return None;
    }
    let text = std::fs::read(config).ok()?;
    let entries = parse(&String::from_utf8_lossy(&text));
    Some(
        entries
            .into_iter()
            .map(|e| (e.section, e.key, e.value))
            .collect(),
    )
}

/// Whether the config file `config` mentions `word` (lower case)
/// anywhere, in any case; a missing or unreadable file mentions nothing.
pub(crate) fn mentions(config: &Path, word: &str) -> bool {
    const MAX_LEN: u64 = 1 << 20;
    match std::fs::metadata(config) {
        Ok(meta) if meta.is_file() && meta.len() <= MAX_LEN => std::fs::read(config)
            .map(|text| {
                String::from_utf8_lossy(&text)
                    .to_ascii_lowercase()
                    .contains(word)
            })
            .unwrap_or(false),
        _ => false,
    }
}

fn collect(config: &Path, bases: Bases<'_>, depth: usize, named: &mut Named) {
    // A config larger than this is no config a person wrote; read none of it.
    const MAX_LEN: u64 = 1 << 20;
    let Ok(meta) = std::fs::metadata(config) else {
        return;
    };
    if !meta.is_file() || meta.len() > MAX_LEN {
        return;
    }
    let Ok(text) = std::fs::read(config) else {
        return;
    };
    let dir = config.parent().unwrap_or(Path::new("/"));
    for entry in parse(&String::from_utf8_lossy(&text)) {
        match (entry.section.as_str(), entry.key.as_str()) {
            ("core", "hookspath") => {
                if let Some(path) = resolve(&entry.value, bases.home, bases.work_tree) {
                    named.hook_dirs.push(path);
                }
            }
            ("include" | "includeif", "path") => {
                let Some(path) = resolve(&entry.value, bases.home, Some(dir)) else {
                    continue;
                };
                if depth < MAX_INCLUDE_DEPTH {
                    collect(&path, bases, depth + 1, named);
                }
                named.files.push(path);
            }
            _ => {
                if let Some(path) =
                    program_path(&entry.value).and_then(|p| resolve(p, bases.home, bases.work_tree))
                {
                    named.files.push(path);
                }
            }
        }
    }
}

/// The program of a command value when it is given by path: its first
/// word (after an alias's `!`) holding a `/` and no URL scheme.
fn program_path(value: &str) -> Option<&str> {
    let word = value
        .trim_start()
        .trim_start_matches('!')
        .split_whitespace()
        .next()?;
    let word = word.trim_matches(|c| c == '\'' || c == '"');
    (word.contains('/') && !word.contains("://")).then_some(word)
}

/// `~/x` against `home`, an absolute path as it is, a relative one against
/// `base`.
fn resolve(value: &str, home: Option<&Path>, base: Option<&Path>) -> Option<PathBuf> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    if let Some(rest) = value.strip_prefix("~/") {
        return home.map(|h| h.join(rest));
    }
    let path = Path::new(value);
    match path.is_absolute() {
        true => Some(path.to_path_buf()),
        false => base.map(|b| b.join(path)),
    }
}

/// One `key = value` of a config, section and key lower-cased (a
/// subsection, which keeps its case, is not needed here).
#[derive(Debug, PartialEq, Eq)]
struct Entry {
    section: String,
    key: String,
    value: String,
}

fn parse(text: &str) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut section = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let line = line.trim_start();
        if let Some(header) = line.strip_prefix('[') {
            section = section_name(header);
            // `[core] hooksPath = x` on one line is valid git.
            let rest = header.split_once(']').map_or("", |(_, rest)| rest);
            if let Some(entry) = key_value(&section, rest, &mut lines) {
                entries.push(entry);
            }
            continue;
        }
        if let Some(entry) = key_value(&section, line, &mut lines) {
            entries.push(entry);
        }
    }
    entries
}

/// `core]`, `includeIf "gitdir:~/x"]` or the old `branch.main]`: the part
/// before any subsection, lower-cased.
fn section_name(header: &str) -> String {
    let name = header
        .split([']', '"', ' ', '\t', '.'])
        .next()
        .unwrap_or("");
    name.to_ascii_lowercase()
}

fn key_value<'a>(
    section: &str,
    line: &str,
    more: &mut impl Iterator<Item = &'a str>,
) -> Option<Entry> {
    let line = line.trim_start();
    let key_end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .unwrap_or(line.len());
    if key_end == 0 {
        return None;
    }
    let key = line[..key_end].to_ascii_lowercase();
    let rest = line[key_end..].trim_start();
    let raw = rest.strip_prefix('=')?;
    Some(Entry {
        section: section.to_string(),
        key,
        value: value(raw, more),
    })
}

/// A value as git reads it: quotes removed, escapes applied, a comment
/// outside quotes dropped, a trailing `\` continuing on the next line.
fn value<'a>(first: &str, more: &mut impl Iterator<Item = &'a str>) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut line = first.to_string();
    loop {
        let mut chars = line.chars();
        let mut continued = false;
        while let Some(c) = chars.next() {
            match c {
                '"' => quoted = !quoted,
                '#' | ';' if !quoted => break,
                '\\' => match chars.next() {
                    None => continued = true,
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('b') => {
                        out.pop();
                    }
                    Some(other) => out.push(other),
                },
                c => out.push(c),
            }
        }
        match continued.then(|| more.next()).flatten() {
            Some(next) => line = next.to_string(),
            None => break,
        }
    }
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_read_as_git_reads_them() {
        let text = "[core]\n\tHooksPath = \".husky/_\" ; husky\n[Include]\npath=../shared.cfg\n\
                    [includeIf \"gitdir:~/w/\"]\n  path = ~/w.cfg\n[alias]\n\tx = \"!./tools/x.sh\" arg\n\
                    [core] fsmonitor = tools/wat\\\nch.sh\n[url \"https://a/\"]\n\tinsteadOf = gh:\n";
        let entries = parse(text);
        let pairs: Vec<(&str, &str, &str)> = entries
            .iter()
            .map(|e| (e.section.as_str(), e.key.as_str(), e.value.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("core", "hookspath", ".husky/_"),
                ("include", "path", "../shared.cfg"),
                ("includeif", "path", "~/w.cfg"),
                ("alias", "x", "!./tools/x.sh arg"),
                ("core", "fsmonitor", "tools/watch.sh"),
                ("url", "insteadof", "gh:"),
            ]
        );
    }

    #[test]
    fn named_paths_follow_includes_and_resolve_each_base() {
        let dir = tempfile::tempdir().unwrap();
        let (wt, home) = (dir.path().join("wt"), dir.path().join("home"));
        std::fs::create_dir_all(wt.join(".git")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(
            wt.join(".git/config"),
            "[core]\n\thooksPath = .husky\n[include]\n\tpath = ../shared.cfg\n\tpath = ~/g.cfg\n",
        )
        .unwrap();
        std::fs::write(
            wt.join("shared.cfg"),
            "[core]\n\tfsmonitor = ./fsmon.sh\n\tpager = less\n[remote \"o\"]\n\turl = https://h/x.git\n",
        )
        .unwrap();
        let bases = Bases {
            home: Some(&home),
            work_tree: Some(&wt),
        };
        let named = named_paths(&wt.join(".git/config"), bases);
        assert_eq!(named.hook_dirs, [wt.join(".husky")]);
        assert_eq!(
            named.files,
            [
                wt.join("fsmon.sh"),
                wt.join(".git/../shared.cfg"),
                home.join("g.cfg")
            ]
        );
    }

    #[test]
    fn a_global_config_names_no_relative_path() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("gitconfig");
        std::fs::write(&config, "[core]\n\thooksPath = hooks\n\teditor = ./e\n").unwrap();
        let bases = Bases {
            home: Some(dir.path()),
            work_tree: None,
        };
        assert_eq!(named_paths(&config, bases), Named::default());
    }
}
