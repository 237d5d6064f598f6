//! The `magus` command line through the real binary, as one test binary
//! (one link, one process start for the suite) with a module per surface:
//!
//! - `spell_file`: reading the spell file itself, bounded;
//! - `check`: `magus check` and the check `run` and `test` make first;
//! - `policy`: `magus sandbox check`, the resolved policy;
//! - `lock`: `magus list`, `magus explain`, help texts, exit codes, colour;
//! - `buzz`: `magus test`, imports, upstream's `buzz:*` modules, call depth;
//! - `habits`: the command line as a user meets it (issue 15);
//! - `hello`: the repository's own `spells/hello.buzz`;
//! - `help_agrees`: every code's printed help against its explain page.
//!
//! (A crate root finds its modules beside it, hence the `path`s.) The
//! shared harness (`tests/support`) is included once, here; the
//! modules reach it as `crate::support`.

#[path = "support/mod.rs"]
mod support;

#[path = "cli/buzz.rs"]
mod buzz;
#[path = "cli/check.rs"]
mod check;
#[path = "cli/habits.rs"]
mod habits;
#[path = "cli/hello.rs"]
mod hello;
#[path = "cli/help_agrees.rs"]
mod help_agrees;
#[path = "cli/lock.rs"]
mod lock;
#[path = "cli/policy.rs"]
mod policy;
#[path = "cli/spell_file.rs"]
mod spell_file;
