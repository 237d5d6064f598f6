//! What a run leaves behind must not run later, outside the sandbox
//! (`docs/MGS2014.md`): a repository planted in the workspace, the
//! workspace root turned into one, a tool's configuration created where
//! none was, protected files rewritten where nothing held them read-only.
//! Each attack runs through the real `magus`, as root and as uid 65534,
//! with the jail and with namespaces refused; each has a control (the
//! sandbox off) whose planted command does run at the user's next `git
//! status`, `git commit` or `cargo build`.

mod support;

use std::path::Path;
use std::process::Command;

use support::runas::{hand_over, wrapper, Kernel, User, SHELL_SPELL};
use support::{capture, Harness, RunOutput};

/// The (user, kernel) pairs to attack from: the jail as root and as
/// uid 65534, and no jail at all (uid 65534 without user namespaces,
/// root without any namespace). Not root: the current user, as is.
fn modes() -> Vec<(User, Kernel)> {
    if !nix::unistd::geteuid().is_root() {
        return vec![(User::Root, Kernel::AsIs)];
    }
    vec![
        (User::Root, Kernel::AsIs),
        (User::Nobody, Kernel::AsIs),
        (User::Nobody, Kernel::NoUserNamespaces),
        (User::Root, Kernel::NoNamespaces),
    ]
}

/// A workspace set up by `setup` (as root), then handed to `user`.
struct Case {
    h: Harness,
    user: User,
    kernel: Kernel,
}

impl Case {
    fn new(mode: (User, Kernel), config: &str, setup: impl Fn(&Harness)) -> Case {
        let h = Harness::with_config(config);
        h.write_spell("t", SHELL_SPELL);
        setup(&h);
        hand_over(&h.root, mode.0);
        Case {
            h,
            user: mode.0,
            kernel: mode.1,
        }
    }

    /// `sh.shell(script)` in a run, the sandbox on or off.
    fn shell(&self, sandbox_on: bool, script: &str, extra: &[&str]) -> RunOutput {
        let mut cmd = self.command(sandbox_on, &[]);
        cmd.arg("--workspace").arg(&self.h.ws).args(extra);
        capture(cmd.args(["run", "t", script]))
    }

    /// `EXE run SPELL ARGS...`: a magus other than the one cargo built
    /// (a copy in the workspace), started through a shell that drops the
    /// built one's path, which the harness appends.
    fn run_exe(&self, sandbox_on: bool, exe: &Path, spell: &str, args: &[&str]) -> RunOutput {
        let exec = format!("exec '{}' \"$@\"", exe.display());
        let mut cmd = self.command(sandbox_on, &["sh", "-c", &exec]);
        cmd.arg("--workspace").arg(&self.h.ws);
        capture(cmd.args(["run", spell]).args(args))
    }

    /// magus under the case's user and kernel, after `tail` (a program
    /// the harness's magus is appended to).
    fn command(&self, sandbox_on: bool, tail: &[&str]) -> Command {
        let mut wrapper = wrapper(self.user, self.kernel);
        wrapper.extend(tail);
        let mut cmd = self.h.wrapped_command(&wrapper);
        if !sandbox_on {
            cmd.env("MAGUS_SANDBOX_ENABLED", "0");
        }
        cmd
    }

    fn context(&self, out: &RunOutput) -> String {
        format!("{:?} {:?}\n{}", self.user, self.kernel, out.dump())
    }
}

/// `git ARGS` in `dir`, outside magus, as the user would type it: what
/// it printed on stderr (where the planted commands print).
fn user_git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "safe.directory=*",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
        ])
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn git_init(dir: &Path) {
    let ok = Command::new("git")
        .args(["init", "-q", "."])
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(ok.success());
}

/// A `core.fsmonitor` printing `PWNED-<tag>`: git runs it at `git status`.
fn fsmonitor(tag: &str) -> String {
    format!("printf '[core]\\n\\tfsmonitor = \"echo PWNED-{tag} >&2; false\"\\n'")
}

/// A bare repository in `dir` whose work tree is itself, with a
/// `core.fsmonitor`, and an index (git asks the monitor only then).
fn plant_bare(dir: &str, tag: &str) -> String {
    format!(
        "cd {dir} && git init -q --bare . && git config -f config core.bare false && \
         git config -f config core.worktree . && {} >> config && git add -A . && echo PLANTED",
        fsmonitor(tag)
    )
}

fn assert_set_aside(case: &Case, out: &RunOutput, paths: &[&str]) {
    for rel in paths {
        let path = case.h.ws_path(rel);
        assert!(
            out.stderr.contains(&format!("`{}`", path.display()))
                && out.stderr.contains("warning[MGS2014]"),
            "no notice for {rel}: {}",
            case.context(out)
        );
        assert!(path.symlink_metadata().is_err(), "{rel} is still there");
    }
    assert!(
        case.h.ws_path(".magus/quarantine").is_dir(),
        "{}",
        case.context(out)
    );
}

/// A workspace that is a git repository with a `src/` directory: a child
/// makes `src` a bare repository whose config names a `core.fsmonitor`.
/// The user's next `git status` in `src/`, outside magus, ran it.
#[test]
fn a_bare_repository_planted_in_a_subdirectory_runs_nothing_later() {
    let setup = |h: &Harness| {
        git_init(&h.ws);
        std::fs::create_dir_all(h.ws_path("src")).unwrap();
        std::fs::write(h.ws_path("src/lib.rs"), "").unwrap();
    };
    let script = plant_bare("src", "src");
    for mode in modes() {
        let control = Case::new(mode, support::SANDBOX_ON, setup);
        let out = control.shell(false, &script, &[]);
        assert!(out.stdout.contains("PLANTED"), "{}", control.context(&out));
        let seen = user_git(&control.h.ws_path("src"), &["status"]);
        assert!(seen.contains("PWNED-src"), "control: {seen}");

        let case = Case::new(mode, support::SANDBOX_ON, setup);
        let out = case.shell(true, &script, &[]);
        assert!(out.stdout.contains("PLANTED"), "{}", case.context(&out));
        let seen = user_git(&case.h.ws_path("src"), &["status"]);
        assert!(!seen.contains("PWNED"), "{seen}\n{}", case.context(&out));
        assert_set_aside(&case, &out, &["src/HEAD", "src/config"]);
    }
}

/// The workspace is a repository: a child writes garbage into
/// `.git/HEAD` (git then finds `.git` invalid and falls through to the
/// directory itself) and makes the root a bare repository with a
/// `core.fsmonitor`. After the run `.git/HEAD` is what it was, the
/// planted `HEAD` and `config` are set aside, and `git status` runs
/// nothing.
#[test]
fn the_workspace_root_made_a_bare_repository_runs_nothing_later() {
    let setup = |h: &Harness| git_init(&h.ws);
    let script = format!("echo garbage > .git/HEAD && {}", plant_bare(".", "root"));
    for mode in modes() {
        let control = Case::new(mode, support::SANDBOX_ON, setup);
        let out = control.shell(false, &script, &[]);
        assert!(out.stdout.contains("PLANTED"), "{}", control.context(&out));
        let seen = user_git(&control.h.ws, &["status"]);
        assert!(seen.contains("PWNED-root"), "control: {seen}");

        let case = Case::new(mode, support::SANDBOX_ON, setup);
        let head = std::fs::read(case.h.ws_path(".git/HEAD")).unwrap();
        let out = case.shell(true, &script, &[]);
        assert!(out.stdout.contains("PLANTED"), "{}", case.context(&out));
        let seen = user_git(&case.h.ws, &["status"]);
        assert!(!seen.contains("PWNED"), "{seen}\n{}", case.context(&out));
        assert_eq!(std::fs::read(case.h.ws_path(".git/HEAD")).unwrap(), head);
        assert_set_aside(&case, &out, &["HEAD", "config"]);
    }
}

