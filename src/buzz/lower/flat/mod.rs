//! The flat form of a compiled function body: one array of operations
//! run by one dispatch loop (`vm/dispatch.rs`), jumps instead of nested statements.
//!
//! Why: the tree form (`vm/exec.rs`) runs each statement, condition and
//! loop step through its own Rust frame and hands `break`, `continue` and
//! `return` back up as `Err(Flow)`; a loop turn of `sum = sum + i; i = i +
//! 1` costs about 550 instructions there, most of them frames and result
//! moves. Here the body's control flow is flattened once, at lowering:
//! a loop is a test at its entry and, at the end of its body, one
//! operation that takes the next turn and jumps back ([`Op::NextBack`],
//! [`Op::Again`]); a local's store writes its slot; a comparison of two
//! numbers decides a jump where it stands.
//!
//! How it stays exact: every operation with a fast path keeps the tree
//! node it came from, and anything the fast path cannot decide (a value
//! that is not a number, an overflow, an error) evaluates that node
//! through the tree's own code, which reads only what the fast path read
//! and so cannot see a difference. A statement or expression this form
//! does not flatten is kept as a tree node and run by the tree
//! ([`Op::Exec`], [`Op::Eval`]; [`Op::EvalArith`], [`Op::Effect`] and
//! [`Op::StoreField`] are the commonest kinds of node, each run by its own
//! operation without the tree's general dispatch); a `break` or
//! `continue` leaving one is matched against the loops around it here. The step budget is taken
//! where the tree takes it (one step per loop turn, one per call); the
//! memory check, which the tree makes at every statement, is made at each
//! loop turn (where the tree makes it at the body's first statement),
//! before every operation that evaluates a tree expression (located at
//! its statement), and by every tree statement and call: wherever
//! anything that lasts can be allocated. A condition needs none.
//!
//! What stays the tree's, measured: calls. Two ways of flattening them
//! were built and measured with callgrind on fib(22): the callee and its
//! arguments in temporaries, then the tree's call path (+6% instructions
//! against the tree's own call), and the called flat function run in
//! place, its frame a window of a stack the run keeps, the caller waiting
//! in a list (+18%: about 790 instructions per Buzz call against 690).
//! Rust frames were not the cost; the moves of 24-byte values, the checks
//! and the frame bookkeeping were, and each design paid them once more.
//! Measured again on 2026-12-07, with 16-byte values and today's call
//! path (about 530 instructions per call of fib): callee windows at the
//! top of one `Vec` of values, the callers waiting in a list, the
//! arguments evaluated into slots first and `f(a) + f(b)` an `Arith` of
//! two slots, took about 795 (fib(22): 48.6 M instructions against
//! 33.4 M). The `Vec`'s growth and bounds checks, the re-entry of the
//! loop at each switch (its hoisted loads) and the compiled form looked
//! up again at each step outweighed the Rust frames saved.
//!
//! Temporaries live in the same frame after the function's own slots; an
//! operation that consumes one moves it out, so no value outlives its use
//! there (an object's `collect` runs when the tree would run it).

mod emit;

pub(super) use emit::emit;

use super::{Check, Cond, Expr, Label, Stmt};
use crate::buzz::syntax::ast::BinOp;
use crate::buzz::syntax::lexer::Pos;
use crate::buzz::vm::value::Value;

/// A slot of the frame, or (with [`KONST`] set) an index into the
/// constants.
pub(crate) type Reg = u32;

/// Marks an operand that names a constant, not a slot.
pub(crate) const KONST: u32 = 1 << 31;

/// A flattened body.
pub(crate) struct Code {
    pub(crate) ops: Box<[Op]>,
    pub(crate) consts: Box<[Value]>,
    /// The tree nodes the operations fall back to, by index.
    pub(crate) trees: Box<[Tree]>,
    /// Where the statement each tree node belongs to starts: the memory
    /// check before a fallback is made there, as the tree makes it at the
    /// statement.
    pub(crate) at: Box<[Pos]>,
    /// Loops, by index: where `break` and `continue` go.
    pub(crate) loops: Box<[Loop]>,
    /// For a tree statement run inside loops: those loops, innermost
    /// first (indexes into `loops`).
    pub(crate) nests: Box<[Box<[u32]>]>,
    /// The types typed declarations check against (see [`Op::Declare`]).
    pub(crate) checks: Box<[Check]>,
    /// The `foreach` loops (see [`Op::Next`]).
    pub(crate) eaches: Box<[Each]>,
    /// Slots including the temporaries.
    pub(super) size: usize,
    /// The first temporary's slot.
    pub(crate) temps: u32,
}

pub(crate) enum Tree {
    Stmt(Stmt),
    Expr(Expr),
    Cond(Cond),
}

/// A `foreach` loop's slots: the value iterated (a temporary), the count
/// of items taken so far (a temporary holding an `int`), where each key
/// (`u32::MAX`: none) and item go, and where the iterated value is
/// written (for the errors of a value that cannot be iterated).
pub(crate) struct Each {
    /// The iterated value; for `foreach (x in low..high)`, `low`.
    pub(crate) subject: Reg,
    /// `high` of a `low..high` written in the `foreach` (`u32::MAX`:
    /// none): the bounds stay two `int`s in the frame, and no range is
    /// made (one allocation per loop, which a `foreach` over `0..n`
    /// inside a hot function paid at every call).
    pub(crate) high: Reg,
    pub(crate) index: Reg,
    pub(crate) key: Reg,
    pub(crate) value: Reg,
    pub(crate) at: Pos,
    /// The loop's turn, taken with each item (see [`Op::Next`]): its
    /// step, located at the loop, and the memory check, located at the
    /// body's first statement (as [`Op::Turn`]'s `pos` and `at`).
    pub(crate) turn: (Pos, Pos),
}

