//! Lowering a function's syntax tree to the compiled form. Nothing is
//! declined: every statement and expression kind lowers.
//!
//! A nested `fun` or lambda that captures (the resolver marks it:
//! `Frame::captures`) copies what it captures when nothing of it can
//! change after it is made, else shares it: the function is then lowered
//! again with its own level's shared locals in a scope made at each call.
//! When a closure shares a local of a nested level (a block's, a loop
//! step's, a clause's), or the function declares a local object, enum,
//! protocol or import (their methods and defaults close over the scope),
//! every level of the function lives in scopes laid out as the
//! resolver's levels (`all_scoped`), and a `do … until` whose body declares makes a scope
//! per step. A name the resolver left to a run-time search (a generic
//! parameter, a local protocol) is read and assigned by name from the
//! environment.
//!
//! Slots mirror the resolver's levels ([`super::super::resolve`]): the
//! function's own level keeps its slot numbers, each nested level gets
//! fresh indexes after it, so no two live locals share an index.

use super::*;
use crate::buzz::lib::methods;
use crate::buzz::syntax::ast::declares;
use crate::buzz::syntax::ast::{self, Arg, ExprKind, Frame, Res, StmtKind as S, TemplatePart};

/// Lowers `decl`'s body (`None` only for a tree the resolver never saw):
/// flat first, again with more of its locals in scopes when lowering
/// finds that a closure or a declaration needs them there.
pub(super) fn function(decl: &FunDecl) -> Option<Function> {
    let frame = decl.frame.get();
    if !frame.resolved {
        return None;
    }
    let caps = decl.captured.get()?;
    let mut scoping = Scoping::Flat;
    loop {
        let mut l = Lower::new(frame);
        match scoping {
            Scoping::Flat => {}
            // A closure shares a local of this function's own level:
            // those locals move to a scope made at each call, the rest
            // stay flat.
            Scoping::Own => l.own_slots = Some(caps.own.clone()),
            // Every level lives in scopes, laid out as the resolver's.
            Scoping::All => {
                l.all_scoped = true;
                l.own_slots = Some((0..frame.size).collect());
            }
        }
        let body = l.stmts(&decl.body);
        // A generic function's closures hang from the scope of its call where
        // its type parameters are bound: that scope is its own level's.
        if body.is_some() && l.outer && !decl.generics.is_empty() {
            l.needs = l.needs.max(Scoping::Own);
        }
        let needs = match l.needs {
            // The shared local is a nested level's.
            Scoping::Own if caps.nested_shared => Scoping::All,
            needs => needs,
        };
        if needs > scoping {
            scoping = needs;
            continue;
        }
        let body = body?;
        let defaults = decl
            .params
            .iter()
            .map(|p| maybe(p.default.as_ref(), scoped_expr));
        let defaults = defaults.collect::<Option<_>>()?;
        let checks = decl.params.iter().map(|p| check(&p.ty)).collect();
        let accessor = super::accessor::Accessor::of(decl, &body);
        let code = flat::emit(body, l.next as usize);
        return Some(Function {
            size: code.size,
            flat: code,
            checks,
            accessor,
            own: l.own_slots,
            defaults,
        });
    }
}

/// Lowers a top-level block (a `test` body), run in a scope of its own
/// under the globals.
pub(in crate::buzz) fn block(body: &[ast::Stmt]) -> Option<(Vec<Stmt>, usize)> {
    top(|l| l.block(body))
}

/// Lowers an expression of the file's top level (a global's initial
/// value, a static field's, an enum case's), run once in a frame of its
/// own under the globals.
pub(in crate::buzz) fn top_expr(e: &ast::Expr) -> Option<(Expr, usize)> {
    top(|l| l.expr(e))
}

/// Lowers an expression read in a scope laid out as the resolver's (a
/// default value, see `vm/defaults.rs`): every local it names is read
/// by levels out from that scope, its environment.
pub(in crate::buzz) fn scoped_expr(e: &ast::Expr) -> Option<ScopedExpr> {
    let mut l = Lower::new(Frame::default());
    l.all_scoped = true;
    let expr = l.expr(e)?;
    Some(ScopedExpr {
        expr,
        size: l.next as usize,
    })
}

/// Lowers a part of the top level with `f`, and the frame size it needs.
/// There is no function level: nothing resolves to the first (empty)
/// level and no scope stands for it. When a closure shares a local, it is
/// lowered again with every level in scopes.
fn top<T>(f: impl Fn(&mut Lower) -> Option<T>) -> Option<(T, usize)> {
    let mut l = Lower::new(Frame::default());
    l.no_own_level = true;
    let mut lowered = f(&mut l);
    if lowered.is_none() && l.needs > Scoping::Flat {
        l = Lower::new(Frame::default());
        l.no_own_level = true;
        l.all_scoped = true;
        lowered = f(&mut l);
    }
    Some((lowered?, l.next as usize))
}

/// Where a function's locals live, from the cheapest.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Scoping {
    /// All in the flat frame.
    Flat,
    /// The own level's shared locals in a scope made at each call.
    Own,
    /// Every level in scopes laid out as the resolver's (`all_scoped`).
    All,
}

