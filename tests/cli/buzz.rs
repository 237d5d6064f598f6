//! The Buzz 0.6 features that need the real `magus` binary: `magus test`
//! (per-test lines, the closing `N passed, N failed`, the exit status, the
//! sandbox on as for `run`), imports of the workspace's own files through
//! the gate (with cycles reported), upstream's `buzz:io` and `buzz:os`
//! denied like `fs.*` and `sh.*`, upstream's `buzz:test` `Tester` with its
//! generic assertions, and the call depth upstream's
//! `ackermann 3 9` needs.

use crate::support::{capture, Harness, RunOutput};

fn magus_test(h: &Harness, spells: &[&str]) -> RunOutput {
    let mut cmd = h.command();
    cmd.arg("--workspace")
        .arg(h.ws_path(""))
        .arg("test")
        .args(spells);
    capture(&mut cmd)
}

const TESTS: &str = r#"import "buzz:std";

fun double(n: int) > int => n * 2;

test "doubles" {
    std\assert(double(2) == 4, message: "two twice");
}

test "fails here" {
    std\assert(double(2) == 5, message: "not five");
}

test "keeps going" {
    std\assert(true);
}
"#;

#[test]
fn magus_test_reports_each_test_and_the_total() {
    let h = Harness::new();
    h.write_spell("checks", TESTS);
    let out = magus_test(&h, &["checks"]);
    assert_eq!(out.status, Some(1), "{}", out.dump());
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("ok ") && l.ends_with(": doubles")),
        "{}",
        out.dump()
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("ok ") && l.ends_with(": keeps going")),
        "{}",
        out.dump()
    );
    let failed = lines
        .iter()
        .find(|l| l.starts_with("FAIL ") && l.contains(": fails here: "))
        .unwrap_or_else(|| panic!("no failure line\n{}", out.dump()));
    assert!(failed.contains("checks.buzz:10:5: "), "{failed}");
    assert!(failed.contains("assertion failed: not five"), "{failed}");
    assert_eq!(lines.last(), Some(&"2 passed, 1 failed"), "{}", out.dump());
}

#[test]
fn magus_test_with_no_argument_runs_every_spell() {
    let h = Harness::new();
    h.write_spell(
        "a",
        "import \"buzz:std\";\ntest \"a1\" { std\\assert(true); }\n",
    );
    h.write_spell(
        "b",
        "import \"buzz:std\";\ntest \"b1\" { }\ntest \"b2\" { }\n",
    );
    let out = magus_test(&h, &[]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert_eq!(
        out.stdout.lines().last(),
        Some("3 passed, 0 failed"),
        "{}",
        out.dump()
    );
}

#[test]
fn magus_test_runs_in_the_sandbox() {
    let h = Harness::new();
    let secret = h.home_path(".ssh/id_rsa");
    let spell = format!(
        "import \"buzz:std\";\nimport \"fs\";\ntest \"reads a secret\" {{ std\\print(fs\\read(\"{}\")); }}\n",
        secret.display()
    );
    h.write_spell("snoop", &spell);
    let out = magus_test(&h, &["snoop"]);
    assert_eq!(out.status, Some(1), "{}", out.dump());
    assert!(
        out.stdout.contains("FAIL") && out.stderr.contains("MGS2001"),
        "{}",
        out.dump()
    );
    assert_eq!(out.stdout.lines().last(), Some("0 passed, 1 failed"));
    h.assert_no_leak(&out);
}

#[test]
fn control_magus_test_off_the_sandbox_reads_the_file() {
    let h = Harness::with_config("sandbox:\n  enabled: false\n");
    std::fs::write(h.home_path("plain.txt"), "plain-bytes").unwrap();
    let spell = format!(
        "import \"buzz:std\";\nimport \"fs\";\ntest \"reads\" {{ std\\print(fs\\read(\"{}\")); }}\n",
        h.home_path("plain.txt").display()
    );
    h.write_spell("reader", &spell);
    let out = magus_test(&h, &["reader"]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert!(out.stdout.contains("plain-bytes"), "{}", out.dump());
}

const TESTER: &str = r#"import "buzz:std";
import "buzz:test" as _;

test "first" {
    final t = Tester.init(
        afterEach: fun (t: Tester) {
            std\print("after {t.asserts.len()}");
        },
    );
    t.it("types and values", fn: fun () {
        t.assertOfType::<int>(12, message: "an int");
        t.assertEqual(12, expected: 12);
        t.assertThrows::<str>(fun () !> str { throw "no"; });
        t.assertOfType::<MARK>(12, message: "must be a MARK");
    });
    t.it("lists", fn: fun () {
        t.assertAreEqual([1, 1]);
        t.assertAreNotEqual([1, 2, 1]);
    });
    t.summary();
}

test "second" {
    std\print("second ran");
}
"#;

#[test]
fn buzz_test_tester_reports_its_tests_and_binds_generic_types() {
    let h = Harness::new();
    h.write_spell("tester", &TESTER.replace("MARK", "int"));
    let out = magus_test(&h, &["tester"]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    let lines: Vec<&str> = out.stdout.lines().collect();
    for want in [
        "▶ Test: types and values",
        "after 4",
        "▶ Test: lists",
        "after 6",
        "..",
        "second ran",
        "2 passed, 0 failed",
    ] {
        assert!(lines.contains(&want), "no `{want}`\n{}", out.dump());
    }
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("2 successes, 0 failures in ")),
        "{}",
        out.dump()
    );
    assert!(!out.stderr.contains("Assert failed"), "{}", out.dump());
}

#[test]
fn buzz_test_a_failed_assertion_fails_its_test_and_stops_the_run() {
    let h = Harness::new();
    h.write_spell("tester", &TESTER.replace("MARK", "str"));
    let out = magus_test(&h, &["tester"]);
    assert_eq!(out.status, Some(1), "{}", out.dump());
    assert!(
        out.stderr
            .contains("  Assert failed: must be a str\n    `12` type is `<int>`, not `<str>`\n"),
        "{}",
        out.dump()
    );
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines.contains(&"x."), "{}", out.dump());
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("1 successes, 1 failures in ")),
        "{}",
        out.dump()
    );
    let failed = lines
        .iter()
        .find(|l| l.starts_with("FAIL ") && l.contains(": first: "))
        .unwrap_or_else(|| panic!("no failure line\n{}", out.dump()));
    assert!(
        failed.ends_with(
            "tester.buzz:4:1: test `first` called exit(1); the tests after it did not run"
        ),
        "{failed}"
    );
    assert!(!out.stdout.contains("second ran"), "{}", out.dump());
    assert_eq!(lines.last(), Some(&"0 passed, 1 failed"), "{}", out.dump());
}

