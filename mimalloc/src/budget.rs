//! Memory budgets that end in an error value, not an abort: for a program that runs untrusted
//! work (a policy engine evaluating a request, an interpreter running a script) and must fail
//! *that work* when it uses too much memory, never the process.
//!
//! The hard limit of [`tracking::set_limit`] makes an allocation return null, which for every
//! infallible allocation (`Vec::push`, `Box::new`, `format!`) ends in `handle_alloc_error`: an
//! abort. Right for a ceiling of the whole process, wrong for one request. The budgets here
//! never refuse an allocation; the program asks, at points of its choosing, whether it is over,
//! and turns the answer into its own error:
//!
//! - a **process soft limit** on the live bytes that [`tracking::stats`] counts: [`check`]
//!   compares them with it, [`poll`] does so cheaply enough to call at every step of an
//!   interpreter loop;
//! - **budget scopes**: while [`scope`] runs a closure, every allocation of the calling thread
//!   is charged to a [`Usage`] that the caller owns, can compare with its budget at any time
//!   ([`current`]), and can carry to the next segment of the same work, on another thread too.
//!
//! Both count only what goes through a [`Tracking`](crate::Tracking) allocator (in practice:
//! `Tracking` is the `#[global_allocator]`); with another global allocator the figures do not
//! move. This module is the public face of state that lives in [`tracking`]: the soft limit is
//! its own, the scopes are the thread state's.
//!
//! # What a scope counts
//!
//! The bytes *requested* while it is selected: each successful allocation's size, and each
//! growing `realloc`'s growth. Frees and shrinking reallocs give nothing back. So the figure
//! only ever grows, it is an upper bound of the work's peak (whatever it frees meanwhile, and
//! whichever thread frees it), and freeing data that existed before (a cache, the previous
//! request's result) earns the work no credit. Net live bytes would be the tighter measure of
//! what the work holds, but they go negative when it frees what others allocated, which an
//! untrusted input can arrange; [`ThreadStats::live_bytes`](tracking::ThreadStats) gives them,
//! for a baseline-and-compare of one's own. An allocation that fails is not charged.
//!
//! A scope belongs to the thread that selected it: other threads, including those it spawns,
//! are not charged (each can select a scope of its own), and a nested [`scope`] or [`unowned`]
//! replaces it until the inner closure returns. The [`Usage`] value is the whole state: copy
//! it out when a segment of work ends, and select it again, on any thread, when the work goes
//! on.
//!
//! # What it costs
//!
//! A thread without a selected scope runs exactly `Tracking`'s hot path, with no test for
//! scopes on it: selecting one empties the thread's fast-path window, so that every call of
//! the thread goes to the slow path, which charges the scope and runs the ordinary
//! bookkeeping. The measured costs are in `docs/budgets.md`.
//!
//! ```
//! use mimalloc::budget::{self, Usage};
//! use mimalloc::{MiMalloc, Tracking};
//!
//! #[global_allocator]
//! static GLOBAL: Tracking<MiMalloc> = Tracking::new(MiMalloc);
//!
//! /// One request, with a budget of 1 MiB of allocations.
//! fn handle(request: &str) -> Result<usize, String> {
//!     let mut usage = Usage::new();
//!     let words = budget::scope(&mut usage, || {
//!         request.split(' ').map(str::to_uppercase).collect::<Vec<_>>()
//!     });
//!     if usage.exceeds(1 << 20) {
//!         return Err(format!("over budget: {} bytes", usage.bytes()));
//!     }
//!     Ok(words.len())
//! }
//!
//! fn main() {
//!     assert_eq!(handle("a small request"), Ok(3));
//!     assert!(handle(&"word ".repeat(300_000)).is_err());
//! }
//! ```

pub use crate::tracking::thread_budget::Usage;

