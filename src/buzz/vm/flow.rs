//! How evaluation stops going forward ([`Flow`]: a `break`, a `return`, a
//! thrown Buzz error, an exit, an error of the run) and the types every
//! part of the run passes along with it. Only values and errors below it:
//! the built-in methods (`lib/`) and the fibers' objects share them without
//! reaching the interpreter.

use super::value::Value;
use crate::buzz::error::BuzzError;
use crate::buzz::syntax::lexer::Pos;
use crate::diag::Diagnostic;
use std::path::Path;
use std::rc::Rc;

/// A thrown Buzz error travelling up to a `catch`.
pub(crate) struct Thrown {
    pub(crate) value: Value,
    pub(crate) pos: Pos,
    /// The file `pos` is in (the throw may be in an imported file).
    pub(crate) file: Rc<Path>,
    pub(crate) diagnostic: Option<Box<Diagnostic>>,
    /// A native's refusal not yet placed on what the spell wrote: which
    /// part of the call to underline (see `CallSpans` in `calls.rs`).
    pub(crate) refused: Option<u32>,
}

/// Why evaluation stopped going forward.
pub(crate) enum Flow {
    Break(Option<Rc<str>>),
    Continue(Option<Rc<str>>),
    /// `out value;` leaving a `from { … }` block.
    Out(Value),
    Return(Value),
    Throw(Box<Thrown>),
    Exit(i32),
    Error(Box<BuzzError>),
}

pub(crate) type Eval<T> = Result<T, Flow>;

/// Arguments as written at a call: optional name, value.
pub(crate) type Args = Vec<(Option<Rc<str>>, Value)>;
