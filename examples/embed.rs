//! Embedding the sandbox: runs the workspace's `hello` spell under the
//! sandbox through the library's facade alone.
//!
//! From inside a workspace (a directory holding `magus.yaml` and
//! `spells/hello.buzz`, such as this repository's root):
//!
//! ```text
//! cargo run --example embed
//! ```
//!
//! It prints the spell's output and exits with the spell's status. The
//! test `tests/embed_example.rs` runs this very `main`.

use magus_sandbox::{CompatLevel, Sandbox, SpellError};
use std::error::Error;
use std::process::ExitCode;

/// The status `magus` exits with when it cannot set the sandbox up.
const EXIT_CONFIG: u8 = 125;

pub(crate) fn main() -> ExitCode {
    match run() {
        Ok(status) => ExitCode::from(status_byte(status)),
        Err(e) => {
            // `Display` is one sentence; `e.diagnostic()` (on each of the
            // facade's error types) renders it as `magus` does, with the
            // location and the fix.
            eprintln!("error: {e}");
            let status = e.downcast_ref::<SpellError>().map(SpellError::exit_status);
            ExitCode::from(status.map_or(EXIT_CONFIG, status_byte))
        }
    }
}

/// What `magus run hello` does, in the facade's four steps.
fn run() -> Result<i32, Box<dyn Error>> {
    // First thing, on the only thread: `install` may re-execute this
    // program with a scrubbed environment, and then `main` starts again.
    let sandbox = Sandbox::discover(".")?; // magus.yaml resolved, magus.lock checked
    let spell = sandbox.spell("hello")?; // read while the workspace is open
    let installed = sandbox.install(CompatLevel::BestEffort)?; // jail, seccomp, Landlock
    for warning in installed.diagnostics() {
        eprint!("{warning}"); // what the kernel could not enforce, as `magus run` says it
    }
    Ok(installed.enter(move |runtime| runtime.run(&spell, Vec::new()))??)
}

/// Statuses from the facade are 0-255 already.
fn status_byte(status: i32) -> u8 {
    u8::try_from(status).unwrap_or(EXIT_CONFIG)
}
