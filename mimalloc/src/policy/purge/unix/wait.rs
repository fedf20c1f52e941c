//! The thread's sleep: a wait on a word while it is 0, for at most a timeout, that a wake
//! ends at once. Each system's own call, none of which takes a lock of Rust's or allocates:
//! a futex on Linux and Android, `_umtx_op` on FreeBSD (both compare the word in the kernel, so
//! a wake between the caller's look and the sleep is not lost), and on macOS, which has no
//! public futex, a condition variable whose relative wait no change of the wall clock moves.

use crate::options::OptionValue;
#[cfg(not(target_os = "macos"))]
use core::sync::atomic::AtomicU32;

/// The timeout of a wait of `ms` milliseconds.
fn timespec(ms: OptionValue) -> libc::timespec {
    libc::timespec {
        tv_sec: (ms / 1000) as _,
        tv_nsec: ((ms % 1000) * 1_000_000) as _,
    }
}

/// The word's address for the kernel (`AtomicU32::as_ptr` needs Rust 1.70): an `AtomicU32`
/// has the size and layout of a `u32`.
#[cfg(not(target_os = "macos"))]
fn address(word: &AtomicU32) -> *mut libc::c_void {
    (word as *const AtomicU32 as *mut AtomicU32).cast()
}

/// Sleeps while `word` is 0, for at most `ms` milliseconds; the caller reads the word again
/// whatever ended the sleep (a wake, the timeout, a signal, a spurious return).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(super) fn wait(word: &AtomicU32, ms: OptionValue) {
    let timeout = timespec(ms);
    // SAFETY: waits on a live static word while it is 0, for at most `timeout`, a live local.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            address(word),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            0u32,
            &timeout as *const libc::timespec,
        );
    }
}

/// Ends every sleep on `word`, which the caller changed first.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(super) fn wake(word: &AtomicU32) {
    // SAFETY: wakes every waiter of a live static word.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            address(word),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        );
    }
}

/// Sleeps while `word` is 0, for at most `ms` milliseconds; the caller reads the word again
/// whatever ended the sleep.
#[cfg(target_os = "freebsd")]
pub(super) fn wait(word: &AtomicU32, ms: OptionValue) {
    let mut timeout = timespec(ms);
    // SAFETY: waits on a live static word while it is 0; an `uaddr` of the size of a
    // `timespec` tells the kernel that `uaddr2` is a relative timeout, here a live local.
    unsafe {
        libc::_umtx_op(
            address(word),
            libc::UMTX_OP_WAIT_UINT_PRIVATE,
            0,
            core::mem::size_of::<libc::timespec>() as *mut libc::c_void,
            (&mut timeout as *mut libc::timespec).cast(),
        );
    }
}

/// Ends every sleep on `word`, which the caller changed first.
#[cfg(target_os = "freebsd")]
pub(super) fn wake(word: &AtomicU32) {
    // SAFETY: wakes every waiter of a live static word; the two addresses are unused.
    unsafe {
        libc::_umtx_op(
            address(word),
            libc::UMTX_OP_WAKE_PRIVATE,
            i32::MAX as _,
            core::ptr::null_mut(),
            core::ptr::null_mut(),
        );
    }
}

#[cfg(target_os = "macos")]
pub(super) use condition::{forget, wait, wake};

/// Nothing of a kernel wait outlives a `fork`.
#[cfg(not(target_os = "macos"))]
pub(super) fn forget() {}

/// macOS: a mutex and a condition variable around the word.
#[cfg(target_os = "macos")]
mod condition {
    use super::{timespec, OptionValue};
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

    /// Sleeps while `word` is 0, for at most `ms` milliseconds; the caller reads the word
    /// again whatever ended the sleep.
    pub(crate) fn wait(word: &AtomicU32, ms: OptionValue) {
        let timeout = timespec(ms);
        // SAFETY: the mutex and condition variable are initialized statically; the word is
        // read under the mutex that `wake` takes before it signals, so a wake is not lost
        // between the look and the wait, which releases the mutex while it sleeps.
        unsafe {
            libc::pthread_mutex_lock(SLEEP.lock.get());
            if word.load(Ordering::Acquire) == 0 {
                libc::pthread_cond_timedwait_relative_np(
                    SLEEP.woken.get(),
                    SLEEP.lock.get(),
                    &timeout,
                );
            }
            libc::pthread_mutex_unlock(SLEEP.lock.get());
        }
    }

    /// Ends every sleep on `word`, which the caller changed first.
    pub(crate) fn wake(_word: &AtomicU32) {
        // SAFETY: initialized statically; the signal is sent under the mutex (see `wait`).
        unsafe {
            libc::pthread_mutex_lock(SLEEP.lock.get());
            libc::pthread_cond_broadcast(SLEEP.woken.get());
            libc::pthread_mutex_unlock(SLEEP.lock.get());
        }
    }

    /// In a forked child: the mutex and condition variable start afresh, as the copy may hold
    /// the state of a sleep of the thread the child did not get.
    pub(crate) fn forget() {
        // SAFETY: the child has one thread, which runs this, so nothing else uses the two;
        // writing their initial values over them is how they are made again.
        unsafe {
            SLEEP.lock.get().write(libc::PTHREAD_MUTEX_INITIALIZER);
            SLEEP.woken.get().write(libc::PTHREAD_COND_INITIALIZER);
        }
    }
}
