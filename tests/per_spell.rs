//! Per-spell policy (`spells: NAME:` in magus.yaml, docs/configuration.md)
//! through the real `magus` binary, as root and as uid 65534: spell `a` is
//! granted a directory outside the workspace, a host and a variable; spell
//! `b` of the same workspace gets none of them, not through `fs`, `env`, a
//! child, an imported file nor `magus test`. Each refusal has its control:
//! `a` doing the same thing, and `b` with the sandbox off.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use support::counting_server::CountingServer;
use support::runas::{hand_over, User, AS_NOBODY};
use support::{can_switch_user, capture, Harness, RunOutput};

/// The variable passed through to `a` only (not `MAGUS_*`: children keep
/// those by default).
const ONLY_A: &str = "PER_SPELL_ONLY_A";

/// `a` and `b` share this source, so only their policies differ. It goes
/// through an imported file (`lib/helper`), `env.get`, children (`probe.sh`)
/// and finally a `fs.read` outside any `try` (line 13). The paths come as
/// arguments, so no denial is found before the run. The `test` blocks are
/// for `magus test`: one passes only where the data is readable, the other
/// only where it is not.
const SPELL: &str = r#"import "std";
import "fs";
import "sh";
import "env";
import "lib/helper";
fun main(args: [str]) > int {
    std.print("ENVGET {env.get("PER_SPELL_ONLY_A") ?? "null"}");
    std.print("HELPER {helper\readIt(args[0])}");
    std.print("HELPERCAT {helper\catIt(args[0])}");
    final status = sh.run(["/bin/sh", "probe.sh", args[0], args[1]]);
    std.print("PROBE {status}");
    std.print("RUNNING");
    std.print("FSREAD {fs.read(args[0])}");
    return 0;
}
test "the data is readable" {
    std\assert(helper\readIt(fs.read("where.txt")) == fs.read("expected.txt"), message: "not readable");
    std\assert(env.get("PER_SPELL_ONLY_A") != null, message: "no variable");
}
test "the data is refused" {
    std\assert(helper\readIt(fs.read("where.txt")) == "REFUSED MGS2001", message: "not refused");
    std\assert(env.get("PER_SPELL_ONLY_A") == null, message: "a variable");
}
"#;

/// Imported by both spells: a read through the gate and one by a child.
const HELPER: &str = r#"namespace helper;
import "fs";
import "sh";
export fun readIt(path: str) > str {
    var out = "";
    try {
        out = fs.read(path);
    } catch (e: SandboxError) {
        out = "REFUSED {e.code}";
    }
    return out;
}
export fun catIt(path: str) > str {
    return sh.output(["cat", path]).stdout;
}
"#;

/// The spells' child: the variable (shell and `printenv`), the file
/// (`cat`), the server (`curl`) and who it runs as, each on a line of its own.
const PROBE: &str = r#"printf 'CHILDENV %s\n' "${PER_SPELL_ONLY_A-unset}"
printf 'PRINTENV %s\n' "$(printenv PER_SPELL_ONLY_A)"
printf 'CAT %s\n' "$(cat "$1")"
printf 'CURL %s\n' "$(curl -fsS --max-time 10 "$2")"
printf 'UID %s\n' "$(id -u)"
"#;

/// An HTTP server on 127.0.0.1 answering every request with `page`,
/// counting the connections it accepts.
struct Server(CountingServer);

impl Server {
    fn start(page: String) -> Server {
        Server(CountingServer::start(move |stream| answer(stream, &page)))
    }

    fn hits(&self) -> usize {
        self.0.hits()
    }

    fn url(&self) -> String {
        format!("http://localhost:{}/", self.0.port)
    }
}

fn answer(stream: TcpStream, page: &str) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) if line == "\r\n" => break,
            Ok(_) => {}
        }
    }
    let mut stream = stream;
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        page.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(page.as_bytes());
}

/// A value no run could print by chance.
fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{prefix}-{}-{nanos:x}", std::process::id())
}

fn users() -> Vec<User> {
    if can_switch_user() {
        vec![User::Root, User::Nobody]
    } else {
        eprintln!("uid 65534 part skipped: not root, or no setpriv");
        vec![User::Root]
    }
}

/// The workspace's `sandbox:` section, then `a`'s and `b`'s.
fn config(workspace_network: &str, data: &Path, a_mode: &str) -> String {
    format!(
        "sandbox:\n  enabled: true\n  network: {workspace_network}\nspells:\n  a:\n    network: {{hosts: [localhost]}}\n    allow:\n      - path: {}\n        mode: {a_mode}\n    env:\n      passthrough: [{ONLY_A}]\n  b: {{}}\n",
        data.display()
    )
}

