//! Denials found before the run, through the real `magus` binary, as root
//! and as uid 65534: a literal path, program or protected file the policy
//! refuses is an error of `magus check` at its line and stops `magus run`
//! before anything runs (an earlier line's marker file is never written);
//! inside a `try` that catches it, a warning, and the run goes on; a path
//! the source does not settle, nothing. Each with a control (the sandbox
//! off), so a pass means something. Also `magus sandbox suggest`, whose
//! section, pasted, makes the run pass with no further denial.
#![cfg(target_os = "linux")]

mod support;

use std::path::Path;
use support::runas::{hand_over, User, AS_NOBODY};
use support::{buzz_str, capture, Harness, RunOutput};

/// Root and uid 65534 when the tests run as root (switching needs it),
/// else only the user the tests run as.
fn users() -> Vec<User> {
    match support::can_switch_user() {
        true => vec![User::Root, User::Nobody],
        false => vec![User::Root],
    }
}

/// A harness whose files belong to `user`.
fn harness(user: User) -> Harness {
    let h = Harness::new();
    hand_over(&h.root, user);
    h
}

/// `magus --workspace WS ARGS...` as `user`, the sandbox on or off.
fn magus(h: &Harness, user: User, on: bool, args: &[&str]) -> RunOutput {
    let wrapper: &[&str] = match user {
        User::Root => &[],
        User::Nobody => &AS_NOBODY,
    };
    let mut cmd = h.wrapped_command(wrapper);
    if !on {
        cmd.env("MAGUS_SANDBOX_ENABLED", "0");
    }
    cmd.arg("--workspace").arg(&h.ws).args(args);
    capture(&mut cmd)
}

/// Whether stderr holds an error diagnostic.
fn has_error(out: &RunOutput) -> bool {
    out.stderr.contains("error[") || out.stderr.contains("error:")
}

/// A spell whose `main` first writes `marker.txt`, then runs `rest`
/// (importing the modules `rest` names).
fn after_marker(rest: &str) -> String {
    let imports: String = ["std", "sh", "env"]
        .iter()
        .map(|m| match rest.contains(&format!("{m}.")) {
            true => format!("import \"{m}\";\n"),
            false => "\n".to_string(),
        })
        .collect();
    format!(
        "{imports}import \"fs\";\nfun main(args: [str]) > void {{\n    fs.write(\"marker.txt\", \"ran\");\n{rest}\n}}\n"
    )
}

/// Line 7 of an [`after_marker`] spell is the first line of `rest`.
const REST_LINE: u32 = 7;

/// What `magus check` and `magus run` make of `spell` as `user`, with the
/// sandbox on: the check fails with `code` as an error at `spells/s.buzz`
/// line [`REST_LINE`], column `column`, and the run refuses to start (no
/// marker). The control, with the sandbox off: the check is clean and the
/// run writes the marker.
fn assert_refused_before_the_run(h: &Harness, user: User, code: &str, column: u32) {
    let marker = h.ws_path("marker.txt");
    let check = magus(h, user, true, &["check", "s"]);
    assert_eq!(check.status, Some(2), "{user:?}: {}", check.dump());
    assert!(
        check.stderr.contains(&format!("error[{code}]")),
        "{user:?}: {}",
        check.dump()
    );
    let at = format!("spells/s.buzz:{REST_LINE}:{column}");
    assert!(
        check.stderr.contains(&at),
        "{user:?} {at}: {}",
        check.dump()
    );
    let run = magus(h, user, true, &["run", "s"]);
    assert_eq!(run.status, Some(124), "{user:?}: {}", run.dump());
    assert!(run.stderr.contains(&at), "{user:?}: {}", run.dump());
    assert!(
        run.stderr.contains("nothing ran"),
        "{user:?}: {}",
        run.dump()
    );
    assert!(
        !marker.exists(),
        "{user:?}: the run started: {}",
        run.dump()
    );
    h.assert_no_leak(&run);

    let control = magus(h, user, false, &["check", "s"]);
    assert_eq!(control.status, Some(0), "{user:?}: {}", control.dump());
    assert!(
        !control.stderr.contains(code),
        "{user:?}: {}",
        control.dump()
    );
    let control = magus(h, user, false, &["run", "s"]);
    assert!(marker.exists(), "{user:?}: control: {}", control.dump());
    std::fs::remove_file(&marker).expect("remove the marker");
}

