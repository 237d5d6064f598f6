//! The Buzz native modules `fs`, `sh` and `env`: they adapt Buzz values to
//! the gate in `enforce` and turn its denials into catchable `SandboxError`s.
//!
//! Every binding goes through one [`Session`]; there is no other path from
//! a spell to the filesystem, the environment or a process.

pub mod egress;
mod env;
mod errors;
mod fs;
mod session;
mod sh;

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
    ]
}
