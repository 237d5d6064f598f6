//! The names the sweep looks for, and how they are compared: as the file
//! system may compare them (ASCII case folded, so `.GIT` or `Magus.Yaml`
//! on a case-insensitive disk is caught), never as raw bytes alone.

use std::ffi::OsStr;
use std::path::Path;

/// Files anywhere under a writable grant that a tool later obeys without
/// asking: git reads `.gitmodules` at `git submodule update` (a
/// `update = !command`), cargo every `.cargo/config*` above the directory it
/// runs in, npm and yarn their rc files (scripts, registries, `node`
/// paths; yarn 1's `.yarnrc` `yarn-path`, a script it runs instead of
/// itself at every `yarn`), pnpm `.pnpmfile.cjs` (hooks run at `pnpm
/// install`), bun `bunfig.toml` (`preload` scripts at `bun run` and `bun
/// test`), direnv `.envrc` (shell code, run at `cd` once allowed), mise
/// its configs (`[hooks]` and `env._.source` run at `cd`; mise trusts a
/// config by its path, not its content, so a trusted one changed runs
/// unasked; a `[tools]` version `path:DIR` needs no trust at all and puts
/// `DIR/bin` first in `PATH`), mise and asdf `.tool-versions` (the same
/// `path:DIR` versions, never asked about: `node` in the workspace runs
/// `DIR/bin/node`), uv `uv.toml` (read in the project and above it: its
/// `python-downloads-json-url` lists Python builds, addresses and hashes
/// its own, that `uv run` installs and runs), editor agents `.mcp.json`, `.claude.json` and
/// `opencode.json` (servers started as programs), ripgrep `.ripgreprc`
/// (flags such as `--pre COMMAND`), Docker Compose its `.env` (usually
/// ignored by git: its `COMPOSE_FILE` chooses the compose files, hence what
/// containers `docker compose up` starts, with which mounts and
/// privileges; its variables fill in the compose file) and the override
/// files it merges unasked, a dev container's `.devcontainer.json` (its
/// `initializeCommand` runs on the host when the editor reopens the
/// folder in the container, or at `devcontainer up`), rustup its
/// `rust-toolchain.toml` and older `rust-toolchain` (read in the directory
/// it runs in and above it: a `path` toolchain is a directory whose `bin/`
/// runs in place of `cargo` and `rustc`, unasked, at `cargo fmt
/// --version` as at a build, and when an editor or a prompt asks the
/// version), magus its own policy.
pub(super) const RUN_LATER_FILES: [&str; 27] = [
    ".gitmodules",
    ".npmrc",
    ".yarnrc.yml",
    ".yarnrc",
    ".pnpmfile.cjs",
    "bunfig.toml",
    ".envrc",
    "mise.toml",
    ".mise.toml",
    "mise.local.toml",
    ".mise.local.toml",
    ".tool-versions",
    "uv.toml",
    ".mcp.json",
    ".claude.json",
    "opencode.json",
    ".ripgreprc",
    ".env",
    "compose.override.yaml",
    "compose.override.yml",
    "docker-compose.override.yaml",
    "docker-compose.override.yml",
    ".devcontainer.json",
    "rust-toolchain.toml",
    "rust-toolchain",
    "magus.yaml",
    "magus.lock",
];

/// Directories whose every file is a run-later file: editors run the tasks
/// and launch configurations there when a folder opens
/// (`.vscode/tasks.json` with `runOn: folderOpen`) and the language servers
/// their settings name (`.zed/settings.json`, `.helix/languages.toml`), a
/// coding agent the hooks and servers its settings name
/// (`.claude/settings.json`, `.cursor/mcp.json`, `.gemini/settings.json`),
/// mise the configs of `.mise/` and of `mise/` (`mise/config.toml`,
/// `.config/mise/config.toml`, `.config/mise/conf.d/*.toml`: read like
/// `mise.toml`, their `[tools]` needing no trust), Maven the JVM options
/// and extensions of `.mvn/` (`jvm.config` at any `mvn` command below
/// it, even `mvn -v`: `-agentpath:` loads a library; `./mvnw` runs
/// `.mvn/wrapper/`'s jar),
/// bundler the settings of `.bundle/` (usually ignored by git: its
/// `BUNDLE_GEMFILE` names the Ruby file `bundle install` evaluates), a
/// dev container the `initializeCommand` of `.devcontainer/`'s
/// configurations (run on the host).
pub(super) const RUN_LATER_DIRS: [&str; 12] = [
    ".vscode",
    ".idea",
    ".claude",
    ".cursor",
    ".gemini",
    ".zed",
    ".helix",
    ".mise",
    "mise",
    ".mvn",
    ".bundle",
    ".devcontainer",
];

/// Where cargo looks for its configuration, in every directory above the
/// one it runs in, and in `CARGO_HOME`.
pub(super) const CARGO_DIR: &str = ".cargo";

/// In a `.cargo` directory, only what cargo reads as configuration.
pub(super) const CARGO_CONFIGS: [&str; 2] = ["config", "config.toml"];

/// What git looks for in a directory before it takes it for a repository:
/// `HEAD`, `objects` and `refs` (it checks the last two with `access`, so
/// any kind of entry counts).
pub(super) const BARE_REPOSITORY: [&str; 3] = ["HEAD", "objects", "refs"];

