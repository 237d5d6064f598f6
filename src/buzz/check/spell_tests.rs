//! The spell checker (`buzz::check`) through the library API: for each
//! kind of mistake upstream Buzz rejects at compile time
//! (`tests/compile_errors` upstream; these programs are our own), the code
//! and line it is reported at; no report at all on the programs that run
//! (`tests/buzz/pass`, `spells/`, the libraries written in Buzz); and the
//! rendering of five
//! representative errors, pinned as snapshots.

use crate::bindings::{self, Session};
use crate::buzz::{self, Interpreter};
use crate::diag::{render, Code, Diagnostic, MessageFormat, Severity};
use crate::enforce::gate::Gate;
use crate::enforce::Domain;
use crate::policy::{self, StartupInput, WorkspaceArg};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// A workspace with a default policy, the `fs`, `sh` and `env` modules of
/// a run, and a loader through the gate.
struct Workspace {
    dir: tempfile::TempDir,
    session: Rc<Session>,
}

impl Workspace {
    fn new() -> Workspace {
        Workspace::with_config("")
    }

    fn with_config(config: &str) -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("magus.yaml"), config).unwrap();
        std::fs::create_dir_all(dir.path().join("spells/lib")).unwrap();
        let env = vec![("PATH".into(), "/usr/bin:/bin".into())];
        let startup = policy::startup(StartupInput {
            workspace: WorkspaceArg::Explicit(dir.path()),
            env: &env,
            spell: None,
        })
        .expect("policy resolves");
        let gate = Gate::new(Rc::new(startup.policy), dir.path().to_path_buf());
        #[cfg(kernel_layer)]
        let domain = Domain::unconfined(crate::enforce::Unavailable::ForcedOff);
        #[cfg(not(kernel_layer))]
        let domain = Domain::interpreter_only();
        let sink: bindings::DiagnosticSink = Rc::new(|_| {});
        let session = Rc::new(Session::new(gate, domain, env, Vec::new(), sink));
        Workspace { dir, session }
    }

    fn write(&self, rel: &str, source: &str) -> PathBuf {
        let path = self.dir.path().join(rel);
        std::fs::write(&path, source).unwrap();
        path
    }

    /// Every diagnostic the check of `path` gives.
    fn check_file(&self, path: &Path) -> Vec<Diagnostic> {
        let source = std::fs::read_to_string(path).unwrap();
        let program = match buzz::parse(path, &source) {
            Ok(p) => p,
            Err(e) => return vec![e.to_diagnostic()],
        };
        Interpreter::new(path, bindings::modules(&self.session))
            .with_loader(bindings::source_loader(&self.session))
            .with_libraries(bindings::libraries())
            .check(&program, &source)
            .diagnostics()
    }

    fn check(&self, source: &str) -> Vec<Diagnostic> {
        let path = self.write("spells/probe.buzz", source);
        self.check_file(&path)
    }
}

/// The diagnostics but the unused-name warnings (MGS1026), for tests
/// about other findings in programs that leave names unused.
fn without_unused(ds: Vec<Diagnostic>) -> Vec<Diagnostic> {
    ds.into_iter()
        .filter(|d| d.code != Some(Code::Mgs1026))
        .collect()
}

/// `(code, line)` of every diagnostic.
fn found(ds: &[Diagnostic]) -> Vec<(String, u32)> {
    ds.iter()
        .map(|d| {
            let code = d.code.map_or("-".to_string(), |c| c.to_string());
            (code, d.location.as_ref().map_or(0, |l| l.line))
        })
        .collect()
}

/// One upstream compile error, made our own way: the program, and the
/// code and line expected first.
struct Case {
    name: &'static str,
    source: &'static str,
    code: &'static str,
    line: u32,
}

