//! regorus' names for [`mimalloc::tracking`]'s figures and [`mimalloc::budget`]'s scopes.
//!
//! Every function reads or sets process-wide or per-thread state: the books `Tracking` keeps
//! are the process's, whichever `Tracking` is the global allocator.

use mimalloc::budget::{self, Usage};
use mimalloc::tracking;

/// The process-wide figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GlobalAllocationStats {
    /// Live bytes (requested sizes) across all threads, as published.
    pub allocated: u64,
    /// The highest `allocated` seen.
    pub peak: u64,
}

/// The calling thread's figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadAllocationStats {
    /// Bytes this thread allocated minus those it freed; negative when it freed blocks that
    /// other threads allocated.
    pub allocated: i64,
    /// The highest `allocated` seen.
    pub peak: i64,
}

/// Publishes the calling thread's buffered change, then reads the process-wide and the
/// thread's figures.
///
/// ```
/// mimalloc_regorus::assign_global!();
///
/// fn main() {
///     let v = vec![0u8; 100_000];
///     let (process, thread) = mimalloc_regorus::allocation_stats_snapshot();
///     assert!(process.allocated >= 100_000 && process.peak >= process.allocated);
///     assert!(thread.allocated >= 100_000);
///     drop(v);
/// }
/// ```
pub fn allocation_stats_snapshot() -> (GlobalAllocationStats, ThreadAllocationStats) {
    tracking::publish();
    let process = tracking::stats();
    let thread = tracking::thread_stats();
    (
        GlobalAllocationStats {
            allocated: process.live_bytes as u64,
            peak: process.peak_bytes as u64,
        },
        ThreadAllocationStats {
            allocated: thread.live_bytes as i64,
            peak: thread.peak_bytes as i64,
        },
    )
}

/// The process-wide half of [`allocation_stats_snapshot`].
///
/// ```
/// mimalloc_regorus::assign_global!();
///
/// fn main() {
///     let before = mimalloc_regorus::global_allocation_stats_snapshot().allocated;
///     let v = vec![0u8; 1 << 20];
///     assert!(mimalloc_regorus::global_allocation_stats_snapshot().allocated >= before + (1 << 20));
///     drop(v);
/// }
/// ```
pub fn global_allocation_stats_snapshot() -> GlobalAllocationStats {
    allocation_stats_snapshot().0
}

/// The thread half of [`allocation_stats_snapshot`].
///
/// ```
/// mimalloc_regorus::assign_global!();
///
/// fn main() {
///     let stats = mimalloc_regorus::current_thread_allocation_stats();
///     assert!(stats.peak >= stats.allocated);
/// }
/// ```
pub fn current_thread_allocation_stats() -> ThreadAllocationStats {
    allocation_stats_snapshot().1
}

/// The calling thread's live bytes, exact, without publishing anything.
///
/// ```
/// mimalloc_regorus::assign_global!();
///
/// fn main() {
///     let before = mimalloc_regorus::current_thread_live_bytes();
///     let b = Box::new([0u8; 40]);
///     assert_eq!(mimalloc_regorus::current_thread_live_bytes(), before + 40);
///     drop(b);
/// }
/// ```
pub fn current_thread_live_bytes() -> i64 {
    tracking::thread_stats().live_bytes as i64
}

/// Publishes the calling thread's buffered change.
///
/// ```
/// mimalloc_regorus::assign_global!();
///
/// fn main() {
///     mimalloc_regorus::limits::flush_thread_counters();
///     assert_eq!(mimalloc_regorus::limits::thread_allocation_pending_delta(), 0);
/// }
/// ```
pub fn flush_thread_counters() {
    tracking::flush();
}

/// Whether the calling thread published since the last call ([`tracking::take_published`]).
///
/// ```
/// mimalloc_regorus::assign_global!();
///
/// fn main() {
///     use mimalloc_regorus::limits::take_thread_flushed_since_check_flag as published;
///     published();
///     let v = vec![0u8; 1 << 20];
///     assert!(published() && !published());
///     drop(v);
/// }
/// ```
pub fn take_thread_flushed_since_check_flag() -> bool {
    tracking::take_published()
}

