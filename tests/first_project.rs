//! What a new user meets first (issue 35, "Starting a project"), through
//! the real binary: `magus init` in an empty directory and the commands it
//! suggests, as root and as uid 65534; a directory without a workspace;
//! the closing line of `magus check`; `magus test --filter` and its paths;
//! codes, explain pages and "did you mean" for `magus.yaml`; where a
//! missing `;` is reported, and `let`.

mod support;

use serde_json::Value;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use support::{can_switch_user, capture, open_to_everyone, Harness, RunOutput};

/// `magus ARGS` started in `dir` with the harness's environment, as root
/// or as uid 65534.
fn magus_in(h: &Harness, dir: &Path, nobody: bool, args: &[&str]) -> RunOutput {
    let mut cmd = match nobody {
        true => h.command_as_nobody(),
        false => h.command(),
    };
    cmd.current_dir(dir).args(args);
    capture(&mut cmd)
}

/// `magus --workspace WS ARGS`.
fn magus(h: &Harness, args: &[&str]) -> RunOutput {
    let mut cmd = h.command();
    cmd.arg("--workspace").arg(&h.ws).args(args);
    capture(&mut cmd)
}

/// An empty directory for a new project, outside `/tmp` and owned by the
/// user who will run magus in it.
fn empty_project(h: &Harness, name: &str, uid: u32) -> PathBuf {
    let dir = h.root.join(name);
    std::fs::create_dir(&dir).unwrap();
    std::os::unix::fs::chown(&dir, Some(uid), Some(uid)).unwrap();
    assert!(!dir.starts_with("/tmp"), "{}", dir.display());
    dir
}

/// The users to test as: root, and uid 65534 when this run can switch.
fn users() -> Vec<(bool, u32)> {
    let mut users = vec![(false, 0)];
    if can_switch_user() {
        users.push((true, 65534));
    } else {
        eprintln!("uid 65534 part skipped: not root, or no setpriv");
    }
    users
}

// ---------------------------------------------------------------- init

#[test]
fn init_then_run_hello_then_test_work_in_an_empty_directory_for_root_and_a_user() {
    let h = Harness::new();
    // uid 65534 must reach its directory through the harness root.
    open_to_everyone(&h.root);
    for (nobody, uid) in users() {
        let dir = empty_project(&h, &format!("project-{uid}"), uid);
        let init = magus_in(&h, &dir, nobody, &["init"]);
        assert_eq!(init.status, Some(0), "uid {uid}: {}", init.dump());
        for next in ["magus run hello", "magus test", "magus sandbox check"] {
            assert!(init.stdout.contains(next), "uid {uid}: {}", init.dump());
        }
        let config = std::fs::read_to_string(dir.join("magus.yaml")).unwrap();
        assert!(config.starts_with('#'), "{config}");
        assert!(config.contains("\nsandbox:\n  enabled: true\n"), "{config}");
        let hello = std::fs::read_to_string(dir.join("spells/hello.buzz")).unwrap();
        assert!(hello.contains("\ntest \""), "{hello}");
        for file in ["magus.yaml", "spells", "spells/hello.buzz"] {
            let owner = std::fs::metadata(dir.join(file)).unwrap().uid();
            assert_eq!(owner, uid, "{file}");
        }

        let run = magus_in(&h, &dir, nobody, &["run", "hello"]);
        assert_eq!(run.status, Some(0), "uid {uid}: {}", run.dump());
        assert_eq!(run.stdout, "Hello, world!\n", "uid {uid}: {}", run.dump());
        let named = magus_in(&h, &dir, nobody, &["run", "hello", "Merlin"]);
        assert_eq!(named.stdout, "Hello, Merlin!\n", "{}", named.dump());

        let test = magus_in(&h, &dir, nobody, &["test"]);
        assert_eq!(test.status, Some(0), "uid {uid}: {}", test.dump());
        assert!(
            test.stdout.starts_with("ok   spells/hello.buzz: "),
            "uid {uid}: {}",
            test.dump()
        );
        assert_eq!(test.stdout.lines().last(), Some("1 passed, 0 failed"));

        let check = magus_in(&h, &dir, nobody, &["sandbox", "check"]);
        assert_eq!(check.status, Some(0), "uid {uid}: {}", check.dump());
        assert!(check.stdout.contains("sandbox      on (magus.yaml line"));
        for out in [&init, &run, &test, &check] {
            h.assert_no_leak(out);
        }
    }
}