#[test]
fn a_literal_read_of_a_secret_nothing_catches_stops_the_run_before_it_starts() {
    for user in users() {
        let h = harness(user);
        let secret = h.home_path(".aws/credentials");
        let rest = format!(
            "    std.print(fs.read({}));",
            buzz_str(secret.display().to_string())
        );
        h.write_spell("s", &after_marker(&rest));
        assert_refused_before_the_run(&h, user, "MGS2001", 23);
        let check = magus(&h, user, true, &["check", "s"]);
        assert!(
            check.stderr.contains("`~/.aws` is a credential store"),
            "{user:?}: the run's own help: {}",
            check.dump()
        );
    }
}

#[test]
fn a_folded_path_is_foreseen_too() {
    for user in users() {
        let h = harness(user);
        let home = buzz_str(h.home.display().to_string());
        let rest =
            format!("    final dir = {home} + \"/.aws\";\n    fs.read(\"{{dir}}/credentials\");");
        h.write_spell("s", &after_marker(&rest));
        let check = magus(&h, user, true, &["check", "s"]);
        assert_eq!(check.status, Some(2), "{user:?}: {}", check.dump());
        assert!(
            check
                .stderr
                .contains(&format!("spells/s.buzz:{}:13", REST_LINE + 1)),
            "{user:?}: {}",
            check.dump()
        );
    }
}

#[test]
fn inside_a_try_that_catches_it_a_warning_and_the_run_goes_on() {
    for user in users() {
        let h = harness(user);
        let secret = buzz_str(h.home_path(".aws/credentials").display().to_string());
        let rest = format!(
            "    try {{\n        fs.read({secret});\n    }} catch (e: SandboxError) {{\n        std.print(\"caught {{e.code}}\");\n    }}"
        );
        h.write_spell("s", &after_marker(&rest));
        let check = magus(&h, user, true, &["check", "s"]);
        assert_eq!(check.status, Some(0), "{user:?}: {}", check.dump());
        assert!(
            check.stderr.contains("warning[MGS2001]"),
            "{user:?}: {}",
            check.dump()
        );
        assert!(
            check.stdout.contains("1 warning"),
            "{user:?}: {}",
            check.dump()
        );
        let run = magus(&h, user, true, &["run", "s"]);
        assert_eq!(run.status, Some(0), "{user:?}: {}", run.dump());
        assert_eq!(run.stdout, "caught MGS2001\n", "{user:?}: {}", run.dump());
        assert!(h.ws_path("marker.txt").exists(), "{user:?}");
        h.assert_no_leak(&run);
    }
}

#[test]
fn a_path_the_source_does_not_settle_is_not_guessed() {
    for user in users() {
        let h = harness(user);
        h.write_spell("s", &after_marker("    std.print(fs.read(args[0]));"));
        let check = magus(&h, user, true, &["check", "s"]);
        assert_eq!(check.status, Some(0), "{user:?}: {}", check.dump());
        assert!(
            !check.stderr.contains("MGS2001"),
            "{user:?}: {}",
            check.dump()
        );
        // The control: the run itself refuses that path, after line 6.
        let secret = h.home_path(".aws/credentials");
        let secret = secret.to_str().expect("a UTF-8 path");
        let run = magus(&h, user, true, &["run", "s", secret]);
        assert_eq!(run.status, Some(124), "{user:?}: {}", run.dump());
        assert!(h.ws_path("marker.txt").exists(), "{user:?}: {}", run.dump());
        h.assert_no_leak(&run);
    }
}

#[test]
fn writing_magus_yaml_is_foreseen_as_protected() {
    for user in users() {
        let h = harness(user);
        h.write_spell(
            "s",
            &after_marker("    fs.write(\"magus.yaml\", \"sandbox:\\n  enabled: false\\n\");"),
        );
        let before = std::fs::read_to_string(h.ws_path("magus.yaml")).expect("magus.yaml");
        let check = magus(&h, user, true, &["check", "s"]);
        assert!(
            check.stderr.contains("protected path"),
            "{user:?}: {}",
            check.dump()
        );
        let run = magus(&h, user, true, &["run", "s"]);
        assert_eq!(run.status, Some(124), "{user:?}: {}", run.dump());
        let after = std::fs::read_to_string(h.ws_path("magus.yaml")).expect("magus.yaml");
        assert_eq!(before, after, "{user:?}");
        assert!(
            !h.ws_path("marker.txt").exists(),
            "{user:?}: {}",
            run.dump()
        );
        assert_refused_before_the_run(&h, user, "MGS2002", 14);
        h.write_config(support::SANDBOX_ON);
    }
}

