//! The CLI surface of issue #6 beside the lock: `magus list`, `magus
//! explain`, the help texts, the exit codes, and colour (escape codes only
//! on a terminal without `NO_COLOR`).

use crate::support;
use assert_cmd::Command;
use magus_sandbox::exit::{
    CANNOT_RUN as EXIT_CANNOT_RUN, CONFIG as EXIT_CONFIG, DENIED as EXIT_DENIED,
    NO_SPELL as EXIT_NO_SPELL, SPELL_FAILED as EXIT_SPELL_FAILED,
};
use std::path::PathBuf;

const MAGUS: &str = env!("CARGO_BIN_EXE_magus");

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::Builder::new()
            .prefix("cli-")
            .tempdir_in(support::scratch_base())
            .unwrap();
        let root = dir.path().canonicalize().unwrap();
        for sub in ["home/.ssh", "ws/spells"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(root.join("home/.ssh/id_rsa"), "PRIVATE KEY").unwrap();
        std::fs::write(root.join("ws/magus.yaml"), "sandbox:\n  enabled: true\n").unwrap();
        Fixture { _dir: dir, root }
    }

    fn spell(&self, name: &str, text: &str) {
        std::fs::write(self.root.join(format!("ws/spells/{name}.buzz")), text).unwrap();
    }

    fn magus(&self) -> Command {
        let mut cmd = Command::new(MAGUS);
        cmd.env_clear()
            .env("HOME", self.root.join("home"))
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .current_dir(self.root.join("ws"));
        cmd
    }

    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.magus().args(args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

#[test]
fn list_shows_each_spell_with_its_first_comment() {
    let fx = Fixture::new();
    let (code, out, _) = fx.run(&["list"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("no spells in "), "{out}");
    fx.spell("zeta", "// Last one.\nfun main(args: [str]) > void {}\n");
    fx.spell(
        "build",
        "// Builds the thing.\n// More words.\nfun main(args: [str]) > void {}\n",
    );
    fx.spell("bare", "fun main(args: [str]) > void {}\n");
    std::fs::write(fx.root.join("ws/spells/notes.txt"), "not a spell").unwrap();
    let (code, out, err) = fx.run(&["list"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "bare\nbuild  Builds the thing.\nzeta   Last one.\n");
}

#[test]
fn explain_prints_the_page_of_a_code() {
    let fx = Fixture::new();
    let (code, out, err) = fx.run(&["explain", "MGS2001"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("# MGS2001"), "{out}");
    assert!(out.contains("## How to fix it"), "{out}");
    assert_eq!(err, "");
    let (code, out, _) = fx.run(&["explain", "mgs2010"]);
    assert_eq!(code, 0);
    assert!(out.contains("magus sandbox lock"), "{out}");
}

#[test]
fn explain_of_an_unknown_code_is_a_usage_error() {
    let fx = Fixture::new();
    let (code, out, err) = fx.run(&["explain", "MGS9999"]);
    assert_eq!(code, EXIT_CONFIG);
    assert_eq!(out, "");
    assert!(
        err.starts_with("error: unknown diagnostic code `MGS9999`"),
        "{err}"
    );
    assert!(err.contains("MGS2001  path read denied"), "{err}");
    assert!(err.contains("MGS2010"), "{err}");
}

const SUBCOMMANDS: [&[&str]; 6] = [
    &["run"],
    &["list"],
    &["explain"],
    &["sandbox"],
    &["sandbox", "check"],
    &["sandbox", "lock"],
];

fn help(args: &[&str]) -> String {
    let out = Command::new(MAGUS)
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn assert_exit_codes(text: &str, what: &str) {
    for needle in [
        "Exit status: a spell's own status",
        "1 the spell failed",
        "124 the spell was stopped by a sandbox denial",
        "125 magus failed",
        "126 the spell cannot run",
        "127 no such spell",
        "123 the run exceeded `sandbox.limits.wall_time`",
    ] {
        assert!(text.contains(needle), "{what} lacks `{needle}`:\n{text}");
    }
}

#[test]
fn top_level_help_names_every_command_flag_and_exit_code() {
    let text = help(&[]);
    for command in ["run", "list", "explain", "sandbox", "help"] {
        let listed = text
            .lines()
            .any(|l| l.starts_with("  ") && l.trim_start().starts_with(&format!("{command} ")));
        assert!(listed, "--help does not list `{command}`:\n{text}");
    }
    for needle in [
        "--workspace <DIR>",
        "--message-format <MESSAGE_FORMAT>",
        "--version",
    ] {
        assert!(text.contains(needle), "--help lacks `{needle}`:\n{text}");
    }
    assert_exit_codes(&text, "magus --help");
}

#[test]
fn every_subcommand_help_has_the_global_flags_and_exit_codes() {
    for args in SUBCOMMANDS {
        let text = help(args);
        let what = format!("magus {} --help", args.join(" "));
        for flag in ["--workspace", "--message-format"] {
            assert!(text.contains(flag), "{what} lacks {flag}:\n{text}");
        }
        assert_exit_codes(&text, &what);
    }
    let sandbox = help(&["sandbox"]);
    for command in ["check", "lock"] {
        let listed = sandbox
            .lines()
            .any(|l| l.trim_start().starts_with(&format!("{command} ")));
        assert!(
            listed,
            "sandbox --help does not list `{command}`:\n{sandbox}"
        );
    }
    assert!(help(&["sandbox", "lock"]).contains("magus.lock"));
    assert!(help(&["run"]).contains("[SPELL]"));
}

#[test]
fn exit_statuses_follow_the_documented_table() {
    assert_eq!(
        (
            EXIT_SPELL_FAILED,
            EXIT_DENIED,
            EXIT_CONFIG,
            EXIT_CANNOT_RUN,
            EXIT_NO_SPELL
        ),
        (1, 124, 125, 126, 127)
    );
    let fx = Fixture::new();
    fx.spell("ok", "fun main(args: [str]) > int { return 0; }\n");
    fx.spell("seven", "fun main(args: [str]) > int { return 7; }\n");
    fx.spell(
        "fails",
        "fun main(args: [str]) > int { throw \"broken\"; }\n",
    );
    fx.spell(
        "steals",
        "import \"fs\";\nimport \"env\";\nfun main(args: [str]) > int {\n    fs.read(\"{env.get(\"HOME\")!}/.ssh/id_rsa\");\n    return 0;\n}\n",
    );
    fx.spell("big", "fun main(args: [str]) > int { return 256; }\n");
    fx.spell("negative", "fun main(args: [str]) > int { return -1; }\n");
    fx.spell("max", "fun main(args: [str]) > int { return 255; }\n");
    fx.spell("broken", "fun main(args: [str]) > int { return (; }\n");
    let cases: [(&[&str], i32); 11] = [
        (&["run", "ok"], 0),
        (&["run", "seven"], 7),
        (&["run", "max"], 255),
        (&["run", "big"], EXIT_SPELL_FAILED),
        (&["run", "negative"], EXIT_SPELL_FAILED),
        (&["run", "fails"], EXIT_SPELL_FAILED),
        (&["run", "broken"], EXIT_CANNOT_RUN),
        (&["run", "steals"], EXIT_DENIED),
        (&["run", "missing"], EXIT_NO_SPELL),
        (&["--no-such-flag"], EXIT_CONFIG),
        (&["sandbox", "lock", "--message-format", "xml"], EXIT_CONFIG),
    ];
    for (args, want) in cases {
        let (code, out, err) = fx.run(args);
        assert_eq!(code, want, "{args:?}\n{out}{err}");
    }
    std::fs::write(fx.root.join("ws/magus.yaml"), "sandbox:\n  enabld: true\n").unwrap();
    assert_eq!(fx.run(&["run", "ok"]).0, EXIT_CONFIG);
}

#[test]
fn a_pipe_gets_no_escape_codes_with_or_without_no_color() {
    let fx = Fixture::new();
    for no_color in [None, Some("1")] {
        let mut cmd = fx.magus();
        if let Some(v) = no_color {
            cmd.env("NO_COLOR", v);
        }
        let out = cmd.args(["explain", "MGS9999"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("error"), "{err}");
        assert!(!err.contains('\x1b'), "escape codes on a pipe: {err:?}");
    }
}

/// Runs `magus explain MGS9999` with stderr on a new pseudo-terminal and
/// returns what it wrote there.
fn stderr_on_a_terminal(no_color: Option<&str>) -> String {
    use std::io::Read;
    use std::process::Stdio;
    let pty = nix::pty::openpty(None, None).unwrap();
    let mut cmd = std::process::Command::new(MAGUS);
    cmd.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(["explain", "MGS9999"])
        .stdout(Stdio::null())
        .stderr(Stdio::from(pty.slave));
    if let Some(v) = no_color {
        cmd.env("NO_COLOR", v);
    }
    let mut child = cmd.spawn().unwrap();
    drop(cmd);
    child.wait().unwrap();
    let mut master = std::fs::File::from(pty.master);
    let mut bytes = Vec::new();
    // The read ends with EIO once the child's side is closed.
    let mut chunk = [0u8; 4096];
    while let Ok(n) = master.read(&mut chunk) {
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[test]
fn a_terminal_gets_colour_unless_no_color_is_set() {
    let coloured = stderr_on_a_terminal(None);
    assert!(coloured.contains("\x1b[1;31merror"), "{coloured:?}");
    let plain = stderr_on_a_terminal(Some("1"));
    assert!(
        plain.contains("error: unknown diagnostic code"),
        "{plain:?}"
    );
    // On a terminal each diagnostic starts by ending whatever sequence a
    // child left open (CAN, ST) and resetting the attributes: no colour.
    let reset = "\x18\x1b\\\x1b[0m";
    assert!(plain.starts_with(reset), "{plain:?}");
    assert!(!plain.replace(reset, "").contains('\x1b'), "{plain:?}");
}