#[test]
fn init_overwrites_nothing() {
    let h = Harness::new();
    // A hello spell of the user's own.
    let mine = empty_project(&h, "has-hello", 0);
    std::fs::create_dir(mine.join("spells")).unwrap();
    std::fs::write(mine.join("spells/hello.buzz"), "// mine\n").unwrap();
    // A magus.yaml of the user's own, and one that is a dangling link.
    let configured = empty_project(&h, "has-config", 0);
    std::fs::write(
        configured.join("magus.yaml"),
        "sandbox:\n  enabled: false\n",
    )
    .unwrap();
    let linked = empty_project(&h, "has-link", 0);
    std::os::unix::fs::symlink(h.root.join("nowhere"), linked.join("magus.yaml")).unwrap();
    for dir in [&mine, &configured, &linked] {
        let out = magus_in(&h, dir, false, &["init"]);
        assert_eq!(out.status, Some(125), "{}", out.dump());
        assert!(out.stderr.contains("already exists"), "{}", out.dump());
        assert!(out.stdout.is_empty(), "{}", out.dump());
    }
    assert_eq!(
        std::fs::read_to_string(mine.join("spells/hello.buzz")).unwrap(),
        "// mine\n"
    );
    assert!(!mine.join("magus.yaml").exists());
    assert_eq!(
        std::fs::read_to_string(configured.join("magus.yaml")).unwrap(),
        "sandbox:\n  enabled: false\n"
    );
    assert!(!configured.join("spells").exists());
    assert!(linked.join("magus.yaml").is_symlink());
    assert!(!h.root.join("nowhere").exists() && !linked.join("spells").exists());
}

#[test]
fn a_directory_without_a_workspace_says_to_run_magus_init() {
    let h = Harness::new();
    let dir = empty_project(&h, "nothing-here", 0);
    let commands: [&[&str]; 6] = [
        &[],
        &["run", "hello"],
        &["test"],
        &["check"],
        &["list"],
        &["sandbox", "check"],
    ];
    for args in commands {
        let out = magus_in(&h, &dir, false, args);
        assert_eq!(out.status, Some(125), "{args:?}: {}", out.dump());
        assert!(out.stderr.contains("error[MGS3001]"), "{}", out.dump());
        assert!(out.stderr.contains("run `magus init`"), "{}", out.dump());
    }
    let page = capture(h.command().args(["explain", "MGS3001"]));
    assert!(page.stdout.contains("magus init"), "{}", page.dump());
}

// ---------------------------------------------------------------- check, test

#[test]
fn a_clean_check_says_so_in_one_line() {
    let h = Harness::new();
    let good = "import \"buzz:std\";\nfun main(args: [str]) > void {\n    std\\print(\"hi\");\n}\n";
    h.write_spell("one", good);
    h.write_spell("two", good);
    let clean = magus(&h, &["check"]);
    assert_eq!(clean.status, Some(0), "{}", clean.dump());
    assert_eq!(clean.stdout, "checked 2 spells, no problems\n");
    assert!(clean.stderr.is_empty(), "{}", clean.dump());
    let quiet = magus(&h, &["-q", "check"]);
    assert!(quiet.stdout.is_empty(), "{}", quiet.dump());
    h.write_spell("typo", &good.replace("print", "prnt"));
    let found = magus(&h, &["check"]);
    assert_eq!(found.status, Some(2), "{}", found.dump());
    assert_eq!(found.stdout, "checked 3 spells: 1 error\n");
}

const TESTS: &str = r#"import "buzz:std";

fun double(n: int) > int => n * 2;

test "parses one" {
    std\assert(double(1) == 2, message: "one");
}

test "parses two" {
    std\assert(double(2) == 5, message: "not five");
}

test "formats" {
    std\assert(true);
}
"#;

#[test]
fn magus_test_filters_by_name_and_prints_workspace_paths() {
    let h = Harness::new();
    h.write_spell("a", TESTS);
    h.write_spell(
        "b",
        "import \"buzz:std\";\ntest \"other\" { std\\assert(true); }\n",
    );
    let out = magus(&h, &["test", "--filter", "parses"]);
    assert_eq!(out.status, Some(1), "{}", out.dump());
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines[0], "ok   spells/a.buzz: parses one", "{}", out.dump());
    assert!(
        lines[1].starts_with("FAIL spells/a.buzz: parses two: spells/a.buzz:10:5: "),
        "{}",
        out.dump()
    );
    assert_eq!(lines.last(), Some(&"1 passed, 1 failed, 2 filtered out"));
    assert!(
        !out.stdout.contains(h.ws.to_str().unwrap()),
        "{}",
        out.dump()
    );
    let none = magus(&h, &["test", "--filter", "parse one"]);
    assert_eq!(none.status, Some(0), "{}", none.dump());
    assert_eq!(none.stdout, "0 passed, 0 failed, 4 filtered out\n");
    assert!(
        none.stderr.contains("no test name contains `parse one`"),
        "{}",
        none.dump()
    );
    let all = magus(&h, &["test"]);
    assert_eq!(all.stdout.lines().last(), Some("3 passed, 1 failed"));
}

