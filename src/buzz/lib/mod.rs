//! Buzz's library: the `std` module and the other `buzz:` modules a spell
//! imports (`math`, `gc`, `debug`, `buffer`, `crypto`, `serialize`,
//! `errors`), the built-in methods of `str`, lists, maps, ranges and
//! patterns, and the `.buzz` sources of the libraries magus writes in Buzz.
//!
//! It is kept apart from the evaluator because it is what a spell can call,
//! not how a spell runs, and it stands below it: it names values, the
//! natives' interface (`vm/native.rs`), the run's [`Flow`] and limits,
//! never the interpreter. Natives get a `NativeCall`; the built-in
//! methods that take a callback reach the run through [`Run`], which the
//! interpreter implements. Why below and not above: the lowering resolves
//! a method call to its [`methods::Builtin`] and the run dispatches on it
//! at every call, so both need the library's table; above them, it would
//! have to be handed to both and each call would pay the indirection. The
//! table of method names ([`method_names`]) is shared by the checker and
//! the run.

use super::syntax::lexer::Pos;
use super::vm::flow::{Args, Eval, Flow};
use super::vm::value::Value;

pub(crate) mod callbacks;
pub(crate) mod crypto;
pub(crate) mod method_names;
pub(crate) mod methods;
pub(crate) mod serialize;
pub(crate) mod std_module;

/// Upstream libraries magus writes in Buzz (no FFI) and every interpreter
/// has.
pub(crate) const BUILTIN_LIBRARIES: [(&str, &str); 4] = [
    ("buzz:errors", include_str!("errors.buzz")),
    ("buzz:crypto", include_str!("crypto.buzz")),
    ("buzz:buffer", include_str!("buffer.buzz")),
    ("buzz:serialize", include_str!("serialize.buzz")),
];

/// What the built-in methods need of the run that calls them: calling a
/// Buzz function given as a callback (`list.map(fun …)`) and making a
/// located error. Generic, not `dyn`: each call compiles to the
/// interpreter's own.
pub(crate) trait Run {
    /// Calls `f` (a Buzz function, a native or an enum) with `args`.
    fn call_value(&mut self, f: &Value, args: Args, pos: Pos) -> Eval<Value>;
    /// The error `message` located at `pos`.
    fn fail(&self, pos: Pos, message: String) -> Flow;
}
