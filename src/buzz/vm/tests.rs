//! The compiled form run on whole programs: what each prints and how it
//! ends (status, or error message and location), and which of its
//! functions compiled.

use crate::buzz::program_tests::Captured;
use crate::buzz::syntax::ast::StmtKind;
use crate::buzz::{self, Interpreter};
use std::path::{Path, PathBuf};

/// How one run ended: output, then the status or the error's text.
#[derive(Debug, PartialEq)]
pub(super) struct Ending {
    pub(super) output: Vec<u8>,
    pub(super) result: Result<i32, String>,
}

/// Runs `source` (from `file`) on the interpreter's stack; also gives
/// which top-level functions compiled.
fn run(file: &Path, source: &str, args: Vec<String>) -> (Ending, Vec<String>) {
    let (file, source) = (file.to_path_buf(), source.to_string());
    buzz::stack::run_on_interpreter_stack(move || {
        let out = Captured::default();
        let mut names = Vec::new();
        let result = buzz::parse(&file, &source).and_then(|program| {
            let result = Interpreter::new(&file, Vec::new())
                .with_output(Box::new(out.clone()))
                .with_stack_budget(buzz::stack::stack_budget(buzz::stack::interpreter_stack()))
                .run(&program, args);
            for stmt in &program.statements {
                if let StmtKind::Fun(decl) = &stmt.kind {
                    if decl.compiled.is_made() {
                        names.push(decl.name.to_string());
                    }
                }
            }
            result
        });
        let output = out.0.borrow().clone();
        let ending = Ending {
            output,
            result: result.map_err(|e| e.to_string()),
        };
        (ending, names)
    })
    .expect("interpreter thread starts")
}

/// Runs `source` as `NAME.buzz`: the ending and the functions that
/// compiled.
pub(super) fn run_named(name: &str, source: &str) -> (Ending, Vec<String>) {
    run(&PathBuf::from(format!("{name}.buzz")), source, Vec::new())
}

/// A program whose functions use every construct the compiled path
/// covers, each printing what it computed.
const COVERED: &str = r#"
import "std";

object Point {
    x: double,
    y: double,
    tag: str = "p",

    fun norm2() > double {
        return this.x * this.x + this.y * this.y;
    }

    mut fun scale(by: double) > void {
        this.x *= by;
        this.y = this.y * by;
    }
}

var counter = 0;

fun bump(n: int) > int {
    counter += n;
    return counter;
}

fun loops(n: int) > str {
    var total = 0;
    var i = 0;
    while (i < n) {
        final sq = i * i;
        total += sq;
        i = i + 1;
    }
    do {
        total -= 1;
    } until (total < 100);
    for (j: int = 0; j < 3; j = j + 1) {
        if (j == 1) {
            continue;
        }
        total = total + j;
    }
    foreach (a in 0..5) :outer {
        foreach (b in 0..5) {
            if (b > a) {
                continue outer;
            }
            if (a == 4) {
                break outer;
            }
            total += 1;
        }
    }
    final items = mut [3, 1, 2];
    foreach (k, v in items) {
        items[k] = v * 10;
        items[k] += 1;
    }
    foreach (c in "ab") {
        total += 1;
    }
    return "{total} {items} {bump(2)} {bump(3)} {counter}";
}

fun shapes(p: mut Point, maybe: int?) > str {
    p.scale(2.0);
    final d = p.norm2();
    var text = "";
    if (maybe -> m) {
        text = text + "got {m}";
    } else {
        text = text + "none";
    }
    final unwrapped = maybe ?? -1;
    final logic = (unwrapped > 0 and d > 1.0) or !(p.tag == "p");
    final pick = if (logic) "yes" else "no";
    final m = { "a": 1, "b": 2 };
    final got = m["b"] ?? 0;
    final r = 10..0;
    final caught = (fun () > int => 1)() catch 0;
    return "{d} {text} {unwrapped} {logic} {pick} {got} {r.len()} {p is Point} {typeof p.x} {-unwrapped} {caught}";
}

fun main() > void {
    std.print(loops(12));
    std.print(shapes(mut Point{ x = 1.5, y = -2.0 }, maybe: 7));
    std.print(shapes(mut Point{ x = 0.0, y = 0.0, tag = "q" }, maybe: null));
    final words = ["x", "yy"];
    std.print("{words[1].len()} {std.toInt(2.9)}");
}
"#;