// ---------------------------------------------------------------- magus.yaml

/// (magus.yaml, its code, the key "did you mean" must name).
const BAD_CONFIGS: [(&[u8], &str, Option<&str>); 12] = [
    (
        b"sandbox:\n  enabled: true\n  alow: []\n",
        "MGS3004",
        Some("allow"),
    ),
    (b"sandbox:\n  Enabled: true\n", "MGS3004", Some("enabled")),
    (
        b"sandbox:\n  enabled: true\n  allow:\n    - pth: ~/.cargo\n      mode: rw\n",
        "MGS3004",
        Some("path"),
    ),
    (
        b"sandbox:\n  enabled: true\n  env:\n    passthru: [GOPATH]\n",
        "MGS3004",
        Some("passthrough"),
    ),
    (
        b"sandbox:\n  enabled: true\n  network:\n    host: [crates.io]\n",
        "MGS3004",
        Some("hosts"),
    ),
    (
        b"sandbox:\n  enabled: true\n  limits:\n    wall-time: 30m\n",
        "MGS3004",
        Some("wall_time"),
    ),
    (b"sandbx:\n  enabled: true\n", "MGS3004", Some("sandbox")),
    (b"sandbox:\n  enabled: yes\n", "MGS3005", None),
    (
        b"sandbox:\n  enabled: true\n  allow:\n    - path: ~/.cargo\n",
        "MGS3005",
        None,
    ),
    (b"sandbox:\n  enabled: true\n  allow: [\n", "MGS3003", None),
    (
        b"sandbox:\n  enabled: true\n  network: closed\n",
        "MGS3006",
        None,
    ),
    (b"sandbox:\n  enabled: tr\xffe\n", "MGS3002", None),
];

/// The one JSON diagnostic of `out`.
fn only_diagnostic(out: &RunOutput) -> Value {
    let objects: Vec<Value> = out
        .stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(objects.len(), 1, "{}", out.dump());
    objects.into_iter().next().unwrap()
}

/// The page `magus explain CODE` prints.
fn page(h: &Harness, code: &str) -> String {
    let out = capture(h.command().args(["explain", code]));
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert!(out.stdout.starts_with(&format!("# {code}: ")), "{code}");
    out.stdout
}

/// Every `magus ...` command a help offers is on the code's page.
fn assert_page_teaches(page: &str, code: &str, help: &str) {
    for piece in help.split('`').skip(1).step_by(2) {
        if piece.starts_with("magus ") && !piece.contains('/') {
            assert!(page.contains(piece), "{code}: `{piece}` is not on the page");
        }
    }
}

#[test]
fn every_config_error_has_a_code_a_page_and_did_you_mean() {
    let h = Harness::new();
    h.write_spell("ok", "fun main(args: [str]) > void {}\n");
    for (yaml, code, near) in BAD_CONFIGS {
        std::fs::write(h.ws_path("magus.yaml"), yaml).unwrap();
        let out = magus(&h, &["--message-format", "json", "run", "ok"]);
        assert_eq!(out.status, Some(125), "{}", out.dump());
        let d = only_diagnostic(&out);
        assert_eq!(d["code"], code, "{}", out.dump());
        assert_eq!(d["explain"], format!("magus explain {code}"));
        assert!(d["config"]["line"].as_u64().is_some(), "{}", out.dump());
        let help = d["help"].as_str().unwrap_or_default();
        let page = page(&h, code);
        assert_page_teaches(&page, code, help);
        if let Some(key) = near {
            assert!(
                help.starts_with(&format!("did you mean `{key}`?")),
                "{}",
                out.dump()
            );
            assert!(page.contains(&format!("`{key}`")), "{code}: {key}");
        }
    }
    // Not a key of the file: the variable that overrides it.
    h.write_config("sandbox:\n  enabled: true\n");
    let mut cmd = h.command();
    cmd.env("MAGUS_SANDBOX_ENABLED", "yes")
        .args(["--message-format", "json", "--workspace"])
        .arg(&h.ws)
        .args(["run", "ok"]);
    let out = capture(&mut cmd);
    assert_eq!(out.status, Some(125), "{}", out.dump());
    assert_eq!(only_diagnostic(&out)["code"], "MGS3007");
}

