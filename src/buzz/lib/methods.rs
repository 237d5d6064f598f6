//! Built-in behaviour of values: arithmetic and comparison with checked
//! integer maths, subscripts, and the methods of `str`, lists, maps and
//! ranges. Errors are plain messages; the evaluator adds the position.

use super::super::syntax::ast::BinOp;
use super::super::syntax::lexer::Pos;
use super::super::vm::flow::Eval;
use super::super::vm::limits::{MAX_LIST_LEN, MAX_STR_LEN};
use super::super::vm::value::{ArcStr, ListObj, MapObj, Value};
use super::callbacks::{self, shaped_list, shaped_map};
use super::method_names::{no_such_method, Receiver};
use super::Run;
use std::cmp::Ordering;
use std::rc::Rc;

type Plain = Result<Value, String>;

/// Values whose methods are built in rather than looked up as fields.
pub(crate) fn is_builtin_receiver(v: &Value) -> bool {
    matches!(
        v,
        Value::Str(_)
            | Value::Bytes(_)
            | Value::List(_)
            | Value::Map(_)
            | Value::Range(..)
            | Value::Pattern(_)
            | Value::Fiber(_)
    )
}

// ----- operators -----

pub(crate) fn binary(op: BinOp, a: &Value, b: &Value) -> Plain {
    match op {
        BinOp::Eq => return Ok(Value::bool(a.equals(b, 0))),
        BinOp::Ne => return Ok(Value::bool(!a.equals(b, 0))),
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => return compare(op, a, b),
        _ => {}
    }
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => int_op(op, *x, *y),
        (Value::Double(_) | Value::Int(_), Value::Double(_) | Value::Int(_)) => double_op(
            op,
            a.as_double().unwrap_or_default(),
            b.as_double().unwrap_or_default(),
        ),
        (Value::Str(x), Value::Str(y)) if op == BinOp::Add => concat_str(x, y),
        (Value::Str(_) | Value::Bytes(_), Value::Str(_) | Value::Bytes(_)) if op == BinOp::Add => {
            concat_bytes(
                a.str_bytes().unwrap_or_default(),
                b.str_bytes().unwrap_or_default(),
            )
        }
        (Value::List(x), Value::List(y)) if op == BinOp::Add => concat_list(x, y),
        (Value::Map(x), Value::Map(y)) if op == BinOp::Add => Ok(merge_maps(x, y)),
        _ => Err(format!(
            "cannot apply `{}` to {} and {}",
            op.symbol(),
            a.type_name(),
            b.type_name()
        )),
    }
}

fn int_op(op: BinOp, x: i64, y: i64) -> Plain {
    let overflow = || format!("integer overflow in `{x} {} {y}`", op.symbol());
    let result = match op {
        BinOp::Add => x.checked_add(y),
        BinOp::Sub => x.checked_sub(y),
        BinOp::Mul => x.checked_mul(y),
        BinOp::Div | BinOp::Rem if y == 0 => return Err("division by zero".into()),
        BinOp::Div => x.checked_div(y),
        BinOp::Rem => x.checked_rem(y).map(|r| floored(r, y)),
        BinOp::BitAnd => Some(x & y),
        BinOp::BitOr => Some(x | y),
        BinOp::BitXor => Some(x ^ y),
        BinOp::Shl => u32::try_from(y).ok().filter(|s| *s < 64).map(|s| x << s),
        BinOp::Shr => u32::try_from(y).ok().filter(|s| *s < 64).map(|s| x >> s),
        _ => None,
    };
    result.map(Value::Int).ok_or_else(overflow)
}

fn double_op(op: BinOp, x: f64, y: f64) -> Plain {
    Ok(Value::double(match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => x / y,
        BinOp::Rem => double_rem(x, y),
        _ => return Err(format!("cannot apply `{}` to double", op.symbol())),
    }))
}

