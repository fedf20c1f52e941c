//! Allocation accounting and a memory limit around any `GlobalAlloc` (the `tracking` feature).
//!
//! [`Tracking<A>`](Tracking) is the `GlobalAlloc`; the books it keeps are the process's, and
//! are read and set with this module's functions: [`stats`], [`thread_stats`], [`flush`],
//! [`publish`], [`reset_peak`], [`set_limit`], [`set_window`], [`take_published`].
//!
//! ```
//! use mimalloc::{tracking, MiMalloc, Tracking};
//!
//! #[global_allocator]
//! static GLOBAL: Tracking<MiMalloc> = Tracking::new(MiMalloc);
//!
//! fn main() {
//!     let v = vec![0u8; 1 << 20];
//!     tracking::flush();
//!     let stats = tracking::stats();
//!     println!("{} bytes live, peak {}", stats.live_bytes, stats.peak_bytes);
//!     assert!(stats.live_bytes >= 1 << 20);
//!     drop(v);
//! }
//! ```
//!
//! # What is counted
//!
//! The sizes of the layouts asked for: a `Vec<u64>` with capacity 10 counts 80 bytes. Not the
//! inner allocator's rounding up to its size classes, its metadata or the memory it keeps
//! cached, so the figures are not the process's resident memory. A `realloc` counts the
//! difference between the two sizes. Everything that goes through a `Tracking` counts, whatever
//! its inner allocator: with `Tracking` as the `#[global_allocator]`, that is everything.
//!
//! # Accuracy
//!
//! Each thread buffers its net change (allocated minus freed bytes) and publishes it to the
//! process-wide figures when it leaves a window of ±64 KiB (the default of [`set_window`]; the
//! figures below scale with it), when the thread calls [`flush`], and when the thread exits.
//! So:
//!
//! - [`thread_stats`]`().live_bytes` is exact at all times;
//! - [`stats`]`().live_bytes` is exact once every thread that allocated or freed since its
//!   last flush has flushed or exited; until then it is off by at most 64 KiB per such thread
//!   (e.g. exact right after a single-threaded program calls `flush`, or after joining worker
//!   threads and calling `flush` on the joining thread);
//! - peaks are the highest figures seen when a thread publishes. An allocation publishes when
//!   it would take the thread's unpublished net change above +64 KiB (less near the limit), so
//!   every allocation above 128 KiB is seen, and a smaller one may not be (64 KiB right after a
//!   publication, up to 128 KiB after as much unpublished freeing): the peaks can miss up to
//!   64 KiB per thread of a short-lived high point. A failed allocation of the inner allocator
//!   is never counted, not even in a peak, and the process peak never exceeds the limit.
//!
//! # The limit
//!
//! [`set_limit`] sets a process-wide limit on live bytes. An allocation that would pass it
//! returns null *without calling the inner allocator*: `Vec::try_reserve` returns an error, and
//! infallible allocations (`Vec::push`, `Box::new`) call `handle_alloc_error`, which aborts the
//! process with "memory allocation of N bytes failed". (For a limit that ends in an error the
//! program handles instead, see [`crate::budget`].) The limit is never exceeded: a thread
//! allocates from its window only bytes it was granted from the limit beforehand. The price is
//! that an allocation can be refused a little early, while up to 128 KiB per other thread
//! (what they were granted but have not used, or freed but not published) is still counted;
//! the grants shrink as the limit nears, down to checking every allocation against it. Frees
//! and shrinking reallocs are never refused.
//!
//! # Platforms and cost
//!
//! Each thread's state lives in native thread-local storage (std's `thread_local!` on Linux,
//! Apple targets, the BSDs and Windows MSVC); the hot path of an allocation or free is a
//! thread-local load, an add, a compare and a store. On `*-windows-gnu`, whose std has no
//! native thread-local storage (its `thread_local!` would allocate, through this allocator),
//! the state is kept with the Win32 TLS API and flushed by an FLS callback at thread exit. On
//! other targets the feature is a compile error. Measured overhead: `docs/budgets.md`.
//!
//! # Design
//!
//! One set of process-wide atomics (`books.rs`), and per thread a window (`window.rs`) that
//! absorbs allocations and frees until the thread's net change leaves it; only then does the
//! thread settle with the atomics. The limit is enforced on the bytes granted to the threads'
//! windows, so it holds without a shared write per call. The thread's whole state, its budget
//! scope included, is one struct with one set of transitions (`local.rs`), kept by `thread_std.rs`
//! or `thread_windows.rs`. A budget scope ([`crate::budget`]) moves its thread's window aside,
//! so that the thread's every call comes to the slow path, which charges the scope.

mod allocator;
mod books;
mod local;
// The one way in for `crate::budget`, besides this module's public API.
pub(crate) mod thread_budget;
mod usage;
mod window;

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

