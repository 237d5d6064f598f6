//! Flattening a lowered body: statements become jumps, the commonest
//! expressions operations on slots, the rest stay tree nodes.

use super::{Code, Each, Loop, Op, Reg, Tree, KONST};
use crate::buzz::lib::methods::Builtin;
use crate::buzz::lower::{tree, CallMethod, Check, Cond, Expr, ForEach, Label, Stmt, StmtKind};
use crate::buzz::syntax::ast::BinOp;
use crate::buzz::syntax::lexer::Pos;
use crate::buzz::vm::value::Value;

/// Flattens `body`, whose own slots are `size`.
pub(in crate::buzz) fn emit(body: Vec<Stmt>, size: usize) -> Code {
    let temps = u32::try_from(size).unwrap_or(u32::MAX);
    let mut e = Emit {
        ops: Vec::new(),
        consts: Vec::new(),
        trees: Vec::new(),
        at: Vec::new(),
        stmt: Pos::default(),
        loops: Vec::new(),
        nests: Vec::new(),
        checks: Vec::new(),
        eaches: Vec::new(),
        open: Vec::new(),
        jumps: Vec::new(),
        next: temps,
        max: temps,
    };
    for s in body {
        e.stmt(s);
    }
    Code {
        ops: e.ops.into(),
        consts: e.consts.into(),
        trees: e.trees.into(),
        at: e.at.into(),
        loops: e.loops.into(),
        nests: e.nests.into(),
        checks: e.checks.into(),
        eaches: e.eaches.into(),
        size: e.max as usize,
        temps,
    }
}

struct Emit {
    ops: Vec<Op>,
    consts: Vec<Value>,
    trees: Vec<Tree>,
    at: Vec<Pos>,
    /// Where the statement being emitted starts.
    stmt: Pos,
    loops: Vec<Loop>,
    nests: Vec<Box<[u32]>>,
    checks: Vec<Check>,
    eaches: Vec<Each>,
    /// The loops being emitted, innermost last.
    open: Vec<u32>,
    /// `break` (`true`) and `continue` jumps to set when their loop ends:
    /// the jump's index, the loop's.
    jumps: Vec<(usize, u32, bool)>,
    next: u32,
    max: u32,
}

impl Emit {
    fn here(&self) -> u32 {
        self.ops.len() as u32
    }

    fn tree(&mut self, t: Tree) -> u32 {
        self.trees.push(t);
        self.at.push(self.stmt);
        self.trees.len() as u32 - 1
    }

    fn konst(&mut self, v: Value) -> Reg {
        self.consts.push(v);
        (self.consts.len() as u32 - 1) | KONST
    }

    fn temp(&mut self) -> Reg {
        let t = self.next;
        self.next += 1;
        self.max = self.max.max(self.next);
        t
    }

    /// Sets the target of the jump at `at`.
    fn land(&mut self, at: usize, to: u32) {
        match &mut self.ops[at] {
            Op::Test { to: t, .. }
            | Op::TestK { to: t, .. }
            | Op::Branch { to: t, .. }
            | Op::Jump { to: t }
            | Op::BindIf { to: t, .. }
            | Op::Next { to: t, .. }
            | Op::NextBack { to: t, .. } => *t = to,
            _ => unreachable!("only jumps are landed"),
        }
    }

    // ----- statements -----

    fn stmt(&mut self, s: Stmt) {
        let mark = self.next;
        self.stmt_kind(s);
        self.next = mark;
    }