struct Lower {
    /// Each nested level's map from the resolver's slot to a frame index;
    /// the function's own level (first) maps each slot to itself.
    levels: Vec<Vec<(u32, u32)>>,
    own: u32,
    next: u32,
    /// Lowering the general form of an [`Expr::Arith`]: no nested one.
    in_arith: bool,
    /// Reads an enclosing function's local, or makes a closure that
    /// copies this one's: both count levels out from the environment.
    outer: bool,
    /// What lowering found the function needs beyond what it was lowered
    /// with: a closure sharing (not copying) a local needs `own_slots`, a
    /// local declaration every level in scopes.
    needs: Scoping,
    /// The slots of this function's own level kept in a scope made at
    /// each call (the environment inside the body), for closures to share.
    own_slots: Option<Box<[u32]>>,
    /// Every local of every level lives in a scope: the own level's in
    /// the call's, each nested level's in one made where the level starts
    /// ([`StmtKind::Scoped`]), so the environment at each point is the
    /// scope of the resolver's level there, and a closure closes over it.
    all_scoped: bool,
    /// Lowering the top level: the first level stands for no scope (a
    /// closure's chain of copies does not count it).
    no_own_level: bool,
}

impl Lower {
    fn new(frame: Frame) -> Lower {
        Lower {
            levels: vec![Vec::new()],
            own: frame.size,
            next: frame.size,
            in_arith: false,
            outer: false,
            needs: Scoping::Flat,
            own_slots: None,
            all_scoped: false,
            no_own_level: false,
        }
    }

    // ----- levels -----

    fn with_level<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<T> {
        self.levels.push(Vec::new());
        let out = f(self);
        self.levels.pop();
        out
    }

    /// The frame index of the resolver's `(depth, slot)`; `None` for a
    /// local outside this function.
    fn local(&mut self, depth: u32, slot: u32) -> Option<u32> {
        if self.all_scoped {
            return None;
        }
        let at = self.levels.len().checked_sub(1 + depth as usize)?;
        if at == 0 {
            return (slot < self.own && !self.in_scope(depth, slot)).then_some(slot);
        }
        let level = self.levels.get_mut(at)?;
        if let Some((_, index)) = level.iter().find(|(s, _)| *s == slot) {
            return Some(*index);
        }
        let index = self.next;
        self.next = self.next.checked_add(1)?;
        level.push((slot, index));
        Some(index)
    }

    /// Whether the resolver's `(depth, slot)` is one of the own level's
    /// locals kept in the call's scope.
    fn in_scope(&self, depth: u32, slot: u32) -> bool {
        if self.all_scoped {
            return true;
        }
        let own_level = depth as usize + 1 == self.levels.len();
        own_level && self.own_slots.as_ref().is_some_and(|o| o.contains(&slot))
    }

    /// Levels out from the environment of a local kept in a scope (the
    /// call's, a nested level's when all are scoped, or an enclosing
    /// function's); `None` for one in the flat frame. Notes a read of an
    /// enclosing function's local.
    fn scoped_at(&mut self, depth: u32, slot: u32) -> Option<u32> {
        if self.outside(depth).is_some() {
            self.outer = true;
        }
        if self.all_scoped {
            return Some(depth);
        }
        if self.in_scope(depth, slot) {
            return Some(0);
        }
        self.outside(depth)
    }

    /// Levels out from the environment of a local `depth` levels out from
    /// here, when it is outside this function.
    fn outside(&self, depth: u32) -> Option<u32> {
        let levels = u32::try_from(self.levels.len()).ok()?;
        let base = u32::from(self.own_slots.is_some());
        depth.checked_sub(levels).map(|out| out + base)
    }

    /// A store into a scope: `out` levels out from the environment (the
    /// call's own scope is 0 when the function keeps one).
    fn store_scope(
        &mut self,
        (out, slot): (u32, u32),
        (name, at): (&Rc<str>, Pos),
        op: Option<BinOp>,
        value: &ast::Expr,
        pos: Pos,
    ) -> Option<Expr> {
        Some(Expr::Extra(Box::new(Extra::Store(Box::new(ScopeStore {
            out,
            slot,
            name: name.clone(),
            op,
            value: self.expr(value)?,
            at,
            pos,
        })))))
    }

    /// The frame index a declaration binds.
    fn declared(&mut self, slot: &Resolved) -> Option<u32> {
        match slot.get() {
            Res::Local { depth: 0, slot, .. } => self.local(0, slot),
            _ => None,
        }
    }

    /// The frame index a binding (of a `foreach`, an `if (…) -> x`, a
    /// `catch`) is written to: its slot, or when all are scoped a fresh
    /// index its level's scope takes it from (see [`Lower::level`]).
    fn binding(&mut self, res: &Resolved) -> Option<u32> {
        if !self.all_scoped {
            return self.declared(res);
        }
        let index = self.next;
        self.next = self.next.checked_add(1)?;
        Some(index)
    }

    /// A nested level's statements: as they are, or when all are scoped
    /// in a scope made each time they run, which first takes each of
    /// `bound` (a binding's resolution, its frame index) from the frame.
    fn level(&self, bound: &[(&Resolved, u32)], body: Vec<Stmt>) -> Option<Vec<Stmt>> {
        if !self.all_scoped {
            return Some(body);
        }
        let mut stmts = Vec::with_capacity(bound.len() + body.len());
        for (res, index) in bound {
            let Res::Local { depth: 0, slot, .. } = res.get() else {
                return None;
            };
            let kind = StmtKind::VarInScope {
                slot,
                init: Some(Expr::Local(*index)),
                ty: None,
                name: Rc::from(""),
            };
            stmts.push(Stmt {
                kind,
                pos: Pos::default(),
            });
        }
        let pos = body.first().map_or(Pos::default(), |s| s.pos);
        stmts.extend(body);
        Some(vec![Stmt {
            kind: StmtKind::Scoped(stmts),
            pos,
        }])
    }

