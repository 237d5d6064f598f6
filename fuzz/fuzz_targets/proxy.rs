//! The proxy's request parsing (it runs outside the sandbox, on bytes a
//! child chose): any input read as an HTTP request head and as a SOCKS5
//! request must give a target or a refusal, never a panic, and the head
//! forwarded upstream must name the host that was checked.
#![no_main]

#[path = "../cases/proxy_case.rs"]
mod proxy_case;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(why) = proxy_case::check(data) {
        panic!("{why}");
    }
});
