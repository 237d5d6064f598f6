//! One run case: any bytes that are UTF-8, parse and check clean are run
//! by the interpreter, as `magus run` runs a spell (on the interpreter's
//! own stack) but with no natives and no loader (no files, commands or
//! environment: imports other than magus's own libraries fail), output
//! thrown away, and a memory and a step budget, so that every run ends.
//! A run may end in any status or Buzz error; a panic, a hang or a stack
//! overflow is a finding. Shared by the `run` fuzz target and the corpus
//! replay test.

use magus_sandbox::testing::buzz::{heap_in_use, on_interpreter_stack, parse, Interpreter};
use std::path::Path;

/// Heap the run may hold above what the process held when it started:
/// small, so that a spell doubling a string stops long before the
/// fuzzer's own memory limit. Counted from the start of each run, since
/// a spell's own reference cycles (a closure stored in the variable it
/// captures) outlive its run, as any reference-counted value would.
pub(crate) const HEAP_BUDGET: usize = 64 << 20;

/// Calls and loop turns the run may make: an endless loop ends in a
/// "step limit" error in well under the fuzzer's timeout.
pub(crate) const STEP_BUDGET: u64 = 50_000;

/// How far one input got.
#[derive(Debug, PartialEq)]
pub(crate) enum Reached {
    /// Not UTF-8, or the parser refused it.
    Unparsed,
    /// It parsed, and the checker refused it.
    Refused,
    /// It ran: its exit status, or the text of the error it ended in.
    Ran(Result<i32, String>),
}

/// Parses, checks and (when clean) runs `data`.
pub(crate) fn run(data: &[u8]) -> Reached {
    let Ok(source) = std::str::from_utf8(data) else {
        return Reached::Unparsed;
    };
    on_interpreter_stack(|stack_budget| {
        let path = Path::new("fuzz.buzz");
        let Ok(program) = parse(path, source) else {
            return Reached::Unparsed;
        };
        let interpreter = Interpreter::new(path, Vec::new())
            .with_output(Box::new(std::io::sink()))
            .with_stack_budget(stack_budget)
            .with_heap_budget(heap_in_use().saturating_add(HEAP_BUDGET))
            .with_step_budget(STEP_BUDGET);
        if !interpreter.check(&program, source).is_clean() {
            return Reached::Refused;
        }
        let mut interpreter = interpreter;
        Reached::Ran(
            interpreter
                .run(&program, Vec::new())
                .map_err(|e| e.to_string()),
        )
    })
    .expect("the interpreter thread starts")
}