pub(crate) struct Loop {
    pub(crate) label: Label,
    pub(crate) exit: u32,
    pub(crate) next: u32,
}

/// One operation. Jumps name the index of the operation they go to.
pub(crate) enum Op {
    /// Runs a tree statement; `nest` names the loops around it
    /// (`u32::MAX`: none).
    Exec {
        tree: u32,
        nest: u32,
    },
    /// The value of a tree expression, into `dst`.
    Eval {
        tree: u32,
        dst: Reg,
    },
    /// The value of the arithmetic tree expression `tree` (an
    /// `Expr::Arith` whose operands are not both at hand), into `dst`:
    /// straight to its unboxed evaluation, without `Eval`'s general
    /// dispatch (nbody's and spectral's statements).
    EvalArith {
        tree: u32,
        dst: Reg,
    },
    /// An expression evaluated for its effect (a call, an assignment),
    /// the tree expression `tree`, its value dropped: `Exec` without the
    /// general statement dispatch (fasta's `buffer.setAt(…)`). `nest`
    /// names the loops a `break` in a `from` block inside it may leave.
    Effect {
        tree: u32,
        nest: u32,
    },
    /// `local.name = value` or `local.name op= value`, the tree statement
    /// `tree`: run here, not through `Exec`'s general statement dispatch
    /// (nbody's `bj.vx = bj.vx + dx * bm`). It cannot break or continue.
    StoreField {
        tree: u32,
    },
    /// `dst = a op b` on two numbers at hand; else the tree `tree`.
    Arith {
        op: BinOp,
        dst: Reg,
        a: Reg,
        b: Reg,
        tree: u32,
    },
    /// `list.append(value)` as a statement, `list` a slot and `value` a
    /// slot or a constant: pushed here when `list` holds a list, else
    /// (or at the list's length limit) the call `tree` as the tree makes
    /// it. `for`'s one million appends took five Rust calls each.
    Append {
        list: Reg,
        value: Reg,
        tree: u32,
    },
    /// Copies `src` (a slot or a constant) into `dst`.
    Copy {
        dst: Reg,
        src: Reg,
    },
    /// `dst = a op k` on an `int` at hand and an `int` literal; else the
    /// tree `tree`.
    ArithK {
        op: BinOp,
        dst: Reg,
        a: Reg,
        k: i32,
        tree: u32,
    },
    /// Jumps to `to` unless `a op k`, an `int` at hand and an `int`
    /// literal; else decides by the tree condition `tree`.
    TestK {
        op: BinOp,
        a: Reg,
        k: i32,
        to: u32,
        tree: u32,
    },
    /// Jumps to `to` unless `a op b` (two numbers at hand); else decides
    /// by the tree condition `tree`.
    Test {
        op: BinOp,
        a: Reg,
        b: Reg,
        to: u32,
        tree: u32,
    },
    /// Jumps to `to` when the tree condition `tree` is `when`.
    Branch {
        tree: u32,
        to: u32,
        when: bool,
    },
    Jump {
        to: u32,
    },
    /// The end of a `while` or `for` body whose test is the one
    /// operation at `test` (a `TestK`, `Test` or `Branch` jumping out
    /// unless the condition holds, followed by the loop's `Turn`): the
    /// test again, and when it holds, the turn and a jump back to `to`
    /// (the body's start); else on to the loop's exit. One operation per
    /// turn where there were three (a jump back, the test, the turn).
    Again {
        test: u32,
        to: u32,
    },
    /// One turn of the loop at `pos`: a step of the budget, and the
    /// memory check the tree makes at the body's first statement (`at`).
    Turn {
        pos: Pos,
        at: Pos,
    },
    Return {
        src: Reg,
    },
    /// Returns the value of the tree expression `tree` (no temporary).
    ReturnEval {
        tree: u32,
    },
    /// A typed declaration (the tree statement `tree`, whose type is
    /// `checks[check]`): `src` moved into `dst`, checked as the tree does.
    Declare {
        tree: u32,
        src: Reg,
        dst: Reg,
        check: u32,
    },
    /// The next item of `eaches[each]` into its slots and the loop's
    /// turn, or a jump to `to` when there is none: a `foreach`'s entry.
    Next {
        each: u32,
        to: u32,
    },
    /// The same at the end of the body, jumping back to `to` (the body's
    /// start) when there is an item, falling through when there is none:
    /// a turn of a `foreach` runs its body and this one operation, not
    /// a jump, the test and a `Turn` (three dispatches).
    NextBack {
        each: u32,
        to: u32,
    },
    /// `if (x -> y)`: moves the value in `src` (a temporary) into `dst`,
    /// or jumps to `to` when it is null.
    BindIf {
        src: Reg,
        dst: Reg,
        to: u32,
    },
    /// Drops a temporary: a `foreach`'s iterated value, at the loop's end.
    Drop {
        src: Reg,
    },
    /// Fails, as `low..high` does, unless both bounds are `int`s.
    Bounds {
        low: Reg,
        high: Reg,
        pos: Pos,
    },
}

// Small enough that the operations of a hot loop share cache lines.
const _: () = assert!(std::mem::size_of::<Op>() <= 24);

impl std::fmt::Debug for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "flat code of {} operations", self.ops.len())
    }
}
