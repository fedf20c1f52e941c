//! The calling thread's part of [`crate::budget`]: its selected scope and its poll counter.
//!
//! The one seam between the two modules: `budget` is this module's only client, and uses
//! nothing else of `tracking` but its public API. The state behind it is the thread's
//! [`Local`](super::local::Local), where the allocator's slow paths charge the scope.

pub use super::usage::Usage;

use super::thread;

/// Selects `scope` for the calling thread (or none), returning the one it replaces, with what
/// it was charged while selected.
pub(crate) fn select(scope: Option<Usage>) -> Option<Usage> {
    thread::with_local(|local| local.select(scope))
}

/// The calling thread's selected scope and what it has been charged so far.
pub(crate) fn selected() -> Option<Usage> {
    thread::with_local(|local| local.selected())
}

/// Whether [`crate::budget::poll`] should check for real now: the thread published since its
/// last poll, or has half a window unpublished, or this is its `every`th poll.
pub(crate) fn poll_due(every: u32) -> bool {
    thread::with_local(|local| local.poll_due(every))
}
