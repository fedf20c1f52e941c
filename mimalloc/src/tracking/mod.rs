//! `Tracking`: allocation accounting and a memory limit around any `GlobalAlloc`.
//!
//! Design (see [`account`] for the details): one set of process-wide atomics, and a buffer per
//! thread in thread-local storage that absorbs allocations and frees until its net change
//! leaves a window of ±64 KiB (settable; narrower near the limit); only then does the thread
//! touch the atomics. The limit is enforced on the bytes handed to threads' buffers, so it holds
//! without any shared write per call. A budget scope ([`crate::budget`]) empties its thread's
//! window, so that the thread's every call comes to the slow path, which charges the scope.

mod account;
mod scope;

#[cfg(not(all(windows, any(target_env = "gnu", target_vendor = "win7"))))]
#[path = "thread_std.rs"]
mod thread;
#[cfg(all(windows, any(target_env = "gnu", target_vendor = "win7")))]
#[path = "thread_windows.rs"]
mod thread;

// Where std's `thread_local!` is not native thread-local storage, it allocates on a thread's
// first access: through this allocator, recursively. Refuse those targets rather than hang.
#[cfg(not(any(
    windows,
    all(
        target_os = "linux",
        any(target_env = "gnu", target_env = "musl"),
        not(all(target_arch = "x86_64", target_pointer_width = "32"))
    ),
    target_os = "macos",
    target_os = "ios",
    target_os = "tvos",
    target_os = "watchos",
    target_os = "freebsd",
    target_os = "netbsd",
    target_os = "dragonfly",
    target_os = "fuchsia",
)))]
compile_error!(
    "the `tracking` feature of mimalloc needs native thread-local storage, which this target's \
     std does not have (its thread_local! allocates, which a global allocator cannot use): \
     supported are Linux (gnu, musl), Apple targets, FreeBSD, NetBSD, DragonFly, Fuchsia and \
     Windows"
);

use crate::budget::Usage;
use crate::MiMalloc;
use account::{Local, Scoped};
use core::alloc::{GlobalAlloc, Layout};
use core::ptr;

