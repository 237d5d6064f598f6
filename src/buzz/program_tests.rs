//! Runs every Buzz program under `tests/buzz/` through the interpreter.
//! (The repository's own `hello` spell runs through the real binary, in
//! `tests/cli/hello.rs`.)
//!
//! `pass/NAME.buzz` must print exactly `NAME.out` and exit with `NAME.status`
//! (default 0), given the arguments in `NAME.args` (one per line) if present.
//! `fail/NAME.buzz` must stop with the error in `NAME.err`: `LINE:COLUMN: message`.
//! Each program runs on the interpreter's own large-stack thread, as
//! `magus run` runs spells, so the call-depth limit is the one spells meet.

use crate::buzz::{self, BuzzError, Interpreter};
use crate::diag::{render, MessageFormat};
use std::cell::RefCell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// A spell's output, kept for the assertions (shared with the bindings'
/// gate-coverage tests).
#[derive(Clone, Default)]
pub(crate) struct Captured(pub(crate) Rc<RefCell<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

struct Outcome {
    stdout: String,
    /// The output exactly: a Buzz `str` may hold bytes that are not UTF-8.
    raw: Vec<u8>,
    result: Result<i32, BuzzError>,
}

fn run(file: PathBuf, args: Vec<String>) -> Outcome {
    let (raw, result) = buzz::stack::run_on_interpreter_stack(move || {
        let source = std::fs::read_to_string(&file).unwrap();
        let out = Captured::default();
        let result = buzz::parse(&file, &source).and_then(|program| {
            Interpreter::new(&file, Vec::new())
                .with_output(Box::new(out.clone()))
                .with_stack_budget(buzz::stack::stack_budget(buzz::stack::interpreter_stack()))
                .run(&program, args)
        });
        let raw = out.0.borrow().clone();
        (raw, result)
    })
    .expect("interpreter thread starts");
    let stdout = String::from_utf8_lossy(&raw).into_owned();
    Outcome {
        stdout,
        raw,
        result,
    }
}

fn programs(kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/buzz")
        .join(kind);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "buzz"))
        .collect();
    files.sort();
    files
}

fn sibling(file: &Path, ext: &str) -> Option<String> {
    std::fs::read_to_string(file.with_extension(ext)).ok()
}

fn check_pass(file: &Path) -> Result<(), String> {
    let args = sibling(file, "args")
        .map(|a| a.lines().map(String::from).collect())
        .unwrap_or_default();
    let want_out = std::fs::read(file.with_extension("out")).map_err(|_| "missing .out file")?;
    let want_status: i32 = sibling(file, "status").map_or(0, |s| s.trim().parse().unwrap());
    let outcome = run(file.to_path_buf(), args);
    let status = outcome
        .result
        .map_err(|e| format!("failed: {e}\nstdout so far:\n{}", outcome.stdout))?;
    if outcome.raw != want_out {
        return Err(format!(
            "stdout differs\n--- want\n{}--- got\n{}",
            String::from_utf8_lossy(&want_out),
            outcome.stdout
        ));
    }
    if status != want_status {
        return Err(format!("exit status {status}, want {want_status}"));
    }
    Ok(())
}

fn check_fail(file: &Path) -> Result<(), String> {
    let want = sibling(file, "err").ok_or("missing .err file")?;
    let outcome = run(file.to_path_buf(), Vec::new());
    let err = match outcome.result {
        Ok(status) => return Err(format!("succeeded with status {status}, want an error")),
        Err(e) => e,
    };
    let d = err.to_diagnostic();
    let loc = d.location.as_ref().ok_or("diagnostic has no location")?;
    if loc.file != file {
        return Err(format!("diagnostic points at {}", loc.file.display()));
    }
    let got = format!("{}:{}: {}", loc.line, loc.column, d.message);
    if got != want.trim() {
        return Err(format!(
            "error differs\n want: {}\n  got: {got}",
            want.trim()
        ));
    }
    let rendered = render(&d, MessageFormat::Human);
    if !rendered.contains(&format!("{}:{}:{}\n", file.display(), loc.line, loc.column))
        || !rendered.contains('^')
    {
        return Err(format!(
            "rendering lacks the location and caret:\n{rendered}"
        ));
    }
    Ok(())
}

