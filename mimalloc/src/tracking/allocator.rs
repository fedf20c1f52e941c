//! `Tracking<A>`: the `GlobalAlloc` that keeps the books around `A`. The hot path is one
//! compare on the thread's window (`Local::try_take`, `Local::try_give`) around the call into
//! `A`; everything else is a cold function that hands the whole call, in one access to the
//! thread's state, to the thread's [`Local`](super::local::Local), which decides how to book it.

use super::local::Local;
use super::thread;
use crate::MiMalloc;
use core::alloc::{GlobalAlloc, Layout};

/// A `GlobalAlloc` that counts the bytes allocated through it, process-wide and per thread,
/// and can refuse allocations beyond a process-wide limit.
///
/// `Tracking<A>` forwards every call to the allocator `A` (by default [`MiMalloc`]) and keeps
/// the books on the side; the books are read and set with the functions of
/// [`mimalloc::tracking`](crate::tracking), which also says what is counted, how exact the
/// figures are and how the limit works. It is opt-in (the `tracking` cargo feature) and a
/// separate type: [`MiMalloc`] and [`assign_global!`](crate::assign_global) do not pay for it.
///
/// ```
/// use mimalloc::{tracking, MiMalloc, Tracking};
///
/// #[global_allocator]
/// static GLOBAL: Tracking<MiMalloc> = Tracking::new(MiMalloc);
///
/// fn main() {
///     tracking::set_limit(Some(1 << 30)); // refuse allocations past 1 GiB
///     let v = vec![0u8; 1 << 20];
///     assert!(tracking::thread_stats().live_bytes >= 1 << 20);
///     tracking::flush();
///     let stats = tracking::stats();
///     assert!(stats.live_bytes >= 1 << 20 && stats.peak_bytes >= stats.live_bytes);
///     drop(v);
/// }
/// ```
///
/// The books are the process's, not the value's: every `Tracking` in a program (whatever its
/// `A`) adds to the same figures and is checked against the same limit. The one installed as
/// `#[global_allocator]` sees everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tracking<A = MiMalloc> {
    inner: A,
}

impl<A> Tracking<A> {
    /// Wraps `inner`; usable in a `static`.
    ///
    /// ```
    /// use mimalloc::{MiMalloc, Tracking};
    /// static GLOBAL: Tracking<MiMalloc> = Tracking::new(MiMalloc);
    /// ```
    pub const fn new(inner: A) -> Self {
        Tracking { inner }
    }

    /// The wrapped allocator.
    ///
    /// ```
    /// let tracking = mimalloc::Tracking::new(std::alloc::System);
    /// let _: &std::alloc::System = tracking.inner();
    /// ```
    pub const fn inner(&self) -> &A {
        &self.inner
    }
}

/// The hot path of an allocation. The closure given to the thread-local is kept this small on
/// purpose, so that `LocalKey::with` is inlined and the access compiles to a plain
/// thread-local address.
#[inline(always)]
fn try_take(size: usize) -> bool {
    thread::with_local(|local| local.try_take(size))
}

/// The hot path of a free: gives `size` bytes back to the window, or takes the slow path.
#[inline(always)]
fn give(size: usize) {
    if !thread::with_local(|local| local.try_give(size)) {
        give_slow(size);
    }
}

/// A free past the window (or on a thread with a budget scope selected), and the bytes of an
/// allocation the inner allocator failed: one access to the thread's state, which decides.
#[cold]
#[inline(never)]
fn give_slow(size: usize) {
    thread::with_local(|local| local.give_slow(size));
}

impl<A: GlobalAlloc> Tracking<A> {
    /// `alloc` and `alloc_zeroed`, one body: `zeroed` is a constant in each, so each compiles
    /// to its own hot path.
    ///
    /// # Safety
    ///
    /// The contract of `GlobalAlloc::alloc` (or `alloc_zeroed`).
    #[inline(always)]
    unsafe fn alloc_hot(&self, layout: Layout, zeroed: bool) -> *mut u8 {
        let size = layout.size();
        if try_take(size) {
            // SAFETY: the caller's contract, forwarded.
            let p = unsafe { self.inner_alloc(layout, zeroed) };
            if p.is_null() {
                give_slow(size);
            }
            p
        } else {
            // SAFETY: as above.
            unsafe { self.alloc_slow(layout, zeroed) }
        }
    }