/// A `GlobalAlloc` that counts the bytes allocated through it, process-wide and per thread,
/// and can refuse allocations beyond a process-wide limit.
///
/// `Tracking<A>` forwards every call to the allocator `A` (by default [`MiMalloc`]) and keeps
/// the books on the side. It is opt-in (the `tracking` cargo feature) and a separate type:
/// [`MiMalloc`] and [`assign_global!`](crate::assign_global) do not pay for it.
///
/// ```
/// use mimalloc::{MiMalloc, Tracking};
///
/// #[global_allocator]
/// static GLOBAL: Tracking<MiMalloc> = Tracking::new(MiMalloc);
///
/// fn main() {
///     GLOBAL.set_limit(Some(1 << 30)); // refuse allocations past 1 GiB
///     let v = vec![0u8; 1 << 20];
///     assert!(GLOBAL.thread_stats().live_bytes >= 1 << 20);
///     GLOBAL.flush();
///     let stats = GLOBAL.stats();
///     assert!(stats.live_bytes >= 1 << 20 && stats.peak_bytes >= stats.live_bytes);
///     drop(v);
/// }
/// ```
///
/// # What is counted
///
/// The sizes of the layouts asked for: a `Vec<u64>` with capacity 10 counts 80 bytes. Not the
/// inner allocator's rounding up to its size classes, its metadata or the memory it keeps
/// cached, so the figures are not the process's resident memory. A `realloc` counts the
/// difference between the two sizes.
///
/// # One account per process
///
/// The books are process-wide, not per value: every `Tracking` handle in a program (whatever
/// its `A`) adds to the same figures and is checked against the same limit. The one installed
/// as `#[global_allocator]` sees everything; another handle's calls add to the same figures.
///
/// # Accuracy
///
/// Each thread buffers its net change (allocated minus freed bytes) and publishes it to the
/// process-wide figures when it leaves a window of ±64 KiB (the default of
/// [`set_window`](Tracking::set_window); the figures below scale with it), when the thread
/// calls [`flush`](Tracking::flush), and when the thread exits. So:
///
/// - [`thread_stats`](Tracking::thread_stats)`().live_bytes` is exact at all times;
/// - [`stats`](Tracking::stats)`().live_bytes` is exact once every thread that allocated or
///   freed since its last flush has flushed or exited; until then it is off by at most 64 KiB
///   per such thread (e.g. exact right after a single-threaded program calls `flush`, or after
///   joining worker threads and calling `flush` on the joining thread);
/// - peaks are the highest figures seen when a thread publishes. An allocation publishes when
///   it would take the thread's unpublished net change above +64 KiB (less near the limit), so
///   every allocation above 128 KiB is seen, and a smaller one may not be (64 KiB right after a
///   publication, up to 128 KiB after as much unpublished freeing): the peaks can miss up to
///   64 KiB per thread of a short-lived high point. A failed allocation of the
///   inner allocator is never counted, not even in a peak, and the process peak never exceeds
///   the limit.
///
/// # The limit
///
/// [`set_limit`](Tracking::set_limit) sets a process-wide limit on live bytes. An allocation
/// that would pass it returns null *without calling the inner allocator*: `Vec::try_reserve`
/// returns an error, and infallible allocations (`Vec::push`, `Box::new`) call
/// `handle_alloc_error`, which aborts the process with "memory allocation of N bytes failed".
/// (For a limit that ends in an error the program handles instead, see [`crate::budget`].)
/// The limit is never exceeded: a thread allocates from its buffer only bytes it was granted
/// from the limit beforehand. The price is that an allocation can be refused a little early,
/// while up to 128 KiB per other thread (what they were granted but have not used, or freed
/// but not published) is still counted; the grants shrink as the limit nears, down to checking
/// every allocation against it. Frees and shrinking reallocs are never refused.
///
/// # Platforms and cost
///
/// The buffer lives in native thread-local storage (std's `thread_local!` on Linux, Apple
/// targets, the BSDs and Windows MSVC); the hot path of an allocation or free is a
/// thread-local load, an add, a compare and a store. On `*-windows-gnu`, whose std has no
/// native thread-local storage (its `thread_local!` would allocate, through this allocator),
/// the buffer is kept with the Win32 TLS API and flushed by an FLS callback at thread exit. On
/// other targets the feature is a compile error. Measured overhead: see `docs/budgets.md`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tracking<A = MiMalloc> {
    inner: A,
}

/// Process-wide figures of [`Tracking`], from [`Tracking::stats`].
///
/// Each field is read on its own, so under concurrent allocation they are not one consistent
/// snapshot; see [`Tracking`]'s accuracy section for how close they are.
///
/// ```
/// let stats = mimalloc::Tracking::new(mimalloc::MiMalloc).stats();
/// assert!(stats.peak_bytes >= stats.live_bytes);
/// assert!(stats.charged_bytes >= stats.live_bytes);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TrackingStats {
    /// Bytes in live blocks (requested sizes), as published by the threads.
    pub live_bytes: usize,
    /// The highest `live_bytes` seen since the start or the last
    /// [`reset_peak`](Tracking::reset_peak).
    pub peak_bytes: usize,
    /// What the limit is checked against: `live_bytes` plus what threads were granted for their
    /// buffers and have not published yet (at most 64 KiB each). Never above the limit when it
    /// grows.
    pub charged_bytes: usize,
    /// The process-wide limit, if any.
    pub limit: Option<usize>,
    /// Allocations refused because they would have passed the limit.
    pub refused_allocations: usize,
}

/// The calling thread's figures, from [`Tracking::thread_stats`].
///
/// ```
/// use mimalloc::{MiMalloc, Tracking};
/// use std::alloc::{GlobalAlloc, Layout};
///
/// let tracking = Tracking::new(MiMalloc);
/// let before = tracking.thread_stats().live_bytes;
/// let layout = Layout::new::<[u8; 100]>();
/// // SAFETY: a non-zero size; freed once with the same layout.
/// unsafe {
///     let p = tracking.alloc(layout);
///     assert_eq!(tracking.thread_stats().live_bytes, before + 100);
///     tracking.dealloc(p, layout);
/// }
/// assert_eq!(tracking.thread_stats().live_bytes, before);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ThreadStats {
    /// Bytes this thread allocated minus bytes it freed, exact. Negative when the thread has
    /// freed more than it allocated (blocks other threads allocated).
    pub live_bytes: isize,
    /// The highest `live_bytes` of this thread seen when it published (see [`Tracking`]'s
    /// accuracy section), or since [`reset_peak`](Tracking::reset_peak) on this thread.
    pub peak_bytes: usize,
    /// The part of `live_bytes` the process-wide figures do not have yet: the thread's net
    /// change since it last published, within ±[`window`](Tracking::window).
    pub unpublished_bytes: isize,
}

