//! What a new user meets in the first hour (issue 35), through the real
//! `magus` binary: a program installed nowhere is "not found", not a
//! denial; a spell path typed in a subdirectory is relative to it; MGS2006
//! is said in a jailed run too; a child's failure on a file that exists
//! nowhere is not blamed on the sandbox; a write into the run's own `/tmp`
//! is said to be discarded; `std\print("")` prints nothing, as upstream;
//! every command ends quietly on a closed stdout.
//!
//! Where the jail changes the answer, each case runs jailed, jailed
//! without Landlock (`MAGUS_SANDBOX_LANDLOCK=0`) and without the jail
//! (`MAGUS_SANDBOX_USERNS=0`), as root and as uid 65534 (when the test
//! runs as root), with a control run where one shows the case means
//! something. A magus without the kernel layer has no jail: the cases
//! about the jail are for the kernel build alone.
#![cfg_attr(not(kernel_layer), allow(dead_code))]

mod support;

use std::path::{Path, PathBuf};
use support::{capture, Harness, RunOutput};

/// How a run is confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The default: the jail and Landlock.
    Jailed,
    /// The jail without Landlock.
    JailOnly,
    /// Landlock without the jail.
    NoJail,
    /// `MAGUS_SANDBOX_ENABLED=0`: the control.
    Off,
}

const CONFINED: [Mode; 3] = [Mode::Jailed, Mode::JailOnly, Mode::NoJail];

/// Who runs magus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum User {
    /// The user the test runs as.
    Current,
    /// uid 65534, switched to with `setpriv` (when the test runs as root).
    Nobody,
}

fn users() -> Vec<User> {
    match support::can_switch_user() {
        true => vec![User::Current, User::Nobody],
        false => vec![User::Current],
    }
}

/// A harness handed to `user` (everything under its root chowned to
/// uid 65534 for [`User::Nobody`]).
struct Case {
    h: Harness,
    user: User,
}

impl Case {
    fn new(h: Harness, user: User) -> Case {
        if user == User::Nobody {
            support::runas::hand_over(&h.root, support::runas::User::Nobody);
        }
        Case { h, user }
    }

    /// `magus ARGS...` in `mode`, as the case's user, from `cwd`.
    fn magus_in(&self, mode: Mode, cwd: &Path, args: &[&str]) -> RunOutput {
        let mut cmd = match self.user {
            User::Current => self.h.command(),
            User::Nobody => self.h.command_as_nobody(),
        };
        cmd.current_dir(cwd);
        match mode {
            Mode::Jailed => {}
            Mode::JailOnly => {
                cmd.env("MAGUS_SANDBOX_LANDLOCK", "0");
            }
            Mode::NoJail => {
                cmd.env("MAGUS_SANDBOX_USERNS", "0");
            }
            Mode::Off => {
                cmd.env("MAGUS_SANDBOX_ENABLED", "0");
            }
        }
        capture(cmd.args(args))
    }

    /// `magus --workspace WS run SPELL ARGS...` in `mode`.
    fn run(&self, mode: Mode, spell: &str, args: &[&str]) -> RunOutput {
        let ws = self.h.ws.to_str().expect("a UTF-8 workspace");
        let mut all = vec!["--workspace", ws, "run", spell];
        all.extend(args);
        self.magus_in(mode, &self.h.root, &all)
    }
}

fn context(user: User, mode: Mode, out: &RunOutput) -> String {
    format!("{user:?}, {mode:?}\n{}", out.dump())
}

