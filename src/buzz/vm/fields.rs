//! Fields, methods and items of values: reading and setting an object's
//! fields and static fields, a method taken as a value, a module's
//! members, an enum's cases, list and map items (an index out of range
//! throws upstream's catchable error), field defaults, and the items a
//! `foreach` takes.

use super::{Eval, Flow, Interpreter, Stop, Thrown};
use crate::buzz::lib::methods;
use crate::buzz::syntax::ast::*;
use crate::buzz::syntax::lexer::Pos;
use crate::buzz::vm::value::*;
use std::rc::Rc;

/// The name `this`, the lexer's own (so found by pointer), not a new
/// string at every method call.
pub(super) fn this_name() -> Rc<str> {
    thread_local! {
        static THIS: Rc<str> = crate::buzz::syntax::lexer::intern("this");
    }
    THIS.with(Rc::clone)
}

/// The method `name` of an instance, with the scope it closes over: what
/// `receiver.name(…)` calls, when `name` is not a field holding a function.
///
/// `site` holds the class id and method index this site found last: a
/// declared class's instances all have the fields of its declaration, so
/// what `name` means is the same for each of them.
#[inline]
pub(in crate::buzz) fn method_of(
    receiver: &Value,
    name: &str,
    site: &MemberCache,
) -> Option<(Rc<FunDecl>, Rc<Scope>)> {
    let Value::Object(obj) = receiver else {
        return None;
    };
    let class = &obj.class;
    let decl = class.decl.as_ref()?;
    if let Some(at) = site.member(class.id) {
        return Some((decl.methods.get(at)?.clone(), class.scope.clone()?));
    }
    if obj.has_field(name) {
        return None;
    }
    let at = decl
        .methods
        .iter()
        .position(|m| &*m.name == name && !m.is_static)?;
    site.set_member(class.id, at);
    Some((decl.methods.get(at)?.clone(), class.scope.clone()?))
}

impl Interpreter {
    pub(crate) fn field(&self, v: &Value, name: &str, pos: Pos) -> Eval<Value> {
        match v {
            Value::Object(obj) => self.object_field(obj, v, name, pos),
            Value::Module(m) => m.functions.get(name).cloned().ok_or_else(|| {
                self.fail(pos, format!("module `{}` has no function `{name}`", m.name))
            }),
            Value::Class(class) => {
                match class.statics.borrow().iter().find(|(n, _)| &**n == name) {
                    Some((_, v)) => Ok(v.clone()),
                    None => self.static_method(class, name, pos),
                }
            }
            Value::Enum(e) => match e.cases.iter().find(|c| &*c.name == name) {
                Some(c) => Ok(Value::case(c)),
                None => Err(self.fail(pos, format!("enum `{}` has no case `{name}`", e.name))),
            },
            Value::EnumCase(c) if name == "value" => Ok(c.value.clone()),
            Value::EnumCase(c) if name == "name" => Ok(Value::str(&*c.name)),
            other => Err(self.fail(pos, format!("{} has no field `{name}`", other.type_name()))),
        }
    }

    fn object_field(&self, obj: &Obj, this: &Value, name: &str, pos: Pos) -> Eval<Value> {
        if let Some(v) = obj.get(name) {
            return Ok(v);
        }
        let method = obj
            .class
            .decl
            .as_ref()
            .and_then(|d| d.methods.iter().find(|m| &*m.name == name && !m.is_static));
        match (method, &obj.class.scope) {
            (Some(decl), Some(class_scope)) => {
                let scope = Scope::new(Some(class_scope.clone()));
                scope.define(this_name(), this.clone(), Mutability::Final);
                Ok(Value::Function(Rc::new(Closure {
                    decl: decl.clone(),
                    scope,
                    type_args: Vec::new(),
                })))
            }
            _ => Err(self.fail(
                pos,
                format!("`{}` has no field or method `{name}`", obj.class.name),
            )),
        }
    }

    fn static_method(&self, class: &Class, name: &str, pos: Pos) -> Eval<Value> {
        let method = class
            .decl
            .as_ref()
            .and_then(|d| d.methods.iter().find(|m| &*m.name == name && m.is_static));
        match (method, &class.scope) {
            (Some(decl), Some(scope)) => Ok(Value::Function(Rc::new(Closure {
                decl: decl.clone(),
                scope: scope.clone(),
                type_args: Vec::new(),
            }))),
            _ => Err(self.fail(
                pos,
                format!("object `{}` has no static method `{name}`", class.name),
            )),
        }
    }

    pub(in crate::buzz) fn set_field(
        &self,
        obj: &Value,
        name: &str,
        value: Value,
        pos: Pos,
    ) -> Eval<()> {
        match obj {
            Value::Class(c) => {
                let mut statics = c.statics.borrow_mut();
                match statics.iter_mut().find(|(n, _)| &**n == name) {
                    Some(slot) => {
                        slot.1 = value;
                        Ok(())
                    }
                    None => Err(self.fail(
                        pos,
                        format!("object `{}` has no static field `{name}`", c.name),
                    )),
                }
            }
            Value::Object(o) if o.set(name, value) => Ok(()),
            Value::Object(o) => {
                Err(self.fail(pos, format!("`{}` has no field `{name}`", o.class.name)))
            }
            other => Err(self.fail(
                pos,
                format!("cannot set field `{name}` on {}", other.type_name()),
            )),
        }
    }

