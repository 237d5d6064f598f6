//! The `env` module: the spell's view of the environment is the scrubbed
//! child environment, so a stripped variable reads as `null`, and what a
//! spell sets is seen by the children it starts later.

use super::fs::bind;
use super::Session;
use crate::buzz::{NativeModule, Raise, Value};
use std::rc::Rc;

/// The `env` module bound to `session`.
pub(super) fn module(session: &Rc<Session>) -> NativeModule {
    let m = NativeModule::new("env");
    let m = bind(m, session, "get", |s, call| {
        let name = call.arg_str(0)?;
        Ok(Value::optional(s.env_get(name).map(Value::str)))
    });
    let m = bind(m, session, "set", |s, call| {
        let (name, value) = (call.arg_str(0)?, call.arg_str(1)?);
        check_name(name)?;
        if value.contains('\0') {
            return Err(Raise::type_error(
                "env.set: a value cannot contain a NUL byte",
            ));
        }
        s.env_set(name, value);
        Ok(Value::Null)
    });
    bind(m, session, "names", |s, _| {
        Ok(Value::list(
            s.env_names().into_iter().map(Value::str).collect(),
        ))
    })
}

fn check_name(name: &str) -> Result<(), Raise> {
    if name.is_empty() || name.contains('=') || name.contains('\0') {
        return Err(Raise::type_error(format!(
            "env.set: `{}` is not a valid variable name (empty, or holds `=` or NUL)",
            name.escape_debug()
        )));
    }
    Ok(())
}