/// The calling thread's unpublished net change, within the window either way.
///
/// ```
/// mimalloc_regorus::assign_global!();
///
/// fn main() {
///     use mimalloc_regorus::limits::{flush_thread_counters, thread_allocation_pending_delta};
///     let warm = Box::new(0u8); // the first allocation after a flush publishes
///     let b = Box::new([0u8; 100]);
///     assert!(thread_allocation_pending_delta() >= 100);
///     flush_thread_counters();
///     assert_eq!(thread_allocation_pending_delta(), 0);
///     drop((warm, b));
/// }
/// ```
pub fn thread_allocation_pending_delta() -> i64 {
    tracking::thread_stats().unpublished_bytes as i64
}

/// Sets the window past which a thread publishes (process-wide, as regorus' own crate does):
/// `None` restores the default (64 KiB), `Some(0)` turns automatic publication off (the widest
/// window), values beyond the address space are the widest window too.
///
/// ```
/// mimalloc_regorus::assign_global!();
///
/// fn main() {
///     use mimalloc_regorus::limits::{set_thread_flush_threshold, thread_flush_threshold};
///     set_thread_flush_threshold(Some(256 * 1024));
///     assert_eq!(thread_flush_threshold(), Some(256 * 1024));
///     set_thread_flush_threshold(Some(0));
///     assert_eq!(thread_flush_threshold(), None);
///     set_thread_flush_threshold(None);
///     assert_eq!(thread_flush_threshold(), Some(64 * 1024));
/// }
/// ```
pub fn set_thread_flush_threshold(bytes: Option<u64>) {
    tracking::set_window(bytes.map(|bytes| match bytes {
        0 => usize::MAX,
        bytes => usize::try_from(bytes).unwrap_or(usize::MAX),
    }));
}

/// The window set by [`set_thread_flush_threshold`]; `None` if automatic publication is off.
///
/// ```
/// assert!(mimalloc_regorus::limits::thread_flush_threshold().is_some());
/// ```
pub fn thread_flush_threshold() -> Option<u64> {
    match tracking::window() {
        tracking::WIDEST_WINDOW => None,
        window => Some(window as u64),
    }
}

/// What an execution's budget scope has been charged ([`Usage`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryBudgetUsage(Usage);

impl MemoryBudgetUsage {
    /// The bytes requested while the scope was selected.
    pub const fn requested_bytes(self) -> u64 {
        self.0.bytes()
    }

    /// Whether they are over `limit` (always, once their sum overflowed).
    pub const fn exceeds_limit(self, limit: u64) -> bool {
        self.0.exceeds(limit)
    }
}

/// Runs `operation` with `initial` selected as the calling thread's scope (`None`: no scope),
/// and leaves in `updated` what it was charged, on return and on unwind alike.
///
/// ```
/// mimalloc_regorus::assign_global!();
///
/// fn main() {
///     use mimalloc_regorus::limits::{with_memory_budget_usage_scope, MemoryBudgetUsage};
///     let mut usage = Some(MemoryBudgetUsage::default());
///     let v = with_memory_budget_usage_scope(usage, &mut usage, || vec![0u8; 1000]);
///     assert_eq!(usage.map(MemoryBudgetUsage::requested_bytes), Some(1000));
///     drop(v);
/// }
/// ```
pub fn with_memory_budget_usage_scope<R>(
    initial: Option<MemoryBudgetUsage>,
    updated: &mut Option<MemoryBudgetUsage>,
    operation: impl FnOnce() -> R,
) -> R {
    *updated = initial;
    match updated {
        Some(usage) => budget::scope(&mut usage.0, operation),
        None => budget::unowned(operation),
    }
}

/// Runs `operation` with no scope selected on the calling thread.
///
/// ```
/// mimalloc_regorus::assign_global!();
///
/// fn main() {
///     use mimalloc_regorus::limits::*;
///     let mut usage = Some(MemoryBudgetUsage::default());
///     with_memory_budget_usage_scope(usage, &mut usage, || {
///         with_unowned_memory_budget_scope(|| assert_eq!(current_memory_budget_usage(), None));
///     });
/// }
/// ```
pub fn with_unowned_memory_budget_scope<R>(operation: impl FnOnce() -> R) -> R {
    budget::unowned(operation)
}

/// The calling thread's selected scope, if any, with what it has been charged so far.
///
/// ```
/// assert_eq!(mimalloc_regorus::limits::current_memory_budget_usage(), None);
/// ```
pub fn current_memory_budget_usage() -> Option<MemoryBudgetUsage> {
    budget::current().map(MemoryBudgetUsage)
}