/// `x % y` on doubles, floored (see [`floored`]). When both are whole
/// numbers below 2^53 (fasta's random numbers), the integer remainder is
/// the exact remainder `fmod` gives, with its sign (a zero takes `x`'s
/// sign, as `fmod`'s does), at a fraction of the cost of the soft `fmod`
/// Rust links.
#[inline]
pub(crate) fn double_rem(x: f64, y: f64) -> f64 {
    const WHOLE: f64 = 9_007_199_254_740_992.0; // 2^53
    if x.abs() < WHOLE && y.abs() < WHOLE {
        let (a, b) = (x as i64, y as i64);
        if a as f64 == x && b as f64 == y && b != 0 {
            let r = match a % b {
                0 => 0.0f64.copysign(x),
                r => r as f64,
            };
            return floored(r, y);
        }
    }
    floored(x % y, y)
}

/// `%` is upstream's `@mod`: the remainder of floored division, which
/// takes the divisor's sign (`-7 % 3` is 2, as in Python), where Rust's
/// `%` truncates and keeps the dividend's (-1).
pub(crate) fn floored<T>(rem: T, divisor: T) -> T
where
    T: Copy + PartialOrd + Default + std::ops::Add<Output = T>,
{
    let zero = T::default();
    if rem != zero && (rem < zero) != (divisor < zero) {
        rem + divisor
    } else {
        rem
    }
}

fn concat_str(x: &str, y: &str) -> Plain {
    if x.len() + y.len() > MAX_STR_LEN {
        return Err(format!("string too long (more than {MAX_STR_LEN} bytes)"));
    }
    let mut s = String::with_capacity(x.len() + y.len());
    s.push_str(x);
    s.push_str(y);
    Ok(Value::str(s))
}

/// `+` where a side is not UTF-8: the bytes joined (two halves of one
/// character make text again).
fn concat_bytes(x: &[u8], y: &[u8]) -> Plain {
    if x.len() + y.len() > MAX_STR_LEN {
        return Err(format!("string too long (more than {MAX_STR_LEN} bytes)"));
    }
    Ok(Value::from_bytes([x, y].concat()))
}

fn concat_list(x: &ListObj, y: &ListObj) -> Plain {
    let (a, b) = (x.items.borrow(), y.items.borrow());
    if a.len() + b.len() > MAX_LIST_LEN {
        return Err(format!("list too long (more than {MAX_LIST_LEN} items)"));
    }
    Ok(Value::list(a.iter().chain(b.iter()).cloned().collect()))
}

fn merge_maps(x: &MapObj, y: &MapObj) -> Value {
    let merged = MapObj::default();
    for (k, v) in x
        .data
        .borrow()
        .entries
        .iter()
        .chain(y.data.borrow().entries.iter())
    {
        merged.insert(k.clone(), v.clone());
    }
    Value::Map(Rc::new(merged))
}

fn compare(op: BinOp, a: &Value, b: &Value) -> Plain {
    let ordering = match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Str(x), Value::Str(y)) => Some(x.cmp(y)),
        (Value::Str(_) | Value::Bytes(_), Value::Str(_) | Value::Bytes(_)) => {
            Some(a.str_bytes().cmp(&b.str_bytes()))
        }
        (Value::Double(_) | Value::Int(_), Value::Double(_) | Value::Int(_)) => a
            .as_double()
            .unwrap_or_default()
            .partial_cmp(&b.as_double().unwrap_or_default()),
        _ => {
            return Err(format!(
                "cannot compare {} and {} with `{}`",
                a.type_name(),
                b.type_name(),
                op.symbol()
            ))
        }
    };
    let Some(o) = ordering else {
        return Ok(Value::bool(false));
    };
    Ok(Value::bool(match op {
        BinOp::Lt => o == Ordering::Less,
        BinOp::Le => o != Ordering::Greater,
        BinOp::Gt => o == Ordering::Greater,
        _ => o != Ordering::Less,
    }))
}

// ----- subscripts -----