use crate::tracking::{self, thread_budget};
use core::fmt;
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Runs `f` with `usage` selected as the calling thread's budget scope: every allocation the
/// thread makes meanwhile is charged to it. When `f` returns or unwinds, `*usage` holds what
/// it was charged (on top of what it held before) and the thread's previous scope, if any, is
/// selected again.
///
/// ```
/// use mimalloc::budget::{self, Usage};
/// use mimalloc::{MiMalloc, Tracking};
///
/// #[global_allocator]
/// static GLOBAL: Tracking<MiMalloc> = Tracking::new(MiMalloc);
///
/// fn main() {
///     // One piece of work in two segments, the second on another thread.
///     let mut usage = Usage::new();
///     let first = budget::scope(&mut usage, || String::with_capacity(300));
///     let second = std::thread::spawn(move || {
///         let s = budget::scope(&mut usage, || String::with_capacity(200));
///         (usage, s)
///     });
///     let (usage, _s) = second.join().unwrap();
///     assert_eq!(usage.bytes(), 500);
///     assert_eq!(budget::current(), None);
///     drop(first);
/// }
/// ```
pub fn scope<R>(usage: &mut Usage, f: impl FnOnce() -> R) -> R {
    let previous = thread_budget::select(Some(*usage));
    let _restore = Restore {
        usage: Some(usage),
        previous,
    };
    f()
}

/// Runs `f` with no budget scope selected on the calling thread (independent work inside a
/// scoped one, whose allocations the scope should not pay for), then selects the previous one
/// again, on return or unwind. The process-wide figures and the soft limit still count them.
///
/// ```
/// use mimalloc::budget::{self, Usage};
/// use mimalloc::{MiMalloc, Tracking};
///
/// #[global_allocator]
/// static GLOBAL: Tracking<MiMalloc> = Tracking::new(MiMalloc);
///
/// fn main() {
///     let mut usage = Usage::new();
///     let (a, b) = budget::scope(&mut usage, || {
///         let a = vec![0u8; 100];
///         let b = budget::unowned(|| vec![0u8; 5000]);
///         (a, b)
///     });
///     assert_eq!(usage.bytes(), 100);
///     drop((a, b));
/// }
/// ```
pub fn unowned<R>(f: impl FnOnce() -> R) -> R {
    let previous = thread_budget::select(None);
    let _restore = Restore {
        usage: None,
        previous,
    };
    f()
}

/// The calling thread's selected scope, with what it has been charged so far; `None` outside
/// [`scope`] and inside [`unowned`].
///
/// ```
/// use mimalloc::budget::{self, Usage};
///
/// assert_eq!(budget::current(), None);
/// let mut usage = Usage::new();
/// budget::scope(&mut usage, || assert_eq!(budget::current(), Some(Usage::new())));
/// ```
pub fn current() -> Option<Usage> {
    thread_budget::selected()
}

/// Selects the previous scope again when a [`scope`] or [`unowned`] closure returns or
/// unwinds, and hands the scope's charges back to its owner.
struct Restore<'a> {
    usage: Option<&'a mut Usage>,
    previous: Option<Usage>,
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        let mine = thread_budget::select(self.previous);
        if let (Some(usage), Some(mine)) = (self.usage.as_deref_mut(), mine) {
            *usage = mine;
        }
    }
}

/// No soft limit.
const NO_LIMIT: usize = usize::MAX;

static SOFT_LIMIT: AtomicUsize = AtomicUsize::new(NO_LIMIT);

/// [`poll`] checks for real on at least every this many calls of a thread.
const POLL_EVERY: u32 = 16;

/// Sets (or with `None` removes) the process-wide soft limit on live bytes, which [`check`] and
/// [`poll`] compare [`tracking::stats`] with. Nothing is refused because of it.
///
/// ```
/// use mimalloc::budget;
/// budget::set_soft_limit(Some(1 << 30));
/// assert_eq!(budget::soft_limit(), Some(1 << 30));
/// budget::set_soft_limit(None);
/// assert_eq!(budget::soft_limit(), None);
/// ```
pub fn set_soft_limit(bytes: Option<usize>) {
    SOFT_LIMIT.store(bytes.unwrap_or(NO_LIMIT), Relaxed);
}