impl<A> Tracking<A> {
    /// The widest window [`set_window`](Tracking::set_window) sets: a quarter of the address
    /// space, so that a thread's buffered figures cannot overflow.
    pub const WIDEST_WINDOW: usize = account::MAX_WINDOW;

    /// Wraps `inner`; usable in a `static`.
    ///
    /// ```
    /// use mimalloc::{MiMalloc, Tracking};
    /// static GLOBAL: Tracking<MiMalloc> = Tracking::new(MiMalloc);
    /// assert_eq!(GLOBAL.stats().limit, None);
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

    /// The process-wide figures (see [`TrackingStats`] and the accuracy section above).
    ///
    /// ```
    /// use mimalloc::{MiMalloc, Tracking};
    /// let tracking = Tracking::new(MiMalloc);
    /// let s = tracking.stats();
    /// println!("{} bytes live, peak {}", s.live_bytes, s.peak_bytes);
    /// ```
    pub fn stats(&self) -> TrackingStats {
        let limit = account::limit();
        TrackingStats {
            live_bytes: account::live(),
            peak_bytes: account::peak(),
            charged_bytes: account::charged(),
            limit: if limit == account::NO_LIMIT {
                None
            } else {
                Some(limit)
            },
            refused_allocations: account::refused(),
        }
    }

    /// The calling thread's figures (see [`ThreadStats`]).
    ///
    /// ```
    /// let tracking = mimalloc::Tracking::new(mimalloc::MiMalloc);
    /// let mine = tracking.thread_stats();
    /// assert!(mine.peak_bytes as isize >= mine.live_bytes);
    /// ```
    pub fn thread_stats(&self) -> ThreadStats {
        on_real_window(|local| ThreadStats {
            live_bytes: account::thread_live(local),
            peak_bytes: account::thread_peak(local),
            unpublished_bytes: account::unpublished(local),
        })
    }

    /// Publishes the calling thread's buffered change to the process-wide figures, and gives
    /// back what the thread was granted from the limit (it takes a new grant when it next
    /// allocates). After every thread that allocated has flushed or exited, [`stats`] is exact.
    ///
    /// [`stats`]: Tracking::stats
    ///
    /// ```
    /// use mimalloc::{MiMalloc, Tracking};
    /// use std::alloc::{GlobalAlloc, Layout};
    ///
    /// let tracking = Tracking::new(MiMalloc); // not the global allocator: only these calls count
    /// let layout = Layout::new::<[u64; 4]>();
    /// // SAFETY: a non-zero size; freed once with the same layout.
    /// let p = unsafe { tracking.alloc(layout) };
    /// tracking.flush();
    /// assert_eq!(tracking.stats().live_bytes, 32);
    /// // SAFETY: as above.
    /// unsafe { tracking.dealloc(p, layout) };
    /// tracking.flush();
    /// assert_eq!(tracking.stats().live_bytes, 0);
    /// ```
    pub fn flush(&self) {
        on_real_window(account::flush);
    }

    /// Publishes the calling thread's buffered change, like [`flush`](Tracking::flush), but
    /// keeps its grant: for a check of [`stats`](Tracking::stats) that should not cost the
    /// thread's next allocation a trip to the shared figures.
    ///
    /// ```
    /// use mimalloc::{MiMalloc, Tracking};
    /// use std::alloc::{GlobalAlloc, Layout};
    ///
    /// let tracking = Tracking::new(MiMalloc); // not the global allocator: only these calls count
    /// let layout = Layout::new::<[u64; 4]>();
    /// // SAFETY: a non-zero size; freed once with the same layout.
    /// let p = unsafe { tracking.alloc(layout) };
    /// tracking.publish();
    /// assert_eq!(tracking.stats().live_bytes, 32);
    /// assert_eq!(tracking.thread_stats().unpublished_bytes, 0);
    /// // SAFETY: as above.
    /// unsafe { tracking.dealloc(p, layout) };
    /// ```
    pub fn publish(&self) {
        on_real_window(account::publish);
    }

