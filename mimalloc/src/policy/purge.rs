//! The background purge: a thread that hands freed memory back to the OS once mimalloc's purge
//! delay has passed, whether or not the program allocates again.
//!
//! mimalloc 3 delays purging freed memory (`purge_delay` x `arena_purge_mult`, 4 s by default)
//! so that memory freed and soon reused is not faulted in twice, but it runs the purges it
//! scheduled only when the program next allocates or frees through an arena: a program that goes
//! quiet after a burst keeps all it freed. This thread calls `mi_collect(false)` every quarter
//! of that delay, which runs the purges that are due and nothing else, so memory goes back
//! within about the delay after the program stops freeing.
//!
//! The thread starts when the program has first committed [`PURGE_FROM`] bytes (a smaller
//! program has little to give back), from mimalloc's heartbeat at the top of its allocation
//! slow path, where mimalloc holds no lock and allows reentrant work; it is created with the
//! C library's `pthread_create`, which takes no lock of Rust's and allocates nothing through
//! Rust, with every signal blocked and a small stack. It sleeps on a futex, so it is woken at
//! once to stop. Across `fork`, the child has no thread and starts its own the same way; the
//! thread finishes any purge before a fork proceeds (a purge in flight would leave mimalloc's
//! purge guard held in the child). When the program exits, or the library that holds this crate
//! is unloaded, the thread is stopped and joined before mimalloc shuts down.
//!
//! `MIMALLOC_BACKGROUND_PURGE=0` or [`crate::policy::set_background_purge`] turns it off.
//!
//! [`PURGE_FROM`]: super::settings::PURGE_FROM

use super::io::{committed, say};
use super::limit;
use super::state::states;
use super::state::BackgroundPurge;
use crate::options::OptionValue;
use core::cell::UnsafeCell;
use core::ffi::c_void;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use mimalloc_sys as ffi;

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
        /// `pthread_create` failed (no threads left, a sandbox that forbids them): not tried
        /// again.
        Refused,
    }
}

static PHASE: AtomicPhase = AtomicPhase::new(Phase::Off);
/// The futex the thread sleeps on: raised to wake it for good.
static STOP: AtomicU32 = AtomicU32::new(0);
/// The running thread, to join.
static THREAD: AtomicUsize = AtomicUsize::new(0);

/// Held by the thread around each purge, and by `fork` while it copies the process.
struct Lock(UnsafeCell<libc::pthread_mutex_t>);
// SAFETY: a pthread mutex is made to be shared between threads; it is only used through the
// `pthread_mutex_*` calls below, never moved.
unsafe impl Sync for Lock {}
static WORK: Lock = Lock(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER));

/// Sets the state when the program loads, and prepares `fork` for the thread.
pub(crate) fn load(on: bool) {
    // SAFETY: the handlers are `extern "C"` functions that stay valid as long as this code is
    // loaded; a library that holds this crate stops the thread before it is unloaded, and a
    // fork after that runs handlers that only touch statics of the library, which glibc keeps
    // registered (registered handlers of an unloaded library are a glibc matter: it drops
    // them at `dlclose`).
    unsafe { libc::pthread_atfork(Some(before_fork), Some(after_fork), Some(in_child)) };
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
    STOP.store(0, Ordering::Relaxed);
    let thread = match spawn() {
        Ok(thread) => thread,
        Err(error) => {
            PHASE.move_from(Phase::Starting, Phase::Refused, Ordering::Relaxed);
            say(
                true,
                format_args!("no thread for the background purge (pthread_create: error {error})"),
            );
            return;
        }
    };
    say(
        false,
        format_args!("background purge every {} ms", period_ms()),
    );
    THREAD.store(thread as usize, Ordering::Relaxed);
    // Turned off (or unloaded) while it was being created: this caller stops it.
    if !PHASE.move_from(Phase::Starting, Phase::Running, Ordering::AcqRel) {
        halt();
    }
}

/// Creates the thread, with every signal blocked (it must not run the program's handlers) and
/// a small stack (it needs a few KiB); or the error `pthread_create` returned.
fn spawn() -> Result<libc::pthread_t, i32> {
    // SAFETY: all-zero bytes are a valid `sigset_t`, `pthread_attr_t` and `pthread_t` to pass
    // to the initializing calls below, which write them before they are read; each call gets
    // pointers to live locals, the old signal mask is restored before returning, and the name
    // is a NUL-terminated string within the 16 bytes Linux allows, given to a thread just made.
    unsafe {
        let (mut all, mut old): (libc::sigset_t, libc::sigset_t) = core::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let mut attr: libc::pthread_attr_t = core::mem::zeroed();
        libc::pthread_attr_init(&mut attr);
        libc::pthread_attr_setstacksize(&mut attr, 256 << 10);
        let mut thread: libc::pthread_t = core::mem::zeroed();
        let mut made = libc::pthread_create(&mut thread, &attr, run, core::ptr::null_mut());
        if made == libc::EINVAL {
            // glibc takes the program's static thread-local storage from the stack too, and
            // refuses a stack it does not fit in: the default size then.
            made = libc::pthread_create(&mut thread, core::ptr::null(), run, core::ptr::null_mut());
        }
        libc::pthread_attr_destroy(&mut attr);
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, core::ptr::null_mut());
        if made != 0 {
            return Err(made);
        }
        // Named here rather than by the thread itself, so that it has its name (in `top -H`,
        // debuggers, /proc) by the time the policy says it runs. At most 15 bytes and a NUL.
        libc::pthread_setname_np(thread, b"mimalloc-purge\0".as_ptr().cast());
        Ok(thread)
    }
}