#[test]
fn the_covered_constructs_compile_and_print_what_they_compute() {
    let (ending, names) = run_named("covered", COVERED);
    assert_eq!(ending.result, Ok(0));
    let text = String::from_utf8(ending.output).unwrap();
    assert_eq!(
        text,
        "113 [31, 11, 21] 2 5 5\n25 got 7 7 true yes 2 10 true <double> -7 1\n\
         0 none -1 true yes 2 10 true <double> 1 1\n2 2\n"
    );
    // `shapes` makes a lambda that captures nothing: compiled too.
    assert_eq!(names, ["bump", "loops", "shapes", "main"], "{text}");
}

/// The constructs the compiled form once declined: `try`, `from`
/// blocks, `match`, casts, patterns, type values, typed lists, anonymous
/// objects, generics (called with and without type arguments) and
/// fibers; every function must compile and print what it computes.
const COVERED_MORE: &str = r#"
import "std";

object Box {
    n: int,
}

fun attempts(n: int) > str {
    var got = "";
    try {
        if (n > 1) {
            throw "big {n}";
        }
        got = "small";
    } catch (e: int) {
        got = "int {e}";
    } catch (e: str) {
        got = "caught {e}";
    }
    try {
        throw 7;
    } catch {
        got = got + " bare";
    }
    return got;
}

fun shapes(x: any) > str {
    final size = from {
        if (x is int) {
            out "int";
        }
        out "other";
    };
    final kind = match (x) {
        0..10 -> "digit",
        "a" -> "letter",
        $"^b" -> "b-word",
        else -> "?",
    };
    final i = x as? int;
    final t = <int>;
    final items = [<double>, 1.0, 2.5];
    final anon = .{ a = 1, b = "two" };
    return "{size} {kind} {i} {t} {items} {anon.a}{anon.b}";
}

fun first::<T>(values: [T]) > T {
    final v: T = values[0];
    if (v is T) {
        return v;
    }
    return values[1];
}

fun counter(n: int) > str *> int {
    for (i: int = 0; i < n; i = i + 1) {
        _ = yield i;
    }
    return "done {n}";
}

fun fibers() > str {
    final f = &counter(3);
    var seen = "";
    while (!f.over()) {
        seen = seen + "{resume f} ";
    }
    final g = &counter(2);
    return "{seen}| {resolve g}";
}

fun lambdas(n: int) > int {
    fun twice(x: int) > int {
        return x * 2;
    }
    final add = fun (a: int, b: int) > int => a + b;
    return add(twice(n), [1, 2].map::<int>(fun (i: int, x: int) > int => x * 10)[1]);
}

fun captures(n: int) > int {
    final add = fun (a: int) > int => a + n;
    return add(1);
}

fun steps() > str {
    final fs: mut [fun () > int] = mut [];
    foreach (i in 0..3) {
        final k = i * 10;
        fs.append(fun () > int => i + k);
    }
    var j = 0;
    while (j < 2) {
        final m = j;
        fs.append(fun () > int {
            final deeper = fun () > int => m + 100;
            return deeper();
        });
        j += 1;
    }
    var text = "";
    foreach (f in fs) {
        text = text + "{f()} ";
    }
    return text;
}

fun siblings(n: int) > int {
    fun first(x: int) > int {
        return second(x) + 1;
    }
    fun second(x: int) > int {
        return x * n;
    }
    return first(2);
}

fun shared(start: int) > int {
    var count = start;
    final bump = fun () > void {
        count = count + 1;
    };
    bump();
    count *= 10;
    bump();
    final read = fun () > int => count;
    foreach (i in 0..2) {
        count += i;
    }
    return read();
}

fun holds::<T>(value: any) > bool {
    var seen = 0;
    final check = fun () > bool {
        seen += 1;
        return value is T;
    };
    return check() and seen == 1;
}

fun nested() > int {
    var total = 0;
    if (total == 0) {
        var inner = 1;
        final add = fun () > void {
            inner = inner + 1;
        };
        add();
        total = inner;
    }
    return total;
}

fun main() > void {
    std.print("{lambdas(4)} {captures(4)} {steps()} {shared(1)} {siblings(3)} {nested()}");
    std.print("{holds::<int>(3)} {holds::<str>(3)} {holds(3)}");
    std.print("{attempts(1)} / {attempts(5)}");
    std.print(shapes(3));
    std.print(shapes("a"));
    final xs = ["x", "y"];
    std.print("{first::<int>([4, 5])} {first(xs)}");
    std.print(shapes("bc"));
    std.print(fibers());
    final b = Box{ n = 2 };
    std.print("{b.n}");
}
"#;

