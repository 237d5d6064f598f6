//! What stands in for the kernel layer where it is not built (macOS,
//! Windows, and Linux with `--no-default-features`): a domain that confines
//! nothing and says why, so the launch of children and the run's MGS2005
//! have one type on every platform. Only the gate confines here.

use std::convert::Infallible;

/// The kernel domain children would be nested in; here, none.
#[derive(Debug)]
pub struct Domain {
    _none: (),
}

impl Domain {
    /// The only domain this build has: nothing confined by the kernel.
    pub fn interpreter_only() -> Self {
        Domain { _none: () }
    }
}

/// The scrubbing re-exec is part of the kernel layer; without it there is
/// never a state to hand over.
pub(crate) type ReexecState = Infallible;

/// The platform as MGS2005 and `magus sandbox check` name it.
pub(crate) fn platform() -> &'static str {
    match std::env::consts::OS {
        "macos" => "macOS",
        "windows" => "Windows",
        "linux" => "Linux, in a magus built without the `kernel` feature",
        other => other,
    }
}
