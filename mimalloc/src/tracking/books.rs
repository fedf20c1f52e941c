//! The process-wide books: live bytes, what is charged against the limit, the peak, the limit
//! itself, refusals and the window threads are given. Plain atomics; the threads' own state
//! is in [`super::local`], which comes here only when a thread settles.
//!
//! The limit is enforced on grants, not on bytes: [`CHARGED`] is the published live bytes plus
//! every thread's outstanding grant (the bytes its window may still allocate), and it only ever
//! grows through a compare-exchange that checks it against the limit. A thread's unpublished
//! net change never exceeds its grant, so the live bytes never exceed `CHARGED`, which never
//! exceeds the limit (when the limit is lowered below what is already charged, nothing is
//! taken back: it then bounds new charges only).
//!
//! All arithmetic on byte counts is wrapping, with signed quantities kept as two's complement in
//! `usize`: a transient negative figure (a thread that frees blocks another thread allocated and
//! has not settled yet) is then still exact once everything settles.

use super::window::MAX_HALF_WIDTH;
use core::sync::atomic::AtomicUsize;
use core::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};

/// How far a thread's unpublished net change may go either way, unless set otherwise.
pub(super) const DEFAULT_WINDOW: usize = 64 * 1024;
/// The widest window (see [`MAX_HALF_WIDTH`]).
pub(super) const WIDEST_WINDOW: usize = MAX_HALF_WIDTH;
/// [`LIMIT`] when there is none.
const NO_LIMIT: usize = usize::MAX;

/// Published live bytes (allocated minus freed), as a wrapping signed figure.
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// `LIVE` plus every thread's outstanding grant; never above `LIMIT` when it grows.
static CHARGED: AtomicUsize = AtomicUsize::new(0);
/// The highest `LIVE` seen after a successful allocation that settled, or a flush.
static PEAK: AtomicUsize = AtomicUsize::new(0);
static LIMIT: AtomicUsize = AtomicUsize::new(NO_LIMIT);
static REFUSED: AtomicUsize = AtomicUsize::new(0);
/// The half-width of the windows threads are given when they settle.
static WINDOW: AtomicUsize = AtomicUsize::new(DEFAULT_WINDOW);

/// What [`settle`] gave the thread.
pub(super) struct Settled {
    /// The half-width of the thread's new window (0: every call settles).
    pub(super) window: usize,
    /// Whether the `alloc` bytes were reserved (`false`: refused by the limit).
    pub(super) reserved: bool,
}

/// Settles one thread: publishes `change` (its net change, less what it frees now), takes back
/// its `grant`, reserves `alloc` bytes (checked against the limit) and grants it a new window
/// (none unless `buffering`). Nothing is reserved if the limit refuses; the change is
/// published either way. A reservation is not live yet: the caller follows with [`confirm`]
/// once the inner allocator has the block, or [`release`] if it failed, so that no figure (the
/// peak above all) ever counts a failed allocation.
///
/// Every byte in `LIVE` is covered by `CHARGED`: bytes are added to `LIVE` only after the
/// compare-exchange that keeps them charged, and a charge for freed bytes is taken off
/// `CHARGED` only after they left `LIVE`. The compare-exchange releases and acquires, so the
/// same order holds across threads: a thread that is granted room that another's frees gave
/// back adds to `LIVE` after those frees left it. A reader of both atomics (`stats`) still
/// reads each on its own, and may see one settle's update to one of them and not yet to the
/// other.
#[cold]
#[inline(never)]
pub(super) fn settle(grant: usize, change: usize, alloc: usize, buffering: bool) -> Settled {
    let shrinks = (change as isize) < 0;
    if shrinks {
        LIVE.fetch_add(change, Relaxed);
    }
    let mut charged = CHARGED.load(Acquire);
    loop {
        let limit = LIMIT.load(Relaxed);
        // What stays charged for everything else: not negative (the live bytes are at most the
        // charged ones, and the thread's change is at most its grant).
        let kept = charged.wrapping_sub(grant).wrapping_add(change);
        let wanted = kept.checked_add(alloc).filter(|&w| w <= limit);
        let reserved = alloc == 0 || wanted.is_some();
        let base = if reserved { kept + alloc } else { kept };
        // Near the limit the windows shrink (an eighth of the room left), so that grants held by
        // other threads refuse little that would have fit, down to none: settling every call.
        let window = if buffering && reserved {
            WINDOW.load(Relaxed).min(limit.saturating_sub(base) / 8)
        } else {
            0
        };
        match CHARGED.compare_exchange_weak(charged, base + window, AcqRel, Acquire) {
            Ok(_) => {
                if !shrinks {
                    LIVE.fetch_add(change, Relaxed);
                }
                if !reserved {
                    REFUSED.fetch_add(1, Relaxed);
                }
                return Settled { window, reserved };
            }
            Err(now) => charged = now,
        }
    }
}

/// The inner allocator has the block [`settle`] reserved `alloc` bytes for: they are live now.
pub(super) fn confirm(alloc: usize) {
    LIVE.fetch_add(alloc, Relaxed);
    note_peak();
}

/// The inner allocator failed: the bytes [`settle`] reserved go back.
pub(super) fn release(alloc: usize) {
    CHARGED.fetch_sub(alloc, Relaxed);
}

/// Records the live bytes as the peak if they are higher.
pub(super) fn note_peak() {
    let live = live();
    if live > PEAK.load(Relaxed) {
        PEAK.fetch_max(live, Relaxed);
    }
}

/// The published live bytes (0 while frees of other threads' blocks are published ahead of
/// the allocations).
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

pub(super) fn limit() -> Option<usize> {
    match LIMIT.load(Relaxed) {
        NO_LIMIT => None,
        limit => Some(limit),
    }
}

pub(super) fn set_limit(bytes: Option<usize>) {
    LIMIT.store(bytes.unwrap_or(NO_LIMIT), Relaxed);
}

pub(super) fn window() -> usize {
    WINDOW.load(Relaxed)
}

pub(super) fn set_window(bytes: Option<usize>) {
    WINDOW.store(bytes.unwrap_or(DEFAULT_WINDOW).min(WIDEST_WINDOW), Relaxed);
}
