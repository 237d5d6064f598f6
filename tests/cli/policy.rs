//! `magus sandbox check` end to end, in a temporary workspace and home.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Fixture {
    fn new(config: &str) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for sub in [
            "home/.cargo",
            "home/.terraform.d/plugins",
            "ws/tools",
            "ws/src/deep",
        ] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(root.join("ws/magus.yaml"), config).unwrap();
        Fixture { _dir: dir, root }
    }

    fn ws(&self) -> PathBuf {
        self.root.join("ws")
    }

    fn magus(&self, cwd: &Path) -> Command {
        let mut cmd = Command::cargo_bin("magus").unwrap();
        cmd.env_clear()
            .env("HOME", self.root.join("home"))
            .env("PATH", "/usr/bin:/bin")
            .env("GITHUB_TOKEN", "ghp_secret_value")
            .current_dir(cwd);
        cmd
    }
}

const GOOD: &str = "tasks: {build: cargo build}\nsandbox:\n  enabled: true\n  allow:\n    - path: ~/.cargo\n      mode: rw\n    - path: ~/.terraform.d/plugins\n      mode: ro\n    - path: ~/.missing\n      mode: ro\n  env:\n    passthrough: [CARGO_HOME, \"MISE_*\"]\n";

fn line_of(stdout: &str, path: &Path) -> String {
    let needle = format!("  {} ", path.display());
    stdout
        .lines()
        .find(|l| l.contains(&needle))
        .unwrap_or_else(|| panic!("no line for {}:\n{stdout}", path.display()))
        .to_string()
}

#[test]
fn check_lists_the_resolved_policy() {
    let fx = Fixture::new(GOOD);
    let out = fx
        .magus(&fx.ws().join("src/deep"))
        .args(["sandbox", "check"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("workspace    {}\n", fx.ws().display())));
    assert!(
        stdout.contains("sandbox      on (magus.yaml line 3)"),
        "{stdout}"
    );
    assert!(stdout.contains("fingerprint  sha256:"), "{stdout}");
    let ws = line_of(&stdout, &fx.ws());
    assert!(
        ws.starts_with("  rw  ") && ws.ends_with("workspace root"),
        "{ws}"
    );
    let tmp = line_of(&stdout, Path::new("/tmp"));
    assert!(
        tmp.starts_with("  rw  ") && tmp.contains("built-in"),
        "{tmp}"
    );
    let usr = line_of(&stdout, Path::new("/usr"));
    assert!(
        usr.starts_with("  ro  ") && usr.contains("built-in (system code)"),
        "{usr}"
    );
    let cargo = line_of(&stdout, &fx.root.join("home/.cargo"));
    assert!(
        cargo.starts_with("  rw  ") && cargo.ends_with("magus.yaml line 5 (~/.cargo)"),
        "{cargo}"
    );
    let tf = line_of(&stdout, &fx.root.join("home/.terraform.d/plugins"));
    assert!(
        tf.starts_with("  ro  ") && tf.ends_with("magus.yaml line 7 (~/.terraform.d/plugins)"),
        "{tf}"
    );
    assert!(!stdout.contains(&format!("  {}  ", fx.root.join("home").display())));
    assert!(!stdout.contains("/etc/shadow"));
    assert!(
        stdout.contains("env passthrough  CARGO_HOME, MISE_*"),
        "{stdout}"
    );
    assert!(stdout.contains("network          allow"), "{stdout}");
    assert!(
        stderr.contains("warning[MGS2004]: sandbox.allow entry `~/.missing` was skipped"),
        "{stderr}"
    );
    assert!(stderr.contains("ws/magus.yaml:9:13"), "{stderr}");
    assert!(
        stderr.contains("note[MGS2003]") && stderr.contains("GITHUB_TOKEN"),
        "{stderr}"
    );
    assert!(!stderr.contains("ghp_secret_value") && !stdout.contains("ghp_secret_value"));
}

#[test]
fn malformed_config_exits_2_with_file_line_column() {
    let fx = Fixture::new(
        "sandbox:\n  enabled: true\n  allow:\n    - path: ~/.cargo\n      mode: write\n",
    );
    let out = fx
        .magus(&fx.ws())
        .args(["sandbox", "check"])
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(
        stderr.contains("error[MGS3006]: invalid magus.yaml: invalid mode `write`"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{}:5:13", fx.ws().join("magus.yaml").display())),
        "{stderr}"
    );
    assert!(stderr.contains("= help: `mode` is `ro`"), "{stderr}");
    assert!(out.stdout.is_empty());
}

#[test]
fn json_mode_prints_one_object_per_line() {
    let fx = Fixture::new(GOOD);
    for args in [
        ["--message-format", "json", "sandbox", "check"],
        ["sandbox", "check", "--message-format", "json"],
    ] {
        let out = fx.magus(&fx.ws()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        let stderr = String::from_utf8(out.stderr).unwrap();
        let objects: Vec<serde_json::Value> = stderr
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        assert!(objects.len() >= 2, "{stderr}");
        let skipped = objects.iter().find(|o| o["code"] == "MGS2004").unwrap();
        assert_eq!(skipped["config"]["line"], 9);
        assert_eq!(skipped["config"]["column"], 13);
        assert_eq!(skipped["severity"], "warning");
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert_eq!(stdout.lines().count(), 1, "{stdout}");
        let policy: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        let grants = policy["grants"].as_array().unwrap();
        assert_eq!(grants[0]["source"]["kind"], "workspace");
        assert!(grants
            .iter()
            .any(|g| g["source"]["line"] == 5 && g["mode"] == "rw"));
    }
}

#[test]
fn malformed_config_in_json_mode_is_one_error_object() {
    let fx = Fixture::new("sandbox:\n  enabled: true\n  enabled: false\n");
    let out = fx
        .magus(&fx.ws())
        .args(["sandbox", "check", "--message-format=json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let error: serde_json::Value = serde_json::from_str(stderr.trim()).unwrap();
    assert_eq!(error["severity"], "error");
    assert_eq!(error["config"]["line"], 3);
    assert!(error["message"]
        .as_str()
        .unwrap()
        .contains("duplicate key `enabled`"));
}

#[test]
fn environment_overrides_and_explicit_workspace() {
    let fx = Fixture::new(GOOD);
    let elsewhere = fx.root.join("home");
    let out = fx
        .magus(&elsewhere)
        .env("MAGUS_SANDBOX_ENABLED", "0")
        .args(["--workspace", fx.ws().to_str().unwrap(), "sandbox", "check"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stdout.contains("sandbox      off (MAGUS_SANDBOX_ENABLED)"),
        "{stdout}"
    );
    let bad = fx
        .magus(&fx.ws())
        .env("MAGUS_SANDBOX_ENABLED", "yes")
        .args(["sandbox", "check"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(125));
    assert!(String::from_utf8(bad.stderr)
        .unwrap()
        .contains("MAGUS_SANDBOX_ENABLED is `yes`"));
    let lost = fx
        .magus(&elsewhere)
        .args(["sandbox", "check"])
        .output()
        .unwrap();
    assert_eq!(lost.status.code(), Some(125));
    assert!(String::from_utf8(lost.stderr)
        .unwrap()
        .contains("no magus.yaml in"));
}
