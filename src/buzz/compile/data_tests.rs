//! The data paths of the compiled form (maps, built-in methods resolved
//! where a call is lowered, subscripts) against the walker: same output,
//! same error text and location.

use super::tests::both;

/// Maps of every kind of key, counted, overwritten, removed and grown past
/// several rehashes; built-in methods of strings, bytes, lists and maps.
const DATA: &str = r#"
import "std";

enum Color { red, green }

fun count(words: [str]) > {str: int} {
    final counts: mut {str: int} = mut {};
    foreach (w in words) {
        counts[w] = (counts[w] ?? 0) + 1;
    }
    return counts;
}

fun keys() > str {
    final m: mut {any: str} = mut {};
    m[1] = "int";
    m[1.0] = "double";
    m[true] = "bool";
    m[null] = "null";
    m["1"] = "str";
    m[Color.red] = "case";
    m[0..2] = "range";
    final l = [1];
    m[l] = "list";
    m[1] = "int again";
    var out = "";
    foreach (k, v in m) {
        out = out + "{v};";
    }
    return "{out} {m[1]} {m[1.0]} {m[true]} {m[null]} {m["1"]} {m[Color.red]} {m[Color.green] ?? "-"} {m[0..2]} {m[l]} {m[[1]] ?? "other list"} {m.size()}";
}

fun grow(n: int) > str {
    final m: mut {int: int} = mut {};
    final s: mut {str: int} = mut {};
    for (i: int = 0; i < n; i = i + 1) {
        m[i * 7919 % n] = i;
        s["k{i}"] = i;
    }
    var sum = 0;
    for (i: int = 0; i < n; i = i + 1) {
        sum = sum + (m[i] ?? -1000000) + (s["k{i}"] ?? -1000000);
    }
    _ = m.remove(3);
    _ = s.remove("k0");
    s["k0"] = -1;
    final ks = s.keys();
    return "{sum} {m.size()} {m[3] ?? -1} {s.size()} {ks[0]} {ks[ks.len() - 1]} {s["missing"] ?? -2}";
}

fun strings(seq: str, k: int) > str {
    var out = "";
    for (i: int = 0; i < seq.len(); i = i + k) {
        out = out + seq.sub(i, len: k) + "|";
    }
    final raw = "c3fc".bin();
    final parts = mut ["a"];
    parts.append("b");
    parts.append(seq.sub(2));
    return "{out} {seq.sub(-3, len: 2)} {seq.sub(100)}. {seq.sub(1, len: 100)} {seq.byte(1)} {seq.startsWith("ab")} {seq.startsWith("b")} {raw.len()} {raw.byte(1)} {raw.sub(1).len()} {parts.len()} {parts} {parts.sub(1, len: 1)}";
}

fun main() > void {
    final counts = count(["b", "a", "b", "c", "a", "b"]);
    std.print("{counts} {counts["b"]} {counts["z"] ?? 0}");
    std.print(keys());
    std.print(grow(1000));
    std.print(strings("abcdefg", k: 3));
}
"#;

#[test]
fn maps_and_builtin_methods_give_the_walkers_results() {
    let (ending, names) = both("data", DATA);
    let text = String::from_utf8_lossy(&ending.output).to_string();
    assert_eq!(ending.result, Ok(0), "{text}");
    assert_eq!(names, ["count", "keys", "grow", "strings", "main"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "{b: 3, a: 2, c: 1} 3 0", "{text}");
    assert!(
        lines[1].starts_with("int again;double;bool;null;str;case;range;list; int again double"),
        "{text}"
    );
    assert_eq!(lines[2], "999000 999 -1 1000 k1 k0 -2", "{text}");
    assert!(lines[3].starts_with("abc|def|g| "), "{text}");
}

/// Each error inside a compiled function on a data path: the message and
/// location both paths must report.
const ERRORS: [(&str, &str, &str); 6] = [
    (
        "list_index",
        "fun f(l: [int], i: int) > int {\n    return l[i] + 1;\n}\nfun main() > void {\n    f([1, 2], i: 2);\n}\n",
        "2:13",
    ),
    (
        "missing_key",
        "fun f(m: {str: int}) > int {\n    final v = m[\"x\"];\n    return v!;\n}\nfun main() > void {\n    f({\"y\": 1});\n}\n",
        "3:13: runtime error: force unwrap",
    ),
    (
        "list_sub",
        "fun f(l: [int]) > [int] {\n    return l.sub(2, len: 5);\n}\nfun main() > void {\n    f([1, 2, 3]);\n}\n",
        "`sub(2, len: 5)` out of range for length 3",
    ),
    (
        "str_byte",
        "fun f(s: str) > int {\n    return s.byte(9);\n}\nfun main() > void {\n    f(\"ab\");\n}\n",
        "`byte(9)` out of range for a str of 2 bytes",
    ),
    (
        "str_starts",
        "fun f(s: str, n: any) > bool {\n    return s.startsWith(n);\n}\nfun main() > void {\n    f(\"ab\", n: 3);\n}\n",
        "`startsWith` argument 1 expected str, got int",
    ),
    (
        "no_method",
        "fun f(s: str) > int {\n    return s.size();\n}\nfun main() > void {\n    f(\"ab\");\n}\n",
        "str has no method `size`",
    ),
];

#[test]
fn errors_on_data_paths_are_the_walkers() {
    for (name, source, expected) in ERRORS {
        let (ending, names) = both(name, source);
        let err = ending.result.expect_err(name);
        assert!(err.contains(expected), "{name}: {err}");
        assert!(names.contains(&"f".to_string()), "{name}: {names:?}");
    }
}
