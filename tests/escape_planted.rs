//! Attacks that plant something during a sandboxed run for magus itself to
//! read later, outside any sandbox: `magus list`, `magus check`, `magus
//! run` and `magus test` read the workspace's spells before (or without)
//! confining anything. Each attack has its control (the sandbox off), which
//! must leak, so a pass means something.

mod support;

use support::{capture, Harness, RunOutput};

/// Runs one shell line as a child.
const SHELL_SPELL: &str = "import \"std\";\nimport \"sh\";\nfun main(args: [str]) > int {\n    std.print(\"STATUS {sh.shell(args[0])}\");\n    return 0;\n}\n";

/// Secrets in the form the real files have: `~/.npmrc`'s token line
/// starts with `//` (a Buzz comment, which `magus list` prints as the
/// spell's description), `~/.aws/credentials` has an INI header and then
/// the key on a line the parser stops at.
fn realistic_secrets(h: &Harness) {
    let npm = h.secret("~/.npmrc");
    std::fs::write(
        h.home_path(".npmrc"),
        format!("//registry.npmjs.org/:_authToken={npm}\n"),
    )
    .unwrap();
    let aws = h.secret("~/.aws/credentials");
    std::fs::write(
        h.home_path(".aws/credentials"),
        format!("[default]\naws_secret_access_key = {aws}\n"),
    )
    .unwrap();
}

/// `magus --workspace WS ARGS...`, the sandbox on or off.
fn magus(h: &Harness, sandbox_on: bool, args: &[&str]) -> RunOutput {
    let mut cmd = h.command();
    if !sandbox_on {
        cmd.env("MAGUS_SANDBOX_ENABLED", "0");
    }
    cmd.arg("--workspace").arg(&h.ws).args(args);
    capture(&mut cmd)
}

/// A child of a sandboxed run links two spells to secrets outside the
/// workspace (a symlink's target is not checked when it is made); every
/// later command that reads spells must not print a byte of them.
#[test]
fn spell_symlinks_planted_by_a_child_print_no_secret() {
    let h = Harness::new();
    realistic_secrets(&h);
    h.write_spell("t", SHELL_SPELL);
    let plant = format!(
        "ln -s {} spells/npm.buzz && ln -s {} spells/aws.buzz",
        h.home_path(".npmrc").display(),
        h.home_path(".aws/credentials").display()
    );
    let mut cmd = h.command();
    cmd.current_dir(&h.ws).arg("--workspace").arg(&h.ws);
    let planted = capture(cmd.args(["run", "t", &plant]));
    assert!(planted.stdout.contains("STATUS 0"), "{}", planted.dump());
    assert!(h.ws_path("spells/npm.buzz").is_symlink());
    // The control: with the sandbox off, magus reads the linked files.
    let listed = magus(&h, false, &["list"]);
    assert!(
        listed.stdout.contains(h.secret("~/.npmrc")),
        "{}",
        listed.dump()
    );
    // (The parse error names the linked file's second line's first word.)
    let checked = magus(&h, false, &["check"]);
    assert!(
        checked.stderr.contains("aws_secret_access_key"),
        "{}",
        checked.dump()
    );
    let by_path = h.ws_path("spells/aws.buzz").display().to_string();
    let commands: [&[&str]; 7] = [
        &["list"],
        &["check"],
        &["check", "aws"],
        &["run"],
        &["run", "aws"],
        &["run", &by_path],
        &["test"],
    ];
    for args in commands {
        let out = magus(&h, true, args);
        h.assert_no_leak(&out);
        if args.len() == 2 {
            assert!(out.stderr.contains("MGS2001"), "{args:?}: {}", out.dump());
        }
    }
}

/// A child of a sandboxed run makes `magus.lock` (absent when the run
/// started, so not bound read-only) a link to `~/.npmrc`, whose first line
/// is the token; the next run reads the lock before anything is confined,
/// and a parse error quoting that line would print it. A FIFO there must
/// not hang the next run either.
#[test]
fn a_lock_planted_as_a_link_or_fifo_prints_no_secret_and_hangs_nothing() {
    let h = Harness::new();
    realistic_secrets(&h);
    h.write_spell("t", SHELL_SPELL);
    let plant = format!("ln -s {} magus.lock", h.home_path(".npmrc").display());
    let mut cmd = h.command();
    cmd.current_dir(&h.ws).arg("--workspace").arg(&h.ws);
    let planted = capture(cmd.args(["run", "t", &plant]));
    assert!(planted.stdout.contains("STATUS 0"), "{}", planted.dump());
    assert!(h.ws_path("magus.lock").is_symlink());
    // The control: what the planted link leads to is the secret (before
    // the fix, every run quoted it: `1 | //registry...:_authToken=...`).
    let through = std::fs::read_to_string(h.ws_path("magus.lock")).unwrap();
    assert!(through.contains(h.secret("~/.npmrc")), "{through}");
    for args in [&["run", "t", "true"][..], &["sandbox", "check"]] {
        let out = magus(&h, true, args);
        h.assert_no_leak(&out);
        assert!(out.stderr.contains("not a regular file"), "{}", out.dump());
        assert_ne!(out.status, Some(0), "{}", out.dump());
    }
    std::fs::remove_file(h.ws_path("magus.lock")).unwrap();
    let planted = capture(h.command().current_dir(&h.ws).args([
        "--workspace".as_ref(),
        h.ws.as_os_str(),
        "run".as_ref(),
        "t".as_ref(),
        "mkfifo magus.lock".as_ref(),
    ]));
    assert!(planted.stdout.contains("STATUS 0"), "{}", planted.dump());
    let out = magus(&h, true, &["run", "t", "true"]);
    assert!(out.stderr.contains("not a regular file"), "{}", out.dump());
}

/// Without a `magus.yaml` (the sandbox turned on by
/// `MAGUS_SANDBOX_ENABLED=1`), a child can create one: as a link to
/// `~/.npmrc`, the next run's "expected a mapping" error quoted the token.
#[test]
fn a_config_planted_as_a_link_prints_no_secret() {
    let mut h = Harness::new();
    realistic_secrets(&h);
    h.write_spell("t", SHELL_SPELL);
    std::fs::remove_file(h.ws_path("magus.yaml")).unwrap();
    h.set_env("MAGUS_SANDBOX_ENABLED", "1");
    let plant = format!("ln -s {} magus.yaml", h.home_path(".npmrc").display());
    let mut cmd = h.command();
    cmd.current_dir(&h.ws).arg("--workspace").arg(&h.ws);
    let planted = capture(cmd.args(["run", "t", &plant]));
    assert!(planted.stdout.contains("STATUS 0"), "{}", planted.dump());
    // The control: the planted link leads to the secret.
    let through = std::fs::read_to_string(h.ws_path("magus.yaml")).unwrap();
    assert!(through.contains(h.secret("~/.npmrc")), "{through}");
    for args in [&["run", "t", "true"][..], &["sandbox", "check"], &["list"]] {
        let out = magus(&h, true, args);
        h.assert_no_leak(&out);
        assert!(out.stderr.contains("not a regular file"), "{}", out.dump());
        assert_ne!(out.status, Some(0), "{}", out.dump());
    }
}