pub use allocator::Tracking;

/// The default of [`set_window`]: 64 KiB.
pub const DEFAULT_WINDOW: usize = books::DEFAULT_WINDOW;

/// The widest window [`set_window`] sets: a quarter of the address space, so that a thread's
/// buffered figures cannot overflow.
pub const WIDEST_WINDOW: usize = books::WIDEST_WINDOW;

/// Process-wide figures, from [`stats`].
///
/// Each field is read on its own, so under concurrent allocation they are not one consistent
/// snapshot; see the [accuracy section](self#accuracy) for how close they are.
///
/// ```
/// let stats = mimalloc::tracking::stats();
/// assert!(stats.peak_bytes >= stats.live_bytes);
/// assert!(stats.charged_bytes >= stats.live_bytes);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TrackingStats {
    /// Bytes in live blocks (requested sizes), as published by the threads.
    pub live_bytes: usize,
    /// The highest `live_bytes` seen since the start or the last [`reset_peak`].
    pub peak_bytes: usize,
    /// What the limit is checked against: `live_bytes` plus what threads were granted for their
    /// windows and have not published yet (at most 64 KiB each). Never above the limit when it
    /// grows.
    pub charged_bytes: usize,
    /// The process-wide limit, if any.
    pub limit: Option<usize>,
    /// Allocations refused because they would have passed the limit.
    pub refused_allocations: usize,
}

/// The calling thread's figures, from [`thread_stats`].
///
/// ```
/// use mimalloc::{tracking, MiMalloc, Tracking};
/// use std::alloc::{GlobalAlloc, Layout};
///
/// let tracking = Tracking::new(MiMalloc); // not the global allocator: only these calls count
/// let before = tracking::thread_stats().live_bytes;
/// let layout = Layout::new::<[u8; 100]>();
/// // SAFETY: a non-zero size; freed once with the same layout.
/// unsafe {
///     let p = tracking.alloc(layout);
///     assert_eq!(tracking::thread_stats().live_bytes, before + 100);
///     tracking.dealloc(p, layout);
/// }
/// assert_eq!(tracking::thread_stats().live_bytes, before);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ThreadStats {
    /// Bytes this thread allocated minus bytes it freed, exact. Negative when the thread has
    /// freed more than it allocated (blocks other threads allocated).
    pub live_bytes: isize,
    /// The highest `live_bytes` of this thread seen when it published (see the
    /// [accuracy section](self#accuracy)), or since [`reset_peak`] on this thread.
    pub peak_bytes: usize,
    /// The part of `live_bytes` the process-wide figures do not have yet: the thread's net
    /// change since it last published, within ±[`window()`].
    pub unpublished_bytes: isize,
}

/// The process-wide figures (see [`TrackingStats`] and the [accuracy section](self#accuracy)).
///
/// ```
/// let s = mimalloc::tracking::stats();
/// println!("{} bytes live, peak {}", s.live_bytes, s.peak_bytes);
/// ```
pub fn stats() -> TrackingStats {
    TrackingStats {
        live_bytes: books::live(),
        peak_bytes: books::peak(),
        charged_bytes: books::charged(),
        limit: books::limit(),
        refused_allocations: books::refused(),
    }
}

/// The calling thread's figures (see [`ThreadStats`]).
///
/// ```
/// let mine = mimalloc::tracking::thread_stats();
/// assert!(mine.peak_bytes as isize >= mine.live_bytes);
/// ```
pub fn thread_stats() -> ThreadStats {
    thread::with_local(|local| ThreadStats {
        live_bytes: local.live(),
        peak_bytes: local.peak(),
        unpublished_bytes: local.unpublished(),
    })
}

/// Publishes the calling thread's buffered change to the process-wide figures, and gives back
/// what the thread was granted from the limit (it takes a new grant when it next allocates).
/// After every thread that allocated has flushed or exited, [`stats`] is exact.
///
/// ```
/// use mimalloc::{tracking, MiMalloc, Tracking};
/// use std::alloc::{GlobalAlloc, Layout};
///
/// let tracking = Tracking::new(MiMalloc); // not the global allocator: only these calls count
/// let layout = Layout::new::<[u64; 4]>();
/// // SAFETY: a non-zero size; freed once with the same layout.
/// let p = unsafe { tracking.alloc(layout) };
/// tracking::flush();
/// assert_eq!(tracking::stats().live_bytes, 32);
/// // SAFETY: as above.
/// unsafe { tracking.dealloc(p, layout) };
/// tracking::flush();
/// assert_eq!(tracking::stats().live_bytes, 0);
/// ```
pub fn flush() {
    thread::with_local(|local| local.flush());
}