/// `v[i]`: `Ok(None)` when the index is out of range or the key absent.
pub(crate) fn index(v: &Value, i: &Value) -> Result<Option<Value>, String> {
    match (v, i) {
        (Value::List(list), Value::Int(n)) => Ok(usize::try_from(*n)
            .ok()
            .and_then(|n| list.items.borrow().get(n).cloned())),
        // A byte, as upstream: `"é"[0]` is a one-byte string.
        (Value::Str(_) | Value::Bytes(_), Value::Int(n)) => Ok(usize::try_from(*n)
            .ok()
            .and_then(|n| v.str_bytes().and_then(|b| b.get(n)))
            .map(|b| Value::from_bytes(vec![*b]))),
        (Value::Map(map), key) => Ok(Some(map.get(key).unwrap_or_default())),
        _ => Err(format!(
            "cannot subscript {} with {}",
            v.type_name(),
            i.type_name()
        )),
    }
}

pub(crate) fn out_of_range(v: &Value, i: &Value) -> String {
    let len = match v {
        Value::List(list) => list.items.borrow().len(),
        Value::Str(_) | Value::Bytes(_) => v.str_bytes().map_or(0, <[u8]>::len),
        _ => 0,
    };
    format!(
        "index {i} out of range for a {} of length {len} (use `[?{i}]` to get null instead)",
        v.type_name()
    )
}

/// The `n`-th element of the range `low..high`.
pub(crate) fn range_nth(low: i64, high: i64, n: i64) -> Option<i64> {
    if low <= high {
        low.checked_add(n).filter(|v| *v < high)
    } else {
        low.checked_sub(n).filter(|v| *v > high)
    }
}

fn range_len(low: i64, high: i64) -> i64 {
    (i128::from(high) - i128::from(low))
        .unsigned_abs()
        .min(i64::MAX as u128) as i64
}

// ----- methods -----

/// The name of a built-in method, resolved once where a call site is
/// compiled: the commonest are then found without comparing names.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Builtin {
    Len,
    Sub,
    Append,
    Byte,
    StartsWith,
    Size,
    /// Any other name: found by name at the call.
    Other,
}

impl Builtin {
    pub(crate) fn of(name: &str) -> Builtin {
        match name {
            "len" => Builtin::Len,
            "sub" => Builtin::Sub,
            "append" => Builtin::Append,
            "byte" => Builtin::Byte,
            "startsWith" => Builtin::StartsWith,
            "size" => Builtin::Size,
            _ => Builtin::Other,
        }
    }
}

/// [`call_method`] of the method `name`, resolved to `id`: the commonest
/// receivers and methods here, each by the same function the name leads
/// to, every other by name.
#[inline]
pub(crate) fn call_builtin(
    interp: &mut impl Run,
    receiver: &Value,
    id: Builtin,
    name: &str,
    args: &[Value],
    pos: Pos,
) -> Eval<Value> {
    let result = match (receiver, id) {
        (Value::Str(s), Builtin::Len) => return Ok(Value::Int(s.len() as i64)),
        (Value::Str(s), Builtin::Sub) => str_sub(s, args, name),
        (Value::Str(s), Builtin::Byte) => str_byte(s.as_bytes(), args, name),
        (Value::Str(s), Builtin::StartsWith) => {
            arg_str(args, 0, name).map(|p| Value::bool(s.starts_with(p)))
        }
        (Value::List(list), Builtin::Len) => {
            return Ok(Value::Int(list.items.borrow().len() as i64))
        }
        (Value::List(list), Builtin::Append) => list_append(list, args, name),
        (Value::Map(map), Builtin::Len | Builtin::Size) => return Ok(Value::Int(map.len() as i64)),
        _ => return call_method(interp, receiver, name, args, pos),
    };
    result.map_err(|message| interp.fail(pos, message))
}

