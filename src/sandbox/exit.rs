//! The exit statuses of a run, owned by the library (a spell's failure is
//! the library's to classify, [`super::SpellError::exit_status`]) and
//! used by the `magus` binary. A spell's own status is whatever its
//! `main` returns (0–255).

/// A spell that failed: a runtime error, an uncaught `throw`, or a `main`
/// returning a status outside 0–255.
pub const SPELL_FAILED: i32 = 1;
/// `magus check` found errors in a spell.
pub const CHECK_FAILED: i32 = 2;
/// A spell stopped by an uncaught sandbox denial.
pub const DENIED: i32 = 124;
/// magus itself failed: usage, configuration, policy lock (MGS2010), or
/// setting up the sandbox.
pub const CONFIG: i32 = 125;
/// A spell that was found but cannot run: unreadable, not UTF-8, or
/// rejected before its first statement (a syntax error).
pub const CANNOT_RUN: i32 = 126;
/// No spell has the name given.
pub const NO_SPELL: i32 = 127;
