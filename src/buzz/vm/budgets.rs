//! The checks of the run's limits (`limits.rs`), made at every statement
//! and call: depth, stack, memory and steps, each failing with a located
//! error, never a crash.

use super::limits::*;
use super::{Eval, Flow, Interpreter};
use crate::buzz::syntax::ast::*;
use crate::buzz::syntax::lexer::Pos;

impl Interpreter {
    /// The "memory limit" message if `extra` more bytes would pass the
    /// heap budget.
    pub(in crate::buzz) fn over_heap_budget(&self, extra: usize) -> Option<String> {
        (crate::buzz::heap::in_use().saturating_add(extra) > self.heap_budget)
            .then(|| self.over_budget())
    }

    /// Entering a statement: depth and memory. The stack is measured at
    /// calls only ([`Interpreter::enter_call`]): without a call, statements
    /// and expressions nest no deeper than the parser's bound, far inside
    /// the stack budget's headroom.
    #[inline]
    pub(in crate::buzz) fn enter(&mut self, pos: Pos) -> Eval<()> {
        // The checks only; building an error is out of line, so this
        // frame (entered at every evaluation step) stays small.
        if self.depth >= MAX_EVAL_DEPTH || crate::buzz::heap::in_use() > self.heap_budget {
            return Err(self.enter_refused(pos));
        }
        self.depth += 1;
        Ok(())
    }

    /// Entering a Buzz call: steps, depth, memory and stack.
    #[inline(always)]
    pub(in crate::buzz) fn enter_call(&mut self, pos: Pos) -> Eval<()> {
        self.take_step(pos)?;
        if self.stack_base.abs_diff(stack_address()) > self.stack_budget {
            return Err(self.enter_refused(pos));
        }
        self.enter(pos)
    }

    /// Whether [`Interpreter::enter_call`] would find the stack and the
    /// memory within their budgets now.
    #[inline]
    pub(in crate::buzz) fn within_budgets(&self) -> bool {
        self.stack_base.abs_diff(stack_address()) <= self.stack_budget
            && crate::buzz::heap::in_use() <= self.heap_budget
    }

    /// Whether the memory in use is within the budget (the part of
    /// [`Interpreter::enter`]'s check that does not count depth).
    #[inline(always)]
    pub(in crate::buzz) fn within_memory(&self) -> bool {
        crate::buzz::heap::in_use() <= self.heap_budget
    }

    /// One step of the step budget: a call, or a turn of a loop (which may
    /// make no call and run no statement, as `while (true) {}`).
    #[inline]
    pub(in crate::buzz) fn take_step(&mut self, pos: Pos) -> Eval<()> {
        let left = self.steps.get();
        if left == 0 {
            return Err(self.out_of_steps(pos));
        }
        self.steps.set(left - 1);
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn out_of_steps(&self, pos: Pos) -> Flow {
        self.fail(
            pos,
            format!(
                "step limit: the spell made more than {} calls and loop turns (an endless loop?)",
                self.step_budget
            ),
        )
    }

    /// Why [`Interpreter::enter`] refused: depth, stack or memory.
    #[cold]
    #[inline(never)]
    fn enter_refused(&self, pos: Pos) -> Flow {
        if self.depth >= MAX_EVAL_DEPTH {
            return self.fail(pos, format!(
                "evaluation nested too deeply (more than {MAX_EVAL_DEPTH} levels of expressions, blocks and calls; runaway recursion?)"
            ));
        }
        if self.stack_base.abs_diff(stack_address()) > self.stack_budget {
            return self.fail(
                pos,
                "evaluation used its whole stack budget (runaway recursion?)",
            );
        }
        self.fail(pos, self.over_budget())
    }

    #[cold]
    fn over_budget(&self) -> String {
        format!(
            "memory limit: the spell holds more than {} of memory (raise `sandbox.limits.memory`, or magus's `ulimit -d`, if it needs more)",
            crate::policy::limits::Bytes(self.heap_budget as u64)
        )
    }

    #[cold]
    #[inline(never)]
    pub(in crate::buzz) fn call_overflow(&self, decl: &FunDecl, pos: Pos) -> Flow {
        self.fail(pos, format!(
            "call stack overflow: more than {MAX_CALL_DEPTH} nested calls (runaway recursion in `{}`?)",
            decl.name
        ))
    }
}
