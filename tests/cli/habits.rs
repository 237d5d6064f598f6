//! The `magus` command line as a user meets it (issue 15), through the real
//! binary: the sandbox state is never a surprise, children keep their
//! terminal, runs are quiet by default, fixes agree, and the habits of
//! cargo, just and deno task (arguments, listing, completions, colour,
//! exit statuses).

use crate::support::{self, can_switch_user, capture, open_to_everyone, Harness};
use std::path::Path;
use std::process::Command;

/// A spell that reads a planted credential and prints what it got.
const READS_AWS: &str = r#"import "std";
import "fs";
import "env";

fun main(args: [str]) > void {
    final home = env.get("HOME") ?? "/";
    std.print(fs.read("{home}/.aws/credentials"));
}
"#;

/// A spell that runs one shell command.
fn shell_spell(command: &str) -> String {
    format!(
        "import \"sh\";\n\nfun main(args: [str]) > int {{\n    return sh.shell({});\n}}\n",
        support::buzz_str(command)
    )
}

// ---------------------------------------------------------------- state

#[test]
fn a_misspelt_sandbox_key_is_an_error_and_no_spell_runs() {
    for (config, key, line) in [
        ("sandbx:\n  enabled: true\n", "sandbx", 1),
        ("tasks: {}\nSandbox:\n  enabled: true\n", "Sandbox", 2),
    ] {
        let h = Harness::with_config(config);
        h.write_spell("steal", READS_AWS);
        let out = h.run("steal", &[]);
        assert_eq!(out.status, Some(125), "{}", out.dump());
        let at = format!("{}:{line}:1", h.ws_path("magus.yaml").display());
        assert!(out.stderr.contains(&at), "{}", out.dump());
        assert!(out.stderr.contains(&format!("`{key}`")), "{}", out.dump());
        assert!(
            out.stderr.contains("did you mean `sandbox`?"),
            "{}",
            out.dump()
        );
        assert!(out.stdout.is_empty(), "{}", out.dump());
        h.assert_no_leak(&out);
    }
}

/// `magus --workspace WS run steal` as root, and as uid 65534 when possible.
fn steal_as_each_user(h: &Harness) -> Vec<support::RunOutput> {
    let mut runs = vec![h.run("steal", &[])];
    if can_switch_user() {
        let magus = h.command();
        let mut cmd = Command::new("setpriv");
        cmd.env_clear()
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_magus"))
            .arg("--workspace")
            .arg(&h.ws)
            .args(["run", "steal"])
            .current_dir(&h.root);
        for (k, v) in magus.get_envs() {
            if let Some(v) = v {
                cmd.env(k, v);
            }
        }
        runs.push(capture(&mut cmd));
    } else {
        eprintln!("uid 65534 part skipped: not root, or no setpriv");
    }
    runs
}

#[test]
fn a_misspelt_sandbox_key_stops_the_attack_for_root_and_a_user() {
    let h = Harness::with_config("sandbox:\n  enabled: false\n");
    h.write_spell("steal", READS_AWS);
    open_to_everyone(&h.root);
    // Control: with the sandbox off by choice the spell does read the secret.
    for out in steal_as_each_user(&h) {
        assert_eq!(out.status, Some(0), "control: {}", out.dump());
        assert!(
            out.stdout.contains(h.secret("~/.aws/credentials")),
            "control: {}",
            out.dump()
        );
    }
    for typo in ["sandbx:\n  enabled: true\n", "Sandbox:\n  enabled: true\n"] {
        h.write_config(typo);
        open_to_everyone(&h.ws_path("magus.yaml"));
        for out in steal_as_each_user(&h) {
            assert_eq!(out.status, Some(125), "{typo:?}: {}", out.dump());
            assert!(
                out.stderr.contains("did you mean `sandbox`?"),
                "{}",
                out.dump()
            );
            h.assert_no_leak(&out);
        }
    }
}