    // ----- statements -----

    fn stmts(&mut self, body: &[ast::Stmt]) -> Option<Vec<Stmt>> {
        body.iter().map(|s| self.stmt(s)).collect()
    }

    /// A block: a level of its own when it declares a name.
    fn block(&mut self, body: &[ast::Stmt]) -> Option<Vec<Stmt>> {
        if declares(body) {
            self.with_level(|l| {
                let body = l.stmts(body)?;
                l.level(&[], body)
            })
        } else {
            self.stmts(body)
        }
    }

    fn stmt(&mut self, stmt: &ast::Stmt) -> Option<Stmt> {
        let kind = match &stmt.kind {
            S::Expr(e) => self.expr_stmt(e)?,
            S::Var(decl) => self.var(decl)?,
            S::Block(body) => StmtKind::Block(self.block(body)?),
            S::If {
                cond,
                binding,
                then,
                otherwise,
            } => self.if_stmt(cond, binding.as_ref(), then, otherwise.as_deref())?,
            S::While { cond, body, label } => StmtKind::While {
                cond: self.cond(cond)?,
                body: self.block(body)?,
                label: label.clone(),
            },
            S::DoUntil { body, cond, label } => self.do_until(body, cond, label)?,
            S::For {
                init,
                cond,
                step,
                body,
                label,
            } => self.with_level(|l| {
                let each = StmtKind::For {
                    init: l.stmts(init)?,
                    cond: maybe(cond.as_ref(), |c| l.cond(c))?,
                    body: l.block(body)?,
                    step: step
                        .iter()
                        .map(|e| l.step(e, stmt.pos))
                        .collect::<Option<_>>()?,
                    label: label.clone(),
                };
                if !l.all_scoped {
                    return Some(each);
                }
                // One scope for the initializers.
                let pos = stmt.pos;
                Some(StmtKind::Scoped(vec![Stmt { kind: each, pos }]))
            })?,
            S::ForEach {
                key,
                value: _,
                iterable,
                body,
                label,
                slots,
            } => self.foreach(key.is_some(), iterable, body, label, slots)?,
            S::Break(label) => StmtKind::Break(label.clone()),
            S::Continue(label) => StmtKind::Continue(label.clone()),
            S::Return(value) => StmtKind::Return(maybe(value.as_ref(), |e| self.expr(e))?),
            S::Throw(e) => StmtKind::Throw(self.expr(e)?),
            S::Out(e) => StmtKind::Out(self.expr(e)?),
            S::Fun(decl) => self.local_fun(decl, stmt.pos)?,
            S::Try { body, clauses } => self.try_stmt(body, clauses)?,
            S::Object(_) | S::Enum(_) | S::Protocol(_) | S::Import { .. } => {
                self.declaration(&stmt.kind)?
            }
            // Run by `magus test` only at the top level: nothing here.
            S::Namespace | S::Test { .. } => StmtKind::Block(Vec::new()),
        };
        Some(Stmt {
            kind,
            pos: stmt.pos,
        })
    }

    /// An expression statement; `local = v` and `local op= v` store
    /// without making the assignment's value.
    fn expr_stmt(&mut self, e: &ast::Expr) -> Option<StmtKind> {
        let flat = |l: &Self, depth, slot| {
            !l.all_scoped && !l.in_scope(depth, slot) && l.outside(depth).is_none()
        };
        if let Some(store) = e.as_local_store().filter(|s| flat(self, s.depth, s.slot)) {
            return Some(StmtKind::StoreLocal {
                slot: self.local(store.depth, store.slot)?,
                op: store.op,
                value: self.expr(store.value)?,
                pos: e.pos,
            });
        }
        if let Some(store) = self.store_field(e) {
            return Some(StmtKind::StoreField(Box::new(store?)));
        }
        Some(StmtKind::Expr(self.expr(e)?))
    }

    /// A `for` loop's step, lowered as the statement `e;` at the loop's
    /// position: `i = i + 1` then stores as a body's `i = i + 1;` does,
    /// without making the assignment's value.
    fn step(&mut self, e: &ast::Expr, pos: Pos) -> Option<Stmt> {
        let kind = self.expr_stmt(e)?;
        Some(Stmt { kind, pos })
    }

    /// `local.name op= value` as a statement, when `value` cannot rebind
    /// the local (`None` when `e` is not one; `Some(None)` when a part
    /// asks for the function to be lowered again, see [`Scoping`]).
    fn store_field(&mut self, e: &ast::Expr) -> Option<Option<StoreField>> {
        let ExprKind::Assign { target, op, value } = &e.kind else {
            return None;
        };
        let ExprKind::Field { object, name, .. } = &target.kind else {
            return None;
        };
        let ExprKind::Var(_, res) = &object.kind else {
            return None;
        };
        let Res::Local { depth, slot, .. } = res.get() else {
            return None;
        };
        if assigns(value) || self.in_scope(depth, slot) || self.outside(depth).is_some() {
            // (`in_scope` holds for every local when all are scoped.)
            return None;
        }
        let lowered = (|| {
            Some(StoreField {
                slot: self.local(depth, slot)?,
                name: name.clone(),
                cache: MemberCache::default(),
                op: *op,
                value: self.expr(value)?,
                at: target.pos,
                pos: e.pos,
            })
        })();
        Some(lowered)
    }

