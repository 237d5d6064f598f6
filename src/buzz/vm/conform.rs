//! Conformance to declared types, checked loosely at run time: a value
//! given for a parameter, a field, a typed declaration or a list item is
//! widened (`int` to `double`), inferred (`.case`, `.{ … }`) and tested
//! against the type's outer shape; `is` and `catch (e: T)` test the same
//! way.

use super::{Eval, Interpreter};
use crate::buzz::syntax::ast::*;
use crate::buzz::syntax::lexer::Pos;
use crate::buzz::vm::value::*;
use std::rc::Rc;

/// Whether `value` is already what `ty` asks for with nothing to infer,
/// widen or record: `null` for an optional, an instance of the named
/// object type (its name found by pointer, as the lexer interns both).
#[inline]
pub(in crate::buzz) fn plainly_conforms(ty: &Type, value: &Value) -> bool {
    let mut ty = ty;
    let mut optional = false;
    let named = loop {
        match ty {
            Type::Named(n) => break n,
            Type::Optional(inner) => {
                optional = true;
                ty = inner;
            }
            Type::Mut(inner) => ty = inner,
            Type::Any => return true,
            _ => return optional && value.is_null(),
        }
    };
    match value {
        Value::Null => optional,
        Value::Int(_) => &**named == "int",
        Value::Double(_) => &**named == "double",
        Value::Bool(_) => &**named == "bool",
        Value::Str(_) | Value::Bytes(_) => &**named == "str",
        Value::Object(o) => {
            o.class.decl.is_some()
                && o.class.name.as_ptr() == named.as_ptr()
                && o.class.name.len() == named.len()
        }
        _ => false,
    }
}

fn is_double(ty: &Type) -> bool {
    match ty {
        Type::Named(n) => &**n == "double",
        Type::Optional(inner) => is_double(inner),
        _ => false,
    }
}

/// Loose type test used by `is`, `catch (e: T)` and declarations: the outer
/// shape is checked, element types are not.
pub(crate) fn type_matches(ty: &Type, v: &Value) -> bool {
    match ty {
        Type::Any => true,
        Type::Void => v.is_null(),
        Type::Optional(inner) => v.is_null() || type_matches(inner, v),
        Type::List(_) => matches!(v, Value::List(_)),
        Type::Map(..) => matches!(v, Value::Map(_)),
        Type::Function => matches!(v, Value::Function(_) | Value::Native(_)),
        Type::AnonObject => matches!(v, Value::Object(_)),
        Type::Mut(inner) => type_matches(inner, v),
        Type::Named(name) => named_matches(name, v),
    }
}

/// The shape of a list or map value.
pub(in crate::buzz) fn shape_of(v: &Value) -> Option<&Shape> {
    match v {
        Value::List(l) => Some(&l.shape),
        Value::Map(m) => Some(&m.shape),
        _ => None,
    }
}

/// A declaration's type becomes a container's `typeof` when the container
/// did not know its own (an empty literal) or knew only `any`.
fn record_shape(ty: &Type, v: &Value) {
    let Some(shape) = shape_of(v) else { return };
    let declared = match ty {
        Type::Optional(inner) => inner,
        other => other,
    };
    let declared = match declared {
        Type::Mut(inner) => inner,
        other => other,
    };
    if !matches!(declared, Type::List(_) | Type::Map(..)) || mentions_any_or_unknown(declared) {
        return;
    }
    let mut recorded = shape.ty.borrow_mut();
    if recorded.as_ref().is_none_or(mentions_any_or_unknown) {
        *recorded = Some(declared.clone());
    }
}

fn mentions_any_or_unknown(t: &Type) -> bool {
    match t {
        Type::Any => true,
        Type::List(e) | Type::Mut(e) | Type::Optional(e) => mentions_any_or_unknown(e),
        Type::Map(k, v) => mentions_any_or_unknown(k) || mentions_any_or_unknown(v),
        _ => false,
    }
}

/// The one scalar type all `items` share, if any.
pub(in crate::buzz) fn common_type<'a>(mut items: impl Iterator<Item = &'a Value>) -> Option<Type> {
    let first = scalar_type(items.next()?)?;
    items
        .all(|v| scalar_type(v) == Some(first))
        .then(|| Type::Named(Rc::from(first)))
}

fn scalar_type(v: &Value) -> Option<&'static str> {
    Some(match v {
        Value::Int(_) => "int",
        Value::Double(_) => "double",
        Value::Str(_) | Value::Bytes(_) => "str",
        Value::Bool(_) => "bool",
        _ => return None,
    })
}

fn named_matches(name: &str, v: &Value) -> bool {
    match name {
        "int" => matches!(v, Value::Int(_)),
        "double" => matches!(v, Value::Double(_)),
        "str" => matches!(v, Value::Str(_) | Value::Bytes(_)),
        "bool" => matches!(v, Value::Bool(_)),
        "rg" => matches!(v, Value::Range(..)),
        "obj" => matches!(v, Value::Object(_)),
        "type" => matches!(v, Value::Class(_) | Value::Enum(_) | Value::Type(_)),
        "pat" => matches!(v, Value::Pattern(_)),
        "function" => matches!(v, Value::Function(_) | Value::Native(_)),
        "fib" => matches!(v, Value::Fiber(_)),
        "ud" => matches!(v, Value::Ud(_)),
        _ => match v {
            Value::Object(o) => &*o.class.name == name,
            Value::EnumCase(c) => &*c.of == name,
            _ => false,
        },
    }
}

impl Interpreter {
    /// Checks `value` against a declared type (loosely), widening an `int`
    /// given for a `double`.
    pub(in crate::buzz) fn conform(
        &mut self,
        ty: &Type,
        value: Value,
        what: &str,
        pos: Pos,
    ) -> Eval<Value> {
        self.conform_with(ty, value, || what.to_string(), pos)
    }

    /// [`Interpreter::conform`], naming what is checked only when it fails
    /// (a parameter's name is not formatted at every call).
    pub(in crate::buzz) fn conform_with(
        &mut self,
        ty: &Type,
        value: Value,
        what: impl FnOnce() -> String,
        pos: Pos,
    ) -> Eval<Value> {
        if plainly_conforms(ty, &value) {
            return Ok(value);
        }
        if let (Value::Int(i), true) = (&value, is_double(ty)) {
            return Ok(Value::double(*i as f64));
        }
        let value = self.infer(ty, value, pos)?;
        if type_matches(ty, &value) || self.loosely_matches(ty, &value) {
            record_shape(ty, &value);
            return Ok(value);
        }
        Err(self.fail(
            pos,
            format!(
                "{} expects {}, got {}",
                what(),
                type_label(ty),
                value.type_name()
            ),
        ))
    }

    pub(in crate::buzz) fn conform_param(
        &mut self,
        decl: &FunDecl,
        param: &Param,
        value: Value,
        pos: Pos,
    ) -> Eval<Value> {
        let what = || format!("parameter `{}` of `{}`", param.name, decl.name);
        self.conform_with(&param.ty, value, what, pos)
    }
}
