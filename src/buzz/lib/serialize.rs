//! The natives under `buzz:serialize` (see `serialize.buzz`): JSON decode
//! with `serde_json`, so build spells can read `package.json`-like data, and
//! an encoder that keeps a map's insertion order, as upstream's does.
//! Decoded JSON becomes plain Buzz values (an object's keys come sorted);
//! encoding refuses what JSON cannot hold.

use super::super::vm::native::{NativeCall, NativeModule, Raise};
use super::super::vm::value::{Value, MAX_VALUE_DEPTH};
use serde_json::Value as Json;

/// The `jsonraw` natives.
pub(crate) fn module() -> NativeModule {
    NativeModule::new("jsonraw")
        .function("encode", encode)
        .function("decode", decode)
        .function("check", |c| {
            let mut out = String::new();
            write_json(c.arg(0)?, 0, &mut out).map_err(not_serializable)?;
            Ok(Value::Null)
        })
        .function("q", query)
}

fn encode(call: &mut NativeCall<'_>) -> Result<Value, Raise> {
    let mut out = String::new();
    write_json(call.arg(0)?, 0, &mut out).map_err(not_serializable)?;
    Ok(Value::str(out))
}

fn not_serializable(why: String) -> Raise {
    Raise::new(Value::record(
        "NotSerializable",
        vec![("message", Value::str(why))],
    ))
}

/// `Boxed.q(path)`: follows map keys and list indices; null when absent.
fn query(call: &mut NativeCall<'_>) -> Result<Value, Raise> {
    let mut current = call.arg(0)?.clone();
    for key in call.arg_list(1)? {
        current = match (&current, &key) {
            (Value::Map(m), _) => m.get(&key).unwrap_or_default(),
            (Value::List(l), Value::Int(i)) => usize::try_from(*i)
                .ok()
                .and_then(|i| l.items.borrow().get(i).cloned())
                .unwrap_or_default(),
            _ => Value::Null,
        };
    }
    Ok(current)
}

/// JSON text of `v`, map and object entries in their own order.
fn write_json(v: &Value, depth: usize, out: &mut String) -> Result<(), String> {
    if depth > MAX_VALUE_DEPTH {
        return Err("value nested too deeply (or circular)".into());
    }
    match v {
        Value::List(l) => {
            let items = l.items.borrow().clone();
            write_seq(out, '[', ']', items.iter(), |x, out| {
                write_json(x, depth + 1, out)
            })
        }
        Value::Map(m) => {
            let entries = m.data.borrow().entries.clone();
            write_seq(out, '{', '}', entries.iter(), |(k, x), out| {
                let Value::Str(key) = k else {
                    return Err(format!(
                        "a JSON object key must be a str, not {}",
                        k.type_name()
                    ));
                };
                write_entry(key, x, depth, out)
            })
        }
        Value::Object(o) => {
            let fields = o.fields();
            write_seq(out, '{', '}', fields.iter(), |(k, x), out| {
                write_entry(k, x, depth, out)
            })
        }
        other => {
            out.push_str(&to_json(other, depth)?.to_string());
            Ok(())
        }
    }
}

fn write_entry(key: &str, v: &Value, depth: usize, out: &mut String) -> Result<(), String> {
    out.push_str(&Json::String(key.to_string()).to_string());
    out.push(':');
    write_json(v, depth + 1, out)
}

fn write_seq<T>(
    out: &mut String,
    open: char,
    close: char,
    items: impl Iterator<Item = T>,
    mut each: impl FnMut(T, &mut String) -> Result<(), String>,
) -> Result<(), String> {
    out.push(open);
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        each(item, out)?;
    }
    out.push(close);
    Ok(())
}

fn decode(call: &mut NativeCall<'_>) -> Result<Value, Raise> {
    let text = call.arg_str(0)?;
    let json: Json = serde_json::from_str(text).map_err(|e| {
        Raise::new(Value::record(
            "JsonParseError",
            vec![(
                "message",
                Value::str(format!(
                    "invalid JSON at line {}, column {}: {e}",
                    e.line(),
                    e.column()
                )),
            )],
        ))
    })?;
    Ok(from_json(json))
}

fn to_json(v: &Value, depth: usize) -> Result<Json, String> {
    if depth > MAX_VALUE_DEPTH {
        return Err("value nested too deeply (or circular)".into());
    }
    Ok(match v {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(b.get()),
        Value::Int(i) => Json::from(*i),
        Value::Double(d) => serde_json::Number::from_f64(d.get())
            .map(Json::Number)
            .ok_or_else(|| format!("{} has no JSON form", d.get()))?,
        Value::Str(s) => Json::String(s.to_string()),
        Value::List(l) => {
            let items = l.items.borrow();
            Json::Array(
                items
                    .iter()
                    .map(|x| to_json(x, depth + 1))
                    .collect::<Result<_, _>>()?,
            )
        }
        Value::Map(m) => {
            let mut out = serde_json::Map::new();
            for (k, x) in &m.data.borrow().entries {
                let Value::Str(key) = k else {
                    return Err(format!(
                        "a JSON object key must be a str, not {}",
                        k.type_name()
                    ));
                };
                out.insert(key.to_string(), to_json(x, depth + 1)?);
            }
            Json::Object(out)
        }
        Value::Object(o) => {
            let mut out = serde_json::Map::new();
            for (k, x) in o.fields() {
                out.insert(k.to_string(), to_json(&x, depth + 1)?);
            }
            Json::Object(out)
        }
        Value::EnumCase(c) => to_json(&c.value, depth + 1)?,
        other => return Err(format!("{} is not serializable", other.type_name())),
    })
}

fn from_json(json: Json) -> Value {
    match json {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::bool(b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::double(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => Value::str(s),
        Json::Array(items) => Value::list(items.into_iter().map(from_json).collect()),
        Json::Object(map) => Value::map(
            map.into_iter()
                .map(|(k, v)| (Value::str(k), from_json(v)))
                .collect(),
        ),
    }
}
