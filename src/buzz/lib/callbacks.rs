//! Methods that call back into Buzz: `forEach`, `map`, `filter`, `reduce`
//! and `sort` on lists and maps, and the methods of patterns. Collections
//! are copied before the first call, so a callback may change them.

use super::super::syntax::lexer::Pos;
use super::super::vm::flow::{Args, Eval};
use super::super::vm::limits::MAX_LIST_LEN;
use super::super::vm::value::{ListObj, MapObj, Pattern, Shape, Value};
use super::Run;
use std::cell::RefCell;
use std::cmp::Ordering;
use std::rc::Rc;

/// Whether `name` is a list or map method that takes a callback.
/// (`method_names::CALLBACK` names the same five; its tests hold them
/// together.)
pub(crate) fn takes_callback(name: &str) -> bool {
    matches!(name, "forEach" | "map" | "filter" | "reduce" | "sort")
}

fn positional(values: &[Value]) -> Args {
    values.iter().map(|v| (None, v.clone())).collect()
}

fn callback<'a>(interp: &impl Run, args: &'a [Value], name: &str, pos: Pos) -> Eval<&'a Value> {
    args.first()
        .ok_or_else(|| interp.fail(pos, format!("`{name}` needs a function argument")))
}

pub(crate) fn list_callback(
    interp: &mut impl Run,
    list: &ListObj,
    name: &str,
    args: &[Value],
    pos: Pos,
) -> Eval<Value> {
    let f = callback(interp, args, name, pos)?.clone();
    let items = list.items.borrow().clone();
    let entries: Vec<(Value, Value)> = items
        .into_iter()
        .enumerate()
        .map(|(i, v)| (Value::Int(i as i64), v))
        .collect();
    if name == "sort" {
        let sorted = sort_by(interp, entries, &f, |(_, v)| v.clone(), pos)?;
        *list.items.borrow_mut() = sorted.into_iter().map(|(_, v)| v).collect();
        return Ok(Value::List(Rc::new(ListObj::new(
            list.items.borrow().clone(),
        ))));
    }
    let out = walk(interp, &entries, &f, name, args, pos)?;
    Ok(match (name, out) {
        ("map", Walked::Items(items)) | ("filter", Walked::Items(items)) => {
            Value::list(items.into_iter().map(|(_, v)| v).collect())
        }
        (_, Walked::Value(v)) => v,
        (_, Walked::Items(_)) => Value::Null,
    })
}

pub(crate) fn map_callback(
    interp: &mut impl Run,
    map: &MapObj,
    name: &str,
    args: &[Value],
    pos: Pos,
) -> Eval<Value> {
    let f = callback(interp, args, name, pos)?.clone();
    let entries = map.data.borrow().entries.clone();
    if name == "sort" {
        let sorted = sort_by(interp, entries, &f, |(k, _)| k.clone(), pos)?;
        let fresh = MapObj::default();
        for (k, v) in sorted {
            fresh.insert(k, v);
        }
        std::mem::swap(&mut *map.data.borrow_mut(), &mut *fresh.data.borrow_mut());
        return Ok(Value::Null);
    }
    let out = walk(interp, &entries, &f, name, args, pos)?;
    Ok(match out {
        Walked::Items(items) if name == "map" => map_from_pairs(items),
        Walked::Items(items) if name == "filter" => shaped_map(map, items, map.shape.mutable.get()),
        Walked::Items(_) => Value::Null,
        Walked::Value(v) => v,
    })
}

/// `map` on a map returns `obj{ key, value }`s: they make the new map.
fn map_from_pairs(items: Vec<(Value, Value)>) -> Value {
    Value::map(
        items
            .into_iter()
            .map(|(_, pair)| {
                let key = pair.field("key").unwrap_or_default();
                let value = pair.field("value").unwrap_or_default();
                (key, value)
            })
            .collect(),
    )
}

enum Walked {
    Items(Vec<(Value, Value)>),
    Value(Value),
}

fn walk(
    interp: &mut impl Run,
    entries: &[(Value, Value)],
    f: &Value,
    name: &str,
    args: &[Value],
    pos: Pos,
) -> Eval<Walked> {
    if name == "reduce" {
        let mut acc = args.get(1).cloned().unwrap_or_default();
        for (k, v) in entries {
            acc = interp.call_value(f, positional(&[k.clone(), v.clone(), acc]), pos)?;
        }
        return Ok(Walked::Value(acc));
    }
    let mut out = Vec::new();
    for (k, v) in entries {
        let result = interp.call_value(f, positional(&[k.clone(), v.clone()]), pos)?;
        match name {
            "map" => out.push((k.clone(), result)),
            "filter" if result.as_bool() == Some(true) => out.push((k.clone(), v.clone())),
            _ => {}
        }
    }
    Ok(Walked::Items(out))
}

