//! The thread's [`Local`] on Windows targets whose std has no native thread-local storage
//! (`*-windows-gnu`). There, `thread_local!` keeps values behind an OS key and boxes each value
//! on a thread's first access, which is an allocation through the global allocator from inside
//! the global allocator: it recurses, and with Rust 1.63 it hangs in the key's lazy
//! initialization. So this module uses the Win32 API directly, which allocates nothing through
//! Rust:
//!
//! - a TLS index holds a pointer to the thread's [`Local`], allocated with `HeapAlloc` on the
//!   thread's first call;
//! - an FLS index with a callback holds the same pointer: Windows calls the callback when the
//!   thread (or fiber) exits, which flushes the state, frees it and leaves a marker in the TLS
//!   slot, so that later calls of the exiting thread (other thread-local destructors) are
//!   settled one by one.
//!
//! `TlsGetValue` clears the thread's last-error code; the allocator must not (code that reads
//! `GetLastError` after freeing a buffer would see it vanish), so the hot path restores it.

use super::local::Local;
use core::ffi::c_void;
use core::ptr;
use core::sync::atomic::{AtomicU32, Ordering};

#[link(name = "kernel32")]
extern "system" {
    fn TlsAlloc() -> u32;
    fn TlsGetValue(index: u32) -> *mut c_void;
    fn TlsSetValue(index: u32, value: *mut c_void) -> i32;
    fn FlsAlloc(callback: Option<unsafe extern "system" fn(*mut c_void)>) -> u32;
    fn FlsSetValue(index: u32, value: *mut c_void) -> i32;
    fn GetLastError() -> u32;
    fn SetLastError(code: u32);
    fn GetProcessHeap() -> *mut c_void;
    fn HeapAlloc(heap: *mut c_void, flags: u32, bytes: usize) -> *mut c_void;
    fn HeapFree(heap: *mut c_void, flags: u32, mem: *mut c_void) -> i32;
}

const OUT_OF_INDEXES: u32 = u32::MAX;
/// Not allocated yet (both indexes are stored plus one, so zero means "not yet").
const UNSET: u32 = 0;
/// `TlsAlloc` or `FlsAlloc` failed: every call is settled one by one.
const FAILED: u32 = u32::MAX;
/// The TLS slot's value after the exit flush (never a valid `Local` address).
const EXITED: *mut c_void = 1 as *mut c_void;

static TLS_INDEX: AtomicU32 = AtomicU32::new(UNSET);
static FLS_INDEX: AtomicU32 = AtomicU32::new(UNSET);

/// The thread's `Local`, null before its first call, or [`EXITED`].
#[inline(always)]
fn get(tls_index: u32) -> *mut c_void {
    // SAFETY: `tls_index - 1` is an index `TlsAlloc` returned and that is never freed; the
    // three calls only touch the calling thread's TEB.
    unsafe {
        let code = GetLastError();
        let value = TlsGetValue(tls_index - 1);
        SetLastError(code);
        value
    }
}

/// Runs `f` on the calling thread's state.
#[inline(always)]
pub(super) fn with_local<R>(f: impl FnOnce(&Local) -> R) -> R {
    let index = TLS_INDEX.load(Ordering::Acquire);
    if index != UNSET && index != FAILED {
        let value = get(index);
        if value as usize > EXITED as usize {
            // SAFETY: a value above `EXITED` is the `Local` this thread allocated in
            // `with_new_local` and that only the exit callback, on this same thread, frees.
            return f(unsafe { &*value.cast::<Local>() });
        }
    }
    with_new_local(f)
}

/// The calling thread has no state yet (or no longer): make one, or settle every call.
#[cold]
#[inline(never)]
fn with_new_local<R>(f: impl FnOnce(&Local) -> R) -> R {
    let index = tls_index();
    if index != FAILED && get(index).is_null() {
        // SAFETY: `HeapAlloc` on the process heap has no preconditions; null on failure.
        let mem = unsafe { HeapAlloc(GetProcessHeap(), 0, core::mem::size_of::<Local>()) };
        if !mem.is_null() {
            let local = mem.cast::<Local>();
            // SAFETY: `mem` is a fresh block of the size of a `Local`, and the process heap
            // aligns blocks to 16 bytes (8 on 32-bit), more than a `Local` needs; the slot
            // then owns it. If the slot cannot be set, the block is freed again.
            unsafe {
                ptr::write(local, Local::new(register_exit_flush));
                if TlsSetValue(index - 1, mem) != 0 {
                    return f(&*local);
                }
                HeapFree(GetProcessHeap(), 0, mem);
            }
        }
    }
    // No index, no memory, or the thread is past its exit flush: a throw-away state that
    // settles every call and registers nothing.
    f(&Local::unbuffered())
}

/// The TLS index plus one, allocating both indexes on first use; [`FAILED`] if Windows has
/// none left.
fn tls_index() -> u32 {
    let index = TLS_INDEX.load(Ordering::Acquire);
    if index != UNSET {
        return index;
    }
    // SAFETY: the two allocation functions have no preconditions. Two threads racing here
    // may both allocate: the loser frees nothing (an unused index is harmless, and freeing an
    // FLS index would run its callback for every thread).
    let (tls, fls) = unsafe { (TlsAlloc(), FlsAlloc(Some(on_exit))) };
    if tls == OUT_OF_INDEXES || fls == OUT_OF_INDEXES {
        TLS_INDEX.store(FAILED, Ordering::Release);
        return FAILED;
    }
    // The FLS index is published first (by this thread or a racing one): whoever sees a TLS
    // index also sees an FLS index.
    let _ = FLS_INDEX.compare_exchange(UNSET, fls + 1, Ordering::AcqRel, Ordering::Acquire);
    match TLS_INDEX.compare_exchange(UNSET, tls + 1, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => tls + 1,
        Err(winner) => winner,
    }
}

/// Arranges for [`on_exit`] to run when the calling thread exits; `false` if it cannot. The
/// `Local` calls it, before it first settles.
fn register_exit_flush(local: &Local) -> bool {
    let fls = FLS_INDEX.load(Ordering::Acquire);
    if fls == UNSET || fls == FAILED {
        return false;
    }
    // SAFETY: a valid index; the value is the thread's `Local` (a throw-away one is
    // `Local::unbuffered`, which registers nothing, so it never gets here).
    unsafe { FlsSetValue(fls - 1, local as *const Local as *mut c_void) != 0 }
}

/// The FLS callback: the thread (or fiber) that registered `value` is exiting.
///
/// Windows runs it on the exiting thread. Only if the calling thread's TLS slot holds `value`
/// is the `Local` this thread's, and only then is it touched: flushed, replaced by `EXITED`
/// and freed. (A fiber deleted from another thread than the one whose state it registered
/// leaves that state alone; the thread keeps using it.)
unsafe extern "system" fn on_exit(value: *mut c_void) {
    let index = TLS_INDEX.load(Ordering::Acquire);
    if value.is_null() || index == UNSET || index == FAILED || get(index) != value {
        return;
    }
    // SAFETY: the TLS slot of this thread holds `value`, so it is the live `Local` that
    // `with_new_local` allocated for this thread, used by no other thread; after the slot is
    // set to `EXITED` nothing reaches the block, and it is freed.
    unsafe {
        (*value.cast::<Local>()).exit();
        TlsSetValue(index - 1, EXITED);
        HeapFree(GetProcessHeap(), 0, value);
    }
}
