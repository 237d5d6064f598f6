//! The interpreter's own thread: a tree-walker recurses on the Rust stack
//! for every Buzz call, so spells run on a thread with a large stack
//! (reserved, and committed by the kernel only as it is touched) and a
//! stack budget to match. Deep recursion then ends in a located error at
//! [`super::MAX_CALL_DEPTH`] calls, never in a stack overflow.

/// Stack reserved for the interpreter thread.
pub const INTERPRETER_STACK: usize = 1 << 30;

/// Stack kept free below the budget, for natives and the error path.
const HEADROOM: usize = 64 << 20;

/// The stack budget to give an interpreter on the interpreter thread
/// (see [`super::Interpreter::with_stack_budget`]).
pub const INTERPRETER_STACK_BUDGET: usize = INTERPRETER_STACK - HEADROOM;

/// Runs `f` on a fresh thread with [`INTERPRETER_STACK`] of stack and
/// returns its result. Fails only when the thread cannot be created; a
/// panic in `f` is resumed on the caller.
pub fn run_on_interpreter_stack<T: Send>(f: impl FnOnce() -> T + Send) -> std::io::Result<T> {
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("buzz".into())
            .stack_size(INTERPRETER_STACK)
            .spawn_scoped(scope, f)?;
        match worker.join() {
            Ok(value) => Ok(value),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}