/// An executable shell script at `path` that prints `TOOL-RAN NAME`.
fn tool(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("the tool's directory");
    let name = path.file_name().expect("a name").to_string_lossy();
    std::fs::write(path, format!("#!/bin/sh\necho TOOL-RAN {name}\n")).expect("write a tool");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// Sets the children's `PATH` to `args[0]` and runs the rest of `args`,
/// saying whether the launch was an `ExecError`; a `SandboxError` stops
/// the run with its diagnostic.
const LAUNCH: &str = r#"import "std";
import "sh";
import "env";

fun main(args: [str]) > int {
    env.set("PATH", args[0]);
    try {
        std.print("STATUS {sh.run(args.sub(1))}");
    } catch (e: ExecError) {
        std.print("EXEC-ERROR {e.message}");
    }
    return 0;
}
"#;

/// `~/.cargo/bin` first on `PATH` (as rustup puts it), holding `onlyhere`;
/// `~/tools`, on no `PATH` at start, holding `alsohere`.
fn launch_case(user: User) -> Case {
    let mut h = Harness::new();
    h.write_spell("launch", LAUNCH);
    tool(&h.home_path(".cargo/bin/onlyhere"));
    tool(&h.home_path("tools/alsohere"));
    tool(&h.home_path("in-home"));
    let start_path = format!(
        "{}:{}",
        h.home_path(".cargo/bin").display(),
        "/usr/bin:/bin"
    );
    h.set_env("PATH", start_path);
    Case::new(h, user)
}

/// Issue 35: a program installed nowhere was refused with MGS2007 at the
/// first ungranted `PATH` directory, naming a file that does not exist.
#[test]
fn a_program_installed_nowhere_is_not_found_and_one_in_an_ungranted_directory_is_refused() {
    for user in users() {
        let case = launch_case(user);
        let h = &case.h;
        let cargo_path = format!("{}:/usr/bin:/bin", h.home_path(".cargo/bin").display());
        let tools_path = format!("{}:/usr/bin:/bin", h.home_path("tools").display());
        let spelled_missing = h.home_path("tools/nothere");
        let spelled_missing = spelled_missing.to_str().unwrap();
        let spelled_present = h.home_path("tools/alsohere");
        let spelled_present = spelled_present.to_str().unwrap();
        let nowhere: [(&str, &str); 4] = [
            (&cargo_path, "ruff"),
            (&cargo_path, "magus-not-installed"),
            (&tools_path, "ruff"),
            (&tools_path, spelled_missing),
        ];
        let in_home = h.home_path("in-home");
        let in_home = in_home.to_str().unwrap();
        let refused: [(&str, &str, PathBuf); 4] = [
            (&cargo_path, "onlyhere", h.home_path(".cargo/bin/onlyhere")),
            (&tools_path, "alsohere", h.home_path("tools/alsohere")),
            (&cargo_path, spelled_present, h.home_path("tools/alsohere")),
            // `HOME` itself is in the jail's view, empty.
            (&cargo_path, in_home, h.home_path("in-home")),
        ];
        for mode in CONFINED {
            for (path, program) in nowhere {
                let out = case.run(mode, "launch", &[path, program]);
                let what = context(user, mode, &out);
                assert_eq!(out.status, Some(0), "{program}: {what}");
                assert!(
                    out.stdout.contains("EXEC-ERROR")
                        && (out
                            .stdout
                            .contains("program not found on the sandboxed PATH")
                            || out.stdout.contains("no such program")),
                    "{program} is not an ExecError: {what}"
                );
                assert!(!out.stderr.contains("MGS2007"), "{program}: {what}");
            }
            for (path, program, checked) in &refused {
                let out = case.run(mode, "launch", &[path, program]);
                let what = context(user, mode, &out);
                assert_eq!(out.status, Some(124), "{program}: {what}");
                // "checked as `PATH`" for a name, the message itself for a path.
                let named = format!("`{}`", checked.display());
                assert!(
                    out.stderr.contains("error[MGS2007]") && out.stderr.contains(&named),
                    "{program} is not refused naming {}: {what}",
                    checked.display()
                );
                assert!(!out.stdout.contains("TOOL-RAN"), "{program}: {what}");
            }
        }
        // The control: the programs exist and run, and `ruff` is nowhere.
        for (path, program, _) in &refused {
            let out = case.run(Mode::Off, "launch", &[path, program]);
            assert!(
                out.stdout.contains("TOOL-RAN"),
                "control: {}",
                context(user, Mode::Off, &out)
            );
        }
        let out = case.run(Mode::Off, "launch", &[&cargo_path, "ruff"]);
        assert!(out.stdout.contains("EXEC-ERROR"), "control: {}", out.dump());
    }
}

/// Issue 35: `magus run ./x.buzz` in `WS/sub` ran `WS/x.buzz`.
#[test]
fn a_spell_path_typed_in_a_subdirectory_is_relative_to_it() {
    let h = Harness::new();
    let say = |what: &str| {
        format!(
            "import \"std\";\nfun main(args: [str]) > void {{\n    std.print(\"{what}\");\n}}\n"
        )
    };
    std::fs::create_dir_all(h.ws_path("sub")).unwrap();
    std::fs::write(h.ws_path("x.buzz"), say("THE-ROOT-ONE")).unwrap();
    std::fs::write(h.ws_path("sub/x.buzz"), say("THE-SUB-ONE")).unwrap();
    let case = Case::new(h, User::Current);
    let sub = case.h.ws_path("sub");
    let out = case.magus_in(Mode::Jailed, &sub, &["run", "./x.buzz"]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert_eq!(out.stdout, "THE-SUB-ONE\n", "{}", out.dump());
    for spelled in ["./nope.buzz", "../sub/nope.buzz"] {
        let out = case.magus_in(Mode::Jailed, &sub, &["run", spelled]);
        assert_eq!(out.status, Some(127), "{}", out.dump());
        let tried = format!("at {}/", sub.display());
        assert!(
            out.stderr.contains(&tried) && out.stderr.contains("nope.buzz"),
            "the message does not name the absolute path tried: {}",
            out.dump()
        );
    }
    // `magus check` and `magus test` take the same paths.
    let out = case.magus_in(Mode::Jailed, &sub, &["check", "./x.buzz"]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    // From the root, the same spelling names the root's file.
    let out = case.magus_in(Mode::Jailed, &case.h.ws, &["run", "./x.buzz"]);
    assert_eq!(out.stdout, "THE-ROOT-ONE\n", "{}", out.dump());
}

/// Runs `args` as a child, once.
const RUN: &str = r#"import "std";
import "sh";

fun main(args: [str]) > int {
    std.print("STATUS {sh.run(args)}");
    return 0;
}
"#;

/// Issue 35: with a mise shim directory on `PATH` and `MISE_*` stripped,
/// only `sandbox check` and a run without the jail said MGS2006. Two
/// layouts: `HOME` reached through a link (the jail's view has no such
/// link), and an ungranted shim directory whose shims lead to a granted
/// `mise` (the jail hides the directory).
#[cfg(kernel_layer)]
#[test]
fn mgs2006_is_said_at_the_shims_launch_in_every_mode() {
    for user in users() {
        for layout in ["linked home", "hidden shims"] {
            let case = shim_case(user, layout);
            for mode in CONFINED {
                let out = case.run(mode, "r", &["python3"]);
                let what = format!("{layout}: {}", context(user, mode, &out));
                assert!(
                    out.stdout.contains("TOOL-RAN"),
                    "the shim did not run: {what}"
                );
                assert_eq!(
                    out.stderr.matches("warning[MGS2006]").count(),
                    1,
                    "MGS2006 not said once: {what}"
                );
            }
            let ws = case.h.ws.to_str().unwrap().to_string();
            let out = case.magus_in(
                Mode::Jailed,
                &case.h.root,
                &["--workspace", &ws, "sandbox", "check"],
            );
            assert!(out.stderr.contains("MGS2006"), "{layout}: {}", out.dump());
        }
    }
}

/// The mise layouts of [`mgs2006_is_said_at_the_shims_launch_in_every_mode`].
fn shim_case(user: User, layout: &str) -> Case {
    let config = match layout {
        "linked home" => {
            "sandbox:\n  enabled: true\n  allow:\n    - path: ~/.local/share/mise\n      mode: ro\n"
        }
        _ => "sandbox:\n  enabled: true\n  allow:\n    - path: ~/.local/bin\n      mode: ro\n",
    };
    let mut h = Harness::with_config(config);
    h.write_spell("r", RUN);
    let shims = h.home_path(".local/share/mise/shims");
    let home = match layout {
        "linked home" => {
            tool(&shims.join("python3"));
            let link = h.root.join("linked-home");
            std::os::unix::fs::symlink(&h.home, &link).unwrap();
            link
        }
        _ => {
            let mise = h.home_path(".local/bin/mise");
            tool(&mise);
            std::fs::create_dir_all(&shims).unwrap();
            std::os::unix::fs::symlink(&mise, shims.join("python3")).unwrap();
            h.home.clone()
        }
    };
    let path = format!(
        "{}:/usr/bin:/bin",
        home.join(".local/share/mise/shims").display()
    );
    h.set_env("HOME", &home);
    h.set_env("PATH", path);
    h.set_env("MISE_SHELL", "bash");
    Case::new(h, user)
}

/// Runs one shell line as a child.
const SHELL: &str = r#"import "std";
import "sh";

fun main(args: [str]) > int {
    std.print("STATUS {sh.shell(args[0])}");
    return 0;
}
"#;

/// Issue 35: a child's failure to read an absent `~/.ssh/id_rsa` was
/// blamed on the sandbox. The control: one on a planted key that exists
/// (`~/.aws/credentials`) is.
#[cfg(kernel_layer)]
#[test]
fn a_childs_failure_on_a_file_that_exists_nowhere_is_not_blamed_on_the_sandbox() {
    for user in users() {
        let h = Harness::new();
        h.write_spell("t", SHELL);
        std::fs::remove_file(h.home_path(".ssh/id_rsa")).unwrap();
        let case = Case::new(h, user);
        let absent = case.h.home_path(".ssh/id_rsa");
        let present = case.h.home_path(".aws/credentials");
        let new_in_absent_dir = case.h.home_path("no-such-dir/new");
        let new_in_home = case.h.home_path("new-file");
        for mode in CONFINED {
            let line = format!(
                "cat {} {}; touch {} {}",
                absent.display(),
                present.display(),
                new_in_absent_dir.display(),
                new_in_home.display()
            );
            let out = case.run(mode, "t", &[&line]);
            let what = context(user, mode, &out);
            let blamed = |path: &Path| {
                out.stderr
                    .contains(&format!("the child's failure on `{}`", path.display()))
            };
            assert!(out.stdout.contains("STATUS 1"), "{what}");
            assert!(!blamed(&absent), "the absent key was blamed: {what}");
            assert!(
                !blamed(&new_in_absent_dir),
                "an absent directory was blamed: {what}"
            );
            assert!(blamed(&present), "the control was not blamed: {what}");
            assert!(
                blamed(&new_in_home),
                "the write to HOME was not blamed: {what}"
            );
            case.h.assert_no_leak(&out);
        }
    }
}

/// Writes into the run's own `/tmp` and `/dev/shm` with `fs.*`, and one
/// file into the workspace.
const TEMP_WRITES: &str = r#"import "std";
import "fs";

fun main(args: [str]) > void {
    fs.write("kept.txt", "kept");
    fs.write("/tmp/{args[0]}", "one");
    fs.append("/tmp/{args[0]}", "two");
    fs.makeDirectory("/dev/shm/{args[0]}");
    std.print("WROTE");
}
"#;

/// Issue 35: a write under `/tmp` is discarded at the end of a jailed run;
/// say so once per run when the spell makes one with `fs.*`. With the
/// sandbox off `/tmp` is the host's (the control): nothing is said, and
/// the file stays.
#[cfg(kernel_layer)]
#[test]
fn a_write_into_the_runs_own_tmp_is_said_once_to_be_discarded() {
    let note = "which is discarded when the run ends";
    for user in users() {
        let h = Harness::new();
        h.write_spell("w", TEMP_WRITES);
        let case = Case::new(h, user);
        for mode in [Mode::Jailed, Mode::JailOnly] {
            let name = format!("magus-first-run-{}-{mode:?}", std::process::id());
            let out = case.run(mode, "w", &[&name]);
            let what = context(user, mode, &out);
            assert!(out.stdout.contains("WROTE"), "{what}");
            assert_eq!(out.stderr.matches(note).count(), 1, "{what}");
            assert!(out.stderr.contains(&format!("`/tmp/{name}`")), "{what}");
            assert!(
                !Path::new("/tmp").join(&name).exists(),
                "it was kept: {what}"
            );
        }
        let name = format!("magus-first-run-{}-host", std::process::id());
        let out = case.run(Mode::Off, "w", &[&name]);
        let kept = Path::new("/tmp").join(&name);
        let was_kept = kept.exists();
        let _ = std::fs::remove_file(&kept);
        let _ = std::fs::remove_dir(Path::new("/dev/shm").join(&name));
        assert!(out.stdout.contains("WROTE") && was_kept, "{}", out.dump());
        assert!(!out.stderr.contains(note), "{}", out.dump());
    }
}

/// Writes into the run's `$TMPDIR` with `fs.*`, saying where.
const TMPDIR_WRITES: &str = r#"import "std";
import "fs";
import "env";

fun main(args: [str]) > void {
    final dir = env.get("TMPDIR") ?? "none";
    fs.write("{dir}/{args[0]}", "one");
    fs.append("{dir}/{args[0]}", "two");
    std.print("WROTE IN {dir}");
}
"#;

/// Without the jail the host's `/tmp` and `/dev/shm` are not granted
/// (other sessions' files are there): a write there is MGS2002, whose
/// note says why and where the run's temporary files go; the run's own
/// directory is `$TMPDIR`, said to be discarded, and removed at the end.
#[cfg(kernel_layer)]
#[test]
fn without_the_jail_temporary_files_go_in_a_directory_of_the_runs_own() {
    let note = "which is discarded when the run ends";
    for user in users() {
        let h = Harness::new();
        h.write_spell("w", TEMP_WRITES);
        h.write_spell("t", TMPDIR_WRITES);
        let case = Case::new(h, user);
        let name = format!("magus-first-run-{}-nojail", std::process::id());
        let out = case.run(Mode::NoJail, "w", &[&name]);
        let what = context(user, Mode::NoJail, &out);
        let host = Path::new("/tmp").join(&name);
        let written = host.exists();
        let _ = std::fs::remove_file(&host);
        assert!(!written && !out.stdout.contains("WROTE"), "{what}");
        assert!(out.stderr.contains("MGS2002"), "{what}");
        assert!(
            out.stderr
                .contains("this run is not given the host's `/tmp`")
                && out
                    .stderr
                    .contains("this run's temporary files go in `$TMPDIR`"),
            "{what}"
        );

        let out = case.run(Mode::NoJail, "t", &[&name]);
        let what = context(user, Mode::NoJail, &out);
        let dir = out
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("WROTE IN "))
            .unwrap_or_else(|| panic!("no write: {what}"));
        assert!(dir.contains("magus-run-"), "{what}");
        assert_eq!(out.stderr.matches(note).count(), 1, "{what}");
        assert!(!Path::new(dir).exists(), "it was kept: {what}");
    }
}

/// Upstream Buzz's natives that return early on an empty string: `print`
/// writes nothing, a pattern matches nothing in it and replaces nothing,
/// `File.write` writes nothing (and raises nothing), `os.env` finds no
/// variable.
const EMPTY: &str = r#"import "buzz:std";
import "buzz:io";
import "buzz:os";

fun main(args: [str]) > void {
    std\print("A");
    std\print("");
    std\print("B");
    final pattern = $"x*";
    final nothing = "";
    std\print("{pattern.matchAgainst(nothing) == null}");
    std\print("{pattern.matchAllAgainst(nothing) == null}");
    std\print("[{pattern.replace(nothing, with: "R")}]");
    std\print("[{pattern.replaceAll(nothing, with: "R")}]");
    std\print("[{pattern.replace("y", with: "R")}]");
    io\stdout.write(nothing);
    io\stdin.write(nothing);
    std\print("{os\env(nothing) == null}");
}
"#;

/// Issue 35: `std\print("")` printed an empty line where upstream prints
/// nothing (`tests/bench/k-nucleoide.buzz` printed two extra lines).
#[test]
fn natives_that_upstream_ends_early_on_an_empty_string_match_it() {
    let h = Harness::new();
    h.write_spell("empty", EMPTY);
    let out = h.run("empty", &[]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert_eq!(
        out.stdout,
        "A\nB\ntrue\ntrue\n[]\n[]\n[Ry]\ntrue\n",
        "{}",
        out.dump()
    );
}

/// A spell that prints more than a pipe holds.
const CHATTY: &str = r#"import "std";

fun main(args: [str]) > void {
    foreach (i in 0..20000) {
        std.print("line {i} of a spell whose reader went away");
    }
}

test "prints" {
    std.print("from a test");
}
"#;

/// Issue 35: `magus completions fish | head -1` panicked (BrokenPipe,
/// exit 101). Every command that writes to stdout is run with a stdout
/// whose reader is gone before it starts.
#[test]
fn every_command_ends_quietly_on_a_closed_stdout() {
    let h = Harness::new();
    h.write_spell("chatty", CHATTY);
    let ws = h.ws.to_str().unwrap();
    let commands: [&[&str]; 14] = [
        &["completions", "bash"],
        &["completions", "zsh"],
        &["completions", "fish"],
        &["completions", "elvish"],
        &["completions", "powershell"],
        &["explain", "MGS2001"],
        &["--help"],
        &["--version"],
        &["--workspace", ws, "list"],
        &["--workspace", ws],
        &["--workspace", ws, "run", "chatty"],
        &["--workspace", ws, "test", "chatty"],
        &["--workspace", ws, "check"],
        &["--workspace", ws, "sandbox", "check"],
    ];
    for args in commands {
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader);
        let mut cmd = h.command();
        cmd.args(args).stdout(writer);
        let out = capture(&mut cmd);
        assert!(
            !out.stderr.contains("panicked") && out.status != Some(101),
            "magus {args:?} did not end quietly: {}",
            out.dump()
        );
        assert_eq!(out.status, Some(0), "magus {args:?}: {}", out.dump());
    }
}

/// Lists the sockets among a child's descriptors, then (the control that
/// the listing sees one) after opening one of its own.
const SOCKET_PROBE: &str = r#"import os, socket

def sockets():
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink("/proc/self/fd/" + name)
        except OSError:
            continue
        if link.startswith("socket:"):
            found.append(link)
    return found

print("INHERITED", len(sockets()))
s = socket.socket(socket.AF_UNIX)
print("OWN", len(sockets()))
"#;

/// magus proper asks the jail's original process what the host holds at
/// a path (the two items above) over a socket; no child gets that socket.
#[cfg(kernel_layer)]
#[test]
fn no_child_inherits_the_socket_that_asks_outside_the_jail() {
    for user in users() {
        let h = Harness::new();
        h.write_spell("r", RUN);
        std::fs::write(h.ws_path("probe.py"), SOCKET_PROBE).unwrap();
        let case = Case::new(h, user);
        let probe = case.h.ws_path("probe.py");
        for mode in [Mode::Jailed, Mode::JailOnly] {
            let out = case.run(mode, "r", &["/usr/bin/python3", probe.to_str().unwrap()]);
            let what = context(user, mode, &out);
            assert!(out.stdout.contains("OWN 1"), "the control: {what}");
            assert!(out.stdout.contains("INHERITED 0"), "{what}");
        }
    }
}