    fn stmt_kind(&mut self, s: Stmt) {
        let Stmt { kind, pos } = s;
        self.stmt = pos;
        match kind {
            StmtKind::StoreLocal {
                slot,
                op: None,
                value,
                ..
            } => self.into(value, slot),
            StmtKind::Var {
                slot,
                init: Some(init),
                ty: None,
                ..
            } => self.into(init, slot),
            StmtKind::Var {
                slot,
                init: Some(init),
                ty: Some(ty),
                name,
            } => {
                let src = self.temp();
                self.into(init, src);
                self.checks.push(tree::check(&ty));
                let check = self.checks.len() as u32 - 1;
                let kind = StmtKind::Var {
                    slot,
                    init: None,
                    ty: Some(ty),
                    name,
                };
                let tree = self.tree(Tree::Stmt(Stmt { kind, pos }));
                self.ops.push(Op::Declare {
                    tree,
                    src,
                    dst: slot,
                    check,
                });
            }
            StmtKind::ForEach(each) => self.each(*each, pos),
            StmtKind::Expr(Expr::CallMethod(c)) if appends(&c) => {
                let (Expr::Local(list), [value]) = (&c.receiver, &c.args.values[..]) else {
                    unreachable!("`appends` checked the receiver and the argument");
                };
                let (list, value) = (*list, self.at_hand(value));
                let tree = self.tree(Tree::Expr(Expr::CallMethod(c)));
                self.ops.push(Op::Append { list, value, tree });
            }
            StmtKind::Expr(e) => {
                let tree = self.tree(Tree::Expr(e));
                let nest = self.nest();
                self.ops.push(Op::Effect { tree, nest });
            }
            StmtKind::StoreField(store) => {
                let kind = StmtKind::StoreField(store);
                let tree = self.tree(Tree::Stmt(Stmt { kind, pos }));
                self.ops.push(Op::StoreField { tree });
            }
            StmtKind::IfBind {
                value,
                slot,
                cast: None,
                then,
                otherwise,
            } => {
                let src = self.temp();
                self.into(value, src);
                let skip = self.ops.len();
                self.ops.push(Op::BindIf {
                    src,
                    dst: slot,
                    to: 0,
                });
                self.branches(skip, then, otherwise);
            }
            StmtKind::Block(body) => body.into_iter().for_each(|s| self.stmt(s)),
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                let skip = self.unless(cond);
                self.branches(skip, then, otherwise);
            }
            StmtKind::While { cond, body, label } => {
                let top = self.here();
                let id = self.open(label);
                let exit = self.unless(cond);
                self.turn(pos, &body);
                body.into_iter().for_each(|s| self.stmt(s));
                let next = self.back(top, Some(exit));
                self.land(exit, self.here());
                self.close(id, next);
            }
            StmtKind::DoUntil { body, cond, label } => {
                let top = self.here();
                let id = self.open(label);
                self.turn(pos, &body);
                body.into_iter().for_each(|s| self.stmt(s));
                let next = self.here();
                let tree = self.tree(Tree::Cond(cond));
                let done = self.ops.len();
                self.ops.push(Op::Branch {
                    tree,
                    to: 0,
                    when: true,
                });
                self.ops.push(Op::Jump { to: top });
                self.land(done, self.here());
                self.close(id, next);
            }
            StmtKind::For {
                init,
                cond,
                step,
                body,
                label,
            } => {
                init.into_iter().for_each(|s| self.stmt(s));
                let top = self.here();
                let id = self.open(label);
                let exit = cond.map(|c| self.unless(c));
                self.turn(pos, &body);
                body.into_iter().for_each(|s| self.stmt(s));
                let next = self.here();
                step.into_iter().for_each(|s| self.stmt(s));
                self.back(top, exit);
                if let Some(exit) = exit {
                    self.land(exit, self.here());
                }
                self.close(id, next);
            }
            StmtKind::Break(label) if self.target(&label).is_some() => {
                self.leave(&label, true);
            }
            StmtKind::Continue(label) if self.target(&label).is_some() => {
                self.leave(&label, false);
            }
            StmtKind::Return(Some(e)) if !self.flattens(&e) => {
                let tree = self.tree(Tree::Expr(e));
                self.ops.push(Op::ReturnEval { tree });
            }
            StmtKind::Return(value) => {
                let src = match value {
                    Some(e) => self.operand(e),
                    None => self.konst(Value::Null),
                };
                self.ops.push(Op::Return { src });
            }
            kind => {
                let tree = self.tree(Tree::Stmt(Stmt { kind, pos }));
                let nest = self.nest();
                self.ops.push(Op::Exec { tree, nest });
            }
        }
    }

    /// An `if`'s two branches after its test at `skip`, which jumps past
    /// `then` when the test fails.
    fn branches(&mut self, skip: usize, then: Vec<Stmt>, otherwise: Option<Box<Stmt>>) {
        then.into_iter().for_each(|s| self.stmt(s));
        match otherwise {
            None => self.land(skip, self.here()),
            Some(other) => {
                let end = self.jump();
                self.land(skip, self.here());
                self.stmt(*other);
                self.land(end, self.here());
            }
        }
    }

    /// `foreach`: the iterated value and a count in temporaries, each
    /// turn's item taken by [`Op::Next`] before the body, then by
    /// [`Op::NextBack`] after it (where `continue` goes).
    fn each(&mut self, each: ForEach, pos: Pos) {
        let ForEach {
            key,
            value,
            iterable,
            at,
            body,
            label,
        } = each;
        let subject = self.temp();
        let high = match iterable {
            Expr::Range(bounds, pos) => {
                let (low, high_expr) = *bounds;
                self.into(low, subject);
                let high = self.temp();
                self.into(high_expr, high);
                self.ops.push(Op::Bounds {
                    low: subject,
                    high,
                    pos,
                });
                high
            }
            iterable => {
                self.into(iterable, subject);
                u32::MAX
            }
        };
        let index = self.temp();
        let zero = self.konst(Value::Int(0));
        self.ops.push(Op::Copy {
            dst: index,
            src: zero,
        });
        let turn = turn_at(pos, &body);
        self.eaches.push(Each {
            subject,
            high,
            index,
            key: key.unwrap_or(u32::MAX),
            value,
            at,
            turn,
        });
        let each = self.eaches.len() as u32 - 1;
        let id = self.open(label);
        let entry = self.ops.len();
        self.ops.push(Op::Next { each, to: 0 });
        let start = self.here();
        body.into_iter().for_each(|s| self.stmt(s));
        let back = self.here();
        self.ops.push(Op::NextBack { each, to: start });
        self.land(entry, self.here());
        self.close(id, back);
        self.ops.push(Op::Drop { src: subject });
    }

    /// The end of a loop body whose test starts at `top` and jumps out
    /// at `exit`: [`Op::Again`] when that test is one operation (its
    /// operands at hand), else a jump back to `top`. Its index, where a
    /// `while`'s `continue` goes.
    fn back(&mut self, top: u32, exit: Option<usize>) -> u32 {
        let at = self.here();
        match exit {
            Some(exit) if exit == top as usize => self.ops.push(Op::Again {
                test: top,
                to: top + 2,
            }),
            _ => self.ops.push(Op::Jump { to: top }),
        }
        at
    }

    /// A loop turn: its step, and the memory check where the tree makes
    /// it (at the body's first statement).
    fn turn(&mut self, pos: Pos, body: &[Stmt]) {
        let (pos, at) = turn_at(pos, body);
        self.ops.push(Op::Turn { pos, at });
    }

    /// A jump taken when `cond` is false; its index, to land.
    fn unless(&mut self, cond: Cond) -> usize {
        let at = self.ops.len();
        match compared(&cond.expr) {
            Some((op, Expr::Local(a), Expr::Const(Value::Int(k)))) if i32::try_from(*k).is_ok() => {
                let (a, k) = (*a, *k as i32);
                let tree = self.tree(Tree::Cond(cond));
                self.ops.push(Op::TestK {
                    op,
                    a,
                    k,
                    to: 0,
                    tree,
                });
            }
            Some((op, a, b)) => {
                let (a, b) = (self.at_hand(a), self.at_hand(b));
                let tree = self.tree(Tree::Cond(cond));
                self.ops.push(Op::Test {
                    op,
                    a,
                    b,
                    to: 0,
                    tree,
                });
            }
            None => {
                let tree = self.tree(Tree::Cond(cond));
                self.ops.push(Op::Branch {
                    tree,
                    to: 0,
                    when: false,
                });
            }
        }
        at
    }

    fn jump(&mut self) -> usize {
        self.ops.push(Op::Jump { to: 0 });
        self.ops.len() - 1
    }

    // ----- loops -----

    fn open(&mut self, label: Label) -> u32 {
        self.loops.push(Loop {
            label,
            exit: 0,
            next: 0,
        });
        let id = self.loops.len() as u32 - 1;
        self.open.push(id);
        id
    }

    /// Ends loop `id`: `break` goes here, `continue` to `next`.
    fn close(&mut self, id: u32, next: u32) {
        self.open.pop();
        let exit = self.here();
        self.loops[id as usize].exit = exit;
        self.loops[id as usize].next = next;
        let jumps = std::mem::take(&mut self.jumps);
        for (at, of, brk) in jumps {
            if of == id {
                self.land(at, if brk { exit } else { next });
            } else {
                self.jumps.push((at, of, brk));
            }
        }
    }

    /// The open loop a `break` or `continue` with `label` leaves.
    fn target(&self, label: &Label) -> Option<u32> {
        let loops = &self.loops;
        self.open.iter().rev().copied().find(|&id| match label {
            None => true,
            Some(l) => loops[id as usize].label.as_ref() == Some(l),
        })
    }

    fn leave(&mut self, label: &Label, brk: bool) {
        let Some(id) = self.target(label) else {
            return;
        };
        let at = self.jump();
        self.jumps.push((at, id, brk));
    }

    /// The loops open here, innermost first, for a tree statement's
    /// `break` and `continue`.
    fn nest(&mut self) -> u32 {
        if self.open.is_empty() {
            return u32::MAX;
        }
        self.nests.push(self.open.iter().rev().copied().collect());
        self.nests.len() as u32 - 1
    }

    // ----- expressions -----

    /// A slot or constant holding `e`'s value: a local or a literal as
    /// it is, anything else evaluated into a temporary.
    fn operand(&mut self, e: Expr) -> Reg {
        match e {
            Expr::Local(i) => i,
            Expr::Const(v) => self.konst(v),
            e => {
                let t = self.temp();
                self.into(e, t);
                t
            }
        }
    }

    fn at_hand(&mut self, e: &Expr) -> Reg {
        match e {
            Expr::Local(i) => *i,
            Expr::Const(v) => self.konst(v.clone()),
            _ => unreachable!("`compared` and `arith_at_hand` give only locals and literals"),
        }
    }

    /// Evaluates `e` into `dst`, written last (so a failing evaluation
    /// leaves `dst` as it was, as the tree's store does).
    fn into(&mut self, e: Expr, dst: Reg) {
        match e {
            Expr::Local(src) => {
                if src != dst {
                    self.ops.push(Op::Copy { dst, src });
                }
            }
            Expr::Const(v) => {
                let src = self.konst(v);
                self.ops.push(Op::Copy { dst, src });
            }
            Expr::Arith(arith) => match arith_at_hand(&arith.1) {
                Some((op, Expr::Local(a), Expr::Const(Value::Int(k))))
                    if i32::try_from(*k).is_ok() =>
                {
                    let (a, k) = (*a, *k as i32);
                    let tree = self.tree(Tree::Expr(Expr::Arith(arith)));
                    self.ops.push(Op::ArithK {
                        op,
                        dst,
                        a,
                        k,
                        tree,
                    });
                }
                Some((op, a, b)) => {
                    let (a, b) = (self.at_hand(a), self.at_hand(b));
                    let tree = self.tree(Tree::Expr(Expr::Arith(arith)));
                    self.ops.push(Op::Arith {
                        op,
                        dst,
                        a,
                        b,
                        tree,
                    });
                }
                None => {
                    let tree = self.tree(Tree::Expr(Expr::Arith(arith)));
                    self.ops.push(Op::EvalArith { tree, dst });
                }
            },
            e => self.eval(e, dst),
        }
    }

    /// Whether [`Emit::into`] gives `e` an operation of its own (else it
    /// is evaluated by the tree, with nothing gained from a temporary).
    fn flattens(&self, e: &Expr) -> bool {
        match e {
            Expr::Local(_) | Expr::Const(_) => true,
            Expr::Arith(arith) => arith_at_hand(&arith.1).is_some(),
            _ => false,
        }
    }

    fn eval(&mut self, e: Expr, dst: Reg) {
        let tree = self.tree(Tree::Expr(e));
        self.ops.push(Op::Eval { tree, dst });
    }
}