    /// Restarts the process-wide peak at the current live bytes, and the calling thread's peak
    /// at its current live bytes: to measure the peak of one phase of a program.
    ///
    /// ```
    /// let tracking = mimalloc::Tracking::new(mimalloc::MiMalloc);
    /// tracking.reset_peak();
    /// let s = tracking.stats();
    /// assert_eq!(s.peak_bytes, s.live_bytes);
    /// ```
    pub fn reset_peak(&self) {
        on_real_window(account::reset_thread_peak);
        account::reset_peak();
    }

    /// Sets (or with `None` removes) the process-wide limit on live bytes.
    ///
    /// Raising it takes effect at once. Lowering it below what is already charged takes back
    /// nothing: blocks stay allocated, and threads may still use the buffer grants they hold
    /// (at most 64 KiB each); every new grant and every allocation that does not fit in a
    /// thread's buffer is checked against the new limit.
    ///
    /// ```
    /// use mimalloc::{MiMalloc, Tracking};
    ///
    /// #[global_allocator]
    /// static GLOBAL: Tracking<MiMalloc> = Tracking::new(MiMalloc);
    ///
    /// fn main() {
    ///     GLOBAL.set_limit(Some(GLOBAL.stats().charged_bytes + (1 << 20)));
    ///     // More than the limit allows: refused, without asking mimalloc.
    ///     let mut v: Vec<u8> = Vec::new();
    ///     assert!(v.try_reserve(2 << 20).is_err());
    ///     assert!(v.try_reserve(1 << 10).is_ok());
    ///     assert_eq!(GLOBAL.stats().refused_allocations, 1);
    ///     GLOBAL.set_limit(None);
    ///     assert_eq!(GLOBAL.limit(), None);
    /// }
    /// ```
    pub fn set_limit(&self, bytes: Option<usize>) {
        account::set_limit(bytes.unwrap_or(account::NO_LIMIT));
    }

    /// The process-wide limit, if any.
    ///
    /// ```
    /// let tracking = mimalloc::Tracking::new(mimalloc::MiMalloc);
    /// tracking.set_limit(Some(1 << 40));
    /// assert_eq!(tracking.limit(), Some(1 << 40));
    /// ```
    pub fn limit(&self) -> Option<usize> {
        self.stats().limit
    }

    /// Sets how far a thread's unpublished net change may go, either way, before the thread
    /// publishes it; `None` restores the default, 64 KiB. Values above
    /// [`WIDEST_WINDOW`](Tracking::WIDEST_WINDOW) are taken as it: threads then publish only when
    /// they [`flush`](Tracking::flush), exit or near the limit. A wider window touches the
    /// shared figures less often and leaves them less exact (the accuracy section's 64 KiB
    /// becomes the window); `0` publishes every call. Threads take the new window when they
    /// next publish.
    ///
    /// ```
    /// use mimalloc::{MiMalloc, Tracking};
    /// let tracking = Tracking::new(MiMalloc);
    /// tracking.set_window(Some(1 << 20));
    /// assert_eq!(tracking.window(), 1 << 20);
    /// tracking.set_window(Some(usize::MAX));
    /// assert_eq!(tracking.window(), Tracking::<MiMalloc>::WIDEST_WINDOW);
    /// tracking.set_window(None);
    /// assert_eq!(tracking.window(), 64 << 10);
    /// ```
    pub fn set_window(&self, bytes: Option<usize>) {
        account::set_window(bytes.unwrap_or(account::DEFAULT_WINDOW));
    }

    /// The window set by [`set_window`](Tracking::set_window).
    ///
    /// ```
    /// assert!(mimalloc::Tracking::new(mimalloc::MiMalloc).window() > 0);
    /// ```
    pub fn window(&self) -> usize {
        account::window()
    }