pub(crate) fn call_method(
    interp: &mut impl Run,
    receiver: &Value,
    name: &str,
    args: &[Value],
    pos: Pos,
) -> Eval<Value> {
    let result = match receiver {
        Value::Str(s) => str_method(s, name, args),
        Value::Bytes(b) => bytes_method(b, name, args),
        Value::List(list) if callbacks::takes_callback(name) => {
            return callbacks::list_callback(interp, list, name, args, pos)
        }
        Value::Map(map) if callbacks::takes_callback(name) => {
            return callbacks::map_callback(interp, map, name, args, pos)
        }
        Value::List(list) => list_method(list, name, args),
        Value::Map(map) => map_method(map, name, args),
        Value::Range(r) => range_method(r.low, r.high, name, args),
        Value::Pattern(p) => callbacks::pattern_method(p, name, args),
        Value::Fiber(f) => fiber_method(f, name, args),
        other => Err(format!("{} has no methods", other.type_name())),
    };
    result.map_err(|message| interp.fail(pos, message))
}

/// `fiber.over()` and `fiber.isMain()`.
fn fiber_method(f: &super::super::vm::fiber::Fiber, name: &str, args: &[Value]) -> Plain {
    let result = match name {
        "over" => f.is_over(),
        "isMain" => f.is_main(),
        _ => return Err(format!("fib has no method `{name}`")),
    };
    if !args.is_empty() {
        return Err(format!("fib.{name}() takes no arguments"));
    }
    Ok(Value::bool(result))
}

fn arg<'a>(args: &'a [Value], i: usize, method: &str) -> Result<&'a Value, String> {
    args.get(i)
        .ok_or_else(|| format!("`{method}` needs argument {}", i + 1))
}

fn arg_str<'a>(args: &'a [Value], i: usize, method: &str) -> Result<&'a str, String> {
    let v = arg(args, i, method)?;
    v.as_str().ok_or_else(|| {
        format!(
            "`{method}` argument {} expected str, got {}",
            i + 1,
            v.type_name()
        )
    })
}

fn arg_int(args: &[Value], i: usize, method: &str) -> Result<i64, String> {
    let v = arg(args, i, method)?;
    v.as_int().ok_or_else(|| {
        format!(
            "`{method}` argument {} expected int, got {}",
            i + 1,
            v.type_name()
        )
    })
}

/// `(start, len?)` checked against `total`, as a char or item range.
fn sub_range(args: &[Value], total: usize, method: &str) -> Result<(usize, usize), String> {
    let start = arg_int(args, 0, method)?;
    let len = match args.get(1).filter(|v| !v.is_null()) {
        Some(_) => arg_int(args, 1, method)?,
        None => (total as i64).saturating_sub(start),
    };
    let ok = start >= 0
        && len >= 0
        && start
            .checked_add(len)
            .is_some_and(|end| end <= total as i64);
    if !ok {
        return Err(format!(
            "`{method}({start}, len: {len})` out of range for length {total}"
        ));
    }
    Ok((start as usize, len as usize))
}

fn str_method(s: &ArcStr, name: &str, args: &[Value]) -> Plain {
    match name {
        // Bytes, as upstream (`utf8Len` counts characters).
        "len" => Ok(Value::Int(s.len() as i64)),
        "trim" => Ok(Value::str(s.trim())),
        "upper" => Ok(Value::str(s.to_uppercase())),
        "lower" => Ok(Value::str(s.to_lowercase())),
        "startsWith" => Ok(Value::bool(s.starts_with(arg_str(args, 0, name)?))),
        "endsWith" => Ok(Value::bool(s.ends_with(arg_str(args, 0, name)?))),
        "split" => str_split(s, arg_str(args, 0, name)?),
        "replace" => str_replace(s, arg_str(args, 0, name)?, arg_str(args, 1, name)?),
        "indexOf" => Ok(str_index_of(s, arg_str(args, 0, name)?)),
        "sub" => str_sub(s, args, name),
        "bin" => hex_decode(s).map(Value::from_bytes),
        "repeat" => str_repeat(s, arg_int(args, 0, name)?),
        "byte" => str_byte(s.as_bytes(), args, name),
        "hex" => Ok(Value::str(
            s.bytes().map(|b| format!("{b:02x}")).collect::<String>(),
        )),
        "encodeBase64" => Ok(Value::str(base64_encode(s.as_bytes()))),
        "decodeBase64" => base64_decode(s)
            .map(Value::from_bytes)
            .ok_or_else(|| "`decodeBase64`: not base64".to_string()),
        "utf8Len" => Ok(Value::Int(s.chars().count() as i64)),
        "utf8Valid" => Ok(Value::bool(true)),
        "utf8Codepoints" => Ok(Value::list(
            s.chars().map(|c| Value::str(c.to_string())).collect(),
        )),
        _ => Err(no_such_method(Receiver::Str, name)),
    }
}