fn check_all(kind: &str, minimum: usize, check: fn(&Path) -> Result<(), String>) {
    let files = programs(kind);
    assert!(
        files.len() >= minimum,
        "only {} {kind} programs",
        files.len()
    );
    let failures: Vec<String> = files
        .iter()
        .filter_map(|f| check(f).err().map(|e| format!("{}: {e}", f.display())))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

#[test]
fn pass_programs_print_what_they_should() {
    check_all("pass", 40, check_pass);
}

/// In a process of its own: `buzz06_fiber_nested_fibers` fills the
/// default memory budget (1 GiB of fiber stacks) on purpose, and the
/// count is the whole process's, so a test running beside it stopped
/// with a memory limit of its own (once in 150 runs of the lib tests).
#[test]
fn fail_programs_stop_with_the_expected_error() {
    if crate::alone::passed().is_none() {
        let name = "buzz::program_tests::fail_programs_stop_with_the_expected_error";
        return crate::alone::run(name, "1");
    }
    check_all("fail", 15, check_fail);
}

/// A stand-in for the sandbox's `fs` module: `read` raises a `SandboxError`
/// record with an attached diagnostic.
fn fake_fs() -> buzz::NativeModule {
    use crate::diag::{Code, Diagnostic};
    use buzz::{Raise, Value};
    buzz::NativeModule::new("fs").function("read", |call| {
        let path = call.arg_str(0)?.to_string();
        if path == "ok.txt" {
            return Ok(Value::str("contents"));
        }
        let record = Value::record(
            "SandboxError",
            vec![
                ("code", Value::str("MGS2001")),
                ("path", Value::str(path.as_str())),
            ],
        );
        let d = Diagnostic::error(format!("read of `{path}` denied")).with_code(Code::Mgs2001);
        Err(Raise::with_diagnostic(record, d))
    })
}

fn run_with_fs(source: &str) -> (String, Result<i32, BuzzError>) {
    let source = source.to_string();
    std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || {
            let file = Path::new("native.buzz");
            let out = Captured::default();
            let result = buzz::parse(file, &source).and_then(|p| {
                Interpreter::new(file, vec![fake_fs()])
                    .with_output(Box::new(out.clone()))
                    .run(&p, Vec::new())
            });
            let stdout = String::from_utf8_lossy(&out.0.borrow()).into_owned();
            (stdout, result)
        })
        .unwrap()
        .join()
        .unwrap()
}

#[test]
fn native_errors_are_catchable_by_record_type() {
    let (out, result) = run_with_fs(
        "import \"std\";\nimport \"fs\";\nfun main() > void {\n    std.print(fs\\read(\"ok.txt\"));\n    try { fs.read(\"/etc/shadow\"); } catch (e: SandboxError) { std.print(\"{e.code}: {e.path}\"); }\n}\n",
    );
    assert_eq!(result.unwrap(), 0);
    assert_eq!(out, "contents\nMGS2001: /etc/shadow\n");
}

#[test]
fn uncaught_native_errors_keep_their_diagnostic_at_the_call_site() {
    let (_, result) =
        run_with_fs("import \"fs\" as f;\nfun main() > void {\n    f.read(\"/root/x\");\n}\n");
    let d = result.unwrap_err().to_diagnostic();
    assert_eq!(d.message, "read of `/root/x` denied");
    assert_eq!(d.code, Some(crate::diag::Code::Mgs2001));
    let loc = d.location.unwrap();
    assert_eq!((loc.line, loc.column), (3, 5));
}

#[test]
fn native_argument_type_errors_are_clean() {
    let (_, result) = run_with_fs("import \"fs\";\nfun main() > void {\n    fs.read(42);\n}\n");
    let d = result.unwrap_err().to_diagnostic();
    assert_eq!(d.message, "fs.read: argument 1 expected str, got int");
}
