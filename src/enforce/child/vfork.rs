//! The launch itself: a `clone(CLONE_VM | CLONE_VFORK)` onto a stack mapped
//! here, as glibc's `posix_spawn` does, so no page table is copied (a
//! `fork`, which `pre_exec` forces on std, costs ~25% more per spawn). The
//! child shares magus's memory until it execs, so its side only reads what
//! [`super::prepare`] built and makes async-signal-safe calls: no
//! allocation, no lock, no unwinding.

use std::ffi::c_void;
use std::io;
use std::mem::ManuallyDrop;
use std::ptr;
use std::sync::atomic::{AtomicI32, Ordering};

use libc::{c_char, c_int, pid_t, sigset_t};

use super::prepare::Prepared;
use crate::enforce::ChildRestriction;

/// The child's stack. Its frames are small (a `sigaction` per signal, one
/// restriction, `execve`); 64 KiB leaves room for libc's wrappers.
const STACK_SIZE: usize = 64 * 1024;
/// One more page, inaccessible, below the stack: an overflow faults in the
/// child instead of writing over whatever magus mapped there.
const GUARD_SIZE: usize = 4096;
/// Signals are 1..NSIG on Linux (`_NSIG` is 65).
const NSIG: c_int = 65;

/// What the child reads, on the parent's stack while the parent is
/// suspended, and the one thing it writes: the errno of a failed step.
struct ChildArgs<'a> {
    candidates: &'a [*const c_char],
    argv: *const *const c_char,
    envp: *const *const c_char,
    cwd: *const c_char,
    stdio: [c_int; 3],
    restriction: *const ChildRestriction,
    empty_mask: sigset_t,
    /// 0 while all is well; the errno of the step that failed otherwise.
    /// The parent resumes only once the child has exec'd or exited, so
    /// reading it then sees the child's write.
    failure: AtomicI32,
}

/// Starts the prepared child in the domain `restriction` nests it in and
/// returns its pid once it has exec'd, or the errno of the first failure
/// (the failed child is reaped here).
pub(super) fn clone_and_exec(
    prepared: &Prepared,
    restriction: &ChildRestriction,
) -> io::Result<pid_t> {
    let stack = Stack::map()?;
    let args = ChildArgs {
        candidates: prepared.candidates.entries(),
        argv: prepared.argv.as_ptr(),
        envp: prepared.envp.as_ptr(),
        cwd: prepared.cwd.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
        stdio: prepared.child_fds(),
        restriction,
        empty_mask: empty_sigset(),
        failure: AtomicI32::new(0),
    };
    let pid = with_signals_blocked(|| {
        let flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD;
        let arg = ptr::from_ref(&args).cast_mut().cast::<c_void>();
        // SAFETY: `child_main` reads `args` and stores only into its atomic
        // `failure` (`args` is alive on this frame, and CLONE_VFORK suspends
        // this thread until the child execs or exits); it makes only
        // async-signal-safe calls; `stack.top()` is the high end of a
        // private read-write mapping that outlives the call.
        let pid = unsafe { libc::clone(child_main, stack.top(), flags, arg) };
        if pid < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(pid)
        }
    })?;
    match args.failure.load(Ordering::Acquire) {
        0 => Ok(pid),
        errno => {
            reap(pid);
            Err(io::Error::from_raw_os_error(errno))
        }
    }
}

/// Waits for a child that failed before exec, so it leaves no zombie.
fn reap(pid: pid_t) {
    let mut status = 0;
    // SAFETY: waitpid on our own child, writing into a local.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
        if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            break;
        }
    }
}

fn empty_sigset() -> sigset_t {
    // SAFETY: sigemptyset initializes the set it is given.
    unsafe {
        let mut set: sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        set
    }
}

/// Runs `f` with every signal blocked on this thread, as `posix_spawn`
/// does: until the child has reset the dispositions, a handler of magus
/// running in it would run on magus's memory.
pub(crate) fn with_signals_blocked<T>(f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    // SAFETY: both sets are locals that sigfillset / pthread_sigmask fill.
    let old = unsafe {
        let mut all: sigset_t = std::mem::zeroed();
        let mut old: sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        old
    };
    let out = f();
    // SAFETY: restores the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, ptr::null_mut()) };
    out
}

/// A private anonymous mapping used as the child's stack, with a guard
/// page at its low end; unmapped on drop.
pub(crate) struct Stack {
    base: *mut c_void,
}