#[test]
fn a_nested_config_that_turns_the_sandbox_off_is_refused_with_its_code() {
    let h = Harness::new();
    let inner = h.ws_path("vendor/tool");
    std::fs::create_dir_all(inner.join("spells")).unwrap();
    std::fs::write(inner.join("magus.yaml"), "sandbox:\n  enabled: false\n").unwrap();
    std::fs::write(
        inner.join("spells/x.buzz"),
        "fun main(args: [str]) > void {}\n",
    )
    .unwrap();
    let refused = magus_in(&h, &inner, false, &["run", "x"]);
    assert_eq!(refused.status, Some(125), "{}", refused.dump());
    assert!(
        refused.stderr.contains("error[MGS3008]"),
        "{}",
        refused.dump()
    );
    page(&h, "MGS3008");
    // Control: named by the user, it runs.
    let named = magus_in(&h, &inner, false, &["--workspace", ".", "run", "x"]);
    assert_eq!(named.status, Some(0), "{}", named.dump());
}

// ---------------------------------------------------------------- syntax

#[test]
fn a_missing_semicolon_is_reported_at_the_end_of_its_line() {
    let h = Harness::new();
    h.write_spell(
        "semi",
        "import \"buzz:std\";\nfun main(args: [str]) > void {\n    final x = 1\n    std\\print(\"{x}\");\n}\n",
    );
    let out = magus(&h, &["check", "semi"]);
    assert_eq!(out.status, Some(2), "{}", out.dump());
    assert!(out.stderr.contains("expected `;`"), "{}", out.dump());
    assert!(out.stderr.contains("semi.buzz:3:16"), "{}", out.dump());
    assert!(
        out.stderr.contains("3 |     final x = 1\n"),
        "{}",
        out.dump()
    );
}

#[test]
fn let_gets_a_hint_that_buzz_declares_with_final_and_var() {
    let h = Harness::new();
    h.write_spell(
        "lets",
        "import \"buzz:std\";\nfun main(args: [str]) > void {\n    let name = \"Merlin\";\n    std\\print(name);\n}\n",
    );
    let out = magus(&h, &["run", "lets"]);
    assert_eq!(out.status, Some(126), "{}", out.dump());
    assert!(
        out.stderr.contains("`let` is not a Buzz keyword"),
        "{}",
        out.dump()
    );
    assert!(out.stderr.contains("lets.buzz:3:5"), "{}", out.dump());
    // The help after the error's own lines (without the kernel layer the
    // run's MGS2005 warning, and its help, come first).
    let after = out
        .stderr
        .split("`let` is not a Buzz keyword")
        .nth(1)
        .unwrap_or_default();
    let help = after
        .lines()
        .find(|l| l.contains("= help:"))
        .unwrap_or_else(|| panic!("no help\n{}", out.dump()));
    assert!(help.contains("`final`") && help.contains("`var`"), "{help}");
}

// ---------------------------------------------------------------- completion

/// `magus completions SHELL`.
fn completion_script(h: &Harness, shell: &str) -> String {
    let out = capture(h.command().args(["completions", shell]));
    assert_eq!(out.status, Some(0), "{}", out.dump());
    out.stdout
}