#[test]
fn the_once_declined_constructs_compile_and_print_what_they_compute() {
    let (ending, names) = run_named("covered_more", COVERED_MORE);
    let text = String::from_utf8_lossy(&ending.output).into_owned();
    assert_eq!(ending.result, Ok(0), "{text}");
    assert_eq!(
        text,
        "28 5 0 11 22 100 101  22 7 2\ntrue false false\nsmall bare / caught big 5 bare\n\
         int digit 3 <int> [1, 2.5] 1two\nother letter null <int> [1, 2.5] 1two\n4 y\n\
         other b-word null <int> [1, 2.5] 1two\n0 1 2 null | done 2\n2\n"
    );
    assert_eq!(
        names,
        [
            "attempts", "shapes", "first", "counter", "fibers", "lambdas", "captures", "steps",
            "siblings", "shared", "holds", "nested", "main"
        ],
        "{text}"
    );
}

/// Each error case: a function that compiles, failing inside; the
/// message and location it must report.
const ERRORS: [(&str, &str, &str); 21] = [
    (
        // The flat form keeps a `foreach`'s bounds as two ints (no
        // range made): each is checked where the range is written.
        "range_high",
        "fun f(x: any) > int {\n    var t = 0;\n    foreach (i in 0..x) {\n        t = t + i;\n    }\n    return t;\n}\nfun main() > void {\n    f(2.5);\n}\n",
        "3:19: runtime error: range bounds must be int, got int and double",
    ),
    (
        "range_low",
        "fun f(x: any) > int {\n    var t = 0;\n    foreach (i in x..3) {\n        t = t + i;\n    }\n    return t;\n}\nfun main() > void {\n    f(\"a\");\n}\n",
        "3:19: runtime error: range bounds must be int, got str and int",
    ),
    (
        "index",
        "fun f(l: [int]) > int {\n    return l[3];\n}\nfun main() > void {\n    f([1]);\n}\n",
        "2:13: uncaught error: Out of bound list access.",
    ),
    (
        "force",
        "fun f(x: int?) > int {\n    final y = x!;\n    return y;\n}\nfun main() > void {\n    f(null);\n}\n",
        "2:16",
    ),
    (
        "divide",
        "fun f(a: int) > int {\n    final z = 0;\n    return a / z;\n}\nfun main() > void {\n    f(1);\n}\n",
        "division by zero",
    ),
    (
        "overflow",
        "fun f(a: int) > int {\n    var big = 9223372036854775807;\n    big += a;\n    return big;\n}\nfun main() > void {\n    f(1);\n}\n",
        "3:9",
    ),
    (
        "overflow_mul",
        "fun f(a: int) > int {\n    return a * a * a * a * a;\n}\nfun main() > void {\n    f(100000);\n}\n",
        "integer overflow",
    ),
    (
        "recursion",
        "fun down(n: int) > int {\n    return down(n + 1) + 1;\n}\nfun main() > void {\n    down(0);\n}\n",
        "call stack overflow",
    ),
    (
        "param_type",
        "fun g(n: int) > int {\n    return n;\n}\nfun f(s: str) > int {\n    return g(s);\n}\nfun main() > void {\n    f(\"x\");\n}\n",
        "parameter `n` of `g` expects int, got str",
    ),
    (
        "condition",
        "fun f(s: str) > int {\n    if (s) {\n        return 1;\n    }\n    return 0;\n}\nfun main() > void {\n    f(\"x\");\n}\n",
        "condition must be a bool",
    ),
    (
        "native_argument",
        "import \"std\";\nfun f(l: [int]) > int {\n    return std\\toInt(std\\toDouble(l[4]));\n}\nfun main() > void {\n    f([1]);\n}\n",
        "3:36: uncaught error: Out of bound list access.",
    ),
    (
        "named_param_type",
        "fun g(a: int, b: double) > double {\n    return a + b;\n}\nfun f(s: str) > double {\n    return g(a: 1, b: s);\n}\nfun main() > void {\n    f(\"x\");\n}\n",
        "parameter `b` of `g` expects double, got str",
    ),
    (
        "param_null",
        "fun g(n: int) > int {\n    return n;\n}\nfun f(s: int?) > int {\n    return g(s);\n}\nfun main() > void {\n    f(null);\n}\n",
        "parameter `n` of `g` expects int, got null",
    ),
    (
        "field_type",
        "object Node {\n    v: int,\n    next: Node?,\n}\nfun f(s: any) > Node {\n    return Node{ next = null, v = s };\n}\nfun main() > void {\n    f(1);\n    f(\"x\");\n}\n",
        "field `v` expects int, got str",
    ),
    (
        "missing_field",
        "object Node {\n    v: int,\n    w: int = 2,\n}\nfun f(n: int) > int {\n    if (n > 0) {\n        return Node{ v = n }.w;\n    }\n    return Node{ w = n }.v;\n}\nfun main() > void {\n    f(1);\n    f(0);\n}\n",
        "missing field `v`",
    ),
    (
        "recursion_named",
        "fun down(n: int, step: int) > int {\n    return down(n: n + step, step: step) + 1;\n}\nfun main() > void {\n    down(n: 0, step: 1);\n}\n",
        "call stack overflow",
    ),
    (
        "if_return_value",
        "fun f(l: [int], n: int) > int {\n    if (n > 0) {\n        return l[n] + f(l, n: n - 1);\n    }\n    return 0;\n}\nfun main() > void {\n    f([1, 2], n: 3);\n}\n",
        "3:17: uncaught error: Out of bound list access.",
    ),
    (
        "if_return_recursion",
        "fun down(n: int) > int {\n    if (n > -1) {\n        return down(n + 1);\n    }\n    return 0;\n}\nfun main() > void {\n    down(0);\n}\n",
        "call stack overflow",
    ),
    (
        "object_param",
        "object A {\n    v: int = 1,\n}\nobject B {\n    v: int = 2,\n}\nfun g(a: mut A?) > int {\n    return a?.v ?? 0;\n}\nfun f(x: any) > int {\n    return g(null) + g(A{}) + g(x);\n}\nfun main() > void {\n    f(B{});\n}\n",
        "parameter `a` of `g` expects",
    ),
    (
        "object_field",
        "object A {\n    v: int = 1,\n}\nobject B {\n    a: A?,\n}\nfun f(x: any) > B {\n    final ok = B{ a = A{} };\n    final none = B{};\n    return B{ a = x };\n}\nfun main() > void {\n    f(B{});\n}\n",
        "field `a` expects",
    ),
    (
        "throw",
        "fun f(n: int) > int {\n    if (n > 2) {\n        throw \"too big\";\n    }\n    return n;\n}\nfun main() > void {\n    f(1);\n    f(3);\n}\n",
        "too big",
    ),
];