#[test]
fn a_spell_imports_its_own_files() {
    let h = Harness::new();
    std::fs::create_dir_all(h.ws_path("spells/lib")).unwrap();
    std::fs::write(
        h.ws_path("spells/lib/common.buzz"),
        "namespace common;\nexport fun greet(name: str) > str => \"hello {name}\";\nfun hidden() > void {}\n",
    )
    .unwrap();
    h.write_spell(
        "main",
        "import \"buzz:std\";\nimport \"lib/common\";\nimport greet from \"lib/common\";\nfun main(args: [str]) > void {\n    std\\print(common\\greet(\"a\"));\n    std\\print(greet(\"b\"));\n}\n",
    );
    let out = h.run("main", &[]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert_eq!(out.stdout, "hello a\nhello b\n");
}

const COMMON: &str = "namespace common;

export fun twice(n: int, limit: int = 5) > int {
    if (n > limit) {
        throw \"too big\";
    }
    return n * 2;
}
";

#[test]
fn errors_across_an_import_point_at_the_right_file() {
    let h = Harness::new();
    std::fs::create_dir_all(h.ws_path("spells/lib")).unwrap();
    std::fs::write(h.ws_path("spells/lib/common.buzz"), COMMON).unwrap();
    // A throw inside the imported file, uncaught: located where it is thrown.
    h.write_spell(
        "thrower",
        "import \"buzz:std\";\nimport \"lib/common\";\n\nfun main(args: [str]) > void {\n    std\\print(\"{common\\twice(2)}\");\n    std\\print(\"{common\\twice(9)}\");\n}\n",
    );
    let out = h.run("thrower", &[]);
    assert_eq!(out.status, Some(1), "{}", out.dump());
    assert_eq!(out.stdout, "4\n", "{}", out.dump());
    assert!(
        out.stderr.contains("spells/lib/common.buzz:5:9\n")
            && out.stderr.contains("throw \"too big\""),
        "{}",
        out.dump()
    );
    // A wrong argument: located at the call, in the caller's file.
    h.write_spell(
        "caller",
        "import \"buzz:std\";\nimport \"lib/common\";\n\nfun main(args: [str]) > void {\n    final bad: any = \"x\";\n    std\\print(\"{common\\twice(bad)}\");\n}\n",
    );
    let out = h.run("caller", &[]);
    assert_eq!(out.status, Some(1), "{}", out.dump());
    assert!(
        out.stderr
            .contains("parameter `n` of `twice` expects int, got str")
            && out.stderr.contains("spells/caller.buzz:6:17\n"),
        "{}",
        out.dump()
    );
}

#[test]
fn an_import_cycle_is_reported() {
    let h = Harness::new();
    std::fs::write(
        h.ws_path("spells/one.buzz"),
        "import \"./two\";\nfun f() > void {}\n",
    )
    .unwrap();
    std::fs::write(
        h.ws_path("spells/two.buzz"),
        "import \"./one\";\nfun g() > void {}\n",
    )
    .unwrap();
    h.write_spell(
        "start",
        "import \"./one\";\nfun main(args: [str]) > void {}\n",
    );
    let out = h.run("start", &[]);
    // Found by the check before the run: the spell cannot run.
    assert_eq!(out.status, Some(126), "{}", out.dump());
    assert!(out.stderr.contains("import cycle:"), "{}", out.dump());
    assert!(
        out.stderr.contains("one.buzz -> ") && out.stderr.contains("two.buzz -> "),
        "{}",
        out.dump()
    );
    assert!(out.stderr.contains("two.buzz:1:1"), "{}", out.dump());
}

#[test]
fn an_import_outside_the_grants_is_denied() {
    let h = Harness::new();
    std::fs::write(h.home_path("evil.buzz"), "fun f() > void {}\n").unwrap();
    let spell = format!(
        "import \"{}\";\nfun main(args: [str]) > void {{}}\n",
        h.home_path("evil").display()
    );
    h.write_spell("importer", &spell);
    let out = h.run("importer", &[]);
    assert_eq!(out.status, Some(124), "{}", out.dump());
    assert!(out.stderr.contains("MGS2001"), "{}", out.dump());
}

#[test]
fn upstream_io_and_os_are_denied_like_fs_and_sh() {
    let h = Harness::new();
    let secret = h.home_path(".ssh/id_rsa");
    let tool = h.home_path("tool");
    std::fs::write(&tool, "#!/bin/sh\necho ran\n").unwrap();
    std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let spell = format!(
        r#"import "buzz:std";
import "buzz:io";
import "buzz:os";

fun main(args: [str]) > void {{
    try {{
        final f = io\File.open("{secret}", mode: .read);
        std\print("LEAK {{f.readAll()}}");
    }} catch (e: SandboxError) {{
        std\print("io {{e.code}}");
    }}
    try {{
        os\execute(["{tool}"]);
    }} catch (e: SandboxError) {{
        std\print("os {{e.code}}");
    }}
    final out = io\File.open("out.txt", mode: .write);
    out.write("kept");
    out.close();
    std\print(io\File.open("out.txt", mode: .read).readAll());
}}
"#,
        secret = secret.display(),
        tool = tool.display()
    );
    h.write_spell("upstream", &spell);
    let out = h.run("upstream", &[]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert_eq!(
        out.stdout,
        "io MGS2001\nos MGS2007\nkept\n",
        "{}",
        out.dump()
    );
    h.assert_no_leak(&out);
}

const ACKERMANN: &str = r#"import "buzz:std";

fun ack(m: int, n: int) > int {
    if (m == 0) {
        return n + 1;
    }
    if (n == 0) {
        return ack(m - 1, n: 1);
    }
    return ack(m - 1, n: ack(m, n: n - 1));
}

fun main(args: [str]) > void {
    final m = std\parseInt(args[0])!;
    final n = std\parseInt(args[1])!;
    std\print("{ack(m, n: n)}");
}
"#;

#[test]
fn deep_recursion_runs_to_ten_thousand_calls_then_stops_cleanly() {
    let h = Harness::new();
    h.write_spell("ack", ACKERMANN);
    let out = h.run("ack", &["2", "2000"]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert_eq!(out.stdout, "4003\n");
    h.write_spell(
        "forever",
        "fun down(n: int) > int => down(n + 1);\nfun main(args: [str]) > void { down(0); }\n",
    );
    let out = h.run("forever", &[]);
    assert_eq!(out.status, Some(1), "{}", out.dump());
    assert!(
        out.stderr.contains("more than 10000 nested calls"),
        "{}",
        out.dump()
    );
    assert!(out.stderr.contains("forever.buzz:1:"), "{}", out.dump());
}

/// `gc\allocated()` does not grow across `gc\collect()` when freed
/// objects wait for their `collect` methods (upstream's own check). Run
/// in a process of its own: the heap count is the process's, which the
/// other tests of a test binary move.
#[test]
fn allocated_does_not_grow_across_collect() {
    let h = Harness::new();
    h.write_spell(
        "gc",
        r#"import "buzz:std";
import "buzz:gc";

var called = 0;

object Temp {
    n: int = 0,

    fun collect() > void {
        called = called + 1;
    }
}

fun main(args: [str]) > void {
    var i = 0;
    while (i < 1000) {
        _ = Temp{ n = i };
        i = i + 1;
    }
    final before = gc\allocated();
    gc\collect();
    final after = gc\allocated();
    std\print("{after <= before} {called}");
}
"#,
    );
    let out = h.run("gc", &[]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert_eq!(out.stdout, "true 1000\n", "{}", out.dump());
}