#[test]
fn completion_scripts_ask_for_spells_and_offer_codes() {
    let h = Harness::new();
    let bash = completion_script(&h, "bash");
    assert!(bash.contains("list --names"), "bash");
    assert!(bash.contains("complete -F _magus_with_spells"), "bash");
    assert!(bash.contains("MGS3001"), "bash");
    let zsh = completion_script(&h, "zsh");
    assert!(
        zsh.contains("_call_program spells magus list --names"),
        "zsh"
    );
    let spell_args: Vec<&str> = zsh
        .lines()
        .filter(|l| {
            ["'::spell -- ", "':spell -- ", "'*::spells -- "]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .collect();
    // The spell of `run`, `sandbox check` and `sandbox suggest`, and the
    // spells of `test` and `check`.
    assert_eq!(spell_args.len(), 5, "{spell_args:?}");
    assert!(
        spell_args.iter().all(|l| l.ends_with(":_magus_spells' \\")),
        "{spell_args:?}"
    );
    assert!(zsh.contains("MGS3001\\:\"no workspace"), "zsh");
    let fish = completion_script(&h, "fish");
    assert!(fish.contains("magus $ws list --names"), "fish");
    assert!(
        fish.contains("complete -c magus -n __fish_magus_wants_spell -a \"(__fish_magus_spells)\""),
        "fish"
    );
    assert!(
        fish.contains("__fish_magus_using_subcommand explain\" -f -a \"MGS1001\t'unknown name'"),
        "fish"
    );
    // The spells come from the workspace at hand: `magus list --names`.
    h.write_spell("build", "fun main(args: [str]) > void {}\n");
    h.write_spell("release", "fun main(args: [str]) > void {}\n");
    let names = magus(&h, &["list", "--names"]);
    assert_eq!(names.stdout, "build\nrelease\n", "{}", names.dump());
}

/// What bash completes for the words of `line` (the last one being
/// completed), with the script sourced and `magus` the binary under test.
fn bash_complete(h: &Harness, script: &Path, words: &[&str]) -> Vec<String> {
    let magus = env!("CARGO_BIN_EXE_magus");
    let mut all = vec![magus];
    all.extend_from_slice(words);
    let quoted: Vec<String> = all.iter().map(|w| format!("'{w}'")).collect();
    let program = format!(
        "source '{}'\nCOMP_WORDS=({})\nCOMP_CWORD={}\nCOMP_LINE=\"${{COMP_WORDS[*]}}\"\nCOMP_POINT=${{#COMP_LINE}}\n_magus_with_spells \"${{COMP_WORDS[0]}}\" \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        script.display(),
        quoted.join(" "),
        all.len() - 1
    );
    let cmd = h.command();
    let mut bash = std::process::Command::new("bash");
    bash.env_clear()
        .envs(cmd.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .current_dir(&h.ws)
        .args(["--norc", "-c", &program]);
    let out = capture(&mut bash);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    out.stdout
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_the_spells_of_the_workspace_and_the_codes() {
    let h = Harness::new();
    h.write_spell("build", "fun main(args: [str]) > void {}\n");
    h.write_spell("bench", "fun main(args: [str]) > void {}\n");
    h.write_spell("release", "fun main(args: [str]) > void {}\n");
    let script = h.root.join("magus.bash");
    std::fs::write(&script, completion_script(&h, "bash")).unwrap();
    let spells = ["bench", "build", "release"];
    assert_eq!(bash_complete(&h, &script, &["run", ""]), spells);
    assert_eq!(
        bash_complete(&h, &script, &["run", "b"]),
        ["bench", "build"]
    );
    assert_eq!(bash_complete(&h, &script, &["test", "build", ""]), spells);
    assert_eq!(
        bash_complete(&h, &script, &["-q", "check", "r"]),
        ["release"]
    );
    for sub in ["check", "suggest"] {
        assert_eq!(bash_complete(&h, &script, &["sandbox", sub, ""]), spells);
        let past = bash_complete(&h, &script, &["sandbox", sub, "build", ""]);
        assert!(
            past.iter().all(|w| !spells.contains(&w.as_str())),
            "{past:?}"
        );
    }
    assert!(!bash_complete(&h, &script, &["sandbox", "lock", ""]).contains(&"build".to_string()));
    // Past the spell of `run`, the words are the spell's own.
    let after = bash_complete(&h, &script, &["run", "build", ""]);
    assert!(
        after.iter().all(|w| !spells.contains(&w.as_str())),
        "{after:?}"
    );
    // Another workspace named on the line.
    let other = h.root.join("other");
    std::fs::create_dir_all(other.join("spells")).unwrap();
    std::fs::write(other.join("magus.yaml"), "sandbox:\n  enabled: true\n").unwrap();
    std::fs::write(
        other.join("spells/deploy.buzz"),
        "fun main(args: [str]) > void {}\n",
    )
    .unwrap();
    let named = other.to_str().unwrap();
    assert_eq!(
        bash_complete(&h, &script, &["--workspace", named, "run", ""]),
        ["deploy"]
    );
    assert_eq!(
        bash_complete(&h, &script, &["explain", "MGS300"]),
        ["MGS3001", "MGS3002", "MGS3003", "MGS3004", "MGS3005", "MGS3006", "MGS3007", "MGS3008"]
    );
    assert!(bash_complete(&h, &script, &["ex"]).contains(&"explain".to_string()));
}
