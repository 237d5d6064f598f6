//! The run's limits, each ending a spell in a located error, never a
//! crash: call depth ([`MAX_CALL_DEPTH`]), nesting of evaluation
//! ([`MAX_EVAL_DEPTH`]), the stack budget, the memory budget (the heap
//! magus holds) and the step budget (calls and loop turns, all fibers
//! together). Only the numbers: the checks, at every statement and call,
//! are the interpreter's (`budgets.rs`).

/// Deepest Buzz call stack (upstream's `ackermann 3 9` needs about 4,100).
/// Reached only on the interpreter's own large stack (see
/// [`crate::buzz::stack`]); on an ordinary 8 MiB thread the stack budget below
/// stops a spell first, with the same clean error.
pub(crate) const MAX_CALL_DEPTH: usize = 10_000;

/// Deepest nesting of evaluation steps (expressions, statements and calls
/// together), on the interpreter's own stack. A Buzz call nests about a
/// dozen steps.
pub(crate) const MAX_EVAL_DEPTH: usize = 200_000;

/// Default stack budget: evaluation stops once it has used this much stack
/// below the frame that called [`Interpreter::run`]. Sized for an 8 MiB
/// thread; [`crate::buzz::stack::run_on_interpreter_stack`] raises it.
pub(crate) const STACK_BUDGET: usize = 4 << 20;

/// Longest string and list a spell may build (bytes, items).
pub(crate) const MAX_STR_LEN: usize = 256 << 20;
pub(crate) const MAX_LIST_LEN: usize = 32 << 20;

/// The address of a local in a fresh frame: how deep the stack is now.
#[inline(never)]
pub(super) fn stack_address() -> usize {
    let probe = 0u8;
    std::hint::black_box(&probe) as *const u8 as usize
}
