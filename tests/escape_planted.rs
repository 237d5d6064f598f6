//! Attacks that plant something during a sandboxed run for magus itself to
//! read later, outside any sandbox: `magus list`, `magus check`, `magus
//! run` and `magus test` read the workspace's spells before (or without)
//! confining anything. Each attack has its control (the sandbox off), which
//! must leak, so a pass means something.

mod support;

use std::process::Command;

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

/// With the kernel layer, the run said it set `rel` aside (MGS2014) and it
/// is gone (docs/leftovers.md); the interpreter-only build has no sweep,
/// and the plant is still there. Whether it was set aside (and must be
/// planted again, to test the later defences against one the sweep
/// missed).
fn set_aside(h: &Harness, run: &RunOutput, rel: &str) -> bool {
    let path = h.ws_path(rel);
    if cfg!(not(kernel_layer)) {
        assert!(path.symlink_metadata().is_ok(), "{rel}: {}", run.dump());
        return false;
    }
    assert!(
        run.stderr.contains("warning[MGS2014]")
            && run.stderr.contains(&format!("`{}`", path.display())),
        "{rel}: {}",
        run.dump()
    );
    assert!(path.symlink_metadata().is_err(), "{rel} is still there");
    true
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
    // `spells/` is protected: with the kernel layer, a sandboxed child
    // cannot plant there (without it, children are not confined: MGS2005).
    if cfg!(feature = "kernel") {
        let mut cmd = h.command();
        cmd.current_dir(&h.ws).arg("--workspace").arg(&h.ws);
        let refused = capture(cmd.args(["run", "t", &plant]));
        assert!(!refused.stdout.contains("STATUS 0"), "{}", refused.dump());
        assert!(!h.ws_path("spells/npm.buzz").exists());
    }
    // Planted some other way (an unsandboxed run, a pulled branch): every
    // later command must still print no byte of what the links lead to.
    let mut cmd = h.command();
    cmd.current_dir(&h.ws).env("MAGUS_SANDBOX_ENABLED", "0");
    let planted = capture(cmd.arg("--workspace").arg(&h.ws).args(["run", "t", &plant]));
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
    // The run's end sets the new lock aside (docs/leftovers.md); the next
    // run must hold even against one it missed, so it is planted again.
    if set_aside(&h, &planted, "magus.lock") {
        std::os::unix::fs::symlink(h.home_path(".npmrc"), h.ws_path("magus.lock")).unwrap();
    }
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
    if set_aside(&h, &planted, "magus.lock") {
        let fifo = Command::new("mkfifo").arg(h.ws_path("magus.lock")).status();
        assert!(fifo.is_ok_and(|s| s.success()));
    }
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
    if set_aside(&h, &planted, "magus.yaml") {
        std::os::unix::fs::symlink(h.home_path(".npmrc"), h.ws_path("magus.yaml")).unwrap();
    }
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

/// A child names a spell, and writes its opening comment, with an escape
/// sequence (OSC 52 sets the terminal's clipboard); `magus list` prints
/// both, and must print them escaped, not for the terminal to act on.
#[test]
fn spell_names_and_comments_reach_the_terminal_escaped() {
    let h = Harness::new();
    h.write_spell("t", SHELL_SPELL);
    let plant = "printf '// \\033]52;c;cm0gLXJmIH4K\\007 x\\n' > \"spells/$(printf 'a\\033]0;T\\007')\".buzz";
    // `spells/` is protected from sandboxed children; the name is planted
    // by an unsandboxed run, as by any other tool.
    let mut cmd = h.command();
    cmd.current_dir(&h.ws).env("MAGUS_SANDBOX_ENABLED", "0");
    let planted = capture(cmd.arg("--workspace").arg(&h.ws).args(["run", "t", plant]));
    assert!(planted.stdout.contains("STATUS 0"), "{}", planted.dump());
    // The control: the planted name holds the escape byte.
    let names: Vec<String> = std::fs::read_dir(h.ws_path("spells"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().any(|n| n.contains('\u{1b}')), "{names:?}");
    let listed = magus(&h, true, &["list"]);
    assert!(!listed.stdout.contains('\u{1b}'), "{}", listed.dump());
    assert!(listed.stdout.contains("\\u{1b}]52;c;"), "{}", listed.dump());
}

/// A spell that prints the key, which a child of a sandboxed run plants
/// with `plant` (the spell is at `build.buzz` when it starts).
const STEALING_SPELL: &str = "import \"std\";\nimport \"fs\";\nimport \"env\";\nfun main(args: [str]) > int {\n    std.print(\"STOLEN {fs.read(\"{env.get(\"HOME\") ?? \"\"}/.ssh/id_rsa\")}\");\n    return 0;\n}\n";

/// A sandboxed run's child runs `plant`, which leaves `build` and its
/// configs under `dir`; then the control (`--workspace dir`, the user's
/// choice: it reads the key) and `magus run build` discovered from `dir`,
/// which must refuse the planted config. Returns the harness.
fn planted_config_is_refused_at_discovery(plant: &str, dir: &str, configs: &[&str]) -> Harness {
    let h = Harness::new();
    h.write_spell("t", SHELL_SPELL);
    std::fs::write(h.ws_path("build.buzz"), STEALING_SPELL).unwrap();
    let planted = magus(&h, true, &["run", "t", plant]);
    assert!(planted.stdout.contains("PLANTED"), "{}", planted.dump());
    // The run's end sets each planted config aside; discovery must hold
    // even against one it missed, so they are planted again.
    for config in configs {
        if set_aside(&h, &planted, config) {
            std::fs::write(h.ws_path(config), "sandbox:\n  enabled: false\n").unwrap();
        }
    }
    let key = h.secret("~/.ssh/id_rsa").to_string();
    let dir = h.ws_path(dir);

    let mut named = h.command();
    named.arg("--workspace").arg(&dir).args(["run", "build"]);
    let control = capture(&mut named);
    assert!(control.stdout.contains(&key), "{}", control.dump());

    let mut discovered = h.command();
    discovered.current_dir(&dir).args(["run", "build"]);
    let out = capture(&mut discovered);
    h.assert_no_leak(&out);
    assert_ne!(out.status, Some(0), "{}", out.dump());
    assert!(
        out.stderr
            .contains("turns the sandbox off inside the sandboxed workspace"),
        "{}",
        out.dump()
    );
    assert!(out.stderr.contains("--workspace"), "{}", out.dump());
    h
}

/// A child of a sandboxed run writes `sub/magus.yaml` turning the sandbox
/// off, and `sub/spells/build.buzz` reading `~/.ssh/id_rsa`, anywhere in
/// the workspace (only its root's `magus.yaml` is read-only). The user's
/// next `magus run build` started in `sub` discovered the nearest config
/// and ran the spell unconfined. Now a nested config that leaves the
/// sandbox off inside a sandboxed workspace is refused unless named with
/// `--workspace` (the control: named so, it runs and reads the key); one
/// with the sandbox on is obeyed, so the spell is confined (MGS2001).
#[test]
fn a_nested_magus_yaml_planted_by_a_child_is_not_obeyed_by_discovery() {
    let plant = "mkdir -p sub/spells && printf 'sandbox:\\n  enabled: false\\n' > sub/magus.yaml && mv build.buzz sub/spells/build.buzz && echo PLANTED";
    let h = planted_config_is_refused_at_discovery(plant, "sub", &["sub/magus.yaml"]);
    let sub = h.ws_path("sub");
    std::fs::write(sub.join("magus.yaml"), "sandbox:\n  enabled: true\n").unwrap();
    let mut discovered = h.command();
    discovered.current_dir(&sub).args(["run", "build"]);
    let out = capture(&mut discovered);
    h.assert_no_leak(&out);
    assert!(out.stderr.contains("MGS2001"), "{}", out.dump());
}

/// The same plant two levels down: a child writes `sub/magus.yaml` and
/// `sub/deeper/magus.yaml`, both turning the sandbox off, and a spell in
/// `sub/deeper`. Discovery from `sub/deeper` used to compare only with
/// the nearest enclosing config (the planted `sub/magus.yaml`, off), and
/// ran the spell unconfined (found by a red-team run); every enclosing
/// config counts now.
#[test]
fn a_chain_of_planted_magus_yaml_files_is_not_obeyed_by_discovery() {
    let plant = "mkdir -p sub/deeper/spells && printf 'sandbox:\\n  enabled: false\\n' > sub/magus.yaml && cp sub/magus.yaml sub/deeper/magus.yaml && mv build.buzz sub/deeper/spells/build.buzz && echo PLANTED";
    planted_config_is_refused_at_discovery(
        plant,
        "sub/deeper",
        &["sub/magus.yaml", "sub/deeper/magus.yaml"],
    );
}