#[test]
fn a_program_outside_the_policy_is_foreseen() {
    for user in users() {
        let h = harness(user);
        let tool = h.home_path("bin/tool");
        plant_tool(&tool, user);
        let rest = format!(
            "    sh.run([{}, \"x\"]);",
            buzz_str(tool.display().to_string())
        );
        h.write_spell("s", &after_marker(&rest));
        assert_refused_before_the_run(&h, user, "MGS2007", 12);
    }
}

/// An executable shell script at `path` that prints `tool ran`.
fn plant_tool(path: &Path, user: User) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("bin/");
    std::fs::write(path, "#!/bin/sh\necho tool ran\n").expect("the tool");
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(path, mode).expect("executable");
    hand_over(path.parent().expect("a parent"), user);
}

#[test]
fn the_help_names_the_spells_own_section_before_and_during_the_run() {
    let h = Harness::new();
    std::fs::create_dir_all(h.root.join("data")).expect("data/");
    let data = h.root.join("data/in.txt");
    std::fs::write(&data, "data").expect("data/in.txt");
    let path = buzz_str(data.display().to_string());
    h.write_spell(
        "s",
        &after_marker(&format!("    std.print(fs.read({path}));")),
    );
    let json = ["--message-format", "json"];
    let check = magus(&h, User::Root, true, &[&json[..], &["check", "s"]].concat());
    let before = mgs2001_help(&check);
    // At run time (a path the check cannot see): the same help.
    h.write_spell("s", &after_marker("    std.print(fs.read(args[0]));"));
    let data = data.to_str().expect("a UTF-8 path");
    let run = magus(
        &h,
        User::Root,
        true,
        &[&json[..], &["run", "s", data]].concat(),
    );
    assert_eq!(run.status, Some(124), "{}", run.dump());
    assert_eq!(before, mgs2001_help(&run));
    let section = "spells:\n  s:\n    allow:\n      - path: ";
    assert!(before.contains("add under `spells: s:`"), "{before}");
    assert!(before.contains(section), "{before}");
    assert!(before.ends_with("mode: ro"), "{before}");
}

/// The help of the one MGS2001 diagnostic among `out`'s JSON lines.
fn mgs2001_help(out: &RunOutput) -> String {
    let found: Vec<String> = out
        .stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|d| d["code"] == "MGS2001")
        .filter_map(|d| d["help"].as_str().map(str::to_string))
        .collect();
    assert_eq!(found.len(), 1, "{}", out.dump());
    found[0].clone()
}

