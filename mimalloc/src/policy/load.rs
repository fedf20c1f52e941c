//! Where the policy meets the program: when the program (or the library that holds this
//! crate) is loaded, the settings are read, the first arena reserved and mimalloc's heartbeat
//! taken; as the heap grows the heartbeat and the large path poll the policy; when the program
//! exits or the library is unloaded, the background purge is stopped.
//!
//! The load and unload hooks are ELF initializer and finalizer entries of priority 102: after
//! mimalloc's own initializer (101), which reads its options, and before any default-priority
//! constructor of the program could allocate; the finalizer runs before mimalloc's (finalizers
//! run in reverse order), so the thread is gone before mimalloc shuts down.
//!
//! The heartbeat is mimalloc's deferred-free hook (`mi_register_deferred_free`), which mimalloc
//! calls every 1000 allocations that take its slow path, per thread: a small program never
//! gets there, a growing heap does every few MiB. A program that registers a hook of its own
//! through `mimalloc-sys` replaces it (mimalloc keeps one), and with it the policy's polls but
//! for the large path's.

use super::process;
use super::settings::Settings;
use core::ffi::c_void;
use mimalloc_sys as ffi;

#[cfg(mimalloc_adaptive_thp)]
use super::huge;
#[cfg(mimalloc_background_purge)]
use super::purge;

#[used]
#[link_section = ".init_array.00102"]
static LOAD: extern "C" fn() = load;

#[used]
#[link_section = ".fini_array.00102"]
static UNLOAD: extern "C" fn() = unload;

extern "C" fn load() {
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

extern "C" fn unload() {
    // A library being unloaded must not leave mimalloc calling into its code.
    // SAFETY: unregistering has no precondition.
    unsafe { ffi::mi_register_deferred_free(None, core::ptr::null_mut()) };
    #[cfg(mimalloc_background_purge)]
    purge::unload();
}

/// mimalloc's heartbeat: the heap may have grown.
unsafe extern "C" fn heartbeat(_force: bool, _beat: u64, _arg: *mut c_void) {
    poll(process::committed());
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
    let committed = process::committed();
    #[cfg(mimalloc_adaptive_thp)]
    huge::before_large(size, committed);
    #[cfg(mimalloc_background_purge)]
    purge::poll(committed);
    let _ = (size, committed);
}