const CASES: &[Case] = &[
    Case { name: "const", code: "MGS1004", line: 4, source: "import \"buzz:std\";\ntest \"t\" {\n    final greeting = \"hi\";\n    greeting = \"bye\";\n}\n" },
    Case { name: "const (parameter)", code: "MGS1004", line: 2, source: "fun f(name: str) > void {\n    name = \"x\";\n}\n" },
    Case { name: "const (enum case)", code: "MGS1004", line: 3, source: "enum Color { red, green, }\ntest \"t\" {\n    Color.red = 1;\n}\n" },
    Case { name: "var-decl-without-value", code: "MGS1004", line: 2, source: "test \"t\" {\n    final label: str;\n}\n" },
    Case { name: "early-return", code: "MGS1008", line: 5, source: "import \"buzz:std\";\ntest \"t\" {\n    std\\print(\"a\");\n    return;\n    std\\print(\"b\");\n}\n" },
    Case { name: "early-throw", code: "MGS1008", line: 4, source: "test \"t\" {\n    throw \"stop\";\n\n    _ = 1;\n}\n" },
    Case { name: "terminal-if-unreachable", code: "MGS1008", line: 7, source: "fun pick(flag: bool) > int !> str {\n    if (flag) {\n        return 1;\n    } else {\n        throw \"no\";\n    }\n    return 2;\n}\n" },
    Case { name: "terminal-loop-unreachable", code: "MGS1008", line: 3, source: "fun spin() > int {\n    while (true) {}\n    return 1;\n}\n" },
    Case { name: "terminal-break-unreachable", code: "MGS1008", line: 4, source: "fun f() > void {\n    while (true) {\n        break;\n        _ = 2;\n    }\n}\n" },
    Case { name: "terminal-continue-unreachable", code: "MGS1008", line: 4, source: "fun f() > void {\n    while (true) {\n        continue;\n        _ = 2;\n    }\n}\n" },
    Case { name: "labeled-continue-terminal-flow", code: "MGS1008", line: 6, source: "fun f() > int {\n    while (true) :outer {\n        do {\n            continue outer;\n        } until (true)\n        break outer;\n    }\n}\n" },
    Case { name: "out-last-statement", code: "MGS1008", line: 4, source: "test \"t\" {\n    _ = from {\n        out 1;\n        _ = 2;\n    };\n}\n" },
    Case { name: "multiple-out", code: "MGS1008", line: 4, source: "test \"t\" {\n    _ = from {\n        out 1;\n        out 2;\n    };\n}\n" },
    Case { name: "break", code: "MGS1013", line: 2, source: "test \"t\" {\n    break;\n}\n" },
    Case { name: "label-not-found", code: "MGS1013", line: 3, source: "test \"t\" {\n    while (true) :outer {\n        break elsewhere;\n    }\n}\n" },
    Case { name: "misplaced-out", code: "MGS1013", line: 2, source: "test \"t\" {\n    out 1;\n}\n" },
    Case { name: "immutable-list", code: "MGS1005", line: 3, source: "test \"t\" {\n    final items = [1, 2];\n    items.append(3);\n}\n" },
    Case { name: "local-assignment-value-type", code: "MGS1006", line: 3, source: "test \"t\" {\n    var word = \"a\";\n    word = 3;\n}\n" },
    Case { name: "local-assignment-value-type (list)", code: "MGS1006", line: 2, source: "test \"t\" {\n    final xs: [int] = [1, false];\n}\n" },
    Case { name: "object-assignment-value-type", code: "MGS1006", line: 4, source: "object Box { size: int, }\ntest \"t\" {\n    var b = Box{ size = 1 };\n    b = 7;\n}\n" },
    Case { name: "object-prop-immutable-value", code: "MGS1006", line: 3, source: "object Bag { items: mut [int], }\ntest \"t\" {\n    _ = Bag{ items = [] };\n}\n" },
    Case { name: "main-signature", code: "MGS1010", line: 1, source: "fun main(args: int) > void {}\n" },
    Case { name: "missing-return-one-branch", code: "MGS1009", line: 1, source: "fun sign(n: int) > int {\n    if (n < 0) {\n        return -1;\n    }\n}\n" },
    Case { name: "block-expression-partial-out", code: "MGS1009", line: 3, source: "test \"t\" {\n    final ok = true;\n    _ = from {\n        if (ok) {\n            out 1;\n        }\n    };\n}\n" },
    Case { name: "multiple-location", code: "MGS1002", line: 3, source: "import \"lib/shapes\";\ntest \"t\" {\n    _ = shapes\\Square{ sid = 2 };\n}\n" },
    Case { name: "placeholder-nested-call (a field)", code: "MGS1002", line: 4, source: "object Statement { fun execute() > void {} }\nobject Database { fun prepare() > Statement { return Statement{}; } }\nfun run(db: Database) > void {\n    db.prepare().missing();\n}\n" },
    Case { name: "placeholder-nested-call (through an arrow method without a type)", code: "MGS1002", line: 3, source: "object Query {\n    fun run(db: Store) > void {\n        db.open().absent();\n    }\n}\nobject Handle { fun close() > void {} }\nobject Store {\n    fun open() => this.raw();\n    fun raw() > Handle { return Handle{}; }\n}\n" },
    Case { name: "unused-local", code: "MGS1026", line: 3, source: "fun main(args: [str]) > void {\n    _ = args;\n    final spare = 42;\n}\n" },
    Case { name: "var-not-assigned", code: "MGS1026", line: 2, source: "fun main(args: [str]) > void {\n    var items = [1];\n    _ = items;\n    _ = args;\n}\n" },
    Case { name: "unused-import", code: "MGS1026", line: 1, source: "import \"buzz:math\";\nfun main(args: [str]) > void {\n    _ = args;\n}\n" },
    Case { name: "not-callable", code: "MGS1012", line: 3, source: "test \"t\" {\n    final count = 12;\n    count(\"x\");\n}\n" },
    Case { name: "selective-import", code: "MGS1001", line: 3, source: "import print from \"buzz:std\";\ntest \"t\" {\n    assert(false);\n}\n" },
    Case { name: "arrow-return-match-optional", code: "MGS1007", line: 1, source: "fun score(points: int?) > int => match (true) {\n    true -> points,\n    false -> 0,\n};\n" },
    Case { name: "nullable-list-index", code: "MGS1007", line: 3, source: "test \"t\" {\n    final at: int? = null;\n    _ = [1, 2][at];\n}\n" },
    Case { name: "inferred-enum-case-invalid", code: "MGS1002", line: 3, source: "enum Locale { fr, }\ntest \"t\" {\n    final l: Locale = .es;\n}\n" },
    Case { name: "match-non-exhaustive", code: "MGS1014", line: 3, source: "test \"t\" {\n    final n = 1;\n    _ = match (n) {\n        1 -> \"one\",\n    };\n}\n" },
    Case { name: "match-enum-non-exhaustive", code: "MGS1014", line: 4, source: "enum Size { s, m, l, }\ntest \"t\" {\n    final size = Size.s;\n    _ = match (size) {\n        Size.s -> 1,\n    };\n}\n" },
    Case { name: "match-value-condition-type", code: "MGS1006", line: 3, source: "test \"t\" {\n    _ = match (true) {\n        \"yes\" -> 1,\n        else -> 2,\n    };\n}\n" },
    Case { name: "match-string-condition-type", code: "MGS1006", line: 3, source: "test \"t\" {\n    _ = match (\"a\") {\n        1 -> 1,\n        else -> 2,\n    };\n}\n" },
    Case { name: "match-number-condition-type", code: "MGS1006", line: 3, source: "test \"t\" {\n    _ = match (1) {\n        \"one\" -> 1,\n        else -> 2,\n    };\n}\n" },
    Case { name: "anonymous-object-extra-field", code: "MGS1002", line: 3, source: "object Target { data: str, }\ntest \"t\" {\n    _: Target = .{ data = \"a\", extra = 1 };\n}\n" },
    Case { name: "string-interpolation-invalid-object-init", code: "MGS1006", line: 3, source: "test \"t\" {\n    final name = \"x\";\n    _ = \"{name{ field = 1 }}\";\n}\n" },
    Case { name: "tostring-signature", code: "MGS1006", line: 2, source: "object P {\n    fun toString(_: str) > void {}\n}\n" },
    Case { name: "collect-signature", code: "MGS1006", line: 2, source: "object C {\n    fun collect(_: str) > void {}\n}\n" },
    Case { name: "as-optional-target", code: "MGS1006", line: 3, source: "test \"t\" {\n    final v: any = \"a\";\n    _ = v as? str?;\n}\n" },
    Case { name: "local-shadowing", code: "MGS1015", line: 5, source: "test \"t\" {\n    if (true) {\n        final here = 1;\n        if (true) {\n            final here = 2;\n        }\n    }\n}\n" },
    Case { name: "empty-import", code: "MGS1011", line: 1, source: "import \"\";\n" },
    Case { name: "import-syntax-error (a type error in the imported file)", code: "MGS1006", line: 1, source: "import \"lib/bad\";\n" },
    Case { name: "unknown name", code: "MGS1001", line: 3, source: "fun main(args: [str]) > void {\n    final count = 3;\n    _ = cuont + 1;\n}\n" },
    Case { name: "unknown module member", code: "MGS1002", line: 3, source: "import \"buzz:std\";\nfun main(args: [str]) > void {\n    std\\prnt(\"x\");\n}\n" },
    Case { name: "operator types", code: "MGS1006", line: 2, source: "fun main(args: [str]) > void {\n    _ = \"count: \" + 3;\n}\n" },
    Case { name: "arity", code: "MGS1003", line: 3, source: "fun add(a: int, b: int) > int => a + b;\nfun main(args: [str]) > void {\n    _ = add(1, 2, 3);\n}\n" },
    Case { name: "missing argument", code: "MGS1003", line: 3, source: "fun add(a: int, b: int) > int => a + b;\nfun main(args: [str]) > void {\n    _ = add(1);\n}\n" },
    Case { name: "argument name", code: "MGS1003", line: 3, source: "fun add(a: int, b: int = 1) > int => a + b;\nfun main(args: [str]) > void {\n    _ = add(1, c: 2);\n}\n" },
    Case { name: "argument type (sh.run takes a list)", code: "MGS1006", line: 3, source: "import \"sh\";\nfun main(args: [str]) > void {\n    sh\\run(\"cc -o x x.c\");\n}\n" },
    Case { name: "optional used as a value", code: "MGS1007", line: 4, source: "import \"env\";\nfun main(args: [str]) > void {\n    final home = env\\get(\"HOME\");\n    _ = home + \"/bin\";\n}\n" },
    Case { name: "minus on a bool", code: "MGS1006", line: 2, source: "test \"t\" {\n    for (i: int = 0; -false; i = i + 1) {}\n}\n" },
    Case { name: "foreach over a double", code: "MGS1006", line: 2, source: "test \"t\" {\n    foreach (n in -2.0) {}\n}\n" },
    Case { name: "condition not bool", code: "MGS1006", line: 2, source: "fun main(args: [str]) > void {\n    if (1) {}\n}\n" },
    Case { name: "deep-yield", code: "MGS1006", line: 5, source: "fun ticks() > void *> str {\n    _ = yield \"tick\";\n}\nfun relay() > void {\n    ticks();\n}\n" },
    Case { name: "deep-yield-missing-intermediate", code: "MGS1006", line: 6, source: "fun leaf() > int *> int? {\n    _ = yield 1;\n    return 2;\n}\nfun middle() > int {\n    return leaf();\n}\nfun entry() > int *> int? {\n    return middle();\n}\n" },
    Case { name: "deep-yield-wrong-intermediate-type", code: "MGS1006", line: 6, source: "fun leaf() > int *> int? {\n    _ = yield 1;\n    return 2;\n}\nfun middle() > int *> str? {\n    return leaf();\n}\n" },
    Case { name: "yield-location", code: "MGS1019", line: 2, source: "test \"t\" {\n    _ = yield \"now\";\n}\n" },
    Case { name: "yield-without-annotation", code: "MGS1006", line: 2, source: "fun gen() > void {\n    _ = yield 3;\n}\n" },
    Case { name: "yield-wrong-value-type", code: "MGS1006", line: 2, source: "fun gen() > void *> int? {\n    _ = yield \"three\";\n}\n" },
    Case { name: "final-objects", code: "MGS1004", line: 7, source: "object Pin {\n    final code: int,\n    note: str,\n}\ntest \"t\" {\n    final p = mut Pin{ code = 1, note = \"a\" };\n    p.code = 2;\n}\n" },
    Case { name: "protocol", code: "MGS1016", line: 4, source: "protocol Runs {\n    fun run() > void;\n}\nobject<Runs> Job {\n    id: int,\n}\n" },
    Case { name: "as-bang-optional-target", code: "MGS1006", line: 3, source: "test \"t\" {\n    final v: any = 1;\n    _ = v as! int?;\n}\n" },
    Case { name: "match-duplicate-condition-folded", code: "MGS1017", line: 4, source: "test \"t\" {\n    _ = match (6) {\n        2 * 3 -> \"a\",\n        6 -> \"b\",\n        else -> \"c\",\n    };\n}\n" },
    Case { name: "match-duplicate-condition-number", code: "MGS1017", line: 4, source: "test \"t\" {\n    _ = match (2) {\n        2 -> \"a\",\n        2.0 -> \"b\",\n        else -> \"c\",\n    };\n}\n" },
    Case { name: "match-duplicate-condition-same-branch", code: "MGS1017", line: 3, source: "test \"t\" {\n    _ = match (\"x\") {\n        \"x\", \"x\" -> 1,\n        else -> 2,\n    };\n}\n" },
    Case { name: "match-overlapping-folded-range", code: "MGS1017", line: 4, source: "test \"t\" {\n    _ = match (3) {\n        0..(1 + 4) -> \"a\",\n        2..9 -> \"b\",\n        else -> \"c\",\n    };\n}\n" },
    Case { name: "match-overlapping-range", code: "MGS1017", line: 4, source: "test \"t\" {\n    _ = match (3) {\n        0..10 -> \"a\",\n        9..20 -> \"b\",\n        else -> \"c\",\n    };\n}\n" },
    Case { name: "match-range-containing-literal", code: "MGS1017", line: 4, source: "test \"t\" {\n    _ = match (3) {\n        0..10 -> \"a\",\n        7 -> \"b\",\n        else -> \"c\",\n    };\n}\n" },
    Case { name: "object-field-default", code: "MGS1018", line: 2, source: "object Bag {\n    items: mut [str] = [],\n}\n" },
    Case { name: "function-param-mutable-default-value", code: "MGS1018", line: 1, source: "fun gather(into: mut {str: int} = mut {}) > void {}\n" },
    Case { name: "interpolation-block-expression", code: "MGS1019", line: 2, source: "test \"t\" {\n    _ = \"value: {from { out 1; }}\";\n}\n" },
    Case { name: "bad-pattern", code: "MGS1025", line: 2, source: "test \"t\" {\n    _ = $\"[a-z\";\n}\n" },
    Case { name: "duplicated-namespace", code: "MGS1011", line: 2, source: "import \"lib/twin_a\";\nimport \"lib/twin_b\";\n" },
    Case { name: "duplicated-own-namespace", code: "MGS1011", line: 2, source: "namespace twin;\nimport \"lib/twin_a\";\n" },
    Case { name: "tuple-shorthand-named-object", code: "MGS1019", line: 3, source: "object Cell {\n    @\"1\": int,\n    fun get() > int => this.1;\n}\n" },
    Case { name: "instance not mut (field)", code: "MGS1005", line: 4, source: "object Counter { n: int, }\ntest \"t\" {\n    final c = Counter{ n = 0 };\n    c.n = 1;\n}\n" },
    Case { name: "instance not mut (mut fun)", code: "MGS1005", line: 7, source: "object Counter {\n    n: int,\n    mut fun bump() > void { this.n = this.n + 1; }\n}\ntest \"t\" {\n    final c = Counter{ n = 0 };\n    c.bump();\n}\n" },
    Case { name: "instance not mut (this in a plain method)", code: "MGS1005", line: 3, source: "object Counter {\n    n: int,\n    fun reset() > void { this.n = 0; }\n}\n" },
    Case { name: "instance not mut (a `mut` parameter given a plain instance)", code: "MGS1006", line: 4, source: "object Counter { n: int, }\nfun bump(c: mut Counter) > void { c.n = c.n + 1; }\ntest \"t\" {\n    bump(Counter{ n = 0 });\n}\n" },
];

