//! The process-wide counters, the per-thread buffer, and the slow path that moves bytes from
//! one to the other (the "settle").
//!
//! Every thread owns a [`Local`]: an unsynchronized running `level`, which allocations raise and
//! frees lower, and a bound `high`. While `level` stays within `0..=high` nothing else is touched
//! (the hot path: a thread-local load, an add, a compare, a store). Leaving the range calls
//! [`settle`], which publishes the thread's net change into the process-wide atomics and hands
//! the thread a fresh range. `level` starts each range at `slack` (bytes the thread may free
//! before it settles); `high - slack` is the thread's *grant* (bytes it may allocate before it
//! settles).
//!
//! The limit is enforced on grants, not on bytes: [`CHARGED`] is the flushed live bytes plus
//! every thread's outstanding grant, and only ever grows through a compare-exchange that checks
//! it against the limit. A thread's unflushed net change never exceeds its grant, so the live
//! bytes never exceed [`CHARGED`], which never exceeds the limit (when the limit is lowered below
//! what is already charged, nothing is taken back: it then bounds new charges only).
//!
//! A budget scope moves its thread's range aside, so that every call of the thread comes here:
//! see [`super::scope`].
//!
//! All arithmetic on byte counts is wrapping, with signed quantities kept as two's complement in
//! `usize`: a transient negative figure (a thread that frees blocks another thread allocated and
//! has not settled yet) is then still exact once everything settles.

use core::cell::Cell;
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use super::scope::Scope;
use super::thread;
use crate::budget::Usage;

/// The most a thread buffers in either direction before it settles, unless set otherwise.
pub(super) const DEFAULT_WINDOW: usize = 64 * 1024;
/// The widest window: with it, `level + size` cannot overflow (`level <= 2 * window` and a
/// `Layout` size is at most `isize::MAX`).
pub(super) const MAX_WINDOW: usize = usize::MAX / 4;

/// `LIMIT` when there is none.
pub(super) const NO_LIMIT: usize = usize::MAX;

/// Flushed live bytes (allocated minus freed), as a wrapping signed figure.
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// `LIVE` plus every thread's outstanding grant; never above `LIMIT` when it grows.
static CHARGED: AtomicUsize = AtomicUsize::new(0);
/// The highest `LIVE` seen after a successful allocation or a flush.
static PEAK: AtomicUsize = AtomicUsize::new(0);
static LIMIT: AtomicUsize = AtomicUsize::new(NO_LIMIT);
static REFUSED: AtomicUsize = AtomicUsize::new(0);
/// The most a thread buffers in either direction (read when it takes a new range).
static WINDOW: AtomicUsize = AtomicUsize::new(DEFAULT_WINDOW);

/// The thread has not allocated yet: its first settle registers the flush at thread exit.
const FRESH: u8 = 0;
/// Registering the flush at thread exit, which may allocate through this very allocator: those
/// nested calls are settled one by one, without buffering.
const REGISTERING: u8 = 1;
/// Buffering.
const ACTIVE: u8 = 2;
/// The exit flush ran (or could not be registered): every later call of this thread (other
/// thread-local destructors) is settled one by one, so that nothing is left in a buffer that
/// no one will flush.
const EXITED: u8 = 3;

/// One thread's buffer. All zeros is the initial state (`FRESH`, an empty range), so every
/// thread's first allocation or free takes the slow path. No `Drop`: std can then keep it in
/// native thread-local storage without allocating or registering anything.
#[derive(Debug)]
pub(super) struct Local {
    /// `slack` plus the thread's unflushed net change; within `0..=high` on the hot path.
    level: Cell<usize>,
    high: Cell<usize>,
    slack: Cell<usize>,
    /// This thread's flushed net bytes (wrapping signed).
    net: Cell<usize>,
    /// This thread's highest live bytes seen at a settle.
    peak: Cell<usize>,
    mode: Cell<u8>,
    /// The thread published since [`take_published`] last looked.
    published: Cell<bool>,
    /// The thread's budget scope, and while one is selected its range (`level` and `high`
    /// are then zero).
    scope: Scope,
    /// Calls of [`poll`] since its last full check.
    polls: Cell<u32>,
}

impl Local {
    pub(super) const fn new() -> Self {
        Local {
            level: Cell::new(0),
            high: Cell::new(0),
            slack: Cell::new(0),
            net: Cell::new(0),
            peak: Cell::new(0),
            mode: Cell::new(FRESH),
            published: Cell::new(false),
            scope: Scope::new(),
            polls: Cell::new(0),
        }
    }

    /// A state that settles every call and registers nothing: for a thread whose own state
    /// is gone (the Win32 backend, after the exit flush; unused by the std one).
    #[allow(dead_code)]
    pub(super) const fn exited() -> Self {
        Local {
            mode: Cell::new(EXITED),
            ..Local::new()
        }
    }

