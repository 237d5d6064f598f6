//! The `fs` module: thin adapters from Buzz arguments to [`Gate`] calls.
//!
//! [`Gate`]: crate::enforce::gate::Gate

use super::errors::{raise_denial_as, raise_gate};
use super::Session;
use crate::buzz::{NativeCall, NativeModule, Raise, Value};
use crate::enforce::gate::{GateError, WriteMode};
use std::rc::Rc;

/// The `fs` module bound to `session`.
pub(super) fn module(session: &Rc<Session>) -> NativeModule {
    let m = NativeModule::new("fs");
    let m = bind(m, session, "read", |s, call| {
        // The string is made from the gate's read buffer: one UTF-8 pass
        // and one allocation, no owned copy of the file in between.
        let text = s.gate().read_with(call.arg_str(0)?, |bytes| {
            Value::str(super::text_of(bytes).as_ref())
        });
        s.check(text)
    });
    let m = bind(m, session, "write", |s, call| {
        let (path, text) = (call.arg_str(0)?, call.arg_str(1)?);
        s.check(s.gate().write(path, text.as_bytes(), WriteMode::Truncate))?;
        s.wrote(path);
        Ok(Value::Null)
    });
    let m = bind(m, session, "append", |s, call| {
        let (path, text) = (call.arg_str(0)?, call.arg_str(1)?);
        s.check(s.gate().write(path, text.as_bytes(), WriteMode::Append))?;
        s.wrote(path);
        Ok(Value::Null)
    });
    let m = bind(m, session, "exists", |s, call| {
        Ok(Value::bool(s.check(s.gate().exists(call.arg_str(0)?))?))
    });
    let m = bind(m, session, "list", |s, call| {
        let names = s.check(s.gate().list(call.arg_str(0)?))?;
        Ok(Value::list(names.into_iter().map(Value::str).collect()))
    });
    let m = bind(m, session, "makeDirectory", |s, call| {
        let path = call.arg_str(0)?;
        s.check(s.gate().make_directory(path))?;
        s.wrote(path);
        Ok(Value::Null)
    });
    let m = bind(m, session, "copy", |s, call| {
        let (from, to) = (call.arg_str(0)?, call.arg_str(1)?);
        s.check(s.gate().copy(from, to))?;
        s.wrote(to);
        Ok(Value::Null)
    });
    let m = bind(m, session, "move", |s, call| {
        let (from, to) = (call.arg_str(0)?, call.arg_str(1)?);
        s.check(s.gate().rename(from, to))?;
        s.wrote(to);
        Ok(Value::Null)
    });
    let m = bind(m, session, "delete", |s, call| {
        s.check(s.gate().delete(call.arg_str(0)?))?;
        Ok(Value::Null)
    });
    bind(m, session, "currentDirectory", |s, _| {
        let cwd = s.gate().current_directory().to_string_lossy().into_owned();
        Ok(Value::str(cwd))
    })
}

/// Registers `name` as a native that sees the session.
pub(super) fn bind(
    module: NativeModule,
    session: &Rc<Session>,
    name: &str,
    f: impl Fn(&Session, &mut NativeCall<'_>) -> Result<Value, Raise> + 'static,
) -> NativeModule {
    let session = Rc::clone(session);
    module.function(name, move |call| f(&session, call))
}

impl Session {
    /// Turns a gate result into a Buzz result.
    pub(super) fn check<T>(&self, result: Result<T, GateError>) -> Result<T, Raise> {
        result.map_err(|e| self.raise(e))
    }

    /// The Buzz error for a gate failure; a denial reads as
    /// [`Session::denial_diagnostic`] says it.
    pub(super) fn raise(&self, error: GateError) -> Raise {
        match error {
            GateError::Denied(denial) => raise_denial_as(&denial, self.denial_diagnostic(&denial)),
            other => raise_gate(other, self.home()),
        }
    }
}
