//! The repository's own first spell, `spells/hello.buzz`, run by the real
//! `magus` binary.

use crate::support;
use std::path::Path;

/// A scratch workspace holding the repository's own `magus.yaml` and
/// `spells/hello.buzz`.
fn workspace() -> tempfile::TempDir {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = tempfile::tempdir_in(support::scratch_base()).unwrap();
    std::fs::create_dir_all(root.path().join("spells")).unwrap();
    for file in ["magus.yaml", "spells/hello.buzz"] {
        std::fs::copy(repo.join(file), root.path().join(file)).unwrap();
    }
    root
}

/// Runs `magus ARGS` in `root` with `home` as HOME; it must exit 0.
/// Returns its stdout and stderr.
fn run_ok(root: &Path, home: &Path, args: &[&str]) -> (String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_magus"))
        .args(args)
        .current_dir(root)
        .env("HOME", home)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    (stdout, stderr)
}

/// The repository's own first spell and `magus.yaml`, copied into a
/// scratch workspace and run by the real binary with a fake HOME holding a
/// planted secret: it runs, sees its arguments, and its read of the secret
/// is refused without a byte of it reaching output.
#[test]
fn hello_spell_runs_and_its_secret_read_is_refused() {
    let root = workspace();
    let root = root.path();
    let home = tempfile::tempdir_in(support::scratch_base()).unwrap();
    std::fs::create_dir_all(home.path().join(".aws")).unwrap();
    let secret = "aws_secret_access_key = PLANTED_HELLO_SECRET";
    std::fs::write(home.path().join(".aws/credentials"), secret).unwrap();
    let (stdout, stderr) = run_ok(root, home.path(), &["-q", "run", "hello", "wizard"]);
    assert!(stdout.contains("argument 1: wizard"), "{stdout}");
    assert!(stdout.contains("refused, MGS2001"), "{stdout}");
    assert!(!stdout.contains("PLANTED") && !stderr.contains("PLANTED"));
}

/// A new user's first `magus run hello`, in a home where cargo has just
/// built magus (`~/.cargo/bin`, `~/.cargo/registry` and `~/.rustup`, no
/// `~/.cargo/git`): the repository's own policy names nothing missing, so
/// the run prints no diagnostic but, in a build without the kernel
/// layer, its MGS2005.
#[test]
fn first_run_in_a_fresh_cargo_home_prints_no_warning() {
    let root = workspace();
    let root = root.path();
    let home = tempfile::tempdir_in(support::scratch_base()).unwrap();
    for dir in [".cargo/bin", ".cargo/registry", ".rustup"] {
        std::fs::create_dir_all(home.path().join(dir)).unwrap();
    }
    let (stdout, stderr) = run_ok(root, home.path(), &["run", "hello"]);
    assert!(stdout.starts_with("✨ Hello from magus!"), "{stdout}");
    // A build without the kernel layer says so at every run (MGS2005);
    // nothing else may be said.
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning") || l.starts_with("error"))
        .filter(|l| !l.starts_with("warning[MGS2005]"))
        .collect();
    assert!(said.is_empty(), "{stderr}");
}

/// The repository's own policy grants cargo's registry read-only: a spell
/// run there cannot rewrite a crate cargo has extracted (whose `build.rs`
/// the user's next `cargo build` would compile and run, unconfined),
/// neither through `fs.*` nor, with the kernel layer, through a child.
/// The control, the same spell with the sandbox off, rewrites it both ways.
#[test]
fn the_repository_policy_keeps_extracted_crates_from_being_rewritten() {
    let plant = r#"import "buzz:std";
import "fs";
import "sh";

fun main(args: [str]) > void {
    final file = args[0];
    try {
        fs\write(file, "fn main() \{ /* PLANTED_BY_FS */ \}\n");
    } catch (e: SandboxError) {
        std\print("fs refused: {e.code}");
    }
    sh\run(["sh", "-c", "echo '// PLANTED_BY_CHILD' >> \"$0\"", file]);
}
"#;
    for sandbox in ["1", "0"] {
        let root = workspace();
        let root = root.path();
        std::fs::write(root.join("spells/plant.buzz"), plant).unwrap();
        let home = tempfile::tempdir_in(support::scratch_base()).unwrap();
        let krate = home
            .path()
            .join(".cargo/registry/src/index.crates.io-1949cf8c6b5b557f/foo-1.0.0");
        std::fs::create_dir_all(&krate).unwrap();
        for dir in [".cargo/bin", ".rustup"] {
            std::fs::create_dir_all(home.path().join(dir)).unwrap();
        }
        let build = krate.join("build.rs");
        std::fs::write(&build, "fn main() {}\n").unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_magus"))
            .args(["run", "plant", build.to_str().unwrap()])
            .current_dir(root)
            .env("HOME", home.path())
            .env("MAGUS_SANDBOX_ENABLED", sandbox)
            .output()
            .unwrap();
        let after = std::fs::read_to_string(&build).unwrap();
        let said = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if sandbox == "0" {
            assert!(after.contains("PLANTED_BY_FS"), "control: {after}\n{said}");
            assert!(
                after.contains("PLANTED_BY_CHILD"),
                "control: {after}\n{said}"
            );
            continue;
        }
        assert!(said.contains("fs refused"), "{said}");
        assert!(!after.contains("PLANTED_BY_FS"), "{after}\n{said}");
        if cfg!(feature = "kernel") {
            assert!(!after.contains("PLANTED_BY_CHILD"), "{after}\n{said}");
        }
    }
}
