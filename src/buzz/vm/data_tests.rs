//! The data paths of the compiled form (maps, built-in methods resolved
//! where a call is lowered, subscripts): their output, and their errors'
//! text and location.

use super::tests::run_named;

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
fn maps_and_builtin_methods_give_their_results() {
    let (ending, names) = run_named("data", DATA);
    let text = String::from_utf8_lossy(&ending.output).to_string();
    assert_eq!(ending.result, Ok(0), "{text}");
    assert_eq!(names, ["count", "keys", "grow", "strings", "main"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "{b: 3, a: 2, c: 1} 3 0", "{text}");
    assert_eq!(
        lines[1],
        "int again;double;bool;null;str;case;range;list; \
         int again double bool null str case - range list other list 8"
    );
    assert_eq!(lines[2], "999000 999 -1 1000 k1 k0 -2", "{text}");
    assert_eq!(
        lines[3],
        "abc|def|g| ab . bcdefg 98 true false 2 252 1 3 [a, b, cdefg] [b]"
    );
    assert_eq!(lines.len(), 4, "{text}");
}

/// Each error inside a compiled function on a data path: the message and
/// location it must report.
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
fn errors_on_data_paths_are_located() {
    for (name, source, expected) in ERRORS {
        let (ending, names) = run_named(name, source);
        let err = ending.result.expect_err(name);
        assert!(err.contains(expected), "{name}: {err}");
        assert!(names.contains(&"f".to_string()), "{name}: {names:?}");
    }
}

/// Methods that only read a field, read an item of one or store an item
/// of one, called where every check passes and where one fails.
const ACCESSORS: &str = r#"
import "std";

object Bytes {
    items: mut [int],
    name: str = "bytes",
    table: {int: str} = {1: "one"},

    fun at(index: int) > int {
        return this.items[index];
    }

    fun setAt(index: int, value: int) > void {
        this.items[index] = value;
    }

    fun label() > str {
        return this.name;
    }

    fun word(key: int) > str? {
        return this.table[key];
    }
}

object Other {
    fun at(index: int) > int {
        return index * 100;
    }
}

fun pick(b: Bytes, o: Other, n: int) > str {
    var sum = 0;
    for (i: int = 0; i < n; i = i + 1) {
        b.setAt(i % 4, value: b.at((i + 1) % 4) + i);
        sum = sum + b.at(i % 4) + o.at(i);
    }
    final maybe: Bytes? = null;
    return "{sum} {b.items} {b.label()} {b.word(1)} {b.word(2) ?? "none"} {maybe?.at(0) ?? -1}";
}

fun main() > void {
    final b = Bytes{ items = mut [1, 2, 3, 4] };
    std.print(pick(b, o: Other{}, n: 10));
}
"#;

#[test]
fn accessor_methods_give_the_calls_results() {
    let (ending, names) = run_named("accessors", ACCESSORS);
    let text = String::from_utf8_lossy(&ending.output).to_string();
    assert_eq!(ending.result, Ok(0), "{text}");
    assert_eq!(names, ["pick", "main"]);
    assert_eq!(text, "4601 [19, 20, 11, 15] bytes one none -1\n");
}

/// An accessor whose plain case does not hold: the ordinary call runs
/// and fails where it always failed (inside the method, in its file).
const ACCESSOR_ERRORS: [(&str, &str, &str); 3] = [
    (
        "accessor_range",
        "object B {\n    items: mut [int],\n    fun at(i: int) > int {\n        return this.items[i];\n    }\n}\nfun f(b: B) > int {\n    return b.at(7);\n}\nfun main() > void {\n    f(B{ items = mut [1] });\n}\n",
        "4:26: uncaught error: Out of bound list access.",
    ),
    (
        "accessor_store_range",
        "object B {\n    items: mut [int],\n    fun setAt(i: int, v: int) > void {\n        this.items[i] = v;\n    }\n}\nfun f(b: B) > void {\n    b.setAt(-1, v: 3);\n}\nfun main() > void {\n    f(B{ items = mut [1] });\n}\n",
        "4:",
    ),
    (
        "accessor_param",
        "object B {\n    items: mut [int],\n    fun at(i: int) > int {\n        return this.items[i];\n    }\n}\nfun f(b: B, x: any) > int {\n    return b.at(x);\n}\nfun main() > void {\n    f(B{ items = mut [1] }, x: \"0\");\n}\n",
        "parameter `i` of `at` expects int, got str",
    ),
];

#[test]
fn accessor_errors_are_the_calls_errors() {
    for (name, source, expected) in ACCESSOR_ERRORS {
        let (ending, names) = run_named(name, source);
        let err = ending.result.expect_err(name);
        assert!(err.contains(expected), "{name}: {err}");
        assert!(names.contains(&"f".to_string()), "{name}: {names:?}");
    }
}

#[test]
fn field_and_item_readers_and_item_stores_are_accessors() {
    let program = crate::buzz::parse(std::path::Path::new("accessors.buzz"), ACCESSORS).unwrap();
    program.resolve();
    let mut found = Vec::new();
    for stmt in &program.statements {
        if let crate::buzz::syntax::ast::StmtKind::Object(object) = &stmt.kind {
            for method in &object.methods {
                let f = crate::buzz::lower::compiled(method).expect("compiles");
                let kind = match &f.accessor {
                    Some(crate::buzz::lower::accessor::Accessor::Get(..)) => "get",
                    Some(crate::buzz::lower::accessor::Accessor::GetItem(..)) => "item",
                    Some(crate::buzz::lower::accessor::Accessor::SetItem(..)) => "store",
                    None => "-",
                };
                found.push(format!("{}.{}: {kind}", object.name, method.name));
            }
        }
    }
    assert_eq!(
        found,
        [
            "Bytes.at: item",
            "Bytes.setAt: store",
            "Bytes.label: get",
            "Bytes.word: item",
            "Other.at: -"
        ]
    );
}

/// `local.field[i]` inside arithmetic and comparisons: read in place when
/// it is a number, else the general path and its errors.
const FIELD_ITEMS: &str = r#"
import "std";

object Table {
    probs: mut [double],
    counts: [int],
    names: {int: int},
}

fun scan(t: Table, r: double) > str {
    var found = -1;
    foreach (i in 0..t.probs.len()) {
        if (r < t.probs[i]) {
            found = i;
            break;
        }
    }
    final mixed = t.counts[1] * 2 + t.probs[0] - t.names[3] / 3;
    return "{found} {mixed} {t.counts[0] < t.probs[1]} {t.counts[2] == 3}";
}

fun main() > void {
    final t = Table{ probs = mut [0.25, 0.5, 1.0], counts = [1, 2, 3], names = {3: 9} };
    std.print(scan(t, r: 0.3));
    std.print(scan(t, r: 2.0));
}
"#;

#[test]
fn items_of_fields_in_arithmetic_give_the_general_results() {
    let (ending, names) = run_named("field_items", FIELD_ITEMS);
    let text = String::from_utf8_lossy(&ending.output).to_string();
    assert_eq!(ending.result, Ok(0), "{text}");
    assert_eq!(names, ["scan", "main"]);
    assert_eq!(text, "1 1.25 false true\n-1 1.25 false true\n");
    let source = "object T {\n    l: [int],\n}\nfun f(t: T) > int {\n    return t.l[5] + 1;\n}\nfun main() > void {\n    f(T{ l = [1] });\n}\n";
    let (ending, _) = run_named("field_item_range", source);
    let err = ending.result.expect_err("out of range");
    assert!(
        err.contains("5:15: uncaught error: Out of bound list access."),
        "{err}"
    );
}

#[test]
fn len_in_a_comparison_gives_the_general_results() {
    let source = r#"
import "std";
object Sized {
    n: int,
    fun len() > int {
        return this.n;
    }
}
fun lens(s: str, l: [int], m: {str: int}, o: Sized, r: any) > str {
    var i = 0;
    var out = "";
    while (i < s.len()) {
        i = i + 2;
    }
    out = out + "{i} {l.len() * 2 - 1} {i + m.len()} {o.len() + 1 < i}";
    return "{out} {r.len() - 1}";
}
fun main() > void {
    std.print(lens("héllo", l: [1, 2], m: {"a": 1}, o: Sized{ n = 3 }, r: [7]));
    std.print(lens("", l: [], m: {}, o: Sized{ n = -5 }, r: 3));
}
"#;
    let (ending, names) = run_named("lens", source);
    let text = String::from_utf8_lossy(&ending.output).to_string();
    assert_eq!(names, ["lens", "main"]);
    assert_eq!(text, "6 3 7 true 0\n");
    let err = ending.result.expect_err("an int has no `len`");
    assert!(
        err.contains("16:22: runtime error: int has no field `len`"),
        "{err}"
    );
}

/// One field site meeting objects of two declared types, whose fields lie
/// in other orders, and anonymous objects: each read and store finds the
/// object's own field (an instance holds only values, in its type's
/// order; a site remembers the type it met last).
#[test]
fn a_field_site_meeting_several_object_types_reads_and_stores_their_own_fields() {
    let source = r#"
import "std";
object A {
    x: int,
    y: int = 2,
}
object B {
    y: int = 20,
    x: int,
    z: str = "z",
}
fun read(v: any) > int {
    return v.x * 100 + v.y;
}
fun bump(v: any) > void {
    v.x = v.x + 1;
    v.y += 1;
}
fun main() > void {
    final items = [A{ x = 1 }, B{ x = 5 }, .{ y = 7, x = 9 }, A{ x = 3, y = 4 }, .{ x = 0, y = 0 }];
    var sum = 0;
    foreach (v in items) {
        bump(v);
        sum = sum + read(v);
    }
    std.print("{sum} {items}");
    final b: any = B{ x = 0 };
    std.print(b.z);
    final a: any = A{ x = 0 };
    std.print(a.z);
}
"#;
    let (ending, names) = run_named("field_sites", source);
    let text = String::from_utf8_lossy(&ending.output).to_string();
    assert_eq!(names, ["read", "bump", "main"]);
    assert_eq!(
        text,
        "2338 [A{x = 2, y = 3}, B{y = 21, x = 6, z = z}, obj{y = 8, x = 10}, \
         A{x = 4, y = 5}, obj{x = 1, y = 1}]\nz\n"
    );
    let err = ending.result.expect_err("`A` has no `z`");
    assert!(
        err.contains("30:17: runtime error: `A` has no field or method `z`"),
        "{err}"
    );
}

/// An instance's fields laid out once per site: given ones in any order,
/// optional ones without a default left null, defaults evaluated, a
/// static one skipped, a missing required one the located error.
#[test]
fn instances_get_given_null_and_default_fields_in_their_types_order() {
    let source = r#"
import "std";
object A {
    a: int?,
    b: mut [int]?,
    c: str? = "c",
    d: int = 4,
    static s: int = 1,
    e: [int]?,
}
object B {
    n: int,
}
fun main() > void {
    foreach (i in 0..2) {
        final x = A{};
        final y = A{ e = [i], a = 2, b = mut [3], c = null };
        std.print("{x} {y}");
    }
    std.print("{B{ n = 1 }}");
    std.print("{B{}}");
}
"#;
    let (ending, _) = run_named("layouts", source);
    let text = String::from_utf8_lossy(&ending.output).to_string();
    assert_eq!(
        text,
        "A{a = null, b = null, c = c, d = 4, e = null} A{a = 2, b = [3], c = null, d = 4, e = [0]}\n\
         A{a = null, b = null, c = c, d = 4, e = null} A{a = 2, b = [3], c = null, d = 4, e = [1]}\n\
         B{n = 1}\n"
    );
    let err = ending.result.expect_err("`n` is missing");
    assert!(err.contains("missing field `n`"), "{err}");
}

/// `local.append(x)` as a statement (`Op::Append`): pushed in place on a
/// list, an object's own `append` called, and a value with no `append`
/// refused where the call is written, as the general call does; a list
/// appended into another is the same list. (Checked against the build
/// before `Op::Append`, which printed the same and failed at the same
/// place.)
#[test]
fn append_as_a_statement_gives_the_general_results() {
    let source = r#"
import "std";
object Bag {
    items: mut [int],
    mut fun append(x: int) > void {
        this.items.append(x * 10);
    }
}
fun fill(l: mut [int], b: mut Bag, n: int) > str {
    l.append(n);
    l.append(7);
    b.append(n);
    final words: mut [str] = mut [];
    foreach (x in l) {
        words.append("{x}");
    }
    final nested: mut [[int]] = mut [];
    nested.append(l);
    l.append(8);
    return "{words.join(",")} {b.items.len()} {b.items[0]} {nested[0].len()} {l.len()}";
}
fun odd(r: any) > void {
    r.append(1);
}
fun main() > void {
    final b = mut Bag{ items = mut [] };
    std.print(fill(mut [1, 2], b: b, n: 5));
    std.print(fill(mut [], b: b, n: -1));
    odd(3);
}
"#;
    let (ending, names) = run_named("append", source);
    let text = String::from_utf8_lossy(&ending.output).to_string();
    assert_eq!(names, ["fill", "odd", "main"]);
    assert_eq!(text, "1,2,5,7 1 50 5 5\n-1,7 2 50 3 3\n");
    let err = ending.result.expect_err("an int has no `append`");
    assert!(
        err.contains("23:7: runtime error: int has no field `append`"),
        "{err}"
    );
}
