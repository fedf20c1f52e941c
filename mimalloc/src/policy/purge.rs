//! The background purge: a thread that hands freed memory back to the OS once mimalloc's purge
//! delay has passed, whether or not the program allocates again.
//!
//! mimalloc 3 delays purging freed memory (`purge_delay` x `arena_purge_mult`, 4 s by default)
//! so that memory freed and soon reused is not faulted in twice, but it runs the purges it
//! scheduled only when the program next allocates or frees through an arena: a program that goes
//! quiet after a burst keeps all it freed. This thread calls `mi_collect(false)` every quarter
//! of that delay (four times, to reach every arena), which runs the purges that are due and
//! nothing else, so memory goes back within about the delay after the program stops freeing.
//!
//! The thread starts when the program has first committed [`PURGE_FROM`] bytes (a smaller
//! program has little to give back), from mimalloc's heartbeat at the top of its allocation
//! slow path, where mimalloc holds no lock and allows reentrant work. It is made by the OS's own
//! call, which takes no lock of Rust's and allocates nothing through Rust, on a small stack, and
//! sleeps in a wait that is woken at once to stop; each OS's part is a module of its own
//! (`policy/purge/unix.rs`: `pthread_create`, each Unix's wait, `fork`;
//! `policy/purge/windows.rs`: `CreateThread`, an event, the unloading of a DLL), which this one
//! hands its entry points. When the program exits, or the library that holds this crate is
//! unloaded, the thread is stopped and joined before mimalloc shuts down.
//!
//! `MIMALLOC_BACKGROUND_PURGE=0` or [`crate::policy::set_background_purge`] turns it off.
//!
//! [`PURGE_FROM`]: super::settings::PURGE_FROM

use super::io::{committed, say};
#[cfg(mimalloc_memory_limit)]
use super::limit;
use super::state::states;
use super::state::BackgroundPurge;
use crate::options::OptionValue;
use core::sync::atomic::{AtomicUsize, Ordering};
use mimalloc_sys as ffi;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as os;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as os;

states! {
    /// Where the background purge stands.
    enum Phase in AtomicPhase {
        /// Not started: starts once the heap reaches `PURGE_FROM`.
        Waiting,
        /// Being created, by the one caller that moved it here.
        Starting,
        /// Running.
        Running,
        /// Turned off (by the environment or the API); a running thread is stopped first.
        Off,
        /// The OS refused the thread (no threads left, a sandbox that forbids them): not tried
        /// again.
        Refused,
    }
}

static PHASE: AtomicPhase = AtomicPhase::new(Phase::Off);
/// The running thread, to join.
static THREAD: AtomicUsize = AtomicUsize::new(0);

/// Sets the state when the program loads, and prepares the OS's part (`fork` on Unix).
pub(crate) fn load(on: bool) {
    os::load(forget_the_thread);
    let phase = if on { Phase::Waiting } else { Phase::Off };
    PHASE.store(phase, Ordering::Relaxed);
}

/// Where the background purge stands now.
pub(crate) fn state() -> BackgroundPurge {
    match PHASE.load(Ordering::Relaxed) {
        Phase::Waiting | Phase::Starting => BackgroundPurge::Waiting,
        Phase::Running => BackgroundPurge::Running,
        Phase::Off => BackgroundPurge::Off,
        Phase::Refused => BackgroundPurge::Refused,
    }
}

/// Called as the heap grows, with the bytes committed: starts the thread at `PURGE_FROM`.
pub(crate) fn poll(committed: usize) {
    if PHASE.load(Ordering::Relaxed) == Phase::Waiting && committed >= super::settings::PURGE_FROM {
        start();
    }
}

/// Turns the background purge on (it starts at the next poll) or off (stopping the thread).
pub(crate) fn set(on: bool) {
    if on {
        PHASE.move_from(Phase::Off, Phase::Waiting, Ordering::Relaxed);
        poll(committed());
    } else {
        stop();
    }
}