    fn var(&mut self, decl: &ast::VarDecl) -> Option<StmtKind> {
        if let Res::Local { depth: 0, slot, .. } = decl.slot.get() {
            if self.in_scope(0, slot) {
                return self.var_in_scope(decl, slot);
            }
        }
        let init = maybe(decl.init.as_ref(), |e| self.expr(e))?;
        if decl.ty.is_none() {
            // Nothing to check: the store of `local = value` (the slot is
            // this level's own, null until now).
            return Some(StmtKind::StoreLocal {
                slot: self.declared(&decl.slot)?,
                op: None,
                value: init.unwrap_or(Expr::Const(Value::Null)),
                pos: Pos::default(),
            });
        }
        Some(StmtKind::Var {
            slot: self.declared(&decl.slot)?,
            init,
            ty: decl.ty.clone(),
            name: decl.name.clone(),
        })
    }

    /// A declaration of a local kept in the call's scope: checked as
    /// [`StmtKind::Var`] is, then stored there.
    fn var_in_scope(&mut self, decl: &ast::VarDecl, slot: u32) -> Option<StmtKind> {
        Some(StmtKind::VarInScope {
            slot,
            init: maybe(decl.init.as_ref(), |e| self.expr(e))?,
            ty: decl.ty.clone(),
            name: decl.name.clone(),
        })
    }

    /// A local `object`, `enum`, `protocol` or `import`: its methods and
    /// defaults close over the scope it is made in, so it lowers only
    /// where every level lives in scopes (else the function is lowered
    /// again that way).
    fn declaration(&mut self, kind: &S) -> Option<StmtKind> {
        if !self.all_scoped {
            self.needs = Scoping::All;
            return None;
        }
        let declared = match kind {
            S::Object(decl) => {
                let statics = decl.fields.iter().filter(|f| f.is_static);
                let defaults = statics.map(|f| maybe(f.default.as_ref(), |e| self.expr(e)));
                Declaration::Object(decl.clone(), defaults.collect::<Option<_>>()?)
            }
            S::Enum(decl) => {
                let values = decl
                    .cases
                    .iter()
                    .map(|(_, v)| maybe(v.as_ref(), |e| self.expr(e)));
                Declaration::Enum(decl.clone(), values.collect::<Option<_>>()?)
            }
            S::Protocol(name) => Declaration::Protocol(name.clone()),
            S::Import {
                module,
                alias,
                names,
            } => Declaration::Import {
                module: module.clone(),
                alias: alias.clone(),
                names: names.clone(),
            },
            _ => return None,
        };
        Some(StmtKind::Declare(Box::new(declared)))
    }

    fn if_stmt(
        &mut self,
        cond: &ast::Expr,
        binding: Option<&ast::IfBinding>,
        then: &[ast::Stmt],
        otherwise: Option<&ast::Stmt>,
    ) -> Option<StmtKind> {
        let Some(b) = binding else {
            return Some(StmtKind::If {
                cond: self.cond(cond)?,
                then: self.block(then)?,
                otherwise: self.otherwise(otherwise)?,
            });
        };
        let value = self.expr(cond)?;
        let (slot, then) = self.with_level(|l| {
            let slot = l.binding(&b.slot)?;
            let then = l.stmts(then)?;
            Some((slot, l.level(&[(&b.slot, slot)], then)?))
        })?;
        Some(StmtKind::IfBind {
            value,
            slot,
            cast: b.cast.clone(),
            then,
            otherwise: self.otherwise(otherwise)?,
        })
    }

    fn otherwise(&mut self, other: Option<&ast::Stmt>) -> Option<Option<Box<Stmt>>> {
        match other {
            Some(s) => Some(Some(Box::new(self.stmt(s)?))),
            None => Some(None),
        }
    }

    fn do_until(
        &mut self,
        body: &[ast::Stmt],
        cond: &ast::Expr,
        label: &Label,
    ) -> Option<StmtKind> {
        let lower = |l: &mut Self| {
            Some(StmtKind::DoUntil {
                body: l.stmts(body)?,
                cond: l.cond(cond)?,
                label: label.clone(),
            })
        };
        if declares(body) && self.all_scoped {
            // Its condition reads the step's scope.
            self.with_level(|l| {
                let step = StepScoped {
                    body: l.stmts(body)?,
                    cond: l.cond(cond)?,
                    label: label.clone(),
                };
                Some(StmtKind::DoUntilScoped(Box::new(step)))
            })
        } else if declares(body) {
            self.with_level(lower)
        } else {
            lower(self)
        }
    }

    fn foreach(
        &mut self,
        has_key: bool,
        iterable: &ast::Expr,
        body: &[ast::Stmt],
        label: &Label,
        slots: &(Resolved, Resolved),
    ) -> Option<StmtKind> {
        let subject = self.expr(iterable)?;
        self.with_level(|l| {
            let key = if has_key {
                Some(l.binding(&slots.0)?)
            } else {
                None
            };
            let value = l.binding(&slots.1)?;
            let body = l.stmts(body)?;
            let mut bound = vec![(&slots.1, value)];
            if let Some(key) = key {
                bound.insert(0, (&slots.0, key));
            }
            Some(StmtKind::ForEach(Box::new(ForEach {
                key,
                value,
                iterable: subject,
                at: iterable.pos,
                body: l.level(&bound, body)?,
                label: label.clone(),
            })))
        })
    }

