//! `io\runFile(path)`: runs another Buzz file, as upstream runs it in a
//! VM of its own. The bindings read the file through the gate (a denial
//! is the usual MGS2xxx) and parse it; this checks it like a spell before
//! any of it runs, then runs its top level and its `main` (given no
//! arguments), if it declares one, in an interpreter with globals of its
//! own but this run's modules, output and budgets.

use super::interp::{lookup, Eval, Interpreter};
use super::lexer::Pos;
use super::native::Raise;
use super::value::{Scope, Value};
use super::Program;

/// The error upstream's `runFile` raises for a file that does not compile.
const COMPILE_ERROR: &str = "CompileError";

/// How many `runFile` calls may be running inside one another. Each holds
/// an interpreter and a checked program: a file that runs itself would
/// otherwise stop only at the memory budget, far from the cause.
pub const MAX_RUN_FILE_NESTING: usize = 64;

thread_local! {
    /// The `runFile` calls running now on this thread.
    static NESTING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// One level of [`NESTING`], given back when dropped (an error included).
struct Level;

impl Level {
    fn enter() -> Option<Level> {
        NESTING.with(|n| {
            (n.get() < MAX_RUN_FILE_NESTING).then(|| {
                n.set(n.get() + 1);
                Level
            })
        })
    }
}

impl Drop for Level {
    fn drop(&mut self) {
        NESTING.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

impl Interpreter {
    /// Checks and runs `program` for a `runFile` call at `pos`; `null`,
    /// or what the file threw, or its `std\exit`.
    pub(super) fn run_file(&mut self, program: &Program, source: &str, pos: Pos) -> Eval<Value> {
        let Some(_level) = Level::enter() else {
            return Err(self.fail(pos, format!(
                "io.runFile: more than {MAX_RUN_FILE_NESTING} files running inside one another (a file that runs itself?)"
            )));
        };
        let mut child = self.file_child(&program.file);
        let report = child.check(program, source);
        if !report.is_clean() {
            self.give_back_output(&mut child);
            return Err(self.raised(not_compiled(program, &report), pos));
        }
        let outcome = run_top_and_main(&mut child, program);
        self.give_back_output(&mut child);
        outcome.map(|()| Value::Null)
    }
}

fn run_top_and_main(child: &mut Interpreter, program: &Program) -> Eval<()> {
    let globals = Scope::new(None);
    child.run_declarations(program, &globals)?;
    if let Some(main) = lookup(&globals, "main") {
        let takes_args = matches!(&main, Value::Function(f) if !f.decl.params.is_empty());
        let args = if takes_args {
            vec![(None, Value::list(Vec::new()))]
        } else {
            Vec::new()
        };
        child.call_value(&main, args, Pos { line: 1, column: 1 })?;
    }
    Ok(())
}

/// A `CompileError` whose message holds the checker's first finding, at
/// its place in the other file.
fn not_compiled(program: &Program, report: &super::check::Report) -> Raise {
    let first = report
        .diagnostics()
        .into_iter()
        .find(crate::diag::Diagnostic::is_error);
    let message = match first {
        Some(d) => match &d.location {
            Some(at) => format!(
                "{}:{}:{}: {}",
                at.file.display(),
                at.line,
                at.column,
                d.message
            ),
            None => d.message,
        },
        None => format!("{} did not pass the check", program.file.display()),
    };
    Raise::new(Value::record(
        COMPILE_ERROR,
        vec![("message", Value::str(message))],
    ))
}
