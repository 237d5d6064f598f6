//! Fuzzes the Buzz parser: any input must parse or give a `BuzzError`,
//! never panic, overflow the stack or hang.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    if let Ok(source) = std::str::from_utf8(data) {
        let _ = magus_sandbox::__private::buzz::parse(Path::new("fuzz.buzz"), source);
    }
});
