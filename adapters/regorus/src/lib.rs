//! The allocator crate regorus 0.14 expects, served by this workspace's `mimalloc`.
//!
//! regorus (the Rego policy engine) depends on an allocator crate under the name `mimalloc`:
//! it calls `mimalloc::assign_global!()`, and with its `allocator-memory-limits` feature it
//! reads allocation statistics and selects per-execution budget scopes through the functions
//! below. This crate gives those names to this workspace's API, and nothing more:
//!
//! | regorus calls | served by |
//! |---|---|
//! | `assign_global!()` | `Tracking<MiMalloc>` as the global allocator with the feature, else `mimalloc::assign_global!()` |
//! | `allocation_stats_snapshot()` and the other statistics | `mimalloc::tracking::publish`, `stats`, `thread_stats` |
//! | `limits::with_memory_budget_usage_scope` and the other scopes | `mimalloc::budget` |
//! | `limits::set_thread_flush_threshold` | `mimalloc::tracking::set_window` |
//!
//! (Everything but `assign_global!` exists with the `allocator-memory-limits` feature only.)
//!
//! Where this differs from regorus' own allocator crate (`regorus-mimalloc` 2.2.9):
//!
//! - a budget scope is charged a growing `realloc`'s growth, not its whole new size (see
//!   `mimalloc::budget` for what a scope counts);
//! - the default flush threshold is `Tracking`'s 64 KiB window, not 1 MiB: the process figures
//!   regorus checks its limit against are closer to exact.
//!
//! A product uses it by pointing regorus' `mimalloc` dependency at this crate
//! (`scripts/regorus.sh setup` shows the manifest change):
//!
//! ```toml
//! [dependencies.mimalloc]
//! path = "adapters/regorus"
//! package = "mimalloc-regorus"
//! optional = true
//! ```
#![deny(missing_docs)]

#[cfg(all(feature = "allocator-memory-limits", not(miri)))]
pub mod limits;

#[cfg(all(feature = "allocator-memory-limits", not(miri)))]
pub use limits::{
    allocation_stats_snapshot, current_thread_allocation_stats, current_thread_live_bytes,
    global_allocation_stats_snapshot, GlobalAllocationStats, ThreadAllocationStats,
};

/// The crate the macros expand to (`$crate::mimalloc`).
#[doc(hidden)]
pub use mimalloc;

/// Installs the global allocator: `Tracking<MiMalloc>`, whose figures and budget scopes the
/// [`limits`] functions read (with the `allocator-memory-limits` feature).
///
/// ```
/// mimalloc_regorus::assign_global!();
///
/// fn main() {
///     let v = vec![0u8; 1 << 20];
///     assert!(mimalloc_regorus::current_thread_live_bytes() >= 1 << 20);
///     drop(v);
/// }
/// ```
#[cfg(all(feature = "allocator-memory-limits", not(miri)))]
#[macro_export]
macro_rules! assign_global {
    () => {
        const _: () = {
            #[global_allocator]
            static GLOBAL: $crate::mimalloc::Tracking<$crate::mimalloc::MiMalloc> =
                $crate::mimalloc::Tracking::new($crate::mimalloc::MiMalloc);
        };
    };
}

/// Installs the global allocator: [`MiMalloc`](mimalloc::MiMalloc), through
/// [`mimalloc::assign_global!`] (which also knows what to do under Miri and where mimalloc
/// cannot run).
///
/// ```
/// mimalloc_regorus::assign_global!();
///
/// fn main() {
///     let v = vec![1u8, 2, 3];
///     assert_eq!(v.len(), 3);
/// }
/// ```
#[cfg(not(all(feature = "allocator-memory-limits", not(miri))))]
#[macro_export]
macro_rules! assign_global {
    () => {
        $crate::mimalloc::assign_global!();
    };
}
