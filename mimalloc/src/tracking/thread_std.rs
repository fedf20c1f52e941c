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
/// The closure given to `LocalKey::with` only takes the address, so that `with` is inlined to
/// a plain thread-local address whatever `f` is (a big `f` would keep it out of line, behind a
/// call through the key's accessor).
#[inline(always)]
pub(super) fn with_local<R>(f: impl FnOnce(&Local) -> R) -> R {
    let local = LOCAL.with(|local| local as *const Local);
    // SAFETY: a const-initialized thread-local of a type without `Drop` is a plain
    // `#[thread_local]` static on the targets of this module (see above): the calling thread's
    // `Local` is never destroyed and lives as long as the thread, which runs `f`; it is all
    // cells, so shared references to it may coexist (a nested call through the allocator).
    f(unsafe { &*local })
}

/// Runs `f` on the calling thread's state once its exit flush is registered: every call that
/// may settle comes through here.
pub(super) fn with_registered<R>(f: impl FnOnce(&Local) -> R) -> R {
    with_local(|local| {
        local.register_exit_flush(|| EXIT_FLUSH.try_with(|_| ()).is_ok());
        f(local)
    })
}