/// `a op b` comparing two locals or literals, as a condition.
fn compared(e: &Expr) -> Option<(BinOp, &Expr, &Expr)> {
    // Only an arithmetic tree: its numbers compare as the fast path's do.
    let Expr::Arith(arith) = e else {
        return None;
    };
    let Expr::Binary(op, operands, _) = &arith.1 else {
        return None;
    };
    let comparison = matches!(
        op,
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne
    );
    (comparison && at_hand(&operands.0) && at_hand(&operands.1)).then_some((
        *op,
        &operands.0,
        &operands.1,
    ))
}

/// The general form of an arithmetic tree that is one operation on two
/// locals or literals.
fn arith_at_hand(general: &Expr) -> Option<(BinOp, &Expr, &Expr)> {
    let Expr::Binary(op, operands, _) = general else {
        return None;
    };
    (at_hand(&operands.0) && at_hand(&operands.1)).then_some((*op, &operands.0, &operands.1))
}

/// `local.append(x)`, `x` a local or a literal: [`Op::Append`].
fn appends(c: &CallMethod) -> bool {
    c.method == Builtin::Append
        && !c.optional
        && matches!(c.receiver, Expr::Local(_))
        && c.args.positional
        && matches!(&c.args.values[..], [x] if at_hand(x))
}

fn at_hand(e: &Expr) -> bool {
    matches!(e, Expr::Local(_) | Expr::Const(_))
}

/// Where a loop's turn is located: its step at the loop (`pos`), its
/// memory check at the body's first statement, as the tree makes it.
fn turn_at(pos: Pos, body: &[Stmt]) -> (Pos, Pos) {
    (pos, body.first().map_or(pos, |s| s.pos))
}