/// A workspace with spells `a` and `b`, the data file in `data/` beside
/// (not in) the workspace, and `ONLY_A` in magus's environment.
struct World {
    h: Harness,
    data_dir: PathBuf,
    file: PathBuf,
    data: String,
    passed: String,
    user: User,
}

impl World {
    fn new(user: User) -> World {
        let mut h = Harness::new();
        let data_dir = h.root.join("data");
        std::fs::create_dir_all(&data_dir).unwrap();
        let (file, data) = (data_dir.join("file.txt"), unique("per-spell-data"));
        std::fs::write(&file, &data).unwrap();
        let passed = unique("passed-to-a");
        h.set_env(ONLY_A, &passed);
        std::fs::create_dir_all(h.ws_path("spells/lib")).unwrap();
        std::fs::write(h.ws_path("spells/lib/helper.buzz"), HELPER).unwrap();
        std::fs::write(h.ws_path("probe.sh"), PROBE).unwrap();
        std::fs::write(h.ws_path("where.txt"), file.display().to_string()).unwrap();
        std::fs::write(h.ws_path("expected.txt"), &data).unwrap();
        h.write_spell("a", SPELL);
        h.write_spell("b", SPELL);
        let world = World {
            h,
            data_dir,
            file,
            data,
            passed,
            user,
        };
        world.configure("deny", "ro");
        world
    }

    fn configure(&self, workspace_network: &str, a_mode: &str) {
        self.h
            .write_config(&config(workspace_network, &self.data_dir, a_mode));
    }

    /// `magus --workspace WS ARGS...` as the world's user.
    fn magus(&self, args: &[&str]) -> RunOutput {
        hand_over(&self.h.root, self.user);
        let mut cmd = match self.user {
            User::Root => self.h.command(),
            User::Nobody => self.h.wrapped_command(&AS_NOBODY),
        };
        cmd.arg("--workspace").arg(&self.h.ws).args(args);
        let out = capture(&mut cmd);
        self.h.assert_no_leak(&out);
        out
    }

    /// `magus --workspace WS ARGS...` as the world's user, the kernel
    /// answering as `kernel` says.
    fn run_under(&self, kernel: support::runas::Kernel, args: &[&str]) -> RunOutput {
        hand_over(&self.h.root, self.user);
        let mut cmd = self
            .h
            .wrapped_command(&support::runas::wrapper(self.user, kernel));
        cmd.arg("--workspace").arg(&self.h.ws).args(args);
        capture(&mut cmd)
    }

    /// `magus run SPELL FILE URL`.
    fn run(&self, spell: &str, server: &Server) -> RunOutput {
        let file = self.file.display().to_string();
        self.magus(&["run", spell, &file, &server.url()])
    }

    fn line<'o>(&self, out: &'o RunOutput, prefix: &str) -> &'o str {
        let found = out.lines_starting(prefix);
        assert_eq!(found.len(), 1, "{:?} {prefix}: {}", self.user, out.dump());
        found[0]
    }

    /// Everything `a` was given reached it, through every path.
    fn assert_granted(&self, out: &RunOutput, page: &str) {
        let who = self.user;
        assert_eq!(out.status, Some(0), "{who:?}: {}", out.dump());
        let expect = [
            format!("ENVGET {}", self.passed),
            format!("HELPER {}", self.data),
            format!("HELPERCAT {}", self.data),
            format!("CHILDENV {}", self.passed),
            format!("PRINTENV {}", self.passed),
            format!("CAT {}", self.data),
            format!("CURL {page}"),
            "PROBE 0".to_string(),
            format!("FSREAD {}", self.data),
        ];
        let uid = match who {
            User::Root => nix::unistd::geteuid().as_raw(),
            User::Nobody => 65534,
        };
        assert_eq!(self.line(out, "UID "), format!("UID {uid}"), "{who:?}");
        for line in expect {
            let prefix = line.split(' ').next().unwrap();
            assert_eq!(self.line(out, &format!("{prefix} ")), line, "{who:?}");
        }
    }

    /// Nothing `a` was given reached `b`, and `b` was told why.
    fn assert_refused(&self, out: &RunOutput, page: &str) {
        let who = self.user;
        for (prefix, line) in [
            ("ENVGET", "ENVGET null"),
            ("HELPER ", "HELPER REFUSED MGS2001"),
            ("HELPERCAT", "HELPERCAT "),
            ("CHILDENV", "CHILDENV unset"),
            ("PRINTENV", "PRINTENV "),
            ("CAT", "CAT "),
            ("CURL", "CURL "),
        ] {
            assert_eq!(self.line(out, prefix), line, "{who:?}: {}", out.dump());
        }
        // The spell ran to its last line, which the gate refused.
        assert!(out.stdout.contains("RUNNING"), "{who:?}: {}", out.dump());
        assert!(!out.stdout.contains("FSREAD"), "{who:?}: {}", out.dump());
        assert_ne!(out.status, Some(0), "{who:?}: {}", out.dump());
        let file = self.file.display().to_string();
        assert!(
            out.stderr.contains("error[MGS2001]")
                && out.stderr.contains("b.buzz:13:")
                && out.stderr.contains("spells: b:")
                && !out.stderr.contains("spells: a:"),
            "{who:?}: {}",
            out.dump()
        );
        // The children's reads failed in the kernel, and were explained.
        assert!(
            out.stderr
                .contains(&format!("the child's failure on `{file}` is the sandbox")),
            "{who:?}: {}",
            out.dump()
        );
        for (what, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            for secret in [&self.data, &self.passed] {
                assert!(
                    !text.contains(secret.as_str()),
                    "{who:?}: {secret} in b's {what}: {}",
                    out.dump()
                );
            }
            assert!(!text.contains(page), "{who:?}: the page in b's {what}");
        }
    }
}

