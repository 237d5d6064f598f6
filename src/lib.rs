//! magus-sandbox: the sandbox of the magus task runner.
//!
//! One declared policy (`magus.yaml`) is resolved once ([`policy`]) and then
//! enforced twice: by the gate the Buzz bindings call on every path and
//! process operation ([`enforce::gate`], [`bindings`]), and by a Landlock
//! domain the process installs on itself ([`enforce`]). [`buzz`] runs the
//! spells; [`diag`] is the only place that speaks to the user.

pub mod bindings;
pub mod buzz;
pub mod cli;
pub mod diag;
pub mod enforce;
pub mod policy;