    fn cond(&mut self, e: &ast::Expr) -> Option<Cond> {
        Some(Cond {
            expr: self.expr(e)?,
            pos: e.pos,
        })
    }

    // ----- expressions -----

    fn boxed(&mut self, e: &ast::Expr) -> Option<Box<Expr>> {
        self.expr(e).map(Box::new)
    }

    fn pair(&mut self, a: &ast::Expr, b: &ast::Expr) -> Option<Box<(Expr, Expr)>> {
        Some(Box::new((self.expr(a)?, self.expr(b)?)))
    }

    fn exprs(&mut self, items: &[ast::Expr]) -> Option<Vec<Expr>> {
        items.iter().map(|e| self.expr(e)).collect()
    }

    fn expr(&mut self, e: &ast::Expr) -> Option<Expr> {
        if !self.in_arith && matches!(e.kind, ExprKind::Binary(..)) {
            if let Some(fast) = self.num(e) {
                self.in_arith = true;
                let general = self.general(e);
                self.in_arith = false;
                return Some(Expr::Arith(Box::new((fast, general?, Default::default()))));
            }
        }
        self.general(e)
    }

    /// The fast form of an arithmetic tree, or `None` when any part of it
    /// is not a plain read.
    fn num(&mut self, e: &ast::Expr) -> Option<Num> {
        let local = |l: &mut Self, x: &ast::Expr| match &x.kind {
            ExprKind::Var(_, res) => match res.get() {
                Res::Local { depth, slot, .. } => l.local(depth, slot),
                _ => None,
            },
            _ => None,
        };
        Some(match &e.kind {
            ExprKind::Int(i) => Num::Const(N::I(*i)),
            ExprKind::Double(d) => Num::Const(N::D(*d)),
            ExprKind::Var(name, res) => match res.get() {
                Res::Global { hint } => Num::Global(name.clone(), global_res(hint)),
                _ => Num::Local(local(self, e)?),
            },
            ExprKind::Field {
                object,
                name,
                optional: false,
                ..
            } => Num::Field(local(self, object)?, name.clone(), MemberCache::default()),
            ExprKind::Index {
                object,
                index,
                checked: false,
            } => match &object.kind {
                ExprKind::Field {
                    object: inner,
                    name,
                    optional: false,
                    ..
                } => Num::FieldItem(Box::new((
                    local(self, inner)?,
                    name.clone(),
                    MemberCache::default(),
                    self.num(index)?,
                ))),
                _ => Num::Item(local(self, object)?, Box::new(self.num(index)?)),
            },
            ExprKind::Binary(op, l, r) if arith_op(*op) => {
                Num::Bin(*op, Box::new((self.num(l)?, self.num(r)?)))
            }
            ExprKind::Unary(UnOp::Neg, x) => Num::Neg(Box::new(self.num(x)?)),
            ExprKind::Call { callee, args } if args.is_empty() => match &callee.kind {
                ExprKind::Field {
                    object,
                    name,
                    optional: false,
                    ..
                } if &**name == "len" => Num::Len(local(self, object)?),
                _ => return None,
            },
            _ => return None,
        })
    }

    fn general(&mut self, e: &ast::Expr) -> Option<Expr> {
        let pos = e.pos;
        Some(match &e.kind {
            ExprKind::Null | ExprKind::Void => Expr::Const(Value::Null),
            ExprKind::Bool(b) => Expr::Const(Value::bool(*b)),
            ExprKind::Int(i) => Expr::Const(Value::Int(*i)),
            ExprKind::Double(d) => Expr::Const(Value::double(*d)),
            ExprKind::Str(s) => Expr::Const(Value::str(&**s)),
            ExprKind::Bytes(b) => Expr::Const(Value::Bytes(Rc::new(Box::from(&**b)))),
            ExprKind::InferredCase(n) => Expr::Const(Value::InferredCase((&**n).into())),
            ExprKind::Var(name, res) => self.var_read(name, res, pos)?,
            ExprKind::Binary(op, l, r) => Expr::Binary(*op, self.pair(l, r)?, pos),
            ExprKind::Unary(op, x) => Expr::Unary(*op, self.boxed(x)?, pos),
            ExprKind::And(l, r) => Expr::Logic(Box::new((self.cond(l)?, self.cond(r)?)), false),
            ExprKind::Or(l, r) => Expr::Logic(Box::new((self.cond(l)?, self.cond(r)?)), true),
            ExprKind::Coalesce(l, r) => Expr::Coalesce(self.pair(l, r)?),
            ExprKind::Range(l, r) => Expr::Range(self.pair(l, r)?, l.pos),
            ExprKind::Force(x) => Expr::Force(self.boxed(x)?, pos),
            ExprKind::Is(x, ty) => Expr::Is(self.boxed(x)?, ty.clone()),
            ExprKind::TypeOf(x) => Expr::TypeOf(self.boxed(x)?),
            ExprKind::Mutable(x) => Expr::Mutable(self.boxed(x)?),
            ExprKind::Field {
                object,
                name,
                optional,
                ..
            } => Expr::Field(Box::new(Field {
                object: self.expr(object)?,
                name: name.clone(),
                optional: *optional,
                cache: MemberCache::default(),
                pos,
            })),
            ExprKind::Index {
                object,
                index,
                checked,
            } => Expr::Index(Box::new(Index {
                object: self.expr(object)?,
                index: self.expr(index)?,
                checked: *checked,
                pos,
                late: object.is_local() && !assigns(index),
            })),
            ExprKind::OptionalIndex { object, index } => {
                Expr::OptionalIndex(self.pair(object, index)?, pos)
            }
            ExprKind::Assign { target, op, value } => self.assign(target, *op, value, pos)?,
            ExprKind::Call { callee, args } => self.call(callee, args, pos)?,
            ExprKind::Template(parts) => self.template(parts)?,
            ExprKind::List(items) => Expr::List(self.exprs(items)?),
            ExprKind::Map(entries) => Expr::Map(
                entries
                    .iter()
                    .map(|(k, v)| Some((self.expr(k)?, self.expr(v)?)))
                    .collect::<Option<_>>()?,
            ),
            ExprKind::If {
                cond,
                then,
                otherwise,
            } => Expr::If(Box::new((
                self.cond(cond)?,
                self.expr(then)?,
                self.expr(otherwise)?,
            ))),
            ExprKind::Catch { body, default } => Expr::Catch(self.pair(body, default)?),
            ExprKind::Instance {
                object,
                fields,
                class,
            } => self.instance(object, fields, class, pos)?,
            ExprKind::InstanceOf { class, fields } => {
                let fields = self.fields(fields)?;
                Expr::InstanceOf(Box::new(Instance {
                    name: Rc::from(""),
                    class: self.expr(class)?,
                    fields,
                    pos,
                    layout: OnceCell::new(),
                }))
            }
            _ => Expr::Extra(Box::new(self.extra(e)?)),
        })
    }

