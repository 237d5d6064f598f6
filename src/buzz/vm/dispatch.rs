//! The dispatch loop over a [`Code`].

use crate::buzz::lib::methods;
use crate::buzz::lower::flat::{Code, Each, Op, Reg, Tree, KONST};
use crate::buzz::lower::{Expr, Stmt, StmtKind, N};
use crate::buzz::syntax::ast::BinOp;
use crate::buzz::syntax::lexer::Pos;
use crate::buzz::vm::exec::{discard, double_tree, operand, plainly, put};
use crate::buzz::vm::limits::MAX_LIST_LEN;
use crate::buzz::vm::ops::{double_fast, int_compare, int_fast};
use crate::buzz::vm::value::{Scope, Value};
use crate::buzz::vm::{Eval, Flow, Interpreter, Stop};
use std::rc::Rc;

impl Interpreter {
    /// Runs `code` in its frame `fr` under `env`: what it returns.
    pub(in crate::buzz) fn run_flat(
        &mut self,
        code: &Code,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<Value> {
        let mut pc = 0usize;
        while let Some(op) = code.ops.get(pc) {
            pc += 1;
            match op {
                Op::Arith {
                    op,
                    dst,
                    a,
                    b,
                    tree,
                } => {
                    let fast = match (code.read(fr, *a), code.read(fr, *b)) {
                        (Value::Int(x), Value::Int(y)) => int_fast(*op, *x, *y),
                        (Value::Double(x), Value::Double(y)) if *op != BinOp::Rem => {
                            double_fast(*op, x.get(), y.get())
                        }
                        _ => None,
                    };
                    let v = match fast {
                        Some(v) => v,
                        None => self.flat_eval(code, *tree, fr, env)?,
                    };
                    put(&mut fr[*dst as usize], v);
                }
                Op::Eval { tree, dst } => {
                    let v = self.flat_eval(code, *tree, fr, env)?;
                    put(&mut fr[*dst as usize], v);
                }
                Op::EvalArith { tree, dst } => {
                    if !self.within_memory() {
                        self.flat_over(code, *tree)?;
                    }
                    let arith = code.arith(*tree);
                    // A tree of doubles last time: straight to it.
                    let v = match arith.2.get().then(|| double_tree(&arith.0, fr, env)) {
                        Some(Some(d)) => Value::double(d),
                        _ => self.c_arith_tree(arith, fr, env)?,
                    };
                    put(&mut fr[*dst as usize], v);
                }
                Op::ArithK {
                    op,
                    dst,
                    a,
                    k,
                    tree,
                } => {
                    let fast = match fr[*a as usize] {
                        Value::Int(x) => int_fast(*op, x, i64::from(*k)),
                        _ => None,
                    };
                    let v = match fast {
                        Some(v) => v,
                        None => self.flat_eval(code, *tree, fr, env)?,
                    };
                    put(&mut fr[*dst as usize], v);
                }
                Op::TestK { op, a, k, to, tree } => {
                    if !self.test_k((*op, *a, *k, *tree), code, fr, env)? {
                        pc = *to as usize;
                    }
                }
                Op::Test { op, a, b, to, tree } => {
                    if !self.test((*op, *a, *b, *tree), code, fr, env)? {
                        pc = *to as usize;
                    }
                }
                Op::Again { test, to } => {
                    if self.again(*test, code, fr, env)? {
                        pc = *to as usize;
                    }
                }
                Op::Jump { to } => pc = *to as usize,
                Op::Turn { pos, at } => self.flat_turn((*pos, *at))?,
                Op::Copy { dst, src } => {
                    let v = code.read(fr, *src).clone();
                    put(&mut fr[*dst as usize], v);
                }
                Op::Branch { tree, to, when } => {
                    if self.branch(*tree, code, fr, env)? == *when {
                        pc = *to as usize;
                    }
                }
                Op::Return { src } => return Ok(code.take(fr, *src)),
                Op::ReturnEval { tree } => return self.flat_eval(code, *tree, fr, env),
                Op::Effect { tree, nest } => match self.flat_eval(code, *tree, fr, env) {
                    Ok(v) => discard(v),
                    Err(flow) => pc = code.caught(flow, *nest)? as usize,
                },
                Op::Append { list, value, tree } => {
                    self.append((*list, *value, *tree), code, fr, env)?;
                }
                Op::StoreField { tree } => {
                    if !self.within_memory() {
                        self.flat_over(code, *tree)?;
                    }
                    self.c_store_field(code.store_field(*tree), fr, env)?;
                }
                Op::BindIf { src, dst, to } => {
                    let v = std::mem::take(&mut fr[*src as usize]);
                    if v.is_null() {
                        pc = *to as usize;
                    } else {
                        put(&mut fr[*dst as usize], v);
                    }
                }
                Op::Next { each, to } => {
                    let each = &code.eaches[*each as usize];
                    if self.flat_next(each, fr)? {
                        self.flat_turn(each.turn)?;
                    } else {
                        pc = *to as usize;
                    }
                }
                Op::NextBack { each, to } => {
                    let each = &code.eaches[*each as usize];
                    if self.flat_next(each, fr)? {
                        self.flat_turn(each.turn)?;
                        pc = *to as usize;
                    }
                }
                Op::Declare {
                    tree,
                    src,
                    dst,
                    check,
                } => {
                    let v = std::mem::take(&mut fr[*src as usize]);
                    let v = if plainly(&code.checks[*check as usize], &v) {
                        v
                    } else {
                        self.flat_conform(code, *tree, v)?
                    };
                    put(&mut fr[*dst as usize], v);
                }
                Op::Exec { tree, nest } => {
                    let Tree::Stmt(stmt) = &code.trees[*tree as usize] else {
                        unreachable!("an Exec names a statement");
                    };
                    if let Err(flow) = self.c_exec(stmt, fr, env) {
                        pc = code.caught(flow, *nest)? as usize;
                    }
                }
                _ => self.flat_rest(op, fr)?,
            }
        }
        Ok(Value::Null)
    }

    /// The operations that neither jump nor sit in hot loops alone.
    #[inline(never)]
    fn flat_rest(&mut self, op: &Op, fr: &mut [Value]) -> Eval<()> {
        match op {
            Op::Drop { src } => discard(std::mem::take(&mut fr[*src as usize])),
            Op::Bounds { low, high, pos } => {
                let (low, high) = (&fr[*low as usize], &fr[*high as usize]);
                if !matches!((low, high), (Value::Int(_), Value::Int(_))) {
                    return Err(self.range_refused(low, high, *pos));
                }
            }
            Op::Arith { .. }
            | Op::Test { .. }
            | Op::Again { .. }
            | Op::ArithK { .. }
            | Op::Eval { .. }
            | Op::EvalArith { .. }
            | Op::TestK { .. }
            | Op::Jump { .. }
            | Op::Turn { .. }
            | Op::Copy { .. }
            | Op::Branch { .. }
            | Op::Return { .. }
            | Op::ReturnEval { .. }
            | Op::Exec { .. }
            | Op::Next { .. }
            | Op::NextBack { .. }
            | Op::BindIf { .. }
            | Op::StoreField { .. }
            | Op::Effect { .. }
            | Op::Append { .. }
            | Op::Declare { .. } => unreachable!("run in the loop"),
        }
        Ok(())
    }

    /// [`Op::Append`]: out of line, so that the loop's other operations
    /// keep their registers (in the loop, `while_additions` took 4% more
    /// instructions).
    #[inline(never)]
    fn append(
        &mut self,
        (list, value, tree): (Reg, Reg, u32),
        code: &Code,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<()> {
        if !self.within_memory() {
            self.flat_over(code, tree)?;
        }
        if !flat_append(code, fr, list, value) {
            let v = self.flat_eval(code, tree, fr, env)?;
            discard(v);
        }
        Ok(())
    }

    /// The value of tree expression `tree`, after the memory check the
    /// tree makes at its statement. (A condition needs none: what it
    /// allocates is gone once it is decided; what can grow is stored, by
    /// an operation that evaluates a tree expression, or by a tree
    /// statement, which checks.)
    #[inline(always)]
    fn flat_eval(
        &mut self,
        code: &Code,
        tree: u32,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<Value> {
        if !self.within_memory() {
            self.flat_over(code, tree)?;
        }
        self.c_eval(code.expr(tree), fr, env)
    }

    /// `a op k` for an `int` at hand and an `int` literal, else the tree
    /// condition `tree`.
    #[inline(always)]
    fn test_k(
        &mut self,
        (op, a, k, tree): (BinOp, Reg, i32, u32),
        code: &Code,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<bool> {
        let fast = match fr[a as usize] {
            Value::Int(x) => int_compare(op, x, i64::from(k)),
            _ => None,
        };
        self.flat_truth(fast, code, tree, fr, env)
    }

    /// `a op b` for two numbers at hand, else the tree condition `tree`.
    #[inline(always)]
    fn test(
        &mut self,
        (op, a, b, tree): (BinOp, Reg, Reg, u32),
        code: &Code,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<bool> {
        let fast = match (code.read(fr, a), code.read(fr, b)) {
            (Value::Int(x), Value::Int(y)) => int_compare(op, *x, *y),
            (Value::Double(x), Value::Double(y)) => ordered(op, x.get(), y.get()),
            (Value::Int(x), Value::Double(y)) => ordered(op, *x as f64, y.get()),
            (Value::Double(x), Value::Int(y)) => ordered(op, x.get(), *y as f64),
            _ => None,
        };
        self.flat_truth(fast, code, tree, fr, env)
    }

    /// The tree condition `tree`; a comparison of numbers decided here
    /// (fasta's `r < this.probs[i]`), else by the tree.
    #[inline(always)]
    fn branch(&mut self, tree: u32, code: &Code, fr: &mut [Value], env: &Rc<Scope>) -> Eval<bool> {
        let fast = match &code.cond(tree).expr {
            Expr::Arith(arith) => match operand(&arith.0, fr, env) {
                Some(N::B(b)) => Some(b),
                _ => None,
            },
            _ => None,
        };
        self.flat_truth(fast, code, tree, fr, env)
    }

    /// [`Op::Again`]: whether the loop test at `test` holds, its turn
    /// (the `Turn` after it) taken when it does.
    #[inline(always)]
    fn again(&mut self, test: u32, code: &Code, fr: &mut [Value], env: &Rc<Scope>) -> Eval<bool> {
        let test = test as usize;
        let holds = match &code.ops[test] {
            Op::TestK { op, a, k, tree, .. } => self.test_k((*op, *a, *k, *tree), code, fr, env)?,
            Op::Test { op, a, b, tree, .. } => self.test((*op, *a, *b, *tree), code, fr, env)?,
            Op::Branch {
                tree, when: false, ..
            } => self.branch(*tree, code, fr, env)?,
            _ => unreachable!("`Again` names a loop's test"),
        };
        if holds {
            let Op::Turn { pos, at } = code.ops[test + 1] else {
                unreachable!("a loop's test is followed by its turn");
            };
            self.flat_turn((pos, at))?;
        }
        Ok(holds)
    }

    /// A test's answer: the fast path's, else the tree condition's.
    #[inline(always)]
    fn flat_truth(
        &mut self,
        fast: Option<bool>,
        code: &Code,
        tree: u32,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<bool> {
        match fast {
            Some(t) => Ok(t),
            None => self.c_cond(code.cond(tree), fr, env),
        }
    }

    /// The tree's own check at the statement of `tree`, made when the
    /// memory looks over its budget: its error, located there.
    #[cold]
    #[inline(never)]
    fn flat_over(&mut self, code: &Code, tree: u32) -> Eval<()> {
        self.enter(code.at[tree as usize])?;
        self.depth -= 1;
        Ok(())
    }

    /// One turn of a loop: a step of the budget at the loop (`pos`), and
    /// the memory check the tree makes at the body's first statement
    /// (`at`).
    #[inline(always)]
    fn flat_turn(&mut self, (pos, at): (Pos, Pos)) -> Eval<()> {
        self.take_step(pos)?;
        self.enter(at)?;
        self.depth -= 1;
        Ok(())
    }

    /// Takes the next item of a `foreach` into its slots (the tree's
    /// `c_foreach`, one turn); `false` when there is none.
    #[inline(always)]
    fn flat_next(&mut self, each: &Each, fr: &mut [Value]) -> Eval<bool> {
        let Value::Int(index) = fr[each.index as usize] else {
            unreachable!("a foreach's count is an int");
        };
        if each.high != u32::MAX {
            let (Value::Int(low), Value::Int(high)) =
                (&fr[each.subject as usize], &fr[each.high as usize])
            else {
                unreachable!("`Op::Bounds` checked both bounds");
            };
            let Some(n) = methods::range_nth(*low, *high, index) else {
                return Ok(false);
            };
            // Each `int` written straight into its slot: made first and
            // moved, it went through the stack as two stores read back as
            // one 16-byte load, which store forwarding cannot serve (a
            // sixth of `run_flat`'s time in fasta, by perf).
            fr[each.index as usize] = Value::Int(index + 1);
            if each.key != u32::MAX {
                put(&mut fr[each.key as usize], Value::Int(index));
            }
            put(&mut fr[each.value as usize], Value::Int(n));
            return Ok(true);
        }
        self.flat_next_item(each, index, fr)
    }

    /// [`Interpreter::flat_next`] of anything but a range written in the
    /// `foreach`: out of line, so that the two operations that take an
    /// item each keep the range's path inline.
    #[inline(never)]
    fn flat_next_item(&mut self, each: &Each, index: i64, fr: &mut [Value]) -> Eval<bool> {
        let item = match &fr[each.subject as usize] {
            Value::Range(r) => {
                methods::range_nth(r.low, r.high, index).map(|n| (Value::Int(index), Value::Int(n)))
            }
            // A list's item read in place, as `nth_item` reads it, without
            // the clone of the list that the general path holds.
            Value::List(list) => {
                let items = list.items.borrow();
                let item = usize::try_from(index).ok().and_then(|i| items.get(i));
                item.map(|v| (Value::Int(index), v.clone()))
            }
            subject => {
                let subject = subject.clone();
                let item = self.next_item(&subject, index as usize, each.at);
                discard(subject);
                item?
            }
        };
        let Some((k, v)) = item else {
            return Ok(false);
        };
        fr[each.index as usize] = Value::Int(index + 1);
        if each.key != u32::MAX {
            put(&mut fr[each.key as usize], k);
        }
        put(&mut fr[each.value as usize], v);
        Ok(true)
    }

    /// A typed declaration's value that is not plainly of its type:
    /// checked (and widened or inferred) as the tree's `c_var` does.
    #[cold]
    #[inline(never)]
    fn flat_conform(&mut self, code: &Code, tree: u32, v: Value) -> Eval<Value> {
        let Tree::Stmt(Stmt {
            kind: StmtKind::Var {
                ty: Some(ty), name, ..
            },
            pos,
        }) = &code.trees[tree as usize]
        else {
            unreachable!("a declaration names its statement");
        };
        self.conform_with(ty, v, || format!("`{name}`"), *pos)
    }
}

impl Code {
    /// The value of a slot or a constant, in place.
    #[inline(always)]
    fn read<'a>(&'a self, fr: &'a [Value], r: Reg) -> &'a Value {
        if r & KONST != 0 {
            &self.consts[(r & !KONST) as usize]
        } else {
            &fr[r as usize]
        }
    }

    /// The value of a slot or constant to keep: a temporary's moved out.
    #[inline(always)]
    fn take(&self, fr: &mut [Value], r: Reg) -> Value {
        if r & KONST != 0 {
            self.consts[(r & !KONST) as usize].clone()
        } else if r >= self.temps {
            std::mem::take(&mut fr[r as usize])
        } else {
            fr[r as usize].clone()
        }
    }

    fn expr(&self, tree: u32) -> &Expr {
        match &self.trees[tree as usize] {
            Tree::Expr(e) => e,
            _ => unreachable!("an expression's operation names an expression"),
        }
    }

    fn arith(&self, tree: u32) -> &(crate::buzz::lower::Num, Expr, std::cell::Cell<bool>) {
        match &self.trees[tree as usize] {
            Tree::Expr(Expr::Arith(arith)) => arith,
            _ => unreachable!("an `EvalArith` names an arithmetic tree"),
        }
    }

    fn store_field(&self, tree: u32) -> &crate::buzz::lower::StoreField {
        match &self.trees[tree as usize] {
            Tree::Stmt(Stmt {
                kind: StmtKind::StoreField(store),
                ..
            }) => store,
            _ => unreachable!("a `StoreField` names a field's store"),
        }
    }

    fn cond(&self, tree: u32) -> &crate::buzz::lower::Cond {
        match &self.trees[tree as usize] {
            Tree::Cond(c) => c,
            _ => unreachable!("a test names a condition"),
        }
    }

    /// Where a `break` or `continue` leaving a tree statement goes, among
    /// the loops `nest` names; any other flow goes on out.
    #[cold]
    #[inline(never)]
    fn caught(&self, flow: Flow, nest: u32) -> Eval<u32> {
        let (label, brk) = match flow.stop() {
            Stop::Break(l) => (l, true),
            Stop::Continue(l) => (l, false),
            _ => return Err(flow),
        };
        let Some(loops) = self.nests.get(nest as usize) else {
            return Err(flow);
        };
        for &id in loops.iter() {
            let lp = &self.loops[id as usize];
            if label.is_none() || lp.label == *label {
                return Ok(if brk { lp.exit } else { lp.next });
            }
        }
        Err(flow)
    }
}

/// [`Op::Append`]'s push, as the built-in `append` makes it; `false`,
/// with nothing done, when `list` holds no list or the list is at its
/// length limit (the call then says so, as the tree's does).
#[inline(always)]
fn flat_append(code: &Code, fr: &[Value], list: Reg, value: Reg) -> bool {
    let Value::List(l) = &fr[list as usize] else {
        return false;
    };
    let Ok(mut items) = l.items.try_borrow_mut() else {
        return false;
    };
    if items.len() >= MAX_LIST_LEN {
        return false;
    }
    items.push(code.read(fr, value).clone());
    true
}

/// `x op y` for the ordering operators on numbers as doubles, as the
/// tree's arithmetic computes a comparison of two numbers (an `int`
/// beside a `double` widened); `None` for any other operator.
#[inline(always)]
fn ordered(op: BinOp, x: f64, y: f64) -> Option<bool> {
    Some(match op {
        BinOp::Lt => x < y,
        BinOp::Le => x <= y,
        BinOp::Gt => x > y,
        BinOp::Ge => x >= y,
        _ => return None,
    })
}