/// Upstream's parser refuses an object, enum or protocol declared inside
/// a function ("Object must be defined at top-level."). The check said
/// "unknown name" at each use; it now says what is wrong once, at the
/// declaration, and the uses add nothing.
#[test]
fn a_type_declared_in_a_function_is_one_finding_at_its_declaration() {
    let ws = Workspace::new();
    let cases = [
        (
            "object",
            "object Local { x: int = 1, }",
            "final l = Local{};\n    return l.x;",
        ),
        (
            "enum",
            "enum Local { a, b }",
            "return if (Local.a == Local.b) 1 else 0;",
        ),
        (
            "protocol",
            "protocol Local { fun f() > void; }",
            "return 0;",
        ),
    ];
    for (keyword, declaration, body) in cases {
        let source = format!("fun make() > int {{\n    {declaration}\n    {body}\n}}\n");
        let ds = without_unused(ws.check(&source));
        assert_eq!(found(&ds), [("MGS1019".to_string(), 2)], "{source}");
        let shown = render(&ds[0], MessageFormat::Human);
        let said = format!("{keyword} `Local` is declared inside a function");
        assert!(shown.contains(&said), "{shown}");
    }
}

fn workspace_with_libs() -> Workspace {
    let ws = Workspace::new();
    ws.write(
        "spells/lib/shapes.buzz",
        "namespace shapes;\nexport object Square { side: int, }\n",
    );
    ws.write("spells/lib/bad.buzz", "final n: int = \"one\";\n");
    ws.write(
        "spells/lib/twin_a.buzz",
        "namespace twin;\nexport fun a() > int => 1;\n",
    );
    ws.write(
        "spells/lib/twin_b.buzz",
        "namespace twin;\nexport fun b() > int => 2;\n",
    );
    ws
}

