//! The Buzz native modules `fs`, `sh` and `env`: they adapt Buzz values to
//! the gate in `enforce` and turn its denials into catchable `SandboxError`s.
//!
//! Every binding goes through one [`Session`]; there is no other path from
//! a spell to the filesystem, the environment or a process. Upstream's
//! `buzz:fs`, `buzz:os` and `buzz:io` are a second face over the same
//! session (see `upstream`).

#[cfg(kernel_layer)]
pub mod egress;
mod env;
mod errors;
mod fs;
#[cfg(test)]
mod gate_coverage_tests;
mod session;
mod sh;
mod upstream;

pub use errors::{EXEC_ERROR, FILE_SYSTEM_ERROR, SANDBOX_ERROR};
pub use session::{DiagnosticSink, Session, ShimNote};
pub use sh::prepare_terminal;

use crate::buzz::NativeModule;
use std::rc::Rc;

/// The `fs`, `sh` and `env` modules of one run, all bound to `session`.
pub fn modules(session: &Rc<Session>) -> Vec<NativeModule> {
    vec![
        fs::module(session),
        sh::module(session),
        env::module(session),
        upstream::fs_module(session),
        upstream::os_module(session),
        upstream::io_natives(session),
    ]
}

/// The libraries written in Buzz over these modules: `buzz:io`.
pub fn libraries() -> &'static [(&'static str, &'static str)] {
    &[("buzz:io", upstream::IO_LIBRARY)]
}

/// How `import "lib/common";` reads the spell's own files: through the
/// gate, so an import is allowed or denied exactly as `fs.read` would be.
pub fn source_loader(session: &Rc<Session>) -> crate::buzz::SourceLoader {
    let session = Rc::clone(session);
    Rc::new(move |path: &std::path::Path| {
        let bytes = session.check(session.gate().read(&path.to_string_lossy()))?;
        String::from_utf8(bytes).map_err(|e| {
            crate::buzz::Raise::type_error(format!(
                "{} is not valid UTF-8 (first bad byte at offset {})",
                path.display(),
                e.utf8_error().valid_up_to()
            ))
        })
    })
}