#[test]
fn suggest_prints_a_section_that_makes_the_run_pass() {
    for user in users() {
        let h = harness(user);
        let (data, out, tool) = (
            h.root.join("data"),
            h.root.join("out"),
            h.home_path("bin/tool"),
        );
        for dir in [&data, &out] {
            std::fs::create_dir_all(dir).expect("a directory");
        }
        std::fs::write(data.join("in.txt"), "data-in").expect("data/in.txt");
        hand_over(&h.root, user);
        plant_tool(&tool, user);
        let rest = format!(
            "    std.print(fs.read({}));\n    fs.write({}, \"x\");\n    sh.run([{}]);\n    std.print(env.get(\"SPELL_TOKEN\") ?? \"no token\");\n    try {{ fs.read({}); }} catch {{}}",
            buzz_str(data.join("in.txt").display().to_string()),
            buzz_str(out.join("result.txt").display().to_string()),
            buzz_str(tool.display().to_string()),
            buzz_str(h.home_path(".ssh/id_rsa").display().to_string()),
        );
        let spell =
            after_marker(&rest).replace("import \"sh\";", "import \"sh\";\nimport \"env\";");
        h.write_spell("s", &spell);
        let mut h = h;
        h.set_env("SPELL_TOKEN", "token-for-s");
        // The control: without the section, the run is refused.
        let refused = magus(&h, user, true, &["run", "s"]);
        assert_eq!(refused.status, Some(124), "{user:?}: {}", refused.dump());

        let suggested = magus(&h, user, true, &["sandbox", "suggest", "s"]);
        assert_eq!(suggested.status, Some(0), "{user:?}: {}", suggested.dump());
        let yaml = &suggested.stdout;
        assert!(yaml.contains("spells:\n  s:\n"), "{user:?}: {yaml}");
        assert!(
            yaml.contains("mode: rw") && yaml.contains("mode: ro"),
            "{user:?}: {yaml}"
        );
        assert!(
            yaml.contains("passthrough: [SPELL_TOKEN]"),
            "{user:?}: {yaml}"
        );
        assert!(
            !yaml.contains("path: ~/.ssh"),
            "{user:?}: a credential store: {yaml}"
        );
        assert!(yaml.contains("# not proposed: "), "{user:?}: {yaml}");

        h.write_config(&format!("{}{yaml}", support::SANDBOX_ON));
        let check = magus(&h, user, true, &["check", "s"]);
        assert_eq!(check.status, Some(0), "{user:?}: {}", check.dump());
        let run = magus(&h, user, true, &["run", "s"]);
        assert_eq!(run.status, Some(0), "{user:?}: {}", run.dump());
        assert_eq!(
            run.stdout,
            "data-in\ntool ran\ntoken-for-s\n",
            "{user:?}: {}",
            run.dump()
        );
        assert!(!has_error(&run), "{user:?}: {}", run.dump());
        let again = magus(&h, user, true, &["sandbox", "suggest", "s"]);
        assert!(
            again.stdout.contains("needs nothing"),
            "{user:?}: {}",
            again.dump()
        );
    }
}

#[test]
fn the_repositorys_own_spells_check_clean_under_its_magus_yaml() {
    let h = Harness::new();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cmd = h.command();
    cmd.arg("--workspace").arg(repo).arg("check");
    let out = capture(&mut cmd);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert!(!has_error(&out), "{}", out.dump());
    assert!(!out.stderr.contains("MGS2001"), "{}", out.dump());
}

#[test]
fn an_imported_files_literal_calls_are_looked_at_too() {
    for user in users() {
        let h = harness(user);
        let secret = buzz_str(h.home_path(".aws/credentials").display().to_string());
        let lib = h.ws_path("spells/lib");
        std::fs::create_dir_all(&lib).expect("spells/lib");
        let helpers = format!(
            "import \"fs\";\nexport fun leak() > str {{ return fs.read({secret}); }}\nexport final early = fs.exists({secret});\n"
        );
        std::fs::write(lib.join("helpers.buzz"), &helpers).expect("helpers");
        hand_over(&lib, user);
        let spell = after_marker("    std.print(helpers\\leak());")
            .replace("import \"fs\";", "import \"fs\";\nimport \"lib/helpers\";");
        h.write_spell("s", &spell);
        let check = magus(&h, user, true, &["check", "s"]);
        assert_eq!(check.status, Some(2), "{user:?}: {}", check.dump());
        // Its top level runs at the import: an error. Its function, called
        // from anywhere: a warning.
        assert!(
            check.stderr.contains("spells/lib/helpers.buzz:3:32"),
            "{user:?}: {}",
            check.dump()
        );
        assert!(
            check.stderr.contains("spells/lib/helpers.buzz:2:42"),
            "{user:?}: {}",
            check.dump()
        );
        assert_eq!(check.stderr_count("error[MGS2001]"), 1, "{}", check.dump());
        assert_eq!(
            check.stderr_count("warning[MGS2001]"),
            1,
            "{}",
            check.dump()
        );
        let run = magus(&h, user, true, &["run", "s"]);
        assert_eq!(run.status, Some(124), "{user:?}: {}", run.dump());
        assert!(
            !h.ws_path("marker.txt").exists(),
            "{user:?}: {}",
            run.dump()
        );
        // The control: with the sandbox off, nothing is foreseen.
        let control = magus(&h, user, false, &["check", "s"]);
        assert_eq!(control.status, Some(0), "{user:?}: {}", control.dump());
    }
}