/// A workspace cloned without its submodule (`git clone` without
/// `--recurse-submodules`): `.gitmodules` names `sub`, `.git/modules`
/// holds nothing. A child makes `.git/modules/sub` a repository whose
/// config names a `core.sshCommand` for an `ssh://` remote. The user's
/// next `git submodule update --init`, outside magus, used it instead of
/// cloning and ran the command when it fetched. After the run it is set
/// aside, and the update clones the submodule afresh.
#[test]
fn a_submodule_repository_planted_in_git_modules_runs_nothing_later() {
    let setup = |h: &Harness| {
        let lib = h.root.join("lib");
        std::fs::create_dir_all(&lib).unwrap();
        git_init(&lib);
        std::fs::write(lib.join("f"), "lib\n").unwrap();
        setup_git(&lib, &["add", "f"]);
        setup_git(&lib, &["commit", "-qm", "lib"]);
        git_init(&h.ws);
        let lib = lib.to_str().unwrap();
        setup_git(&h.ws, &["submodule", "add", "-q", lib, "sub"]);
        setup_git(&h.ws, &["commit", "-qm", "super"]);
        setup_git(&h.ws, &["submodule", "--quiet", "deinit", "-f", "sub"]);
        std::fs::remove_dir_all(h.ws_path(".git/modules")).unwrap();
    };
    let script = "m=.git/modules/sub && git init -q --bare $m && \
        git config -f $m/config remote.origin.url ssh://attacker.invalid/x && \
        git config -f $m/config core.sshCommand 'echo PWNED-submodule >&2; false' && echo PLANTED";
    let update = [
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "update",
        "--init",
    ];
    for mode in modes() {
        let control = Case::new(mode, support::SANDBOX_ON, setup);
        let out = control.shell(false, script, &[]);
        assert!(out.stdout.contains("PLANTED"), "{}", control.context(&out));
        let seen = user_git(&control.h.ws, &update);
        assert!(seen.contains("PWNED-submodule"), "control: {seen}");

        let case = Case::new(mode, support::SANDBOX_ON, setup);
        let out = case.shell(true, script, &[]);
        assert!(out.stdout.contains("PLANTED"), "{}", case.context(&out));
        assert_set_aside(&case, &out, &[".git/modules/sub"]);
        let seen = user_git(&case.h.ws, &update);
        assert!(!seen.contains("PWNED"), "{seen}\n{}", case.context(&out));
        // It clones (here refused only as the source's owner is another
        // user's, which `safe.directory` cannot pass on to upload-pack).
        assert!(
            seen.contains("Cloning into"),
            "{seen}\n{}",
            case.context(&out)
        );
    }
}

/// `git ARGS` in `dir` while a test sets up, with a committer.
fn setup_git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(["-c", "protocol.file.allow=always"])
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(ok.success(), "git {args:?}");
}