/// `s.byte(i)`: the byte at `i`, as an int.
fn str_byte(bytes: &[u8], args: &[Value], name: &str) -> Plain {
    let i = arg_int(args, 0, name)?;
    let byte = usize::try_from(i).ok().and_then(|i| bytes.get(i));
    byte.map(|b| Value::Int(i64::from(*b))).ok_or_else(|| {
        format!(
            "`byte({i})` out of range for a str of {} bytes",
            bytes.len()
        )
    })
}

/// `sub(start, len?)` by byte. As upstream: the range is clamped to the
/// string, never an error.
fn byte_sub(bytes: &[u8], args: &[Value], name: &str) -> Plain {
    let start = usize::try_from(arg_int(args, 0, name)?.max(0)).unwrap_or(0);
    let len = match args.get(1).filter(|v| !v.is_null()) {
        Some(_) => usize::try_from(arg_int(args, 1, name)?.max(0)).unwrap_or(0),
        None => usize::MAX,
    };
    let start = start.min(bytes.len());
    let end = start.saturating_add(len).min(bytes.len());
    Ok(Value::from_bytes(bytes[start..end].to_vec()))
}

/// [`byte_sub`] of text: a piece that starts and ends on characters is
/// text at once (one copy, no UTF-8 check).
fn str_sub(s: &str, args: &[Value], name: &str) -> Plain {
    if let (Some(Value::Int(start)), None | Some(Value::Int(_)) | Some(Value::Null)) =
        (args.first(), args.get(1))
    {
        let start = usize::try_from((*start).max(0)).unwrap_or(0).min(s.len());
        let len = match args.get(1) {
            Some(Value::Int(len)) => usize::try_from((*len).max(0)).unwrap_or(0),
            _ => usize::MAX,
        };
        let end = start.saturating_add(len).min(s.len());
        if let Some(piece) = s.get(start..end) {
            return Ok(Value::str(piece));
        }
    }
    byte_sub(s.as_bytes(), args, name)
}

/// `"c3fc".bin()`: the bytes the hex digits spell.
fn hex_decode(hex: &str) -> Result<Vec<u8>, String> {
    let digits = hex.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return Err("`bin`: odd number of hex digits".into());
    }
    digits
        .chunks(2)
        .map(|pair| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|p| u8::from_str_radix(p, 16).ok())
                .ok_or_else(|| {
                    format!(
                        "`bin`: `{}` is not a hex byte",
                        String::from_utf8_lossy(pair)
                    )
                })
        })
        .collect()
}

