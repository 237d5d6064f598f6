//! The part that decides: `magus.yaml` is loaded, resolved against the
//! machine (home, workspace, real paths) into one [`Policy`], and compiled
//! into the structures both enforcement layers consult. Nothing here
//! enforces anything or prints anything.

mod grant;

pub use grant::{Access, Grant, GrantSource, Mode, Network, SandboxState};

use std::path::PathBuf;

/// One resolved policy: what the sandbox allows on this machine.
#[derive(Debug, Clone)]
pub struct Policy {
    pub state: SandboxState,
    /// The workspace root (real path).
    pub workspace: PathBuf,
    /// Every granted path, real and absolute, in declaration order.
    pub grants: Vec<Grant>,
    pub network: Network,
}
