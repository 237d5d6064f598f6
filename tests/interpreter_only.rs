//! The interpreter layer as macOS and Windows get it, tested here through
//! the real `magus` binary built with `--no-default-features` (and, where
//! the claim holds in both builds, with the kernel layer too): a spell's
//! `fs.read` of a planted `~/.ssh/id_rsa` and of a workspace symlink to it
//! is refused (MGS2001) with no byte of the key in any output, as root and
//! as uid 65534, each beside a sandbox-off control that does read it;
//! without the kernel layer every run says MGS2005 exactly once, naming the
//! platform and what is not confined, and `magus sandbox check` says
//! "interpreter layer only".

mod support;

use std::os::unix::fs::symlink;
use std::process::Command;
use support::{capture, Harness, RunOutput};

/// Exit status of a run stopped by a sandbox denial (`EXIT_DENIED`).
const EXIT_DENIED: i32 = 124;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum User {
    Root,
    Nobody,
}

/// Root, and uid 65534 when the test runs as root (through `setpriv`).
fn users() -> Vec<User> {
    match nix::unistd::geteuid().is_root() {
        true => vec![User::Root, User::Nobody],
        false => vec![User::Root],
    }
}

/// A harness with `read` (prints what `fs.read(args[0])` gives) and
/// `spawn` (starts `args` as a child, then `fs.read`s nothing).
fn harness(user: User) -> Harness {
    let h = Harness::new();
    h.write_spell(
        "read",
        "import \"std\";\nimport \"fs\";\nfun main(args: [str]) > int {\n    std.print(\"GOT {fs.read(args[0])}\");\n    return 0;\n}\n",
    );
    h.write_spell(
        "spawn",
        "import \"std\";\nimport \"sh\";\nfun main(args: [str]) > int {\n    std.print(\"STATUS {sh.run(args)}\");\n    std.print(\"STATUS {sh.run(args)}\");\n    return 0;\n}\n",
    );
    if user == User::Nobody {
        let status = Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(&h.root)
            .status()
            .expect("chown");
        assert!(status.success());
    }
    h
}

/// `magus --workspace WS [extra...] ARGS...` as `user`, sandbox on or off.
fn magus(h: &Harness, user: User, sandbox_on: bool, args: &[&str]) -> RunOutput {
    let mut cmd = match user {
        User::Root => h.command(),
        User::Nobody => h.command_as_nobody(),
    };
    if !sandbox_on {
        cmd.env("MAGUS_SANDBOX_ENABLED", "0");
    }
    cmd.arg("--workspace").arg(&h.ws).args(args);
    capture(&mut cmd)
}

/// The run was refused by the gate: MGS2001 naming `spelled`, status 3,
/// and no byte of any planted secret anywhere.
fn assert_refused(h: &Harness, out: &RunOutput, spelled: &str) {
    assert_eq!(out.status, Some(EXIT_DENIED), "{}", out.dump());
    assert!(out.stderr.contains("error[MGS2001]"), "{}", out.dump());
    assert!(out.stderr.contains(spelled), "{}", out.dump());
    assert!(!out.stdout.contains("GOT "), "{}", out.dump());
    h.assert_no_leak(out);
    h.assert_secrets_intact();
}

/// The control: with the sandbox off the same spell reads the key, so the
/// refusal above is the sandbox's doing.
fn assert_control_reads(h: &Harness, out: &RunOutput) {
    assert_eq!(out.status, Some(0), "{}", out.dump());
    let key = h.secret("~/.ssh/id_rsa");
    assert!(out.stdout.contains(&format!("GOT {key}")), "{}", out.dump());
}

#[test]
fn fs_read_of_a_planted_key_is_refused() {
    for user in users() {
        let h = harness(user);
        let key = h.home_path(".ssh/id_rsa");
        let key = key.to_str().expect("utf-8 path");
        let out = magus(&h, user, true, &["run", "read", key]);
        assert_refused(&h, &out, key);
        let out = magus(&h, user, false, &["run", "read", key]);
        assert_control_reads(&h, &out);
    }
}