#[test]
fn spell_b_gets_neither_the_host_nor_the_directory_nor_the_variable_that_a_gets() {
    let page = unique("served-page");
    let server = Server::start(page.clone());
    for user in users() {
        let w = World::new(user);
        // Control: with the sandbox off, `b` reaches all of it.
        w.h.write_config("sandbox:\n  enabled: false\n");
        let off = w.run("b", &server);
        assert_eq!(off.status, Some(0), "{user:?} control: {}", off.dump());
        assert!(
            off.stdout.contains(&format!("CAT {}", w.data)),
            "{}",
            off.dump()
        );
        assert!(
            off.stdout.contains(&format!("CURL {page}")),
            "{}",
            off.dump()
        );
        assert!(
            off.stdout.contains(&format!("ENVGET {}", w.passed)),
            "{}",
            off.dump()
        );

        // Workspace `network: deny`: `b`'s child finds no route at all.
        w.configure("deny", "ro");
        let before = server.hits();
        let a = w.run("a", &server);
        w.assert_granted(&a, &page);
        assert_eq!(server.hits(), before + 1, "{user:?}: {}", a.dump());
        let b = w.run("b", &server);
        w.assert_refused(&b, &page);
        assert_eq!(server.hits(), before + 1, "{user:?}: b reached the server");

        // A workspace `hosts` list (another host): `a`'s list adds to it,
        // `b` keeps it alone, and the proxy refuses `b` with MGS2011.
        w.configure("{hosts: [\"127.0.0.1:1\"]}", "ro");
        let before = server.hits();
        let a = w.run("a", &server);
        w.assert_granted(&a, &page);
        let b = w.run("b", &server);
        w.assert_refused(&b, &page);
        assert!(
            b.stderr.contains(&format!(
                "warning[MGS2011]: connection to `localhost:{}`",
                server.0.port
            )),
            "{user:?}: {}",
            b.dump()
        );
        assert_eq!(server.hits(), before + 1, "{user:?}: b reached the server");
    }
}

