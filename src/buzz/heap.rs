//! The interpreter's memory budget (DESIGN §6a): a global allocator that
//! counts the bytes magus holds, so a runaway spell (a string or list
//! doubled forever, a list of huge strings) stops with a located "memory
//! limit" error at its next evaluation step instead of an out-of-memory
//! abort. It only counts; the interpreter decides (`Interpreter::enter`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The budget when `sandbox.limits.memory` is not declared (or the
/// sandbox is off): 1 GiB of live heap for the whole magus process.
pub const DEFAULT_HEAP_BUDGET: usize = 1 << 30;

static IN_USE: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counting live bytes.
pub struct CountingAllocator;

// SAFETY: every call is passed unchanged to `System`; the counter is only
// bookkeeping and never affects what is returned.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            IN_USE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            IN_USE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            IN_USE.fetch_add(new_size, Ordering::Relaxed);
            IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Counts `bytes` of memory reserved outside the allocator (a fiber's
/// stack) as held, until [`release_reserved`].
pub fn charge_reserved(bytes: usize) {
    IN_USE.fetch_add(bytes, Ordering::Relaxed);
}

/// Stops counting what [`charge_reserved`] counted.
pub fn release_reserved(bytes: usize) {
    IN_USE.fetch_sub(bytes, Ordering::Relaxed);
}

/// Bytes of heap magus holds now (all threads), with reserved fiber stacks.
pub fn in_use() -> usize {
    IN_USE.load(Ordering::Relaxed)
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
}