/// Methods of a `str` that is not UTF-8: the byte-wise ones; the ones about
/// characters say why they cannot apply.
fn bytes_method(b: &[u8], name: &str, args: &[Value]) -> Plain {
    match name {
        "len" => Ok(Value::Int(b.len() as i64)),
        "sub" => byte_sub(b, args, name),
        "byte" => str_byte(b, args, name),
        "hex" => Ok(Value::str(
            b.iter().map(|b| format!("{b:02x}")).collect::<String>(),
        )),
        "encodeBase64" => Ok(Value::str(base64_encode(b))),
        "utf8Valid" => Ok(Value::bool(false)),
        "repeat" => {
            let n = usize::try_from(arg_int(args, 0, name)?)
                .map_err(|_| "`repeat` count must not be negative".to_string())?;
            if b.len().saturating_mul(n) > MAX_STR_LEN {
                return Err(format!("string too long (more than {MAX_STR_LEN} bytes)"));
            }
            Ok(Value::from_bytes(b.repeat(n)))
        }
        _ => Err(format!(
            "str.{name}() needs UTF-8 text, and this string holds bytes that are not UTF-8"
        )),
    }
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with `=` padding.
fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(BASE64[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u32> = text
        .trim_end_matches('=')
        .bytes()
        .map(|c| BASE64.iter().position(|d| *d == c).map(|p| p as u32))
        .collect::<Option<_>>()?;
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        if chunk.len() == 1 {
            return None;
        }
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, d)| n | d << (18 - 6 * i));
        for i in 0..chunk.len() - 1 {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    Some(out)
}

fn str_split(s: &str, sep: &str) -> Plain {
    let parts: Vec<Value> = if sep.is_empty() {
        s.chars().map(|c| Value::str(c.to_string())).collect()
    } else {
        s.split(sep).map(Value::str).collect()
    };
    Ok(Value::list(parts))
}

fn str_replace(s: &str, needle: &str, with: &str) -> Plain {
    if needle.is_empty() {
        return Ok(Value::str(s));
    }
    let count = s.matches(needle).count();
    let grown = count.saturating_mul(with.len()).saturating_add(s.len());
    if grown > MAX_STR_LEN {
        return Err(format!("string too long (more than {MAX_STR_LEN} bytes)"));
    }
    Ok(Value::str(s.replace(needle, with)))
}

/// The byte offset of `needle`, as upstream.
fn str_index_of(s: &str, needle: &str) -> Value {
    match s.find(needle) {
        Some(byte) => Value::Int(byte as i64),
        None => Value::Null,
    }
}

fn str_repeat(s: &str, n: i64) -> Plain {
    let n = usize::try_from(n).map_err(|_| "`repeat` count must not be negative".to_string())?;
    if s.len().saturating_mul(n) > MAX_STR_LEN {
        return Err(format!("string too long (more than {MAX_STR_LEN} bytes)"));
    }
    Ok(Value::str(s.repeat(n)))
}

fn list_append(list: &ListObj, args: &[Value], name: &str) -> Plain {
    let v = arg(args, 0, name)?.clone();
    let mut items = list.items.borrow_mut();
    if items.len() >= MAX_LIST_LEN {
        return Err(format!("list too long (more than {MAX_LIST_LEN} items)"));
    }
    items.push(v);
    Ok(Value::Null)
}

fn list_method(list: &ListObj, name: &str, args: &[Value]) -> Plain {
    match name {
        "len" => Ok(Value::Int(list.items.borrow().len() as i64)),
        "append" => list_append(list, args, name),
        "join" => {
            let sep = arg(args, 0, name)?;
            let sep = sep.str_bytes().ok_or_else(|| {
                format!("`join` argument 1 expected str, got {}", sep.type_name())
            })?;
            list_join(&list.items.borrow(), sep)
        }
        "indexOf" => {
            let needle = arg(args, 0, name)?;
            let found = list.items.borrow().iter().position(|v| v.equals(needle, 0));
            Ok(found.map_or(Value::Null, |i| Value::Int(i as i64)))
        }
        "sub" => {
            let items = list.items.borrow();
            let (start, len) = sub_range(args, items.len(), name)?;
            let mutable = list.shape.mutable.get();
            Ok(shaped_list(
                list,
                items[start..start + len].to_vec(),
                mutable,
            ))
        }
        "remove" => {
            let i = arg_int(args, 0, name)?;
            let mut items = list.items.borrow_mut();
            let removed = usize::try_from(i)
                .ok()
                .filter(|i| *i < items.len())
                .map(|i| items.remove(i));
            Ok(Value::optional(removed))
        }
        "pop" => Ok(Value::optional(list.items.borrow_mut().pop())),
        "insert" => list_insert(list, arg_int(args, 0, name)?, arg(args, 1, name)?.clone()),
        "reverse" => Ok(Value::list(
            list.items.borrow().iter().rev().cloned().collect(),
        )),
        "cloneMutable" | "cloneImmutable" | "copyMutable" | "copyImmutable" => {
            let mutable = name.ends_with("Mutable") && !name.ends_with("Immutable");
            Ok(shaped_list(list, list.items.borrow().clone(), mutable))
        }
        "fill" => list_fill(list, args),
        _ => Err(no_such_method(Receiver::List, name)),
    }
}

/// `fill(value, start: 0, len: rest)`: overwrites items in place.
fn list_fill(list: &ListObj, args: &[Value]) -> Plain {
    let value = arg(args, 0, "fill")?.clone();
    let total = list.items.borrow().len();
    let (start, len) = sub_range(&args[1.min(args.len())..], total, "fill").or_else(|e| {
        if args.len() < 2 {
            Ok((0, total))
        } else {
            Err(e)
        }
    })?;
    for slot in list.items.borrow_mut().iter_mut().skip(start).take(len) {
        *slot = value.clone();
    }
    Ok(Value::List(Rc::new(ListObj::new(
        list.items.borrow().clone(),
    ))))
}

/// `join`: byte for byte, so pieces that are not UTF-8 stay exact.
fn list_join(items: &[Value], sep: &[u8]) -> Plain {
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(sep);
        }
        match item.str_bytes() {
            Some(bytes) => out.extend_from_slice(bytes),
            None => out.extend_from_slice(item.to_string().as_bytes()),
        }
        if out.len() > MAX_STR_LEN {
            return Err(format!("string too long (more than {MAX_STR_LEN} bytes)"));
        }
    }
    Ok(Value::from_bytes(out))
}