#[test]
fn widening_a_is_mgs2010_for_a_only_and_b_still_runs() {
    let server = Server::start(unique("served-page"));
    for user in users() {
        let w = World::new(user);
        let lock = w.magus(&["sandbox", "lock"]);
        assert_eq!(lock.status, Some(0), "{user:?}: {}", lock.dump());
        // Control: as locked, `a` runs.
        let a = w.run("a", &server);
        assert_eq!(a.status, Some(0), "{user:?}: {}", a.dump());

        w.configure("deny", "rw");
        let a = w.run("a", &server);
        assert_eq!(a.status, Some(125), "{user:?}: {}", a.dump());
        assert!(a.stdout.is_empty(), "{user:?}: {}", a.dump());
        let widened = format!("widened: ~ allow {}: ro → rw", w.data_dir.display());
        assert!(
            a.stderr.contains("error[MGS2010]")
                && a.stderr.contains("spell `a`")
                && a.stderr.contains("spells: a:")
                && !a.stderr.contains("spell `b`")
                && a.stderr.contains(&widened),
            "{user:?}: {}",
            a.dump()
        );
        let b = w.run("b", &server);
        assert!(!b.stderr.contains("MGS2010"), "{user:?}: {}", b.dump());
        assert!(b.stdout.contains("ENVGET null"), "{user:?}: {}", b.dump());
        assert!(b.stdout.contains("RUNNING"), "{user:?}: {}", b.dump());

        let check = w.magus(&["sandbox", "check", "a"]);
        let grant = check
            .stdout
            .lines()
            .find(|l| l.contains(&w.data_dir.display().to_string()) && l.starts_with("  rw "))
            .unwrap_or_else(|| panic!("{user:?}: no grant line: {}", check.dump()));
        assert!(grant.ends_with("spells: a:"), "{user:?}: {grant}");
        let check_b = w.magus(&["sandbox", "check", "b"]);
        assert_eq!(check_b.status, Some(0), "{user:?}: {}", check_b.dump());
        assert!(
            !check_b.stdout.contains(&w.data_dir.display().to_string()),
            "{user:?}: {}",
            check_b.dump()
        );
    }
}

#[test]
fn a_bad_spells_section_is_a_located_error_and_nothing_runs() {
    let server = Server::start(unique("served-page"));
    for user in users() {
        let w = World::new(user);
        let good = config("deny", &w.data_dir, "ro");
        // Control: the good section runs.
        let a = w.run("a", &server);
        assert_eq!(a.status, Some(0), "{user:?}: {}", a.dump());
        // `b:` is on line 12, its value at column 6.
        let cases = [
            ("  bb: {}", "magus.yaml:12:3", "did you mean `b`?"),
            (
                "  b: {enabled: false}",
                "magus.yaml:12:",
                "cannot turn the sandbox on or off",
            ),
        ];
        for (line, at, says) in cases {
            let bad = good.replace("  b: {}", line);
            assert_ne!(bad, good);
            w.h.write_config(&bad);
            for spell in ["a", "b"] {
                let out = w.run(spell, &server);
                assert_eq!(out.status, Some(125), "{user:?} {line}: {}", out.dump());
                assert!(out.stdout.is_empty(), "{user:?} {line}: {}", out.dump());
                assert!(
                    out.stderr.contains("error[MGS3006]")
                        && out.stderr.contains(at)
                        && out.stderr.contains(says),
                    "{user:?} {line}: {}",
                    out.dump()
                );
            }
        }
    }
}

#[test]
fn magus_test_runs_each_spells_tests_under_its_own_policy() {
    for user in users() {
        let w = World::new(user);
        let out = w.magus(&["test"]);
        // Each spell passes exactly the test its policy makes true, so
        // each of the four tests is also the others' control.
        for (result, test) in [
            ("ok   spells/a.buzz", "the data is readable"),
            ("FAIL spells/a.buzz", "the data is refused"),
            ("FAIL spells/b.buzz", "the data is readable"),
            ("ok   spells/b.buzz", "the data is refused"),
        ] {
            assert!(
                out.stdout.contains(&format!("{result}: {test}")),
                "{user:?}: {result}: {test}: {}",
                out.dump()
            );
        }
        assert_eq!(out.status, Some(1), "{user:?}: {}", out.dump());
        assert!(!out.stdout.contains(&w.data), "{user:?}: {}", out.dump());
    }
}

#[test]
fn magus_check_finds_b_s_literal_read_under_b_s_policy_only() {
    let server = Server::start(unique("served-page"));
    for user in users() {
        let w = World::new(user);
        // The same literal read, outside any `try`, in both spells (line 5).
        let source = format!(
            "import \"std\";\nimport \"fs\";\nfun main(args: [str]) > int {{\n    std.print(\"BEFORE\");\n    std.print(\"READ {{fs.read(\"{}\")}}\");\n    return 0;\n}}\n",
            w.file.display()
        );
        w.h.write_spell("a", &source);
        w.h.write_spell("b", &source);
        let check = w.magus(&["check"]);
        assert_eq!(check.status, Some(2), "{user:?}: {}", check.dump());
        assert_eq!(
            check.stderr.matches("error[MGS2001]").count(),
            1,
            "{user:?}: {}",
            check.dump()
        );
        assert!(
            check.stderr.contains("spells/b.buzz:5:")
                && !check.stderr.contains("spells/a.buzz")
                && check.stderr.contains("spells: b:"),
            "{user:?}: {}",
            check.dump()
        );
        // Control: `a` runs and reads; `b` does not start.
        let a = w.run("a", &server);
        assert_eq!(a.status, Some(0), "{user:?}: {}", a.dump());
        assert!(
            a.stdout.contains(&format!("READ {}", w.data)),
            "{user:?}: {}",
            a.dump()
        );
        let b = w.run("b", &server);
        assert_ne!(b.status, Some(0), "{user:?}: {}", b.dump());
        assert!(b.stdout.is_empty(), "{user:?}: {}", b.dump());
        assert!(
            b.stderr.contains("error[MGS2001]") && b.stderr.contains("nothing ran"),
            "{user:?}: {}",
            b.dump()
        );
        assert!(!b.stderr.contains(&w.data), "{user:?}: {}", b.dump());
    }
}

