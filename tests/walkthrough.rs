//! The README walkthrough (between the `walkthrough:start` and
//! `walkthrough:end` markers of `README.md`) as a test: in a copy of
//! this workspace (its `magus.yaml` and `spells/`) with a fake HOME holding
//! planted secrets, every `$ magus ...` command of the page runs in order,
//! every `magus.yaml` shown is applied, every output line shown must appear
//! (`...` skips lines, `…` skips part of a line), and the `magus.lock` shown
//! must be the one written. It starts from the install step: the page's
//! `cargo install --path .` is checked, and the binary this build made is
//! "installed" as `magus` in a directory on the `PATH` every later
//! command runs with, so each `$ magus ...` line runs exactly as typed. An
//! elision (`...`) may skip output, but never a diagnostic: every
//! `error`/`warning`/`note` a command prints must be shown.

#[path = "scratch/mod.rs"]
mod scratch;

use std::path::{Path, PathBuf};

const MAGUS: &str = env!("CARGO_BIN_EXE_magus");
const README: &str = include_str!("../README.md");

/// The walkthrough section of the README.
fn page() -> &'static str {
    let start = README
        .find("<!-- walkthrough:start -->")
        .expect("README has a walkthrough:start marker");
    let end = README
        .find("<!-- walkthrough:end -->")
        .expect("README has a walkthrough:end marker");
    &README[start..end]
}

/// The commands the page must show, in order, with their exit status.
const COMMANDS: [(&str, i32); 9] = [
    ("cargo install --path .", 0),
    ("magus run hello", 0),
    ("magus run steal", 124),
    ("magus run steal", 124),
    ("magus sandbox lock", 0),
    ("magus run hello", 125),
    ("magus sandbox check", 125),
    ("magus list", 0),
    ("magus explain MGS2001", 0),
];

const SECRETS: [(&str, &str); 4] = [
    (
        ".aws/credentials",
        "[default]\naws_secret_access_key = AKIA_PLANTED_AWS\n",
    ),
    (".ssh/id_rsa", "-----BEGIN PLANTED SSH KEY-----\n"),
    (
        ".docker/config.json",
        "{\"auths\": {\"ghcr.io\": {\"auth\": \"PLANTED_DOCKER\"}}}\n",
    ),
    (".npmrc", "//registry.npmjs.org/:_authToken=PLANTED_NPM\n"),
];
const TOKEN: &str = "ghp_PLANTED_GITHUB_TOKEN";

/// One step of the page.
#[derive(Debug)]
enum Step {
    /// A `yaml` block: the new `magus.yaml`.
    Config(String),
    /// `$ magus ...` and the output lines shown under it.
    Command { line: String, expect: Vec<String> },
    /// A `text` block: the `magus.lock` just written.
    LockFile(String),
}

fn steps(page: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut block: Option<(String, Vec<&str>)> = None;
    for line in page.lines() {
        match (&mut block, line.strip_prefix("```")) {
            (None, Some(kind)) => block = Some((kind.to_string(), Vec::new())),
            (Some(_), Some(_)) => {
                let (kind, lines) = block.take().unwrap();
                steps.extend(block_steps(&kind, &lines));
            }
            (Some((_, lines)), None) => lines.push(line),
            (None, None) => {}
        }
    }
    steps
}

fn block_steps(kind: &str, lines: &[&str]) -> Vec<Step> {
    let text = lines.iter().map(|l| format!("{l}\n")).collect::<String>();
    match kind {
        "yaml" => vec![Step::Config(text)],
        "text" => vec![Step::LockFile(text)],
        "console" => {
            let mut out: Vec<Step> = Vec::new();
            for line in lines {
                match line.strip_prefix("$ ") {
                    Some(command) => out.push(Step::Command {
                        line: command.to_string(),
                        expect: Vec::new(),
                    }),
                    None => match out.last_mut() {
                        Some(Step::Command { expect, .. }) => expect.push(line.to_string()),
                        _ => panic!("output before any command: {line}"),
                    },
                }
            }
            out
        }
        other => panic!("unexpected block kind `{other}` in the walkthrough"),
    }
}

/// Whether `shown` (with `…` standing for any text) matches `actual`,
/// ignoring indentation.
fn matches(shown: &str, actual: &str) -> bool {
    let mut rest = actual.trim();
    let pieces: Vec<&str> = shown.trim().split('…').collect();
    let last = pieces.len() - 1;
    for (i, piece) in pieces.iter().enumerate() {
        let found = match i {
            0 => rest.starts_with(piece).then_some(0),
            _ if i == last => rest.ends_with(piece).then(|| rest.len() - piece.len()),
            _ => rest.find(piece),
        };
        let Some(at) = found else { return false };
        rest = &rest[at + piece.len()..];
    }
    last > 0 || rest.is_empty()
}

/// The install command the page must show.
const INSTALL: &str = "cargo install --path .";

struct Workspace {
    _dir: tempfile::TempDir,
    home: PathBuf,
    ws: PathBuf,
    /// Where `magus` is installed; first on every command's `PATH`.
    bin: PathBuf,
}

impl Workspace {
    /// A copy of this repository's workspace and a home with secrets.
    fn fresh() -> Workspace {
        let dir = tempfile::Builder::new()
            .prefix("walkthrough-")
            .tempdir_in(scratch::base())
            .unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (home, ws) = (root.join("home"), root.join("project"));
        for sub in [
            ".cargo/bin",
            ".cargo/registry",
            ".rustup",
            ".aws",
            ".ssh",
            ".docker",
        ] {
            std::fs::create_dir_all(home.join(sub)).unwrap();
        }
        for (path, text) in SECRETS {
            std::fs::write(home.join(path), text).unwrap();
        }
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        std::fs::create_dir_all(ws.join("spells")).unwrap();
        std::fs::copy(repo.join("magus.yaml"), ws.join("magus.yaml")).unwrap();
        for entry in std::fs::read_dir(repo.join("spells")).unwrap() {
            let path = entry.unwrap().path();
            std::fs::copy(&path, ws.join("spells").join(path.file_name().unwrap())).unwrap();
        }
        let bin = root.join("cargo-bin");
        Workspace {
            _dir: dir,
            home,
            ws,
            bin,
        }
    }