#[test]
fn errors_inside_compiled_functions_are_located() {
    for (name, source, expected) in ERRORS {
        let (ending, names) = run_named(name, source);
        let err = ending.result.expect_err(name);
        assert!(err.contains(expected), "{name}: {err}");
        assert!(names.contains(&"main".to_string()), "{name}: {names:?}");
    }
}

#[test]
fn a_catch_catches_what_a_called_function_throws() {
    let source = r#"
import "std";
fun pick(l: [int], i: int) > int {
    return l[i];
}
fun main() > void {
    try {
        pick([1, 2], i: 5);
    } catch (e: str) {
        std.print("caught {e}");
    }
    std.print("{pick([1, 2], i: 1)}");
}
"#;
    let (ending, names) = run_named("catch", source);
    assert_eq!(ending.result, Ok(0));
    assert_eq!(ending.output, b"caught Out of bound list access.\n2\n");
    assert_eq!(names, ["pick", "main"]);
}

#[test]
fn arithmetic_on_unboxed_numbers_gives_the_general_results() {
    let source = r#"
import "std";
object Box {
    v: double,
    n: int,
}
var scale = 3;
final half = 0.5;
fun calc(a: int, b: double, l: [int], o: Box) > str {
    scale = scale + 1;
    final scaled = a * scale + half * scale;
    final nan = 0.0 / 0.0;
    final mixed = a * b + a / 2 - o.v * o.n % 3;
    final ints = -a % 3 + a % -4 + (a - 100) / 7 + l[1] * l[2];
    final flags = "{nan < 1.0} {nan >= 1.0} {a < b} {a == 7} {b > o.v} {l[0] <= a}";
    final r = b % -2.5 + -b;
    return "{mixed} {ints} {flags} {r} {a / 2} {7.0 / 2} {scaled}";
}
fun main() > void {
    std.print(calc(7, b: 3.25, l: [4, 5, 6], o: Box{ v = 1.5, n = -4 }));
    std.print(calc(-9, b: -0.5, l: [1, -2, 3], o: Box{ v = -2.0, n = 5 }));
}
"#;
    let (ending, names) = run_named("arith", source);
    assert_eq!(ending.result, Ok(0));
    assert_eq!(
        String::from_utf8(ending.output).unwrap(),
        "25.75 18 false false false true true true -5 3 3.5 30\n\
         -1.5 -22 false false true false true false 0 -4 3.5 -42.5\n"
    );
    assert_eq!(names, ["calc", "main"]);
}

