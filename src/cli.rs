//! The `magus` command line: argument parsing, workspace discovery and the
//! wiring of policy, enforcement, interpreter and diagnostics.

/// Runs the CLI and returns the process exit status.
pub fn main() -> i32 {
    0
}