/// Publishes the calling thread's buffered change, like [`flush`], but keeps its grant: for a
/// check of [`stats`] that should not cost the thread's next allocation a trip to the shared
/// figures.
///
/// ```
/// use mimalloc::{tracking, MiMalloc, Tracking};
/// use std::alloc::{GlobalAlloc, Layout};
///
/// let tracking = Tracking::new(MiMalloc); // not the global allocator: only these calls count
/// let layout = Layout::new::<[u64; 4]>();
/// // SAFETY: a non-zero size; freed once with the same layout.
/// let p = unsafe { tracking.alloc(layout) };
/// tracking::publish();
/// assert_eq!(tracking::stats().live_bytes, 32);
/// assert_eq!(tracking::thread_stats().unpublished_bytes, 0);
/// // SAFETY: as above.
/// unsafe { tracking.dealloc(p, layout) };
/// ```
pub fn publish() {
    thread::with_local(|local| local.publish());
}

/// Restarts the process-wide peak at the current live bytes, and the calling thread's peak at
/// its current live bytes: to measure the peak of one phase of a program.
///
/// ```
/// mimalloc::tracking::reset_peak();
/// let s = mimalloc::tracking::stats();
/// assert_eq!(s.peak_bytes, s.live_bytes);
/// ```
pub fn reset_peak() {
    thread::with_local(|local| local.reset_peak());
    books::reset_peak();
}

/// Sets (or with `None` removes) the process-wide limit on live bytes.
///
/// Raising it takes effect at once. Lowering it below what is already charged takes back
/// nothing: blocks stay allocated, and threads may still use the grants they hold (at most
/// 64 KiB each); every new grant and every allocation that does not fit in a thread's window is
/// checked against the new limit.
///
/// ```
/// use mimalloc::{tracking, MiMalloc, Tracking};
///
/// #[global_allocator]
/// static GLOBAL: Tracking<MiMalloc> = Tracking::new(MiMalloc);
///
/// fn main() {
///     tracking::set_limit(Some(tracking::stats().charged_bytes + (1 << 20)));
///     // More than the limit allows: refused, without asking mimalloc.
///     let mut v: Vec<u8> = Vec::new();
///     assert!(v.try_reserve(2 << 20).is_err());
///     assert!(v.try_reserve(1 << 10).is_ok());
///     assert_eq!(tracking::stats().refused_allocations, 1);
///     tracking::set_limit(None);
///     assert_eq!(tracking::limit(), None);
/// }
/// ```
pub fn set_limit(bytes: Option<usize>) {
    books::set_limit(bytes);
}

/// The process-wide limit, if any.
///
/// ```
/// mimalloc::tracking::set_limit(Some(1 << 40));
/// assert_eq!(mimalloc::tracking::limit(), Some(1 << 40));
/// ```
pub fn limit() -> Option<usize> {
    books::limit()
}

/// Sets how far a thread's unpublished net change may go, either way, before the thread
/// publishes it; `None` restores [`DEFAULT_WINDOW`]. Values above [`WIDEST_WINDOW`] are taken
/// as it: threads then publish only when they [`flush`], exit or near the limit. A wider window
/// touches the shared figures less often and leaves them less exact (the accuracy section's
/// 64 KiB becomes the window); `0` publishes every call. Threads take the new window when they
/// next publish.
///
/// ```
/// use mimalloc::tracking;
/// tracking::set_window(Some(1 << 20));
/// assert_eq!(tracking::window(), 1 << 20);
/// tracking::set_window(Some(usize::MAX));
/// assert_eq!(tracking::window(), tracking::WIDEST_WINDOW);
/// tracking::set_window(None);
/// assert_eq!(tracking::window(), 64 << 10);
/// ```
pub fn set_window(bytes: Option<usize>) {
    books::set_window(bytes);
}

/// The window set by [`set_window`].
///
/// ```
/// assert!(mimalloc::tracking::window() > 0);
/// ```
pub fn window() -> usize {
    books::window()
}

/// Whether the calling thread published to the process-wide figures since the last call (of
/// this or of [`budget::poll`](crate::budget::poll), which uses it too): a cheap hint that a
/// check of [`stats`] against a limit of one's own may now give a different answer.
///
/// ```
/// use mimalloc::{tracking, MiMalloc, Tracking};
///
/// #[global_allocator]
/// static GLOBAL: Tracking<MiMalloc> = Tracking::new(MiMalloc);
///
/// fn main() {
///     tracking::take_published();
///     let v = vec![0u8; 1 << 20]; // beyond the window: published at once
///     assert!(tracking::take_published());
///     assert!(!tracking::take_published());
///     drop(v);
/// }
/// ```
pub fn take_published() -> bool {
    thread::with_local(|local| local.take_published())
}
