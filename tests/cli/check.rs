//! `magus check` and the check `magus run` and `magus test` make first,
//! through the real binary: a spell with a type error on line 9 writes
//! nothing on line 3 (with a control run, the error fixed, that writes),
//! exit statuses 0 and 2, JSON lines with codes and locations, and the
//! explain pages of the checker's codes.

use crate::support::{capture, Harness, RunOutput};
use serde_json::Value;

/// Line 3 writes `out.txt`; line 9 is `bad` (a type error unless fixed).
fn writer(bad: &str) -> String {
    format!(
        "import \"fs\";\nfun main(args: [str]) > void {{\n    fs\\write(\"out.txt\", \"written\");\n    var n = 0;\n    while (n < 3) {{\n        n = n + 1;\n    }}\n    final total: int = n;\n    {bad}\n}}\n"
    )
}

fn magus(h: &Harness, args: &[&str]) -> RunOutput {
    let mut cmd = h.command();
    cmd.arg("--workspace").arg(h.ws_path("")).args(args);
    capture(&mut cmd)
}

#[test]
fn a_type_error_on_line_nine_stops_the_write_on_line_three() {
    let h = Harness::new();
    let out_file = h.ws_path("out.txt");
    // Control: the same spell, fixed, writes the file.
    h.write_spell("build", &writer("final label: str = \"{total}\";"));
    let ok = h.run("build", &[]);
    assert_eq!(ok.status, Some(0), "{}", ok.dump());
    assert!(out_file.exists(), "the control run wrote nothing");
    std::fs::remove_file(&out_file).unwrap();

    h.write_spell("build", &writer("final label: str = total;"));
    for args in [&["run", "build"][..], &["test", "build"][..]] {
        let out = magus(&h, args);
        assert_eq!(out.status, Some(126), "{args:?}: {}", out.dump());
        assert!(out.stderr.contains("error[MGS1006]"), "{}", out.dump());
        assert!(out.stderr.contains("build.buzz:9:"), "{}", out.dump());
        assert!(!out_file.exists(), "{args:?}: line 3 ran before the check");
    }
}

#[test]
fn magus_check_exits_0_when_clean_and_2_on_errors() {
    let h = Harness::new();
    h.write_spell(
        "good",
        "import \"buzz:std\";\nfun main(args: [str]) > void {\n    std\\print(\"hi\");\n}\n",
    );
    h.write_spell(
        "typo",
        "import \"buzz:std\";\nfun main(args: [str]) > void {\n    std\\prnt(\"hi\");\n}\n",
    );
    let good = magus(&h, &["check", "good"]);
    assert_eq!(good.status, Some(0), "{}", good.dump());
    assert_eq!(
        good.stdout,
        "checked 1 spell, no problems\n",
        "{}",
        good.dump()
    );
    assert!(good.stderr.is_empty(), "{}", good.dump());
    let bad = magus(&h, &["check", "typo"]);
    assert_eq!(bad.status, Some(2), "{}", bad.dump());
    assert!(
        bad.stderr.contains("did you mean `print`?"),
        "{}",
        bad.dump()
    );
    // Every spell when none is named.
    let all = magus(&h, &["check"]);
    assert_eq!(all.status, Some(2), "{}", all.dump());
    assert!(all.stderr.contains("typo.buzz:3:9"), "{}", all.dump());
}

#[test]
fn magus_check_runs_nothing() {
    let h = Harness::new();
    h.write_spell("writes", &writer("final label: str = \"{total}\";"));
    let out = magus(&h, &["check", "writes"]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert!(!h.ws_path("out.txt").exists());
}

#[test]
fn magus_check_speaks_json_one_object_per_line() {
    let h = Harness::new();
    h.write_spell(
        "two",
        "fun main(args: [str]) > void {\n    final n = 1;\n    n = 2;\n    _ = \"a\" + n;\n}\n",
    );
    let out = magus(&h, &["--message-format", "json", "check", "two"]);
    assert_eq!(out.status, Some(2), "{}", out.dump());
    let objects: Vec<Value> = out
        .stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let codes: Vec<(&str, u64)> = objects
        .iter()
        .map(|o| {
            (
                o["code"].as_str().unwrap(),
                o["spell"]["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(codes, [("MGS1004", 3), ("MGS1006", 4)]);
    assert_eq!(objects[0]["explain"], "magus explain MGS1004");
}

#[test]
fn every_checker_code_has_an_explain_page() {
    let h = Harness::new();
    for code in [
        "MGS1001", "MGS1002", "MGS1003", "MGS1004", "MGS1005", "MGS1006", "MGS1007", "MGS1008",
        "MGS1009", "MGS1010", "MGS1011", "MGS1012", "MGS1013", "MGS1014", "MGS1015", "MGS1016",
        "MGS1017", "MGS1018", "MGS1019", "MGS1020", "MGS1021", "MGS1022", "MGS1023", "MGS1024",
        "MGS1025", "MGS1026",
    ] {
        let out = magus(&h, &["explain", code]);
        assert_eq!(out.status, Some(0), "{code}: {}", out.dump());
        assert!(
            out.stdout.starts_with(&format!("# {code}")),
            "{}",
            out.dump()
        );
        assert!(out.stdout.contains("## How to fix it"), "{code}");
    }
}

#[test]
fn a_run_time_index_error_keeps_its_place_and_gains_a_code() {
    let h = Harness::new();
    h.write_spell(
        "index",
        "fun main(args: [str]) > void {\n    final xs = [1, 2];\n    _ = xs[5];\n}\n",
    );
    let out = h.run_with("index", &[], &["--message-format", "json"]);
    assert_eq!(out.status, Some(1), "{}", out.dump());
    let error: Value = out
        .stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|o| o["severity"] == "error")
        .unwrap_or_else(|| panic!("{}", out.dump()));
    assert_eq!(error["code"], "MGS1020");
    assert_eq!(error["spell"]["line"], 3);
}

/// A spell with a bad byte is refused at the line and column of that
/// byte (a fuzzed file once got only a byte offset), by `check` and by
/// `run`, and an import of such a file names the place too.
#[test]
fn a_spell_that_is_not_utf8_is_refused_at_its_line_and_column() {
    let h = Harness::new();
    std::fs::write(
        h.ws_path("spells/bad.buzz"),
        b"final a = 1;\nfinal b = \"x\xffy\";\n",
    )
    .unwrap();
    for args in [&["check", "bad"][..], &["run", "bad"][..]] {
        let out = magus(&h, args);
        assert_ne!(out.status, Some(0), "{args:?}: {}", out.dump());
        assert!(out.stderr.contains("is not valid UTF-8"), "{}", out.dump());
        assert!(out.stderr.contains("bad.buzz:2:13"), "{}", out.dump());
    }
    h.write_spell("imp", "import \"bad\";\nfun main(args: [str]) > void {}\n");
    let out = magus(&h, &["check", "imp"]);
    assert_eq!(out.status, Some(2), "{}", out.dump());
    assert!(
        out.stderr.contains("bad.buzz:2:13: not valid UTF-8"),
        "{}",
        out.dump()
    );
    assert!(out.stderr.contains("imp.buzz:1:1"), "{}", out.dump());
}
