//! The per-thread buffer in std's `thread_local!`, where that is native thread-local storage.
//!
//! A `const`-initialized `thread_local!` of a type without `Drop` compiles to a plain
//! `#[thread_local]` static on these targets: no allocation, no lazy initialization, no
//! destructor registration, usable at any time including from other thread-local destructors.
//! The flush at thread exit is a second, zero-sized thread-local with `Drop`, touched once per
//! thread on its first slow path; registering its destructor may allocate (std's fallback list
//! of destructors, e.g. on musl or Windows), which the `REGISTERING` state of the buffer
//! handles.

use super::account::{self, Local};

std::thread_local! {
    static LOCAL: Local = const { Local::new() };
    static EXIT_FLUSH: ExitFlush = const { ExitFlush };
}

/// Flushes the thread's buffer when the thread's thread-locals are destroyed.
struct ExitFlush;

impl Drop for ExitFlush {
    fn drop(&mut self) {
        LOCAL.with(account::exit);
    }
}

/// Runs `f` on the calling thread's buffer.
#[inline(always)]
pub(super) fn with_local<R>(f: impl FnOnce(&Local) -> R) -> R {
    LOCAL.with(f)
}

/// Makes sure [`account::exit`] runs when the calling thread exits; `false` if it cannot.
pub(super) fn register_exit_flush(_local: &Local) -> bool {
    EXIT_FLUSH.try_with(|_| ()).is_ok()
}