/// Beside `HEAD`, `objects` and `refs`, what names the commands git runs
/// (`config`: `core.fsmonitor`, `core.hooksPath`...) or another directory
/// whose config and hooks git then uses (`commondir`).
pub(super) const BARE_REPOSITORY_CODE: [&str; 2] = ["config", "commondir"];

/// Where Python keeps the bytecode it compiled from the sources beside
/// it: at `import NAME` it runs `__pycache__/NAME.cpython-3XY.pyc` instead
/// of `NAME.py` when the file's header carries the source's size and
/// modification time, which a child can copy from the source. It does not
/// compare the code with the source. A link of that name sends Python
/// elsewhere, so one is a run-later entry too.
pub(super) const PYCACHE: &str = "__pycache__";

/// How Python names compiled bytecode (`NAME.cpython-312.pyc`,
/// `NAME.cpython-312.opt-1.pyc`).
const BYTECODE_SUFFIX: &str = ".pyc";

/// Whether an entry named `name` is, or holds, run-later files. An
/// existing `__pycache__` counts: a child may rewrite the bytecode in it
/// in place, which changes no directory, so the sweep must look at its
/// files one by one against what was noted.
pub(crate) fn is_run_later(name: &OsStr) -> bool {
    is_any(name, &RUN_LATER_FILES)
        || is_any(name, &RUN_LATER_DIRS)
        || is(name, CARGO_DIR)
        || is(name, PYCACHE)
}

/// Where installers put Python packages. Bytecode there is left alone:
/// the installed sources beside it are as writable to a run with the
/// grant and run as unconfined at the next import, so setting the
/// bytecode aside would protect nothing, while a virtualenv's tens of
/// thousands of `.pyc` would be noted and compared at every run.
const INSTALLED_PACKAGES: [&str; 2] = ["site-packages", "dist-packages"];

/// Whether `dir` lies in an installed packages directory
/// ([`INSTALLED_PACKAGES`]).
pub(super) fn in_installed_packages(dir: &Path) -> bool {
    dir.components()
        .any(|c| is_any(c.as_os_str(), &INSTALLED_PACKAGES))
}

/// [`is_run_later`] for the entry `name` of the directory `dir`: a
/// `__pycache__` among installed packages is not one.
pub(crate) fn is_run_later_in(dir: &Path, name: &OsStr) -> bool {
    is_run_later(name) && !(is(name, PYCACHE) && in_installed_packages(dir))
}

/// Whether a file named `name` in the directory named `dir` is bytecode
/// Python would run at an `import`: a `.pyc` in a `__pycache__`. (A bare
/// `NAME.pyc` beside the sources runs only where no `NAME.py` is, and is
/// then as plain to see as a source file.)
pub(super) fn is_bytecode(dir: &OsStr, name: &OsStr) -> bool {
    let name = name.as_encoded_bytes();
    is(dir, PYCACHE)
        && name.len() > BYTECODE_SUFFIX.len()
        && name[name.len() - BYTECODE_SUFFIX.len()..]
            .eq_ignore_ascii_case(BYTECODE_SUFFIX.as_bytes())
}

/// Whether `name` is `wanted`, compared as a case-insensitive file system
/// would (ASCII case only: every name above is ASCII).
pub(super) fn is(name: &OsStr, wanted: &str) -> bool {
    name.as_encoded_bytes()
        .eq_ignore_ascii_case(wanted.as_bytes())
}

/// Whether `name` is one of `wanted`.
pub(super) fn is_any(name: &OsStr, wanted: &[&str]) -> bool {
    wanted.iter().any(|w| is(name, w))
}

/// Whether `text` is a `HEAD` git accepts: a symbolic ref into `refs/`, or
/// an object name (SHA-1 or SHA-256). Anything else makes git refuse the
/// repository and look further up for another.
pub(super) fn is_valid_head(text: &[u8]) -> bool {
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    if let Some(target) = text.strip_prefix(b"ref: refs/") {
        return !target.is_empty() && !target.contains(&b'\n');
    }
    matches!(text.len(), 40 | 64) && text.iter().all(u8::is_ascii_hexdigit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_compare_in_any_ascii_case() {
        let cases = [
            (".git", ".git", true),
            (".GIT", ".git", true),
            ("Magus.Yaml", "magus.yaml", true),
            ("magus.yml", "magus.yaml", false),
            ("HEAD", "HEAD", true),
            ("head", "HEAD", true),
            ("HEADS", "HEAD", false),
        ];
        for (name, wanted, expected) in cases {
            assert_eq!(is(OsStr::new(name), wanted), expected, "{name} vs {wanted}");
        }
    }

    #[test]
    fn only_what_git_accepts_is_a_valid_head() {
        let cases: [(&[u8], bool); 7] = [
            (b"ref: refs/heads/main\n", true),
            (b"ref: refs/heads/main", true),
            (b"0123456789abcdef0123456789abcdef01234567\n", true),
            (b"garbage\n", false),
            (b"ref: refs/", false),
            (b"ref: HEAD\n", false),
            (b"", false),
        ];
        for (text, expected) in cases {
            assert_eq!(
                is_valid_head(text),
                expected,
                "{}",
                String::from_utf8_lossy(text)
            );
        }
    }
}
