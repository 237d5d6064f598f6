//! Buzz's `std` module as spells see it: `print`, `assert`, `parseInt`,
//! `parseDouble`, `toString`, `args` and `exit`. It touches nothing but the
//! interpreter's output and the spell's own arguments.

use super::native::{NativeCall, NativeModule, Raise};
use super::value::Value;

/// The `std` module, registered by every [`super::Interpreter`].
pub fn std_module() -> NativeModule {
    NativeModule::new("std")
        .function("print", print)
        .function("assert", assert)
        .function("parseInt", |c| {
            Ok(Value::optional(
                c.arg_str(0)?.trim().parse().ok().map(Value::Int),
            ))
        })
        .function("parseDouble", parse_double)
        .function("toString", |c| Ok(Value::str(c.arg(0)?.to_string())))
        .function("args", |c| {
            Ok(Value::list(
                c.script_args()
                    .iter()
                    .map(|a| Value::str(a.as_str()))
                    .collect(),
            ))
        })
        .function("exit", exit)
}

/// Writes the value and a newline, then flushes so that output stays in
/// order with children that share stdout.
fn print(call: &mut NativeCall<'_>) -> Result<Value, Raise> {
    let text = call.arg(0)?.to_string();
    let out = call.out();
    let written = writeln!(out, "{text}").and_then(|()| out.flush());
    match written {
        Ok(()) => Ok(Value::Null),
        // A closed stdout (e.g. `magus run x | head`) is not the spell's fault.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Value::Null),
        Err(e) => Err(Raise::new(format!("std.print: {e}"))),
    }
}

fn assert(call: &mut NativeCall<'_>) -> Result<Value, Raise> {
    if call.arg_bool(0)? {
        return Ok(Value::Null);
    }
    let message = match call.opt_arg(1) {
        Some(m) => format!("assertion failed: {m}"),
        None => "assertion failed".to_string(),
    };
    Err(Raise::new(message))
}

fn parse_double(call: &mut NativeCall<'_>) -> Result<Value, Raise> {
    let parsed = call
        .arg_str(0)?
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|d| d.is_finite());
    Ok(Value::optional(parsed.map(Value::Double)))
}

fn exit(call: &mut NativeCall<'_>) -> Result<Value, Raise> {
    let status = call.arg_int(0)?;
    call.exit(i32::try_from(status).unwrap_or(1));
    Ok(Value::Null)
}
