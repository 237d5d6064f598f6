//! Buzz's `std` module as spells see it: `print`, `assert`, `parseInt`,
//! `parseDouble`, `toString`, `args` and `exit`. It touches nothing but the
//! interpreter's output and the spell's own arguments.

use super::super::vm::native::{NativeCall, NativeModule, Raise};
use super::super::vm::value::Value;

/// The `std` module, registered by every interpreter.
pub(crate) fn std_module() -> NativeModule {
    NativeModule::new("std")
        .function("print", print)
        .function("currentFiber", |c| Ok(c.fiber.value()))
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
        .function("random", random)
        .function("toInt", |c| Ok(Value::Int(c.arg_double(0)? as i64)))
        .function("toDouble", |c| Ok(Value::double(c.arg_double(0)?)))
        .function("toUd", to_ud)
        .function("parseUd", |c| {
            Ok(c.arg_str(0)?.parse::<u64>().map_or(Value::Null, Value::Ud))
        })
        .function("char", |c| {
            // One byte, clamped to 0..=255 as upstream (above 127 it is a
            // `str` that is not UTF-8).
            let byte = c.arg_int(0)?.clamp(0, 255) as u8;
            Ok(Value::from_bytes(vec![byte]))
        })
        .function("panic", |c| {
            Err(Raise::type_error(format!("panic: {}", c.arg(0)?)))
        })
}

/// `toUd(n)`: an int or a double (truncated) as user data; any other
/// value is `0`, as upstream documents. A number outside `0..2^64` is an
/// error where upstream's cast is undefined.
fn to_ud(call: &mut NativeCall<'_>) -> Result<Value, Raise> {
    let n = call.arg(0)?;
    let ud = match *n {
        Value::Int(i) => u64::try_from(i).ok(),
        // `as` saturates; the range test keeps out what it would clamp.
        Value::Double(d) if (0.0..18_446_744_073_709_551_616.0).contains(&d.get()) => {
            Some(d.get() as u64)
        }
        Value::Double(_) => None,
        _ => Some(0),
    };
    match ud {
        Some(ud) => Ok(Value::Ud(ud)),
        None => Err(Raise::type_error(format!(
            "std.toUd: {n} is not a ud (0 to 2^64-1)"
        ))),
    }
}

/// Writes the value and a newline, then flushes so that output stays in
/// order with children that share stdout; an empty text writes nothing.
fn print(call: &mut NativeCall<'_>) -> Result<Value, Raise> {
    // A `str` is written as its bytes, UTF-8 or not, as upstream.
    // A count bumped, not the text copied: `call` is borrowed again below.
    let value = call.arg(0)?.clone();
    let text = match value.str_bytes() {
        Some(bytes) => std::borrow::Cow::Borrowed(bytes),
        None => std::borrow::Cow::Owned(value.to_string().into_bytes()),
    };
    // Upstream's native returns before writing anything, newline included,
    // when the text is empty: `std\print("")` prints nothing.
    if text.is_empty() {
        return Ok(Value::Null);
    }
    let out = call.out();
    let written = out
        .write_all(&text)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
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
    Ok(Value::optional(parsed.map(Value::double)))
}

fn exit(call: &mut NativeCall<'_>) -> Result<Value, Raise> {
    let status = call.arg_int(0)?;
    call.exit(i32::try_from(status).unwrap_or(1));
    Ok(Value::Null)
}

/// Upstream's `math.pi`, as it declares it: `deg` and `rad` use it too, so
/// results agree with upstream to the last digit.
#[allow(clippy::approx_constant)] // deliberately upstream's rounding, not `PI`
const UPSTREAM_PI: f64 = 3.1415926535898;

/// A one-argument `math` function.
type Unary = fn(f64) -> f64;

/// Upstream's `buzz:math`: pure functions of their arguments.
pub(crate) fn math_module() -> NativeModule {
    let unary: [(&str, Unary); 9] = [
        ("abs", f64::abs),
        ("acos", f64::acos),
        ("asin", f64::asin),
        ("atan", f64::atan),
        ("cos", f64::cos),
        ("exp", f64::exp),
        ("sin", f64::sin),
        ("sqrt", f64::sqrt),
        ("tan", f64::tan),
    ];
    let mut m = NativeModule::new("math").value("pi", Value::double(UPSTREAM_PI));
    for (name, f) in unary {
        m = m.function(name, move |c| Ok(Value::double(f(c.arg_double(0)?))));
    }
    m.function("ceil", |c| Ok(Value::Int(c.arg_double(0)?.ceil() as i64)))
        .function("floor", |c| Ok(Value::Int(c.arg_double(0)?.floor() as i64)))
        .function("log", |c| {
            Ok(Value::double(c.arg_double(1)?.log(c.arg_double(0)?)))
        })
        .function("pow", pow)
        .function("deg", |c| {
            Ok(Value::double(c.arg_double(0)? * 180.0 / UPSTREAM_PI))
        })
        .function("rad", |c| {
            Ok(Value::double(c.arg_double(0)? * UPSTREAM_PI / 180.0))
        })
        .function("maxDouble", |c| {
            Ok(Value::double(c.arg_double(0)?.max(c.arg_double(1)?)))
        })
        .function("minDouble", |c| {
            Ok(Value::double(c.arg_double(0)?.min(c.arg_double(1)?)))
        })
        .function("maxInt", |c| {
            Ok(Value::Int(c.arg_int(0)?.max(c.arg_int(1)?)))
        })
        .function("minInt", |c| {
            Ok(Value::Int(c.arg_int(0)?.min(c.arg_int(1)?)))
        })
}

