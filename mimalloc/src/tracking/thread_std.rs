//! The thread's [`Local`] in std's `thread_local!`, where that is native thread-local storage.
//!
//! A `const`-initialized `thread_local!` of a type without `Drop` compiles to a plain
//! `#[thread_local]` static on these targets: no allocation, no lazy initialization, no
//! destructor registration, usable at any time including from other thread-local destructors.
//! The flush at thread exit is a second, zero-sized thread-local with `Drop`, touched once per
//! thread before its first settle; registering its destructor may allocate (std's fallback list
//! of destructors, e.g. on musl or Windows), which the `Local`'s states allow for.

use super::local::Local;

std::thread_local! {
    static LOCAL: Local = const { Local::new(register_exit_flush) };
    static EXIT_FLUSH: ExitFlush = const { ExitFlush };
}

/// Flushes the thread's state when the thread's thread-locals are destroyed.
struct ExitFlush;

impl Drop for ExitFlush {
    fn drop(&mut self) {
        LOCAL.with(Local::exit);
    }
}

/// The `Local`'s way to have its exit flush run: touching [`EXIT_FLUSH`] registers its
/// destructor. `false` once the thread's thread-locals are being destroyed.
fn register_exit_flush(_: &Local) -> bool {
    EXIT_FLUSH.try_with(|_| ()).is_ok()
}

/// Runs `f` on the calling thread's state. The closure given to `LocalKey::with` only takes the
/// address, so that `with` is inlined to a plain thread-local address whatever `f` is: a slow
/// path runs the inner allocator in `f`, which would make `with` too big to inline.
#[inline(always)]
pub(super) fn with_local<R>(f: impl FnOnce(&Local) -> R) -> R {
    let local = LOCAL.with(|local| local as *const Local);
    // SAFETY: a const-initialized thread-local of a type without `Drop` is a plain
    // `#[thread_local]` static on the targets of this module (see above): the calling thread's
    // `Local` is never destroyed and lives as long as the thread, which runs `f`; it is all
    // cells, so shared references to it may coexist (a nested call through the allocator).
    f(unsafe { &*local })
}
