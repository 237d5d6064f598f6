//! Whether a repository the run made is one git would only read: what
//! `git init` and `git clone` write, and nothing that names a command.
//! Such a repository is left where it is (a spell may clone its
//! dependencies); any other is set aside.
//!
//! An allow-list, not a deny-list: git has dozens of keys that run a
//! program (`core.fsmonitor`, `core.sshCommand`, `filter.*.clean`,
//! `alias.*`, `credential.helper`, an `ext::` remote...) and gains more;
//! a key not listed here makes the repository suspect.

use std::path::Path;

use crate::enforce::jail::gitconfig;

/// `section.key` pairs `git init`, `git clone` and ordinary use write to a
/// repository's own config, none of which runs anything.
const INERT_KEYS: [(&str, &str); 27] = [
    ("core", "repositoryformatversion"),
    ("core", "filemode"),
    ("core", "bare"),
    ("core", "logallrefupdates"),
    ("core", "ignorecase"),
    ("core", "precomposeunicode"),
    ("core", "symlinks"),
    ("core", "autocrlf"),
    ("core", "eol"),
    ("core", "sharedrepository"),
    ("remote", "url"),
    ("remote", "pushurl"),
    ("remote", "fetch"),
    ("remote", "push"),
    ("remote", "mirror"),
    ("remote", "tagopt"),
    ("remote", "promisor"),
    ("remote", "partialclonefilter"),
    ("branch", "remote"),
    ("branch", "merge"),
    ("branch", "rebase"),
    ("extensions", "objectformat"),
    ("extensions", "refstorage"),
    ("extensions", "partialclone"),
    ("extensions", "worktreeconfig"),
    ("user", "name"),
    ("user", "email"),
];

/// Whether the git directory `gitdir` runs nothing: its config (and
/// `config.worktree`) holds only [`INERT_KEYS`], no remote is a command
/// (`ext::`, `fd::`), its hooks are all `*.sample`, and its `commondir`,
/// if any, sends git to a repository that was there before the run (`git
/// worktree add` makes one; that repository's config and hooks are
/// protected).
pub(super) fn is_inert(gitdir: &Path, known: &dyn Fn(&Path) -> bool) -> bool {
    let configs_inert = ["config", "config.worktree"]
        .iter()
        .all(|name| config_is_inert(&gitdir.join(name)));
    configs_inert
        && hooks_are_samples(&gitdir.join("hooks"))
        && common_is_known(gitdir, known)
        && LEGACY_REMOTES
            .iter()
            .all(|d| empty_or_absent(&gitdir.join(d)))
        && SEQUENCER_STATE.iter().all(|d| absent(&gitdir.join(d)))
}

/// Where git still reads remotes from besides the config (`remotes/NAME`
/// with `URL:` and `Push:` lines, `branches/NAME` with a URL): a
/// red-team run named a bare repository it planted inside `.git`, and the
/// user's next `git push` ran that repository's hooks.
const LEGACY_REMOTES: [&str; 2] = ["remotes", "branches"];

/// An interrupted rebase, cherry-pick or revert: `git rebase --continue`
/// runs the `exec` lines of its to-do list (a red-team run left one in a
/// repository the spell made).
const SEQUENCER_STATE: [&str; 3] = ["rebase-merge", "rebase-apply", "sequencer"];

fn empty_or_absent(dir: &Path) -> bool {
    match dir.symlink_metadata() {
        Err(_) => true,
        Ok(meta) if !meta.is_dir() => false,
        Ok(_) => std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_none()),
    }
}

/// Whether the Mercurial directory `hg_dir` runs nothing: what `hg init`
/// (no `hgrc`) and `hg clone` (an `hgrc` of `[paths]` alone) write, and
/// no `sharedpath` (a share reads the `hgrc` of the `.hg` it names).
/// `hgrc-not-shared` is read like `hgrc` (hg 6.3 read its `[hooks]` in a
/// repository `hg init` made: a red-team run, 2026-12-07).
pub(super) fn hg_is_inert(hg_dir: &Path) -> bool {
    absent(&hg_dir.join("sharedpath"))
        && ["hgrc", "hgrc-not-shared"]
            .iter()
            .all(|name| hgrc_is_inert(&hg_dir.join(name)))
}

/// Whether the Mercurial config `hgrc` is missing or sets only `[paths]`.
fn hgrc_is_inert(hgrc: &Path) -> bool {
    if absent(hgrc) {
        return true;
    }
    let Some(text) = super::noted::small_file(hgrc) else {
        return false;
    };
    let mut in_paths = false;
    String::from_utf8_lossy(&text).lines().all(|line| {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            return true;
        }
        if line.starts_with('[') {
            // A section alone sets nothing (`hg clone` writes an empty `[ui]`).
            in_paths = line == "[paths]";
            return true;
        }
        in_paths && !line.starts_with('%') && line.contains('=')
    })
}

fn common_is_known(gitdir: &Path, known: &dyn Fn(&Path) -> bool) -> bool {
    let file = gitdir.join("commondir");
    if absent(&file) {
        return true;
    }
    let Some(text) = super::noted::small_file(&file) else {
        return false;
    };
    let named = String::from_utf8_lossy(&text).trim().to_string();
    gitdir
        .join(named)
        .canonicalize()
        .is_ok_and(|common| known(&common))
}

/// Whether the version file at `path` ([`super::names::VERSION_FILES`])
/// is one mise obeys as code: it names a `path:` version, or it is a link
/// (mise reads through it what the sweep does not).
pub(super) fn version_names_a_path(path: &Path) -> bool {
    if path
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
    {
        return true;
    }
    super::noted::small_file(path).is_none_or(|text| {
        text.windows(b"path:".len())
            .any(|w| w.eq_ignore_ascii_case(b"path:"))
    })
}