/// Field stores as statements (plain, compound, on a value that rebinds
/// the object's local) and trees of doubles mixed with ints and globals.
const FIELDS: &str = r#"
import "std";
final k = 2.0;
object P {
    x: double,
    n: int,
    s: str = "",
}
fun step(p: P, q: P) > str {
    p.x = p.x + q.x * 0.5;
    q.x -= p.x * k + -q.x;
    p.n += 2;
    p.n = p.n * 2 - 2;
    var r = p;
    r.x = (r = q).x + 1.0 % 0.75;
    q.s = "x";
    return "{p.x} {q.x} {p.n} {r.x * k + 0.5 * 2} {k / 4 + 0.25} {q.s}";
}
fun main() > void {
    std\print(step(P{ x = 1.0, n = 2 }, P{ x = 5.0, n = 0 }));
}
"#;

#[test]
fn calls_of_natives_named_arguments_and_objects_give_their_results() {
    let source = r#"
import "std";
import "math";
object Node {
    left: Node?,
    value: int = 7,
    right: Node?,
    label: str = "n",
}
object Other {
    value: int,
}
fun pair(a: int, b: double) > str {
    return "{a}/{b}";
}
fun make(depth: int) > Node {
    if (depth > 0) {
        return Node{ right = make(depth - 1), left = make(depth - 1), value = depth };
    }
    return Node{};
}
fun sum(n: Node?) > int {
    if (n -> node) {
        return node.value + sum(node.left) + sum(node.right);
    }
    return 0;
}
fun main() > void {
    std\print("{pair(1, b: 2.5)} {pair(a: 3, b: 4)} {pair(b: 0.5, a: 6)}");
    std\print("{std\toInt(std\toDouble(std\parseInt("41") ?? 0) + 1.5)}");
    std\print("{math\pow(x: 2.0, y: std\toDouble(10))} {math\sqrt(16.0)}");
    var total = 0;
    foreach (i in 0..4) {
        final t = make(i);
        var d: double = i;
        total = total + sum(t) + std\toInt(d);
        final o = Other{ value = i };
        total = total + o.value;
    }
    std\print("{total} {make(1).label} {make(2).left?.left?.value ?? -1}");
}
"#;
    let (ending, names) = run_named("calls", source);
    let (ending2, _) = run_named("fields", FIELDS);
    assert_eq!(ending2.result, Ok(0));
    assert_eq!(
        String::from_utf8(ending2.output).unwrap(),
        "3.25 3 6 7 0.75 x\n"
    );
    assert_eq!(ending.result, Ok(0));
    let text = String::from_utf8(ending.output).unwrap();
    assert_eq!(text, "1/2.5 3/4 6/0.5\n42\n1024 4\n133 n 7\n");
    assert_eq!(names, ["pair", "make", "sum", "main"]);
}

#[test]
fn a_store_that_saw_doubles_then_sees_ints_gives_the_general_results() {
    let source = r#"
import "std";
fun mix(a: any, b: any) > str {
    var r = a;
    r = a * b + a - -b;
    final s = r / b;
    return "{r} {s}";
}
fun main() > void {
    std\print("{mix(1.5, b: 2.0)} {mix(3, b: 4)} {mix(2.5, b: 2.0)} {mix(7, b: 1)} {mix(1, b: 0.5)}");
    std\print(mix(9223372036854775807, b: 2));
}
"#;
    let (ending, names) = run_named("mixed", source);
    let err = ending.result.expect_err("overflow");
    assert!(err.contains("5:11"), "{err}");
    assert_eq!(
        String::from_utf8(ending.output).unwrap(),
        "6.5 3.25 19 4 9.5 4.75 15 15 2 4\n"
    );
    assert_eq!(names, ["mix", "main"]);
}