#[test]
fn each_upstream_compile_error_is_caught_before_the_run() {
    let ws = workspace_with_libs();
    let mut failures = Vec::new();
    for case in CASES {
        let ds = ws.check(case.source);
        let got = found(&ds);
        if got.first().map(|(c, l)| (c.as_str(), *l)) != Some((case.code, case.line)) {
            failures.push(format!(
                "{}: expected {} at line {}, got {got:?}",
                case.name, case.code, case.line
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A method the run does not have, on a value whose type the checker
/// knows: one row per kind of receiver, with the message and the place
/// (`line:column`, underline width) the check gives before anything runs.
#[test]
fn unknown_methods_of_built_in_and_protocol_values_are_refused_before_the_run() {
    let ws = Workspace::new();
    let main = |body: &str| format!("fun main(args: [str]) > void {{\n    _ = args;\n{body}\n}}\n");
    let rows = [
        ("pat", main("    final p = $\"a+\";\n    _ = p.matchh(\"aa\");"), "`pat` has no member `matchh`", (4, 11, 6)),
        ("map", main("    final m: {str: int} = {\"a\": 1};\n    _ = m.hasKeyy(\"a\");"), "`{str: int}` has no member `hasKeyy`", (4, 11, 7)),
        ("list", main("    final l = mut [1, 2];\n    l.push(3);"), "`mut [int]` has no member `push`", (4, 7, 4)),
        ("str", main("    _ = \"abc\".uppr();"), "`str` has no member `uppr`", (3, 15, 4)),
        ("rg", main("    final r = 0..3;\n    _ = r.size();"), "`rg` has no member `size`", (4, 11, 4)),
        ("int", main("    final n = 3;\n    _ = n.abs();"), "`int` has no member `abs`", (4, 11, 3)),
        ("list, a field", main("    final l = [1];\n    _ = l.length;"), "`[int]` has no member `length`", (4, 11, 6)),
        ("list, through `?.`", main("    final l: [int]? = null;\n    _ = l?.lenn();"), "`[int]` has no member `lenn`", (4, 12, 4)),
        (
            "enum case",
            "enum Color { red, }\nfun main(args: [str]) > void {\n    _ = args;\n    final c = Color.red;\n    _ = c.val;\n}\n".to_string(),
            "a case of enum `Color` has no member `val`",
            (5, 11, 3),
        ),
        (
            "protocol",
            "protocol Named { fun name() > str; }\nobject<Named> Dog { fun name() > str => \"dog\"; fun bark() > str => \"woof\"; }\nfun greet(n: Named) > str {\n    return n.bark();\n}\n".to_string(),
            "protocol `Named` has no member `bark`",
            (4, 14, 4),
        ),
    ];
    for (kind, source, message, (line, column, width)) in rows {
        let ds = without_unused(ws.check(&source));
        let Some(d) = ds.first() else {
            panic!("{kind}: nothing reported");
        };
        let loc = d.location.as_ref().unwrap();
        assert_eq!(
            (d.code, d.message.as_str(), loc.line, loc.column, d.span),
            (Some(Code::Mgs1002), message, line, column, width),
            "{kind}"
        );
    }
}

/// A finding about an expression underlines the whole expression as
/// written, from its leftmost operand to its last token, not the one
/// character its operator or member name starts at.
#[test]
fn a_finding_underlines_the_whole_expression() {
    let ws = Workspace::new();
    let prelude = "object P { name: str, }\nfun f(a: int, b: int) > int => a + b;\n";
    let rows = [
        ("    final s: str = n + 2;", "MGS1006", 20, 5),
        ("    final s: str = f(n, 2);", "MGS1006", 20, 7),
        (
            "    final p = P{ name = \"x\" };\n    final k: int = p.name;",
            "MGS1006",
            20,
            6,
        ),
        ("    final s: str = n * 2 - 1;", "MGS1006", 20, 9),
        ("    _ = -true;", "MGS1006", 10, 4),
    ];
    for (body, code, column, width) in rows {
        let source = format!(
            "{prelude}fun main(args: [str]) > void {{\n    _ = args;\n    final n = 1;\n{body}\n}}\n"
        );
        let line = 6 + body.matches('\n').count() as u32;
        let ds = without_unused(ws.check(&source));
        let Some(d) = ds.first() else {
            panic!("{body}: nothing reported");
        };
        let loc = d.location.as_ref().unwrap();
        assert_eq!(
            (d.code.map(|c| c.to_string()), loc.line, loc.column, d.span),
            (Some(code.to_string()), line, column, width),
            "{body}"
        );
    }
}

#[test]
fn an_imported_files_error_points_into_that_file() {
    let ws = workspace_with_libs();
    let ds = ws.check("import \"lib/bad\";\n");
    let loc = ds[0].location.as_ref().unwrap();
    assert!(loc.file.ends_with("spells/lib/bad.buzz"), "{loc:?}");
    assert_eq!((loc.line, loc.column), (1, 16));
}

#[test]
fn several_errors_are_reported_in_one_check() {
    let ws = Workspace::new();
    let ds = without_unused(ws.check(
        "import \"buzz:std\";\nfun main(args: [str]) > void {\n    std\\prnt(\"a\");\n    final n = 1;\n    n = 2;\n    _ = nope;\n}\n",
    ));
    assert_eq!(
        found(&ds),
        [
            ("MGS1002".into(), 3),
            ("MGS1004".into(), 5),
            ("MGS1001".into(), 6)
        ]
    );
}

#[test]
fn did_you_mean_offers_the_near_name() {
    let ws = Workspace::new();
    for (source, near) in [
        ("import \"buzz:std\";\nfun main(args: [str]) > void { std\\prnt(\"x\"); }\n", "print"),
        ("fun main(args: [str]) > void {\n    final count = 1;\n    _ = cuont;\n}\n", "count"),
        ("object P { width: int, }\nfun main(args: [str]) > void {\n    final p = P{ width = 1 };\n    _ = p.widht;\n}\n", "width"),
        ("import \"fs\";\nfun main(args: [str]) > void { fs\\raed(\"x\"); }\n", "read"),
        ("import \"buzz:stdd\";\n", "buzz:std"),
    ] {
        let ds = ws.check(source);
        let help = ds[0].help.clone().unwrap_or_default();
        assert_eq!(help, format!("did you mean `{near}`?"), "{source}");
    }
}

#[test]
fn unreachable_code_shadowing_and_unused_names_warn_without_stopping_the_spell() {
    let ws = Workspace::new();
    let report_of = |source: &str| {
        let path = ws.write("spells/probe.buzz", source);
        let program = buzz::parse(&path, source).unwrap();
        Interpreter::new(&path, Vec::new()).check(&program, source)
    };
    let r = report_of("fun main(args: [str]) > void {\n    return;\n    _ = 1;\n}\n");
    assert!(r.is_clean());
    assert_eq!(r.diagnostics()[0].severity, Severity::Warning);
    let r = report_of("fun main(args: [str]) > void {\n    final spare = 1;\n    _ = args;\n}\n");
    assert!(r.is_clean());
    let d = &r.diagnostics()[0];
    assert_eq!(
        (d.code, d.severity),
        (Some(Code::Mgs1026), Severity::Warning)
    );
    let r = report_of("fun main(args: [str]) > void {\n    _ = nope;\n}\n");
    assert!(!r.is_clean());
}

/// The spell's own sources that must check clean: the programs that run
/// (`tests/buzz/pass`) and the example spells.
fn runnable_programs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    // The libraries magus writes in Buzz (`buzz:io`, `buzz:test`, …) too.
    for dir in ["tests/buzz/pass", "spells", "src/buzz/lib", "src/bindings"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "buzz") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Programs of `tests/buzz/pass` that run (the interpreter does not
/// check) but that the check refuses, as upstream refuses them: objects,
/// enums and protocols declared inside a function (upstream's parser:
/// "Object must be defined at top-level."). Each must still be refused,
/// so that the list cannot go stale.
const RUN_NOT_CHECKED: &[&str] = &["local_declarations.buzz"];

#[test]
fn every_program_that_runs_checks_clean() {
    let ws = Workspace::new();
    let programs = runnable_programs();
    assert!(programs.len() > 50, "found {}", programs.len());
    let mut failures = Vec::new();
    for path in programs {
        let errors: Vec<String> = ws
            .check_file(&path)
            .iter()
            .filter(|d| d.is_error())
            .map(|d| render(d, MessageFormat::Human))
            .collect();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if RUN_NOT_CHECKED.contains(&&*name) {
            if errors.is_empty() {
                failures.push(format!("{}: checks clean now", path.display()));
            }
        } else if !errors.is_empty() {
            failures.push(format!("{}:\n{}", path.display(), errors.join("")));
        }
    }
    assert!(
        failures.is_empty(),
        "false positives:\n{}",
        failures.join("\n")
    );
}

#[test]
fn the_native_table_names_only_natives_that_exist() {
    let ws = Workspace::new();
    for (module, name) in buzz::check::listed_natives() {
        let source = format!(
            "import \"{module}\";\nfun main(args: [str]) > void {{ _ = {module}\\{name}; }}\n"
        );
        let ds = ws.check(&source);
        assert!(ds.is_empty(), "{module}.{name}: {ds:?}");
    }
}

#[test]
fn a_check_reads_imports_through_the_gate() {
    let ws = Workspace::with_config("sandbox:\n  enabled: true\n");
    let outside = tempfile::tempdir_in(std::env::var("HOME").unwrap_or("/root".into())).unwrap();
    let secret = outside.path().join("secret.buzz");
    std::fs::write(&secret, "final token = \"hunter2\";\n").unwrap();
    let spec = secret.with_extension("");
    let ds = ws.check(&format!("import \"{}\";\n", spec.display()));
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert_eq!(
        ds[0].code.map(|c| c.to_string()).as_deref(),
        Some("MGS2001"),
        "{ds:?}"
    );
    let text: String = ds.iter().map(|d| render(d, MessageFormat::Json)).collect();
    assert!(!text.contains("hunter2"), "{text}");
}

/// Five representative errors, human and JSON, with the temporary
/// directory's path replaced by `WS`.
#[test]
fn five_representative_errors_render_as_pinned() {
    let ws = workspace_with_libs();
    let cases = [
        ("unknown_member", "import \"buzz:std\";\n\nfun main(args: [str]) > void {\n    std\\prnt(\"hello\");\n}\n"),
        ("operator", "fun main(args: [str]) > void {\n    final count = 3;\n    final text = \"count: \" + count;\n}\n"),
        ("argument_list", "import \"sh\";\n\nfun main(args: [str]) > void {\n    sh\\run(\"cc -o hello hello.c\");\n}\n"),
        ("optional", "import \"env\";\n\nfun main(args: [str]) > void {\n    final home = env\\get(\"HOME\");\n    final bin = home + \"/bin\";\n}\n"),
        ("arity", "fun greet(name: str, punctuation: str = \"!\") > str {\n    return \"hello {name}{punctuation}\";\n}\n\nfun main(args: [str]) > void {\n    _ = greet(\"you\", punctation: \"?\");\n}\n"),
    ];
    let root = ws.dir.path().display().to_string();
    for (name, source) in cases {
        let ds = without_unused(ws.check(source));
        assert_eq!(ds.len(), 1, "{name}: {ds:?}");
        let human = render(&ds[0], MessageFormat::Human).replace(&root, "WS");
        let json = render(&ds[0], MessageFormat::Json).replace(&root, "WS");
        insta::assert_snapshot!(format!("{name}_human"), human);
        insta::assert_snapshot!(format!("{name}_json"), json);
    }
}

#[test]
fn a_loader_error_is_one_located_error() {
    let ws = Workspace::new();
    let ds = ws.check("import \"lib/missing\";\n");
    assert_eq!(found(&ds), [("MGS1011".to_string(), 1)]);
    assert!(ds[0].message.contains("lib/missing"), "{}", ds[0].message);
}

/// Upstream's compile errors that are syntax: each is a located syntax
/// error before anything runs (no `MGS` code: the parser's), at the line
/// of the mistake.
const SYNTAX: &[(&str, u32, &str)] = &[
    (
        "invalid-float-literal",
        2,
        "test \"t\" {\n    _ = 2.5_;\n}\n",
    ),
    (
        "invalid-int-bin-literal",
        2,
        "test \"t\" {\n    _ = 0b_1010;\n}\n",
    ),
    (
        "invalid-int-hex-literal",
        2,
        "test \"t\" {\n    _ = 0x_beef;\n}\n",
    ),
    ("invalid-int-literal", 2, "test \"t\" {\n    _ = 7_;\n}\n"),
    (
        "tuple-mix",
        2,
        "test \"t\" {\n    _ = .{ id = 3, \"x\" };\n}\n",
    ),
    (
        "long-tuple",
        2,
        "test \"t\" {\n    _ = .{ \"a\", \"b\", \"c\", \"d\", \"e\" };\n}\n",
    ),
    (
        "tuple-shorthand-binary-index",
        3,
        "test \"t\" {\n    final pair = .{ 1, 2 };\n    _ = pair.0b1;\n}\n",
    ),
    (
        "tuple-shorthand-hex-index",
        3,
        "test \"t\" {\n    final pair = .{ 1, 2 };\n    _ = pair.0x1;\n}\n",
    ),
    (
        "tuple-shorthand-out-of-range",
        3,
        "test \"t\" {\n    final pair = .{ 1, 2 };\n    _ = pair.5;\n}\n",
    ),
    (
        "tuple-shorthand-underscore-index",
        3,
        "test \"t\" {\n    final pair = .{ 1, 2 };\n    _ = pair.1_1;\n}\n",
    ),
    (
        "match-else-missing-arrow",
        4,
        "test \"t\" {\n    _ = match (1) {\n        1 -> \"a\",\n        else \"b\",\n    };\n}\n",
    ),
    (
        "bad-fun-signature",
        1,
        "fun answer() > {\n    return 42;\n}\n",
    ),
];

#[test]
fn each_upstream_syntax_error_is_located_before_the_run() {
    let ws = Workspace::new();
    let mut failures = Vec::new();
    for (name, line, source) in SYNTAX {
        let got = found(&ws.check(source));
        if got != [("-".to_string(), *line)] {
            failures.push(format!(
                "{name}: expected a syntax error at line {line}, got {got:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The diagnostic a run of `source` (as `main`) ends with.
fn run_error(ws: &Workspace, source: &str) -> Diagnostic {
    let path = ws.write("spells/probe.buzz", source);
    let program = buzz::parse(&path, source).unwrap();
    let ds = ws.check_file(&path);
    assert!(ds.iter().all(|d| !d.is_error()), "{ds:?}");
    Interpreter::new(&path, bindings::modules(&ws.session))
        .with_output(Box::new(std::io::sink()))
        .run(&program, Vec::new())
        .unwrap_err()
        .to_diagnostic()
}

/// A sandbox denial, uncaught, is placed on the argument that holds the
/// refused path and underlines all of it, whatever the argument is: a
/// literal, a variable, an interpolation, a later argument, a list.
#[test]
fn a_denial_underlines_the_refused_argument() {
    let ws = Workspace::with_config("sandbox:\n  enabled: true\n");
    // A program outside the grants (the workspace is under `/tmp`): one
    // that exists, since a missing one is "not found", not a denial.
    let outside = tempfile::tempdir_in(crate::scratch::base()).unwrap();
    let evil = outside.path().join("evil");
    std::fs::write(&evil, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&evil, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let evil = evil.to_str().unwrap();
    let run_evil = format!("    sh.run(\n        [\"{evil}\", \"x\"]);");
    let rows = [
        ("    _ = fs.read(\"/etc/shadow\");", "MGS2001", 17, 13),
        (
            "    final p = \"/etc/shadow\";\n    _ = fs\\read(p);",
            "MGS2001",
            17,
            1,
        ),
        (
            "    final d = \"/etc\";\n    _ = fs.read(\"{d}/shadow\");",
            "MGS2001",
            17,
            12,
        ),
        (
            "    fs.copy(\"magus.yaml\", \"/etc/magus-copy\");",
            "MGS2002",
            27,
            17,
        ),
        (run_evil.as_str(), "MGS2007", 9, evil.len() as u32 + 9),
        // Refused inside `buzz:io` (written in Buzz): the spell's callee.
        (
            "    _ = io\\File.open(\"/etc/shadow\", mode: .read);",
            "MGS2001",
            9,
            12,
        ),
    ];
    for (body, code, column, width) in rows {
        let source = format!(
            "import \"fs\";\nimport \"sh\";\nimport \"buzz:io\";\nfun main(args: [str]) > void {{\n    _ = args;\n{body}\n}}\n"
        );
        let line = 6 + body.matches('\n').count() as u32;
        let path = ws.write("spells/probe.buzz", &source);
        let program = buzz::parse(&path, &source).unwrap();
        let d = Interpreter::new(&path, bindings::modules(&ws.session))
            .with_libraries(bindings::libraries())
            .with_output(Box::new(std::io::sink()))
            .run(&program, Vec::new())
            .unwrap_err()
            .to_diagnostic();
        let loc = d.location.as_ref().unwrap();
        assert_eq!(
            (d.code.map(|c| c.to_string()), loc.line, loc.column, d.span),
            (Some(code.to_string()), line, column, width),
            "{body}"
        );
    }
}

#[test]
fn run_time_errors_upstream_lists_keep_their_place_and_code() {
    let ws = Workspace::new();
    // as-bang-runtime-error: the cast that fails, located and coded.
    let d = run_error(
        &ws,
        "fun main(args: [str]) > void {\n    final v: any = 12;\n    final s = v as! str;\n    _ = s;\n}\n",
    );
    let code = d.code.map(|c| c.to_string());
    assert_eq!(code.as_deref(), Some("MGS1023"), "{d:?}");
    assert_eq!(d.location.as_ref().map(|l| l.line), Some(3), "{d:?}");
    // error-message: an object's `message` is what the user reads.
    let d = run_error(
        &ws,
        "fun fail() > void !> obj{ message: str } {\n    throw .{ message = \"disk full\" };\n}\nfun main(args: [str]) > void {\n    fail();\n}\n",
    );
    assert_eq!(d.message, "uncaught error: disk full");
    assert_eq!(d.code.map(|c| c.to_string()).as_deref(), Some("MGS1024"));
    assert_eq!(d.location.as_ref().map(|l| l.line), Some(2), "{d:?}");
    // fiber-error-location: an error inside a fiber points into it.
    let d = run_error(
        &ws,
        "fun count(n: int) > str *> int? {\n    for (i: int = 0; i < n; i = i + 1) {\n        if (i == 2) {\n            throw \"stop\";\n        }\n        _ = yield i;\n    }\n    return \"done\";\n}\nfun main(args: [str]) > void {\n    final counter = &count(5);\n    while (!counter.over()) {\n        _ = resume counter;\n    }\n}\n",
    );
    let loc = d.location.as_ref().unwrap();
    assert_eq!((loc.line, loc.column), (4, 13), "{d:?}");
}

/// Where the resolver's levels and the checker's walk part (a local
/// `fun` used before its line, a `do … until` condition, a `test` inside
/// a function, an arrow method typed at its use), the checker's findings
/// are those of its own scopes (in a debug build, each use is also
/// checked against a search by name).
#[test]
fn the_checker_reads_the_resolvers_answer_and_keeps_its_own_scopes_where_they_part() {
    let ws = Workspace::new();
    let source = r#"final later = "text";
fun f() > int {
    final early: int = later;
    fun later() > int {
        return 1;
    }
    return early + later();
}
fun g() > void {
    final a = "outer";
    do {
        final a = 1;
        _ = a;
    } until (a > 0);
    test "nested" {
        if (true) {
            final a = 2;
            _ = a;
        }
    }
}
object Holder {
    n: int = 1,
    fun twice() => this.n * 2,
}
fun main() > void {
    final h = Holder{};
    final s: str = h.twice();
    _ = f();
    g();
}
"#;
    let got = found(&ws.check(source));
    let want = [
        ("MGS1006", 3),
        ("MGS1015", 12),
        ("MGS1006", 14),
        ("MGS1006", 28),
        ("MGS1026", 28),
    ];
    let want: Vec<(String, u32)> = want.iter().map(|(c, l)| (c.to_string(), *l)).collect();
    assert_eq!(got, want);
}
