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

use magus_sandbox::{CompatLevel, Diagnostic, Sandbox};
use std::process::ExitCode;

/// The status `magus` exits with when it cannot set the sandbox up.
const EXIT_CONFIG: u8 = 125;

pub fn main() -> ExitCode {
    // First thing, on the only thread: `install` may re-execute this
    // program with a scrubbed environment, and then `main` starts again.
    let sandbox = match Sandbox::discover(".") {
        Ok(sandbox) => sandbox,
        Err(e) => return fail(e.diagnostic(), EXIT_CONFIG),
    };
    // Read before the sandbox closes, like `magus run hello`.
    let spell = match sandbox.spell("hello") {
        Ok(spell) => spell,
        Err(e) => return fail(e.diagnostic(), status_byte(e.exit_status())),
    };
    let installed = match sandbox.install(CompatLevel::BestEffort) {
        Ok(installed) => installed,
        Err(e) => return fail(e.diagnostic(), EXIT_CONFIG),
    };
    // What the kernel could not put in force, said as `magus run` says it.
    for warning in installed.diagnostics() {
        eprint!("{warning}");
    }
    match installed.enter(move |runtime| runtime.run(&spell, Vec::new())) {
        Ok(Ok(status)) => ExitCode::from(status_byte(status)),
        Ok(Err(e)) => fail(e.diagnostic(), status_byte(e.exit_status())),
        Err(e) => fail(e.diagnostic(), EXIT_CONFIG),
    }
}

fn fail(diagnostic: &Diagnostic, status: u8) -> ExitCode {
    eprint!("{diagnostic}");
    ExitCode::from(status)
}

/// Statuses from the facade are 0-255 already.
fn status_byte(status: i32) -> u8 {
    u8::try_from(status).unwrap_or(EXIT_CONFIG)
}