    /// The constructs [`Extra`] holds; `None` for a lambda.
    fn extra(&mut self, e: &ast::Expr) -> Option<Extra> {
        let pos = e.pos;
        Some(match &e.kind {
            ExprKind::Block(body) => Extra::Block(self.block(body)?),
            ExprKind::Match {
                subject,
                arms,
                otherwise,
            } => Extra::Match(Match {
                subject: self.expr(subject)?,
                arms: arms
                    .iter()
                    .map(|a| Some((self.exprs(&a.conditions)?, self.expr(&a.body)?)))
                    .collect::<Option<_>>()?,
                otherwise: maybe(otherwise.as_deref(), |o| self.expr(o))?,
                pos,
            }),
            ExprKind::As {
                value,
                ty,
                optional,
            } => Extra::As(self.expr(value)?, ty.clone(), *optional, pos),
            ExprKind::Pattern(source) => Extra::Pattern(source.clone(), pos),
            ExprKind::TypeValue(ty) => Extra::TypeValue(ty.clone()),
            ExprKind::TypedList { ty, items } => Extra::TypedList(
                (**ty).clone(),
                items
                    .iter()
                    .map(|i| Some((self.expr(i)?, i.pos)))
                    .collect::<Option<_>>()?,
            ),
            ExprKind::AnonObject(fields) => Extra::AnonObject(
                fields
                    .iter()
                    .map(|(n, e)| Some((n.clone(), self.expr(e)?)))
                    .collect::<Option<_>>()?,
            ),
            ExprKind::AsyncCall(call) => self.async_call(call, pos)?,
            ExprKind::Resume(x) => Extra::Resume(self.expr(x)?, x.pos, pos, false),
            ExprKind::Resolve(x) => Extra::Resume(self.expr(x)?, x.pos, pos, true),
            ExprKind::Yield(x) => Extra::Yield(self.expr(x)?),
            ExprKind::Generic { callee, types } => {
                Extra::Generic(self.expr(callee)?, types.clone())
            }
            ExprKind::Lambda(decl) => self.closure(decl)?,
            _ => return None,
        })
    }

    /// `fun name(…) { … }` in a body: its closure bound to its slot.
    fn local_fun(&mut self, decl: &Rc<FunDecl>, pos: Pos) -> Option<StmtKind> {
        let value = Expr::Extra(Box::new(self.closure(decl)?));
        if let Res::Local { depth: 0, slot, .. } = decl.slot.get() {
            if self.in_scope(0, slot) {
                return Some(StmtKind::VarInScope {
                    slot,
                    init: Some(value),
                    ty: None,
                    name: decl.name.clone(),
                });
            }
        }
        Some(StmtKind::StoreLocal {
            slot: self.declared(&decl.slot)?,
            op: None,
            value,
            pos,
        })
    }

    /// A lambda or local `fun`: over the environment when it captures
    /// nothing of this function; with a copy of each local it captures
    /// when none of them can change after it is made; else `None`, the
    /// function then lowered again with the shared locals in scopes.
    fn closure(&mut self, decl: &Rc<FunDecl>) -> Option<Extra> {
        let frame = decl.frame.get();
        if !frame.captures || self.all_scoped {
            // (When all are scoped the environment is the resolver's level
            // here: the closure holds it.)
            return Some(Extra::Lambda(decl.clone()));
        }
        if frame.shares && self.own_slots.is_none() {
            self.needs = self.needs.max(Scoping::Own);
            return None;
        }
        // The own level, when kept in a scope, is the environment itself;
        // the top level has none.
        let levels = self.levels.len() - usize::from(self.own_slots.is_some() || self.no_own_level);
        let mut copies = Vec::new();
        for &(out, slot) in decl.captured.get()?.outer.iter() {
            // A local of a function outside this one is already in the
            // environment's chain.
            if (out as usize) < levels {
                copies.push((out, slot, self.local(out, slot)?));
            }
        }
        self.outer = true;
        Some(Extra::Closure(Box::new(Copying {
            decl: decl.clone(),
            levels: u32::try_from(levels).ok()?,
            copies,
        })))
    }

