//! Fuzzes the Buzz parser and the checker behind it: any input must parse
//! or give a `BuzzError`, and a program that parses must check (clean or
//! with findings), never panic, overflow the stack or hang.
#![no_main]

use libfuzzer_sys::fuzz_target;
use magus_sandbox::testing::buzz::{parse, Interpreter};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("fuzz.buzz");
    if let Ok(program) = parse(path, source) {
        // No natives and no loader: imports are findings, not reads.
        let _ = Interpreter::new(path, Vec::new()).check(&program, source);
    }
});