    fn set_index(&self, obj: &Value, index: Value, value: Value, pos: Pos) -> Eval<()> {
        match (obj, &index) {
            (Value::List(list), Value::Int(i)) => {
                let mut items = list.items.borrow_mut();
                let len = items.len();
                match usize::try_from(*i).ok().and_then(|i| items.get_mut(i)) {
                    Some(slot) => {
                        *slot = value;
                        Ok(())
                    }
                    None => Err(self.out_of_bound(
                        pos,
                        obj,
                        format!("index {i} out of range for a list of length {len}"),
                    )),
                }
            }
            (Value::Map(map), _) => {
                map.insert(index, value);
                Ok(())
            }
            _ => Err(self.fail(
                pos,
                format!(
                    "cannot assign to a subscript of {} with {}",
                    obj.type_name(),
                    index.type_name()
                ),
            )),
        }
    }

    pub(in crate::buzz) fn index(
        &self,
        v: &Value,
        i: &Value,
        checked: bool,
        pos: Pos,
    ) -> Eval<Value> {
        match methods::index(v, i) {
            Ok(Some(found)) => Ok(found),
            Ok(None) if checked => Ok(Value::Null),
            Ok(None) => Err(self.out_of_bound(pos, v, methods::out_of_range(v, i))),
            Err(message) => Err(self.fail(pos, message)),
        }
    }

    /// An index out of range throws, as upstream's does, a catchable
    /// `"Out of bound list access."` (or `str`); uncaught, it still shows
    /// the located MGS1020 error that names the index and the length.
    fn out_of_bound(&self, pos: Pos, subject: &Value, detail: String) -> Flow {
        let what = match subject {
            Value::Str(_) | Value::Bytes(_) => "str",
            _ => "list",
        };
        let diagnostic = self.runtime(pos, detail).to_diagnostic();
        Stop::Throw(Box::new(Thrown {
            value: Value::str(format!("Out of bound {what} access.")),
            pos,
            file: self.file.clone(),
            diagnostic: Some(Box::new(diagnostic)),
            refused: None,
        }))
        .into()
    }

    pub(in crate::buzz) fn assign_index_slow(
        &self,
        obj: &Value,
        i: &Value,
        op: Option<BinOp>,
        new: Value,
        (at, pos): (Pos, Pos),
    ) -> Eval<Value> {
        let new = match op {
            Some(op) => self.binary(op, self.index(obj, i, false, at)?, new, pos)?,
            None => new,
        };
        self.set_index(obj, i.clone(), new.clone(), at)?;
        Ok(new)
    }

    pub(in crate::buzz) fn field_default(
        &mut self,
        f: &FieldDecl,
        scope: &Rc<Scope>,
        object: &str,
        pos: Pos,
    ) -> Eval<Value> {
        match (&f.default, &f.ty) {
            (Some(e), _) => self.field_default_value(f, e, scope),
            (None, Type::Optional(_)) => Ok(Value::Null),
            (None, _) => Err(self.fail(
                pos,
                format!("missing field `{}` in `{object}{{…}}`", f.name),
            )),
        }
    }

    /// The `index`-th (key, value) of a `foreach` subject, read afresh each
    /// step so the body may change the collection.
    /// The `index`th key and item a `foreach` over `subject` takes: a
    /// fiber resumed for its next value, anything else read by position.
    pub(in crate::buzz) fn next_item(
        &mut self,
        subject: &Value,
        index: usize,
        pos: Pos,
    ) -> Eval<Option<(Value, Value)>> {
        match subject {
            Value::Fiber(f) => Ok(self
                .fiber_foreach_item(f, pos)?
                .map(|v| (Value::Int(index as i64), v))),
            _ => self.nth_item(subject, index, pos),
        }
    }

    pub(in crate::buzz) fn nth_item(
        &self,
        subject: &Value,
        index: usize,
        pos: Pos,
    ) -> Eval<Option<(Value, Value)>> {
        let i = index as i64;
        Ok(match subject {
            Value::List(list) => list
                .items
                .borrow()
                .get(index)
                .map(|v| (Value::Int(i), v.clone())),
            Value::Map(map) => map.data.borrow().entries.get(index).cloned(),
            // By byte, as upstream: a character of several bytes comes as
            // several one-byte strings.
            Value::Str(_) | Value::Bytes(_) => subject
                .str_bytes()
                .and_then(|b| b.get(index))
                .map(|b| (Value::Int(i), Value::from_bytes(vec![*b]))),
            Value::Range(r) => {
                methods::range_nth(r.low, r.high, i).map(|n| (Value::Int(i), Value::Int(n)))
            }
            Value::Enum(e) => e.cases.get(index).map(|c| (Value::Int(i), Value::case(c))),
            other => {
                return Err(self.fail(pos, format!("cannot iterate over {}", other.type_name())))
            }
        })
    }
}
