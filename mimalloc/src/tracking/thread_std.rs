//! The thread's [`Local`] in std's `thread_local!`, where that is native thread-local storage.
//!
//! A `const`-initialized `thread_local!` of a type without `Drop` compiles to a plain
//! `#[thread_local]` static on these targets: no allocation, no lazy initialization, no
//! destructor registration, usable at any time including from other thread-local destructors.
//! The flush at thread exit is a second, zero-sized thread-local with `Drop`, touched once per
//! thread before its first settle; registering its destructor may allocate (std's fallback list
//! of destructors, e.g. on musl or Windows), which [`Local::register_exit_flush`] allows for.

use super::local::Local;

std::thread_local! {
    static LOCAL: Local = const { Local::new() };
    static EXIT_FLUSH: ExitFlush = const { ExitFlush };
}

/// Flushes the thread's state when the thread's thread-locals are destroyed.
struct ExitFlush;

impl Drop for ExitFlush {
    fn drop(&mut self) {
        LOCAL.with(Local::exit);
    }
}

/// Runs `f` on the calling thread's state: for the hot path, and for reads that never settle.
#[inline(always)]
pub(super) fn with_local<R>(f: impl FnOnce(&Local) -> R) -> R {
    LOCAL.with(f)
}

/// Runs `f` on the calling thread's state once its exit flush is registered: every call that
/// may settle comes through here.
pub(super) fn with_registered<R>(f: impl FnOnce(&Local) -> R) -> R {
    LOCAL.with(|local| {
        local.register_exit_flush(|| EXIT_FLUSH.try_with(|_| ()).is_ok());
        f(local)
    })
}