fn list_insert(list: &ListObj, i: i64, v: Value) -> Plain {
    let mut items = list.items.borrow_mut();
    match usize::try_from(i).ok().filter(|i| *i <= items.len()) {
        Some(i) if items.len() < MAX_LIST_LEN => {
            items.insert(i, v);
            Ok(Value::Null)
        }
        Some(_) => Err(format!("list too long (more than {MAX_LIST_LEN} items)")),
        None => Err(format!(
            "`insert` index {i} out of range for length {}",
            items.len()
        )),
    }
}

fn map_method(map: &MapObj, name: &str, args: &[Value]) -> Plain {
    match name {
        "size" | "len" => Ok(Value::Int(map.len() as i64)),
        "keys" => Ok(Value::list(
            map.data
                .borrow()
                .entries
                .iter()
                .map(|(k, _)| k.clone())
                .collect(),
        )),
        "values" => Ok(Value::list(
            map.data
                .borrow()
                .entries
                .iter()
                .map(|(_, v)| v.clone())
                .collect(),
        )),
        "remove" => Ok(Value::optional(map.remove(arg(args, 0, name)?))),
        "hasKey" => Ok(Value::bool(map.get(arg(args, 0, name)?).is_some())),
        "cloneMutable" | "cloneImmutable" | "copyMutable" | "copyImmutable" => {
            let mutable = name.ends_with("Mutable") && !name.ends_with("Immutable");
            Ok(shaped_map(map, map.data.borrow().entries.clone(), mutable))
        }
        "diff" | "intersect" => {
            let Value::Map(other) = arg(args, 0, name)? else {
                return Err(format!("`{name}` expects a map"));
            };
            let keep_common = name == "intersect";
            let entries = map.data.borrow().entries.clone();
            Ok(Value::map(
                entries
                    .into_iter()
                    .filter(|(k, _)| other.get(k).is_some() == keep_common)
                    .collect(),
            ))
        }
        _ => Err(no_such_method(Receiver::Map, name)),
    }
}

