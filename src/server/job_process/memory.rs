//! A job process's memory budget: the binary's allocator, counting the heap in use once a
//! budget is set, and ending the process before an allocation would take it past.
//!
//! Rust aborts on a failed allocation and nothing can catch it, so a budget cannot end one job
//! and keep its process; it ends the process, which is why jobs run in a process of their own
//! (`server::job_process`). The exit is `_exit` with [`EXIT_OVER_MEMORY`], decided before the
//! allocation is made (a hostile input's one huge allocation never touches the memory), and
//! from inside the allocator nothing may allocate, so the message is a fixed string written
//! straight to standard error.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};

/// The exit status of a job process that reached its memory budget.
pub const EXIT_OVER_MEMORY: i32 = 86;

static COUNTING: AtomicBool = AtomicBool::new(false);
/// Bytes in use, counted from when the budget was set (what was allocated before and freed
/// after makes it a little low, never high).
static LIVE: AtomicIsize = AtomicIsize::new(0);
static BUDGET: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The process's allocator `A`, with a budget that is off until [`set_budget`].
pub struct Budgeted<A>(pub A);

/// From now on, an allocation that would take the heap in use past `bytes` ends the process
/// with [`EXIT_OVER_MEMORY`]. Meant to be called once, first thing in a job process.
pub fn set_budget(bytes: usize) {
    BUDGET.store(bytes, Ordering::Relaxed);
    COUNTING.store(true, Ordering::Release);
}

/// The heap in use as counted since the budget was set (0 without one).
pub fn in_use() -> usize {
    usize::try_from(LIVE.load(Ordering::Relaxed)).unwrap_or(0)
}

/// Whether `more` bytes fit beside `in_use` within `budget`.
fn fits(in_use: isize, more: usize, budget: usize) -> bool {
    let in_use = usize::try_from(in_use).unwrap_or(0);
    in_use.saturating_add(more) <= budget
}

#[inline]
fn charge(size: usize) {
    if !COUNTING.load(Ordering::Relaxed) {
        return;
    }
    if !fits(
        LIVE.load(Ordering::Relaxed),
        size,
        BUDGET.load(Ordering::Relaxed),
    ) {
        over_budget();
    }
    LIVE.fetch_add(size as isize, Ordering::Relaxed);
}

#[inline]
fn credit(size: usize) {
    if COUNTING.load(Ordering::Relaxed) {
        LIVE.fetch_sub(size as isize, Ordering::Relaxed);
    }
}

#[cold]
fn over_budget() -> ! {
    const MESSAGE: &[u8] = b"fleetbot: this job process reached its memory budget (FLEETBOT_JOB_MEMORY_MIB) and exits; its job is failed\n";
    // SAFETY: write(2) and _exit(2) allocate nothing and are safe to call from any thread;
    // the message is a static buffer of the given length.
    unsafe {
        libc::write(2, MESSAGE.as_ptr().cast(), MESSAGE.len());
        libc::_exit(EXIT_OVER_MEMORY)
    }
}

// SAFETY: every call is passed on to `A` unchanged; the counting around it neither allocates
// nor unwinds.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Budgeted<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        charge(layout.size());
        // SAFETY: the caller's contract is passed on.
        let p = unsafe { self.0.alloc(layout) };
        if p.is_null() {
            credit(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        charge(layout.size());
        // SAFETY: the caller's contract is passed on.
        let p = unsafe { self.0.alloc_zeroed(layout) };
        if p.is_null() {
            credit(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is passed on.
        unsafe { self.0.dealloc(ptr, layout) };
        credit(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = layout.size();
        if new_size > old {
            charge(new_size - old);
        }
        // SAFETY: the caller's contract is passed on.
        let p = unsafe { self.0.realloc(ptr, layout, new_size) };
        match (p.is_null(), new_size > old) {
            (true, true) => credit(new_size - old),
            (false, false) => credit(old - new_size),
            _ => {}
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_allocation_fits_only_within_what_is_left() {
        assert!(fits(0, 100, 100));
        assert!(!fits(1, 100, 100));
        assert!(fits(60, 40, 100));
        assert!(!fits(60, 41, 100));
        // Frees of what was allocated before counting began take the count below zero:
        // that is room, not an overflow.
        assert!(fits(-500, 100, 100));
        assert!(!fits(isize::MAX, usize::MAX, usize::MAX - 1));
        assert!(fits(0, usize::MAX, usize::MAX));
    }
}