    /// Takes `size` bytes from the buffer; `false` if the slow path must decide.
    #[inline(always)]
    pub(super) fn try_take(&self, size: usize) -> bool {
        // No overflow: `level <= high <= 2 * MAX_WINDOW` and a `Layout` size is at most
        // isize::MAX.
        let level = self.level.get() + size;
        if level <= self.high.get() {
            self.level.set(level);
            true
        } else {
            false
        }
    }

    /// Returns `size` bytes to the buffer; `false` if the slow path must take them.
    #[inline(always)]
    pub(super) fn try_give(&self, size: usize) -> bool {
        // Below zero wraps to a huge value, which is above `high`: one compare for both ends.
        let level = self.level.get().wrapping_sub(size);
        if level <= self.high.get() {
            self.level.set(level);
            true
        } else {
            false
        }
    }

    /// The unflushed net change (wrapping signed).
    fn delta(&self) -> usize {
        self.level.get().wrapping_sub(self.slack.get())
    }
}

/// Publishes the thread's buffer and `free` bytes freed, reserves `alloc` bytes to allocate
/// (checked against the limit), and gives the thread a new range (an empty one unless
/// `rebuffer`). Returns `false` if the allocation was refused; the buffer is published either
/// way. A reservation is not live yet: the caller follows with [`confirm`] once the inner
/// allocator has the block, or [`release`] if it failed, so that no figure (the peak above all)
/// ever counts a failed allocation.
#[cold]
#[inline(never)]
pub(super) fn settle(local: &Local, alloc: usize, free: usize, rebuffer: bool) -> bool {
    if local.mode.get() == FRESH {
        local.mode.set(REGISTERING);
        let registered = thread::register_exit_flush(local);
        local.mode.set(if registered { ACTIVE } else { EXITED });
    }
    let buffering = rebuffer && local.mode.get() == ACTIVE;
    let grant = local.high.get() - local.slack.get();
    let delta = local.delta();
    // `LIVE` never exceeds `CHARGED` (and so the limit), even between the two updates: a
    // decrease of `LIVE` goes before `CHARGED`'s compare-exchange, an increase after it.
    let commit = delta.wrapping_sub(free);
    let shrinks = (commit as isize) < 0;
    if shrinks {
        LIVE.fetch_add(commit, Relaxed);
    }
    let mut charged = CHARGED.load(Relaxed);
    loop {
        let limit = LIMIT.load(Relaxed);
        // What stays charged for everything else: not negative (the live bytes are at most
        // the charged ones, and this thread's net change is at most its grant).
        let kept = charged
            .wrapping_sub(grant)
            .wrapping_add(delta)
            .wrapping_sub(free);
        let wanted = kept.checked_add(alloc).filter(|&w| w <= limit);
        let refused = alloc > 0 && wanted.is_none();
        let base = if refused { kept } else { kept + alloc };
        // Near the limit the buffers shrink (an eighth of the room left), so that grants held by
        // other threads refuse little that would have fit, down to none: settling every call.
        let range = if buffering && !refused {
            WINDOW.load(Relaxed).min(limit.saturating_sub(base) / 8)
        } else {
            0
        };
        match CHARGED.compare_exchange_weak(charged, base + range, Relaxed, Relaxed) {
            Ok(_) => {
                if !shrinks {
                    LIVE.fetch_add(commit, Relaxed);
                }
                local.net.set(local.net.get().wrapping_add(commit));
                if commit != 0 {
                    local.published.set(true);
                }
                local.slack.set(range);
                local.level.set(range);
                local.high.set(2 * range);
                if refused {
                    REFUSED.fetch_add(1, Relaxed);
                }
                return !refused;
            }
            Err(now) => charged = now,
        }
    }
}

/// The inner allocator has the block [`settle`] reserved `alloc` bytes for: they are live now.
pub(super) fn confirm(local: &Local, alloc: usize) {
    LIVE.fetch_add(alloc, Relaxed);
    local.net.set(local.net.get().wrapping_add(alloc));
    local.published.set(true);
    note_peak(local);
}

/// The inner allocator failed: the bytes [`settle`] reserved go back.
pub(super) fn release(alloc: usize) {
    CHARGED.fetch_sub(alloc, Relaxed);
}

/// Returns `size` bytes to the thread's buffer, or settles.
#[inline(always)]
pub(super) fn give(local: &Local, size: usize) {
    if !local.try_give(size) {
        settle(local, 0, size, true);
    }
}

/// Records the current figures as peaks if they are higher (after an allocation that
/// settled, once the inner allocator has succeeded, and after a flush).
#[cold]
pub(super) fn note_peak(local: &Local) {
    let live = LIVE.load(Relaxed) as isize;
    if live > 0 && live as usize > PEAK.load(Relaxed) {
        PEAK.fetch_max(live as usize, Relaxed);
    }
    let mine = thread_live(local);
    if mine > 0 && mine as usize > local.peak.get() {
        local.peak.set(mine as usize);
    }
}

/// Publishes the thread's buffer and gives back its grant (the process figures are then exact
/// as far as this thread is concerned); the next call of the thread takes a new one.
pub(super) fn flush(local: &Local) {
    settle(local, 0, 0, false);
    note_peak(local);
}

