//! Evaluation of the Buzz 0.6 constructs that go beyond plain statements and
//! operators: anonymous objects and tuples, inferred enum cases, casts,
//! block expressions, `match`, pattern literals and `if` bindings. What a
//! value alone decides (its `typeof`, an uncaught error's text) is the
//! value layer's (`value.rs`); this file only adds the interpreter's
//! methods for those constructs.
//!
//! Types are checked loosely at run time, so the expected type of a
//! declaration, parameter or field is what turns `.case` into an enum case
//! and `.{ … }` into an instance of a named object.

use super::conform::type_matches;
use super::value::{Class, ListObj, Obj, Pattern, Scope, Value};
use super::{Eval, Interpreter, Stop, Thrown};
use crate::buzz::syntax::ast::Type;
use crate::buzz::syntax::lexer::Pos;
use std::rc::Rc;

/// Longest pattern source compiled.
const MAX_PATTERN_LEN: usize = 64 << 10;

impl Interpreter {
    /// Turns `.case` and `.{ … }` into what the declared type `ty` names.
    pub(super) fn infer(&mut self, ty: &Type, value: Value, pos: Pos) -> Eval<Value> {
        // Only `.case` and `.{ … }` change; everything else passes untouched
        // (this runs for every parameter of every call).
        let inferable = match &value {
            Value::InferredCase(_) => true,
            Value::Object(o) => o.class.is_anonymous(),
            // A list not yet given a type (a literal): its items are
            // inferred once; the type recorded then skips this after.
            Value::List(l) => l
                .shape
                .ty
                .borrow()
                .as_ref()
                .is_none_or(|t| matches!(t, Type::List(item) if matches!(**item, Type::Any))),
            _ => false,
        };
        if !inferable {
            return Ok(value);
        }
        if let Value::List(list) = &value {
            if let Some(item_ty) = named_items(ty) {
                self.infer_items(list, item_ty, pos)?;
            }
            return Ok(value);
        }
        let name = match ty {
            Type::Named(name) => name,
            Type::Optional(inner) | Type::Mut(inner) => return self.infer(inner, value, pos),
            _ => return Ok(value),
        };
        match (&value, self.types.get(name).cloned()) {
            (Value::InferredCase(case), Some(Value::Enum(e))) => {
                match e.cases.iter().find(|c| *c.name == **case) {
                    Some(c) => Ok(Value::case(c)),
                    None => Err(self.fail(pos, format!("enum `{}` has no case `{case}`", e.name))),
                }
            }
            (Value::Object(o), Some(Value::Class(class))) if o.class.is_anonymous() => {
                self.promote(o, class, pos)
            }
            _ => Ok(value),
        }
    }

    /// `.case` and `.{ … }` items of a list given where `[item_ty]` is
    /// expected (`final tasks: [Task] = [.{ … }]`), made what it names.
    fn infer_items(&mut self, list: &ListObj, item_ty: &Type, pos: Pos) -> Eval<()> {
        let len = list.items.borrow().len();
        for i in 0..len {
            let Some(item) = list.items.borrow().get(i).cloned() else {
                break;
            };
            let anonymous = match &item {
                Value::InferredCase(_) => true,
                Value::Object(o) => o.class.is_anonymous(),
                _ => false,
            };
            if anonymous {
                let made = self.infer(item_ty, item, pos)?;
                if let Some(slot) = list.items.borrow_mut().get_mut(i) {
                    *slot = made;
                }
            }
        }
        Ok(())
    }

    /// An anonymous object given where the object `class` is expected
    /// becomes an instance of it; absent fields take their defaults.
    fn promote(&mut self, anon: &Obj, class: Rc<Class>, pos: Pos) -> Eval<Value> {
        let Some(decl) = class.decl.clone() else {
            // A type without a declaration holds the fields it is given:
            // its name, with the anonymous object's fields.
            let names = anon.class.fields.to_vec();
            let class = Rc::new(Class::native(&class.name, names));
            let values = anon.values().to_vec();
            return Ok(Value::Object(Obj::new(class, values)));
        };
        let scope = class.scope.clone().unwrap_or_else(|| Scope::new(None));
        let mut fields = Vec::new();
        for f in decl.fields.iter().filter(|f| !f.is_static) {
            let value = match anon.get(&f.name) {
                Some(v) => v,
                None => self.field_default(f, &scope, &decl.name, pos)?,
            };
            let value = self.conform(&f.ty, value, &format!("field `{}`", f.name), pos)?;
            fields.push(value);
        }
        Ok(Value::Object(Obj::new(class, fields)))
    }

