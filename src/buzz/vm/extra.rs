//! Running the rarer compiled constructs: `try`, `from` blocks, `match`,
//! casts, fibers, generic instances and the literals that build a value
//! at each read. Each evaluates its parts on the flat frame, then hands
//! the values to the interpreter's helper for that construct (`lang.rs`,
//! `fiber.rs`, `generics.rs`).

use crate::buzz::lower::*;
use crate::buzz::syntax::ast::{Resolved, Type};
use crate::buzz::syntax::lexer::Pos;
use crate::buzz::vm::value::Value;

use crate::buzz::vm::fiber::Deferred;
use crate::buzz::vm::value::{anon_object_of, Closure, ListObj, Scope};
use crate::buzz::vm::{Eval, Interpreter};
use std::rc::Rc;

impl Interpreter {
    /// `try { … } catch …`: the first clause whose type holds what was
    /// thrown runs with it bound; none rethrows it.
    pub(super) fn c_try(&mut self, t: &Try, fr: &mut [Value], env: &Rc<Scope>) -> Eval<()> {
        let flow = match self.c_all(&t.body, fr, env) {
            Err(flow) if flow.thrown().is_some() => flow,
            other => return other,
        };
        let Some(thrown) = flow.thrown() else {
            unreachable!("matched as a throw");
        };
        for clause in &t.clauses {
            if let Some((slot, ty)) = &clause.binding {
                if !self.holds(ty, &thrown.value, env) {
                    continue;
                }
                fr[*slot as usize] = thrown.value.clone();
            }
            return self.c_all(&clause.body, fr, env);
        }
        Err(flow)
    }

    #[inline(never)]
    pub(super) fn c_extra(&mut self, x: &Extra, fr: &mut [Value], env: &Rc<Scope>) -> Eval<Value> {
        match x {
            Extra::Block(body) => match self.c_all(body, fr, env) {
                Ok(()) => Ok(Value::Null),
                Err(flow) => flow.into_out(),
            },
            Extra::Match(m) => self.c_match(m, fr, env),
            Extra::As(value, ty, optional, pos) => {
                let v = self.c_eval(value, fr, env)?;
                self.cast_value(v, ty, *optional, env, *pos)
            }
            Extra::Pattern(source, pos) => self.pattern(source, *pos),
            Extra::TypeValue(ty) => Ok(Value::Type(Rc::new(self.bound_type(ty, env).into_owned()))),
            Extra::TypedList(ty, items) => self.c_typed_list(ty, items, fr, env),
            Extra::AnonObject(fields) => {
                let mut values = Vec::with_capacity(fields.len());
                for (_, e) in fields {
                    values.push(self.c_eval(e, fr, env)?);
                }
                let names = fields.iter().map(|(name, _)| name.clone()).collect();
                Ok(anon_object_of(names, values))
            }
            Extra::Async(callee, args, pos) => {
                let f = self.c_eval(callee, fr, env)?;
                let values = self.c_arguments(args, fr, env)?;
                self.make_fiber(Deferred::Value(f, values), *pos)
            }
            Extra::AsyncMethod(receiver, name, at, args, pos) => {
                let receiver = self.c_eval(receiver, fr, env)?;
                let deferred = if crate::buzz::lib::methods::is_builtin_receiver(&receiver) {
                    let values = self.c_arguments(args, fr, env)?;
                    Deferred::Method(receiver, name.clone(), values)
                } else {
                    let f = self.field(&receiver, name, *at)?;
                    Deferred::Value(f, self.c_arguments(args, fr, env)?)
                };
                self.make_fiber(deferred, *pos)
            }
            Extra::Resume(operand, at, pos, resolving) => {
                let v = self.c_eval(operand, fr, env)?;
                if *resolving {
                    self.resolve_value(v, *at, *pos)
                } else {
                    self.resume_value(v, *at, *pos)
                }
            }
            Extra::Yield(value) => {
                let v = self.c_eval(value, fr, env)?;
                Ok(self.yield_value(v))
            }
            Extra::Generic(callee, types) => {
                let f = self.c_eval(callee, fr, env)?;
                Ok(self.with_type_args(f, types, env))
            }
            Extra::Lambda(decl) => Ok(Value::Function(Rc::new(Closure {
                decl: decl.clone(),
                scope: env.clone(),
                type_args: Vec::new(),
            }))),
            Extra::Closure(c) => Ok(self.c_closure(c, fr, env)),
            Extra::Outer(out, slot, name, pos) => match env.ancestor(*out) {
                Some(scope) => Ok(scope.get(*slot)),
                None => self.variable(name, &Resolved::default(), env, *pos),
            },
            Extra::Store(store) => self.c_store_scope(store, fr, env),
            Extra::CallGeneric(call) => self.c_call_generic(call, fr, env),
            Extra::Named(name, res, pos) => self.variable(name, res, env, *pos),
        }
    }

