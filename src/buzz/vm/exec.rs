//! Running the compiled form on a flat frame.
//!
//! Each statement and call is checked on entry (depth, memory, stack,
//! steps: [`super::limits`]), and every slow or failing
//! path is handed to the interpreter's helpers (calls, fields,
//! conformance, errors), so that messages and locations are the same
//! wherever a value comes from. `env` is the scope the function closes
//! over: globals are read from it by name (the file's root) and a
//! closure's captured locals by levels out.
//!
//! The hottest producers of values (`c_eval` and what it dispatches to,
//! `call_small`, the accessor and built-in calls) answer [`Got`], an
//! `Option<Value>` that travels in two registers, rather than an
//! `Eval<Value>`, which rustc returns through memory; the stop of a `None`
//! waits on the interpreter for the caller to take back. Why: a value
//! written as two words and read back as one 16-byte load stalls, and
//! these returns were the commonest such loads (docs/benchmarks.md,
//! "Values in registers").

use crate::buzz::lower::*;
use crate::buzz::syntax::ast::{BinOp, FunDecl, MemberCache, Resolved, Type};
use crate::buzz::syntax::lexer::Pos;
use crate::buzz::vm::value::Value;

use crate::buzz::lib::methods;
use crate::buzz::syntax::ast::{self, Res};
use crate::buzz::vm::calls::Callee;
use crate::buzz::vm::conform::{common_type, plainly_conforms, shape_of};
use crate::buzz::vm::fields::method_of;
use crate::buzz::vm::limits::MAX_STR_LEN;
use crate::buzz::vm::names::global_function;
use crate::buzz::vm::ops::{double_fast, int_compare, int_fast};
use crate::buzz::vm::value::{
    same_name, type_of, Closure, ListObj, MapObj, NativeFunction, Obj, Scope,
};
use crate::buzz::vm::{Args as Named, Eval, Flow, Interpreter, Stop, Thrown};
use std::borrow::Cow;
use std::rc::Rc;

/// How many emptied flat frames an interpreter keeps for the next calls.
const SPARE_FRAMES: usize = 2048;

/// The largest frame [`Interpreter::call_small`] keeps on the stack.
const SMALL_FRAME: usize = 6;

/// What the hub of evaluation returns: a value, or `None` when evaluation
/// stopped, the stop parked in `Interpreter::parked` by
/// [`Interpreter::park`] and taken back by [`Interpreter::unpark`] as the
/// call returns, before anything else runs. Why: an `Eval<Value>` is
/// returned through memory (rustc passes a `Result` in registers only
/// when its error carries nothing), an `Option<Value>` in two registers.
pub(super) type Got = Option<Value>;

impl Interpreter {
    // ----- entering a compiled function -----

    /// A flat frame of `size` nulls, reusing a finished one.
    fn flat_frame(&mut self, size: usize) -> Vec<Value> {
        let mut frame = self.flat_frames.pop().unwrap_or_default();
        frame.resize(size, Value::Null);
        frame
    }

    /// Empties a finished frame and keeps it for the next call.
    fn give_back_frame(&mut self, mut frame: Vec<Value>) {
        frame.clear();
        if self.flat_frames.len() < SPARE_FRAMES {
            self.flat_frames.push(frame);
        }
    }

    /// Runs a direct call of compiled `f` in a frame that `fill` gives
    /// its arguments: on the Rust stack when the frame is small (no
    /// allocation, no list to empty), else a kept `Vec`.
    #[inline]
    pub(super) fn with_frame(
        &mut self,
        (decl, f): (&FunDecl, &Function),
        args: usize,
        this: Option<Value>,
        fill: impl FnOnce(&mut Self, &mut [Value]) -> Eval<()>,
        (env, pos): (&Rc<Scope>, Pos),
    ) -> Eval<Value> {
        let size = f.size.max(args + 1);
        if size <= 2 {
            return self.on_stack::<2>((decl, f), size, this, fill, (env, pos));
        }
        if size <= 6 {
            return self.on_stack::<6>((decl, f), size, this, fill, (env, pos));
        }
        if size <= 16 {
            return self.on_stack::<16>((decl, f), size, this, fill, (env, pos));
        }
        let mut frame = self.flat_frame(size);
        let result = self.fill_run((decl, f), &mut frame, this, fill, (env, pos));
        self.give_back_frame(frame);
        result
    }

    /// The commonest call, in one Rust frame: a function or method of
    /// this file that keeps no scope, its frame small enough for
    /// the stack, each argument given in order. The same steps as
    /// [`Interpreter::with_frame`] and [`Interpreter::checked_run`], in
    /// the same order (arguments, parameter types, depth, budgets, body),
    /// without handing the frame and the callee down four calls.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn call_small<const FIRST: usize>(
        &mut self,
        (decl, f): (&FunDecl, &Function),
        this: Option<Value>,
        args: &Args,
        (parent, pos): (&Rc<Scope>, Pos),
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Got {
        let mut frame = std::mem::ManuallyDrop::new([const { Value::Null }; SMALL_FRAME]);
        // `FIRST` is 1 for a method (`this` in slot 0), else 0: one copy
        // of this function each, so that a plain call tests nothing more.
        if let Some(this) = this {
            frame[0] = this;
        }
        let own = (&mut frame[..], FIRST);
        let result = self.run_small((decl, f), args, (parent, pos), fr, env, own);
        let result = self.park(result);
        // Only the function's own slots can hold anything.
        for v in &mut frame[..f.size] {
            discard(std::mem::take(v));
        }
        result
    }

    /// [`Interpreter::call_small`] in its frame.
    #[inline(always)]
    fn run_small(
        &mut self,
        (decl, f): (&FunDecl, &Function),
        args: &Args,
        (parent, pos): (&Rc<Scope>, Pos),
        fr: &mut [Value],
        env: &Rc<Scope>,
        (frame, first): (&mut [Value], usize),
    ) -> Eval<Value> {
        for (slot, e) in frame[first..].iter_mut().zip(&args.values) {
            // The slot is a fresh null: nothing to drop.
            std::mem::forget(std::mem::replace(slot, self.c_operand(e, fr, env)?));
        }
        for (i, (check, slot)) in f.checks.iter().zip(frame[first..].iter_mut()).enumerate() {
            if !plainly(check, slot) {
                self.conform_slot(decl, i, slot, pos)?;
            }
        }
        if self.calls >= crate::buzz::MAX_CALL_DEPTH {
            return Err(self.call_overflow(decl, pos));
        }
        self.enter_call(pos)?;
        self.calls += 1;
        let outcome = self.run_flat(&f.flat, frame, parent);
        self.calls -= 1;
        self.depth -= 1;
        match outcome {
            Ok(v) => Ok(v),
            Err(flow) if flow.is_return() => Ok(std::mem::take(&mut self.returning)),
            Err(flow) => Err(self.not_returned(flow, pos)),
        }
    }

    /// The value of the `return` `flow` is, else `flow` as it is.
    #[inline]
    pub(in crate::buzz) fn returned_value(&mut self, flow: Flow) -> Eval<Value> {
        if flow.is_return() {
            return Ok(std::mem::take(&mut self.returning));
        }
        Err(flow)
    }

    /// A flow that left a body other than by returning: an error or a
    /// throw goes on, a stray `break`, `continue` or `out` is refused.
    #[cold]
    #[inline(never)]
    fn not_returned(&self, flow: Flow, pos: Pos) -> Flow {
        match flow.stop() {
            Stop::Break(_) | Stop::Continue(_) | Stop::Out(_) => {
                self.fail(pos, "`break`, `continue` or `out` outside a loop or block")
            }
            _ => flow,
        }
    }

    /// [`Interpreter::with_frame`] in a frame of `K` slots on the stack.
    #[inline]
    fn on_stack<const K: usize>(
        &mut self,
        (decl, f): (&FunDecl, &Function),
        size: usize,
        this: Option<Value>,
        fill: impl FnOnce(&mut Self, &mut [Value]) -> Eval<()>,
        (env, pos): (&Rc<Scope>, Pos),
    ) -> Eval<Value> {
        let mut frame = std::mem::ManuallyDrop::new([const { Value::Null }; K]);
        let result = self.fill_run((decl, f), &mut frame[..], this, fill, (env, pos));
        // Only the slots the call could fill hold anything.
        for v in &mut frame[..size.min(K)] {
            discard(std::mem::take(v));
        }
        result
    }

    #[inline]
    fn fill_run(
        &mut self,
        (decl, f): (&FunDecl, &Function),
        frame: &mut [Value],
        this: Option<Value>,
        fill: impl FnOnce(&mut Self, &mut [Value]) -> Eval<()>,
        (env, pos): (&Rc<Scope>, Pos),
    ) -> Eval<Value> {
        if let Some(this) = this {
            frame[0] = this;
        }
        fill(self, frame)?;
        self.checked_run(decl, f, frame, env, pos)
    }

    /// The general call (`vm::calls`' `call_function_inner`, depth already
    /// checked) of a compiled function given every argument in order,
    /// unnamed: the parameters' types, then the body.
    pub(in crate::buzz) fn general_call_compiled(
        &mut self,
        (decl, f): (&FunDecl, &Function),
        this: Option<Value>,
        args: Named,
        parent: &Rc<Scope>,
        pos: Pos,
    ) -> Eval<Value> {
        let mut frame = self.flat_frame(f.size.max(args.len() + 1));
        let first = usize::from(decl.frame.get().method);
        if let Some(this) = this {
            frame[0] = this;
        }
        for (i, (_, v)) in args.into_iter().enumerate() {
            frame[first + i] = v;
        }
        let result = self
            .conform_flat((decl, f), &mut frame, pos)
            .and_then(|()| self.run_compiled(decl, f, &mut frame, parent, pos));
        self.give_back_frame(frame);
        result
    }

