//! `buzz:serialize`: JSON encode and decode with `serde_json`, so build
//! spells can read `package.json`-like data. Decoded JSON becomes plain
//! Buzz values (an object's keys come sorted); encoding refuses
//! what JSON cannot hold.

use super::native::{NativeCall, NativeModule, Raise};
use super::value::{Value, MAX_VALUE_DEPTH};
use serde_json::Value as Json;

/// The `serialize` module (`import "buzz:serialize";`).
pub fn module() -> NativeModule {
    NativeModule::new("serialize")
        .function("jsonEncode", encode)
        .function("jsonDecode", decode)
}

fn encode(call: &mut NativeCall<'_>) -> Result<Value, Raise> {
    let json = to_json(call.arg(0)?, 0)
        .map_err(|why| Raise::type_error(format!("serialize.jsonEncode: {why}")))?;
    Ok(Value::str(json.to_string()))
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
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::from(*i),
        Value::Double(d) => serde_json::Number::from_f64(*d)
            .map(Json::Number)
            .ok_or_else(|| format!("{d} has no JSON form"))?,
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
            for (k, x) in o.fields.borrow().iter() {
                out.insert(k.to_string(), to_json(x, depth + 1)?);
            }
            Json::Object(out)
        }
        Value::EnumCase(e, i) => {
            let value = e.cases.get(*i).map(|(_, v)| v.clone()).unwrap_or_default();
            to_json(&value, depth + 1)?
        }
        other => return Err(format!("{} is not serializable", other.type_name())),
    })
}

fn from_json(json: Json) -> Value {
    match json {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Double(n.as_f64().unwrap_or(f64::NAN)),
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
