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

/// Why evaluation stopped going forward: a [`Stop`] behind one pointer,
/// or none for a `return`.
///
/// Every step of the interpreter returns an [`Eval`], and almost every
/// one returns `Ok`. As one word, a `Flow` keeps an `Eval<Value>` to two
/// words, returned in registers; an unboxed `Stop` made it three, written
/// to memory and read back at every return (2–4% of most programs'
/// instructions). The box is made only when evaluation does stop with an
/// error, a throw, an `exit`, or a `break`, `continue` or `out` leaving a
/// tree statement. A `return` leaving one (inside `try`, or `if (x as y:
/// T)`) makes none, since a call ends that way as often as a loop turn
/// does: its value waits in `Interpreter::returning` until the call it
/// leaves takes it.
pub(crate) struct Flow(Option<Box<Stop>>);

/// The kinds of [`Flow`].
pub(crate) enum Stop {
    Break(Option<Rc<str>>),
    Continue(Option<Rc<str>>),
    /// `out value;` leaving a `from { … }` block.
    Out(Value),
    /// `return`, its value held by the interpreter.
    Return,
    Throw(Box<Thrown>),
    Exit(i32),
    Error(Box<BuzzError>),
}

/// What a `return`'s [`Flow`] shows as its stop.
const RETURN: &Stop = &Stop::Return;

impl Flow {
    /// A `return`, its value already stored where the call will take it.
    #[inline]
    pub(crate) fn returning() -> Flow {
        Flow(None)
    }

    /// Whether this is a `return`.
    #[inline]
    pub(crate) fn is_return(&self) -> bool {
        self.0.is_none()
    }

    /// Which stop this is, to look at.
    #[inline]
    pub(crate) fn stop(&self) -> &Stop {
        self.0.as_deref().unwrap_or(RETURN)
    }

    /// Which stop this is, taken out of its box.
    #[inline]
    pub(crate) fn into_stop(self) -> Stop {
        self.0.map_or(Stop::Return, |stop| *stop)
    }

    /// The value an `out` leaves its block with, else this flow as it is.
    pub(crate) fn into_out(self) -> Result<Value, Flow> {
        match self.0.as_deref() {
            Some(Stop::Out(_)) => match self.into_stop() {
                Stop::Out(v) => Ok(v),
                _ => unreachable!("matched as an out"),
            },
            _ => Err(self),
        }
    }

    /// The thrown error this is, in place.
    pub(crate) fn thrown(&self) -> Option<&Thrown> {
        match self.0.as_deref() {
            Some(Stop::Throw(t)) => Some(t),
            _ => None,
        }
    }

    /// The thrown error this is, to change in place.
    pub(crate) fn thrown_mut(&mut self) -> Option<&mut Thrown> {
        match self.0.as_deref_mut() {
            Some(Stop::Throw(t)) => Some(t),
            _ => None,
        }
    }
}

impl From<Stop> for Flow {
    /// A `Stop::Return` given here carries no value: the caller has
    /// stored it (see [`Flow::returning`]).
    #[cold]
    #[inline(never)]
    fn from(stop: Stop) -> Flow {
        match stop {
            Stop::Return => Flow(None),
            stop => Flow(Some(Box::new(stop))),
        }
    }
}

pub(crate) type Eval<T> = Result<T, Flow>;

const _: () = assert!(std::mem::size_of::<Eval<Value>>() == 16);
const _: () = assert!(std::mem::size_of::<Eval<()>>() <= 16);

/// Arguments as written at a call: optional name, value.
pub(crate) type Args = Vec<(Option<Rc<str>>, Value)>;