    /// Types this interpreter cannot check: generic parameters, protocols
    /// and names it does not know pass; known objects and enums do not.
    pub(super) fn loosely_matches(&self, ty: &Type, value: &Value) -> bool {
        match ty {
            Type::Optional(inner) => value.is_null() || self.loosely_matches(inner, value),
            Type::Mut(inner) => self.loosely_matches(inner, value),
            Type::Named(name) => match self.types.get(name) {
                None => !is_builtin_type(name),
                Some(Value::Type(_)) => matches!(value, Value::Object(_)),
                Some(_) => false,
            },
            _ => false,
        }
    }

    /// `v as ty` (`as?` when `optional`), `v` already evaluated.
    pub(super) fn cast_value(
        &mut self,
        v: Value,
        ty: &Type,
        optional: bool,
        scope: &Rc<Scope>,
        pos: Pos,
    ) -> Eval<Value> {
        let v = self.infer(ty, v, pos)?;
        if self.holds(ty, &v, scope) {
            return Ok(v);
        }
        if optional {
            return Ok(Value::Null);
        }
        let message = format!(
            "cannot cast {} to {}",
            v.type_name(),
            crate::buzz::syntax::ast::type_label(&self.bound_type(ty, scope))
        );
        // Said as MGS1023 if nothing catches it; a `catch` sees the text.
        let diagnostic = crate::diag::Diagnostic::error(format!("uncaught error: {message}"))
            .with_code(crate::diag::Code::Mgs1023)
            .with_label("thrown here");
        Err(Stop::Throw(Box::new(Thrown {
            value: Value::str(message),
            pos,
            file: self.file.clone(),
            diagnostic: Some(Box::new(diagnostic)),
            refused: None,
        }))
        .into())
    }

    /// Whether `value` meets the `match` condition `c`: ranges hold
    /// numbers, patterns match strings, types hold values, else equality.
    pub(super) fn matches(&self, value: &Value, c: &Value) -> bool {
        match (value, c) {
            (Value::Int(_) | Value::Double(_), Value::Range(r)) => {
                let x = value.as_double().unwrap_or_default();
                x >= r.low as f64 && x < r.high as f64
            }
            (Value::Str(s), Value::Pattern(p)) | (Value::Pattern(p), Value::Str(s)) => {
                p.regex.is_match(s.as_bytes()).unwrap_or(false)
            }
            (Value::Type(_), Value::Type(_)) => value.equals(c, 0),
            (Value::Type(t), _) => type_matches(t, c),
            (_, Value::Type(t)) => type_matches(t, value),
            _ => value.equals(c, 0),
        }
    }

    pub(super) fn pattern(&self, source: &Rc<str>, pos: Pos) -> Eval<Value> {
        if source.len() > MAX_PATTERN_LEN {
            return Err(self.fail(pos, "pattern too long"));
        }
        let regex = pcre2::bytes::RegexBuilder::new()
            .utf(true)
            .build(source)
            .map_err(|e| self.fail(pos, format!("invalid pattern `{source}`: {e}")))?;
        Ok(Value::Pattern(Rc::new(Pattern {
            source: source.clone(),
            regex,
        })))
    }
}

pub(super) fn is_builtin_type(name: &str) -> bool {
    matches!(
        name,
        "int"
            | "double"
            | "str"
            | "bool"
            | "rg"
            | "obj"
            | "type"
            | "pat"
            | "function"
            | "ud"
            | "void"
    )
}

/// The item type of `[Name]` (through `?` and `mut`), when it names one.
fn named_items(ty: &Type) -> Option<&Type> {
    match ty {
        Type::Optional(inner) | Type::Mut(inner) => named_items(inner),
        Type::List(item) => match &**item {
            Type::Mut(inner) if matches!(**inner, Type::Named(_)) => Some(inner),
            Type::Named(_) => Some(item),
            _ => None,
        },
        _ => None,
    }
}