#[test]
fn a_memory_limit_inside_a_compiled_function_stops_where_it_is_crossed() {
    // The memory count is the whole process's: tests running beside this
    // one moved it past 48 MiB before the spell's first statement (once in
    // about seven runs of the lib tests beside a build).
    if crate::alone::passed().is_none() {
        let name =
            "buzz::vm::tests::a_memory_limit_inside_a_compiled_function_stops_where_it_is_crossed";
        return crate::alone::run(name, "1");
    }
    let source = "fun grow(n: int) > int {\n    final l: mut [str] = mut [];\n    var s = \"x\";\n    foreach (i in 0..n) {\n        s = s + s;\n        l.append(s);\n    }\n    return l.len();\n}\nfun main() > void {\n    grow(40);\n}\n";
    // The live heap is about 32 MiB after the 24th doubling and 64 MiB
    // after the 25th: a 48 MiB budget is crossed at that step.
    let err = run_within(48 << 20, "memory.buzz", source.to_string()).unwrap_err();
    assert!(err.contains("memory limit") && err.contains("6:9"), "{err}");
}

/// Straight-line code, no loop and no call: the memory check still
/// comes before each statement that can allocate (the flat form makes it
/// in the operations that fall back to the tree), so the budget stops
/// the doubling, not the list's length cap far past it.
#[test]
fn a_memory_limit_in_straight_line_code_stops_before_the_list_cap() {
    let mut source = String::from("fun grow() > int {\n    var l = [1, 2, 3, 4, 5, 6, 7, 8];\n");
    for _ in 0..30 {
        source.push_str("    l = l + l;\n");
    }
    source.push_str("    return l.len();\n}\nfun main() > void {\n    grow();\n}\n");
    let err = run_within(48 << 20, "straight.buzz", source).unwrap_err();
    assert!(err.contains("memory limit"), "{err}");
}

/// Runs `source` (as `name`) on the interpreter's stack with a memory
/// budget of `bytes`: its status, or its error's text.
fn run_within(bytes: usize, name: &'static str, source: String) -> Result<i32, String> {
    buzz::stack::run_on_interpreter_stack(move || {
        let file = Path::new(name);
        let program = buzz::parse(file, &source).unwrap();
        Interpreter::new(file, Vec::new())
            .with_output(Box::new(Captured::default()))
            .with_heap_budget(bytes)
            .run(&program, Vec::new())
            .map_err(|e| e.to_string())
    })
    .unwrap()
}

#[test]
fn deep_recursion_on_an_ordinary_thread_ends_in_a_clean_error() {
    let source = "fun down(n: int) > int {\n    final m = n + 1;\n    return down(m) + 1;\n}\nfun main() > void {\n    down(0);\n}\n";
    let ended = std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || {
            let file = Path::new("deep.buzz");
            let program = buzz::parse(file, source).unwrap();
            Interpreter::new(file, Vec::new())
                .with_output(Box::new(Captured::default()))
                .run(&program, Vec::new())
                .map_err(|e| e.to_string())
        })
        .unwrap()
        .join()
        .unwrap();
    let err = ended.unwrap_err();
    assert!(
        err.contains("3:12")
            && (err.contains("stack budget") || err.contains("call stack overflow")),
        "{err}"
    );
}

/// `test` blocks run compiled (`magus test`): each outcome, and what they
/// print.
#[test]
fn test_blocks_run_compiled() {
    let source = r#"
import "std";

fun half(n: int) > int {
    return n / 2;
}

test "passes" {
    final items = [1, 2, 3];
    var total = 0;
    foreach (i in items) {
        total += half(i * 2);
    }
    std.print("total {total}");
    std.assert(total == 6, message: "sum");
}

test "fails where it divides" {
    final zero = half(1);
    std.print("{10 / zero}");
}

test "catches" {
    try {
        throw "no";
    } catch (e: str) {
        std.print("caught {e}");
    }
    final double = fun (x: int) > int => x * 2;
    std.print("{double(21)}");
}

test "closures copy its locals" {
    final base = 40;
    final add = fun (x: int) > int => x + base;
    foreach (i in 0..2) {
        final k = i;
        final f = fun () > int => k + base;
        std.print("{f()}");
    }
    std.print("{add(2)}");
}

test "closures share its locals" {
    var count = 0;
    final bump = fun () > void {
        count = count + 1;
    };
    bump();
    foreach (i in 0..2) {
        var seen = i;
        final look = fun () > int {
            seen = seen + count;
            return seen;
        };
        bump();
        std.print("{look()}");
    }
    std.print("{count}");
}
"#;
    let fast = run_tests(source);
    assert_eq!(fast.1, "total 6\ncaught no\n42\n40\n41\n42\n2\n4\n3\n");
    let failure = fast.0[1].1.as_deref().unwrap_or_default();
    assert!(
        failure.contains("20:20") && failure.contains("division by zero"),
        "{failure}"
    );
    assert!(
        [0, 2, 3, 4].iter().all(|&i| fast.0[i].1.is_none()),
        "{:?}",
        fast.0
    );
}

