//! Where the policy meets the program: when the program (or the library that holds this
//! crate) is loaded, the settings are read, the first arena reserved and mimalloc's heartbeat
//! taken; as the heap grows the heartbeat and the large path poll the policy with the memory
//! committed; when the program exits or the library is unloaded, the background purge is
//! stopped. `crate::startup` calls [`load`] in its order with the rest of the crate's start-up;
//! [`unload`] is an ELF finalizer of priority 102, which runs before mimalloc's own (101:
//! finalizers run in reverse order), so the thread is gone before mimalloc shuts down. On
//! Windows [`load`] registers it with the CRT's `atexit`, which runs before mimalloc's end in the
//! loader's thread-local-storage callback (`policy/purge/windows.rs` has what that means in a DLL).
//! On macOS, where mimalloc's end is an `atexit` function registered by its initializer (clang
//! registers destructors that way on Darwin), which may run after this crate's, the background
//! purge registers its own stop with `atexit` when it makes its thread (`policy/purge/unix.rs`),
//! so that the stop runs first.
//!
//! The heartbeat is mimalloc's deferred-free hook (`mi_register_deferred_free`), which mimalloc
//! calls every 1000 allocations that take its slow path, per thread (blocks of 1 KiB or less
//! take it once a page; larger ones every time): a small program never gets there, a heap
//! growing in blocks of up to 64 KiB does every 64 MiB at most. In larger blocks a thousand
//! can be hundreds of MiB: the large path looks for itself ([`before_block`]). A program that
//! registers a hook of its own through `mimalloc-sys` replaces the heartbeat (mimalloc keeps
//! one), and with it the policy's looks but for the large path's.

use super::io::committed;
use super::settings::Settings;
use core::ffi::c_void;
use core::sync::atomic::{AtomicUsize, Ordering};
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
    // SAFETY: `unload` is an `extern "C"` function without arguments that stays valid while
    // this code is loaded (a DLL's `atexit` functions run when it is unloaded). Should the CRT
    // refuse it (its table full), the thread is ended by the process's exit instead, as when
    // a program calls `ExitProcess`.
    #[cfg(windows)]
    unsafe {
        libc::atexit(unload)
    };
}

#[cfg(not(any(windows, target_os = "macos")))]
#[used]
#[link_section = ".fini_array.00102"]
static UNLOAD: extern "C" fn() = unload;

/// When the program exits or the library is unloaded, before mimalloc shuts down.
#[cfg(not(target_os = "macos"))]
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

/// The large path's poll, for blocks of more than 64 KiB (`super::large`): every block of 2 MiB
/// or more, which may take the heap past a threshold by itself, and otherwise once every
/// [`LOOK_EVERY`] bytes requested, so that a heap grown by such blocks is seen within a few MiB
/// of any threshold rather than at mimalloc's next heartbeat. One `getrusage` a look.
pub(crate) fn before_block(size: usize) {
    if size >= LARGE_BLOCK {
        before_large(size);
    } else if REQUESTED.fetch_add(size, Ordering::Relaxed) + size >= LOOK_EVERY {
        // Threads that pass the mark together each look once; a block counted between one
        // thread's add and its reset is lost, which delays the next look by that block.
        REQUESTED.store(0, Ordering::Relaxed);
        poll(committed());
    }
}

/// The size from which the policy looks at every block: a huge page.
const LARGE_BLOCK: usize = 2 << 20;

/// The bytes requested in blocks of more than 64 KiB and less than 2 MiB between two looks of
/// the large path: a quarter of the default thresholds ([`super::HUGE_PAGES_FROM`],
/// [`super::PURGE_FROM`]), so the heap passes them by little; and a program that allocates and
/// frees such a block in a loop pays one `getrusage` (about a microsecond) per 4 MiB of them,
/// at most one per 63 of mimalloc's slow paths (the smallest such blocks).
const LOOK_EVERY: usize = 4 << 20;

/// Bytes requested in blocks of more than 64 KiB and less than 2 MiB since the large path last
/// looked.
static REQUESTED: AtomicUsize = AtomicUsize::new(0);

/// Blocks of 2 MiB or more: the policy looks at each, with the block counted in.
fn before_large(size: usize) {
    let committed = committed();
    #[cfg(mimalloc_adaptive_thp)]
    huge::before_large(size, committed);
    #[cfg(mimalloc_background_purge)]
    purge::poll(committed);
    let _ = (size, committed);
}
