//! The thread's sleep: a wait on a word while it is 0, for at most a timeout, that a wake
//! ends at once. Each system's own call, none of which takes a lock of Rust's or allocates:
//! a futex on Linux and Android, `_umtx_op` on FreeBSD (both compare the word in the kernel, so
//! a wake between the caller's look and the sleep is not lost), and on macOS, which has no
//! public futex, a condition variable whose relative wait no change of the wall clock moves.

use crate::options::OptionValue;
use core::sync::atomic::AtomicU32;

/// Sleeps while `word` is 0, for at most `ms` milliseconds; the caller reads the word again
/// whatever ended the sleep (a wake, the timeout, a signal, a spurious return).
pub(super) fn wait(word: &AtomicU32, ms: OptionValue) {
    let timeout = libc::timespec {
        tv_sec: (ms / 1000) as _,
        tv_nsec: ((ms % 1000) * 1_000_000) as _,
    };
    #[cfg(any(target_os = "linux", target_os = "android"))]
    // SAFETY: waits on a live word while it is 0, for at most `timeout`, a live local.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            address(word),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            0u32,
            &timeout as *const libc::timespec,
        );
    }
    #[cfg(target_os = "freebsd")]
    // SAFETY: waits on a live word while it is 0; an `uaddr` of the size of a `timespec` tells
    // the kernel that `uaddr2` is a relative timeout, here a live local.
    unsafe {
        libc::_umtx_op(
            address(word),
            libc::UMTX_OP_WAIT_UINT_PRIVATE,
            0,
            core::mem::size_of::<libc::timespec>() as *mut libc::c_void,
            &timeout as *const libc::timespec as *mut libc::c_void,
        );
    }
    #[cfg(target_os = "macos")]
    condition::sleep_on(word, &timeout);
}

/// Ends every sleep on `word`, which the caller changed first.
pub(super) fn wake(word: &AtomicU32) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    // SAFETY: wakes every waiter of a live word.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            address(word),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        );
    }
    #[cfg(target_os = "freebsd")]
    // SAFETY: wakes every waiter of a live word; the two addresses are unused.
    unsafe {
        libc::_umtx_op(
            address(word),
            libc::UMTX_OP_WAKE_PRIVATE,
            i32::MAX as _,
            core::ptr::null_mut(),
            core::ptr::null_mut(),
        );
    }
    #[cfg(target_os = "macos")]
    condition::wake_all(word);
}

/// In a forked child, which has no thread asleep: nothing of a kernel's wait outlives the
/// copy, but a condition variable's state does.
pub(super) fn forget() {
    #[cfg(target_os = "macos")]
    condition::start_afresh();
}

/// The word's address for the kernel (`AtomicU32::as_ptr` needs Rust 1.70): an `AtomicU32`
/// has the size and layout of a `u32`.
#[cfg(not(target_os = "macos"))]
fn address(word: &AtomicU32) -> *mut libc::c_void {
    (word as *const AtomicU32 as *mut AtomicU32).cast()
}

/// macOS: a mutex and a condition variable around the word.
#[cfg(target_os = "macos")]
mod condition {
    use core::cell::UnsafeCell;
    use core::sync::atomic::{AtomicU32, Ordering};

    struct Sleep {
        lock: UnsafeCell<libc::pthread_mutex_t>,
        woken: UnsafeCell<libc::pthread_cond_t>,
    }
    // SAFETY: a pthread mutex and condition variable are made to be shared between threads;
    // they are only used through the `pthread_*` calls below, never moved.
    unsafe impl Sync for Sleep {}
    static SLEEP: Sleep = Sleep {
        lock: UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER),
        woken: UnsafeCell::new(libc::PTHREAD_COND_INITIALIZER),
    };

    pub(crate) fn sleep_on(word: &AtomicU32, timeout: &libc::timespec) {
        // SAFETY: the mutex and condition variable are initialized statically; the word is
        // read under the mutex that `wake_all` takes to signal, so a wake is not lost between
        // the look and the wait, which releases the mutex while it sleeps.
        unsafe {
            libc::pthread_mutex_lock(SLEEP.lock.get());
            if word.load(Ordering::Acquire) == 0 {
                libc::pthread_cond_timedwait_relative_np(
                    SLEEP.woken.get(),
                    SLEEP.lock.get(),
                    timeout,
                );
            }
            libc::pthread_mutex_unlock(SLEEP.lock.get());
        }
    }

    pub(crate) fn wake_all(_word: &AtomicU32) {
        // SAFETY: initialized statically; the signal is sent under the mutex (see `sleep_on`).
        unsafe {
            libc::pthread_mutex_lock(SLEEP.lock.get());
            libc::pthread_cond_broadcast(SLEEP.woken.get());
            libc::pthread_mutex_unlock(SLEEP.lock.get());
        }
    }

    /// The mutex and condition variable made again: the copy may hold the state of a sleep
    /// of the thread the child did not get.
    pub(crate) fn start_afresh() {
        // SAFETY: the child has one thread, which runs this, so nothing else uses the two;
        // writing their initial values over them is how they are made again.
        unsafe {
            SLEEP.lock.get().write(libc::PTHREAD_MUTEX_INITIALIZER);
            SLEEP.woken.get().write(libc::PTHREAD_COND_INITIALIZER);
        }
    }
}