fn range_method(low: i64, high: i64, name: &str, args: &[Value]) -> Plain {
    let (lo, hi) = (low.min(high), low.max(high));
    match name {
        "contains" => {
            let n = arg_int(args, 0, name)?;
            Ok(Value::bool(n >= lo && n < hi))
        }
        "subsetOf" | "intersect" => {
            let Some(Value::Range(other)) = args.first() else {
                return Err(format!("`{name}` expects a range"));
            };
            let (a, b) = (other.low, other.high);
            let (olo, ohi) = (a.min(b), a.max(b));
            if name == "subsetOf" {
                return Ok(Value::bool(lo >= olo && hi <= ohi));
            }
            Ok(Value::range(lo.max(olo), hi.min(ohi)))
        }
        "len" => Ok(Value::Int(range_len(low, high))),
        "low" => Ok(Value::Int(low)),
        "high" => Ok(Value::Int(high)),
        "invert" => Ok(Value::range(high, low)),
        "toList" => {
            let len = range_len(low, high);
            if len > MAX_LIST_LEN as i64 {
                return Err(format!("list too long (more than {MAX_LIST_LEN} items)"));
            }
            Ok(Value::list(
                (0..len)
                    .filter_map(|n| range_nth(low, high, n))
                    .map(Value::Int)
                    .collect(),
            ))
        }
        _ => Err(no_such_method(Receiver::Range, name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_maths_is_checked() {
        let cases = [
            (BinOp::Add, i64::MAX, 1, Err("integer overflow")),
            (BinOp::Div, 1, 0, Err("division by zero")),
            (BinOp::Rem, 1, 0, Err("division by zero")),
            (BinOp::Div, i64::MIN, -1, Err("integer overflow")),
            (BinOp::Shl, 1, 64, Err("integer overflow")),
            (BinOp::Mul, 6, 7, Ok(42)),
            (BinOp::Rem, -7, 3, Ok(2)),
            (BinOp::Rem, 7, -3, Ok(-2)),
            (BinOp::Rem, -6, 3, Ok(0)),
        ];
        for (op, a, b, want) in cases {
            let got = binary(op, &Value::Int(a), &Value::Int(b));
            match (want, got) {
                (Ok(w), Ok(v)) => assert_eq!(v.as_int(), Some(w)),
                (Err(w), Err(m)) => assert!(m.contains(w), "{m}"),
                (w, g) => panic!("{a} {op:?} {b}: want {w:?}, got {g:?}"),
            }
        }
    }

    #[test]
    fn the_whole_number_remainder_is_fmods() {
        let values = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            2.0,
            -2.0,
            3.0,
            7.0,
            -7.0,
            0.5,
            -2.5,
            139968.0,
            542_651_364.0,
            1e15,
            -1e15,
            9_007_199_254_740_991.0,
            9_007_199_254_740_992.0,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
        ];
        for x in values {
            for y in values {
                let (got, want) = (double_rem(x, y), floored(x % y, y));
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "{x} % {y}: {got:?}, fmod gives {want:?}"
                );
            }
        }
    }

    #[test]
    fn double_remainder_takes_the_divisor_sign() {
        for (a, b, want) in [
            (-7.5, 2.0, 0.5),
            (7.5, -2.0, -0.5),
            (7.5, 2.0, 1.5),
            (-4.0, 2.0, 0.0),
        ] {
            let got = binary(BinOp::Rem, &Value::double(a), &Value::double(b)).unwrap();
            assert!(
                matches!(got, Value::Double(d) if d.get() == want),
                "{a} % {b}: {got:?}"
            );
        }
    }

    #[test]
    fn base64_round_trips() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("hello world", "aGVsbG8gd29ybGQ="),
        ];
        for (plain, coded) in cases {
            assert_eq!(base64_encode(plain.as_bytes()), coded);
            assert_eq!(base64_decode(coded).as_deref(), Some(plain.as_bytes()));
        }
        assert_eq!(base64_decode("a"), None);
        assert_eq!(base64_decode("a*"), None);
    }

    #[test]
    fn ranges_count_up_and_down() {
        let up: Vec<i64> = (0..5).filter_map(|n| range_nth(0, 3, n)).collect();
        assert_eq!(up, [0, 1, 2]);
        let down: Vec<i64> = (0..5).filter_map(|n| range_nth(3, 0, n)).collect();
        assert_eq!(down, [3, 2, 1]);
        assert_eq!(range_len(i64::MIN, i64::MAX), i64::MAX);
    }
}