/// With `~/.cargo` granted `rw` (a Rust build needs it) and its
/// `config.toml` protected, a child creates the legacy `~/.cargo/config`
/// (cargo reads it first) naming a `rustc-wrapper`: the user's next
/// `cargo build`, anywhere, ran it. After the run it is set aside.
#[test]
fn a_cargo_config_created_under_a_granted_cargo_home_runs_nothing_later() {
    let config = "sandbox:\n  enabled: true\n  allow:\n    - path: ~/.cargo\n      mode: rw\n";
    let setup = |h: &Harness| {
        std::fs::create_dir_all(h.home_path(".cargo")).unwrap();
        std::fs::write(h.home_path(".cargo/config.toml"), "[net]\noffline = true\n").unwrap();
        let wrapper = h.ws_path("wrapper.sh");
        std::fs::write(&wrapper, "#!/bin/sh\necho PWNED-cargo >&2\nexec \"$@\"\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        let krate = h.root.join("crate");
        std::fs::create_dir_all(krate.join("src")).unwrap();
        std::fs::write(
            krate.join("Cargo.toml"),
            "[package]\nname = \"k\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        )
        .unwrap();
        std::fs::write(krate.join("src/lib.rs"), "").unwrap();
    };
    let script = "printf '[build]\\nrustc-wrapper = \"%s/wrapper.sh\"\\n' \"$PWD\" > $HOME/.cargo/config && echo PLANTED";
    let cargo_build = |h: &Harness| {
        let out = Command::new("cargo")
            .args(["build", "--offline", "--quiet"])
            .current_dir(h.root.join("crate"))
            .env("CARGO_HOME", h.home_path(".cargo"))
            .env("CARGO_TARGET_DIR", h.root.join("crate/target"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    if Command::new("cargo").arg("--version").output().is_err() {
        eprintln!("skipped: no cargo on PATH");
        return;
    }
    for mode in modes() {
        let control = Case::new(mode, config, setup);
        let out = control.shell(false, script, &[]);
        assert!(out.stdout.contains("PLANTED"), "{}", control.context(&out));
        let seen = cargo_build(&control.h);
        assert!(seen.contains("PWNED-cargo"), "control: {seen}");

        let case = Case::new(mode, config, setup);
        let out = case.shell(true, script, &[]);
        assert!(out.stdout.contains("PLANTED"), "{}", case.context(&out));
        let legacy = case.h.home_path(".cargo/config");
        assert!(legacy.symlink_metadata().is_err(), "{}", case.context(&out));
        assert!(
            out.stderr.contains(&format!("`{}`", legacy.display())),
            "{}",
            case.context(&out)
        );
        let seen = cargo_build(&case.h);
        assert!(!seen.contains("PWNED"), "{seen}\n{}", case.context(&out));
    }
}

/// Where nothing holds them read-only (no jail: namespaces refused), a
/// child rewrites `magus.yaml` to turn the sandbox off, plants a
/// pre-commit hook and a `core.hooksPath` in `.git/config`. After the run
/// magus.yaml and the config are what they were, the hook is set aside,
/// and the user's next `git commit` runs nothing.
#[test]
fn protected_files_a_child_rewrote_without_a_jail_are_put_back() {
    let setup = |h: &Harness| {
        git_init(&h.ws);
        std::fs::write(h.ws_path("README"), "x").unwrap();
    };
    let script = "echo 'sandbox: {enabled: false}' > magus.yaml; \
        printf '#!/bin/sh\\necho PWNED-hook >&2\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit; \
        echo PLANTED";
    let no_jail: Vec<_> = modes()
        .into_iter()
        .filter(|(_, k)| *k != Kernel::AsIs)
        .collect();
    for mode in no_jail {
        let control = Case::new(mode, support::SANDBOX_ON, setup);
        let out = control.shell(false, script, &[]);
        assert!(out.stdout.contains("PLANTED"), "{}", control.context(&out));
        let seen = user_git(&control.h.ws, &["commit", "-q", "--allow-empty", "-m", "x"]);
        assert!(seen.contains("PWNED-hook"), "control: {seen}");

        let case = Case::new(mode, support::SANDBOX_ON, setup);
        let yaml = std::fs::read(case.h.ws_path("magus.yaml")).unwrap();
        let out = case.shell(true, script, &[]);
        assert!(out.stdout.contains("PLANTED"), "{}", case.context(&out));
        assert_eq!(std::fs::read(case.h.ws_path("magus.yaml")).unwrap(), yaml);
        let seen = user_git(&case.h.ws, &["commit", "-q", "--allow-empty", "-m", "x"]);
        assert!(!seen.contains("PWNED"), "{seen}\n{}", case.context(&out));
        assert_set_aside(&case, &out, &[".git/hooks/pre-commit"]);
    }
}

/// A run that writes an executable says so under `-v` and in JSON, and
/// not otherwise; the file stays (a build makes them).
#[test]
fn executables_the_run_wrote_are_listed_under_verbose_and_in_json() {
    let script = "mkdir -p bin && printf '#!/bin/sh\\n' > bin/tool && chmod +x bin/tool && echo data > plain.txt";
    let case = Case::new((User::Root, Kernel::AsIs), support::SANDBOX_ON, |_| {});
    let quiet = case.shell(true, script, &[]);
    assert!(!quiet.stderr.contains("bin/tool"), "{}", quiet.dump());
    let verbose = case.shell(true, script, &["-v"]);
    let tool = case.h.ws_path("bin/tool");
    assert!(
        verbose
            .stderr
            .contains(&format!("executable: {}", tool.display())),
        "{}",
        verbose.dump()
    );
    assert!(!verbose.stderr.contains("plain.txt"), "{}", verbose.dump());
    let json = case.shell(true, script, &["--message-format", "json"]);
    let listed = json
        .stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .any(|v| {
            v.to_string()
                .contains(&format!("executable: {}", tool.display()))
        });
    assert!(listed, "{}", json.dump());
    assert!(tool.is_file());
}

/// `magus` built in the workspace (`target/release/magus`) and run from
/// there: a spell may not replace it with `fs.*` (MGS2002: it is the
/// running magus), a child's `rm` and `cp` over it fail in the jail (a
/// read-only bind), and where nothing holds it (no jail) the replacement
/// is set aside after the run, so the next run of it is not the
/// attacker's program. The control (the sandbox off) replaces it.
#[test]
fn the_running_magus_in_the_workspace_is_not_replaced() {
    let setup = |h: &Harness| {
        let exe = h.ws_path("target/release/magus");
        std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
        std::fs::copy(env!("CARGO_BIN_EXE_magus"), &exe).unwrap();
        std::fs::write(h.ws_path("evil"), "#!/bin/sh\necho PWNED-exe\n").unwrap();
        h.write_spell("fs", FS_REPLACE_SPELL);
    };
    let child = "rm -f target/release/magus && cp evil target/release/magus && chmod +x target/release/magus && echo REPLACED";
    for mode in modes() {
        let control = Case::new(mode, support::SANDBOX_ON, setup);
        let exe = control.h.ws_path("target/release/magus");
        let out = control.run_exe(false, &exe, "fs", &[exe.to_str().unwrap()]);
        assert!(
            out.stdout.contains("FS-REPLACED"),
            "{}",
            control.context(&out)
        );
        assert_eq!(std::fs::read(&exe).unwrap(), b"#!/bin/sh\necho PWNED-exe\n");

        let case = Case::new(mode, support::SANDBOX_ON, setup);
        let exe = case.h.ws_path("target/release/magus");
        let original = std::fs::read(&exe).unwrap();
        let out = case.run_exe(true, &exe, "fs", &[exe.to_str().unwrap()]);
        assert!(
            out.stdout.contains("FS-MGS2002") && !out.stdout.contains("FS-REPLACED"),
            "{}",
            case.context(&out)
        );
        let out = case.run_exe(true, &exe, "t", &[child]);
        let replaced = out.stdout.contains("REPLACED");
        assert_eq!(
            replaced,
            case.kernel != Kernel::AsIs,
            "{}",
            case.context(&out)
        );
        match std::fs::read(&exe) {
            Ok(now) => assert_eq!(now, original, "{}", case.context(&out)),
            // Without a jail: the replacement was set aside, and said so.
            Err(_) => assert!(
                out.stderr.contains(&format!("`{}`", exe.display())),
                "{}",
                case.context(&out)
            ),
        }
    }
}

/// Replaces the file named by `args[0]` through `fs.*` alone: a new file
/// moved over it.
const FS_REPLACE_SPELL: &str = "import \"std\";\nimport \"fs\";\nfun main(args: [str]) > int {\n    try {\n        fs.write(\"{args[0]}.new\", \"#!/bin/sh\\necho PWNED-exe\\n\");\n        fs.move(\"{args[0]}.new\", args[0]);\n        std.print(\"FS-REPLACED\");\n    } catch (e: SandboxError) {\n        std.print(\"FS-{e.code}\");\n    }\n    return 0;\n}\n";

/// `python3 ARGS` in `dir`, outside magus, as the user would type it:
/// what it printed on stderr (where both modules of the test print).
fn user_python(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("python3")
        .args(args)
        .current_dir(dir)
        .env_remove("PYTHONDONTWRITEBYTECODE")
        .env_remove("PYTHONPYCACHEPREFIX")
        .env_remove("SOURCE_DATE_EPOCH")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `text` with a comment line making it `len` bytes long.
fn padded(text: &str, len: usize) -> String {
    format!("{text}{}\n", "#".repeat(len - text.len() - 1))
}

/// A workspace holding a benign `mod.py`, and `.payload`: the bytecode of
/// another module printing `PWNED-pyc`, compiled from a source of the same
/// size and modification time, so that its header matches `mod.py`'s as
/// Python checks it (`py_compile`, timestamp mode). With `imported`, the
/// user has already imported `mod`: its true bytecode is in `__pycache__`.
fn python_workspace(h: &Harness, imported: bool) {
    let benign = "import sys\nsys.stderr.write('BENIGN-mod\\n')\n";
    let evil = "import sys\nsys.stderr.write('PWNED-pyc\\n')\n";
    let len = benign.len().max(evil.len()) + 8;
    std::fs::write(h.ws_path("mod.py"), padded(benign, len)).unwrap();
    let source = h.root.join("evil/mod.py");
    std::fs::create_dir_all(source.parent().unwrap()).unwrap();
    std::fs::write(&source, padded(evil, len)).unwrap();
    let mtime = std::fs::metadata(h.ws_path("mod.py"))
        .unwrap()
        .modified()
        .unwrap();
    let file = std::fs::File::options().write(true).open(&source).unwrap();
    file.set_modified(mtime).unwrap();
    drop(file);
    let compile = "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], \
                   doraise=True, invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)";
    let payload = h.ws_path(".payload");
    let (source, payload) = (source.to_str().unwrap(), payload.to_str().unwrap());
    let seen = user_python(&h.ws, &["-c", compile, source, payload]);
    assert!(seen.is_empty(), "py_compile: {seen}");
    if imported {
        let seen = user_python(&h.ws, &["-c", "import mod"]);
        assert!(seen.contains("BENIGN-mod"), "{seen}");
    }
}

/// A benign `mod.py` in the workspace; a child writes the bytecode of
/// another module, with a header matching `mod.py`, as
/// `__pycache__/mod.cpython-3XY.pyc`: where there was none, and over the
/// user's own in place (its directory unchanged). The user's next `python3
/// -c 'import mod'`, outside magus, ran the child's code instead of
/// `mod.py`. After the run the planted bytecode is set aside, and the
/// import runs `mod.py`.
#[test]
fn python_bytecode_planted_in_pycache_runs_nothing_later() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("skipped: no python3 on PATH");
        return;
    }
    let cached = "import importlib.util, sys; \
                  sys.stderr.write(importlib.util.cache_from_source('mod.py'))";
    let pyc = user_python(Path::new("/"), &["-c", cached]);
    assert!(
        pyc.starts_with("__pycache__/mod.") && pyc.ends_with(".pyc"),
        "{pyc}"
    );
    let plants = [
        (
            false,
            format!("mkdir -p __pycache__ && cp .payload {pyc} && echo PLANTED"),
        ),
        (true, format!("cat .payload > {pyc} && echo PLANTED")),
    ];
    for ((imported, script), mode) in plants
        .iter()
        .flat_map(|plant| modes().into_iter().map(move |mode| (plant, mode)))
    {
        let setup = |h: &Harness| python_workspace(h, *imported);
        let control = Case::new(mode, support::SANDBOX_ON, setup);
        let out = control.shell(false, script, &[]);
        assert!(out.stdout.contains("PLANTED"), "{}", control.context(&out));
        let seen = user_python(&control.h.ws, &["-c", "import mod"]);
        assert!(seen.contains("PWNED-pyc"), "control ({imported}): {seen}");

        let case = Case::new(mode, support::SANDBOX_ON, setup);
        let out = case.shell(true, script, &[]);
        assert!(out.stdout.contains("PLANTED"), "{}", case.context(&out));
        let removed = case.h.ws_path(&pyc);
        assert!(
            out.stderr
                .contains("warning[MGS2014]: the run wrote Python bytecode")
                && out
                    .stderr
                    .contains(&format!("removed: {}", removed.display())),
            "no notice for {pyc}: {}",
            case.context(&out)
        );
        assert!(removed.symlink_metadata().is_err(), "{pyc} is still there");
        let seen = user_python(&case.h.ws, &["-c", "import mod"]);
        assert!(
            seen.contains("BENIGN-mod") && !seen.contains("PWNED"),
            "{imported}: {seen}\n{}",
            case.context(&out)
        );
    }
}

/// What a case does to the workspace before the run.
type Setup<'a> = dyn Fn(&Harness) + 'a;

/// The state of an interactive rebase, `.git/rebase-merge`, whose to-do
/// list `git rebase --continue` follows: an `exec` line there is a
/// command git runs, outside the sandbox. A child plants such a state in
/// a repository with none (`git status` then says a rebase is in
/// progress), or adds an `exec` line to the to-do list of the user's own
/// rebase, stopped for a conflict when they ran magus. After the run the
/// state is set aside, and `--continue` runs nothing.
#[test]
fn a_rebase_to_do_list_planted_or_changed_in_git_runs_nothing_later() {
    const STATE: &str = "g=.git/rebase-merge && mkdir -p $g && h=$(git rev-parse HEAD) && \
        git symbolic-ref HEAD > $g/head-name && echo $h > $g/onto && echo $h > $g/orig-head && \
        touch $g/interactive $g/git-rebase-todo && echo 1 > $g/msgnum && echo 1 > $g/end";
    const EXEC: &str = "echo 'exec echo PWNED-rebase >&2' >> .git/rebase-merge/git-rebase-todo";
    let planted = format!("{STATE} && {EXEC} && echo PLANTED");
    let appended = format!("{EXEC} && echo PLANTED");
    let committed = |h: &Harness| {
        git_init(&h.ws);
        setup_git(&h.ws, &["commit", "-q", "--allow-empty", "-m", "one"]);
    };
    let in_rebase = |h: &Harness| {
        committed(h);
        let state = Command::new("sh")
            .args(["-c", STATE])
            .current_dir(&h.ws)
            .status()
            .unwrap();
        assert!(state.success());
    };
    let cases: [(&str, &Setup<'_>); 2] = [(&planted, &committed), (&appended, &in_rebase)];
    for mode in modes() {
        for (script, setup) in cases {
            let control = Case::new(mode, support::SANDBOX_ON, setup);
            let out = control.shell(false, script, &[]);
            assert!(out.stdout.contains("PLANTED"), "{}", control.context(&out));
            let seen = user_git(&control.h.ws, &["rebase", "--continue"]);
            assert!(seen.contains("PWNED-rebase"), "control: {seen}");

            let case = Case::new(mode, support::SANDBOX_ON, setup);
            let out = case.shell(true, script, &[]);
            assert!(out.stdout.contains("PLANTED"), "{}", case.context(&out));
            assert_set_aside(&case, &out, &[".git/rebase-merge"]);
            let seen = user_git(&case.h.ws, &["rebase", "--continue"]);
            assert!(!seen.contains("PWNED"), "{seen}\n{}", case.context(&out));
        }
    }
}

/// The notice of what was set aside ends with the `mv` that puts it back,
/// for the user to paste into a shell. Its paths are the run's to name: a
/// directory called `a'$(echo PWNED-hint >&2)'` holding a planted `.envrc`
/// broke out of the quotes, and the shell ran the child's command. The
/// command is quoted for the shell, runs nothing, and moves the file back.
#[test]
fn the_command_that_puts_a_file_back_runs_nothing_the_run_named() {
    let script = "d=\"a'\\$(echo PWNED-hint >&2)'\" && mkdir \"$d\" && \
        echo 'echo hi' > \"$d/.envrc\" && echo PLANTED";
    for mode in modes() {
        let case = Case::new(mode, support::SANDBOX_ON, |_| {});
        let out = case.shell(true, script, &[]);
        assert!(out.stdout.contains("PLANTED"), "{}", case.context(&out));
        let planted = case.h.ws_path("a'$(echo PWNED-hint >&2)'/.envrc");
        assert!(!planted.exists(), "{}", case.context(&out));
        let hint = out
            .stderr
            .lines()
            .find_map(|l| l.split_once("move it back: ").map(|(_, mv)| mv.to_string()))
            .unwrap_or_else(|| panic!("no mv: {}", case.context(&out)));
        let pasted = Command::new("sh").args(["-c", &hint]).output().unwrap();
        let said = String::from_utf8_lossy(&pasted.stderr);
        assert!(!said.contains("PWNED"), "{hint}: {said}");
        assert!(planted.exists(), "{hint}: {said}");
    }
}

/// The names in the report after a run are the run's to choose. A
/// directory named `x<CR><ESC>[2K<ESC>]2;` (erase the line, then open a
/// window title that swallows every byte up to the next `ESC` or `BEL`)
/// and a newline followed by a forged `= note:` line, holding a planted
/// `.envrc` and an executable: printed as they were, the terminal erased
/// the MGS2014 warning and hid the rest, so the user saw nothing set
/// aside. Every control character is now shown as an escape, the `mv`
/// that puts the file back still moves it back when pasted, and `-v`
/// lists the executable under a name that shows.
#[test]
fn names_the_run_chose_reach_the_report_as_escapes() {
    let script = "d=$(printf 'x\\r\\033[2K\\033]2;\\n  = note: nothing was planted') && \
        mkdir \"$d\" && echo 'echo PWNED' > \"$d/.envrc\" && printf '#!/bin/sh\\n' > \"$d/tool\" && \
        chmod +x \"$d/tool\" && echo PLANTED";
    let chosen = "x\r\x1b[2K\x1b]2;\n  = note: nothing was planted";
    for mode in modes() {
        let control = Case::new(mode, support::SANDBOX_ON, |_| {});
        let out = control.shell(false, script, &[]);
        assert!(out.stdout.contains("PLANTED"), "{}", control.context(&out));
        assert!(control.h.ws.join(chosen).join(".envrc").exists());

        let case = Case::new(mode, support::SANDBOX_ON, |_| {});
        let out = case.shell(true, script, &["-v"]);
        assert!(out.stdout.contains("PLANTED"), "{}", case.context(&out));
        let planted = case.h.ws.join(chosen).join(".envrc");
        assert!(!planted.exists(), "{}", case.context(&out));
        let bad = out.stderr.chars().find(|c| c.is_control() && *c != '\n');
        assert_eq!(bad, None, "{}", case.context(&out));
        assert!(
            !out.stderr
                .lines()
                .any(|l| l.trim_start().starts_with("= note: nothing was planted")),
            "a forged line: {}",
            case.context(&out)
        );
        let warned = out.stderr.lines().any(|l| {
            l.starts_with("warning[MGS2014]")
                && l.contains("x\\u{d}\\u{1b}[2K\\u{1b}]2;\\u{a}  = note")
        });
        assert!(warned, "{}", case.context(&out));
        assert!(
            out.stderr.contains("executable: ")
                && out
                    .stderr
                    .contains("\\u{1b}]2;\\u{a}  = note: nothing was planted/tool"),
            "{}",
            case.context(&out)
        );
        let hint = out
            .stderr
            .lines()
            .find_map(|l| l.split_once("move it back: ").map(|(_, mv)| mv.to_string()))
            .unwrap_or_else(|| panic!("no mv: {}", case.context(&out)));
        let pasted = Command::new("sh").args(["-c", &hint]).output().unwrap();
        assert!(
            planted.exists(),
            "{hint}: {}",
            String::from_utf8_lossy(&pasted.stderr)
        );
    }
}

/// What a terminal shows of `command`, run in a tmux pane of its own
/// (its own server, on a socket in `dir`) until it touches `done`.
fn on_a_terminal(dir: &Path, command: &str) -> String {
    let socket = dir.join("tmux.sock");
    let done = dir.join("done");
    let tmux = || {
        let mut cmd = Command::new("tmux");
        cmd.arg("-S").arg(&socket).arg("-f").arg("/dev/null");
        cmd
    };
    let script = format!("{command}; touch '{}'; sleep 600", done.display());
    let started = tmux()
        .args([
            "new-session",
            "-d",
            "-x",
            "220",
            "-y",
            "60",
            "sh",
            "-c",
            &script,
        ])
        .status()
        .unwrap();
    assert!(started.success());
    // A bound on the wait, not a measurement: the run takes about a second.
    for _ in 0..1200 {
        if done.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let pane = tmux().args(["capture-pane", "-p", "-J"]).output().unwrap();
    let _ = tmux().arg("kill-server").status();
    assert!(done.exists(), "the command did not finish");
    String::from_utf8_lossy(&pane.stdout).into_owned()
}

/// A shell command that runs `cmd` as it is (program, arguments,
/// environment, directory), for a terminal to start.
fn as_shell_command(cmd: &Command) -> String {
    let word = |s: &std::ffi::OsStr| format!("'{}'", s.to_string_lossy().replace('\'', "'\\''"));
    let mut line = String::from("cd ");
    line.push_str(&word(cmd.get_current_dir().unwrap().as_os_str()));
    line.push_str(" && env -i");
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            let mut pair = k.to_os_string();
            pair.push("=");
            pair.push(v);
            line.push(' ');
            line.push_str(&word(&pair));
        }
    }
    line.push(' ');
    line.push_str(&word(cmd.get_program()));
    for arg in cmd.get_args() {
        line.push(' ');
        line.push_str(&word(arg));
    }
    line
}

/// A child that leaves a control string open on the terminal (`ESC P`,
/// a DCS, which the terminal swallows to its end) hid every line magus
/// printed after it: the user saw no MGS2014 warning for the `.envrc` it
/// planted. magus now ends whatever sequence is open (CAN) and resets
/// the character attributes before it speaks on a terminal. The control:
/// the same terminal shows nothing printed after an open DCS.
#[test]
fn an_escape_sequence_a_child_leaves_open_does_not_hide_the_report() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("skipped: no tmux on PATH");
        return;
    }
    let control_dir = tempfile::tempdir().unwrap();
    let seen = on_a_terminal(
        control_dir.path(),
        "printf 'BEFORE\\n\\033P'; echo SHOWN-AFTER",
    );
    assert!(
        seen.contains("BEFORE") && !seen.contains("SHOWN-AFTER"),
        "control: {seen}"
    );

    let case = Case::new((User::Root, Kernel::AsIs), support::SANDBOX_ON, |_| {});
    let mut cmd = case.command(true, &[]);
    cmd.arg("--workspace").arg(&case.h.ws).args([
        "run",
        "t",
        "echo 'echo PWNED' > .envrc && printf '\\033P' >&2",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let seen = on_a_terminal(dir.path(), &as_shell_command(&cmd));
    assert!(!case.h.ws_path(".envrc").exists(), "{seen}");
    assert!(
        seen.contains("warning[MGS2014]") && seen.contains(".envrc`, which direnv obeys"),
        "{seen}"
    );
}

/// A child that plants a run-later file and then takes away the write
/// permission of its directory (`chmod 555`, as the files' owner may)
/// made the sweep's rename fail, as an ordinary user: the file stayed,
/// with only a warning. The sweep gives the directory its write
/// permission back for the move, and then takes it away again.
#[test]
fn a_planted_file_in_a_directory_made_read_only_is_still_set_aside() {
    let script =
        "mkdir sub && echo 'echo PWNED-envrc' > sub/.envrc && chmod 555 sub && echo PLANTED";
    for mode in modes() {
        let control = Case::new(mode, support::SANDBOX_ON, |_| {});
        let out = control.shell(false, script, &[]);
        assert!(out.stdout.contains("PLANTED"), "{}", control.context(&out));
        assert!(control.h.ws_path("sub/.envrc").exists());

        let case = Case::new(mode, support::SANDBOX_ON, |_| {});
        let out = case.shell(true, script, &[]);
        assert!(out.stdout.contains("PLANTED"), "{}", case.context(&out));
        assert_set_aside(&case, &out, &["sub/.envrc"]);
        let sub = case.h.ws_path("sub").symlink_metadata().unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(sub.permissions().mode() & 0o777, 0o555);
    }
}

/// A Mercurial repository made by a child in a git workspace, its `hgrc`
/// naming a hook: the user's next `hg status` there, outside magus, ran
/// it (a shell prompt that shows the hg branch runs `hg` in every
/// directory it enters). After the run the new `.hg` is set aside.
#[test]
fn a_mercurial_repository_planted_in_the_workspace_runs_nothing_later() {
    if Command::new("hg").arg("--version").output().is_err() {
        eprintln!("skipped: no hg on PATH");
        return;
    }
    let setup = |h: &Harness| git_init(&h.ws);
    let script = "hg init sub && printf '[hooks]\\npre-status = echo PWNED-hg >&2\\n' >> sub/.hg/hgrc && echo PLANTED";
    let hg_status = |dir: &Path| {
        let out = Command::new("hg")
            .args(["--config", "trusted.users=*", "status"])
            .current_dir(dir)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    for mode in modes() {
        let control = Case::new(mode, support::SANDBOX_ON, setup);
        let out = control.shell(false, script, &[]);
        assert!(out.stdout.contains("PLANTED"), "{}", control.context(&out));
        let seen = hg_status(&control.h.ws_path("sub"));
        assert!(seen.contains("PWNED-hg"), "control: {seen}");

        let case = Case::new(mode, support::SANDBOX_ON, setup);
        let out = case.shell(true, script, &[]);
        assert!(out.stdout.contains("PLANTED"), "{}", case.context(&out));
        assert_set_aside(&case, &out, &["sub/.hg"]);
        let seen = hg_status(&case.h.ws_path("sub"));
        assert!(!seen.contains("PWNED"), "{seen}\n{}", case.context(&out));
    }
}

/// `PROGRAM ARGS` in `dir`, outside magus, as the user would type it:
/// what it printed on stdout and stderr; `None` where it is not installed.
fn user_tool(dir: &Path, program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env_remove("BUNDLE_GEMFILE")
        .env_remove("COMPOSE_FILE")
        .env_remove("MAVEN_OPTS")
        .output()
        .ok()?;
    Some(said_by(&out))
}

/// What a program printed, stdout then stderr, as one text.
fn said_by(out: &std::process::Output) -> String {
    let mut said = String::from_utf8_lossy(&out.stdout).into_owned();
    said.push_str(&String::from_utf8_lossy(&out.stderr));
    said
}

/// Whether `program --version` runs here.
fn installed(program: &str) -> bool {
    user_tool(Path::new("/"), program, &["--version"]).is_some()
}

/// For each mode and each `(script, paths)`: a control run (the sandbox
/// off) after which `later` (the user's ordinary command in the
/// workspace, outside magus) printed `PWNED-<tag>`; then a sandboxed run
/// after which `paths` are set aside and `later` prints nothing planted.
fn plant_and_run_later(
    setup: &Setup<'_>,
    plants: &[(&str, &[&str])],
    tag: &str,
    later: &dyn Fn(&Path) -> String,
) {
    let pwned = format!("PWNED-{tag}");
    for mode in modes() {
        for (script, paths) in plants {
            let control = Case::new(mode, support::SANDBOX_ON, setup);
            let out = control.shell(false, script, &[]);
            assert!(out.stdout.contains("PLANTED"), "{}", control.context(&out));
            let seen = later(&control.h.ws);
            assert!(seen.contains(&pwned), "control ({script}): {seen}");

            let case = Case::new(mode, support::SANDBOX_ON, setup);
            let out = case.shell(true, script, &[]);
            assert!(out.stdout.contains("PLANTED"), "{}", case.context(&out));
            assert_set_aside(&case, &out, paths);
            let seen = later(&case.h.ws);
            assert!(!seen.contains("PWNED"), "{seen}\n{}", case.context(&out));
        }
    }
}

/// Maven reads `.mvn/jvm.config` in the nearest directory above it that
/// holds a `.mvn` and passes its lines to the JVM, at every `mvn` command
/// (`mvn -v` too). A child writes one whose `-agentpath:` names a library
/// printing `PWNED-mvn` when loaded: the user's next `mvn -v` in the
/// workspace, outside magus, loaded it. After the run it is set aside.
#[test]
fn a_maven_jvm_option_planted_in_mvn_runs_nothing_later() {
    if !installed("mvn") || !installed("cc") {
        eprintln!("skipped: no mvn or no cc on PATH");
        return;
    }
    let lib = tempfile::tempdir().unwrap();
    let source = lib.path().join("agent.c");
    std::fs::write(
        &source,
        "#include <stdio.h>\n__attribute__((constructor)) static void pwn(void) \
         { fputs(\"PWNED-mvn\\n\", stderr); }\nint Agent_OnLoad(void *vm, char *o, void *r) \
         { return 0; }\n",
    )
    .unwrap();
    let agent = lib.path().join("agent.so");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&agent)
        .arg(&source)
        .status()
        .unwrap();
    assert!(built.success());
    let script = format!(
        "mkdir -p .mvn && echo '-agentpath:{}' > .mvn/jvm.config && echo PLANTED",
        agent.display()
    );
    let mvn = |ws: &Path| user_tool(ws, "mvn", &["-v"]).unwrap();
    let plants: [(&str, &[&str]); 1] = [(&script, &[".mvn/jvm.config"])];
    plant_and_run_later(&|_| {}, &plants, "mvn", &mvn);
}

/// Bundler reads `.bundle/config` in the project (a directory projects
/// keep out of git): its `BUNDLE_GEMFILE` names the Gemfile, Ruby code
/// that `bundle install` and `bundle check` evaluate. A child points it at
/// a hidden Gemfile printing `PWNED-bundle`: the user's next `bundle
/// check`, outside magus, ran it. After the run the config is set aside,
/// and bundler reads the project's own `Gemfile`.
#[test]
fn a_bundler_config_planted_in_bundle_runs_nothing_later() {
    if !installed("bundle") {
        eprintln!("skipped: no bundle on PATH");
        return;
    }
    let setup = |h: &Harness| {
        std::fs::write(h.ws_path("Gemfile"), "source \"https://rubygems.org\"\n").unwrap();
    };
    let script = "mkdir -p .bundle .hidden && \
        echo '$stderr.puts \"PWNED-bundle\"' > .hidden/Gemfile && \
        printf -- '---\\nBUNDLE_GEMFILE: \".hidden/Gemfile\"\\n' > .bundle/config && echo PLANTED";
    let bundle = |ws: &Path| user_tool(ws, "bundle", &["check"]).unwrap();
    let plants: [(&str, &[&str]); 1] = [(script, &[".bundle/config"])];
    plant_and_run_later(&setup, &plants, "bundle", &bundle);
}

/// Docker Compose reads the project's `.env` (which git usually ignores)
/// before the compose files: its `COMPOSE_FILE` chooses them, and with
/// them what containers `docker compose up` starts, with which mounts
/// and privileges; it also merges a `compose.override.yaml` unasked. A
/// child plants either, naming a service command `PWNED-compose`: the
/// user's next `docker compose config` (what `up` would run, shown
/// without a daemon), outside magus, showed it. After the run they are
/// set aside, and the project's own file is what compose reads.
#[test]
fn a_compose_env_or_override_planted_runs_nothing_later() {
    let compose: &[&str] = if installed("docker-compose") {
        &["docker-compose"]
    } else if user_tool(Path::new("/"), "docker", &["compose", "version"])
        .is_some_and(|v| v.contains("version"))
    {
        &["docker", "compose"]
    } else {
        eprintln!("skipped: no docker-compose or docker compose on PATH");
        return;
    };
    let setup = |h: &Harness| {
        let web = "services:\n  web:\n    image: nginx\n";
        std::fs::write(h.ws_path("compose.yaml"), web).unwrap();
    };
    let service = "services:\\n  web:\\n    image: alpine\\n    command: [echo, PWNED-compose]\\n";
    let env = format!(
        "mkdir -p .hidden && printf '{service}' > .hidden/x.yaml && \
         echo COMPOSE_FILE=.hidden/x.yaml > .env && echo PLANTED"
    );
    let over = format!("printf '{service}' > compose.override.yaml && echo PLANTED");
    let config = |ws: &Path| {
        let mut args = compose[1..].to_vec();
        args.push("config");
        user_tool(ws, compose[0], &args).unwrap()
    };
    let plants: [(&str, &[&str]); 2] = [(&env, &[".env"]), (&over, &["compose.override.yaml"])];
    plant_and_run_later(&setup, &plants, "compose", &config);
}

/// A dev container's configuration (`.devcontainer/devcontainer.json`,
/// or `.devcontainer.json`) names an `initializeCommand` that runs on the
/// host, before any container, when the editor reopens the folder in the
/// container or at `devcontainer up`. A child plants one printing
/// `PWNED-devcontainer`: the user's next `devcontainer up`, outside magus,
/// ran it (a stub `docker` stands for the daemon, which the command runs
/// before it needs). After the run it is set aside.
#[test]
fn a_dev_container_command_planted_runs_nothing_later() {
    if !installed("devcontainer") {
        eprintln!("skipped: no devcontainer on PATH");
        return;
    }
    let stub = tempfile::tempdir().unwrap();
    let docker = stub.path().join("docker");
    std::fs::write(&docker, "#!/bin/sh\nexit 0\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&docker, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        stub.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let config = "{\\\"image\\\": \\\"alpine\\\", \\\"initializeCommand\\\": \\\"echo PWNED-devcontainer\\\"}";
    let dir = format!("mkdir -p .devcontainer && echo \"{config}\" > .devcontainer/devcontainer.json && echo PLANTED");
    let file = format!("echo \"{config}\" > .devcontainer.json && echo PLANTED");
    let up = |ws: &Path| {
        let out = Command::new("devcontainer")
            .args(["up", "--workspace-folder"])
            .arg(ws)
            .env("PATH", &path)
            .output()
            .unwrap();
        // The command echoed back as a setting is not the command run.
        said_by(&out)
            .replace("initializeCommand", "")
            .replace("echo PWNED", "")
    };
    let plants: [(&str, &[&str]); 2] = [
        (&dir, &[".devcontainer/devcontainer.json"]),
        (&file, &[".devcontainer.json"]),
    ];
    plant_and_run_later(&|_| {}, &plants, "devcontainer", &up);
}

/// mise reads `.tool-versions` (asdf's file) and its configs under
/// `mise/` and `.config/mise/` like `mise.toml`, and a version
/// `path:DIR` there, never asked about (no `mise trust`), puts `DIR/bin`
/// first in `PATH`. A child plants `node` in a hidden directory and
/// names it so: the user's next `node --version` in the workspace, outside
/// magus, through mise (`mise x`, as its shims and `mise activate` do),
/// ran it. After the run the files naming it are set aside, and mise
/// runs the machine's `node`.
#[test]
fn a_mise_tool_version_planted_as_a_path_runs_nothing_later() {
    if !installed("mise") {
        eprintln!("skipped: no mise on PATH");
        return;
    }
    let node = "mkdir -p .cache/evil/bin && \
        printf '#!/bin/sh\\necho PWNED-mise >&2\\n' > .cache/evil/bin/node && \
        chmod 755 .cache/evil/bin/node";
    let versions =
        format!("{node} && echo 'node path:./.cache/evil' > .tool-versions && echo PLANTED");
    let config = format!(
        "{node} && mkdir -p .config/mise && \
         printf '[tools]\\nnode = \"path:./.cache/evil\"\\n' > .config/mise/config.toml && echo PLANTED"
    );
    let later = |ws: &Path| {
        let home = tempfile::tempdir().unwrap();
        let out = Command::new("mise")
            .args(["x", "--", "node", "--version"])
            .current_dir(ws)
            .env("HOME", home.path())
            .env_remove("MISE_ENV")
            .output()
            .unwrap();
        said_by(&out)
    };
    let plants: [(&str, &[&str]); 2] = [
        (&versions, &[".tool-versions"]),
        (&config, &[".config/mise/config.toml"]),
    ];
    plant_and_run_later(&|_| {}, &plants, "mise", &later);
}

/// uv reads `uv.toml` in the project and the directories above it: its
/// `python-downloads-json-url` names a list of Python builds to install,
/// with their addresses and hashes, and `python-preference =
/// "only-managed"` makes `uv run` install one. A child lists a hidden
/// archive whose `python` is its own: the user's next `uv run` in the
/// workspace, outside magus, installed and ran it (and kept it among the
/// user's managed Pythons). After the run `uv.toml` is set aside.
#[test]
fn a_uv_python_download_list_planted_runs_nothing_later() {
    if !installed("uv") || !Path::new("/usr/bin/python3").exists() {
        eprintln!("skipped: no uv on PATH, or no /usr/bin/python3");
        return;
    }
    let setup = |h: &Harness| {
        let project = "[project]\nname = \"x\"\nversion = \"0\"\nrequires-python = \">=3.8\"\n";
        std::fs::write(h.ws_path("pyproject.toml"), project).unwrap();
    };
    let script = r#"d=.cache/d/python && mkdir -p $d/bin $d/lib/python3.13 &&
        printf '#!/bin/sh\necho PWNED-uv >> "$PROOF"\nexec /usr/bin/python3 "$@"\n' > $d/bin/python3.13 &&
        chmod 755 $d/bin/python3.13 && ln -s python3.13 $d/bin/python3 && ln -s python3.13 $d/bin/python &&
        printf '# system configuration generated and used by the sysconfig module\nbuild_time_vars = {}\n' \
            > $d/lib/python3.13/_sysconfigdata__linux_x86_64-linux-gnu.py &&
        tar -C .cache/d -czf .cache/py.tar.gz python && sum=$(sha256sum .cache/py.tar.gz | cut -d' ' -f1) &&
        printf '{"cpython-3.13.99-linux-x86_64-gnu": {"name": "cpython", "arch": {"family": "x86_64", "variant": null},
            "os": "linux", "libc": "gnu", "major": 3, "minor": 13, "patch": 99, "prerelease": "",
            "url": "file://%s/.cache/py.tar.gz", "sha256": "%s", "variant": null}}\n' "$PWD" "$sum" > .cache/d.json &&
        printf 'python-preference = "only-managed"\npython-downloads-json-url = "./.cache/d.json"\n' > uv.toml &&
        echo PLANTED"#;
    let later = |ws: &Path| {
        let home = tempfile::tempdir().unwrap();
        let proof = home.path().join("proof");
        let out = Command::new("uv")
            .args(["run", "true"])
            .current_dir(ws)
            .env("HOME", home.path())
            .env("PROOF", &proof)
            .env("UV_PYTHON_INSTALL_DIR", home.path().join("python"))
            .env("UV_CACHE_DIR", home.path().join("cache"))
            .output()
            .unwrap();
        let mut said = String::from_utf8_lossy(&out.stderr).into_owned();
        said.push_str(&std::fs::read_to_string(&proof).unwrap_or_default());
        said
    };
    let plants: [(&str, &[&str]); 1] = [(script, &["uv.toml"])];
    plant_and_run_later(&setup, &plants, "uv", &later);
}

/// rustup reads `rust-toolchain.toml` (or the older `rust-toolchain`) in
/// the directory it runs in and those above it, and a `path` toolchain
/// there is a directory whose `bin/` it runs in place of `cargo` and
/// `rustc`, never asked about: `cargo fmt --version` in the workspace, a
/// prompt that shows the Rust version, an editor opening the folder. A
/// child plants such a toolchain in a hidden directory and names it so;
/// the user's next `cargo fmt --version` there, outside magus, ran it.
/// After the run the file naming it is set aside, and rustup runs the
/// user's toolchain.
#[test]
fn a_rust_toolchain_planted_as_a_path_runs_nothing_later() {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| home.map(|h| h.join(".cargo")));
    let Some(bin) = cargo_home
        .map(|c| c.join("bin"))
        .filter(|b| b.join("rustup").exists() && b.join("cargo").exists())
    else {
        eprintln!("skipped: no rustup (and its cargo proxy) in CARGO_HOME");
        return;
    };
    let toolchain = "mkdir -p .cache/tc/bin && \
        printf '#!/bin/sh\\necho PWNED-rustup >&2\\n' > .cache/tc/bin/cargo && \
        cp .cache/tc/bin/cargo .cache/tc/bin/rustc && chmod 755 .cache/tc/bin/*";
    let toml = format!(
        "{toolchain} && printf '[toolchain]\\npath = \"%s/.cache/tc\"\\n' \"$PWD\" > rust-toolchain.toml && \
         echo PLANTED"
    );
    let legacy = format!("{toolchain} && echo \"$PWD/.cache/tc\" > rust-toolchain && echo PLANTED");
    let later = |ws: &Path| {
        // The test runs under cargo, whose rustup proxy names the
        // toolchain in the environment; the user's shell does not.
        let out = Command::new(bin.join("cargo"))
            .args(["fmt", "--version"])
            .current_dir(ws)
            .env_remove("RUSTUP_TOOLCHAIN")
            .output()
            .unwrap();
        said_by(&out)
    };
    let plants: [(&str, &[&str]); 2] = [
        (&toml, &["rust-toolchain.toml"]),
        (&legacy, &["rust-toolchain"]),
    ];
    plant_and_run_later(&|_| {}, &plants, "rustup", &later);
}

/// Python puts the current directory first on its module path for `python3
/// -m MODULE`, `-c` and the interactive prompt, so a module there named as
/// one of the standard library's is imported in its place: `python3 -m
/// venv .venv` (in every project's set-up notes) ran a planted
/// `venv/__init__.py`, and a bare `python3` a planted `readline.py`,
/// though neither command runs any of the project's code. A child plants
/// them at the workspace root; the user's next `python3 -m venv` and
/// `python3 -i` there, outside magus, ran them. After the run they are set
/// aside, and Python imports its own.
#[test]
fn a_python_module_planted_in_place_of_the_standard_librarys_runs_nothing_later() {
    let python = Path::new("/usr/bin/python3");
    if !python.exists() {
        eprintln!("skipped: no /usr/bin/python3");
        return;
    }
    let venv = "mkdir venv && echo 'print(\"PWNED-stdlib\")' > venv/__init__.py && \
        cp venv/__init__.py venv/__main__.py && echo PLANTED";
    let readline = "echo 'print(\"PWNED-stdlib\")' > readline.py && echo PLANTED";
    let later = |ws: &Path| {
        let scratch = tempfile::tempdir().unwrap();
        let made = Command::new(python)
            .args(["-m", "venv", "--without-pip"])
            .arg(scratch.path().join("v"))
            .current_dir(ws)
            .output()
            .unwrap();
        let prompt = Command::new(python)
            .args(["-i", "-c", "pass"])
            .current_dir(ws)
            .stdin(std::process::Stdio::null())
            .env("TERM", "dumb")
            .output()
            .unwrap();
        format!("{}{}", said_by(&made), said_by(&prompt))
    };
    let plants: [(&str, &[&str]); 2] =
        [(venv, &["venv/__init__.py"]), (readline, &["readline.py"])];
    plant_and_run_later(&|_| {}, &plants, "stdlib", &later);
}

/// Without a jail (user namespaces refused, as Ubuntu does for ordinary
/// users) nothing holds `.git/hooks` read-only: it is noted at the start
/// and compared after the run, at most 10,000 entries of it. A child
/// wrote a `pre-commit` and then 30,000 empty files beside it: the
/// comparison stopped at its budget, saying nothing, and the hook it had
/// not reached ran at the user's next `git commit`. A protected directory
/// whose comparison cannot finish is now set aside whole and made again
/// from what was noted.
#[test]
fn a_protected_directory_flooded_past_the_comparison_runs_nothing_later() {
    let setup = |h: &Harness| git_init(&h.ws);
    let script = "cd .git/hooks && printf '#!/bin/sh\\necho PWNED-flood >&2\\n' > pre-commit && \
        chmod 755 pre-commit && \
        python3 -c 'for i in range(30000): open(\"j%d\" % i, \"w\").close()' 2>/dev/null; \
        echo PLANTED";
    for mode in modes() {
        let control = Case::new(mode, support::SANDBOX_ON, setup);
        let out = control.shell(false, script, &[]);
        assert!(out.stdout.contains("PLANTED"), "{}", control.context(&out));
        let seen = user_git(&control.h.ws, &["commit", "--allow-empty", "-m", "x"]);
        assert!(seen.contains("PWNED-flood"), "control: {seen}");

        let case = Case::new(mode, support::SANDBOX_ON, setup);
        let hooks = case.h.ws_path(".git/hooks");
        let before: Vec<_> = std::fs::read_dir(&hooks)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        let out = case.shell(true, script, &[]);
        assert!(out.stdout.contains("PLANTED"), "{}", case.context(&out));
        let seen = user_git(&case.h.ws, &["commit", "--allow-empty", "-m", "x"]);
        assert!(!seen.contains("PWNED"), "{seen}\n{}", case.context(&out));
        let after = std::fs::read_dir(&hooks).unwrap().count();
        assert_eq!(after, before.len(), "{}", case.context(&out));
        for name in before {
            assert!(hooks.join(&name).is_file(), "{name:?} not put back");
        }
    }
}

/// An interactive prompt started in the workspace reads a start-up file
/// from the current directory, unasked: irb the first of `~/.irbrc` and
/// `./.irbrc` (and `irb.rc`, `_irbrc`, `$irbrc`), pry `./.pryrc`, R
/// `./.Rprofile`, GHCi `./.ghci`, Octave `./.octaverc`. A child plants a
/// `.irbrc`; the user's next `irb` there (`rails console` is one), outside
/// magus, ran it. After the run it is set aside.
#[test]
fn a_prompts_start_up_file_planted_in_the_workspace_runs_nothing_later() {
    if !installed("irb") {
        eprintln!("skipped: no irb on PATH");
        return;
    }
    let irbrc = "mkdir -p app && echo 'warn \"PWNED-irb\"' > app/.irbrc && echo PLANTED";
    let later = |ws: &Path| {
        let home = tempfile::tempdir().unwrap();
        let out = Command::new("irb")
            .current_dir(ws.join("app"))
            .env("HOME", home.path())
            .env_remove("IRBRC")
            .env_remove("XDG_CONFIG_HOME")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        said_by(&out)
    };
    let plants: [(&str, &[&str]); 1] = [(irbrc, &["app/.irbrc"])];
    plant_and_run_later(&|_| {}, &plants, "irb", &later);
}

/// The user's next `cargo build` in `crate/`, outside magus (a scratch
/// `CARGO_HOME` and target): what it printed.
fn cargo_build_in_crate(ws: &Path) -> String {
    let scratch = tempfile::tempdir().unwrap();
    let out = Command::new("cargo")
        .args(["build", "--offline", "--quiet"])
        .current_dir(ws.join("crate"))
        .env("CARGO_HOME", scratch.path().join("home"))
        .env("CARGO_TARGET_DIR", scratch.path().join("target"))
        .output()
        .unwrap();
    said_by(&out)
}

/// An empty library crate at `crate/` in the workspace, for `cargo build`
/// to run what a planted `.cargo/config.toml` names.
fn empty_crate(h: &Harness) {
    let krate = h.ws_path("crate");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    std::fs::write(
        krate.join("Cargo.toml"),
        "[package]\nname = \"k\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(krate.join("src/lib.rs"), "").unwrap();
}

/// The sweep walks without following links, and looked for run-later
/// directories by name: a link named `.cargo` (or `.vscode`, `.mvn`, ...)
/// was left, and cargo reads `.cargo/config.toml` through it. A child
/// writes a config naming a `rustc-wrapper` in `build/c/`, an ordinary
/// directory, and links `crate/.cargo` to it; the user's next `cargo
/// build` in the crate, outside magus, ran the wrapper. After the run the
/// link is set aside.
#[test]
fn a_link_named_as_a_run_later_directory_runs_nothing_later() {
    if !installed("cargo") {
        eprintln!("skipped: no cargo on PATH");
        return;
    }
    let setup = empty_crate;
    let script = "mkdir -p build/c && \
        printf '[build]\\nrustc-wrapper = \"%s/build/w.sh\"\\n' \"$PWD\" > build/c/config.toml && \
        printf '#!/bin/sh\\necho PWNED-link >&2\\nexec \"$@\"\\n' > build/w.sh && chmod 755 build/w.sh && \
        ln -s ../build/c crate/.cargo && echo PLANTED";
    let later = cargo_build_in_crate;
    let plants: [(&str, &[&str]); 1] = [(script, &["crate/.cargo"])];
    plant_and_run_later(&setup, &plants, "link", &later);
}

/// mise also reads each tool's own version file (`.node-version`,
/// `.nvmrc`, `.python-version`, `.ruby-version`, ...) once the user
/// enables them (`idiomatic_version_file_enable_tools`, which its
/// documentation suggests to users coming from nvm), and takes a
/// `path:DIR` version there as in `.tool-versions`, unasked: `node` in the
/// workspace ran the child's `DIR/bin/node`. Such a file naming a `path:`
/// version is set aside; one naming a version number stays (a spell may
/// pin the version).
#[test]
fn a_tools_version_file_naming_a_path_runs_nothing_later() {
    if !installed("mise") {
        eprintln!("skipped: no mise on PATH");
        return;
    }
    let node = "mkdir -p .cache/evil/bin && \
        printf '#!/bin/sh\\necho PWNED-idiomatic >&2\\n' > .cache/evil/bin/node && \
        chmod 755 .cache/evil/bin/node";
    let node_version =
        format!("{node} && echo 'path:./.cache/evil' > .node-version && echo PLANTED");
    let nvmrc = format!(
        "{node} && mkdir -p web && echo 'path:../.cache/evil' > web/.nvmrc && echo PLANTED"
    );
    let later = |ws: &Path| {
        let home = tempfile::tempdir().unwrap();
        let mut said = String::new();
        for dir in [ws.to_path_buf(), ws.join("web")] {
            let out = Command::new("mise")
                .args(["x", "--", "node", "--version"])
                .current_dir(&dir)
                .env("HOME", home.path())
                .env("MISE_IDIOMATIC_VERSION_FILE_ENABLE_TOOLS", "node")
                .env_remove("MISE_ENV")
                .output();
            if let Ok(out) = out {
                said.push_str(&said_by(&out));
            }
        }
        said
    };
    let plants: [(&str, &[&str]); 2] = [
        (&node_version, &[".node-version"]),
        (&nvmrc, &["web/.nvmrc"]),
    ];
    plant_and_run_later(&|_| {}, &plants, "idiomatic", &later);
    let case = Case::new(modes()[0], support::SANDBOX_ON, |_| {});
    let out = case.shell(true, "echo 20 > .nvmrc && echo PLANTED", &[]);
    assert!(out.stdout.contains("PLANTED"), "{}", case.context(&out));
    assert!(case.h.ws_path(".nvmrc").is_file(), "{}", case.context(&out));
    assert!(!out.stderr.contains("MGS2014"), "{}", case.context(&out));
}

/// A rename stamps the `ctime` of the entry moved, not of what it holds.
/// One run writes a cargo config under a name nothing looks for
/// (`cfg/config.toml`), or a whole crate with its `.cargo/config.toml`
/// where the sweep does not walk (its own quarantine); a later run moves
/// the directory into place (`mv cfg crate/.cargo`, or the crate over
/// the user's). The user's next `cargo build` in the crate, outside
/// magus, ran the config's `rustc-wrapper`: the sweep judged the file by
/// its own `ctime`, the earlier run's. Now a file not noted at the start
/// under a directory the run moved or made is the run's.
#[test]
fn files_an_earlier_run_stashed_and_a_later_one_moved_into_place_run_nothing_later() {
    if !installed("cargo") {
        eprintln!("skipped: no cargo on PATH");
        return;
    }
    let setup = empty_crate;
    let config = "printf '[build]\\nrustc-wrapper = \"%s/w.sh\"\\n' \"$PWD\"";
    let wrapper =
        "printf '#!/bin/sh\\necho PWNED-moved >&2\\nexec \"$@\"\\n' > w.sh && chmod 755 w.sh";
    let stash_in_place =
        format!("mkdir cfg && {config} > cfg/config.toml && {wrapper} && echo PLANTED");
    let stash_in_quarantine = format!(
        "q=.magus/quarantine/s && mkdir -p $q && cp -r crate $q/ && mkdir $q/crate/.cargo && \
         {config} > $q/crate/.cargo/config.toml && {wrapper} && echo PLANTED"
    );
    let variants = [
        (stash_in_place.as_str(), "mv cfg crate/.cargo && echo MOVED"),
        (
            stash_in_quarantine.as_str(),
            "rm -rf crate && mv .magus/quarantine/s/crate crate && echo MOVED",
        ),
    ];
    let later = cargo_build_in_crate;
    for mode in modes() {
        for (stash, move_in) in variants {
            let control = Case::new(mode, support::SANDBOX_ON, setup);
            let out = control.shell(false, stash, &[]);
            assert!(out.stdout.contains("PLANTED"), "{}", control.context(&out));
            let out = control.shell(false, move_in, &[]);
            assert!(out.stdout.contains("MOVED"), "{}", control.context(&out));
            let seen = later(&control.h.ws);
            assert!(seen.contains("PWNED-moved"), "control ({move_in}): {seen}");

            let case = Case::new(mode, support::SANDBOX_ON, setup);
            let out = case.shell(true, stash, &[]);
            assert!(out.stdout.contains("PLANTED"), "{}", case.context(&out));
            let out = case.shell(true, move_in, &[]);
            assert!(out.stdout.contains("MOVED"), "{}", case.context(&out));
            assert_set_aside(&case, &out, &["crate/.cargo/config.toml"]);
            let seen = later(&case.h.ws);
            assert!(!seen.contains("PWNED"), "{seen}\n{}", case.context(&out));
        }
    }
}