/// Spell `b` tries to plant code in `spells/a.buzz`, which runs later
/// under `a`'s wider policy: through `fs.write` and through a child.
const PLANTER: &str = r#"import "buzz:std";
import "fs";
import "sh";
fun main(args: [str]) > void {
    try {
        fs.write("spells/a.buzz", args[0]);
        std\print("FSWRITE planted");
    } catch {
        std\print("FSWRITE refused");
    }
    _ = sh.run(["sh", "-c", "printf '%s' \"$0\" >> spells/a.buzz", args[0]]);
}
"#;

#[test]
fn spell_b_cannot_plant_code_in_a_spell_that_runs_later_with_more() {
    use support::runas::Kernel;
    let planted = unique("// planted-by-b");
    for user in users() {
        for kernel in [Kernel::AsIs, Kernel::NoUserNamespaces] {
            let w = World::new(user);
            w.h.write_spell("b", PLANTER);
            let a_file = w.h.ws_path("spells/a.buzz");
            let run_b = || w.run_under(kernel, &["run", "b", &planted]);
            let out = run_b();
            let who = format!("{user:?} {kernel:?}");
            assert!(
                out.stdout.contains("FSWRITE refused"),
                "{who}: {}",
                out.dump()
            );
            assert!(out.stderr.contains("MGS2002"), "{who}: {}", out.dump());
            let after = std::fs::read_to_string(&a_file).unwrap();
            assert_eq!(after, SPELL, "{who}: spells/a.buzz changed: {}", out.dump());
            // Control: with the sandbox off, both plant.
            w.h.write_config("sandbox:\n  enabled: false\n");
            let off = run_b();
            assert!(
                off.stdout.contains("FSWRITE planted"),
                "{who}: {}",
                off.dump()
            );
            let after = std::fs::read_to_string(&a_file).unwrap();
            assert_eq!(after.matches(&planted).count(), 2, "{who} control: {after}");
        }
    }
}

/// Spell `b`'s child rewrites, in place, `spells/lib/helper.buzz`, which
/// `a` imports: the next run of `a` would run `b`'s code under `a`'s
/// wider policy. Changing a file's contents changes no directory, so a
/// sweep that compared only the entries directly in `spells/` missed it
/// where nothing held `spells/` read-only (no jail).
const LIB_PLANTER: &str = r#"import "sh";
fun main(args: [str]) > void {
    _ = sh.run(["sh", "-c", "printf '%s\n' \"$0\" >> spells/lib/helper.buzz", args[0]]);
}
"#;

#[test]
fn spell_b_cannot_plant_code_in_a_file_that_a_imports_from_spells() {
    use support::runas::Kernel;
    let planted = unique("// planted-by-b");
    for user in users() {
        let kernels = match user {
            User::Root => [Kernel::AsIs, Kernel::NoNamespaces],
            User::Nobody => [Kernel::AsIs, Kernel::NoUserNamespaces],
        };
        for kernel in kernels {
            let w = World::new(user);
            w.h.write_spell("b", LIB_PLANTER);
            let helper = w.h.ws_path("spells/lib/helper.buzz");
            let run_b = || w.run_under(kernel, &["run", "b", &planted]);
            let who = format!("{user:?} {kernel:?}");
            let out = run_b();
            let after = std::fs::read_to_string(&helper).unwrap_or_default();
            assert_eq!(after, HELPER, "{who}: helper.buzz changed: {}", out.dump());
            // Control: with the sandbox off, the child plants.
            w.h.write_config("sandbox:\n  enabled: false\n");
            let off = run_b();
            let after = std::fs::read_to_string(&helper).unwrap();
            assert!(
                after.contains(&planted),
                "{who} control: {after}\n{}",
                off.dump()
            );
        }
    }
}
