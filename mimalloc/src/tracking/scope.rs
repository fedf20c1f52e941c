//! A thread's budget scope ([`crate::budget`]), kept with its buffer.
//!
//! While a scope is selected, the buffer's real range (`level`, `high`) is *stashed* here and the
//! buffer's own is left at zero: every allocation and free of the thread then fails the hot
//! path's one compare and comes to the slow path, which runs the same compare on the stashed
//! range ([`Scope::try_take`], [`Scope::try_give`]) and charges the scope. Only when the stashed
//! range overflows does the slow path put it back (`account::enter_real`) and settle as usual.
//! A thread without a scope pays nothing for scopes: the hot path has no test for them.

use crate::budget::Usage;
use core::cell::Cell;

#[derive(Debug)]
pub(super) struct Scope {
    selected: Cell<bool>,
    /// What the selected scope has been charged.
    usage: Cell<Usage>,
    /// The buffer's range is stashed here (the buffer's own is zero).
    stashed: Cell<bool>,
    level: Cell<usize>,
    high: Cell<usize>,
}

impl Scope {
    pub(super) const fn new() -> Self {
        Scope {
            selected: Cell::new(false),
            usage: Cell::new(Usage::new()),
            stashed: Cell::new(false),
            level: Cell::new(0),
            high: Cell::new(0),
        }
    }

    pub(super) fn selected(&self) -> Option<Usage> {
        if self.selected.get() {
            Some(self.usage.get())
        } else {
            None
        }
    }

    /// Selects `scope` (or none), returning the one it replaces. The range must not be stashed.
    pub(super) fn replace(&self, scope: Option<Usage>) -> Option<Usage> {
        debug_assert!(!self.stashed.get());
        let previous = self.selected();
        self.selected.set(scope.is_some());
        self.usage.set(scope.unwrap_or_default());
        previous
    }

    pub(super) fn charge(&self, bytes: usize) {
        self.usage.set(self.usage.get().charged(bytes));
    }

    /// If a scope is selected: takes the buffer's range, leaving it zero.
    pub(super) fn stash(&self, level: &Cell<usize>, high: &Cell<usize>) {
        if self.selected.get() {
            self.level.set(level.replace(0));
            self.high.set(high.replace(0));
            self.stashed.set(true);
        }
    }

    /// Gives the buffer its range back if it is stashed here; `true` if it was.
    pub(super) fn unstash(&self, level: &Cell<usize>, high: &Cell<usize>) -> bool {
        let stashed = self.stashed.replace(false);
        if stashed {
            level.set(self.level.get());
            high.set(self.high.get());
        }
        stashed
    }

    /// The hot path's allocation compare, on the stashed range: `None` if nothing is stashed,
    /// else whether `size` bytes fit (and were taken).
    #[inline]
    pub(super) fn try_take(&self, size: usize) -> Option<bool> {
        if !self.stashed.get() {
            return None;
        }
        // No overflow, as in `Local::try_take`.
        let level = self.level.get() + size;
        let fits = level <= self.high.get();
        if fits {
            self.level.set(level);
        }
        Some(fits)
    }

    /// Gives back what [`try_take`](Scope::try_take) took, for an allocation that failed.
    pub(super) fn untake(&self, size: usize) {
        self.level.set(self.level.get() - size);
    }

    /// The hot path's free compare, on the stashed range: whether `size` bytes went back to
    /// it (`false` also if nothing is stashed).
    #[inline]
    pub(super) fn try_give(&self, size: usize) -> bool {
        let level = self.level.get().wrapping_sub(size);
        let fits = self.stashed.get() && level <= self.high.get();
        if fits {
            self.level.set(level);
        }
        fits
    }
}