/// Publishes the thread's buffer and takes a new range at once (for a check of the process
/// figures that should not cost the thread's next allocation a settle).
pub(super) fn publish(local: &Local) {
    settle(local, 0, 0, true);
    note_peak(local);
}

/// The thread exits: publish and stop buffering for good.
pub(super) fn exit(local: &Local) {
    // A scope cannot outlive its closure, but a thread-local destructor may run one.
    let stashed = enter_real(local);
    flush(local);
    local.mode.set(EXITED);
    if stashed {
        leave_real(local, 0);
    }
}

/// Selects `scope` for the calling thread (or none), returning the one it replaces.
pub(super) fn select(local: &Local, scope: Option<Usage>) -> Option<Usage> {
    if local.mode.get() == FRESH {
        // Register the exit flush now, outside any scope: registering may allocate.
        settle(local, 0, 0, false);
    }
    enter_real(local);
    let previous = local.scope.replace(scope);
    leave_real(local, 0);
    previous
}

pub(super) fn selected(local: &Local) -> Option<Usage> {
    local.scope.selected()
}

/// Where an allocation of a thread that missed the hot path goes.
pub(super) enum Scoped {
    /// No scope is selected: the ordinary slow path.
    No,
    /// The scope's stashed range had room: the caller allocates, then calls [`taken`].
    Taken,
    /// The stashed range is full and was put back: the caller takes the ordinary slow path,
    /// then calls [`leave_real`] with what to charge.
    Settle,
}

/// Routes an allocation (or a realloc's growth) of `size` bytes that missed the hot path.
#[inline]
pub(super) fn take_scoped(local: &Local, size: usize) -> Scoped {
    match local.scope.try_take(size) {
        None => Scoped::No,
        Some(true) => Scoped::Taken,
        Some(false) => {
            enter_real(local);
            Scoped::Settle
        }
    }
}

/// After [`Scoped::Taken`]: charges the scope if the inner allocator succeeded, else gives the
/// bytes back to the stashed range.
#[inline]
pub(super) fn taken(local: &Local, size: usize, succeeded: bool) {
    if succeeded {
        local.scope.charge(size);
    } else {
        local.scope.untake(size);
    }
}

/// A free (or a realloc's shrinking) of `size` bytes that missed the hot path: `true` if the
/// scope's stashed range took it.
#[inline]
pub(super) fn give_scoped(local: &Local, size: usize) -> bool {
    local.scope.try_give(size)
}

/// Puts the thread's real range back if a scope has it stashed; `true` if it had. The caller
/// then runs the ordinary path and calls [`leave_real`].
pub(super) fn enter_real(local: &Local) -> bool {
    local.scope.unstash(&local.level, &local.high)
}

/// If a scope is selected: charges it `bytes` and stashes the real range again.
pub(super) fn leave_real(local: &Local, bytes: usize) {
    if local.scope.selected().is_some() {
        local.scope.charge(bytes);
        local.scope.stash(&local.level, &local.high);
    }
}

/// Whether the thread published since the last call.
pub(super) fn take_published(local: &Local) -> bool {
    local.published.replace(false)
}

/// The thread's unpublished net change (real window).
pub(super) fn unpublished(local: &Local) -> isize {
    local.delta() as isize
}

/// Counts a poll; `true` (and the count restarts) on every `every`th.
pub(super) fn count_poll(local: &Local, every: u32) -> bool {
    let polls = local.polls.get() + 1;
    let due = polls >= every;
    local.polls.set(if due { 0 } else { polls });
    due
}

pub(super) fn window() -> usize {
    WINDOW.load(Relaxed)
}

pub(super) fn set_window(bytes: usize) {
    WINDOW.store(bytes.min(MAX_WINDOW), Relaxed);
}

/// The calling thread's net bytes, exact.
pub(super) fn thread_live(local: &Local) -> isize {
    local.net.get().wrapping_add(local.delta()) as isize
}

pub(super) fn thread_peak(local: &Local) -> usize {
    let live = thread_live(local);
    local
        .peak
        .get()
        .max(if live > 0 { live as usize } else { 0 })
}

pub(super) fn reset_thread_peak(local: &Local) {
    let live = thread_live(local);
    local.peak.set(if live > 0 { live as usize } else { 0 });
}

/// Process-wide figures, each read on its own (relaxed).
pub(super) fn live() -> usize {
    let live = LIVE.load(Relaxed) as isize;
    if live > 0 {
        live as usize
    } else {
        0
    }
}

pub(super) fn charged() -> usize {
    CHARGED.load(Relaxed)
}

pub(super) fn peak() -> usize {
    PEAK.load(Relaxed).max(live())
}

pub(super) fn reset_peak() {
    PEAK.store(live(), Relaxed);
}

pub(super) fn refused() -> usize {
    REFUSED.load(Relaxed)
}

pub(super) fn limit() -> usize {
    LIMIT.load(Relaxed)
}

pub(super) fn set_limit(limit: usize) {
    LIMIT.store(limit, Relaxed);
}
