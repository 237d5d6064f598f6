//! The `sh.*` and `env.*` bindings under the sandbox, end to end through
//! the `magus` binary: children get a scrubbed environment (MGS2003,
//! MGS2008 said once, names only), version-manager shims are explained
//! (MGS2006), ungranted programs never start (MGS2007), a kernel denial in
//! a child is attributed to the sandbox, and `sh.*` returns what it should.

mod support;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use support::{buzz_str, Harness, RunOutput, SECRET_VARS};

const PASSTHROUGH: &str =
    "sandbox:\n  enabled: true\n  env:\n    passthrough: [\"GOPATH\", \"MISE_*\"]\n";

/// The `NAME=value` lines of an `env` dump printed between `tag<<` and `>>`.
fn env_dump(out: &RunOutput, tag: &str) -> BTreeMap<String, String> {
    let start = format!("{tag}<<");
    let text = out
        .stdout
        .split_once(start.as_str())
        .and_then(|(_, rest)| rest.split_once(">>"))
        .map(|(dump, _)| dump)
        .unwrap_or_else(|| panic!("no {tag} dump\n{}", out.dump()));
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn is_withheld(name: &str) -> bool {
    SECRET_VARS.contains(&name)
        || name.starts_with("AWS_")
        || name.starts_with("VAULT_")
        || name.starts_with("OP_SESSION_")
}

const ENV_SPELL: &str = r#"import "std";
import "sh";
import "env";

fun main(args: [str]) > int {
    final first = sh.output(["env"]);
    std.print("FIRST<<{first.stdout}>>");
    env.set("X", "y");
    final second = sh.output(["/usr/bin/env"]);
    std.print("SECOND<<{second.stdout}>>");
    std.print("GITHUB_TOKEN is {env.get("GITHUB_TOKEN") ?? "null"}");
    std.print("VAULT_TOKEN is {env.get("VAULT_TOKEN") ?? "null"}");
    std.print("HOME is {env.get("HOME") ?? "null"}");
    std.print("NAMES {env.names()}");
    return 0;
}
"#;

#[test]
fn children_get_the_scrubbed_environment_and_notes_name_what_was_withheld() {
    let mut h = Harness::with_config(PASSTHROUGH);
    h.set_env("MAGUS_FOO", "1");
    h.set_env("GOPATH", "/opt/go");
    h.set_env("MISE_ENV", "ci");
    h.set_env("AWS_PROFILE", "prod");
    h.set_env("VAULT_ADDR", "https://vault.internal");
    h.set_env("OTHER_VAR", "other");
    h.write_spell("env", ENV_SPELL);
    let out = h.run_with("env", &[], &["-v"]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    for tag in ["FIRST", "SECOND"] {
        let seen = env_dump(&out, tag);
        for name in seen.keys() {
            assert!(
                !is_withheld(name),
                "{tag}: a child saw {name}\n{}",
                out.dump()
            );
        }
        for (name, want) in [
            ("HOME", h.home.display().to_string()),
            ("PATH", support::DEFAULT_PATH.to_string()),
            ("LANG", "C.UTF-8".to_string()),
            ("MAGUS_FOO", "1".to_string()),
            ("GOPATH", "/opt/go".to_string()),
            ("MISE_ENV", "ci".to_string()),
        ] {
            assert_eq!(seen.get(name), Some(&want), "{tag}: {name}\n{}", out.dump());
        }
        assert!(!seen.contains_key("OTHER_VAR"), "{tag}\n{}", out.dump());
    }
    assert!(!env_dump(&out, "FIRST").contains_key("X"));
    assert_eq!(
        env_dump(&out, "SECOND").get("X").map(String::as_str),
        Some("y")
    );
    assert!(
        out.stdout.contains("GITHUB_TOKEN is null\n"),
        "{}",
        out.dump()
    );
    assert!(
        out.stdout.contains("VAULT_TOKEN is null\n"),
        "{}",
        out.dump()
    );
    assert!(out
        .stdout
        .contains(&format!("HOME is {}\n", h.home.display())));
    let names = out.lines_starting("NAMES ")[0];
    for name in SECRET_VARS.iter().chain(&["AWS_PROFILE", "VAULT_ADDR"]) {
        assert!(!names.contains(name), "env.names() shows {name}: {names}");
    }

    // MGS2003 once, for two children, naming every withheld variable;
    // MGS2008 once.
    assert_eq!(out.stderr_count("note[MGS2003]"), 1, "{}", out.dump());
    assert_eq!(out.stderr_count("note[MGS2008]"), 1, "{}", out.dump());
    let withheld = out
        .stderr
        .lines()
        .find(|l| l.contains("withheld: "))
        .unwrap_or_else(|| panic!("{}", out.dump()));
    for name in SECRET_VARS
        .iter()
        .filter(|n| **n != "MAGUS_DAEMON_SOCKET")
        .chain(&["AWS_PROFILE", "VAULT_ADDR", "OTHER_VAR"])
    {
        assert!(withheld.contains(name), "{name} not in `{withheld}`");
    }
    assert!(out.stderr.contains("MAGUS_DAEMON_SOCKET"), "{}", out.dump());
    assert!(!out.stderr.contains("vault.internal"), "{}", out.dump());
    h.assert_no_leak(&out);
}

#[test]
fn with_the_sandbox_off_children_get_everything_and_no_sandbox_notes() {
    let h = Harness::with_config("sandbox:\n  enabled: false\n");
    h.write_spell(
        "open",
        "import \"std\";\nimport \"sh\";\nfun main(args: [str]) > int {\n    final out = sh.output([\"env\"]);\n    std.print(\"ENV<<{out.stdout}>>\");\n    return out.status;\n}\n",
    );
    let out = h.run("open", &[]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    let env = env_dump(&out, "ENV");
    for name in ["GITHUB_TOKEN", "MAGUS_DAEMON_SOCKET"] {
        assert!(env.contains_key(name), "{name} missing: {}", out.dump());
    }
    for code in ["MGS2003", "MGS2008"] {
        assert_eq!(out.stderr_count(code), 0, "{}", out.dump());
    }
}

#[test]
fn a_run_without_children_says_no_launch_notes() {
    let h = Harness::new();
    h.write_spell(
        "quiet",
        "import \"std\";\nfun main(args: [str]) > int {\n    std.print(\"hi\");\n    return 0;\n}\n",
    );
    let out = h.run("quiet", &[]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert_eq!(out.stdout, "hi\n");
    assert_eq!(out.stderr_count("MGS2003"), 0, "{}", out.dump());
    h.assert_no_leak(&out);
}

#[test]
fn mise_shims_on_path_get_a_warning_with_the_fix() {
    let mut h = Harness::new();
    let shims = h.home_path(".local/share/mise/shims");
    std::fs::create_dir_all(&shims).unwrap();
    h.set_env(
        "PATH",
        format!("{}:{}", shims.display(), support::DEFAULT_PATH),
    );
    h.set_env("MISE_DATA_DIR", h.home_path(".local/share/mise"));
    h.write_spell(
        "quiet",
        "import \"std\";\nfun main(args: [str]) > int {\n    std.print(\"hi\");\n    return 0;\n}\n",
    );
    // A run that launches no shim says nothing of it (MGS2006 is said at
    // the first launch that meets one); `sandbox check` says it all.
    let out = h.run("quiet", &[]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert_eq!(out.stderr_count("MGS2006"), 0, "{}", out.dump());
    let out = support::capture(
        h.command()
            .arg("--workspace")
            .arg(&h.ws)
            .args(["sandbox", "check"]),
    );
    assert_eq!(out.stderr_count("warning[MGS2006]"), 1, "{}", out.dump());
    for line in [
        "mise",
        "MISE_DATA_DIR",
        "- path: ~/.local/share/mise\n",
        "mode: ro\n",
        "passthrough:\n",
        "- \"MISE_*\"",
    ] {
        assert!(out.stderr.contains(line), "no `{line}`\n{}", out.dump());
    }
    h.assert_no_leak(&out);
}

/// Plants `~/bin/evil`, which would create `<ws>/marker` if it ran.
fn plant_program(h: &Harness) -> std::path::PathBuf {
    let bin = h.home_path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let evil = bin.join("evil");
    let marker = h.ws_path("marker");
    std::fs::write(
        &evil,
        format!("#!/bin/sh\necho ran > '{}'\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&evil, std::fs::Permissions::from_mode(0o755)).unwrap();
    evil
}

fn launch_spell(evil: &str, bin: &str) -> String {
    format!(
        r#"import "std";
import "sh";
import "env";

fun attempt(how: str, argv: [str]) > void {{
    try {{
        if (how == "run") {{ sh.run(argv); }}
        if (how == "output") {{ sh.output(argv); }}
        std.print("RAN {{how}} {{argv[0]}}");
    }} catch (e: SandboxError) {{
        std.print("REFUSED {{how}} {{argv[0]}} {{e.code}}");
    }}
}}

fun main(args: [str]) > int {{
    attempt("run", [{evil}]);
    attempt("output", [{evil}, "x"]);
    env.set("PATH", {path});
    std.print("WHICH {{sh.which("evil") ?? "null"}}");
    attempt("run", ["evil"]);
    attempt("output", ["evil"]);
    return 0;
}}
"#,
        evil = buzz_str(evil),
        path = buzz_str(format!("{bin}:/usr/bin:/bin")),
    )
}

fn check_refused_launches(h: &Harness, out: &RunOutput) {
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert_eq!(out.lines_starting("REFUSED ").len(), 4, "{}", out.dump());
    assert!(out
        .lines_starting("REFUSED ")
        .iter()
        .all(|l| l.ends_with(" MGS2007")));
    assert!(out.lines_starting("RAN ").is_empty(), "{}", out.dump());
    assert!(!h.ws_path("marker").exists(), "the program ran");
    h.assert_no_leak(out);
}

#[test]
fn ungranted_programs_are_refused_before_they_start() {
    let h = Harness::new();
    let evil = plant_program(&h);
    let bin = h.home_path("bin").display().to_string();
    h.write_spell("launch", &launch_spell(&evil.display().to_string(), &bin));
    let out = h.run("launch", &[]);
    check_refused_launches(&h, &out);
    // `sh.which` answers only with programs the sandbox would let run.
    assert!(out.stdout.contains("WHICH null\n"), "{}", out.dump());
}

/// Without the kernel layer nothing but the gate stands between the spell
/// and the program: the marker proves it did not start.
#[test]
fn the_gate_alone_refuses_ungranted_programs() {
    let mut h = Harness::new();
    h.set_env("MAGUS_SANDBOX_LANDLOCK", "0");
    let evil = plant_program(&h);
    let bin = h.home_path("bin").display().to_string();
    h.write_spell("launch", &launch_spell(&evil.display().to_string(), &bin));
    let out = h.run("launch", &[]);
    check_refused_launches(&h, &out);
}

#[test]
fn an_uncaught_launch_refusal_exits_3() {
    let h = Harness::new();
    let evil = plant_program(&h);
    let source = format!(
        "import \"sh\";\nfun main(args: [str]) > int {{\n    sh.run([{}]);\n    return 0;\n}}\n",
        buzz_str(evil.display().to_string())
    );
    h.write_spell("launch", &source);
    let out = h.run("launch", &[]);
    assert_eq!(out.status, Some(124), "{}", out.dump());
    assert!(out.stderr.contains("error[MGS2007]"), "{}", out.dump());
    // Placed on the refused argument, the command list, underlined whole.
    assert!(out.stderr.contains("launch.buzz:3:12"), "{}", out.dump());
    let list = format!("[{}]", buzz_str(evil.display().to_string()));
    let underline = format!(
        "|            {} `exec` denied here\n",
        "^".repeat(list.len())
    );
    assert!(out.stderr.contains(&underline), "{}", out.dump());
    assert!(out.stderr.contains("- path: ~/bin/evil"), "{}", out.dump());
    assert!(!h.ws_path("marker").exists());
}

const SH_SPELL: &str = r#"import "std";
import "sh";

fun main(args: [str]) > int {
    final streamed = sh.run(["sh", "-c", "echo streamed-out; echo streamed-err >&2; exit 4"]);
    std.print("RUN {streamed}");
    final out = sh.output(["sh", "-c", "echo captured-out; echo captured-err >&2; exit 2"]);
    std.print("OUTPUT {out.status} [{out.stdout.trim()}] [{out.stderr.trim()}]");
    final shell = sh.shell("echo hi && exit 3");
    std.print("SHELL {shell}");
    std.print("OK {sh.shell("true")}");
    std.print("WHICH {sh.which("sh") ?? "null"}");
    std.print("MISSING {sh.which("no-such-program-here") ?? "null"}");
    return 0;
}
"#;

#[test]
fn sh_returns_statuses_streams_and_captures() {
    let h = Harness::new();
    h.write_spell("sh", SH_SPELL);
    let out = h.run("sh", &[]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines[..4],
        [
            "streamed-out",
            "RUN 4",
            "OUTPUT 2 [captured-out] [captured-err]",
            "hi"
        ],
        "{}",
        out.dump()
    );
    assert!(out.stdout.contains("SHELL 3\nOK 0\n"), "{}", out.dump());
    assert!(out.stderr.contains("streamed-err"), "{}", out.dump());
    assert!(!out.stderr.contains("captured-err"), "{}", out.dump());
    let which = out.lines_starting("WHICH ")[0].trim_start_matches("WHICH ");
    assert!(which.starts_with('/') && which.ends_with("/sh"), "{which}");
    assert!(std::path::Path::new(which).is_file());
    assert!(out.stdout.contains("MISSING null\n"), "{}", out.dump());
    h.assert_no_leak(&out);
}

/// (Without the kernel layer the child reads the key: MGS2005 says so.)
#[cfg(kernel_layer)]
#[test]
fn a_child_denied_by_the_kernel_gets_a_note_naming_the_sandbox() {
    let h = Harness::new();
    let key = h.home_path(".ssh/id_rsa").display().to_string();
    let source = format!(
        r#"import "std";
import "sh";
fun main(args: [str]) > int {{
    std.print("STATUS {{sh.run(["cat", {key}])}}");
    std.print("SHELL {{sh.shell("cat " + {key})}}");
    return 0;
}}
"#,
        key = buzz_str(&key)
    );
    h.write_spell("cat", &source);
    let out = h.run("cat", &[]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert!(out.stdout.contains("STATUS 1\n"), "{}", out.dump());
    assert!(out.stdout.contains("SHELL 1\n"), "{}", out.dump());
    let note = format!("note[MGS2001]: the child's failure on `{key}` is the sandbox");
    assert_eq!(out.stderr_count(&note), 2, "{}", out.dump());
    assert!(
        out.stderr.contains("`~/.ssh` is a credential store"),
        "{}",
        out.dump()
    );
    assert!(!out.stderr.contains("- path:"), "{}", out.dump());
    // The program that reported the denial is not blamed for it.
    assert!(!out.stderr.contains("MGS2002"), "{}", out.dump());
    assert!(
        !out.stderr.contains("failure on `/usr/bin/cat`"),
        "{}",
        out.dump()
    );
    h.assert_no_leak(&out);
}

/// In the jail an ungranted `PATH` directory is not there; the lookup
/// must still find what the user's `PATH` names first (here `~/bin/cat`,
/// shadowing `/usr/bin/cat`) and refuse it, not fall through to the
/// system's `cat`. Control: with the sandbox off, `~/bin/cat` runs.
#[test]
fn a_hidden_path_directory_is_not_replaced_by_a_later_one() {
    let mut h = Harness::new();
    let evil = plant_program(&h);
    std::fs::rename(&evil, h.home_path("bin/cat")).unwrap();
    let bin = h.home_path("bin").display().to_string();
    h.set_env("PATH", format!("{bin}:/usr/bin:/bin"));
    let spell = r#"import "std";
import "sh";

fun main(args: [str]) > int {
    std.print("WHICH {sh.which("cat") ?? "null"}");
    try {
        sh.run(["cat", "/dev/null"]);
        std.print("RAN");
    } catch (e: SandboxError) {
        std.print("REFUSED {e.code}");
    }
    return 0;
}
"#;
    h.write_spell("shadow", spell);
    let out = h.run("shadow", &[]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert!(out.stdout.contains("REFUSED MGS2007"), "{}", out.dump());
    assert!(out.stdout.contains("WHICH null"), "{}", out.dump());
    assert!(!h.ws_path("marker").exists(), "the shadowing program ran");

    h.write_config("sandbox:\n  enabled: false\n");
    let out = h.run("shadow", &[]);
    assert!(out.stdout.contains("RAN"), "control: {}", out.dump());
    assert!(
        h.ws_path("marker").exists(),
        "control: ~/bin/cat did not run"
    );
}
