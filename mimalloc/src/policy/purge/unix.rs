//! The background purge's thread on Linux, Android, macOS and FreeBSD: made with the C
//! library's `pthread_create` with every signal blocked, asleep in the system's own wait
//! (`wait.rs`), and safe across `fork` (the thread finishes any purge before a fork proceeds: a
//! purge in flight would leave mimalloc's purge guard held in the child, which has no thread
//! and starts its own).

use crate::options::OptionValue;
use core::cell::UnsafeCell;
use core::ffi::c_void;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

mod wait;

/// The call that makes the thread, for the warning when it fails.
pub(super) const SPAWN: &str = "pthread_create";

/// The word the thread sleeps on: raised to wake it for good.
static STOP: AtomicU32 = AtomicU32::new(0);

/// Held by the thread around each purge, and by `fork` while it copies the process.
struct Lock(UnsafeCell<libc::pthread_mutex_t>);
// SAFETY: a pthread mutex is made to be shared between threads; it is only used through the
// `pthread_mutex_*` calls below, never moved.
unsafe impl Sync for Lock {}
static WORK: Lock = Lock(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER));

/// What a forked child runs: the purge forgets the thread it did not get.
static IN_CHILD: AtomicUsize = AtomicUsize::new(0);

/// Prepares `fork` for the thread, when the program loads: `forget` runs in each child.
pub(super) fn load(forget: fn()) {
    IN_CHILD.store(forget as usize, Ordering::Relaxed);
    // SAFETY: the handlers are `extern "C"` functions that stay valid as long as this code is
    // loaded; a library that holds this crate stops the thread before it is unloaded, and a
    // fork after that runs handlers that only touch statics of the library, which glibc keeps
    // registered (registered handlers of an unloaded library are a glibc matter: it drops
    // them at `dlclose`).
    unsafe { libc::pthread_atfork(Some(before_fork), Some(after_fork), Some(in_child)) };
}

/// Creates the thread that runs `work`, with every signal blocked (it must not run the
/// program's handlers) and a small stack (it needs a few KiB); or the error `pthread_create`
/// returned.
pub(super) fn spawn(work: fn()) -> Result<usize, i32> {
    let work = work as *mut c_void;
    STOP.store(0, Ordering::Relaxed);
    // SAFETY: all-zero bytes are a valid `sigset_t`, `pthread_attr_t` and `pthread_t` to pass
    // to the initializing calls below, which write them before they are read; each call gets
    // pointers to live locals, and the old signal mask is restored before returning.
    let thread = unsafe {
        let (mut all, mut old): (libc::sigset_t, libc::sigset_t) = core::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let mut attr: libc::pthread_attr_t = core::mem::zeroed();
        libc::pthread_attr_init(&mut attr);
        libc::pthread_attr_setstacksize(&mut attr, 256 << 10);
        let mut thread: libc::pthread_t = core::mem::zeroed();
        let mut made = libc::pthread_create(&mut thread, &attr, run, work);
        if made == libc::EINVAL {
            // glibc takes the program's static thread-local storage from the stack too, and
            // refuses a stack it does not fit in: the default size then.
            made = libc::pthread_create(&mut thread, core::ptr::null(), run, work);
        }
        libc::pthread_attr_destroy(&mut attr);
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, core::ptr::null_mut());
        if made != 0 {
            return Err(made);
        }
        thread
    };
    name(thread);
    Ok(thread as usize)
}