    /// Whether the calling thread published to the process-wide figures since the last call
    /// (of this or of [`budget::poll`](crate::budget::poll), which uses it too): a cheap hint
    /// that a check of [`stats`](Tracking::stats) against a limit of one's own may now give a
    /// different answer.
    ///
    /// ```
    /// use mimalloc::{MiMalloc, Tracking};
    ///
    /// #[global_allocator]
    /// static GLOBAL: Tracking<MiMalloc> = Tracking::new(MiMalloc);
    ///
    /// fn main() {
    ///     GLOBAL.take_published();
    ///     let v = vec![0u8; 1 << 20]; // beyond the window: published at once
    ///     assert!(GLOBAL.take_published());
    ///     assert!(!GLOBAL.take_published());
    ///     drop(v);
    /// }
    /// ```
    pub fn take_published(&self) -> bool {
        thread::with_local(account::take_published)
    }
}

/// Takes `size` bytes from the calling thread's buffer: the hot path. The closure given to the
/// thread-local is kept this small on purpose, so that `LocalKey::with` is inlined and the
/// access compiles to a plain thread-local address.
#[inline(always)]
fn try_take(size: usize) -> bool {
    thread::with_local(|local| local.try_take(size))
}

/// Returns `size` bytes to the calling thread's buffer, settling if it overflows.
#[inline(always)]
fn give(size: usize) {
    if !thread::with_local(|local| local.try_give(size)) {
        give_slow(size);
    }
}

#[cold]
#[inline(never)]
fn give_slow(size: usize) {
    // Two thread-local accesses rather than one closure with both: kept this small, `with`
    // inlines, and a thread with a scope frees within its stashed range in a few instructions.
    if !thread::with_local(|local| account::give_scoped(local, size)) {
        give_settled(size);
    }
}

#[cold]
#[inline(never)]
fn give_settled(size: usize) {
    on_real_window(|local| account::give(local, size));
}

/// Runs `f` on `local` with its real range, which a selected budget scope keeps stashed (so
/// that every call comes to the slow path, where the scope is charged).
fn on_real<R>(local: &Local, f: impl FnOnce(&Local) -> R) -> R {
    let stashed = account::enter_real(local);
    let result = f(local);
    if stashed {
        account::leave_real(local, 0);
    }
    result
}

/// [`on_real`] on the calling thread's buffer.
fn on_real_window<R>(f: impl FnOnce(&Local) -> R) -> R {
    thread::with_local(|local| on_real(local, f))
}

/// Selects `scope` for the calling thread (or none), returning the one it replaces: the
/// mechanism under [`crate::budget`].
pub(crate) fn select_scope(scope: Option<Usage>) -> Option<Usage> {
    thread::with_local(|local| account::select(local, scope))
}

/// The calling thread's selected scope and what it has been charged so far.
pub(crate) fn selected_scope() -> Option<Usage> {
    thread::with_local(account::selected)
}

/// Whether a cheap check ([`crate::budget::poll`]) should check for real now: the thread
/// published since it last looked, or its unpublished change is half a window, or this is the
/// `every`th call.
pub(crate) fn poll_due(every: u32) -> bool {
    on_real_window(|local| {
        let published = account::take_published(local);
        let big = account::unpublished(local).unsigned_abs() >= account::window() / 2;
        let counted = account::count_poll(local, every);
        published || big || counted
    })
}

/// Takes `size` bytes past the thread's buffer (settling with the process figures, checked
/// against the limit); `false` if refused.
#[cold]
#[inline(never)]
fn charge(size: usize) -> bool {
    thread::with_local(|local| account::settle(local, size, 0, true))
}

/// After an allocation that settled: give the reservation back if the inner allocator failed,
/// or count the bytes as live (and record the peaks) if it succeeded.
#[cold]
#[inline(never)]
fn charged(p: *mut u8, size: usize) -> *mut u8 {
    if p.is_null() {
        account::release(size);
    } else {
        thread::with_local(|local| account::confirm(local, size));
    }
    p
}

