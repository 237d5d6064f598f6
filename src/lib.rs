//! magus-sandbox: the sandbox of the magus task runner, as a library.
//!
//! One declared policy (`magus.yaml`) is resolved once and then enforced
//! twice: by the gate the Buzz bindings call on every path and process
//! operation, and by the kernel (a jail of namespaces, a seccomp syscall
//! guard and a Landlock domain) that the process installs on itself.
//!
//! # Embedding
//!
//! The public API is the small facade of [`Sandbox`], in the order the
//! sandbox must be built:
//!
//! 1. [`Sandbox::load`] (a given workspace) or [`Sandbox::discover`] (the
//!    nearest one holding `magus.yaml`, as `magus` finds it) resolves the
//!    policy and checks it against `magus.lock`. Nothing is restricted yet.
//! 2. [`Sandbox::spell`] reads a spell while the workspace is still open.
//! 3. [`Sandbox::install`] confines the whole process, irreversibly: the
//!    scrubbing re-exec, the jail, the syscall guard, Landlock. How much
//!    the kernel must support is the caller's explicit [`CompatLevel`].
//! 4. [`Installed::enter`] gives a [`Runtime`] on the interpreter's thread:
//!    the gate, the natives bound to it, and an interpreter to run spells.
//!
//! ```no_run
//! use magus_sandbox::{CompatLevel, Sandbox};
//!
//! let sandbox = Sandbox::discover(".")?;
//! let spell = sandbox.spell("hello")?;
//! let installed = sandbox.install(CompatLevel::BestEffort)?;
//! for warning in installed.diagnostics() {
//!     eprint!("{warning}");
//! }
//! let status = installed.enter(|runtime| runtime.run(&spell, Vec::new()))??;
//! std::process::exit(status);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The `magus` binary is [`cli_main`], and starts every spell through this
//! same facade. [`Sandbox::check`] is the spell checker `magus check` runs,
//! for an editor or CI integration: its findings are [`Diagnostic`]s, with
//! a [`Code`], a [`Severity`] and a [`Location`], rendered by `Display` or
//! [`Diagnostic::render`].
//!
//! Everything else is private to the crate. The non-default `internals`
//! feature exposes the few internals this package's own benches, fuzz
//! targets and kernel test harness use as the hidden module `testing`,
//! unstable and outside any semver promise.

#![deny(missing_docs)]
// Internals are `pub(crate)`: a `pub` item is the facade's or `testing`'s.
// Judged with `testing` built (the `internals` feature, which every test
// and bench build turns on): without it, what only `testing` exports is
// reachable from nowhere.
#![cfg_attr(feature = "internals", warn(unreachable_pub))]

// The internals: documented for the crate's own developers (their docs
// link private items, for `cargo doc --document-private-items`), not part
// of the API. Their items are `pub(crate)`; only the re-exports below (and,
// with the `internals` feature, `testing`) leave the crate. What the
// facade reaches must be documented; what only `testing` reaches need not.
#[allow(rustdoc::private_intra_doc_links)]
#[cfg_attr(feature = "internals", allow(missing_docs))]
mod bindings;
#[allow(rustdoc::private_intra_doc_links)]
#[cfg_attr(feature = "internals", allow(missing_docs))]
mod buzz;
#[allow(rustdoc::private_intra_doc_links)]
#[cfg_attr(feature = "internals", allow(missing_docs))]
mod cli;
#[allow(rustdoc::private_intra_doc_links)]
#[cfg_attr(feature = "internals", allow(missing_docs))]
mod diag;
#[allow(rustdoc::private_intra_doc_links)]
#[cfg_attr(feature = "internals", allow(missing_docs))]
mod enforce;
#[allow(rustdoc::private_intra_doc_links)]
#[cfg_attr(feature = "internals", allow(missing_docs))]
mod policy;
#[cfg(kernel_layer)]
#[allow(rustdoc::private_intra_doc_links)]
#[cfg_attr(feature = "internals", allow(missing_docs))]
mod proxy;
mod regular_file;
mod sandbox;

// Every kind of diagnostic, rendered from the types that build it, pinned
// as insta snapshots. At the root: it reaches every layer, and `diag`
// itself imports nothing above it.
#[cfg(all(test, kernel_layer))]
mod diagnostic_snapshots;

// A lib test that must run in a process of its own (its users are all
// Unix's).
#[cfg(all(test, unix))]
mod alone;

// Where unit tests put fake `HOME`s and workspaces: the same rule as the
// integration tests' (never under `/tmp`).
#[cfg(all(test, unix))]
#[path = "../tests/scratch/mod.rs"]
mod scratch;

pub use buzz::{BuzzError, Interpreter, NativeModule, Program};
pub use diag::{Code, Diagnostic, Location, MessageFormat, Severity, SourceKind};
pub use enforce::gate::{Gate, GateError, WriteMode};
pub use policy::{Access, Decision, Grant, Mode, NormalPath, Policy, SandboxState};
pub use sandbox::{
    CompatLevel, InstallError, Installed, LoadError, Runtime, Sandbox, Spell, SpellError,
};

/// The exit statuses of the `magus` binary (and of
/// [`SpellError::exit_status`]); a spell's own status is whatever its
/// `main` returns (0-255).
pub mod exit {
    pub use crate::sandbox::exit::{
        CANNOT_RUN, CHECK_FAILED, CONFIG, DENIED, NO_SPELL, SPELL_FAILED,
    };
}

/// The `magus` command line: parses this process's arguments, runs the
/// command, and returns the process exit status (see [`exit`]). Spells
/// start through the facade ([`Sandbox`]), as an embedder's would.
///
/// Call it first thing in `main`, on the only thread: `magus run` installs
/// the sandbox on the whole process.
pub fn cli_main() -> i32 {
    cli::main()
}

#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod testing;