impl Stack {
    pub(crate) fn map() -> io::Result<Stack> {
        // SAFETY: a fresh anonymous mapping; no existing memory is touched.
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                GUARD_SIZE + STACK_SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = Stack { base };
        // SAFETY: the first page of the mapping made above.
        if unsafe { libc::mprotect(base, GUARD_SIZE, libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    /// The stack grows down from here (page-aligned, so 16-aligned).
    pub(crate) fn top(&self) -> *mut c_void {
        self.base.wrapping_byte_add(GUARD_SIZE + STACK_SIZE)
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `map` made; its owner drops it
        // only once the child that used it has exec'd or exited.
        unsafe { libc::munmap(self.base, GUARD_SIZE + STACK_SIZE) };
    }
}

// ------------------------------------------------------------ child side
//
// Everything below runs in the child, on the mapped stack, sharing magus's
// memory. It must not allocate, lock, panic or write to shared memory other
// than `ChildArgs::failure` (errno, which libc writes, is the suspended
// parent thread's and is harmless to clobber).

extern "C" fn child_main(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `ChildArgs` that `clone_and_exec` passed, alive
    // and unchanged while its thread is suspended.
    let args = unsafe { &*arg.cast_const().cast::<ChildArgs>() };
    let errno = setup_and_exec(args);
    args.failure.store(errno.max(1), Ordering::Release);
    // SAFETY: _exit skips atexit handlers and stdio flushing, which belong
    // to magus and must not run twice.
    unsafe { libc::_exit(127) }
}

/// Returns only on failure, with the errno.
fn setup_and_exec(args: &ChildArgs) -> c_int {
    reset_signal_handlers();
    if let Err(errno) = redirect_stdio(&args.stdio) {
        return errno;
    }
    // SAFETY: `cwd` is NULL or a NUL-terminated string owned by `Prepared`.
    if !args.cwd.is_null() && unsafe { libc::chdir(args.cwd) } != 0 {
        return last_errno();
    }
    if let Err(errno) = restrict(args.restriction) {
        return errno;
    }
    if let Err(errno) = crate::enforce::seccomp::apply_to_child() {
        return errno;
    }
    // `sandbox.limits.memory` for this child and all it starts.
    crate::enforce::limits::apply_to_child();
    // std starts children with an empty mask; the inherited one is all-blocked.
    // SAFETY: sets the mask from a set initialized in the parent.
    unsafe { libc::sigprocmask(libc::SIG_SETMASK, &args.empty_mask, ptr::null_mut()) };
    exec_first(args)
}

/// Every signal magus handles goes back to SIG_DFL (its handler would run
/// on magus's memory), and so does SIGPIPE, which std ignores in magus and
/// resets for its children. Ignored signals stay ignored across exec, as
/// with std. glibc refuses its two internal signals (32, 33) with EINVAL;
/// they are only ever sent to threads of magus itself, never to the child.
fn reset_signal_handlers() {
    for sig in 1..NSIG {
        // SAFETY: sigaction with a local out-parameter; a zeroed sigaction
        // is SIG_DFL with an empty mask and no flags.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, ptr::null(), &mut current) != 0 {
                continue;
            }
            let handled =
                current.sa_sigaction != libc::SIG_DFL && current.sa_sigaction != libc::SIG_IGN;
            if handled || sig == libc::SIGPIPE {
                let default: libc::sigaction = std::mem::zeroed();
                libc::sigaction(sig, &default, ptr::null_mut());
            }
        }
    }
}

/// The prepared descriptors are all above 2 and O_CLOEXEC; `dup2` gives the
/// copy on 0, 1 or 2 no O_CLOEXEC, so only those survive the exec.
fn redirect_stdio(stdio: &[c_int; 3]) -> Result<(), c_int> {
    for (target, &fd) in (0..).zip(stdio) {
        // SAFETY: dup2 between descriptors of this (child) process.
        if fd >= 0 && unsafe { libc::dup2(fd, target) } < 0 {
            return Err(last_errno());
        }
    }
    Ok(())
}

/// Enters the nested Landlock domain with the `landlock` crate's own
/// `restrict_self` (via [`ChildRestriction::restrict_self`]) rather than a
/// raw syscall: landlock 0.4.8's `RulesetCreated::restrict_self` makes
/// `prctl(PR_SET_NO_NEW_PRIVS)` and `landlock_restrict_self(fd, 0)` through
/// `libc::syscall`, builds only plain-data results (`io::Error`'s OS
/// variant does not allocate) and closes the descriptor, so it is
/// async-signal-safe; `RulesetCreated` owns no heap memory.
///
/// It consumes the ruleset it holds, so the child works on a bitwise copy
/// on its own stack: the parent's `ChildRestriction` stays untouched and
/// closes the parent's descriptor on drop, while the copy closes the
/// child's (the two processes have separate descriptor tables). The copy
/// is never dropped, as it owns nothing more once `restrict_self` ran.
fn restrict(restriction: *const ChildRestriction) -> Result<(), c_int> {
    // SAFETY: `restriction` points at the parent's live ChildRestriction;
    // see above for why a second owner of its descriptor is sound here.
    let mut copy = ManuallyDrop::new(unsafe { ptr::read(restriction) });
    copy.restrict_self().map_err(|errno| errno as c_int)
}

/// Tries each candidate path in turn, like `execvp`: a missing file or a
/// non-directory prefix moves on, a permission error is remembered and
/// reported if nothing else works, anything else stops.
fn exec_first(args: &ChildArgs) -> c_int {
    let (mut last, mut denied) = (libc::ENOENT, false);
    for &path in args.candidates {
        // SAFETY: path, argv and envp are NUL-terminated strings and
        // NULL-terminated arrays owned by `Prepared`.
        unsafe { libc::execve(path, args.argv, args.envp) };
        match last_errno() {
            errno @ (libc::ENOENT | libc::ENOTDIR) => last = errno,
            libc::EACCES => denied = true,
            other => return other,
        }
    }
    if denied {
        libc::EACCES
    } else {
        last
    }
}

fn last_errno() -> c_int {
    nix::errno::Errno::last_raw()
}
