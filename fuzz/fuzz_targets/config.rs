//! Fuzzes the `magus.yaml` loader: any bytes must load or give a
//! `ConfigError` positioned inside the input, never panic or hang.
#![no_main]

#[path = "../cases/config_case.rs"]
mod config_case;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(why) = config_case::check(data) {
        panic!("{why}");
    }
});
