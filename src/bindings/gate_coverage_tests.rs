//! Every native a spell can reach is accounted for: each one that touches
//! the filesystem or starts a program is called with an attacker's
//! argument (a planted secret in a fake HOME, a write outside the
//! workspace, a program outside the grants) and must be refused by the gate
//! with the MGS code `fs.*`/`sh.*` give; every other native is listed with
//! why it touches nothing. A native added without a line here fails the
//! test: the bindings' natives and the interpreter's built-in ones (`std`,
//! `math`, …) alike. Libraries written in Buzz (`buzz:io`, `buzz:test`, …)
//! reach only natives, so they are covered through these. `import` of a
//! spell file is attacked the same way.
//!
//! The session is built as `magus run` builds it, minus Landlock (which
//! would confine the test runner), so what is tested is the gate alone.

use crate::scratch;

use crate::bindings::{self, Session};
use crate::buzz::program_tests::Captured;
use crate::buzz::{self, Interpreter};
use crate::enforce::gate::Gate;
use crate::enforce::Domain;
use crate::policy::{self, SandboxState, StartupInput, WorkspaceArg};
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::rc::Rc;

const SECRET: &str = "COVERAGE-SECRET-7f3a";

/// How a native is checked. `{secret}`, `{outside}`, `{tool}` and `{ws}`
/// in a call are replaced by the attack paths.
enum Check {
    /// The call must raise `SandboxError` with this code.
    Denied(&'static str, &'static str),
    /// The call must return `null` (a lookup that finds nothing it may use).
    Null(&'static str),
    /// Touches no file and starts no program, and why.
    Pure(&'static str),
    /// Starts a fixed program the gate allows; what that program then does
    /// is the kernel layer's (Landlock) to confine, and why.
    ChildConfined(&'static str),
}

fn checks() -> Vec<(&'static str, &'static str, Check)> {
    use Check::*;
    vec![
        ("fs", "read", Denied("fs\\read(\"{secret}\")", "MGS2001")),
        (
            "fs",
            "exists",
            Denied("fs\\exists(\"{secret}\")", "MGS2001"),
        ),
        ("fs", "list", Denied("fs\\list(\"{secretdir}\")", "MGS2001")),
        (
            "fs",
            "write",
            Denied("fs\\write(\"{outside}\", \"x\")", "MGS2002"),
        ),
        (
            "fs",
            "append",
            Denied("fs\\append(\"{outside}\", \"x\")", "MGS2002"),
        ),
        (
            "fs",
            "makeDirectory",
            Denied("fs\\makeDirectory(\"{outside}.d\")", "MGS2002"),
        ),
        (
            "fs",
            "copy",
            Denied("fs\\copy(\"{secret}\", \"{ws}/copy\")", "MGS2001"),
        ),
        (
            "fs",
            "move",
            Denied("fs\\move(\"{secret}\", \"{ws}/moved\")", "MGS2002"),
        ),
        (
            "fs",
            "delete",
            Denied("fs\\delete(\"{secret}\")", "MGS2002"),
        ),
        (
            "fs",
            "currentDirectory",
            Pure("the gate's own working directory, no system call"),
        ),
        ("sh", "run", Denied("sh\\run([\"{tool}\"])", "MGS2007")),
        (
            "sh",
            "shell",
            ChildConfined(
                "starts /bin/sh through the same gated launch as sh.run; the shell's own opens are Landlock's",
            ),
        ),
        (
            "sh",
            "output",
            Denied("sh\\output([\"{tool}\"])", "MGS2007"),
        ),
        ("sh", "which", Null("sh\\which(\"{tool}\")")),
        (
            "env",
            "get",
            Pure("reads the session's scrubbed environment copy"),
        ),
        (
            "env",
            "set",
            Pure("writes the session's environment copy (children see it)"),
        ),
        ("env", "names", Pure("reads the session's environment copy")),
        (
            "buzz:fs",
            "currentDirectory",
            Pure("the gate's own working directory, no system call"),
        ),
        (
            "buzz:fs",
            "makeDirectory",
            Denied("bfs\\makeDirectory(\"{outside}.d\")", "MGS2002"),
        ),
        (
            "buzz:fs",
            "deleteFile",
            Denied("bfs\\deleteFile(\"{secret}\")", "MGS2002"),
        ),
        (
            "buzz:fs",
            "deleteDirectory",
            Denied("bfs\\deleteDirectory(\"{secretdir}\")", "MGS2001"),
        ),
        (
            "buzz:fs",
            "move",
            Denied("bfs\\move(\"{secret}\", \"{ws}/moved\")", "MGS2002"),
        ),
        (
            "buzz:fs",
            "list",
            Denied("bfs\\list(\"{secretdir}\")", "MGS2001"),
        ),
        (
            "buzz:fs",
            "exists",
            Denied("bfs\\exists(\"{secret}\")", "MGS2001"),
        ),
        (
            "buzz:os",
            "env",
            Pure("reads the session's scrubbed environment copy"),
        ),
        (
            "buzz:os",
            "execute",
            Denied("os\\execute([\"{tool}\"])", "MGS2007"),
        ),
        (
            "buzz:os",
            "tmpDir",
            Pure("reads the session's environment copy"),
        ),
        ("buzz:os", "time", Pure("reads the clock, no file or program")),
        ("buzz:os", "sleep", Pure("sleeps the interpreter thread")),
        (
            "buzz:os",
            "tmpFilename",
            Pure("builds a name, creates nothing"),
        ),
        ("buzz:os", "exit", Pure("asks the interpreter to end the run")),
        (
            "ioraw",
            "open",
            Denied("raw\\open(\"{secret}\", 0)", "MGS2001"),
        ),
        (
            "ioraw",
            "read",
            Pure("reads a handle `open` made through the gate, or stdin"),
        ),
        (
            "ioraw",
            "write",
            Pure("appends through the gate to a path `open` checked, or stdout/stderr"),
        ),
        ("ioraw", "close", Pure("forgets a handle")),
        ("ioraw", "runFile", Pure("refuses: io\\runFile is deliberately missing")),
        (
            "ioraw",
            "isTTY",
            Pure("asks whether a standard stream is a terminal"),
        ),
        // The interpreter's own built-in modules.
        ("std", "print", Pure("writes to the interpreter's output handle (the spell's stdout)")),
        ("std", "currentFiber", Pure("gives the running fiber, a value of the interpreter")),
        ("std", "assert", Pure("raises a Buzz error, touches nothing")),
        ("std", "panic", Pure("raises a Buzz error, touches nothing")),
        ("std", "parseInt", Pure("converts a value in memory")),
        ("std", "parseDouble", Pure("converts a value in memory")),
        ("std", "toString", Pure("converts a value in memory")),
        ("std", "toInt", Pure("converts a value in memory")),
        ("std", "toDouble", Pure("converts a value in memory")),
        ("std", "toUd", Pure("converts a value in memory")),
        ("std", "parseUd", Pure("converts a value in memory")),
        ("std", "char", Pure("converts a value in memory")),
        ("std", "args", Pure("gives the spell's own arguments, already in memory")),
        ("std", "exit", Pure("asks the interpreter to end the run")),
        ("std", "random", Pure("a xorshift generator in memory, seeded once")),
        ("math", "abs", Pure("arithmetic on its arguments")),
        ("math", "acos", Pure("arithmetic on its arguments")),
        ("math", "asin", Pure("arithmetic on its arguments")),
        ("math", "atan", Pure("arithmetic on its arguments")),
        ("math", "ceil", Pure("arithmetic on its arguments")),
        ("math", "cos", Pure("arithmetic on its arguments")),
        ("math", "deg", Pure("arithmetic on its arguments")),
        ("math", "exp", Pure("arithmetic on its arguments")),
        ("math", "floor", Pure("arithmetic on its arguments")),
        ("math", "log", Pure("arithmetic on its arguments")),
        ("math", "maxDouble", Pure("arithmetic on its arguments")),
        ("math", "maxInt", Pure("arithmetic on its arguments")),
        ("math", "minDouble", Pure("arithmetic on its arguments")),
        ("math", "minInt", Pure("arithmetic on its arguments")),
        ("math", "pow", Pure("arithmetic on its arguments")),
        ("math", "rad", Pure("arithmetic on its arguments")),
        ("math", "sin", Pure("arithmetic on its arguments")),
        ("math", "sqrt", Pure("arithmetic on its arguments")),
        ("math", "tan", Pure("arithmetic on its arguments")),
        ("buzz:debug", "dump", Pure("writes to the interpreter's output handle (the spell's stdout)")),
        ("buzz:gc", "allocated", Pure("reads magus's own heap counter")),
        ("buzz:gc", "collect", Pure("runs queued `collect` methods in the interpreter")),
        ("bufraw", "bytes", Pure("converts bytes in memory for buzz:buffer")),
        ("bufraw", "doubleBytes", Pure("converts bytes in memory for buzz:buffer")),
        ("bufraw", "doubleFrom", Pure("converts bytes in memory for buzz:buffer")),
        ("bufraw", "intBytes", Pure("converts bytes in memory for buzz:buffer")),
        ("bufraw", "intFrom", Pure("converts bytes in memory for buzz:buffer")),
        ("bufraw", "text", Pure("converts bytes in memory for buzz:buffer")),
        ("bufraw", "zeros", Pure("converts bytes in memory for buzz:buffer")),
        ("cryptoraw", "digest", Pure("hashes a string in memory for buzz:crypto")),
        ("jsonraw", "check", Pure("JSON in memory (serde_json) for buzz:serialize")),
        ("jsonraw", "decode", Pure("JSON in memory (serde_json) for buzz:serialize")),
        ("jsonraw", "encode", Pure("JSON in memory (serde_json) for buzz:serialize")),
        ("jsonraw", "q", Pure("JSON in memory (serde_json) for buzz:serialize")),
    ]
}

struct Fixture {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    home: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir_in(scratch::base()).expect("scratch dir");
        let ws = dir.path().join("ws");
        let home = dir.path().join("home");
        std::fs::create_dir_all(ws.join("spells")).unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(ws.join("magus.yaml"), "sandbox:\n  enabled: true\n").unwrap();
        std::fs::write(home.join(".ssh/id_rsa"), SECRET).unwrap();
        std::fs::write(
            home.join(".ssh/lib.buzz"),
            format!("final s = \"{SECRET}\";\n"),
        )
        .unwrap();
        let tool = home.join("tool");
        std::fs::write(&tool, format!("#!/bin/sh\necho {SECRET}\n")).unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        Fixture {
            _dir: dir,
            ws,
            home,
        }
    }

    fn session(&self) -> Rc<Session> {
        let env: Vec<(OsString, OsString)> = vec![
            ("HOME".into(), self.home.clone().into()),
            ("PATH".into(), "/usr/bin:/bin".into()),
        ];
        let startup = policy::startup(StartupInput {
            workspace: WorkspaceArg::Explicit(&self.ws),
            env: &env,
            spell: None,
        })
        .expect("policy resolves");
        assert_eq!(startup.policy.state(), SandboxState::On);
        let gate = Gate::new(Rc::new(startup.policy), self.ws.clone());
        let sink: bindings::DiagnosticSink = Rc::new(|_| {});
        #[cfg(kernel_layer)]
        let domain = Domain::unconfined(crate::enforce::landlock::Unavailable::ForcedOff);
        #[cfg(not(kernel_layer))]
        let domain = Domain::interpreter_only();
        Rc::new(Session::new(gate, domain, env, Vec::new(), sink))
    }

    fn fill(&self, call: &str) -> String {
        call.replace("{secretdir}", &self.home.join(".ssh").to_string_lossy())
            .replace("{secret}", &self.home.join(".ssh/id_rsa").to_string_lossy())
            .replace("{outside}", &self.home.join("planted").to_string_lossy())
            .replace("{tool}", &self.home.join("tool").to_string_lossy())
            .replace("{ws}", &self.ws.to_string_lossy())
    }
}

/// Runs `body` as `main` with every module imported; returns its output.
fn run_spell(fx: &Fixture, session: &Rc<Session>, body: &str) -> String {
    let source = format!(
        "import \"std\";\nimport \"fs\";\nimport \"sh\";\nimport \"env\";\nimport \"buzz:fs\" as bfs;\nimport \"buzz:os\" as os;\nimport \"magus:ioraw\" as raw;\n\nfun main(args: [str]) > void {{\n{body}\n}}\n"
    );
    let file = fx.ws.join("spells/probe.buzz");
    let out = Captured::default();
    let program = buzz::parse(&file, &source).expect("probe parses");
    let result = Interpreter::new(&file, bindings::modules(session))
        .with_loader(bindings::source_loader(session))
        .with_output(Box::new(out.clone()))
        .run(&program, Vec::new());
    let text = String::from_utf8_lossy(&out.0.borrow()).into_owned();
    match result {
        Ok(_) => text,
        Err(e) => format!("{text}ERROR {e}"),
    }
}

fn probe(call: &str) -> String {
    format!(
        "    try {{\n        final v = {call};\n        std\\print(\"RETURNED {{v}}\");\n    }} catch (e: SandboxError) {{\n        std\\print(\"DENIED {{e.code}}\");\n    }}"
    )
}

#[test]
fn every_registered_native_is_classified() {
    let fx = Fixture::new();
    let session = fx.session();
    // What a spell's interpreter has, as `magus run` builds it: the
    // bindings and the interpreter's own built-in modules (`std`, …).
    let file = fx.ws.join("spells/probe.buzz");
    let registered: BTreeSet<(String, String)> =
        Interpreter::new(&file, bindings::modules(&session))
            .native_functions()
            .into_iter()
            .collect();
    let listed: BTreeSet<(String, String)> = checks()
        .iter()
        .map(|(m, f, _)| (m.to_string(), f.to_string()))
        .collect();
    let unlisted: Vec<_> = registered.difference(&listed).collect();
    let stale: Vec<_> = listed.difference(&registered).collect();
    assert!(
        unlisted.is_empty(),
        "natives with no gate check: {unlisted:?}"
    );
    assert!(
        stale.is_empty(),
        "checks for natives that no longer exist: {stale:?}"
    );
}

#[test]
fn every_native_that_touches_the_os_is_refused_by_the_gate() {
    let fx = Fixture::new();
    let session = fx.session();
    let mut failures = Vec::new();
    for (module, function, check) in checks() {
        let (call, want) = match check {
            Check::Denied(call, code) => (call, format!("DENIED {code}")),
            Check::Null(call) => (call, "RETURNED null".to_string()),
            Check::Pure(why) | Check::ChildConfined(why) => {
                // An exemption must say why the native needs no gate.
                if why.len() < 12 {
                    failures.push(format!("{module}.{function}: exempt without a reason"));
                }
                continue;
            }
        };
        let out = run_spell(&fx, &session, &probe(&fx.fill(call)));
        if out.trim() != want || out.contains(SECRET) {
            failures.push(format!(
                "{module}.{function}: want `{want}`, got `{}`",
                out.trim()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let planted = fx.home.join("planted");
    assert!(!planted.exists() && !planted.with_extension("d").exists());
    assert!(!fx.ws.join("copy").exists() && !fx.ws.join("moved").exists());
    assert!(
        fx.home.join(".ssh/id_rsa").exists(),
        "the secret was deleted or moved"
    );
}

#[test]
fn control_the_same_calls_work_inside_the_workspace() {
    let fx = Fixture::new();
    let session = fx.session();
    std::fs::write(fx.ws.join("mine.txt"), "mine").unwrap();
    let body = "    std\\print(fs\\read(\"mine.txt\"));\n    std\\print(\"{bfs\\exists(\"mine.txt\")}\");\n    final h = raw\\open(\"mine.txt\", 0);\n    std\\print(raw\\read(h, -1) ?? \"\");\n    std\\print(\"{os\\execute([\"/bin/true\"])}\");";
    let out = run_spell(&fx, &session, body);
    assert_eq!(out, "mine\ntrue\nmine\n0\n");
}

#[test]
fn importing_a_file_goes_through_the_gate() {
    let fx = Fixture::new();
    let session = fx.session();
    let lib = fx.home.join(".ssh/lib");
    let source = format!(
        "import \"std\";\nimport \"{}\";\n\nfun main(args: [str]) > void {{ std\\print(\"LEAK\"); }}\n",
        lib.display()
    );
    let file = fx.ws.join("spells/importer.buzz");
    let program = buzz::parse(&file, &source).expect("parses");
    let error = Interpreter::new(&file, bindings::modules(&session))
        .with_loader(bindings::source_loader(&session))
        .with_output(Box::new(std::io::sink()))
        .run(&program, Vec::new())
        .expect_err("the import is refused");
    let text = format!("{error} {:?}", error.to_diagnostic());
    assert!(text.contains("MGS2001"), "{text}");
    assert!(!text.contains(SECRET), "{text}");
}
