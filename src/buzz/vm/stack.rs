//! The interpreter's own thread: the compiled form recurses on the Rust stack
//! for every Buzz call, so spells run on a thread with a large stack
//! (reserved, and committed by the kernel only as it is touched) and a
//! stack budget to match. Deep recursion then ends in a located error at
//! [`super::MAX_CALL_DEPTH`] calls, never in a stack overflow.

/// Stack reserved for the interpreter thread, at most.
pub(crate) const INTERPRETER_STACK: usize = 1 << 30;

/// The least stack the interpreter thread gets, however tight the limits.
const MIN_STACK: usize = 8 << 20;

/// Stack kept free below the budget, for natives and the error path: an
/// eighth of the stack, at most 64 MiB.
const MAX_HEADROOM: usize = 64 << 20;

/// The stack the interpreter thread reserves: [`INTERPRETER_STACK`], or an
/// eighth of an `RLIMIT_DATA` magus was started under (a thread's stack is
/// private writable memory, which that limit counts; a nested run inherits
/// its parent's `limits.memory`), so the thread can always be made. The
/// heap budget takes a quarter of the same limit, and may briefly hold
/// three times that (see `sandbox::startup::heap_budget`): 1/8 + 3/4 fits.
/// `RLIMIT_DATA` (the soft limit) divided by `share`; unlimited, unknown
/// or on an OS without it (Windows), `usize::MAX`.
pub(crate) fn data_limit_over(share: u64) -> usize {
    #[cfg(unix)]
    return nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_DATA)
        .map_or(usize::MAX, |(soft, _)| {
            usize::try_from(soft / share).unwrap_or(usize::MAX)
        });
    #[cfg(not(unix))]
    return {
        let _ = share;
        usize::MAX
    };
}

pub(crate) fn interpreter_stack() -> usize {
    let inherited = data_limit_over(8);
    INTERPRETER_STACK.min(inherited).max(MIN_STACK)
}

/// The stack budget to give an interpreter on a thread with `stack` bytes
/// of stack (see [`super::Interpreter::with_stack_budget`]).
pub(crate) fn stack_budget(stack: usize) -> usize {
    stack - (stack / 8).min(MAX_HEADROOM)
}

/// The calling thread's local memory tally, handed to the shared count
/// when this is dropped (at the end of the run, or as a panic unwinds).
struct LocalTally;

impl LocalTally {
    fn start() -> LocalTally {
        super::heap::count_this_thread_locally();
        LocalTally
    }
}

impl Drop for LocalTally {
    fn drop(&mut self) {
        super::heap::count_this_thread_shared();
    }
}

/// Runs `f` on a fresh thread with [`interpreter_stack`] of stack and
/// returns its result. Fails only when the thread cannot be created; a
/// panic in `f` is resumed on the caller. The thread counts its memory
/// in a tally of its own ([`super::heap::count_this_thread_locally`]).
pub(crate) fn run_on_interpreter_stack<T: Send>(
    f: impl FnOnce() -> T + Send,
) -> std::io::Result<T> {
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("buzz".into())
            .stack_size(interpreter_stack())
            .spawn_scoped(scope, || {
                let _tally = LocalTally::start();
                f()
            })?;
        match worker.join() {
            Ok(value) => Ok(value),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}
