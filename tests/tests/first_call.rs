//! The API works as the very first mimalloc call of a process. This binary does not install
//! mimalloc as the global allocator, and each test runs its body in a child process of its own,
//! so nothing has touched mimalloc before.

use core::alloc::Layout;
use mimalloc::{Arena, Heap, MiMalloc, Sharing};
use mimalloc_tests::{is_child, run_child, Pattern};
use std::alloc::GlobalAlloc;

/// Runs `body` as the first mimalloc call of a child process; it must print `OK`.
fn first_call(test: &str, body: fn() -> bool) {
    if is_child() {
        if body() {
            println!("OK");
        }
        return;
    }
    let out = run_child(test, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("OK"),
        "{test}: {out:?}"
    );
}

/// Raw `mi_reserve_os_memory_ex` as a thread's first mimalloc call crashes mimalloc 2.5.2 (and
/// 2.3.2) on 64-bit Linux: `Arena::reserve` initialises the thread first (the canary
/// `child_v2_reserving_an_arena_as_the_first_call_crashes` in upstream_bugs.rs).
#[test]
fn child_reserve_an_arena() {
    first_call("child_reserve_an_arena", || {
        Arena::reserve(64 << 20, Sharing::Exclusive)
            .unwrap()
            .area()
            .1
            >= 64 << 20
    });
}

#[test]
fn child_create_a_heap() {
    first_call("child_create_a_heap", || {
        let heap = Heap::new();
        let p = heap.allocate(Layout::new::<[u8; 100]>()).unwrap();
        heap.contains(p.as_ptr())
    });
}

/// Statistics read before anything was allocated are mimalloc's real figures, not a zeroed
/// struct or garbage: consistent at once, and moved by the first allocation. What they say at
/// start-up depends on when mimalloc starts: 3.6.0 has reserved and committed its start-up
/// memory (2.25 MiB on x86_64 Linux), 2.5.2 its first pages (12 KiB) on Linux, while 2.5.2 on
/// Windows starts with the first allocation and reads all zeros before it. After an 8 MiB block
/// is allocated and touched, every build has reserved and committed it, with OS calls. (No
/// thread count: mimalloc 2 leaves out the main thread, on which libtest 1.63 runs a lone test.)
#[test]
fn child_read_statistics() {
    first_call("child_read_statistics", || {
        let first = mimalloc::stats::read();
        assert!(
            first.reserved.current >= first.committed.current,
            "more committed than reserved: {first:?}"
        );
        assert!(mimalloc::process::info().peak_rss > 0);
        let layout = Layout::from_size_align(8 << 20, 8).unwrap();
        // SAFETY: a non-zero size; the block is touched within its size and freed once.
        let later = unsafe {
            let p = MiMalloc.alloc(layout);
            assert!(!p.is_null());
            p.write_bytes(1, layout.size());
            let later = mimalloc::stats::read();
            MiMalloc.dealloc(p, layout);
            later
        };
        assert!(
            later.committed.current >= first.committed.current + (8 << 20),
            "an 8 MiB block did not show in the committed figure: {first:?} then {later:?}"
        );
        assert!(
            later.reserved.current >= later.committed.current,
            "more committed than reserved: {later:?}"
        );
        assert!(later.mmap_calls > 0, "no OS call counted: {later:?}");
        true
    });
}

#[test]
fn child_set_an_option() {
    first_call("child_set_an_option", || {
        mimalloc::options::MiOption::PurgeDelay.set(0);
        mimalloc::options::MiOption::PurgeDelay.get() == 0
    });
}

/// A thread whose very first mimalloc call is a `realloc`, necessarily of a block from another
/// thread: mimalloc 3 (3.3.x on Windows and macOS, upstream #1304) took the in-place path of a
/// shrink that still fits with the thread's heap not made yet and dereferenced it; 3.5.0 debug
/// builds failed an assertion there (#1371). Each case runs on a fresh thread (std's own
/// allocations are the system allocator's in this binary), after the block was allocated and
/// filled on this one; the contents must survive.
#[test]
fn child_realloc_is_a_new_threads_first_call() {
    first_call("child_realloc_is_a_new_threads_first_call", || {
        // (size, align, new size): shrinks that stay in place (within half the block), and a
        // growth that moves; plain and aligned (`mi_realloc_aligned`).
        let cases = [
            (64, 8, 40),
            (256, 64, 200),
            (64, 8, 100_000),
            (4096, 4096, 8192),
        ];
        cases.iter().all(|&(size, align, new_size)| {
            let layout = Layout::from_size_align(size, align).unwrap();
            // SAFETY: non-zero size; the block is filled within its size, then handed to the
            // thread below, which alone uses and frees it.
            let addr = unsafe {
                let p = MiMalloc.alloc(layout);
                assert!(!p.is_null());
                Pattern::new(size as u8).fill(p, size);
                p as usize
            };
            std::thread::spawn(move || {
                let p = addr as *mut u8;
                // SAFETY: `p` is a live block of `layout`, resized once and freed with its new
                // layout; only the bytes both sizes share are read.
                unsafe {
                    let q = MiMalloc.realloc(p, layout, new_size);
                    assert!(!q.is_null(), "realloc to {new_size} failed");
                    assert_eq!(q as usize % align, 0, "realloc lost the alignment");
                    Pattern::new(size as u8).assert_at(q, size.min(new_size), "realloc");
                    MiMalloc.dealloc(q, Layout::from_size_align(new_size, align).unwrap());
                }
            })
            .join()
            .is_ok()
        })
    });
}
