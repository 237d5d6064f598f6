//! The run's located errors: a run-time error at a position of the file
//! running, an uncaught throw turned into the error a spell ends in, and
//! a native's raise thrown where it was called.

use super::{Flow, Interpreter, Stop, Thrown};
use crate::buzz::error::{BuzzError, CallSite};
use crate::buzz::syntax::lexer::Pos;
use crate::buzz::vm::value::*;

impl Interpreter {
    pub(in crate::buzz) fn site(&self, pos: Pos) -> CallSite {
        CallSite {
            file: self.file.to_path_buf(),
            line: pos.line,
            column: pos.column,
        }
    }

    pub(in crate::buzz) fn runtime(&self, pos: Pos, message: impl Into<String>) -> BuzzError {
        BuzzError::Runtime {
            site: self.site(pos),
            message: message.into(),
        }
    }

    #[cold]
    pub(crate) fn fail(&self, pos: Pos, message: impl Into<String>) -> Flow {
        Stop::Error(Box::new(self.runtime(pos, message))).into()
    }

    pub(in crate::buzz) fn uncaught(&self, t: Thrown) -> BuzzError {
        BuzzError::Uncaught {
            value: thrown_text(&t.value),
            site: CallSite {
                file: t.file.to_path_buf(),
                line: t.pos.line,
                column: t.pos.column,
            },
            diagnostic: t.diagnostic,
        }
    }

    #[cold]
    pub(in crate::buzz) fn final_assigned(&self, name: &str, at: Pos) -> Flow {
        self.fail(at, format!("cannot assign to `{name}`: it is `final`"))
    }

    /// A native's raise, thrown at `pos`.
    pub(in crate::buzz) fn raised(&self, raise: crate::buzz::vm::native::Raise, pos: Pos) -> Flow {
        Stop::Throw(Box::new(Thrown {
            value: raise.value,
            pos,
            file: self.file.clone(),
            diagnostic: raise.diagnostic,
            refused: None,
        }))
        .into()
    }
}