    /// `cargo install --path .` as far as the page depends on it: the
    /// package's binary is `magus`, and it is put on the `PATH`.
    fn install(&self) {
        let manifest = include_str!("../Cargo.toml");
        assert!(
            manifest.contains("[[bin]]\nname = \"magus\""),
            "`{INSTALL}` must install a binary named magus"
        );
        std::fs::create_dir_all(&self.bin).unwrap();
        std::os::unix::fs::symlink(MAGUS, self.bin.join("magus")).unwrap();
    }

    /// Runs one command of the page; returns its status, its stdout and
    /// stderr together, and its stderr alone, with the temporary paths as
    /// the page writes them.
    fn run(&self, line: &str) -> (i32, String, String) {
        let mut words = line.split_whitespace();
        let program = words.next().unwrap();
        let path = format!("{}:/usr/local/bin:/usr/bin:/bin", self.bin.display());
        let out = std::process::Command::new(program)
            .args(words)
            .env_clear()
            .env("HOME", &self.home)
            .env("PATH", path)
            .env("GITHUB_TOKEN", TOKEN)
            .env("AWS_SECRET_ACCESS_KEY", "AKIA_PLANTED_ENV")
            .current_dir(&self.ws)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let shown = |text: &str| {
            text.replace(&self.ws.display().to_string(), "/home/you/project")
                .replace(&self.home.display().to_string(), "/home/you")
        };
        let stderr = shown(&String::from_utf8_lossy(&out.stderr));
        (out.status.code().unwrap_or(-1), shown(&text), stderr)
    }
}

fn assert_shown(command: &str, expect: &[String], output: &str, stderr: &str) {
    let lines: Vec<&str> = output.lines().collect();
    for shown in expect.iter().filter(|l| l.trim() != "...") {
        assert!(
            lines.iter().any(|actual| matches(shown, actual)),
            "`{command}`: the page shows `{shown}`, which is not in the output:\n{output}"
        );
    }
    for diagnostic in stderr.lines().filter(|l| is_diagnostic(l)) {
        assert!(
            expect.iter().any(|shown| matches(shown, diagnostic)),
            "`{command}`: the page hides the diagnostic `{diagnostic}`:\n{output}"
        );
    }
}

/// The first line of a human diagnostic.
fn is_diagnostic(line: &str) -> bool {
    ["error", "warning", "note"].iter().any(|severity| {
        line.strip_prefix(severity)
            .is_some_and(|rest| rest.starts_with(':') || rest.starts_with('['))
    })
}

fn assert_no_secret(command: &str, output: &str) {
    let planted = [
        "AKIA_PLANTED",
        "PLANTED SSH",
        "PLANTED_DOCKER",
        "PLANTED_NPM",
        TOKEN,
    ];
    for secret in planted {
        assert!(
            !output.contains(secret),
            "`{command}` printed {secret}:\n{output}"
        );
    }
}

#[test]
fn the_page_shows_exactly_the_tested_commands() {
    let shown: Vec<String> = steps(page())
        .into_iter()
        .filter_map(|s| match s {
            Step::Command { line, .. } => Some(line),
            _ => None,
        })
        .collect();
    let wanted: Vec<&str> = COMMANDS.iter().map(|(c, _)| *c).collect();
    assert_eq!(shown, wanted);
}

#[test]
fn the_walkthrough_runs_as_written() {
    let workspace = Workspace::fresh();
    let mut statuses = COMMANDS.iter();
    for step in steps(page()) {
        match step {
            Step::Config(text) => std::fs::write(workspace.ws.join("magus.yaml"), text).unwrap(),
            Step::LockFile(text) => {
                let written = std::fs::read_to_string(workspace.ws.join("magus.lock")).unwrap();
                assert_eq!(
                    written, text,
                    "the page's magus.lock is not the one written"
                );
            }
            Step::Command { line, expect } if line == INSTALL => {
                assert_eq!(statuses.next().map(|(c, _)| *c), Some(INSTALL));
                assert!(expect.is_empty(), "the install step shows no output");
                workspace.install();
            }
            Step::Command { line, expect } => {
                let (command, status) = statuses.next().unwrap();
                assert_eq!(line, *command);
                let (code, output, stderr) = workspace.run(&line);
                assert_eq!(code, *status, "`{line}` exited with {code}:\n{output}");
                assert_shown(&line, &expect, &output, &stderr);
                assert_no_secret(&line, &output);
            }
        }
    }
}

#[test]
fn ellipsis_matching_is_strict_enough() {
    let cases = [
        ("wrote /x (sha256:…)", "wrote /x (sha256:abc)", true),
        ("wrote /x (sha256:…)", "wrote /y (sha256:abc)", false),
        (
            "  ro  /a…line 10 (~/.aws)",
            "ro  /a      magus.yaml line 10 (~/.aws)",
            true,
        ),
        ("ro  /a…line 10", "ro  /a      magus.yaml line 11", false),
        ("exact", "exact line", false),
        (
            "hello  Your first spell.…",
            "hello  Your first spell. Run it",
            true,
        ),
    ];
    for (shown, actual, want) in cases {
        assert_eq!(matches(shown, actual), want, "{shown:?} vs {actual:?}");
    }
}