    /// `f::<T>(args)` and `obj.method::<T>(args)`: the callee (a built-in method runs
    /// at once), the type arguments bound, the arguments, the call.
    fn c_call_generic(
        &mut self,
        call: &CallGeneric,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<Value> {
        let target = self.c_eval(&call.callee, fr, env)?;
        let f = match &call.method {
            Some((name, optional, at)) => {
                if *optional && target.is_null() {
                    return Ok(Value::Null);
                }
                if crate::buzz::lib::methods::is_builtin_receiver(&target) {
                    let values = self.c_arguments(&call.args, fr, env)?;
                    return self.builtin_method(&target, name, values, *at);
                }
                self.field(&target, name, *at)?
            }
            None => target,
        };
        let f = self.with_type_args(f, &call.types, env);
        let values = self.c_arguments(&call.args, fr, env)?;
        self.call_value(&f, values, call.pos)
    }

    /// A store into a local kept in a scope: the value, then (for `op=`)
    /// the operator on the old value, as every assignment does.
    fn c_store_scope(&mut self, s: &ScopeStore, fr: &mut [Value], env: &Rc<Scope>) -> Eval<Value> {
        let new = self.c_eval(&s.value, fr, env)?;
        let Some(scope) = env.ancestor(s.out) else {
            return self.assign_var(&s.name, s.op, new, env, s.at, s.pos);
        };
        let v = match s.op {
            None => new,
            Some(op) => {
                let old = scope.get(s.slot);
                crate::buzz::lib::methods::binary(op, &old, &new)
                    .map_err(|m| self.fail(s.pos, m))?
            }
        };
        drop(scope.set(s.slot, v.clone()));
        Ok(v)
    }

    /// A declaration of a local kept in the call's scope (`env`).
    pub(super) fn c_var_in_scope(
        &mut self,
        (slot, init, ty, name): (u32, Option<&Expr>, Option<&Type>, &Rc<str>),
        pos: Pos,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<()> {
        let value = match init {
            Some(e) => self.c_eval(e, fr, env)?,
            None => Value::Null,
        };
        let value = match ty {
            Some(ty) => self.conform_with(ty, value, || format!("`{name}`"), pos)?,
            None => value,
        };
        drop(env.set(slot, value));
        Ok(())
    }

    /// A closure over copies of the locals it captures, in the chain of
    /// scopes laid out as the resolver's levels.
    fn c_closure(&mut self, c: &Copying, fr: &mut [Value], env: &Rc<Scope>) -> Value {
        let mut scope = env.clone();
        for level in (0..c.levels).rev() {
            scope = Scope::with_capacity(scope, 0);
            for &(out, slot, index) in &c.copies {
                if out == level {
                    scope.set(slot, fr[index as usize].clone());
                }
            }
        }
        Value::Function(Rc::new(Closure {
            decl: c.decl.clone(),
            scope,
            type_args: Vec::new(),
        }))
    }

    /// `match`: the subject, then each arm's
    /// conditions in order until one matches.
    fn c_match(&mut self, m: &Match, fr: &mut [Value], env: &Rc<Scope>) -> Eval<Value> {
        let value = self.c_eval(&m.subject, fr, env)?;
        for (conditions, body) in &m.arms {
            for condition in conditions {
                let c = self.c_eval(condition, fr, env)?;
                if self.matches(&value, &c) {
                    return self.c_eval(body, fr, env);
                }
            }
        }
        match &m.otherwise {
            Some(e) => self.c_eval(e, fr, env),
            None => Err(self.fail(m.pos, format!("no `match` arm matches {value}"))),
        }
    }

    /// `[<T>, …]`: each item conformed to `ty` (so `.case` and `.{ }`
    /// infer it).
    fn c_typed_list(
        &mut self,
        ty: &Type,
        items: &[(Expr, Pos)],
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<Value> {
        let mut out = Vec::with_capacity(items.len());
        for (item, pos) in items {
            let value = self.c_eval(item, fr, env)?;
            out.push(self.conform(ty, value, "a list item", *pos)?);
        }
        let list = ListObj::new(out);
        *list.shape.ty.borrow_mut() = Some(Type::List(Box::new(ty.clone())));
        Ok(Value::List(Rc::new(list)))
    }
}