    /// A compiled function bound in `scope` by the general call path
    /// (named arguments, defaults, type arguments): the bound slots
    /// move to a flat frame, and `scope` stays the environment, where its
    /// generic parameters are found by name.
    pub(in crate::buzz) fn frame_call_compiled(
        &mut self,
        (decl, f): (&FunDecl, &Function),
        scope: &Rc<Scope>,
        pos: Pos,
    ) -> Eval<Value> {
        let size = decl.frame.get().size as usize;
        let mut frame = self.flat_frame(f.size.max(size));
        let generic = !decl.generics.is_empty();
        // A generic function's frame, where `T` is bound, is its own
        // level's scope: the shared locals stay in it.
        let stays = |i: usize| generic && f.own.as_ref().is_some_and(|o| o.contains(&(i as u32)));
        for (i, slot) in frame.iter_mut().take(size).enumerate() {
            if !stays(i) {
                *slot = scope.set(i as u32, Value::Null);
            }
        }
        let result = match (&scope.parent, generic) {
            // The scope it was made in, as a direct call's environment is.
            (Some(parent), false) => self.run_compiled(decl, f, &mut frame, parent, pos),
            (_, true) if f.own.is_some() => self.run_in(decl, f, &mut frame, scope, pos),
            // A generic function without closures: `T` is read by name.
            _ => self.run_compiled(decl, f, &mut frame, scope, pos),
        };
        self.give_back_frame(frame);
        result
    }

    /// A direct call with its frame filled: the parameters' types, then
    /// the depth checks, then the body (the general path's order).
    #[inline(always)]
    fn checked_run(
        &mut self,
        decl: &FunDecl,
        f: &Function,
        frame: &mut [Value],
        env: &Rc<Scope>,
        pos: Pos,
    ) -> Eval<Value> {
        self.conform_flat((decl, f), frame, pos)?;
        if self.calls >= crate::buzz::MAX_CALL_DEPTH {
            return Err(self.call_overflow(decl, pos));
        }
        self.enter_call(pos)?;
        self.calls += 1;
        let result = self.run_compiled(decl, f, frame, env, pos);
        self.calls -= 1;
        self.depth -= 1;
        result
    }

    /// Checks each parameter's value against its type.
    #[inline(always)]
    fn conform_flat(
        &mut self,
        (decl, f): (&FunDecl, &Function),
        frame: &mut [Value],
        pos: Pos,
    ) -> Eval<()> {
        let first = usize::from(decl.frame.get().method);
        let Some(slots) = frame.get_mut(first..) else {
            return Ok(());
        };
        for (i, (check, slot)) in f.checks.iter().zip(slots).enumerate() {
            if !plainly(check, slot) {
                self.conform_slot(decl, i, slot, pos)?;
            }
        }
        Ok(())
    }

    /// A parameter's value that is not plainly an `int` or a `double`:
    /// checked (and widened or inferred) by `Interpreter::conform_param`.
    #[inline(never)]
    fn conform_slot(&mut self, decl: &FunDecl, i: usize, slot: &mut Value, pos: Pos) -> Eval<()> {
        let Some(param) = decl.params.get(i) else {
            return Ok(());
        };
        if !plainly_conforms(&param.ty, slot) {
            let value = std::mem::take(slot);
            *slot = self.conform_param(decl, param, value, pos)?;
        }
        Ok(())
    }

    /// Runs the body in its bound frame: what it returns (`run_frame`).
    #[inline(always)]
    fn run_compiled(
        &mut self,
        decl: &FunDecl,
        f: &Function,
        frame: &mut [Value],
        env: &Rc<Scope>,
        pos: Pos,
    ) -> Eval<Value> {
        match &f.own {
            None => self.run_in(decl, f, frame, env, pos),
            Some(slots) => {
                let own = self.own_scope(slots, frame, env);
                self.run_in(decl, f, frame, &own, pos)
            }
        }
    }

    /// [`Interpreter::run_compiled`] with `env` the environment of the
    /// body (the own level's scope, when the function keeps one).
    #[inline(always)]
    fn run_in(
        &mut self,
        decl: &FunDecl,
        f: &Function,
        frame: &mut [Value],
        env: &Rc<Scope>,
        pos: Pos,
    ) -> Eval<Value> {
        let outcome = if Rc::ptr_eq(&self.file, &decl.file) {
            self.run_flat(&f.flat, frame, env)
        } else {
            let caller = std::mem::replace(&mut self.file, decl.file.clone());
            let outcome = self.run_flat(&f.flat, frame, env);
            self.file = caller;
            outcome
        };
        match outcome {
            Ok(v) => Ok(v),
            Err(flow) if flow.is_return() => Ok(std::mem::take(&mut self.returning)),
            Err(flow) => Err(self.not_returned(flow, pos)),
        }
    }

    /// The scope of a call whose own level's shared locals live there
    /// (the call's own level): its parameters among them moved in.
    #[cold]
    #[inline(never)]
    fn own_scope(&mut self, slots: &[u32], frame: &mut [Value], env: &Rc<Scope>) -> Rc<Scope> {
        let scope = Scope::with_capacity(env.clone(), 0);
        for &slot in slots {
            if let Some(v) = frame.get_mut(slot as usize) {
                drop(scope.set(slot, std::mem::take(v)));
            }
        }
        scope
    }

    pub(super) fn c_all(&mut self, body: &[Stmt], fr: &mut [Value], env: &Rc<Scope>) -> Eval<()> {
        for stmt in body {
            self.c_exec(stmt, fr, env)?;
        }
        Ok(())
    }

    pub(super) fn c_exec(&mut self, stmt: &Stmt, fr: &mut [Value], env: &Rc<Scope>) -> Eval<()> {
        self.enter(stmt.pos)?;
        let result = match &stmt.kind {
            StmtKind::Expr(e) => self.c_eval(e, fr, env).map(discard),
            StmtKind::StoreLocal {
                slot,
                op,
                value,
                pos,
            } => self.c_store(*slot, *op, value, *pos, fr, env),
            StmtKind::StoreField(store) => self.c_store_field(store, fr, env),
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => self.c_if(cond, then, otherwise.as_deref(), fr, env),
            StmtKind::Return(value) => self.c_return(value.as_ref(), fr, env),
            StmtKind::Var {
                slot,
                init,
                ty,
                name,
            } => self.c_var(*slot, init.as_ref(), ty.as_ref(), name, stmt.pos, fr, env),
            _ => self.c_exec_rest(stmt, fr, env),
        };
        self.depth -= 1;
        result
    }

    #[inline(never)]
    fn c_exec_rest(&mut self, stmt: &Stmt, fr: &mut [Value], env: &Rc<Scope>) -> Eval<()> {
        match &stmt.kind {
            StmtKind::Block(body) => self.c_all(body, fr, env),
            StmtKind::IfBind {
                value,
                slot,
                cast,
                then,
                otherwise,
            } => {
                let bound = (*slot, cast.as_ref());
                self.c_if_bind(value, bound, then, otherwise.as_deref(), fr, env)
            }
            StmtKind::While { cond, body, label } => {
                while self.c_cond(cond, fr, env)? {
                    if !self.c_loop_body(body, (label, stmt.pos), fr, env)? {
                        break;
                    }
                }
                Ok(())
            }
            StmtKind::DoUntil { body, cond, label } => loop {
                if !self.c_loop_body(body, (label, stmt.pos), fr, env)?
                    || self.c_cond(cond, fr, env)?
                {
                    return Ok(());
                }
            },
            StmtKind::For {
                init,
                cond,
                step,
                body,
                label,
            } => self.c_for(init, cond.as_ref(), step, (body, label, stmt.pos), fr, env),
            StmtKind::ForEach(each) => self.c_foreach(each, stmt.pos, fr, env),
            StmtKind::Out(e) => Err(Stop::Out(self.c_eval(e, fr, env)?).into()),
            StmtKind::VarInScope {
                slot,
                init,
                ty,
                name,
            } => {
                let var = (*slot, init.as_ref(), ty.as_ref(), name);
                self.c_var_in_scope(var, stmt.pos, fr, env)
            }
            StmtKind::Try(t) => self.c_try(t, fr, env),
            StmtKind::Declare(d) => self.c_declare(d, stmt.pos, fr, env),
            StmtKind::DoUntilScoped(l) => self.c_do_until_scoped(l, stmt.pos, fr, env),
            StmtKind::Scoped(body) => {
                let scope = self.block_scope(env);
                let result = self.c_all(body, fr, &scope);
                self.end_block_scope(scope);
                result
            }
            StmtKind::Break(label) => Err(Stop::Break(label.clone()).into()),
            StmtKind::Continue(label) => Err(Stop::Continue(label.clone()).into()),
            StmtKind::Throw(e) => {
                let value = self.c_eval(e, fr, env)?;
                Err(Stop::Throw(Box::new(Thrown {
                    value,
                    pos: stmt.pos,
                    file: self.file.clone(),
                    diagnostic: None,
                    refused: None,
                }))
                .into())
            }
            StmtKind::Expr(_)
            | StmtKind::StoreField(_)
            | StmtKind::StoreLocal { .. }
            | StmtKind::Var { .. }
            | StmtKind::If { .. }
            | StmtKind::Return(_) => self.c_exec(stmt, fr, env),
        }
    }