    /// `&call`: the callee's parts and the arguments, run when it is made.
    fn async_call(&mut self, call: &ast::Expr, pos: Pos) -> Option<Extra> {
        let ExprKind::Call { callee, args } = &call.kind else {
            return None;
        };
        if let ExprKind::Field {
            object,
            name,
            optional: false,
            ..
        } = &callee.kind
        {
            let receiver = self.expr(object)?;
            let args = self.args(callee, args)?;
            return Some(Extra::AsyncMethod(
                receiver,
                name.clone(),
                callee.pos,
                args,
                pos,
            ));
        }
        Some(Extra::Async(
            self.expr(callee)?,
            self.args(callee, args)?,
            pos,
        ))
    }

    fn call_generic(
        &mut self,
        callee: &ast::Expr,
        inner: &ast::Expr,
        types: &[Type],
        args: &[Arg],
        pos: Pos,
    ) -> Option<CallGeneric> {
        let (target, method) = match &inner.kind {
            ExprKind::Field {
                object,
                name,
                optional,
                ..
            } => (&**object, Some((name.clone(), *optional, inner.pos))),
            _ => (inner, None),
        };
        Some(CallGeneric {
            callee: self.expr(target)?,
            method,
            types: types.to_vec(),
            args: self.args(callee, args)?,
            pos,
        })
    }

    fn try_stmt(&mut self, body: &[ast::Stmt], clauses: &[ast::CatchClause]) -> Option<StmtKind> {
        let body = self.block(body)?;
        let clauses = clauses
            .iter()
            .map(|c| {
                self.with_level(|l| {
                    let binding = match &c.binding {
                        Some((_, ty)) => Some((l.binding(&c.slot)?, ty.clone())),
                        None => None,
                    };
                    let bound: Vec<_> = binding.iter().map(|(i, _)| (&c.slot, *i)).collect();
                    let body = l.stmts(&c.body)?;
                    Some(Clause {
                        binding,
                        body: l.level(&bound, body)?,
                    })
                })
            })
            .collect::<Option<_>>()?;
        Some(StmtKind::Try(Box::new(Try { body, clauses })))
    }

    fn fields(&mut self, fields: &[(Rc<str>, ast::Expr)]) -> Option<Vec<(Rc<str>, Expr, Pos)>> {
        fields
            .iter()
            .map(|(n, e)| Some((n.clone(), self.expr(e)?, e.pos)))
            .collect()
    }

    fn var_read(&mut self, name: &Rc<str>, res: &Resolved, pos: Pos) -> Option<Expr> {
        Some(match res.get() {
            Res::Local { depth, slot, .. } => match self.scoped_at(depth, slot) {
                Some(out) => Expr::Extra(Box::new(Extra::Outer(out, slot, name.clone(), pos))),
                None => Expr::Local(self.local(depth, slot)?),
            },
            Res::Global { hint } => Expr::Global {
                name: name.clone(),
                res: global_res(hint),
                pos,
            },
            Res::Dynamic => Expr::Extra(Box::new(Extra::Named(
                name.clone(),
                Resolved::default(),
                pos,
            ))),
        })
    }

    fn assign(
        &mut self,
        target: &ast::Expr,
        op: Option<BinOp>,
        value: &ast::Expr,
        pos: Pos,
    ) -> Option<Expr> {
        let at = target.pos;
        Some(match &target.kind {
            ExprKind::Var(name, _) if &**name == "_" && op.is_none() => {
                Expr::Discard(self.boxed(value)?)
            }
            ExprKind::Var(name, res) => match res.get() {
                Res::Local { fixed: true, .. } => {
                    Expr::AssignFinal(self.boxed(value)?, name.clone(), at)
                }
                Res::Local { depth, slot, .. } => match self.scoped_at(depth, slot) {
                    Some(out) => self.store_scope((out, slot), (name, at), op, value, pos)?,
                    None => Expr::AssignLocal {
                        slot: self.local(depth, slot)?,
                        op,
                        value: self.boxed(value)?,
                        pos,
                    },
                },
                Res::Global { .. } => Expr::AssignGlobal(Box::new(AssignGlobal {
                    name: name.clone(),
                    op,
                    value: self.expr(value)?,
                    at,
                    pos,
                })),
                // A name bound at run time (a generic parameter, a local
                // `protocol`): found by name, as a global's assignment is.
                Res::Dynamic => Expr::AssignGlobal(Box::new(AssignGlobal {
                    name: name.clone(),
                    op,
                    value: self.expr(value)?,
                    at,
                    pos,
                })),
            },
            ExprKind::Field { object, name, .. } => Expr::AssignField(Box::new(AssignField {
                object: self.expr(object)?,
                name: name.clone(),
                cache: MemberCache::default(),
                op,
                value: self.expr(value)?,
                at,
                pos,
            })),
            ExprKind::Index { object, index, .. } => Expr::AssignIndex(Box::new(AssignIndex {
                object: self.expr(object)?,
                index: self.expr(index)?,
                op,
                value: self.expr(value)?,
                at,
                pos,
                late: object.is_local() && !assigns(index) && !assigns(value),
            })),
            _ => return None,
        })
    }

