//! Buzz's library: the `std` module and the other `buzz:` modules a spell
//! imports (`math`, `gc`, `debug`, `buffer`, `crypto`, `serialize`,
//! `errors`), the built-in methods of `str`, lists, maps, ranges and
//! patterns, and the `.buzz` sources of the libraries magus writes in Buzz.
//!
//! It is kept apart from the evaluator because it is what a spell can call,
//! not how a spell runs: its natives reach the interpreter only through
//! [`super::native`]'s interface and its values, and the table of method
//! names ([`method_names`]) is shared by the checker and the run.

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
