//! `Tracking`'s thread state on Windows targets whose std has no native thread-locals
//! (`*-windows-gnu`), which keeps it behind a Win32 TLS index and an FLS index of its own
//! (`tracking/thread_windows.rs`): it lives in the TLS slot it allocated and in no other
//! slot, and a process that has no TLS index left for it costs it one FLS index, not one per
//! call. Each check runs in a child process whose global allocator is plain `MiMalloc`, so
//! that the tracking allocator makes its first call, and takes its indexes, in the check.

use mimalloc::MiMalloc;
use mimalloc_tests::{is_child, run_child_with_timeout};
use std::time::Duration;

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

#[cfg(all(windows, target_env = "gnu"))]
mod win32 {
    use core::ffi::c_void;
    use mimalloc::{tracking, MiMalloc, Tracking};
    use std::alloc::{GlobalAlloc, Layout};

    /// Counted by the checks, and only there.
    static TRACKED: Tracking<MiMalloc> = Tracking::new(MiMalloc);

    pub const OUT_OF_INDEXES: u32 = u32::MAX;

    #[link(name = "kernel32")]
    extern "system" {
        pub fn TlsAlloc() -> u32;
        pub fn TlsFree(index: u32) -> i32;
        pub fn TlsGetValue(index: u32) -> *mut c_void;
        pub fn TlsSetValue(index: u32, value: *mut c_void) -> i32;
        pub fn FlsAlloc(callback: Option<unsafe extern "system" fn(*mut c_void)>) -> u32;
        pub fn FlsFree(index: u32) -> i32;
    }

    /// Allocates indexes with `alloc` until Windows has none left.
    pub fn all(alloc: impl Fn() -> u32) -> Vec<u32> {
        std::iter::from_fn(|| Some(alloc()).filter(|&i| i != OUT_OF_INDEXES)).collect()
    }

    /// Allocates and frees a block through the tracking allocator, and says what the thread's
    /// figures saw of it while it was live.
    pub fn tracked_pair() -> isize {
        let layout = Layout::from_size_align(100, 8).unwrap();
        let before = tracking::thread_stats().live_bytes;
        // SAFETY: a fresh block of `layout`, freed once, with it.
        unsafe {
            let p = TRACKED.alloc(layout);
            assert!(!p.is_null());
            let seen = tracking::thread_stats().live_bytes - before;
            TRACKED.dealloc(p, layout);
            seen
        }
    }

    /// The process-wide live bytes.
    pub fn live() -> usize {
        tracking::stats().live_bytes
    }

    /// The child of `child_the_thread_state_keeps_to_its_own_tls_slot`.
    pub fn own_slot() {
        // SAFETY: the indexes are this test's own, allocated and freed here; their values
        // are only read.
        unsafe {
            let mine = [TlsAlloc(), TlsAlloc()];
            assert!(!mine.contains(&OUT_OF_INDEXES));
            assert_eq!(tracked_pair(), 100, "the state was not found again");
            for index in mine {
                assert!(TlsGetValue(index).is_null(), "slot {index} was written");
                TlsFree(index);
            }
        }
    }

    /// The child of `child_out_of_tls_indexes_the_state_takes_one_fls_index`.
    pub fn one_fls_index() {
        // SAFETY: the indexes are this test's own, allocated and freed here, with no values.
        unsafe {
            let fls = all(|| FlsAlloc(None));
            let capacity = fls.len();
            for index in fls {
                FlsFree(index);
            }
            let tls = all(|| TlsAlloc());
            let before = live();
            for _ in 0..10 {
                assert_eq!(tracked_pair(), 0, "no thread state: nothing to see");
            }
            assert_eq!(live(), before);
            let left = all(|| FlsAlloc(None));
            let taken = capacity - left.len();
            for index in left {
                FlsFree(index);
            }
            for index in tls {
                TlsFree(index);
            }
            assert_eq!(taken, 1, "FLS indexes the tracking allocator took");
        }
    }
}

/// Runs `test` in a child; a child that hangs (a state that takes a new index on every call
/// can spin once Windows has none left) fails the test after a minute.
fn in_child(test: &str) {
    let run = run_child_with_timeout(test, &[], Duration::from_secs(60));
    assert!(
        run.succeeded(),
        "status {:?} (None: killed at the deadline)\n{}{}",
        run.status,
        run.stdout,
        run.stderr
    );
}

/// Two TLS slots allocated just before the tracking allocator's first call (Windows hands out
/// the lowest free index, so its own comes right after them) stay empty: the state is in the
/// slot the tracking allocator allocated, where it is found again.
#[test]
#[cfg_attr(
    not(all(windows, target_env = "gnu")),
    ignore = "the Win32 thread storage is for Windows GNU targets only"
)]
fn child_the_thread_state_keeps_to_its_own_tls_slot() {
    const TEST: &str = "child_the_thread_state_keeps_to_its_own_tls_slot";
    if is_child() {
        #[cfg(all(windows, target_env = "gnu"))]
        win32::own_slot();
    } else {
        in_child(TEST);
    }
}

/// With every TLS index taken before its first call, the tracking allocator settles each call
/// on its own (its figures stay exact) and takes one FLS index for good, not one per call.
#[test]
#[cfg_attr(
    not(all(windows, target_env = "gnu")),
    ignore = "the Win32 thread storage is for Windows GNU targets only"
)]
fn child_out_of_tls_indexes_the_state_takes_one_fls_index() {
    const TEST: &str = "child_out_of_tls_indexes_the_state_takes_one_fls_index";
    if is_child() {
        #[cfg(all(windows, target_env = "gnu"))]
        win32::one_fls_index();
    } else {
        in_child(TEST);
    }
}