    fn args(&mut self, callee: &ast::Expr, args: &[Arg]) -> Option<Args> {
        let spans = std::iter::once(callee)
            .chain(args.iter().map(|a| &a.value))
            .map(|e| (e.start(), e.end))
            .collect();
        Some(Args {
            spans,
            names: args.iter().map(|a| a.name.clone()).collect(),
            values: args
                .iter()
                .map(|a| self.expr(&a.value))
                .collect::<Option<_>>()?,
            positional: args.iter().all(|a| a.name.is_none()),
            ordered: Default::default(),
        })
    }

    fn call(&mut self, callee: &ast::Expr, args: &[Arg], pos: Pos) -> Option<Expr> {
        let at = callee.pos;
        Some(match &callee.kind {
            ExprKind::Field {
                object,
                name,
                optional,
                ..
            } => Expr::CallMethod(Box::new(CallMethod {
                receiver: self.expr(object)?,
                name: name.clone(),
                method: methods::Builtin::of(name),
                optional: *optional,
                cache: MemberCache::default(),
                args: self.args(callee, args)?,
                at,
                pos,
                late: object.is_local() && !args.iter().any(|a| assigns(&a.value)),
            })),
            ExprKind::Var(name, res) if matches!(res.get(), Res::Global { .. }) => {
                let Res::Global { hint } = res.get() else {
                    return None;
                };
                Expr::CallGlobal(Box::new(CallGlobal {
                    name: name.clone(),
                    res: global_res(hint),
                    args: self.args(callee, args)?,
                    at,
                    pos,
                }))
            }
            ExprKind::Generic {
                callee: inner,
                types,
            } => Expr::Extra(Box::new(Extra::CallGeneric(Box::new(
                self.call_generic(callee, inner, types, args, pos)?,
            )))),
            _ => Expr::CallValue(
                Box::new((self.expr(callee)?, self.args(callee, args)?)),
                pos,
            ),
        })
    }

    fn template(&mut self, parts: &[TemplatePart]) -> Option<Expr> {
        let parts = parts
            .iter()
            .map(|p| {
                Some(match p {
                    TemplatePart::Text(t) => Part::Text(Rc::from(t.as_bytes())),
                    TemplatePart::Bytes(b) => Part::Text(b.clone()),
                    TemplatePart::Expr(e) => Part::Expr(self.expr(e)?, e.pos),
                })
            })
            .collect::<Option<_>>()?;
        Some(Expr::Template(parts))
    }

    fn instance(
        &mut self,
        object: &Rc<str>,
        fields: &[(Rc<str>, ast::Expr)],
        class: &Resolved,
        pos: Pos,
    ) -> Option<Expr> {
        let fields = self.fields(fields)?;
        Some(Expr::Instance(Box::new(Instance {
            name: object.clone(),
            class: self.var_read(object, class, pos)?,
            fields,
            pos,
            layout: OnceCell::new(),
        })))
    }
}

/// The inline check of a parameter (or field) of type `ty`.
pub(in crate::buzz) fn check(ty: &Type) -> Check {
    let (mut ty, mut optional) = (ty, false);
    loop {
        match ty {
            Type::Named(n) if &**n == "int" && !optional => return Check::Int,
            Type::Named(n) if &**n == "double" && !optional => return Check::Double,
            Type::Named(n) => return Check::Object(n.clone(), optional),
            Type::Mut(inner) => ty = inner,
            Type::Optional(inner) => {
                optional = true;
                ty = inner;
            }
            _ => return Check::Other,
        }
    }
}

/// The operators the arithmetic fast path computes.
fn arith_op(op: BinOp) -> bool {
    !matches!(
        op,
        BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr
    )
}

/// Whether evaluating `e` may assign a local of this function: only an
/// assignment written in it can (no closure captures a compiled
/// function's locals). Conservative: any kind not listed counts.
fn assigns(e: &ast::Expr) -> bool {
    match &e.kind {
        ExprKind::Null
        | ExprKind::Void
        | ExprKind::Bool(_)
        | ExprKind::Int(_)
        | ExprKind::Double(_)
        | ExprKind::Str(_)
        | ExprKind::Var(..) => false,
        ExprKind::Binary(_, l, r) => assigns(l) || assigns(r),
        ExprKind::Unary(_, x) | ExprKind::Force(x) => assigns(x),
        ExprKind::Field { object, .. } => assigns(object),
        ExprKind::Index { object, index, .. } => assigns(object) || assigns(index),
        ExprKind::Call { callee, args } => {
            assigns(callee) || args.iter().any(|a| assigns(&a.value))
        }
        _ => true,
    }
}

/// A fresh global hint, starting where the resolver's says the name is.
fn global_res(hint: u32) -> Resolved {
    let res = Resolved::default();
    res.set(Res::Global { hint });
    res
}

/// `f` of an optional part: `None` only when `f` gives none.
fn maybe<T, U>(part: Option<T>, f: impl FnOnce(T) -> Option<U>) -> Option<Option<U>> {
    match part {
        Some(x) => f(x).map(Some),
        None => Some(None),
    }
}