#[test]
fn a_workspace_symlink_to_the_key_is_refused() {
    for user in users() {
        let h = harness(user);
        let key = h.home_path(".ssh/id_rsa");
        symlink(&key, h.ws_path("innocent.txt")).expect("symlink");
        symlink(h.home_path(".ssh"), h.ws_path("keys")).expect("symlink");
        symlink("../home/.ssh/id_rsa", h.ws_path("relative.txt")).expect("symlink");
        for spelled in ["innocent.txt", "keys/id_rsa", "relative.txt"] {
            let out = magus(&h, user, true, &["run", "read", spelled]);
            assert_refused(&h, &out, spelled);
            // The message names where the link leads, too.
            assert!(out.stderr.contains(".ssh/id_rsa"), "{}", out.dump());
            let out = magus(&h, user, false, &["run", "read", spelled]);
            assert_control_reads(&h, &out);
        }
    }
}

/// A symlink swapped in under a path the gate already allowed does not
/// carry a read out: the open itself refuses to leave the workspace.
#[test]
fn a_link_inside_a_granted_directory_cannot_lead_out() {
    let h = harness(User::Root);
    std::fs::create_dir(h.ws_path("data")).expect("mkdir");
    std::fs::write(h.ws_path("data/ok.txt"), "fine\n").expect("write");
    symlink("../../home/.ssh", h.ws_path("data/up")).expect("symlink");
    let out = magus(&h, User::Root, true, &["run", "read", "data/ok.txt"]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert!(out.stdout.contains("GOT fine"), "{}", out.dump());
    let out = magus(&h, User::Root, true, &["run", "read", "data/up/id_rsa"]);
    assert_refused(&h, &out, "data/up/id_rsa");
    let out = magus(&h, User::Root, false, &["run", "read", "data/up/id_rsa"]);
    assert_control_reads(&h, &out);
}

/// Without the kernel layer each run says MGS2005 exactly once (not per
/// child), naming the platform and what is not confined; a sandbox-off
/// run says nothing.
#[cfg(not(kernel_layer))]
#[test]
fn every_run_says_mgs2005_once() {
    for user in users() {
        let h = harness(user);
        for _ in 0..2 {
            let out = magus(&h, user, true, &["run", "spawn", "/bin/true"]);
            assert_eq!(out.status, Some(0), "{}", out.dump());
            assert_eq!(out.lines_starting("STATUS 0").len(), 2, "{}", out.dump());
            assert_eq!(out.stderr_count("warning[MGS2005]"), 1, "{}", out.dump());
            assert!(
                out.stderr.contains(
                    "no kernel confinement on Linux, in a magus built without the `kernel` feature"
                ),
                "{}",
                out.dump()
            );
            assert!(
                out.stderr
                    .contains("children can read any file you can; only fs.* is confined"),
                "{}",
                out.dump()
            );
            h.assert_no_leak(&out);
        }
        let out = magus(&h, user, false, &["run", "spawn", "/bin/true"]);
        assert_eq!(out.status, Some(0), "{}", out.dump());
        assert_eq!(out.stderr_count("MGS2005"), 0, "{}", out.dump());
    }
}

/// The program check and the environment allowlist hold without the
/// kernel layer: a program outside the grants is MGS2007, and a child sees
/// none of magus's secret variables.
#[test]
fn children_get_the_program_check_and_the_filtered_environment() {
    let h = harness(User::Root);
    let tool = h.home_path("tool.sh");
    std::fs::write(&tool, "#!/bin/sh\necho ran\n").expect("write");
    std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let tool = tool.to_str().expect("utf-8 path");
    let out = magus(&h, User::Root, true, &["run", "spawn", tool]);
    assert_eq!(out.status, Some(EXIT_DENIED), "{}", out.dump());
    assert!(out.stderr.contains("error[MGS2007]"), "{}", out.dump());
    assert!(!out.stdout.contains("ran"), "{}", out.dump());
    let out = magus(&h, User::Root, false, &["run", "spawn", tool]);
    assert!(out.stdout.contains("ran"), "{}", out.dump());

    let out = magus(&h, User::Root, true, &["run", "spawn", "/usr/bin/env"]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert!(out.stdout.contains("HOME="), "{}", out.dump());
    h.assert_no_leak(&out);
    let out = magus(&h, User::Root, false, &["run", "spawn", "/usr/bin/env"]);
    assert!(
        out.stdout.contains(h.secret("$GITHUB_TOKEN")),
        "{}",
        out.dump()
    );
}

#[cfg(not(kernel_layer))]
#[test]
fn sandbox_check_says_interpreter_layer_only() {
    for user in users() {
        let h = harness(user);
        let out = magus(&h, user, true, &["sandbox", "check"]);
        assert_eq!(out.status, Some(0), "{}", out.dump());
        assert!(
            out.stdout
                .contains("layer     interpreter layer only: no kernel confinement on Linux"),
            "{}",
            out.dump()
        );
        assert!(
            out.stdout.contains("children  not confined"),
            "{}",
            out.dump()
        );
        assert!(!out.stdout.contains("landlock"), "{}", out.dump());
        assert_eq!(out.stderr_count("warning[MGS2005]"), 1, "{}", out.dump());

        let out = magus(
            &h,
            user,
            true,
            &["--message-format", "json", "sandbox", "check"],
        );
        let report: serde_json::Value = serde_json::from_str(out.stdout.trim())
            .unwrap_or_else(|e| panic!("{e}: {}", out.dump()));
        let layer = report["kernel"]["layer"].as_str().unwrap_or_default();
        assert!(layer.starts_with("interpreter layer only"), "{report}");

        // What is declared but not enforced is said so, not shown as held.
        h.write_config(
            "sandbox:\n  enabled: true\n  network: deny\n  limits:\n    wall_time: 10s\n",
        );
        let out = magus(&h, user, true, &["sandbox", "check"]);
        assert_eq!(out.status, Some(0), "{}", out.dump());
        for line in [
            "network          deny (declared, not enforced: interpreter layer only)",
            "limits           declared, not enforced (interpreter layer only)",
        ] {
            assert!(out.stdout.contains(line), "{line}: {}", out.dump());
        }
        let out = magus(&h, user, true, &["run", "spawn", "/bin/true"]);
        assert_eq!(out.stderr_count("warning[MGS2005]"), 1, "{}", out.dump());
        assert!(
            out.stderr
                .contains("`network:` and `sandbox.limits` are not enforced"),
            "{}",
            out.dump()
        );
    }
}

#[test]
fn explain_mgs2005_names_the_platforms_and_what_is_confined() {
    let h = harness(User::Root);
    let out = capture(h.command().args(["explain", "MGS2005"]));
    assert_eq!(out.status, Some(0), "{}", out.dump());
    for needle in [
        "macOS",
        "Windows",
        "--no-default-features",
        "children can read any file you can; only `fs.*` is confined",
    ] {
        assert!(out.stdout.contains(needle), "{needle}: {}", out.dump());
    }
}

/// Without the kernel layer nothing forces a child's traffic through a
/// proxy: a spell with `secrets:` does not run (the error says why), and
/// the value is printed nowhere. The control (the token passed through)
/// shows the same spell would print it.
#[cfg(not(kernel_layer))]
#[test]
fn a_spell_with_secrets_does_not_run_without_the_kernel_layer() {
    const VALUE: &str = "planted-token-VALUE-0123";
    for user in users() {
        let mut h = harness(user);
        h.write_spell(
            "probe",
            "import \"std\";\nimport \"env\";\nfun main(args: [str]) > int {\n    std.print(\"TOKEN {env.get(\"GITHUB_TOKEN\") ?? \"null\"}\");\n    return 0;\n}\n",
        );
        h.set_env("GITHUB_TOKEN", VALUE);
        h.write_config("sandbox:\n  enabled: true\n  network: {hosts: [api.github.com]}\nspells:\n  probe:\n    secrets:\n      - name: GITHUB_TOKEN\n        from: {env: GITHUB_TOKEN}\n        hosts: [api.github.com]\n");
        let out = magus(&h, user, true, &["run", "probe"]);
        assert_ne!(out.status, Some(0), "{}", out.dump());
        assert!(out.stderr.contains("declares `secrets:`"), "{}", out.dump());
        assert!(out.stderr.contains("kernel layer"), "{}", out.dump());
        assert!(
            !out.stdout.contains(VALUE) && !out.stderr.contains(VALUE),
            "{}",
            out.dump()
        );
        h.write_config("sandbox:\n  enabled: true\n  env:\n    passthrough: [GITHUB_TOKEN]\n");
        let control = magus(&h, user, true, &["run", "probe"]);
        assert!(
            control.stdout.contains(VALUE),
            "control: {}",
            control.dump()
        );
    }
}
