//! A thread's window: the range its running count may move in without touching shared state.
//!
//! `level` starts at the window's centre, `high / 2`; allocations raise it and frees lower it,
//! and while it stays within `0..=high` nothing else happens (the hot path: a load, an add, a
//! compare, a store). The centre is the bytes the thread may free before it settles, and also
//! its *grant*, what it may allocate before it settles; `level - high / 2` is the thread's net
//! change since it last settled. A closed window (`0..=0`) sends every call to the slow path.

use core::cell::Cell;

/// The widest half-width a window is given: with it, `level + size` cannot overflow on the hot
/// path (`level <= high <= 2 * MAX_HALF_WIDTH` and a `Layout` size is at most `isize::MAX`),
/// and a level below zero wraps to a value above `high`.
pub(super) const MAX_HALF_WIDTH: usize = usize::MAX / 4;

#[derive(Debug)]
pub(super) struct Window {
    level: Cell<usize>,
    high: Cell<usize>,
}

impl Window {
    /// A closed window.
    pub(super) const fn closed() -> Self {
        Window {
            level: Cell::new(0),
            high: Cell::new(0),
        }
    }

    /// Takes `size` bytes; `false` (and nothing taken) if they do not fit.
    #[inline(always)]
    pub(super) fn try_take(&self, size: usize) -> bool {
        debug_assert!(self.high.get() <= 2 * MAX_HALF_WIDTH && self.level.get() <= self.high.get());
        // No overflow: the bounds asserted above.
        let level = self.level.get() + size;
        if level <= self.high.get() {
            self.level.set(level);
            true
        } else {
            false
        }
    }

    /// Gives `size` bytes back; `false` (and nothing given) if the level would leave the window.
    #[inline(always)]
    pub(super) fn try_give(&self, size: usize) -> bool {
        debug_assert!(self.high.get() <= 2 * MAX_HALF_WIDTH && self.level.get() <= self.high.get());
        // Below zero wraps to a value above `high` (asserted above): one compare for both ends.
        let level = self.level.get().wrapping_sub(size);
        if level <= self.high.get() {
            self.level.set(level);
            true
        } else {
            false
        }
    }

    /// The grant: what the window was opened with on either side of its centre.
    pub(super) fn grant(&self) -> usize {
        self.high.get() / 2
    }

    /// The net change since the window was opened (wrapping signed).
    pub(super) fn change(&self) -> usize {
        self.level.get().wrapping_sub(self.grant())
    }

    /// Opens the window afresh with `half_width` bytes on either side of its centre.
    pub(super) fn open(&self, half_width: usize) {
        debug_assert!(half_width <= MAX_HALF_WIDTH);
        self.level.set(half_width);
        self.high.set(2 * half_width);
    }

    /// Moves this window into `to`, leaving this one closed.
    pub(super) fn move_into(&self, to: &Window) {
        to.level.set(self.level.replace(0));
        to.high.set(self.high.replace(0));
    }

    pub(super) fn is_closed(&self) -> bool {
        self.high.get() == 0
    }
}