/// macOS: `stop` runs when the program exits, before mimalloc's end. Registered with `atexit`
/// when the first thread has been made, after mimalloc's initializer has registered its end (a
/// heap of `PURGE_FROM` bytes has been through it), so that it runs before that end: `atexit`
/// functions run last registered first. Once: a stop finds no thread after the first.
#[cfg(target_os = "macos")]
pub(super) fn stop_at_exit(stop: fn()) {
    static STOP_AT_EXIT: AtomicUsize = AtomicUsize::new(0);
    extern "C" fn at_exit() {
        // SAFETY: `stop_at_exit` stored a `fn()` cast to a `usize`, which has its size, before
        // registering this function.
        let stop: fn() =
            unsafe { core::mem::transmute::<usize, fn()>(STOP_AT_EXIT.load(Ordering::Relaxed)) };
        stop();
    }
    if STOP_AT_EXIT.swap(stop as usize, Ordering::Relaxed) == 0 {
        // SAFETY: `at_exit` is an `extern "C"` function without arguments that stays valid as
        // long as this code is loaded. Should `atexit` refuse it, the thread ends with the
        // process, as it does when a program calls `_exit`.
        unsafe { libc::atexit(at_exit) };
    }
}

/// The thread's start: runs the `fn()` that `spawn` passed as its argument.
extern "C" fn run(work: *mut c_void) -> *mut c_void {
    // SAFETY: `spawn` passes a `fn()` cast to a pointer, which has its size and comes back
    // unchanged.
    let work: fn() = unsafe { core::mem::transmute::<*mut c_void, fn()>(work) };
    #[cfg(target_os = "macos")]
    // SAFETY: names the calling thread; the name is NUL-terminated.
    unsafe {
        libc::pthread_setname_np(NAME.as_ptr().cast())
    };
    work();
    core::ptr::null_mut()
}

/// Runs one purge, which a `fork` waits for.
pub(super) fn purging(purge: impl FnOnce()) {
    // SAFETY: the lock is initialized statically and released by this same thread.
    unsafe { libc::pthread_mutex_lock(WORK.0.get()) };
    purge();
    // SAFETY: locked just above by this thread.
    unsafe { libc::pthread_mutex_unlock(WORK.0.get()) };
}

/// Sleeps `ms` milliseconds or until stopped; whether to go on.
pub(super) fn sleep(ms: OptionValue) -> bool {
    wait::wait(&STOP, ms);
    STOP.load(Ordering::Acquire) == 0
}

/// The thread's name (in `top -H`, `ps -M`, debuggers), at most 15 bytes and a NUL: given
/// here rather than by the thread itself where the system allows, so that the thread has it by
/// the time the policy says it runs; macOS names only the calling thread, so there the thread
/// names itself ([`run`]).
const NAME: &[u8] = b"mimalloc-purge\0";

fn name(thread: libc::pthread_t) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    // SAFETY: `thread` was just made and not joined; the name is NUL-terminated.
    unsafe {
        libc::pthread_setname_np(thread, NAME.as_ptr().cast());
    }
    #[cfg(target_os = "freebsd")]
    // SAFETY: `thread` was just made and not joined; the name is NUL-terminated.
    unsafe {
        libc::pthread_set_name_np(thread, NAME.as_ptr().cast());
    }
    let _ = thread;
}

/// Wakes the thread for good and joins it.
pub(super) fn halt(thread: usize) {
    STOP.store(1, Ordering::Release);
    wait::wake(&STOP);
    // SAFETY: `thread` is the thread that `spawn` made and nobody joined yet (only the caller
    // that moved the phase away from `Running`, or from `Starting` after creating it, gets
    // here).
    unsafe { libc::pthread_join(thread as libc::pthread_t, core::ptr::null_mut()) };
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
    wait::forget();
    let in_child = IN_CHILD.load(Ordering::Relaxed);
    if in_child != 0 {
        // SAFETY: `load` stored a `fn()` cast to a `usize`, which has its size.
        let in_child: fn() = unsafe { core::mem::transmute::<usize, fn()>(in_child) };
        in_child();
    }
}

#[cfg(test)]
mod tests {
    use super::{after_fork, before_fork, in_child, IN_CHILD, WORK};
    use core::sync::atomic::Ordering;

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
        // Nothing of the purge's to forget in this test's pretend child.
        IN_CHILD.store(0, Ordering::Relaxed);
        before_fork();
        assert!(held(), "before the copy");
        after_fork();
        assert!(!held(), "in the parent after it");
        before_fork();
        in_child();
        assert!(!held(), "in the child");
    }
}