/// How each `test` block of `source` ended, and what they printed.
type TestsRun = (Vec<(String, Option<String>)>, String);

fn run_tests(source: &'static str) -> TestsRun {
    buzz::stack::run_on_interpreter_stack(move || {
        let file = Path::new("tests.buzz");
        let program = buzz::parse(file, source).unwrap();
        let out = Captured::default();
        let outcomes = Interpreter::new(file, Vec::new())
            .with_output(Box::new(out.clone()))
            .run_tests(&program)
            .unwrap();
        let ends = outcomes
            .into_iter()
            .map(|o| (o.name, o.failure.map(|e| e.to_string())))
            .collect();
        let printed = String::from_utf8_lossy(&out.0.borrow()).into_owned();
        (ends, printed)
    })
    .unwrap()
}

/// Local `object`s, `enum`s, `protocol`s and `import`s, in functions,
/// methods, loop steps and closures, and the `do … until` whose body
/// declares in a function whose every level is a scope, run compiled:
/// `tests/buzz/pass/local_declarations.buzz` prints what its `.out`
/// says, each of its functions compiled.
#[test]
fn local_declarations_run_compiled() {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/buzz/pass/local_declarations.buzz");
    let source = std::fs::read_to_string(&file).unwrap();
    let want = std::fs::read(file.with_extension("out")).unwrap();
    let (ending, names) = run(&file, &source, Vec::new());
    assert_eq!(ending.result, Ok(0));
    assert_eq!(
        String::from_utf8_lossy(&ending.output),
        String::from_utf8_lossy(&want)
    );
    for name in ["shapes", "per_step", "makers", "countdown", "tally", "main"] {
        assert!(
            names.iter().any(|n| n == name),
            "{name} did not compile: {names:?}"
        );
    }
}

/// The same in `test` blocks, and the assignment of a name bound at run
/// time (a local `protocol`, a generic parameter): the error that it is
/// `final`.
#[test]
fn local_declarations_in_test_blocks_and_assigned_protocols_run_compiled() {
    let source = r#"
import "std";

fun retype::<T>() > void {
    T = <int>;
}

test "declares" {
    import "buzz:math" as m;
    enum Dir { up, down }
    object Move {
        static moves: int = 0,
        dir: Dir = Dir.up,
        fun text() > str {
            return "{this.dir}";
        }
    }
    var log = "";
    final note = fun (s: str) > void {
        log = log + s;
    };
    var i = 0;
    do {
        final mv = Move{ dir = if (i == 1) Dir.down else Dir.up };
        Move.moves = Move.moves + 1;
        note(mv.text() + " ");
        i = i + 1;
    } until (mv.dir == Dir.down)
    std.print("{log}{Move.moves} {m\abs(-3)}");
}

test "a protocol is final" {
    protocol Shape {
        fun area() > int;
    }
    Shape = <int>;
}

test "so is a type parameter" {
    retype::<str>();
}
"#;
    let fast = run_tests(source);
    assert_eq!(fast.1, "Dir.up Dir.down 2 3\n");
    assert!(fast.0[0].1.is_none(), "{:?}", fast.0);
    for (at, ended) in [("36:5", &fast.0[1]), ("5:5", &fast.0[2])] {
        let failure = ended.1.as_deref().unwrap_or_default();
        assert!(
            failure.contains(at) && failure.contains("it is `final`"),
            "{failure}"
        );
    }
}

