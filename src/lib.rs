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
//! The `magus` binary starts every spell through this same facade. The
//! modules behind it are private; `__private` re-exports them, hidden and
//! outside any stability promise, only for this package's own binary,
//! tests, benches and fuzz targets (as serde's `__private` serves its
//! macros).

#![deny(missing_docs)]

// The internals: documented for the crate's own developers (their docs
// link private items, for `cargo doc --document-private-items`), not part
// of the API (see `__private`).
#[allow(missing_docs, rustdoc::private_intra_doc_links)]
mod bindings;
#[allow(missing_docs, rustdoc::private_intra_doc_links)]
mod buzz;
#[allow(missing_docs, rustdoc::private_intra_doc_links)]
mod cli;
#[allow(missing_docs, rustdoc::private_intra_doc_links)]
mod diag;
#[allow(missing_docs, rustdoc::private_intra_doc_links)]
mod enforce;
#[allow(missing_docs, rustdoc::private_intra_doc_links)]
mod policy;
mod sandbox;

pub use buzz::{BuzzError, Interpreter, NativeModule, Program};
pub use diag::Diagnostic;
pub use enforce::gate::Gate;
pub use policy::Policy;
pub use sandbox::{
    CompatLevel, InstallError, Installed, LoadError, Runtime, Sandbox, Spell, SpellError,
};

/// Not public API: the internal modules, for this package's own `magus`
/// binary, tests, benches and fuzz targets only. Anything here may change
/// or vanish in any release.
#[doc(hidden)]
pub mod __private {
    #![allow(missing_docs)]
    pub mod bindings {
        pub use crate::bindings::*;
    }
    pub mod buzz {
        pub use crate::buzz::*;
    }
    pub mod cli {
        pub use crate::cli::*;
    }
    pub mod diag {
        pub use crate::diag::*;
    }
    pub mod enforce {
        pub use crate::enforce::*;
    }
    pub mod policy {
        pub use crate::policy::*;
    }
}
