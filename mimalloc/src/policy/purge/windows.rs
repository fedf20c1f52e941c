//! The background purge's thread on Windows: made with `CreateThread`, asleep on an event.
//!
//! Windows runs a library's unload (`DLL_PROCESS_DETACH`, where the CRT calls a DLL's `atexit`
//! functions) under the loader lock, which a thread needs in order to exit: a library that
//! joined its thread there would wait forever. So in a DLL the thread holds a reference to the
//! library and drops it as it exits (`FreeLibraryAndExitThread`): the library cannot be
//! unloaded while the thread runs, and a program that wants to unload it turns the purge off
//! first (`set_background_purge(false)` stops and joins the thread). At process exit Windows
//! ends every other thread before it unloads anything, so the join there returns at once; in a
//! program (not a DLL) the CRT's `atexit` functions run before that, and stop the thread as on
//! Linux.

use crate::options::OptionValue;
use core::ffi::c_void;
use core::ptr::null_mut;
use core::sync::atomic::{AtomicUsize, Ordering};

type Handle = *mut c_void;

#[link(name = "kernel32")]
extern "system" {
    fn CreateThread(
        attributes: *mut c_void,
        stack: usize,
        start: extern "system" fn(*mut c_void) -> u32,
        parameter: *mut c_void,
        flags: u32,
        id: *mut u32,
    ) -> Handle;
    fn CreateEventW(
        attributes: *mut c_void,
        manual: i32,
        signaled: i32,
        name: *const u16,
    ) -> Handle;
    fn SetEvent(event: Handle) -> i32;
    fn ResetEvent(event: Handle) -> i32;
    fn WaitForSingleObject(object: Handle, ms: u32) -> u32;
    fn CloseHandle(object: Handle) -> i32;
    fn GetLastError() -> u32;
    fn GetModuleHandleW(name: *const u16) -> Handle;
    fn GetModuleHandleExW(flags: u32, name: *const u16, module: *mut Handle) -> i32;
    fn FreeLibrary(module: Handle) -> i32;
    fn FreeLibraryAndExitThread(module: Handle, code: u32) -> !;
}

const STACK_SIZE_PARAM_IS_A_RESERVATION: u32 = 0x0001_0000;
const GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT: u32 = 0x2;
const GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS: u32 = 0x4;
const WAIT_TIMEOUT: u32 = 0x102;
const INFINITE: u32 = u32::MAX;

/// The call that makes the thread, for the warning when it fails.
pub(super) const SPAWN: &str = "CreateThread";

/// The event the thread waits on between purges: signaled to stop it for good. Made with the
/// first thread and kept.
static STOP: AtomicUsize = AtomicUsize::new(0);
/// The DLL that holds this code, referenced for the running thread, which releases it as it
/// exits; 0 in a program.
static LIBRARY: AtomicUsize = AtomicUsize::new(0);

/// Nothing to prepare: Windows has no `fork`, so nothing runs `forget`.
pub(super) fn load(forget: fn()) {
    let _ = forget;
}

/// Creates the thread that runs `work` on a small stack, holding the DLL this code is in while
/// it runs; or the error Windows gave.
pub(super) fn spawn(work: fn()) -> Result<usize, i32> {
    let stop = stop_event()?;
    let library = hold_the_library()?;
    LIBRARY.store(library as usize, Ordering::Relaxed);
    // SAFETY: `stop` is a live event handle made by `stop_event`; `run` has the signature of a
    // thread's start routine and takes `work` back from its parameter; no attributes, no
    // thread id wanted.
    let thread = unsafe {
        ResetEvent(stop);
        CreateThread(
            null_mut(),
            256 << 10,
            run,
            work as *mut c_void,
            STACK_SIZE_PARAM_IS_A_RESERVATION,
            null_mut(),
        )
    };
    if thread.is_null() {
        let error = last_error();
        if !library.is_null() {
            // SAFETY: the reference `hold_the_library` took, which no thread will release.
            unsafe { FreeLibrary(library) };
        }
        return Err(error);
    }
    Ok(thread as usize)
}

/// The stop event, made the first time (manual reset: once signaled it stays so until the next
/// thread is made).
fn stop_event() -> Result<Handle, i32> {
    let made = STOP.load(Ordering::Acquire);
    if made != 0 {
        return Ok(made as Handle);
    }
    // SAFETY: an unnamed event with default security; only one caller gets here at a time (the
    // one that moved the phase to `Starting`).
    let event = unsafe { CreateEventW(null_mut(), 1, 0, core::ptr::null()) };
    if event.is_null() {
        return Err(last_error());
    }
    STOP.store(event as usize, Ordering::Release);
    Ok(event)
}

/// A reference to the DLL this code is in (null in a program), so that the library stays
/// loaded while the thread runs in it.
fn hold_the_library() -> Result<Handle, i32> {
    let here = run as extern "system" fn(*mut c_void) -> u32 as *const u16;
    let mut module = null_mut();
    // SAFETY: asks which module holds this function's code, without taking a reference;
    // `module` is a live local written by the call.
    let found = unsafe {
        GetModuleHandleExW(
            GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
            here,
            &mut module,
        )
    };
    // SAFETY: the program's own module; no reference taken.
    if found == 0 || module == unsafe { GetModuleHandleW(core::ptr::null()) } {
        return Ok(null_mut());
    }
    // SAFETY: as above, now taking a reference, which the thread releases as it exits.
    if unsafe { GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS, here, &mut module) } == 0
    {
        return Err(last_error());
    }
    Ok(module)
}

/// The thread's start: runs the `fn()` that `spawn` passed as its parameter, then leaves.
extern "system" fn run(work: *mut c_void) -> u32 {
    // SAFETY: `spawn` passes a `fn()` cast to a pointer, which has its size and comes back
    // unchanged.
    let work: fn() = unsafe { core::mem::transmute::<*mut c_void, fn()>(work) };
    work();
    let library = LIBRARY.load(Ordering::Relaxed) as Handle;
    if !library.is_null() {
        // SAFETY: the reference `spawn` took for this thread: the library may be unloaded
        // once it is released, which is why the release and the exit are one call that does
        // not return into its code.
        unsafe { FreeLibraryAndExitThread(library, 0) };
    }
    0
}

/// Runs one purge (no `fork` to wait for it).
pub(super) fn purging(purge: impl FnOnce()) {
    purge();
}

/// Sleeps `ms` milliseconds or until stopped; whether to go on. A failed wait stops the thread
/// rather than letting it spin.
pub(super) fn sleep(ms: OptionValue) -> bool {
    let stop = STOP.load(Ordering::Acquire) as Handle;
    let ms = u32::try_from(ms).unwrap_or(INFINITE - 1);
    // SAFETY: the event outlives the thread (it is never closed).
    unsafe { WaitForSingleObject(stop, ms) == WAIT_TIMEOUT }
}

/// Wakes the thread for good and joins it.
pub(super) fn halt(thread: usize) {
    let thread = thread as Handle;
    // SAFETY: the event is live (the thread was made after it); `thread` is the handle `spawn`
    // returned, which only the caller that moved the phase away from `Running` (or from
    // `Starting` after creating it) gets, joins and closes, once.
    unsafe {
        SetEvent(STOP.load(Ordering::Acquire) as Handle);
        WaitForSingleObject(thread, INFINITE);
        CloseHandle(thread);
    }
}

fn last_error() -> i32 {
    // SAFETY: no precondition.
    unsafe { GetLastError() as i32 }
}
