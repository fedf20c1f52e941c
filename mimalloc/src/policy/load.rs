//! Where the policy meets the program: when the program (or the library that holds this
//! crate) is loaded, the settings are read, the first arena reserved and mimalloc's heartbeat
//! taken; as the heap grows the heartbeat and the large path poll the policy with the memory
//! committed; when the program exits or the library is unloaded, the background purge is
//! stopped. `crate::startup` calls [`load`] in its order with the rest of the crate's start-up;
//! [`unload`] is a finalizer of priority 102, which runs before mimalloc's own (101: finalizers
//! run in reverse order), so the thread is gone before mimalloc shuts down.
//!
//! The heartbeat is mimalloc's deferred-free hook (`mi_register_deferred_free`), which mimalloc
//! calls every 1000 allocations that take its slow path, per thread: a small program never
//! gets there, a growing heap does every few MiB. A program that registers a hook of its own
//! through `mimalloc-sys` replaces it (mimalloc keeps one), and with it the policy's polls but
//! for the large path's.

use super::io::committed;
use super::settings::Settings;
use core::ffi::c_void;
use mimalloc_sys as ffi;

#[cfg(mimalloc_adaptive_thp)]
use super::huge;
#[cfg(mimalloc_background_purge)]
use super::purge;

/// When the program loads: after mimalloc has read its options, before the program can allocate.
pub(crate) fn load() {
    let settings = Settings::from_environment();
    #[cfg(mimalloc_adaptive_thp)]
    huge::load(settings.huge_pages_from);
    #[cfg(mimalloc_background_purge)]
    purge::load(settings.background_purge);
    let _ = settings;
    // SAFETY: `heartbeat` is an `extern "C"` function that stays valid while this code is
    // loaded, and ignores its argument.
    unsafe { ffi::mi_register_deferred_free(Some(heartbeat), core::ptr::null_mut()) };
}

#[used]
#[link_section = ".fini_array.00102"]
static UNLOAD: extern "C" fn() = unload;

/// When the program exits or the library is unloaded, before mimalloc shuts down.
extern "C" fn unload() {
    // A library being unloaded must not leave mimalloc calling into its code.
    // SAFETY: unregistering has no precondition.
    unsafe { ffi::mi_register_deferred_free(None, core::ptr::null_mut()) };
    #[cfg(mimalloc_background_purge)]
    purge::unload();
}
/// mimalloc's heartbeat: the heap may have grown.
unsafe extern "C" fn heartbeat(_force: bool, _beat: u64, _arg: *mut c_void) {
    poll(committed());
}

fn poll(committed: usize) {
    #[cfg(mimalloc_adaptive_thp)]
    huge::poll(committed);
    #[cfg(mimalloc_background_purge)]
    purge::poll(committed);
    let _ = committed;
}

/// The large path's poll, for blocks of 2 MiB or more (`super::large`), which a small heap
/// rarely takes and which grow a heap by as much as the heartbeat's thousand allocations; one
/// `getrusage`, next to the page faults of at least 2 MiB.
pub(crate) fn before_large(size: usize) {
    let committed = committed();
    #[cfg(mimalloc_adaptive_thp)]
    huge::before_large(size, committed);
    #[cfg(mimalloc_background_purge)]
    purge::poll(committed);
    let _ = (size, committed);
}