#[test]
fn an_unset_sandbox_says_so_at_every_run_and_an_explicit_off_is_quiet() {
    let h = Harness::with_config("");
    h.write_spell("ok", "fun main(args: [str]) > void {}\n");
    for (config, why) in [
        ("", "magus.yaml has no `sandbox:` section"),
        ("tasks: {}\n", "magus.yaml has no `sandbox:` section"),
        (
            "sandbox:\n  network: allow\n",
            "`sandbox:` in magus.yaml does not set `enabled`",
        ),
    ] {
        h.write_config(config);
        for _ in 0..2 {
            let out = h.run("ok", &[]);
            assert_eq!(out.status, Some(0), "{}", out.dump());
            let want = format!(
                "warning: the sandbox is off: {why}; add `sandbox: {{enabled: true}}` to magus.yaml to turn it on\n"
            );
            assert_eq!(out.stderr, want, "{config:?}");
        }
    }
    h.write_config("sandbox:\n  enabled: false\n");
    let out = h.run("ok", &[]);
    assert_eq!(
        (out.status, out.stderr.as_str()),
        (Some(0), ""),
        "{}",
        out.dump()
    );
}

#[test]
fn a_directory_named_magus_yaml_gets_its_own_error() {
    let h = Harness::new();
    std::fs::remove_file(h.ws_path("magus.yaml")).unwrap();
    std::fs::create_dir(h.ws_path("magus.yaml")).unwrap();
    let out = h
        .command()
        .current_dir(&h.ws)
        .args(["run", "x"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(stderr.contains("is not a regular file"), "{stderr}");
    assert!(!stderr.contains("no magus.yaml"), "{stderr}");
}

#[test]
fn a_huge_single_line_config_is_not_echoed() {
    let h = Harness::new();
    let line = format!(
        "sandbox: {{enabled: true, x: \"{}\"}}",
        "a".repeat(10 << 20)
    );
    h.write_config(&line);
    let out = h.run("x", &[]);
    assert_eq!(
        out.status,
        Some(125),
        "{}",
        &out.stderr[..out.stderr.len().min(2000)]
    );
    assert!(
        out.stderr.len() < 2000,
        "{} bytes on stderr",
        out.stderr.len()
    );
    let long_line = "x".repeat(300);
    h.write_config(&format!(
        "sandbox:\n  enabled: true\n  bogus: \"{long_line}\"\n"
    ));
    let out = h.run("x", &[]);
    assert_eq!(out.status, Some(125), "{}", out.dump());
    let widest = out.stderr.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(widest < 200, "a {widest}-character line:\n{}", out.stderr);
}

// ------------------------------------------------------------ terminal

/// Runs `magus ARGS` under a pseudo-terminal (`script`), returning what the
/// terminal showed, or `None` (with a printed reason) without `script`.
fn under_terminal(h: &Harness, args: &[&str]) -> Option<String> {
    let probe = Command::new("script").arg("--version").output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: util-linux `script` is not installed");
        return None;
    }
    let mut line = format!(
        "'{}' --workspace '{}'",
        env!("CARGO_BIN_EXE_magus"),
        h.ws.display()
    );
    for arg in args {
        line.push_str(&format!(" '{arg}'"));
    }
    let magus = h.command();
    let mut script = Command::new("script");
    script.env_clear();
    for (k, v) in magus.get_envs() {
        if let Some(v) = v {
            script.env(k, v);
        }
    }
    script
        .env("SHELL", "/bin/sh")
        .env("TERM", "dumb")
        .current_dir(&h.root)
        .args(["-qefc", &line, "/dev/null"]);
    let out = script.output().expect("run script");
    Some(String::from_utf8_lossy(&out.stdout).replace('\r', ""))
}

#[test]
fn a_child_keeps_the_terminal_and_its_order() {
    let h = Harness::new();
    h.write_spell(
        "alt",
        &shell_spell(
            "for i in 1 2 3 4 5; do echo out$i; echo err$i >&2; done; \
             [ -t 1 ] && echo stdout-is-a-tty; [ -t 2 ] && echo stderr-is-a-tty; true",
        ),
    );
    let Some(seen) = under_terminal(&h, &["run", "alt"]) else {
        return;
    };
    let lines: Vec<&str> = seen
        .lines()
        .filter(|l| l.starts_with("out") || l.starts_with("err") || l.contains("-is-a-tty"))
        .collect();
    let want = [
        "out1",
        "err1",
        "out2",
        "err2",
        "out3",
        "err3",
        "out4",
        "err4",
        "out5",
        "err5",
        "stdout-is-a-tty",
        "stderr-is-a-tty",
    ];
    assert_eq!(lines, want, "the terminal showed:\n{seen}");
}

// Expects the kernel layer: a child denied by the kernel.
#[cfg(kernel_layer)]
#[test]
fn a_kernel_denial_under_a_terminal_is_still_explained() {
    let h = Harness::new();
    let target = h.home_path(".terraform.d/plugins.txt");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::write(&target, "x").unwrap();
    h.write_spell("cat", &shell_spell(&format!("cat {}", target.display())));
    let Some(seen) = under_terminal(&h, &["run", "cat"]) else {
        return;
    };
    // Landlock says "Permission denied"; in the jail the file is not there.
    assert!(
        seen.contains("Permission denied") || seen.contains("No such file or directory"),
        "{seen}"
    );
    assert!(seen.contains("note[MGS2001]"), "{seen}");
}

// Expects the kernel layer: a child denied by the kernel.
#[cfg(kernel_layer)]
#[test]
fn json_mode_keeps_stderr_one_object_per_line() {
    let h = Harness::new();
    h.write_spell(
        "noisy",
        &shell_spell(
            "echo to-stdout; echo plain >&2; printf 'no newline' >&2; echo >&2; \
             echo '{\"not\": json' >&2; cat ~/.ssh/id_rsa",
        ),
    );
    let out = h.run_with("noisy", &[], &["--message-format", "json"]);
    assert_eq!(out.status, Some(1), "{}", out.dump());
    assert!(out.stdout.contains("to-stdout"), "{}", out.dump());
    let objects = parse_lines(&out.stderr);
    let child: Vec<&str> = objects
        .iter()
        .filter(|o| o["severity"] == "child")
        .map(|o| o["message"].as_str().unwrap())
        .collect();
    assert!(child.contains(&"plain"), "{child:?}");
    assert!(child.contains(&"no newline"), "{child:?}");
    assert!(child.contains(&"{\"not\": json"), "{child:?}");
    assert!(
        objects
            .iter()
            .any(|o| o["code"] == "MGS2001" && o["severity"] == "note"),
        "the denial is attributed:\n{}",
        out.stderr
    );
    assert!(
        objects.iter().any(|o| o["code"] == "MGS2003"),
        "{}",
        out.stderr
    );
    h.assert_no_leak(&out);
    for args in [
        vec!["--message-format", "json", "--no-such-flag"],
        vec!["--message-format=json", "sandbox", "frobnicate"],
        vec!["explain", "--message-format", "json"],
    ] {
        let out = capture(h.command().args(&args));
        assert_eq!(out.status, Some(125), "{args:?}\n{}", out.dump());
        let objects = parse_lines(&out.stderr);
        assert_eq!(objects.len(), 1, "{}", out.stderr);
        assert_eq!(objects[0]["severity"], "error");
    }
}

/// Every line of `stderr` as JSON; panics on one that is not.
fn parse_lines(stderr: &str) -> Vec<serde_json::Value> {
    assert!(!stderr.is_empty());
    stderr
        .lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}\n{stderr}"))
        })
        .collect()
}