/// A stable sort with a Buzz `less than` callback; the first error wins.
fn sort_by(
    interp: &mut impl Run,
    mut entries: Vec<(Value, Value)>,
    f: &Value,
    key: impl Fn(&(Value, Value)) -> Value,
    pos: Pos,
) -> Eval<Vec<(Value, Value)>> {
    let failure = RefCell::new(None);
    let mut less = |a: &Value, b: &Value| -> bool {
        if failure.borrow().is_some() {
            return false;
        }
        match interp.call_value(f, positional(&[a.clone(), b.clone()]), pos) {
            Ok(v) => v.as_bool() == Some(true),
            Err(e) => {
                *failure.borrow_mut() = Some(e);
                false
            }
        }
    };
    entries.sort_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        if less(&ka, &kb) {
            Ordering::Less
        } else if less(&kb, &ka) {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    });
    match failure.into_inner() {
        Some(e) => Err(e),
        None => Ok(entries),
    }
}

/// `matchAgainst`, `matchAllAgainst`, `replace`, `replaceAll`.
pub(crate) fn pattern_method(p: &Pattern, name: &str, args: &[Value]) -> Result<Value, String> {
    let subject = args
        .first()
        .and_then(Value::as_str)
        .ok_or_else(|| format!("`{name}` needs a str argument"))?;
    let bytes = subject.as_bytes();
    // Upstream returns early on an empty subject, before the pattern is
    // tried: no match (`null`), and the subject itself from a replace, even
    // for a pattern that matches the empty string (`$"x*"`).
    if bytes.is_empty() && super::method_names::PATTERN.contains(&name) {
        return Ok(match name {
            "replace" | "replaceAll" => Value::str(""),
            _ => Value::Null,
        });
    }
    match name {
        "matchAgainst" => Ok(match captures(p, bytes, 0)? {
            Some((list, _)) => list,
            None => Value::Null,
        }),
        "matchAllAgainst" => {
            let mut all = Vec::new();
            let mut at = 0;
            while let Some((list, end)) = captures(p, bytes, at)? {
                all.push(list);
                if all.len() > MAX_LIST_LEN || end >= bytes.len() {
                    break;
                }
                at = end.max(at + 1);
            }
            Ok(if all.is_empty() {
                Value::Null
            } else {
                Value::list(all)
            })
        }
        "replace" | "replaceAll" => {
            let with = args.get(1).and_then(Value::as_str).unwrap_or("");
            replace(p, subject, with, name == "replaceAll")
        }
        _ => Err(super::method_names::no_such_method(
            super::method_names::Receiver::Pattern,
            name,
        )),
    }
}

/// The captures of the first match at or after `at`, as upstream's
/// `obj{ start, end, capture }` list, and where the match ended.
fn captures(p: &Pattern, bytes: &[u8], at: usize) -> Result<Option<(Value, usize)>, String> {
    let found = p.regex.captures(&bytes[at..]).map_err(|e| e.to_string())?;
    let Some(caps) = found else {
        return Ok(None);
    };
    let mut list = Vec::new();
    let mut end = at;
    for i in 0..caps.len() {
        let Some(m) = caps.get(i) else { continue };
        if i == 0 {
            end = at + m.end();
        }
        let text = String::from_utf8_lossy(m.as_bytes()).into_owned();
        list.push(Value::record(
            "obj",
            vec![
                ("start", Value::Int((at + m.start()) as i64)),
                ("end", Value::Int((at + m.end()) as i64)),
                ("capture", Value::str(text)),
            ],
        ));
    }
    Ok(Some((Value::list(list), end)))
}

fn replace(p: &Pattern, subject: &str, with: &str, all: bool) -> Result<Value, String> {
    let bytes = subject.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut last = 0;
    for m in p.regex.find_iter(bytes) {
        let m = m.map_err(|e| e.to_string())?;
        out.extend_from_slice(&bytes[last..m.start()]);
        out.extend_from_slice(with.as_bytes());
        last = m.end();
        if !all {
            break;
        }
    }
    out.extend_from_slice(&bytes[last..]);
    Ok(Value::str(String::from_utf8_lossy(&out).into_owned()))
}

/// A new list of `items` typed like `like`, with the given mutability.
pub(crate) fn shaped_list(like: &ListObj, items: Vec<Value>, mutable: bool) -> Value {
    let mut list = ListObj::new(items);
    list.shape = Shape::copy_of(&like.shape, mutable);
    Value::List(Rc::new(list))
}

/// A new map of `entries` typed like `like`, with the given mutability.
pub(crate) fn shaped_map(like: &MapObj, entries: Vec<(Value, Value)>, mutable: bool) -> Value {
    let map = MapObj {
        data: Default::default(),
        shape: Shape::copy_of(&like.shape, mutable),
    };
    for (k, v) in entries {
        map.insert(k, v);
    }
    Value::Map(Rc::new(map))
}
