//! Evaluation of the Buzz 0.6 constructs that go beyond plain statements and
//! operators: anonymous objects and tuples, inferred enum cases, casts,
//! `typeof`, block expressions, `match`, pattern literals and `if` bindings.
//!
//! Types are checked loosely at run time, so the expected type of a
//! declaration, parameter or field is what turns `.case` into an enum case
//! and `.{ … }` into an instance of a named object.

use super::interp::{type_matches, Eval, Flow, Interpreter, Thrown};
use super::syntax::ast::{Expr, IfBinding, MatchArm, Mutability, Stmt, Type};
use super::syntax::lexer::Pos;
use super::value::{Class, Instance, ListObj, Pattern, Scope, Value};
use std::cell::RefCell;
use std::rc::Rc;

/// Longest pattern source compiled.
const MAX_PATTERN_LEN: usize = 64 << 10;

impl Interpreter {
    pub(super) fn anon_object(
        &mut self,
        fields: &[(Rc<str>, Expr)],
        scope: &Rc<Scope>,
    ) -> Eval<Value> {
        let mut values = Vec::with_capacity(fields.len());
        for (name, e) in fields {
            values.push((name.clone(), self.eval(e, scope)?));
        }
        Ok(anon_object_of(values))
    }

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
                match e.cases.iter().position(|(n, _)| n == case) {
                    Some(i) => Ok(Value::EnumCase(e, i)),
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
    fn promote(&mut self, anon: &Instance, class: Rc<Class>, pos: Pos) -> Eval<Value> {
        let Some(decl) = class.decl.clone() else {
            return Ok(Value::Object(Rc::new(Instance {
                class,
                fields: RefCell::new(anon.fields.borrow().clone()),
            })));
        };
        let scope = class.scope.clone().unwrap_or_else(|| Scope::new(None));
        let mut fields = Vec::new();
        for f in decl.fields.iter().filter(|f| !f.is_static) {
            let value = match anon.get(&f.name) {
                Some(v) => v,
                None => self.field_default(f, &scope, &decl.name, pos)?,
            };
            let value = self.conform(&f.ty, value, &format!("field `{}`", f.name), pos)?;
            fields.push((f.name.clone(), value));
        }
        Ok(Value::Object(Rc::new(Instance {
            class,
            fields: RefCell::new(fields),
        })))
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

    pub(super) fn cast(
        &mut self,
        value: &Expr,
        ty: &Type,
        optional: bool,
        scope: &Rc<Scope>,
        pos: Pos,
    ) -> Eval<Value> {
        let v = self.eval(value, scope)?;
        self.cast_value(v, ty, optional, scope, pos)
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
            super::syntax::ast::type_label(&self.bound_type(ty, scope))
        );
        // Said as MGS1023 if nothing catches it; a `catch` sees the text.
        let diagnostic = crate::diag::Diagnostic::error(format!("uncaught error: {message}"))
            .with_code(crate::diag::Code::Mgs1023)
            .with_label("thrown here");
        Err(Flow::Throw(Box::new(Thrown {
            value: Value::str(message),
            pos,
            file: self.file.clone(),
            diagnostic: Some(Box::new(diagnostic)),
            refused: None,
        })))
    }

    /// `from { … }`: the value given by `out`, or null.
    pub(super) fn block_value(&mut self, body: &[Stmt], scope: &Rc<Scope>) -> Eval<Value> {
        match self.exec_block(body, scope) {
            Ok(()) => Ok(Value::Null),
            Err(Flow::Out(v)) => Ok(v),
            Err(other) => Err(other),
        }
    }

    pub(super) fn match_value(
        &mut self,
        subject: &Expr,
        arms: &[MatchArm],
        otherwise: Option<&Expr>,
        scope: &Rc<Scope>,
        pos: Pos,
    ) -> Eval<Value> {
        let value = self.eval(subject, scope)?;
        for arm in arms {
            for condition in &arm.conditions {
                let c = self.eval(condition, scope)?;
                if self.matches(&value, &c) {
                    return self.eval(&arm.body, scope);
                }
            }
        }
        match otherwise {
            Some(e) => self.eval(e, scope),
            None => Err(self.fail(pos, format!("no `match` arm matches {value}"))),
        }
    }

    /// Whether `value` meets the `match` condition `c`: ranges hold
    /// numbers, patterns match strings, types hold values, else equality.
    pub(super) fn matches(&self, value: &Value, c: &Value) -> bool {
        match (value, c) {
            (Value::Int(_) | Value::Double(_), Value::Range(low, high)) => {
                let x = value.as_double().unwrap_or_default();
                x >= *low as f64 && x < *high as f64
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

    /// `if (x) -> y { … }` runs when `x` is not null, and `if (x as y: T)`
    /// when `x` is a `T`; either binds `y` in the `then` block.
    pub(super) fn if_binding(
        &mut self,
        cond: &Expr,
        binding: &IfBinding,
        then: &[Stmt],
        otherwise: Option<&Stmt>,
        scope: &Rc<Scope>,
    ) -> Eval<()> {
        let value = self.eval(cond, scope)?;
        let taken = match &binding.cast {
            None => !value.is_null(),
            Some(ty) => self.holds(ty, &value, scope),
        };
        if taken {
            let inner = self.block_scope(scope);
            let name = &binding.name;
            super::interp::bind(&inner, &binding.slot, name, value, Mutability::Final);
            let result = self.exec_all(then, &inner);
            self.end_block_scope(inner);
            return result;
        }
        match otherwise {
            Some(other) => self.exec(other, scope),
            None => Ok(()),
        }
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

/// `typeof` of a list or map: its recorded type, `mut` when it is.
fn shaped(shape: &super::value::Shape, unknown: Type) -> Type {
    let ty = shape.ty.borrow().clone().unwrap_or(unknown);
    if shape.mutable.get() {
        return Type::Mut(Box::new(ty));
    }
    ty
}

/// The type of a value, as `typeof` gives it.
pub(super) fn type_of(v: &Value) -> Type {
    let name = match v {
        Value::Null => return Type::Void,
        Value::List(l) => return shaped(&l.shape, Type::List(Box::new(Type::Any))),
        Value::Map(m) => {
            let any = Type::Map(Box::new(Type::Any), Box::new(Type::Any));
            return shaped(&m.shape, any);
        }
        Value::Function(_) | Value::Native(_) => return Type::Function,
        Value::Range(..) => "rg".to_string(),
        Value::Pattern(_) => "pat".to_string(),
        Value::Class(_) | Value::Enum(_) | Value::Type(_) => "type".to_string(),
        other => other.type_name(),
    };
    Type::Named(Rc::from(name))
}

/// How an uncaught error is shown: the `message` of an object the spell
/// threw (as upstream prints `throw .{ message = "…" }`), else the value
/// as `toString` shows it (native error records, such as a sandbox
/// denial, keep their whole text, code included).
pub(super) fn thrown_text(value: &Value) -> String {
    if let Value::Object(instance) = value {
        let spells_own = instance.class.decl.is_some() || &*instance.class.name == "obj";
        if let (true, Some(Value::Str(message))) = (spells_own, instance.get("message")) {
            return message.to_string();
        }
    }
    value.to_string()
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

/// An anonymous object `.{ … }` of fields already evaluated.
pub(super) fn anon_object_of(values: Vec<(Rc<str>, Value)>) -> Value {
    Value::Object(Rc::new(Instance {
        class: Rc::new(Class::native("obj")),
        fields: RefCell::new(values),
    }))
}