// Expects the kernel layer: the jail's private /tmp.
#[cfg(kernel_layer)]
#[test]
fn children_get_a_writable_tmpdir() {
    let mut h = Harness::new();
    let tmp = h.root.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    h.set_env("TMPDIR", &tmp);
    h.write_spell(
        "tmp",
        &shell_spell(
            "echo \"TMPDIR=$TMPDIR\"; touch \"$TMPDIR/made\" && test -f \"$TMPDIR/made\" && echo made",
        ),
    );
    let out = h.run("tmp", &[]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert!(
        out.stdout
            .contains(&format!("TMPDIR={}\nmade\n", tmp.display())),
        "{}",
        out.dump()
    );
    // In the jail `$TMPDIR` is the run's own tmpfs: nothing reaches the
    // host's directory, and nothing outlives the run.
    assert!(!tmp.join("made").exists(), "{}", out.dump());
    h.remove_env("TMPDIR");
    let out = h.run("tmp", &[]);
    assert!(out.stdout.contains("TMPDIR=/tmp\n"), "{}", out.dump());
}

// --------------------------------------------------------------- quiet

/// A fake mise: a shim directory on `PATH` with a `node` shim.
fn with_mise(h: &mut Harness) -> std::path::PathBuf {
    let shims = h.home_path(".local/share/mise/shims");
    std::fs::create_dir_all(&shims).unwrap();
    let node = shims.join("node");
    std::fs::write(&node, "#!/bin/sh\necho node-ran\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&node, std::fs::Permissions::from_mode(0o755)).unwrap();
    h.set_env("PATH", format!("{}:/usr/bin:/bin", shims.display()));
    h.set_env("MISE_SHELL", "bash");
    shims
}

// Expects the kernel layer: a run that says nothing (no MGS2005).
#[cfg(kernel_layer)]
#[test]
fn shims_on_path_are_said_only_when_a_launch_meets_one() {
    // mise's directory is granted, its variables are not passed through.
    let mut h = Harness::with_config(
        "sandbox:\n  enabled: true\n  allow:\n    - path: ~/.local/share/mise\n      mode: ro\n",
    );
    with_mise(&mut h);
    h.write_spell(
        "hello",
        "import \"std\";\nfun main(args: [str]) > void { std.print(\"hi\"); }\n",
    );
    let out = h.run("hello", &[]);
    assert_eq!(
        (out.status, out.stderr.as_str()),
        (Some(0), ""),
        "{}",
        out.dump()
    );
    h.write_spell("ls", &shell_spell("ls / > /dev/null"));
    let out = h.run("ls", &[]);
    assert_eq!(out.stderr_count("MGS2006"), 0, "{}", out.dump());
    assert_eq!(out.stderr_count("MGS2003"), 1, "{}", out.dump());
    h.write_spell(
        "node",
        "import \"sh\";\nfun main(args: [str]) > void { sh.run([\"node\"]); sh.run([\"node\"]); }\n",
    );
    let out = h.run("node", &[]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert_eq!(out.stdout, "node-ran\nnode-ran\n", "{}", out.dump());
    assert_eq!(out.stderr_count("warning[MGS2006]"), 1, "{}", out.dump());
    assert!(out.stderr.contains("- \"MISE_*\""), "{}", out.dump());
}

#[test]
fn an_exec_denial_of_a_shim_points_at_the_managers_fix() {
    let mut h = Harness::new();
    with_mise(&mut h);
    h.write_spell(
        "node",
        "import \"sh\";\nfun main(args: [str]) > void { sh.run([\"node\"]); }\n",
    );
    let out = h.run_with("node", &[], &["--message-format", "json"]);
    assert_eq!(out.status, Some(124), "{}", out.dump());
    let objects = parse_lines(&out.stderr);
    let denial = objects
        .iter()
        .find(|o| o["code"] == "MGS2007")
        .unwrap_or_else(|| panic!("no MGS2007:\n{}", out.stderr));
    let help = denial["help"].as_str().unwrap();
    assert!(help.contains("path: ~/.local/share/mise"), "{help}");
    assert!(help.contains("\"MISE_*\""), "{help}");
    assert!(!help.contains("shims\n"), "{help}");
}

// Expects the kernel layer: a run that says nothing but the launch notes (no MGS2005).
#[cfg(kernel_layer)]
#[test]
fn withheld_names_are_shown_under_verbose_and_in_check_only() {
    let h = Harness::new();
    h.write_spell("child", &shell_spell("true"));
    let out = h.run("child", &[]);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert!(lines[0].starts_with("note[MGS2003]: "), "{}", out.dump());
    assert!(lines[1].starts_with("note[MGS2008]: "), "{}", out.dump());
    assert_eq!(lines.len(), 2, "{}", out.dump());
    assert!(!out.stderr.contains("GITHUB_TOKEN"), "{}", out.dump());
    let out = h.run_with("child", &[], &["-v"]);
    assert!(out.stderr.contains("GITHUB_TOKEN"), "{}", out.dump());
    let check = capture(
        h.command()
            .arg("--workspace")
            .arg(&h.ws)
            .args(["sandbox", "check"]),
    );
    assert!(check.stderr.contains("GITHUB_TOKEN"), "{}", check.dump());
    h.assert_no_leak(&out);
}

#[test]
fn quiet_prints_nothing_on_success_and_errors_still() {
    let h = Harness::with_config("");
    h.write_spell("child", &shell_spell("echo from-child"));
    let out = h.run_with("child", &[], &["-q"]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert_eq!(out.stderr, "", "{}", out.dump());
    assert_eq!(out.stdout, "from-child\n");
    h.write_config("sandbox:\n  enabled: true\n");
    let out = h.run_with("child", &[], &["--quiet"]);
    assert_eq!(
        (out.status, out.stderr.as_str()),
        (Some(0), ""),
        "{}",
        out.dump()
    );
    h.write_spell("steal", READS_AWS);
    let out = h.run_with("steal", &[], &["-q"]);
    assert_eq!(out.status, Some(124), "{}", out.dump());
    assert!(out.stderr.contains("error[MGS2001]"), "{}", out.dump());
}

// --------------------------------------------------------------- fixes

// Expects the kernel layer: a child denied by the kernel.
#[cfg(kernel_layer)]
#[test]
fn credential_denials_offer_no_grant_and_others_do() {
    let h = Harness::new();
    for rel in [
        ".ssh/id_rsa",
        ".aws/credentials",
        ".config/op/config",
        ".gnupg/x",
    ] {
        let file = h.home_path(rel);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        if !file.exists() {
            std::fs::write(&file, "secret").unwrap();
        }
        let spell = format!(
            "import \"fs\";\nfun main(args: [str]) > void {{ fs.read({}); }}\n",
            support::buzz_str(file.to_str().unwrap())
        );
        h.write_spell("read", &spell);
        let out = h.run_with("read", &[], &["--message-format", "json"]);
        assert_eq!(out.status, Some(124), "{}", out.dump());
        let help = first_help(&out.stderr, "MGS2001");
        assert!(help.contains("is a credential store"), "{rel}: {help}");
        assert!(!help.contains("- path:"), "{rel}: {help}");
        h.assert_no_leak(&out);
    }
    let child = h.home_path(".ssh/id_rsa");
    h.write_spell("cat", &shell_spell(&format!("cat {}", child.display())));
    let out = h.run_with("cat", &[], &["--message-format", "json"]);
    let help = first_help(&out.stderr, "MGS2001");
    assert!(!help.contains("- path:"), "{help}");
    // Control: an ordinary path gets a paste-ready grant.
    let plain = h.home_path(".terraform.d/x");
    std::fs::create_dir_all(plain.parent().unwrap()).unwrap();
    std::fs::write(&plain, "x").unwrap();
    let spell = format!(
        "import \"fs\";\nfun main(args: [str]) > void {{ fs.read({}); }}\n",
        support::buzz_str(plain.to_str().unwrap())
    );
    h.write_spell("read", &spell);
    let out = h.run_with("read", &[], &["--message-format", "json"]);
    let help = first_help(&out.stderr, "MGS2001");
    assert!(help.contains("- path: ~/.terraform.d/x"), "{help}");
}

#[cfg(kernel_layer)]
fn first_help(stderr: &str, code: &str) -> String {
    parse_lines(stderr)
        .into_iter()
        .find(|o| o["code"] == code)
        .and_then(|o| o["help"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no {code} with help in\n{stderr}"))
}

// ------------------------------------------------------ task-runner habits

#[test]
fn arguments_after_the_spell_are_the_spells() {
    let h = Harness::new();
    h.write_spell(
        "echo",
        "import \"std\";\nfun main(args: [str]) > void { foreach (a in args) { std.print(a); } }\n",
    );
    let out = h.run("echo", &["--help", "--workspace", "/tmp", "-q", "--", "x"]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert_eq!(out.stdout, "--help\n--workspace\n/tmp\n-q\n--\nx\n");
    let out = h.run("echo.buzz", &["a"]);
    assert_eq!(
        (out.status, out.stdout.as_str()),
        (Some(0), "a\n"),
        "{}",
        out.dump()
    );
}

#[test]
fn magus_and_magus_run_list_the_spells_with_whole_sentences() {
    let h = Harness::new();
    h.write_spell(
        "build",
        "// Builds the project with `cargo build --release`, then copies the\n// binary into dist/. Needs cargo.\nfun main(args: [str]) > void {}\n",
    );
    h.write_spell("bare", "fun main(args: [str]) > void {}\n");
    for args in [vec![], vec!["run"], vec!["list"]] {
        let out = capture(h.command().arg("--workspace").arg(&h.ws).args(&args));
        assert_eq!(out.status, Some(0), "{args:?}\n{}", out.dump());
        assert_eq!(
            out.stdout,
            "bare\nbuild  Builds the project with `cargo build --release`, then copies the binary into dist/.\n",
            "{args:?}"
        );
    }
}

#[test]
fn a_near_spell_name_is_suggested() {
    let h = Harness::new();
    h.write_spell("hello", "fun main(args: [str]) > void {}\n");
    let out = h.run("hellp", &[]);
    assert_eq!(out.status, Some(127), "{}", out.dump());
    assert!(
        out.stderr.contains("did you mean `hello`?"),
        "{}",
        out.dump()
    );
    let out = h.run("zzz", &[]);
    assert!(!out.stderr.contains("did you mean"), "{}", out.dump());
}

#[test]
fn completions_are_printed_for_each_shell() {
    let h = Harness::new();
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef magus"),
        ("fish", "complete -c magus"),
    ] {
        let out = capture(h.command().args(["completions", shell]));
        assert_eq!(out.status, Some(0), "{shell}\n{}", out.dump());
        assert!(
            out.stdout.contains(marker),
            "{shell}: {}",
            &out.stdout[..200.min(out.stdout.len())]
        );
        assert!(out.stdout.contains("sandbox"), "{shell}");
    }
}

#[test]
fn colour_follows_the_flag_and_the_environment() {
    let mut h = Harness::new();
    let colored = |h: &Harness, extra: &[&str]| {
        let out = h.run_with("missing", &[], extra);
        assert_eq!(out.status, Some(127), "{}", out.dump());
        out.stderr.contains('\x1b')
    };
    assert!(!colored(&h, &[]));
    assert!(colored(&h, &["--color", "always"]));
    assert!(!colored(&h, &["--color=never"]));
    h.set_env("CLICOLOR_FORCE", "1");
    assert!(colored(&h, &[]));
    assert!(!colored(&h, &["--color", "never"]));
    h.set_env("NO_COLOR", "1");
    assert!(!colored(&h, &[]));
    assert!(colored(&h, &["--color", "always"]));
}

#[test]
fn help_documents_the_exit_statuses() {
    let h = Harness::new();
    let out = capture(h.command().arg("--help"));
    assert_eq!(out.status, Some(0));
    for status in ["124", "125", "126", "127"] {
        assert!(out.stdout.contains(status), "{status}: {}", out.stdout);
    }
    assert!(Path::new(env!("CARGO_BIN_EXE_magus")).is_file());
}