/// The thread: a purge every quarter of mimalloc's purge delay, until stopped; under a memory
/// limit a look every [`limit::TICK_MS`] ms, which purges everything freed while the process
/// is past half the limit.
extern "C" fn run(_: *mut c_void) -> *mut c_void {
    // SAFETY: gives the thread a mimalloc thread heap, without which `mi_collect` returns at
    // once; no precondition.
    unsafe { ffi::mi_thread_init() };
    let limit = limit::read();
    let mut pressed = false;
    while sleep(tick_ms(limit.is_some())) {
        if let Some(limit) = limit {
            pressed = limit::pressed(limit, pressed);
        }
        // SAFETY: the lock is initialized statically; `mi_collect` may be called from any
        // thread at any time (forced, it runs every scheduled purge now, program-wide).
        unsafe {
            libc::pthread_mutex_lock(WORK.0.get());
            ffi::mi_collect(pressed);
            libc::pthread_mutex_unlock(WORK.0.get());
        }
    }
    core::ptr::null_mut()
}

/// How long the thread sleeps between purges: a quarter of the delay ([`period_ms`]), and at
/// most [`limit::TICK_MS`] under a memory limit.
fn tick_ms(limited: bool) -> OptionValue {
    let period = period_ms();
    if limited {
        period.min(limit::TICK_MS as OptionValue)
    } else {
        period
    }
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

/// Sleeps `ms` milliseconds or until stopped; whether to go on.
fn sleep(ms: OptionValue) -> bool {
    let timeout = libc::timespec {
        tv_sec: (ms / 1000) as _,
        tv_nsec: ((ms % 1000) * 1_000_000) as _,
    };
    // SAFETY: waits on a static word while it is 0, for at most `timeout`; any outcome (woken,
    // timed out, interrupted) is answered by reading the word again.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            stop_word(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            0u32,
            &timeout as *const libc::timespec,
        );
    }
    STOP.load(Ordering::Acquire) == 0
}

/// The futex word of [`STOP`] (`AtomicU32::as_ptr` needs Rust 1.70): an `AtomicU32` has the
/// size and layout of a `u32`.
fn stop_word() -> *const u32 {
    (&STOP as *const AtomicU32).cast::<u32>()
}

/// Turns the purge off, stopping a running thread and waiting for it.
fn stop() {
    if PHASE.swap(Phase::Off, Ordering::AcqRel) == Phase::Running {
        halt();
    }
}

/// Wakes the thread for good and joins it.
fn halt() {
    STOP.store(1, Ordering::Release);
    // SAFETY: wakes every waiter of a static word; `THREAD` is the thread that `start` made
    // and nobody joined yet (only the caller that moved the phase away from `Running`, or from
    // `Starting` after creating it, gets here).
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            stop_word(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        );
        libc::pthread_join(
            THREAD.load(Ordering::Relaxed) as libc::pthread_t,
            core::ptr::null_mut(),
        );
    }
}

/// When the program exits or the library is unloaded: the thread must be gone before mimalloc
/// shuts down, or before its code is unmapped.
pub(crate) fn unload() {
    stop();
}

extern "C" fn before_fork() {
    // SAFETY: the lock is initialized statically; held until the fork is done (below).
    unsafe { libc::pthread_mutex_lock(WORK.0.get()) };
}

extern "C" fn after_fork() {
    // SAFETY: the forking thread locked it in `before_fork`.
    unsafe { libc::pthread_mutex_unlock(WORK.0.get()) };
}

extern "C" fn in_child() {
    // SAFETY: the child's only thread locked it in `before_fork`, before the copy.
    unsafe { libc::pthread_mutex_unlock(WORK.0.get()) };
    // The thread was not copied: the child starts its own once it allocates as a program, and
    // reads the limit again (a child may be moved to another cgroup).
    limit::forget();
    for copied in [Phase::Running, Phase::Starting] {
        PHASE.move_from(copied, Phase::Waiting, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::{after_fork, before_fork, in_child, set, WORK};

    /// Whether another attempt to take the purge lock finds it held.
    fn held() -> bool {
        // SAFETY: the lock is initialized statically; a successful attempt is undone at once.
        unsafe {
            if libc::pthread_mutex_trylock(WORK.0.get()) == 0 {
                libc::pthread_mutex_unlock(WORK.0.get());
                false
            } else {
                true
            }
        }
    }

    /// A fork waits for a purge in flight by taking the lock the thread holds around each
    /// purge, and both the parent and the child give it back.
    #[test]
    fn a_fork_holds_the_purge_lock_until_it_is_done() {
        // No thread of this test process's own: `in_child` would take it for a copied one.
        set(false);
        before_fork();
        assert!(held(), "before the copy");
        after_fork();
        assert!(!held(), "in the parent after it");
        before_fork();
        in_child();
        assert!(!held(), "in the child");
    }
}