/// A spell whose top level computes its globals and static fields with
/// blocks and loops.
#[test]
fn the_top_level_runs_compiled() {
    let file = PathBuf::from("count.buzz");
    let top = "final xs = [1, 2, 3];\nfinal n = from { var t = 0; foreach (x in xs) { t += x; } out t; };\n\
               object P { static k: int = from { var a = 6; out a * 2; } }\n\
               fun main() > void { std.print(\"{n} {P.k}\"); }\nimport \"std\";\n";
    let (ending, _) = run(&file, top, Vec::new());
    assert_eq!(ending.result, Ok(0));
    assert_eq!(String::from_utf8_lossy(&ending.output), "6 12\n");
}

/// Functions whose closures share locals of their blocks, loops, `for`
/// initializers, `if (…) -> x` branches and `catch` clauses: each level in
/// a scope of its own, each loop step a fresh one.
const BLOCK_SHARED: &str = r#"
import "std";

fun counters() > [fun () > int] {
    var out: [fun () > int] = [];
    foreach (i in 0..3) {
        var n = i * 10;
        out.append(fun () > int {
            n = n + 1;
            return n + i;
        });
    }
    return out;
}

fun blocks(seed: int) > int {
    var total = seed;
    {
        var x = 1;
        final bump = fun () > void {
            x = x + total;
        };
        bump();
        bump();
        total = x;
    }
    for (var i = 0; i < 3; i = i + 1) {
        var j = i;
        final twice = fun () > int {
            j = j * 2;
            i = i + 0;
            return j;
        };
        total = total + twice();
    }
    var k = 0;
    while (k < 2) {
        var w = k;
        fun more() > int {
            w = w + total;
            return w;
        }
        total = more();
        k = k + 1;
    }
    return total;
}

fun branches(v: str?) > str {
    var said = "";
    if (v -> s) {
        var t = s;
        final loud = fun () > void {
            t = t + "!";
            said = t;
        };
        loud();
    }
    try {
        throw "e{said}";
    } catch (e: str) {
        var m = e;
        final f = fun () > str {
            m = m + "?";
            return m;
        };
        said = f() + f();
    }
    return said;
}

fun main() > void {
    foreach (c in counters()) {
        std.print("{c()} {c()}");
    }
    std.print("{blocks(1)} {branches("a")} {branches(null)}");
}
"#;

#[test]
fn closures_sharing_block_locals_compile_and_print_what_they_compute() {
    let (ending, names) = run_named("block_shared", BLOCK_SHARED);
    let text = String::from_utf8_lossy(&ending.output).into_owned();
    assert_eq!(ending.result, Ok(0), "{text}");
    assert_eq!(text, "1 2\n12 13\n23 24\n10 ea!?ea!?? e?e??\n");
    assert_eq!(names, ["counters", "blocks", "branches", "main"], "{text}");
}

/// Defaults of parameters (reading the earlier ones, of methods and
/// lambdas) and of fields (reading the locals of the function declaring
/// the object, building a value in a block, making a lambda), each
/// lowered and run compiled, each in the scope it reads.
const DEFAULTS: &str = r#"
import "std";

object Cell {
    value: int = 7,
    label: str = from { var s = "c"; foreach (i in 0..2) { s = s + "{i}"; } out s; },
    twice: fun (x: int) > int = fun (x: int) > int => x * 2,

    fun show(prefix: str = "<", suffix: str = prefix + ">") > str {
        return "{prefix}{this.value}{suffix}";
    }
}

fun scaled(n: int, by: int = n * 2, tag: str = "{n}x{by}") > str {
    return tag;
}

fun outer(base: int) > str {
    object Local {
        n: int = base + 1,
    }
    final pick = fun (k: int = base * 10) > int => k + Local{}.n;
    return "{pick()} {pick(1)}";
}

fun bad(n: int = 1 / 0) > int {
    return n;
}

fun main() > void {
    final c = Cell{};
    std.print("{c.value} {c.label} {c.twice(4)} {c.show()} {c.show("[")} {c.show(suffix: "!")}");
    std.print("{scaled(3)} {scaled(3, 5)} {scaled(n: 2, tag: "t")}");
    std.print(outer(4));
    std.print("{bad()}");
}
"#;

#[test]
fn defaults_of_parameters_and_fields_run_compiled() {
    let (ending, _) = run_named("defaults", DEFAULTS);
    let text = String::from_utf8_lossy(&ending.output).into_owned();
    assert_eq!(text, "7 c01 8 <7<> [7[> <7!\n3x6 3x5 t\n45 6\n", "{text}");
    let err = ending.result.unwrap_err();
    assert!(
        err.contains("26:20") && err.contains("division by zero"),
        "{err}"
    );
}