    fn c_return(&mut self, value: Option<&Expr>, fr: &mut [Value], env: &Rc<Scope>) -> Eval<()> {
        let v = match value {
            Some(e) => self.c_eval(e, fr, env)?,
            None => Value::Null,
        };
        self.returning = v;
        Err(Flow::returning())
    }

    /// `local = value` or `local op= value` as a statement.
    #[inline]
    fn c_store(
        &mut self,
        slot: u32,
        op: Option<BinOp>,
        value: &Expr,
        pos: Pos,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<()> {
        if let (Expr::Arith(arith), None) = (value, op) {
            if arith.2.get() {
                if let Some(d) = double_tree(&arith.0, fr, env) {
                    put(&mut fr[slot as usize], Value::double(d));
                    return Ok(());
                }
            }
        }
        let new = self.c_eval(value, fr, env)?;
        let place = &mut fr[slot as usize];
        let Some(op) = op else {
            put(place, new);
            return Ok(());
        };
        if let Some(v) = scalar_fast(op, place, &new) {
            std::mem::forget(new);
            put(place, v);
            return Ok(());
        }
        let v = methods::binary(op, place, &new).map_err(|m| self.fail(pos, m))?;
        put(place, v);
        Ok(())
    }

    /// `local.name op= value` as a statement (`c_assign_field`'s order,
    /// kept: reading the local has no effect and the value cannot rebind
    /// it).
    pub(super) fn c_store_field(
        &mut self,
        s: &StoreField,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<()> {
        let new = match &s.value {
            // nbody's `bj.vx = bj.vx + dx * bm`: straight to the unboxed
            // tree, as `c_store` does for a local, and into the field in
            // place when it holds a double too.
            Expr::Arith(arith) if arith.2.get() => match double_tree(&arith.0, fr, env) {
                Some(d) => match (&fr[s.slot as usize], s.op) {
                    (Value::Object(o), None) if o.set_double_at_site(&s.name, d, &s.cache) => {
                        return Ok(());
                    }
                    _ => Value::double(d),
                },
                None => self.c_arith_tree(arith, fr, env)?,
            },
            value => self.c_eval(value, fr, env)?,
        };
        let obj = &fr[s.slot as usize];
        let new = match s.op {
            Some(op) => {
                let old = match obj {
                    Value::Object(o) => o.get_at_site(&s.name, &s.cache),
                    _ => None,
                };
                let old = match old {
                    Some(old) => old,
                    None => self.field(obj, &s.name, s.at)?,
                };
                match scalar_fast(op, &old, &new) {
                    Some(v) => v,
                    None => self.binary(op, old, new, s.pos)?,
                }
            }
            None => new,
        };
        if let Value::Object(o) = obj {
            if o.set_at_site(&s.name, new, &s.cache) {
                return Ok(());
            }
            // No such field: the same error whatever the value.
            return self.set_field(obj, &s.name, Value::Null, s.at);
        }
        self.set_field(obj, &s.name, new, s.at)
    }

    #[allow(clippy::too_many_arguments)]
    fn c_var(
        &mut self,
        slot: u32,
        init: Option<&Expr>,
        ty: Option<&Type>,
        name: &Rc<str>,
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
        put(&mut fr[slot as usize], value);
        Ok(())
    }

    fn c_if(
        &mut self,
        cond: &Cond,
        then: &[Stmt],
        otherwise: Option<&Stmt>,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<()> {
        let truth = match int_condition(cond, fr) {
            Some(b) => b,
            None => self.c_cond(cond, fr, env)?,
        };
        if truth {
            self.c_all(then, fr, env)
        } else if let Some(other) = otherwise {
            self.c_exec(other, fr, env)
        } else {
            Ok(())
        }
    }

    fn c_if_bind(
        &mut self,
        value: &Expr,
        (slot, cast): (u32, Option<&Type>),
        then: &[Stmt],
        otherwise: Option<&Stmt>,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<()> {
        let value = self.c_eval(value, fr, env)?;
        let taken = match cast {
            None => !value.is_null(),
            Some(ty) => self.holds(ty, &value, env),
        };
        if taken {
            fr[slot as usize] = value;
            return self.c_all(then, fr, env);
        }
        match otherwise {
            Some(other) => self.c_exec(other, fr, env),
            None => Ok(()),
        }
    }

    /// Runs a loop body, one step of the loop at `pos`; `Ok(false)` means
    /// `break`.
    pub(super) fn c_loop_body(
        &mut self,
        body: &[Stmt],
        (label, pos): (&Label, Pos),
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<bool> {
        self.take_step(pos)?;
        match self.c_all(body, fr, env) {
            Ok(()) => Ok(true),
            Err(flow) => match flow.stop() {
                Stop::Continue(None) => Ok(true),
                Stop::Break(None) => Ok(false),
                Stop::Continue(Some(l)) if label.as_ref() == Some(l) => Ok(true),
                Stop::Break(Some(l)) if label.as_ref() == Some(l) => Ok(false),
                _ => Err(flow),
            },
        }
    }

    fn c_for(
        &mut self,
        init: &[Stmt],
        cond: Option<&Cond>,
        step: &[Stmt],
        (body, label, pos): (&[Stmt], &Label, Pos),
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<()> {
        self.c_all(init, fr, env)?;
        loop {
            if let Some(c) = cond {
                if !self.c_cond(c, fr, env)? {
                    return Ok(());
                }
            }
            if !self.c_loop_body(body, (label, pos), fr, env)? {
                return Ok(());
            }
            self.c_all(step, fr, env)?;
        }
    }

    fn c_foreach(
        &mut self,
        each: &ForEach,
        pos: Pos,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<()> {
        let subject = self.c_eval(&each.iterable, fr, env)?;
        let mut index = 0usize;
        loop {
            let item = match &subject {
                Value::Range(r) => methods::range_nth(r.low, r.high, index as i64)
                    .map(|n| (Value::Int(index as i64), Value::Int(n))),
                _ => self.next_item(&subject, index, each.at)?,
            };
            let Some((k, v)) = item else {
                return Ok(());
            };
            index += 1;
            if let Some(key) = each.key {
                put(&mut fr[key as usize], k);
            }
            put(&mut fr[each.value as usize], v);
            if !self.c_loop_body(&each.body, (&each.label, pos), fr, env)? {
                return Ok(());
            }
        }
    }

    /// A condition's truth: a bool, else a located error.
    #[inline]
    pub(super) fn c_cond(&mut self, cond: &Cond, fr: &mut [Value], env: &Rc<Scope>) -> Eval<bool> {
        if let Expr::Arith(arith) = &cond.expr {
            if let Some(N::B(b)) = operand(&arith.0, fr, env) {
                return Ok(b);
            }
        } else if let Some(b) = int_condition(cond, fr) {
            return Ok(b);
        }
        let v = self.c_eval(&cond.expr, fr, env)?;
        v.truthy().ok_or_else(|| {
            self.fail(
                cond.pos,
                format!("condition must be a bool, got {}", v.type_name()),
            )
        })
    }

    // ----- expressions -----

    /// Evaluates `e`.
    #[inline(always)]
    pub(super) fn c_eval(&mut self, e: &Expr, fr: &mut [Value], env: &Rc<Scope>) -> Eval<Value> {
        let r = self.c_eval_got(e, fr, env);
        self.unpark(r)
    }

    /// [`Interpreter::c_eval`] in two registers; the commonest kinds in
    /// this small frame.
    fn c_eval_got(&mut self, e: &Expr, fr: &mut [Value], env: &Rc<Scope>) -> Got {
        match e {
            Expr::Arith(arith) => self.c_arith_got(arith, fr, env),
            Expr::Const(v) => Some(v.clone()),
            Expr::Local(i) => Some(fr[*i as usize].clone()),
            Expr::Binary(op, operands, pos) => self.c_binary_got(*op, operands, *pos, fr, env),
            Expr::Field(f) => self.c_field_got(f, fr, env),
            Expr::Index(i) => self.c_index_got(i, fr, env),
            Expr::CallGlobal(c) => self.c_call_global_got(c, fr, env),
            Expr::CallMethod(c) => self.c_call_method_got(c, fr, env),
            _ => self.c_eval_rest_got(e, fr, env),
        }
    }

    /// An evaluation's outcome as a [`Got`]: a stop parked.
    #[inline(always)]
    pub(super) fn park(&mut self, r: Eval<Value>) -> Got {
        match r {
            Ok(v) => Some(v),
            Err(flow) => {
                self.parked = flow;
                None
            }
        }
    }

    /// A [`Got`] as an evaluation's outcome: the parked stop taken back.
    #[inline(always)]
    pub(super) fn unpark(&mut self, r: Got) -> Eval<Value> {
        match r {
            Some(v) => Ok(v),
            None => Err(std::mem::replace(&mut self.parked, Flow::returning())),
        }
    }

    /// [`Interpreter::c_eval`] of an operand or an argument: a local, a
    /// constant, two `int`s at hand or a call of a global function are
    /// taken here, without one more Rust frame between the two calls.
    #[inline(always)]
    fn c_operand(&mut self, e: &Expr, fr: &mut [Value], env: &Rc<Scope>) -> Eval<Value> {
        match e {
            Expr::Local(i) => Ok(fr[*i as usize].clone()),
            Expr::Const(v) => Ok(v.clone()),
            Expr::Arith(arith) => match int_pair(arith, fr) {
                Some(v) => Ok(v),
                None => self.c_arith_tree(arith, fr, env),
            },
            Expr::CallGlobal(c) => self.c_call_global(c, fr, env),
            _ => self.c_eval(e, fr, env),
        }
    }

    /// An arithmetic tree: on unboxed numbers when it can, else in
    /// general.
    #[inline(always)]
    fn c_arith_in(
        &mut self,
        arith: &(Num, Expr, std::cell::Cell<bool>),
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<Value> {
        if let Some(v) = int_pair(arith, fr) {
            return Ok(v);
        }
        self.c_arith_tree(arith, fr, env)
    }

    /// [`Interpreter::c_arith_in`] answering in two registers (see [`Got`]).
    #[inline(never)]
    fn c_arith_got(
        &mut self,
        arith: &(Num, Expr, std::cell::Cell<bool>),
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Got {
        let r = self.c_arith_in(arith, fr, env);
        self.park(r)
    }

    /// [`Interpreter::c_arith`] past two `int`s at hand: a tree of
    /// `double`s, else any numbers, else the general form.
    #[inline(never)]
    pub(super) fn c_arith_tree(
        &mut self,
        arith: &(Num, Expr, std::cell::Cell<bool>),
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<Value> {
        if let Some(d) = double_tree(&arith.0, fr, env) {
            arith.2.set(true);
            return Ok(Value::double(d));
        }
        arith.2.set(false);
        match operand(&arith.0, fr, env) {
            Some(N::I(i)) => Ok(Value::Int(i)),
            Some(N::D(d)) => Ok(Value::double(d)),
            Some(N::B(b)) => Ok(Value::bool(b)),
            None => self.c_eval(&arith.1, fr, env),
        }
    }

    #[inline(always)]
    fn c_eval_rest_in(&mut self, e: &Expr, fr: &mut [Value], env: &Rc<Scope>) -> Eval<Value> {
        match e {
            Expr::AssignLocal {
                slot,
                op,
                value,
                pos,
            } => {
                self.c_store(*slot, *op, value, *pos, fr, env)?;
                Ok(fr[*slot as usize].clone())
            }
            Expr::Global { name, res, pos } => self.variable(name, res, env, *pos),
            // k-nucleoide's `frequency[c] = …`, bubble-sort's swaps.
            Expr::AssignIndex(a) => self.c_assign_index(a, fr, env),
            Expr::Unary(op, x, pos) => {
                let v = self.c_eval(x, fr, env)?;
                self.unary(*op, v, *pos)
            }
            Expr::Logic(conds, is_or) => {
                let left = self.c_cond(&conds.0, fr, env)?;
                if left == *is_or {
                    return Ok(Value::bool(left));
                }
                Ok(Value::bool(self.c_cond(&conds.1, fr, env)?))
            }
            Expr::Coalesce(lr) => match self.c_eval(&lr.0, fr, env)? {
                Value::Null => self.c_eval(&lr.1, fr, env),
                v => Ok(v),
            },
            Expr::Range(lr, pos) => self.c_range(lr, *pos, fr, env),
            Expr::Force(x, pos) => match self.c_eval(x, fr, env)? {
                Value::Null => Err(self.fail(*pos, "force unwrap (`!`) of a null value")),
                v => Ok(v),
            },
            Expr::Is(x, ty) => {
                let v = self.c_eval(x, fr, env)?;
                Ok(Value::bool(self.holds(ty, &v, env)))
            }
            Expr::TypeOf(x) => {
                let v = self.c_eval(x, fr, env)?;
                Ok(Value::Type(Rc::new(type_of(&v))))
            }
            Expr::OptionalIndex(oi, pos) => {
                let v = self.c_eval(&oi.0, fr, env)?;
                if v.is_null() {
                    return Ok(Value::Null);
                }
                let i = self.c_eval(&oi.1, fr, env)?;
                self.index(&v, &i, false, *pos)
            }
            _ => self.c_eval_more(e, fr, env),
        }
    }

    /// [`Interpreter::c_eval_rest_in`] answering in two registers (see [`Got`]).
    #[inline(never)]
    fn c_eval_rest_got(&mut self, e: &Expr, fr: &mut [Value], env: &Rc<Scope>) -> Got {
        let r = self.c_eval_rest_in(e, fr, env);
        self.park(r)
    }

    /// Assignments, calls of values, literals and the inline forms.
    #[inline(always)]
    fn c_eval_more_in(&mut self, e: &Expr, fr: &mut [Value], env: &Rc<Scope>) -> Eval<Value> {
        match e {
            Expr::Discard(x) => self.c_eval(x, fr, env),
            Expr::AssignFinal(x, name, at) => {
                self.c_eval(x, fr, env)?;
                Err(self.final_assigned(name, *at))
            }
            Expr::AssignGlobal(a) => {
                let new = self.c_eval(&a.value, fr, env)?;
                self.assign_var(&a.name, a.op, new, env, a.at, a.pos)
            }
            Expr::AssignField(a) => self.c_assign_field(a, fr, env),
            Expr::CallValue(call, pos) => {
                let f = self.c_eval(&call.0, fr, env)?;
                self.c_call_value(&f, &call.1, *pos, fr, env)
            }
            Expr::Template(parts) => self.c_template(parts, fr, env),
            Expr::List(items) => self.c_list(items, fr, env),
            Expr::Map(entries) => {
                let map = MapObj::default();
                for (k, v) in entries {
                    let key = self.c_eval(k, fr, env)?;
                    let value = self.c_eval(v, fr, env)?;
                    map.insert(key, value);
                }
                Ok(Value::Map(Rc::new(map)))
            }
            Expr::Mutable(x) => {
                let v = self.c_eval(x, fr, env)?;
                if let Some(shape) = shape_of(&v) {
                    shape.mutable.set(true);
                }
                Ok(v)
            }
            Expr::If(branches) => {
                let (cond, then, otherwise) = &**branches;
                let branch = if self.c_cond(cond, fr, env)? {
                    then
                } else {
                    otherwise
                };
                self.c_eval(branch, fr, env)
            }
            Expr::Catch(pair) => match self.c_eval(&pair.0, fr, env) {
                Err(flow) if flow.thrown().is_some() => self.c_eval(&pair.1, fr, env),
                other => other,
            },
            Expr::Instance(i) => self.c_instance(i, fr, env),
            Expr::InstanceOf(i) => self.c_instance_of(i, fr, env),
            Expr::Extra(x) => self.c_extra(x, fr, env),
            Expr::Arith(_)
            | Expr::Const(_)
            | Expr::Local(_)
            | Expr::Binary(..)
            | Expr::Field(_)
            | Expr::Index(_)
            | Expr::CallGlobal(_)
            | Expr::CallMethod(_)
            | Expr::AssignLocal { .. }
            | Expr::Global { .. }
            | Expr::Unary(..)
            | Expr::Logic(..)
            | Expr::Coalesce(_)
            | Expr::Range(..)
            | Expr::Force(..)
            | Expr::Is(..)
            | Expr::TypeOf(_)
            | Expr::OptionalIndex(..)
            | Expr::AssignIndex(_) => self.c_eval(e, fr, env),
        }
    }

    /// [`Interpreter::c_eval_more_in`] answering in two registers (see [`Got`]).
    #[inline(never)]
    fn c_eval_more_got(&mut self, e: &Expr, fr: &mut [Value], env: &Rc<Scope>) -> Got {
        let r = self.c_eval_more_in(e, fr, env);
        self.park(r)
    }

    #[inline(always)]
    fn c_eval_more(&mut self, e: &Expr, fr: &mut [Value], env: &Rc<Scope>) -> Eval<Value> {
        let r = self.c_eval_more_got(e, fr, env);
        self.unpark(r)
    }

    #[inline(always)]
    fn c_binary_in(
        &mut self,
        op: BinOp,
        operands: &(Expr, Expr),
        pos: Pos,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<Value> {
        if let (Some(a), Some(b)) = (peek(&operands.0, fr), peek(&operands.1, fr)) {
            if let Some(v) = scalar_fast(op, a, b) {
                return Ok(v);
            }
        }
        let a = self.c_operand(&operands.0, fr, env)?;
        let b = self.c_operand(&operands.1, fr, env)?;
        match scalar_fast(op, &a, &b) {
            Some(v) => {
                // Both are scalars, which own nothing: no drop glue.
                std::mem::forget(a);
                std::mem::forget(b);
                Ok(v)
            }
            None => self.binary(op, a, b, pos),
        }
    }

    /// [`Interpreter::c_binary_in`] answering in two registers (see [`Got`]).
    #[inline(never)]
    fn c_binary_got(
        &mut self,
        op: BinOp,
        operands: &(Expr, Expr),
        pos: Pos,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Got {
        let r = self.c_binary_in(op, operands, pos, fr, env);
        self.park(r)
    }

    fn c_range(
        &mut self,
        lr: &(Expr, Expr),
        pos: Pos,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<Value> {
        let low = self.c_eval(&lr.0, fr, env)?;
        let high = self.c_eval(&lr.1, fr, env)?;
        match (&low, &high) {
            (Value::Int(a), Value::Int(b)) => Ok(Value::range(*a, *b)),
            _ => Err(self.range_refused(&low, &high, pos)),
        }
    }

    /// `low..high` with a bound that is not an `int`.
    #[cold]
    pub(super) fn range_refused(&self, low: &Value, high: &Value, pos: Pos) -> Flow {
        self.fail(
            pos,
            format!(
                "range bounds must be int, got {} and {}",
                low.type_name(),
                high.type_name()
            ),
        )
    }

    #[inline(always)]
    fn c_field_in(&mut self, f: &Field, fr: &mut [Value], env: &Rc<Scope>) -> Eval<Value> {
        if let Expr::Local(i) = &f.object {
            if let Value::Object(obj) = &fr[*i as usize] {
                if let Some(found) = obj.get_at_site(&f.name, &f.cache) {
                    return Ok(found);
                }
            }
        }
        let v = self.c_eval(&f.object, fr, env)?;
        if let Value::Object(obj) = &v {
            if let Some(found) = obj.get_at_site(&f.name, &f.cache) {
                return Ok(found);
            }
        }
        if f.optional && v.is_null() {
            return Ok(Value::Null);
        }
        self.field(&v, &f.name, f.pos)
    }

    /// [`Interpreter::c_field_in`] answering in two registers (see [`Got`]).
    #[inline(never)]
    fn c_field_got(&mut self, f: &Field, fr: &mut [Value], env: &Rc<Scope>) -> Got {
        let r = self.c_field_in(f, fr, env);
        self.park(r)
    }

    #[inline(always)]
    fn c_index_in(&mut self, ix: &Index, fr: &mut [Value], env: &Rc<Scope>) -> Eval<Value> {
        if let (true, Expr::Local(at)) = (ix.late, &ix.object) {
            // A local index read in place: no call to evaluate it, and no
            // count of a `str` key going up and down. Its two arms repeat
            // the ones below on purpose: one `#[inline(always)]` reader
            // for both (returning `Option<Value>`) cost bubble-sort 13%
            // more CPU time and k-nucleoide 3% (alternating runs,
            // 2026-12-07), the item moved once more through memory.
            if let Expr::Local(k) = &ix.index {
                match (&fr[*at as usize], &fr[*k as usize]) {
                    (Value::List(list), Value::Int(n)) => {
                        let items = list.items.borrow();
                        if let Some(found) = usize::try_from(*n).ok().and_then(|n| items.get(n)) {
                            return Ok(found.clone());
                        }
                    }
                    (Value::Map(map), key) => return Ok(map.get(key).unwrap_or_default()),
                    _ => {}
                }
            }
            let i = self.c_eval(&ix.index, fr, env)?;
            match (&fr[*at as usize], &i) {
                (Value::List(list), Value::Int(n)) => {
                    let items = list.items.borrow();
                    if let Some(found) = usize::try_from(*n).ok().and_then(|n| items.get(n)) {
                        return Ok(found.clone());
                    }
                }
                // A key that is absent reads as null, as `methods::index`.
                (Value::Map(map), key) => {
                    let found = map.get(key).unwrap_or_default();
                    discard(i);
                    return Ok(found);
                }
                _ => {}
            }
            return self.index(&fr[*at as usize], &i, ix.checked, ix.pos);
        }
        let v = self.c_subject(&ix.object, fr, env)?;
        let i = self.c_eval(&ix.index, fr, env)?;
        if let (Value::List(list), Value::Int(n)) = (&v, &i) {
            let items = list.items.borrow();
            if let Some(found) = usize::try_from(*n).ok().and_then(|n| items.get(n)) {
                return Ok(found.clone());
            }
        }
        self.index(&v, &i, ix.checked, ix.pos)
    }

    /// [`Interpreter::c_index_in`] answering in two registers (see [`Got`]).
    #[inline(never)]
    fn c_index_got(&mut self, ix: &Index, fr: &mut [Value], env: &Rc<Scope>) -> Got {
        let r = self.c_index_in(ix, fr, env);
        self.park(r)
    }

    /// The value an access works on.
    #[inline]
    fn c_subject(&mut self, e: &Expr, fr: &mut [Value], env: &Rc<Scope>) -> Eval<Value> {
        match e {
            Expr::Local(i) => Ok(fr[*i as usize].clone()),
            _ => self.c_eval(e, fr, env),
        }
    }

    /// `obj.name = value` or `obj.name op= value`: `obj` evaluated once,
    /// the field found through the site's cache for the read and the write.
    fn c_assign_field(
        &mut self,
        a: &AssignField,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<Value> {
        let obj = self.c_subject(&a.object, fr, env)?;
        let new = self.c_eval(&a.value, fr, env)?;
        let new = match a.op {
            Some(op) => {
                let old = match &obj {
                    Value::Object(o) => o.get_at_site(&a.name, &a.cache),
                    _ => None,
                };
                let old = match old {
                    Some(old) => old,
                    None => self.field(&obj, &a.name, a.at)?,
                };
                self.binary(op, old, new, a.pos)?
            }
            None => new,
        };
        if let Value::Object(o) = &obj {
            if o.set_at_site(&a.name, new.clone(), &a.cache) {
                return Ok(new);
            }
        }
        self.set_field(&obj, &a.name, new.clone(), a.at)?;
        Ok(new)
    }

    /// `obj[index] = value` or `obj[index] op= value`: `obj` and `index`
    /// evaluated once.
    fn c_assign_index(
        &mut self,
        a: &AssignIndex,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<Value> {
        if let (true, Expr::Local(at)) = (a.late, &a.object) {
            // A local key is read after the value, in place (the value
            // cannot rebind it: `late`): stored into a map, it is copied
            // only when it is new.
            if let (Expr::Local(k), None) = (&a.index, a.op) {
                let new = self.c_eval(&a.value, fr, env)?;
                if let Value::Map(map) = &fr[*at as usize] {
                    map.insert_ref(&fr[*k as usize], new.clone());
                    return Ok(new);
                }
                let i = fr[*k as usize].clone();
                return self.store_item(&fr[*at as usize], i, new, a);
            }
            let i = self.c_eval(&a.index, fr, env)?;
            let new = self.c_eval(&a.value, fr, env)?;
            return self.store_item(&fr[*at as usize], i, new, a);
        }
        let obj = self.c_subject(&a.object, fr, env)?;
        let i = self.c_eval(&a.index, fr, env)?;
        let new = self.c_eval(&a.value, fr, env)?;
        self.store_item(&obj, i, new, a)
    }

    /// The store of `obj[i] op= new`, its operands evaluated.
    #[inline]
    fn store_item(&mut self, obj: &Value, i: Value, new: Value, a: &AssignIndex) -> Eval<Value> {
        if let (Value::Map(map), None) = (obj, a.op) {
            map.insert(i, new.clone());
            return Ok(new);
        }
        if let (Value::List(list), Value::Int(n)) = (obj, &i) {
            let mut items = list.items.borrow_mut();
            if let Some(slot) = usize::try_from(*n).ok().and_then(|n| items.get_mut(n)) {
                let computed = match (a.op, &*slot, &new) {
                    (Some(op), Value::Int(x), Value::Int(y)) => int_fast(op, *x, *y),
                    (Some(op), Value::Double(x), Value::Double(y)) => {
                        double_fast(op, x.get(), y.get())
                    }
                    _ => None,
                };
                let stored = match (a.op, computed) {
                    (None, _) => new,
                    (Some(_), Some(v)) => v,
                    (Some(_), None) => {
                        drop(items);
                        return self.assign_index_slow(obj, &i, a.op, new, (a.at, a.pos));
                    }
                };
                let old = std::mem::replace(slot, stored.clone());
                drop(items);
                discard(old);
                return Ok(stored);
            }
        }
        self.assign_index_slow(obj, &i, a.op, new, (a.at, a.pos))
    }

    fn c_template(&mut self, parts: &[Part], fr: &mut [Value], env: &Rc<Scope>) -> Eval<Value> {
        let mut out = Vec::new();
        for part in parts {
            match part {
                Part::Text(t) => out.extend_from_slice(t),
                Part::Expr(e, pos) => {
                    match self.c_eval(e, fr, env)? {
                        Value::Str(s) => out.extend_from_slice(s.as_bytes()),
                        Value::Bytes(b) => out.extend_from_slice(&b),
                        v => out.extend_from_slice(v.to_string().as_bytes()),
                    }
                    if out.len() > MAX_STR_LEN {
                        return Err(self.fail(*pos, "string too long"));
                    }
                }
            }
        }
        Ok(Value::from_bytes(out))
    }

    fn c_list(&mut self, items: &[Expr], fr: &mut [Value], env: &Rc<Scope>) -> Eval<Value> {
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            out.push(self.c_eval(item, fr, env)?);
        }
        let elem = common_type(out.iter());
        let list = ListObj::new(out);
        if let Some(t) = elem {
            *list.shape.ty.borrow_mut() = Some(Type::List(Box::new(t)));
        }
        Ok(Value::List(Rc::new(list)))
    }

    /// `Name{ field = value, … }`: given fields
    /// evaluated in the order the object declares them.
    fn c_instance(&mut self, i: &Instance, fr: &mut [Value], env: &Rc<Scope>) -> Eval<Value> {
        let class = self.c_eval(&i.class, fr, env)?;
        self.c_build(i, &i.name, class, fr, env)
    }

    /// `.{ … }` of an object type given as a value: named after it.
    fn c_instance_of(&mut self, i: &Instance, fr: &mut [Value], env: &Rc<Scope>) -> Eval<Value> {
        let class = self.c_eval(&i.class, fr, env)?;
        let name: Rc<str> = match &class {
            Value::Class(c) => c.name.clone(),
            other => Rc::from(other.type_name()),
        };
        self.c_build(i, &name, class, fr, env)
    }

    /// An instance of `class` (written as `name`) with `i`'s fields.
    fn c_build(
        &mut self,
        i: &Instance,
        name: &Rc<str>,
        class: Value,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<Value> {
        let class = match class {
            Value::Class(c) => c,
            other => {
                return Err(self.fail(
                    i.pos,
                    format!("`{name}` is {}, not an object type", other.type_name()),
                ))
            }
        };
        let Some(decl) = class.decl.clone() else {
            return Err(self.fail(i.pos, format!("`{name}` cannot be built in Buzz")));
        };
        let layout = match i.layout.get() {
            Some(l) if std::ptr::eq(l.decl.as_ptr(), Rc::as_ptr(&decl)) => Cow::Borrowed(l),
            _ => self.instance_layout(i, name, &decl)?,
        };
        let finalizes = class.finalizes;
        let made = Obj::build(class, layout.fields.len(), |class, slots| {
            for (slot, fill) in slots.iter_mut().zip(layout.fields.iter()) {
                // The declaration's field, read only off the plain path.
                let field = || decl.fields.get(fill.decl_at as usize);
                let value = match fill.from {
                    FillFrom::Null => continue,
                    FillFrom::Given(at) => match i.fields.get(at as usize) {
                        Some((_, e, _)) => self.c_eval(e, fr, env)?,
                        None => continue,
                    },
                    FillFrom::Default => {
                        let Some(f) = field() else { continue };
                        let class_scope = class.scope.as_ref().unwrap_or(env);
                        self.field_default(f, class_scope, name, i.pos)?
                    }
                };
                *slot = if plainly(&fill.check, &value) {
                    value
                } else {
                    match field() {
                        Some(f) => {
                            let what = || format!("field `{}`", f.name);
                            self.conform_with(&f.ty, value, what, i.pos)?
                        }
                        None => value,
                    }
                };
            }
            Ok::<(), Flow>(())
        })?;
        let made = Value::Object(made);
        if finalizes && crate::buzz::vm::value::finalizers::is_full() {
            self.run_finalizers(i.pos)?;
        }
        Ok(made)
    }

    /// Checks that each field `i` gives is one of `decl`'s, and lays them
    /// out in `decl`'s order (kept at the site for the first type seen).
    #[inline(never)]
    fn instance_layout<'a>(
        &self,
        i: &'a Instance,
        name: &str,
        decl: &Rc<ast::ObjectDecl>,
    ) -> Eval<Cow<'a, Layout>> {
        for (field, _, pos) in &i.fields {
            if !decl.fields.iter().any(|f| same_name(&f.name, field)) {
                return Err(self.fail(*pos, format!("object `{name}` has no field `{field}`")));
            }
        }
        let fields = decl.fields.iter().enumerate().filter(|(_, f)| !f.is_static);
        let layout = Layout {
            decl: Rc::downgrade(decl),
            fields: fields
                .map(|(k, f)| Fill {
                    decl_at: u32::try_from(k).unwrap_or(u32::MAX),
                    from: fill_from(i, f),
                    check: crate::buzz::lower::tree::check(&f.ty),
                })
                .collect(),
        };
        if i.layout.get().is_some() {
            // Another object type than the first built here: laid out
            // anew at each call.
            return Ok(Cow::Owned(layout));
        }
        Ok(Cow::Borrowed(i.layout.get_or_init(|| layout)))
    }

    // ----- calls -----

    #[inline(always)]
    fn c_call_global_in(
        &mut self,
        c: &CallGlobal,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<Value> {
        if let Res::Global { hint } = c.res.get() {
            if let Some(closure) = global_function(env, &c.name, hint) {
                return self.c_call_closure(&closure, &c.args, c.pos, fr, env);
            }
        }
        let f = self.variable(&c.name, &c.res, env, c.at)?;
        self.c_call_value(&f, &c.args, c.pos, fr, env)
    }

    /// [`Interpreter::c_call_global_in`] answering in two registers (see [`Got`]).
    #[inline(never)]
    fn c_call_global_got(&mut self, c: &CallGlobal, fr: &mut [Value], env: &Rc<Scope>) -> Got {
        let r = self.c_call_global_in(c, fr, env);
        self.park(r)
    }

    #[inline(always)]
    fn c_call_global(&mut self, c: &CallGlobal, fr: &mut [Value], env: &Rc<Scope>) -> Eval<Value> {
        let r = self.c_call_global_got(c, fr, env);
        self.unpark(r)
    }

    fn c_call_value(
        &mut self,
        f: &Value,
        args: &Args,
        pos: Pos,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<Value> {
        if let Value::Function(closure) = f {
            return self.c_call_closure(closure, args, pos, fr, env);
        }
        let values = self.c_arguments(args, fr, env)?;
        self.call_value(f, values, pos)
            .map_err(|flow| self.place_refused(flow, pos, args))
    }

    /// A call of the Buzz function `closure`: by slot when the arguments
    /// fill its parameters in order, else through the general path.
    #[inline(always)]
    fn c_call_closure(
        &mut self,
        closure: &Rc<Closure>,
        args: &Args,
        pos: Pos,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<Value> {
        let decl = &closure.decl;
        if !decl.frame.get().method && closure.type_args.is_empty() && in_order(decl, args) {
            let callee = Callee {
                decl,
                parent: &closure.scope,
                this: None,
            };
            return self.c_call_direct(callee, args, pos, fr, env);
        }
        let values = self.c_arguments(args, fr, env)?;
        self.call_value(&Value::Function(closure.clone()), values, pos)
    }

    /// [`Interpreter::c_call_direct`] of a method on its receiver: in
    /// one Rust frame when it is small (see [`Interpreter::call_small`]).
    #[inline(always)]
    fn c_call_method_direct(
        &mut self,
        callee: Callee<'_>,
        args: &Args,
        pos: Pos,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<Value> {
        let decl = callee.decl;
        if let (Some(f), true) = (self.compiled_of(decl), decl.frame.get().method) {
            if f.own.is_none()
                && f.size <= SMALL_FRAME
                && args.values.len() < f.size
                && Rc::ptr_eq(&self.file, &decl.file)
            {
                let place = (callee.parent, pos);
                let r = self.call_small::<1>((decl, f), callee.this, args, place, fr, env);
                return self.unpark(r);
            }
        }
        self.c_call_direct(callee, args, pos, fr, env)
    }

    /// A call whose arguments fill the parameters in order: each argument
    /// evaluated straight into the callee's flat frame.
    #[inline(always)]
    fn c_call_direct(
        &mut self,
        callee: Callee<'_>,
        args: &Args,
        pos: Pos,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<Value> {
        let decl = callee.decl;
        let Some(f) = self.compiled_of(decl) else {
            return Err(self.not_lowered(pos));
        };
        if callee.this.is_none()
            && !decl.frame.get().method
            && f.own.is_none()
            && f.size <= SMALL_FRAME
            && args.values.len() <= f.size
            && Rc::ptr_eq(&self.file, &decl.file)
        {
            let place = (callee.parent, pos);
            let r = self.call_small::<0>((decl, f), None, args, place, fr, env);
            return self.unpark(r);
        }
        let fill = |it: &mut Self, frame: &mut [Value]| {
            let first = usize::from(decl.frame.get().method);
            for (i, e) in args.values.iter().enumerate() {
                frame[first + i] = it.c_eval(e, fr, env)?;
            }
            Ok(())
        };
        let n = args.values.len();
        self.with_frame((decl, f), n, callee.this, fill, (callee.parent, pos))
    }

    /// `receiver.name(…)`: a built-in method, a method of an object, a
    /// module's function, or a field holding a function.
    #[inline(always)]
    fn c_call_method_in(
        &mut self,
        c: &CallMethod,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<Value> {
        if let Expr::Global { name, res, .. } = &c.receiver {
            if let Some(native) = module_native(env, name, res, &c.name, &c.cache) {
                return self.c_call_native(&native, &c.args, c.pos, fr, env);
            }
        }
        // The method's id and name go to `call_builtin` as two arguments:
        // as one tuple, built by two stores and copied by a 16-byte load
        // across them, it stalled (a sixth of `for`'s time, by perf).
        let (id, name) = (c.method, &*c.name);
        if let (true, Expr::Local(at)) = (c.late, &c.receiver) {
            let at = *at as usize;
            if methods::is_builtin_receiver(&fr[at]) {
                let r = self.c_builtin(&c.args, fr, env, |it, fr, args| {
                    methods::call_builtin(it, &fr[at], id, name, args, c.at)
                });
                return self.unpark(r);
            }
        }
        let receiver = self.c_subject(&c.receiver, fr, env)?;
        if c.optional && receiver.is_null() {
            return Ok(Value::Null);
        }
        if methods::is_builtin_receiver(&receiver) {
            let r = self.c_builtin(&c.args, fr, env, |it, _, args| {
                methods::call_builtin(it, &receiver, id, name, args, c.at)
            });
            return self.unpark(r);
        }
        if let Some((decl, class_scope)) = method_of(&receiver, &c.name, &c.cache) {
            if in_order(&decl, &c.args) {
                if let Some(f) = self.compiled_of(&decl) {
                    if let Some(acc) = &f.accessor {
                        let callee = (&*decl, f, acc);
                        let (args, pos) = (&c.args, c.pos);
                        let scope = &class_scope;
                        let r = self.c_accessor_got(callee, receiver, args, scope, pos, fr, env);
                        return self.unpark(r);
                    }
                }
                let callee = Callee {
                    decl: &decl,
                    parent: &class_scope,
                    this: Some(receiver),
                };
                return self.c_call_method_direct(callee, &c.args, c.pos, fr, env);
            }
            let values = self.c_arguments(&c.args, fr, env)?;
            return self.call_function(&decl, &class_scope, Some(receiver), &[], values, c.pos);
        }
        let f = match &receiver {
            Value::Module(m) => m.functions.get_at_site(&c.name, &c.cache),
            _ => None,
        };
        let f = match f {
            Some(f) => f,
            None => self.field(&receiver, &c.name, c.at)?,
        };
        let values = self.c_arguments(&c.args, fr, env)?;
        self.call_value(&f, values, c.pos)
            .map_err(|flow| self.place_refused(flow, c.pos, &c.args))
    }

    /// [`Interpreter::c_call_method_in`] answering in two registers (see [`Got`]).
    #[inline(never)]
    fn c_call_method_got(&mut self, c: &CallMethod, fr: &mut [Value], env: &Rc<Scope>) -> Got {
        let r = self.c_call_method_in(c, fr, env);
        self.park(r)
    }

    /// Evaluates a built-in method's arguments (values only) and gives
    /// them to `call`: on the stack for up to two, the commonest. Answers
    /// in two registers ([`Got`]): `call`'s `Eval`, moved past the drop of
    /// the arguments, was read back across the two stores that wrote it
    /// (half of `c_call_method`'s samples in `for`, by perf).
    #[inline]
    fn c_builtin(
        &mut self,
        args: &Args,
        fr: &mut [Value],
        env: &Rc<Scope>,
        call: impl FnOnce(&mut Self, &mut [Value], &[Value]) -> Eval<Value>,
    ) -> Got {
        match &args.values[..] {
            [] => {
                let result = call(self, fr, &[]);
                self.park(result)
            }
            [x] => {
                let a = match self.c_eval(x, fr, env) {
                    Ok(a) => a,
                    Err(flow) => return self.park(Err(flow)),
                };
                let result = call(self, fr, std::slice::from_ref(&a));
                let result = self.park(result);
                discard(a);
                result
            }
            [x, y] => {
                let pair = match self.c_eval(x, fr, env) {
                    Ok(a) => match self.c_eval(y, fr, env) {
                        Ok(b) => [a, b],
                        Err(flow) => {
                            discard(a);
                            return self.park(Err(flow));
                        }
                    },
                    Err(flow) => return self.park(Err(flow)),
                };
                let result = call(self, fr, &pair);
                let result = self.park(result);
                let [a, b] = pair;
                discard(a);
                discard(b);
                result
            }
            _ => {
                let values = match self.c_positional(args, fr, env) {
                    Ok(values) => values,
                    Err(flow) => return self.park(Err(flow)),
                };
                let result = call(self, fr, &values);
                let result = self.park(result);
                self.give_back_positional(values);
                result
            }
        }
    }

    /// A call of a native function with its arguments evaluated straight
    /// into the native call's own lists (no argument list made).
    fn c_call_native(
        &mut self,
        native: &NativeFunction,
        args: &Args,
        pos: Pos,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<Value> {
        let fill = |it: &mut Self, names: &mut Vec<_>, values: &mut Vec<_>| {
            for (name, e) in args.names.iter().zip(&args.values) {
                let v = it.c_eval(e, fr, env)?;
                names.push(name.clone());
                values.push(v);
            }
            Ok(())
        };
        self.call_native_with(native, pos, fill)
            .map_err(|flow| self.place_refused(flow, pos, args))
    }

    /// The arguments of a built-in method: values only.
    fn c_positional(&mut self, args: &Args, fr: &mut [Value], env: &Rc<Scope>) -> Eval<Vec<Value>> {
        let mut values = self.spare_positional();
        for e in &args.values {
            match self.c_eval(e, fr, env) {
                Ok(v) => values.push(v),
                Err(flow) => {
                    self.give_back_positional(values);
                    return Err(flow);
                }
            }
        }
        Ok(values)
    }

    /// Arguments as the general call path takes them: names and values.
    pub(super) fn c_arguments(
        &mut self,
        args: &Args,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<Named> {
        let mut out = self.spare_args();
        out.reserve(args.values.len());
        for (name, e) in args.names.iter().zip(&args.values) {
            out.push((name.clone(), self.c_eval(e, fr, env)?));
        }
        Ok(out)
    }
}

/// The native function `module\member` names, when `module` is a
/// top-level name found at its hint holding a module (as `vm::names::global`
/// finds it first): reading it there has no effect, so the call
/// may skip making the module's value.
#[inline]
fn module_native(
    env: &Rc<Scope>,
    module: &str,
    res: &Resolved,
    member: &str,
    cache: &MemberCache,
) -> Option<Rc<NativeFunction>> {
    let Res::Global { hint } = res.get() else {
        return None;
    };
    let vars = env.root().vars.borrow();
    let slot = vars.get(hint as usize)?;
    let Value::Module(m) = &slot.value else {
        return None;
    };
    if !same_name(&slot.name, module) {
        return None;
    }
    match m.functions.get_at_site(member, cache)? {
        Value::Native(native) => Some(native),
        other => {
            drop(vars);
            drop(other);
            None
        }
    }
}

/// Whether `v` is what `check` asks for with nothing to infer, widen or
/// record: only ever true where `vm::conform::plainly_conforms` is.
#[inline(always)]
pub(super) fn plainly(check: &Check, v: &Value) -> bool {
    match (check, v) {
        (Check::Int, Value::Int(_)) | (Check::Double, Value::Double(_)) => true,
        (Check::Object(_, true), Value::Null) => true,
        (Check::Object(name, _), Value::Object(o)) => {
            o.class.decl.is_some()
                && o.class.name.as_ptr() == name.as_ptr()
                && o.class.name.len() == name.len()
        }
        _ => false,
    }
}

/// Where the field `f` of an instance built at `i` gets its value: the
/// field `i` gives by that name, else null for an optional field without
/// a default (as `field_default` gives it, and as its type takes it),
/// else its default (or the error that it has none).
fn fill_from(i: &Instance, f: &ast::FieldDecl) -> FillFrom {
    let at = i.fields.iter().position(|(n, _, _)| same_name(n, &f.name));
    match at.and_then(|at| u32::try_from(at).ok()) {
        Some(at) => FillFrom::Given(at),
        None if f.default.is_none() && matches!(f.ty, Type::Optional(_)) => FillFrom::Null,
        None => FillFrom::Default,
    }
}

/// Whether `args` give `decl`'s parameters exactly, in order
/// (positionally, or each named after the parameter in its place), in a
/// laid-out frame: then the call may bind them by slot.
#[inline(always)]
pub(super) fn in_order(decl: &Rc<FunDecl>, args: &Args) -> bool {
    decl.frame.get().resolved
        && args.names.len() == decl.params.len()
        && (args.positional || named_in_order(decl, args))
}

#[inline(never)]
fn named_in_order(decl: &Rc<FunDecl>, args: &Args) -> bool {
    if std::ptr::eq(args.ordered.borrow().as_ptr(), Rc::as_ptr(decl)) {
        return true;
    }
    let ordered = args.names.iter().zip(&decl.params).all(|(name, param)| {
        name.as_ref()
            .is_none_or(|name| same_name(name, &param.name))
    });
    if ordered {
        *args.ordered.borrow_mut() = Rc::downgrade(decl);
    }
    ordered
}

/// The fast form of an arithmetic tree: `None` when an operand is not a
/// number or the result needs the general path (an overflow, a division
/// by zero, an operator on a bool), which then computes it or fails.
fn num(n: &Num, fr: &[Value], env: &Rc<Scope>) -> Option<N> {
    match n {
        Num::Const(c) => Some(*c),
        Num::Local(i) => number(fr.get(*i as usize)?),
        Num::Field(i, name, cache) => num_field(fr.get(*i as usize)?, name, cache),
        Num::Global(name, res) => num_global(env, name, res),
        Num::Item(i, index) => {
            let N::I(k) = operand(index, fr, env)? else {
                return None;
            };
            num_item(fr.get(*i as usize)?, k)
        }
        Num::Len(i) => match fr.get(*i as usize)? {
            Value::Str(s) => Some(N::I(s.len() as i64)),
            Value::List(l) => Some(N::I(l.items.borrow().len() as i64)),
            _ => None,
        },
        Num::FieldItem(item) => {
            let (i, name, cache, index) = &**item;
            let N::I(k) = operand(index, fr, env)? else {
                return None;
            };
            num_field_item(fr.get(*i as usize)?, name, cache, k)
        }
        Num::Bin(op, ab) => arith(*op, operand(&ab.0, fr, env)?, operand(&ab.1, fr, env)?),
        Num::Neg(x) => match num(x, fr, env)? {
            N::I(i) => i.checked_neg().map(N::I),
            N::D(d) => Some(N::D(-d)),
            N::B(_) => None,
        },
    }
}

/// [`num`] for a tree whose every leaf is a `double` and every operator
/// an arithmetic one (the commonest shape in numeric loops): unboxed
/// `f64`s all the way, computed as [`double_arith`] computes them; `None`
/// as soon as a leaf is anything else, for [`num`] to do it in general.
#[inline(never)]
pub(super) fn double_tree(n: &Num, fr: &[Value], env: &Rc<Scope>) -> Option<f64> {
    match n {
        Num::Const(N::D(d)) => Some(*d),
        Num::Local(i) => match fr.get(*i as usize)? {
            Value::Double(d) => Some(d.get()),
            _ => None,
        },
        Num::Field(i, name, cache) => match fr.get(*i as usize)? {
            Value::Object(o) => match *o.field_at_site(name, cache)? {
                Value::Double(d) => Some(d.get()),
                _ => None,
            },
            _ => None,
        },
        Num::Bin(op, ab) => {
            let x = double_leaf(&ab.0, fr, env)?;
            let y = double_leaf(&ab.1, fr, env)?;
            match op {
                BinOp::Add => Some(x + y),
                BinOp::Sub => Some(x - y),
                BinOp::Mul => Some(x * y),
                BinOp::Div => Some(x / y),
                BinOp::Rem => Some(methods::double_rem(x, y)),
                _ => None,
            }
        }
        Num::Neg(x) => Some(-double_tree(x, fr, env)?),
        Num::Global(name, res) => match num_global(env, name, res)? {
            N::D(d) => Some(d),
            _ => None,
        },
        Num::Const(_) | Num::Item(..) | Num::Len(_) | Num::FieldItem(_) => None,
    }
}

/// [`double_tree`] with a literal, a local, a local's field or a
/// top-level name read here, not in a call. Its first arms repeat
/// `double_tree`'s on purpose: a shared `#[inline(always)]` reader of the
/// three leaves cost nbody 4% and spectral 2.6% more instructions
/// (callgrind, 2026-12-02).
#[inline(always)]
fn double_leaf(n: &Num, fr: &[Value], env: &Rc<Scope>) -> Option<f64> {
    match n {
        Num::Const(N::D(d)) => Some(*d),
        Num::Local(i) => match fr.get(*i as usize)? {
            Value::Double(d) => Some(d.get()),
            _ => None,
        },
        Num::Field(i, name, cache) => match fr.get(*i as usize)? {
            Value::Object(o) => match *o.field_at_site(name, cache)? {
                Value::Double(d) => Some(d.get()),
                _ => None,
            },
            _ => None,
        },
        // fasta's `(this.last * IA + IC) % IM`: a top-level constant read
        // here, not one call down.
        Num::Global(name, res) => match num_global(env, name, res)? {
            N::D(d) => Some(d),
            _ => None,
        },
        _ => double_tree(n, fr, env),
    }
}

/// [`num`] with a literal or a local read here, not in a call.
#[inline(always)]
pub(super) fn operand(n: &Num, fr: &[Value], env: &Rc<Scope>) -> Option<N> {
    match n {
        Num::Const(c) => Some(*c),
        Num::Local(i) => number(fr.get(*i as usize)?),
        Num::Bin(op, ab) => arith(*op, leaf(&ab.0, fr, env)?, leaf(&ab.1, fr, env)?),
        _ => num(n, fr, env),
    }
}

/// [`operand`] one level down: leaves here, deeper trees in [`num`].
#[inline(always)]
fn leaf(n: &Num, fr: &[Value], env: &Rc<Scope>) -> Option<N> {
    match n {
        Num::Const(c) => Some(*c),
        Num::Local(i) => number(fr.get(*i as usize)?),
        _ => num(n, fr, env),
    }
}

/// A top-level name's value, when it is a number, found as
/// `vm::names::global` finds it (at the hint, else the first binding of that name,
/// the hint then moved); anything else is left to the general path.
#[inline(never)]
fn num_global(env: &Rc<Scope>, name: &str, res: &Resolved) -> Option<N> {
    let Res::Global { hint } = res.get() else {
        return None;
    };
    let vars = env.root().vars.borrow();
    if let Some(slot) = vars.get(hint as usize) {
        if same_name(&slot.name, name) {
            return number(&slot.value);
        }
    }
    let at = vars.iter().position(|s| same_name(&s.name, name))?;
    res.set(Res::Global {
        hint: u32::try_from(at).ok()?,
    });
    number(&vars.get(at)?.value)
}

/// `object.name`, when it is a number.
#[inline(never)]
fn num_field(object: &Value, name: &str, cache: &MemberCache) -> Option<N> {
    match object {
        Value::Object(o) => number(&*o.field_at_site(name, cache)?),
        _ => None,
    }
}

/// `object.name[k]`, when it is a number, read in place.
#[inline(never)]
fn num_field_item(object: &Value, name: &str, cache: &MemberCache, k: i64) -> Option<N> {
    let Value::Object(o) = object else {
        return None;
    };
    let field = o.field_at_site(name, cache)?;
    let Value::List(l) = &*field else {
        return None;
    };
    let items = l.items.borrow();
    number(items.get(usize::try_from(k).ok()?)?)
}

/// `list[k]`, when it is a number.
#[inline(never)]
fn num_item(list: &Value, k: i64) -> Option<N> {
    match list {
        Value::List(l) => number(l.items.borrow().get(usize::try_from(k).ok()?)?),
        _ => None,
    }
}

#[inline]
fn number(v: &Value) -> Option<N> {
    match v {
        Value::Int(i) => Some(N::I(*i)),
        Value::Double(d) => Some(N::D(d.get())),
        _ => None,
    }
}

/// `x op y` as [`methods::binary`] computes it on numbers (an `int`
/// beside a `double` is read as a `double`), where it cannot fail.
///
/// Inlined always, with [`int_arith`] never: left to the optimizer, the
/// pair went one way or the other with unrelated changes elsewhere in the
/// crate, and the other way costs `method_calls` 1% more instructions
/// (`benches/compare.py --callgrind`).
#[inline(always)]
fn arith(op: BinOp, x: N, y: N) -> Option<N> {
    match (x, y) {
        (N::I(a), N::I(b)) => int_arith(op, a, b),
        (N::D(a), N::D(b)) => double_arith(op, a, b),
        (N::I(a), N::D(b)) if !matches!(op, BinOp::Eq | BinOp::Ne) => double_arith(op, a as f64, b),
        (N::D(a), N::I(b)) if !matches!(op, BinOp::Eq | BinOp::Ne) => double_arith(op, a, b as f64),
        _ => None,
    }
}

#[inline(never)]
fn int_arith(op: BinOp, a: i64, b: i64) -> Option<N> {
    Some(match op {
        BinOp::Add => N::I(a.checked_add(b)?),
        BinOp::Sub => N::I(a.checked_sub(b)?),
        BinOp::Mul => N::I(a.checked_mul(b)?),
        BinOp::Div => N::I(a.checked_div(b)?),
        BinOp::Rem => N::I(methods::floored(a.checked_rem(b)?, b)),
        _ => N::B(int_compare(op, a, b)?),
    })
}

fn double_arith(op: BinOp, a: f64, b: f64) -> Option<N> {
    Some(match op {
        BinOp::Add => N::D(a + b),
        BinOp::Sub => N::D(a - b),
        BinOp::Mul => N::D(a * b),
        BinOp::Div => N::D(a / b),
        BinOp::Rem => N::D(methods::double_rem(a, b)),
        BinOp::Lt => N::B(a < b),
        BinOp::Le => N::B(a <= b),
        BinOp::Gt => N::B(a > b),
        BinOp::Ge => N::B(a >= b),
        _ => return None,
    })
}

/// Stores `v` in `place`; the old value dropped only when it owns
/// something (no drop glue called for a scalar).
#[inline]
pub(super) fn put(place: &mut Value, v: Value) {
    let old = std::mem::replace(place, v);
    discard(old);
}

/// Drops `v`, skipping the drop glue for a scalar.
#[inline]
pub(super) fn discard(v: Value) {
    match v {
        Value::Null | Value::Bool(_) | Value::Int(_) | Value::Double(_) => std::mem::forget(v),
        other => drop(other),
    }
}

/// An operand read in place when reading it cannot fail or run code.
#[inline]
fn peek<'a>(e: &'a Expr, fr: &'a [Value]) -> Option<&'a Value> {
    match e {
        Expr::Const(v) => Some(v),
        Expr::Local(i) => fr.get(*i as usize),
        _ => None,
    }
}

/// `a op b` on two ints or two doubles where it cannot fail.
#[inline]
pub(super) fn scalar_fast(op: BinOp, a: &Value, b: &Value) -> Option<Value> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => int_fast(op, *x, *y),
        (Value::Double(x), Value::Double(y)) => double_fast(op, x.get(), y.get()),
        _ => None,
    }
}

/// The `int` an operand is when reading it cannot fail: a literal, or a
/// local holding one.
/// An operation on two `int`s at hand (a local, a literal).
#[inline(always)]
fn int_pair(arith: &(Num, Expr, std::cell::Cell<bool>), fr: &[Value]) -> Option<Value> {
    let Expr::Binary(op, operands, _) = &arith.1 else {
        return None;
    };
    int_fast(*op, peek_int(&operands.0, fr)?, peek_int(&operands.1, fr)?)
}

/// A condition comparing two `int`s at hand (a local, a literal), decided
/// where it is tested: no call, no frame (fib's `n < 2`).
#[inline(always)]
fn int_condition(cond: &Cond, fr: &[Value]) -> Option<bool> {
    let general = match &cond.expr {
        Expr::Arith(arith) => &arith.1,
        other => other,
    };
    let Expr::Binary(op, operands, _) = general else {
        return None;
    };
    int_compare(*op, peek_int(&operands.0, fr)?, peek_int(&operands.1, fr)?)
}

#[inline]
fn peek_int(e: &Expr, fr: &[Value]) -> Option<i64> {
    match e {
        Expr::Const(Value::Int(i)) => Some(*i),
        Expr::Local(i) => match fr[*i as usize] {
            Value::Int(n) => Some(n),
            _ => None,
        },
        _ => None,
    }
}