fn start() {
    if !PHASE.move_from(Phase::Waiting, Phase::Starting, Ordering::Acquire) {
        return;
    }
    let thread = match os::spawn(work) {
        Ok(thread) => thread,
        Err(error) => {
            PHASE.move_from(Phase::Starting, Phase::Refused, Ordering::Relaxed);
            say(
                true,
                format_args!(
                    "no thread for the background purge ({}: error {error})",
                    os::SPAWN
                ),
            );
            return;
        }
    };
    say(
        false,
        format_args!("background purge every {} ms", period_ms()),
    );
    THREAD.store(thread, Ordering::Relaxed);
    #[cfg(target_os = "macos")]
    os::stop_at_exit(unload);
    // Turned off (or unloaded) while it was being created: this caller stops it.
    if !PHASE.move_from(Phase::Starting, Phase::Running, Ordering::AcqRel) {
        os::halt(thread);
    }
}

/// The thread's work, once it runs on its own stack: a purge every quarter of mimalloc's purge
/// delay, until stopped; under a memory limit a look every [`limit::TICK_MS`] ms, which purges
/// everything freed while the process is past half the limit.
fn work() {
    // SAFETY: gives the thread a mimalloc thread heap, without which `mi_collect` returns at
    // once; no precondition.
    unsafe { ffi::mi_thread_init() };
    #[cfg(mimalloc_memory_limit)]
    let (limit, mut pressed) = (limit::read(), false);
    #[cfg(not(mimalloc_memory_limit))]
    let (limit, pressed) = (None::<usize>, false);
    while os::sleep(tick_ms(limit.is_some())) {
        #[cfg(mimalloc_memory_limit)]
        if let Some(limit) = limit {
            pressed = limit::pressed(limit, pressed);
        }
        os::purging(|| purge(pressed));
    }
}

/// Runs the purges that are due in every arena, or (`forced`) every scheduled purge. A call
/// that is not forced purges at most a quarter of mimalloc's arenas plus one
/// (`mi_arenas_try_purge`, each call starting from the same arena and skipping those already
/// purged), so [`CALLS_FOR_EVERY_ARENA`] calls reach them all; a forced call visits every arena.
/// Without this a heap of several arenas (on 32-bit targets they are 128 MiB) would get one back
/// per period.
fn purge(forced: bool) {
    let calls = if forced { 1 } else { CALLS_FOR_EVERY_ARENA };
    for _ in 0..calls {
        // SAFETY: `mi_collect` may be called from any thread at any time (forced, it runs
        // every scheduled purge now, program-wide).
        unsafe { ffi::mi_collect(forced) };
    }
}

/// Calls of `mi_collect(false)` that reach every arena: four quarters plus one each cover `n`
/// arenas for any `n`. A call with nothing due returns at once.
const CALLS_FOR_EVERY_ARENA: usize = 4;

/// How long the thread sleeps between purges: a quarter of the delay ([`period_ms`]), and at
/// most [`limit::TICK_MS`] under a memory limit.
fn tick_ms(limited: bool) -> OptionValue {
    let period = period_ms();
    #[cfg(mimalloc_memory_limit)]
    if limited {
        return period.min(limit::TICK_MS as OptionValue);
    }
    let _ = limited;
    period
}

/// A quarter of mimalloc's delay for arenas (`purge_delay` x `arena_purge_mult`), read each
/// time so that a changed option takes effect; 1 s while purging is off (a negative delay) or
/// immediate (0), when there is nothing to run.
fn period_ms() -> OptionValue {
    // SAFETY: reading options has no precondition.
    let (delay, mult) = unsafe {
        (
            ffi::mi_option_get(ffi::mi_option_purge_delay),
            ffi::mi_option_get(ffi::mi_option_arena_purge_mult),
        )
    };
    let delay = delay.saturating_mul(mult.max(1));
    if delay <= 0 {
        1000
    } else {
        (delay / 4).clamp(10, 60_000)
    }
}

/// Turns the purge off, stopping a running thread and waiting for it.
fn stop() {
    if PHASE.swap(Phase::Off, Ordering::AcqRel) == Phase::Running {
        os::halt(THREAD.load(Ordering::Relaxed));
    }
}

/// When the program exits or the library is unloaded: the thread must be gone before mimalloc
/// shuts down, or before its code is unmapped.
pub(crate) fn unload() {
    stop();
}

/// A child after `fork` has no thread: it starts its own once it allocates as a program, and
/// reads the limit again (a child may be moved to another cgroup). Windows has no `fork`.
fn forget_the_thread() {
    #[cfg(mimalloc_memory_limit)]
    limit::forget();
    for copied in [Phase::Running, Phase::Starting] {
        PHASE.move_from(copied, Phase::Waiting, Ordering::Relaxed);
    }
}
