//! Fuzzes the interpreter behind the parser and the checker: a program
//! that parses and checks clean is run with no natives, a memory budget
//! and a step budget (`cases/run_case.rs`); it may end in any status or
//! Buzz error, never panic, overflow the stack or hang.
#![no_main]

#[path = "../cases/run_case.rs"]
mod run_case;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = run_case::run(data);
});