/// The soft limit set by [`set_soft_limit`], if any.
///
/// ```
/// assert_eq!(mimalloc::budget::soft_limit(), None);
/// ```
pub fn soft_limit() -> Option<usize> {
    let limit = SOFT_LIMIT.load(Relaxed);
    if limit == NO_LIMIT {
        None
    } else {
        Some(limit)
    }
}

/// Publishes the calling thread's buffered change, then compares the process-wide live bytes
/// with the soft limit: `Err` if they are over it. Exact as far as this thread goes; other
/// threads' unpublished changes (within ±[`tracking::window`] each) are not seen.
///
/// ```
/// use mimalloc::{budget, MiMalloc, Tracking};
///
/// #[global_allocator]
/// static GLOBAL: Tracking<MiMalloc> = Tracking::new(MiMalloc);
///
/// fn main() {
///     budget::set_soft_limit(Some(mimalloc::tracking::stats().live_bytes + (1 << 20)));
///     assert!(budget::check().is_ok());
///     let v = vec![0u8; 2 << 20]; // allowed: a soft limit refuses nothing
///     let err = budget::check().unwrap_err();
///     assert!(err.live_bytes > err.limit);
///     drop(v);
///     assert!(budget::check().is_ok());
///     budget::set_soft_limit(None);
/// }
/// ```
pub fn check() -> Result<(), OverLimit> {
    let limit = SOFT_LIMIT.load(Relaxed);
    if limit == NO_LIMIT {
        return Ok(());
    }
    tracking::publish();
    let live_bytes = tracking::stats().live_bytes;
    if live_bytes > limit {
        Err(OverLimit { live_bytes, limit })
    } else {
        Ok(())
    }
}

/// [`check`], amortised: it checks for real only when the calling thread published since its
/// last poll (its change left the window, so the process figure moved), when its unpublished
/// change is over half the window, or on every 16th call (to notice other threads' growth).
/// Otherwise it returns `Ok` after a few thread-local reads and writes and no shared write:
/// made to be called at every step of an interpreter loop.
///
/// ```
/// use mimalloc::{budget, MiMalloc, Tracking};
///
/// #[global_allocator]
/// static GLOBAL: Tracking<MiMalloc> = Tracking::new(MiMalloc);
///
/// fn main() {
///     budget::set_soft_limit(Some(mimalloc::tracking::stats().live_bytes + (1 << 20)));
///     let mut held = Vec::new();
///     let steps = (0..).position(|_| {
///         held.push(vec![0u8; 4096]);
///         budget::poll().is_err()
///     });
///     // Caught within a window's worth of allocations past the limit.
///     let window = mimalloc::tracking::window();
///     assert!(held.len() * 4096 <= (1 << 20) + 2 * window, "{steps:?}");
///     budget::set_soft_limit(None);
/// }
/// ```
pub fn poll() -> Result<(), OverLimit> {
    if SOFT_LIMIT.load(Relaxed) == NO_LIMIT || !thread_budget::poll_due(POLL_EVERY) {
        return Ok(());
    }
    check()
}

/// The process was over the soft limit when [`check`] or [`poll`] looked.
///
/// ```
/// let err = mimalloc::budget::OverLimit { live_bytes: 5000, limit: 4096 };
/// assert_eq!(err.to_string(), "5000 live bytes, over the soft limit of 4096");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OverLimit {
    /// The process-wide live bytes seen.
    pub live_bytes: usize,
    /// The soft limit they were over.
    pub limit: usize,
}

impl fmt::Display for OverLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} live bytes, over the soft limit of {}",
            self.live_bytes, self.limit
        )
    }
}

impl std::error::Error for OverLimit {}
