//! The part that enforces: the gate the bindings call before every path or
//! process operation, the Landlock domain the process installs on itself,
//! and the launch of confined child processes.

pub mod beneath;
pub mod gate;