/// The git directory a `.git` file (`gitdir: PATH`) names, resolved as
/// git does (relative to the file's directory).
pub(super) fn gitlink_target(file: &Path) -> Option<std::path::PathBuf> {
    let text = super::noted::small_file(file)?;
    let text = String::from_utf8_lossy(&text);
    let named = text.trim().strip_prefix("gitdir:")?.trim().to_string();
    file.parent()?.join(named).canonicalize().ok()
}

fn config_is_inert(config: &Path) -> bool {
    if absent(config) {
        return true;
    }
    let Some(entries) = gitconfig::entries(config) else {
        return false;
    };
    entries.iter().all(|(section, key, value)| {
        let listed = INERT_KEYS.iter().any(|(s, k)| s == section && k == key);
        listed && !is_command_url(value)
    })
}

/// A remote git reaches by running a command of the URL's choosing.
fn is_command_url(value: &str) -> bool {
    let lower = value.trim().to_ascii_lowercase();
    lower.starts_with("ext::") || lower.starts_with("fd::")
}

fn hooks_are_samples(hooks: &Path) -> bool {
    match hooks.symlink_metadata() {
        Err(_) => true,
        Ok(meta) if !meta.is_dir() => false,
        Ok(_) => std::fs::read_dir(hooks).is_ok_and(|entries| {
            entries.flatten().all(|e| {
                let sample = e.file_name().to_string_lossy().ends_with(".sample");
                sample && e.file_type().is_ok_and(|t| t.is_file())
            })
        }),
    }
}

fn absent(path: &Path) -> bool {
    path.symlink_metadata().is_err()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mercurial_directory_is_inert_with_paths_alone() {
        let cases = [
            (None, true),
            (
                Some("# x\n[paths]\ndefault = /a/b\n\n[ui]\n# username = x\n"),
                true,
            ),
            (Some("[hooks]\npre-status = echo x\n"), false),
            (
                Some("[paths]\ndefault = /a\n[extensions]\nx = /tmp/x.py\n"),
                false,
            ),
            (Some("%include /elsewhere/hgrc\n"), false),
        ];
        for name in ["hgrc", "hgrc-not-shared"] {
            for (hgrc, inert) in cases {
                let dir = tempfile::tempdir().unwrap();
                if let Some(text) = hgrc {
                    std::fs::write(dir.path().join(name), text).unwrap();
                }
                assert_eq!(hg_is_inert(dir.path()), inert, "{name}: {hgrc:?}");
            }
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("sharedpath"), "/elsewhere/.hg").unwrap();
        assert!(!hg_is_inert(dir.path()));
    }

    #[test]
    fn only_what_init_and_clone_write_is_inert() {
        let cases = [
            ("[core]\n\trepositoryformatversion = 0\n\tbare = false\n", true),
            ("[remote \"origin\"]\n\turl = https://example.com/x.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n", true),
            ("[core]\n\tfsmonitor = \"echo x\"\n", false),
            ("[core]\n\tworktree = ..\n", false),
            ("[remote \"o\"]\n\turl = ext::sh -c evil\n", false),
            ("[alias]\n\tst = !evil\n", false),
            ("[include]\n\tpath = ../x\n", false),
            ("[Core]\n\tHooksPath = h\n", false),
        ];
        for (config, inert) in cases {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("config"), config).unwrap();
            assert_eq!(is_inert(dir.path(), &|_| false), inert, "{config}");
        }
    }

    /// A remote named in `remotes/` or `branches/` (whose own hooks run at
    /// a `git push` to it), and an interrupted rebase (whose `exec` lines
    /// run at `--continue`), make a repository suspect; the empty
    /// `branches/` that `git init` makes does not.
    #[test]
    fn legacy_remotes_and_an_interrupted_rebase_are_not_inert() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path();
        std::fs::create_dir_all(git.join("branches")).unwrap();
        std::fs::create_dir_all(git.join("remotes")).unwrap();
        assert!(is_inert(git, &|_| false));
        for file in ["remotes/origin", "branches/origin"] {
            std::fs::write(git.join(file), "URL: /elsewhere/x.git\n").unwrap();
            assert!(!is_inert(git, &|_| false), "{file}");
            std::fs::remove_file(git.join(file)).unwrap();
        }
        for state in SEQUENCER_STATE {
            std::fs::create_dir_all(git.join(state)).unwrap();
            assert!(!is_inert(git, &|_| false), "{state}");
            std::fs::remove_dir(git.join(state)).unwrap();
        }
        assert!(is_inert(git, &|_| false));
    }

    #[test]
    fn a_hook_that_is_not_a_sample_or_a_commondir_is_not_inert() {
        let dir = tempfile::tempdir().unwrap();
        let hooks = dir.path().join("hooks");
        std::fs::create_dir_all(&hooks).unwrap();
        std::fs::write(hooks.join("pre-commit.sample"), "").unwrap();
        assert!(is_inert(dir.path(), &|_| false));
        std::fs::write(hooks.join("pre-commit"), "#!/bin/sh\n").unwrap();
        assert!(!is_inert(dir.path(), &|_| false));
        std::fs::remove_file(hooks.join("pre-commit")).unwrap();
        std::fs::write(dir.path().join("commondir"), "..\n").unwrap();
        assert!(!is_inert(dir.path(), &|_| false));
        let parent = dir.path().parent().unwrap().canonicalize().unwrap();
        assert!(is_inert(dir.path(), &|p| p == parent));
    }
}
