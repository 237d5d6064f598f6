//! The interpreter's memory budget (docs/configuration.md, `limits`): a global allocator that
//! counts the bytes magus holds, so a runaway spell (a string or list
//! doubled forever, a list of huge strings) stops with a located "memory
//! limit" error at its next evaluation step instead of an out-of-memory
//! abort. It only counts; the interpreter decides (`Interpreter::enter`).
//!
//! The interpreter's own thread counts in a thread-local tally and adds
//! it to the shared count only when it passes [`BATCH`] bytes either way
//! (see [`count_this_thread_locally`]): a locked add at every allocation
//! and free drained the store buffer and was a fifth of the time of
//! building an object. Other threads add to the shared count directly.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, Ordering};

/// The budget when `sandbox.limits.memory` is not declared (or the
/// sandbox is off): 1 GiB of live heap for the whole magus process.
pub(crate) const DEFAULT_HEAP_BUDGET: usize = 1 << 30;

/// Live bytes, less what threads hold in their [`PENDING`] tallies (so
/// it may dip below zero for a moment: a batched thread's unflushed
/// allocation freed by another thread).
static IN_USE: AtomicIsize = AtomicIsize::new(0);

/// How far a thread's tally may drift from zero before it is added to
/// [`IN_USE`]. Other threads see the interpreter's use late by at most
/// this much; the interpreter itself sees its own exactly ([`in_use`]).
const BATCH: isize = 64 << 10;

thread_local! {
    /// Whether this thread counts in [`PENDING`]; const and without a
    /// destructor, so that reading it never allocates (this is the
    /// allocator) and never fails.
    static LOCAL: Cell<bool> = const { Cell::new(false) };
    /// Bytes this thread allocated (net) not yet added to [`IN_USE`].
    static PENDING: Cell<isize> = const { Cell::new(0) };
}

#[inline]
fn count(delta: isize) {
    if !LOCAL.with(Cell::get) {
        IN_USE.fetch_add(delta, Ordering::Relaxed);
        return;
    }
    PENDING.with(|pending| {
        let tally = pending.get().wrapping_add(delta);
        if tally.unsigned_abs() > BATCH.unsigned_abs() {
            IN_USE.fetch_add(tally, Ordering::Relaxed);
            pending.set(0);
        } else {
            pending.set(tally);
        }
    });
}

/// Makes the calling thread count its allocations in a thread-local tally
/// until [`count_this_thread_shared`]. For the interpreter's thread,
/// which allocates and frees at every step.
pub(crate) fn count_this_thread_locally() {
    LOCAL.with(|local| local.set(true));
}

/// Adds the calling thread's tally to the shared count and makes it count
/// there directly again.
pub(crate) fn count_this_thread_shared() {
    LOCAL.with(|local| local.set(false));
    let tally = PENDING.with(|pending| pending.replace(0));
    IN_USE.fetch_add(tally, Ordering::Relaxed);
}

/// The system allocator, counting live bytes.
pub(crate) struct CountingAllocator;

// SAFETY: every call is passed unchanged to `System`; the counter is only
// bookkeeping and never affects what is returned.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(signed(layout.size()));
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(signed(layout.size()));
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        count(signed(layout.size()).wrapping_neg());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(signed(new_size).wrapping_sub(signed(layout.size())));
        }
        p
    }
}

/// A size as a count: a `Layout`'s size never exceeds `isize::MAX`.
#[inline]
fn signed(size: usize) -> isize {
    size as isize
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Counts `bytes` of memory reserved outside the allocator (a fiber's
/// stack) as held, until [`release_reserved`].
pub(crate) fn charge_reserved(bytes: usize) {
    IN_USE.fetch_add(signed(bytes), Ordering::Relaxed);
}

/// Stops counting what [`charge_reserved`] counted.
pub(crate) fn release_reserved(bytes: usize) {
    IN_USE.fetch_sub(signed(bytes), Ordering::Relaxed);
}

/// Bytes of heap magus holds now (all threads), with reserved fiber
/// stacks: exact for the calling thread's own allocations, up to
/// [`BATCH`] bytes late for each other thread that counts locally.
#[inline]
pub(crate) fn in_use() -> usize {
    let shared = IN_USE.load(Ordering::Relaxed);
    let own = PENDING.with(Cell::get);
    usize::try_from(shared.wrapping_add(own)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_allocation_is_counted_until_freed() {
        // Zeroed, so the pages are never touched. Other test threads
        // allocate and free meanwhile; 64 MiB of slack absorbs them.
        const SIZE: usize = 256 << 20;
        let before = in_use();
        let block = vec![0u8; SIZE];
        let during = in_use();
        assert!(during + (64 << 20) >= before + SIZE, "{before} → {during}");
        drop(std::hint::black_box(block));
        assert!(in_use() + SIZE - (64 << 20) <= during, "not released");
    }

    #[test]
    fn a_thread_counting_locally_tallies_its_own_and_hands_it_over() {
        std::thread::spawn(|| {
            count_this_thread_locally();
            let tally = || PENDING.with(Cell::get);
            let start = tally();
            let small = std::hint::black_box(vec![0u8; 1000]);
            assert_eq!(
                tally() - start,
                1000,
                "a small allocation stays in the tally"
            );
            assert!(in_use() >= 1000, "the thread sees its own tally");
            drop(small);
            assert_eq!(tally(), start);
            let large = std::hint::black_box(vec![0u8; 4 * BATCH as usize]);
            assert_eq!(tally(), 0, "past BATCH the tally goes to the shared count");
            drop(large);
            let _kept = std::hint::black_box(vec![0u8; 10]);
            count_this_thread_shared();
            assert_eq!(tally(), 0, "handed over");
            assert!(!LOCAL.with(Cell::get));
        })
        .join()
        .expect("the counting thread");
    }
}