impl<A: GlobalAlloc> Tracking<A> {
    /// `alloc` or `alloc_zeroed` past the buffer, or on a thread with a budget scope selected.
    /// Not a closure: a closure's captures would be written to the stack on the hot path,
    /// before the branch that decides to come here.
    ///
    /// # Safety
    ///
    /// The contract of `GlobalAlloc::alloc` (or `alloc_zeroed`).
    #[cold]
    #[inline(never)]
    unsafe fn alloc_slow(&self, layout: Layout, zeroed: bool) -> *mut u8 {
        let size = layout.size();
        match thread::with_local(|local| account::take_scoped(local, size)) {
            // SAFETY: the caller's contract, forwarded (and so below).
            Scoped::No => unsafe { self.alloc_settled(layout, zeroed) },
            Scoped::Taken => {
                // SAFETY: as above.
                let p = unsafe { self.inner_alloc(layout, zeroed) };
                thread::with_local(|local| account::taken(local, size, !p.is_null()));
                p
            }
            Scoped::Settle => {
                // SAFETY: as above.
                let p = unsafe { self.alloc_settled(layout, zeroed) };
                let charged = if p.is_null() { 0 } else { size };
                thread::with_local(|local| account::leave_real(local, charged));
                p
            }
        }
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

    /// Settles with the process figures (checked against the limit), then allocates.
    ///
    /// # Safety
    ///
    /// The contract of `GlobalAlloc::alloc` (or `alloc_zeroed`).
    unsafe fn alloc_settled(&self, layout: Layout, zeroed: bool) -> *mut u8 {
        if !charge(layout.size()) {
            return ptr::null_mut();
        }
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { self.inner_alloc(layout, zeroed) };
        charged(p, layout.size())
    }

    /// `realloc` growing by more than the buffer holds, or on a thread with a budget scope
    /// selected (as in [`alloc_slow`](Self::alloc_slow), the scope is charged the growth).
    ///
    /// # Safety
    ///
    /// The contract of `GlobalAlloc::realloc`, and `new_size > layout.size()`.
    #[cold]
    #[inline(never)]
    unsafe fn realloc_slow(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let growth = new_size - layout.size();
        match thread::with_local(|local| account::take_scoped(local, growth)) {
            // SAFETY: the caller's contract, forwarded (and so below).
            Scoped::No => unsafe { self.realloc_settled(ptr, layout, new_size) },
            Scoped::Taken => {
                // SAFETY: as above.
                let p = unsafe { self.inner.realloc(ptr, layout, new_size) };
                thread::with_local(|local| account::taken(local, growth, !p.is_null()));
                p
            }
            Scoped::Settle => {
                // SAFETY: as above.
                let p = unsafe { self.realloc_settled(ptr, layout, new_size) };
                let charged = if p.is_null() { 0 } else { growth };
                thread::with_local(|local| account::leave_real(local, charged));
                p
            }
        }
    }

    /// Settles the growth with the process figures (checked against the limit), then reallocates.
    ///
    /// # Safety
    ///
    /// The contract of `GlobalAlloc::realloc`, and `new_size > layout.size()`.
    unsafe fn realloc_settled(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let growth = new_size - layout.size();
        if !charge(growth) {
            // Refused: the block is left as it was, as a failed `realloc` must.
            return ptr::null_mut();
        }
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { self.inner.realloc(ptr, layout, new_size) };
        charged(p, growth)
    }
}

// SAFETY: every method forwards to `A` with the caller's arguments unchanged, so the blocks
// are `A`'s, with `A`'s guarantees; the bookkeeping never touches the blocks, and a refused
// allocation returns null, which `GlobalAlloc` allows. Nothing here unwinds (no panics: the
// thread-local is a const-initialized native one, or the Win32 TLS API).
unsafe impl<A: GlobalAlloc> GlobalAlloc for Tracking<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let size = layout.size();
        if try_take(size) {
            // SAFETY: the caller's contract for `alloc`, forwarded.
            let p = unsafe { self.inner.alloc(layout) };
            if p.is_null() {
                give_slow(size);
            }
            p
        } else {
            // SAFETY: as above.
            unsafe { self.alloc_slow(layout, false) }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let size = layout.size();
        if try_take(size) {
            // SAFETY: the caller's contract for `alloc_zeroed`, forwarded.
            let p = unsafe { self.inner.alloc_zeroed(layout) };
            if p.is_null() {
                give_slow(size);
            }
            p
        } else {
            // SAFETY: as above.
            unsafe { self.alloc_slow(layout, true) }
        }
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