    /// `alloc` or `alloc_zeroed` past the window (or on a thread with a budget scope
    /// selected), in one access to the thread's state, whose `take_slow` decides. Its own
    /// function, taking no closure: a closure's captures would be written to the stack on the
    /// hot path, before the branch that decides to come here. The inner allocator runs inside
    /// the access: the thread's state is cells, which a nested call through this allocator may
    /// use meanwhile.
    ///
    /// # Safety
    ///
    /// The contract of `GlobalAlloc::alloc` (or `alloc_zeroed`).
    #[cold]
    #[inline(never)]
    unsafe fn alloc_slow(&self, layout: Layout, zeroed: bool) -> *mut u8 {
        thread::with_local(|local| {
            local.take_slow(
                layout.size(),
                // SAFETY: the caller's contract, forwarded.
                || unsafe { self.inner_alloc(layout, zeroed) },
                // SAFETY: as above.
                |local| unsafe { self.alloc_settled(local, layout, zeroed) },
            )
        })
    }

    /// [`alloc_slow`](Self::alloc_slow) when it settles. Not inlined there, so that the scoped
    /// path keeps the one inlined call of the inner allocator.
    ///
    /// # Safety
    ///
    /// The contract of `GlobalAlloc::alloc` (or `alloc_zeroed`).
    #[cold]
    #[inline(never)]
    unsafe fn alloc_settled(&self, local: &Local, layout: Layout, zeroed: bool) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        local.take_settled(layout.size(), || unsafe {
            self.inner_alloc(layout, zeroed)
        })
    }

    /// # Safety
    ///
    /// The contract of `GlobalAlloc::alloc` (or `alloc_zeroed`).
    #[inline(always)]
    unsafe fn inner_alloc(&self, layout: Layout, zeroed: bool) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        unsafe {
            if zeroed {
                self.inner.alloc_zeroed(layout)
            } else {
                self.inner.alloc(layout)
            }
        }
    }

    /// `realloc` growing past the window (or on a thread with a budget scope selected, which
    /// is charged the growth), like [`alloc_slow`](Self::alloc_slow). A refusal leaves the
    /// block as it was, as a failed `realloc` must.
    ///
    /// # Safety
    ///
    /// The contract of `GlobalAlloc::realloc`, and `new_size > layout.size()`.
    #[cold]
    #[inline(never)]
    unsafe fn realloc_slow(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        thread::with_local(|local| {
            local.take_slow(
                new_size - layout.size(),
                // SAFETY: the caller's contract, forwarded.
                || unsafe { self.inner.realloc(ptr, layout, new_size) },
                // SAFETY: as above.
                |local| unsafe { self.realloc_settled(local, ptr, layout, new_size) },
            )
        })
    }

    /// [`realloc_slow`](Self::realloc_slow) when it settles.
    ///
    /// # Safety
    ///
    /// The contract of `GlobalAlloc::realloc`, and `new_size > layout.size()`.
    #[cold]
    #[inline(never)]
    unsafe fn realloc_settled(
        &self,
        local: &Local,
        ptr: *mut u8,
        layout: Layout,
        new_size: usize,
    ) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        local.take_settled(new_size - layout.size(), || unsafe {
            self.inner.realloc(ptr, layout, new_size)
        })
    }
}

// SAFETY: every method forwards to `A` with the caller's arguments unchanged, so the blocks
// are `A`'s, with `A`'s guarantees; the bookkeeping never touches the blocks, and a refused
// allocation returns null, which `GlobalAlloc` allows. Nothing here unwinds (no panics: the
// thread-local is a const-initialized native one, or the Win32 TLS API).
unsafe impl<A: GlobalAlloc> GlobalAlloc for Tracking<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc`, forwarded.
        unsafe { self.alloc_hot(layout, false) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc_zeroed`, forwarded.
        unsafe { self.alloc_hot(layout, true) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc`, forwarded: `ptr` came from this
        // allocator, that is from `A`, with `layout`.
        unsafe { self.inner.dealloc(ptr, layout) };
        give(layout.size());
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old_size = layout.size();
        if new_size > old_size {
            let growth = new_size - old_size;
            if try_take(growth) {
                // SAFETY: the caller's contract for `realloc`, forwarded.
                let p = unsafe { self.inner.realloc(ptr, layout, new_size) };
                if p.is_null() {
                    give_slow(growth);
                }
                p
            } else {
                // SAFETY: as above, and `new_size > old_size`.
                unsafe { self.realloc_slow(ptr, layout, new_size) }
            }
        } else {
            // SAFETY: as above.
            let p = unsafe { self.inner.realloc(ptr, layout, new_size) };
            if !p.is_null() {
                give(old_size - new_size);
            }
            p
        }
    }
}