/// `buzz:debug`: `dump(value)` prints the value on the spell's output as
/// `std\print` shows it (upstream's own layout quotes strings and spreads
/// objects over lines; this is the same information on one line).
pub(crate) fn debug_module() -> NativeModule {
    NativeModule::new("buzz:debug").function("dump", |c| {
        let text = c.arg(0)?.to_string();
        let out = c.out();
        match writeln!(out, "{text}").and_then(|()| out.flush()) {
            Ok(()) => Ok(Value::Null),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Value::Null),
            Err(e) => Err(Raise::new(format!("debug.dump: {e}"))),
        }
    })
}

/// `buzz:gc`. Magus's values are reference-counted: each is freed when its
/// last reference goes. `collect()` runs the `collect` methods of freed
/// objects that wait for a safe point (see `buzz::finalize`) and lets go
/// of the interpreter's spare frames; `allocated()` is the memory magus
/// holds now, as the memory budget counts it.
pub(crate) fn gc_module() -> NativeModule {
    NativeModule::new("buzz:gc")
        .function("collect", |c| {
            c.collect_garbage();
            Ok(Value::Null)
        })
        .function("allocated", |_| {
            Ok(Value::Int(
                i64::try_from(super::super::vm::heap::in_use()).unwrap_or(i64::MAX),
            ))
        })
}

/// `pow(x, y)`: an `int` when both are ints (and it fits), else a double.
fn pow(call: &mut NativeCall<'_>) -> Result<Value, Raise> {
    if let (Some(x), Some(y)) = (call.arg(0)?.as_int(), call.arg(1)?.as_int()) {
        if let Some(v) = u32::try_from(y).ok().and_then(|y| x.checked_pow(y)) {
            return Ok(Value::Int(v));
        }
    }
    Ok(Value::double(call.arg_double(0)?.powf(call.arg_double(1)?)))
}

/// Natives under `buzz:buffer` (see `buffer.buzz`): bytes to and from text.
pub(crate) fn buffer_natives() -> NativeModule {
    NativeModule::new("bufraw")
        .function("zeros", |c| {
            let n = usize::try_from(c.arg_int(0)?).unwrap_or(0);
            if n > super::super::vm::limits::MAX_LIST_LEN {
                return Err(Raise::type_error("Buffer.init: capacity too large"));
            }
            Ok(Value::list(vec![Value::Int(0); n]))
        })
        .function("bytes", |c| {
            let text = c.arg_bytes(0)?;
            Ok(Value::list(
                text.iter().map(|b| Value::Int(i64::from(*b))).collect(),
            ))
        })
        .function("text", |c| {
            let bytes = c
                .arg_list(0)?
                .iter()
                .map(|v| v.as_int().and_then(|i| u8::try_from(i).ok()))
                .collect::<Option<Vec<u8>>>()
                .ok_or_else(|| Raise::type_error("Buffer: a byte is not an int from 0 to 255"))?;
            Ok(Value::from_bytes(bytes))
        })
        .function("intBytes", |c| {
            // Upstream's buffer keeps an int in 6 little-endian bytes (48 bits).
            let n = c.arg_int(0)?;
            Ok(byte_list(&n.to_le_bytes()[..6]))
        })
        .function("intFrom", |c| {
            let bytes = int_bytes::<6>(c)?;
            let mut wide = [0u8; 8];
            wide[..6].copy_from_slice(&bytes);
            // Sign-extend from bit 47.
            Ok(Value::Int(i64::from_le_bytes(wide) << 16 >> 16))
        })
        .function("doubleBytes", |c| {
            Ok(byte_list(&c.arg_double(0)?.to_le_bytes()))
        })
        .function("doubleFrom", |c| {
            Ok(Value::double(f64::from_le_bytes(int_bytes::<8>(c)?)))
        })
}

fn byte_list(bytes: &[u8]) -> Value {
    Value::list(bytes.iter().map(|b| Value::Int(i64::from(*b))).collect())
}

/// Argument 0 as exactly `N` bytes (a list of ints from 0 to 255).
fn int_bytes<const N: usize>(c: &NativeCall<'_>) -> Result<[u8; N], Raise> {
    let items = c.arg_list(0)?;
    let bytes: Option<Vec<u8>> = items
        .iter()
        .map(|v| v.as_int().and_then(|i| u8::try_from(i).ok()))
        .collect();
    bytes
        .and_then(|b| <[u8; N]>::try_from(b).ok())
        .ok_or_else(|| Raise::type_error(format!("Buffer: expected {N} bytes")))
}

/// `std.random(min: 0, max: min + 1)`: a number in `[min, max]`, both ends
/// included as upstream's; not for secrets (a xorshift seeded from the
/// clock), like upstream's.
fn random(call: &mut NativeCall<'_>) -> Result<Value, Raise> {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<u64> = Cell::new(seed());
    }
    // As upstream: both ends included, `max` defaults to `min + 1`.
    let min = call
        .opt_param(0, "min")
        .and_then(Value::as_int)
        .unwrap_or(0);
    let max = call
        .opt_param(1, "max")
        .and_then(Value::as_int)
        .unwrap_or(min.saturating_add(1));
    if max < min {
        return Err(Raise::new(format!(
            "std.random: max ({max}) is below min ({min})"
        )));
    }
    let next = STATE.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        x
    });
    // The width of [min, max] as u64 (at most 2^64 - 1 values apart).
    let width = max.wrapping_sub(min) as u64;
    let offset = match width.checked_add(1) {
        Some(span) => next % span,
        None => next,
    };
    Ok(Value::Int(min.wrapping_add(offset as i64)))
}

fn seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos | 1
}
