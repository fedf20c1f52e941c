//! Canaries for bugs of the vendored mimalloc, found while testing this workspace. Each canary
//! asserts the buggy behaviour, so that it *fails* when an update of `vendor/` fixes the bug:
//! then it becomes a regression test, and the workaround or documentation it stood for goes.

use core::alloc::Layout;
use mimalloc::{Heap, MiMalloc};
use mimalloc_tests::{is_child, run_child};
use std::alloc::GlobalAlloc;

/// mimalloc 3.3.2 crashed freeing a block of a deleted heap when the block's page came straight
/// from the OS rather than from an arena (null `theap->tld` in `_mi_page_free`, reached from
/// `_mi_arenas_collect`), which only happens with arenas disabled. 3.6.0 frees them, as
/// mimalloc 2 always did: a regression test now. (mimalloc 2 debug builds abort here for the
/// reason of the canary below.)
#[cfg(not(all(feature = "v2", feature = "debug")))]
#[test]
fn child_freeing_blocks_of_a_deleted_heap_without_arenas() {
    if is_child() {
        let heap = Heap::new();
        let layout = Layout::from_size_align(64, 8).unwrap();
        let blocks: Vec<_> = (0..1000).map(|_| heap.allocate(layout).unwrap()).collect();
        heap.delete();
        for p in blocks {
            // SAFETY: the blocks outlive their deleted heap and are freed once.
            unsafe { MiMalloc.dealloc(p.as_ptr(), layout) };
        }
        println!("FREED");
        return;
    }
    let out = run_child(
        "child_freeing_blocks_of_a_deleted_heap_without_arenas",
        &[("MIMALLOC_ARENA_RESERVE", "0")],
    );
    let freed = String::from_utf8_lossy(&out.stdout).contains("FREED");
    assert!(
        out.status.success() && freed,
        "the blocks were not freed: {out:?}"
    );
}

/// mimalloc 2.5.2 debug builds (as 2.3.2 before): `mi_heap_delete` moves full pages to the
/// default heap (`_mi_page_queue_append`) without moving their share of `pages_full_size`, so
/// freeing a block from one of them fails the assertion `size <= heap->pages_full_size`
/// (`mi_page_set_in_full`). Release builds never read the counter; only the `v2` + `debug`
/// combination aborts. Documented on `Heap::delete`; `delete_keeps_blocks_alive` in heap.rs is
/// ignored in these builds.
#[cfg(all(feature = "v2", feature = "debug"))]
#[test]
fn child_v2_debug_freeing_blocks_of_a_deleted_heap_from_full_pages() {
    const TEST: &str = "child_v2_debug_freeing_blocks_of_a_deleted_heap_from_full_pages";
    if is_child() {
        let heap = Heap::new();
        let layout = Layout::from_size_align(4000, 32).unwrap();
        // 100 blocks of 4000 bytes fill several 64 KiB pages.
        let blocks: Vec<_> = (0..100).map(|_| heap.allocate(layout).unwrap()).collect();
        heap.delete();
        for p in blocks {
            // SAFETY: the blocks outlive their deleted heap and are freed once.
            unsafe { MiMalloc.dealloc(p.as_ptr(), layout) };
        }
        println!("FREED");
        return;
    }
    let out = run_child(TEST, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("pages_full_size"),
        "mimalloc 2 debug builds no longer abort here: the bug is fixed, remove this canary, the \
         ignore on delete_keeps_blocks_alive in heap.rs and the note on Heap::delete: {out:?}"
    );
}

/// mimalloc 2.3.2 and 2.5.2 on 64-bit Linux: `mi_reserve_os_memory_ex` as the first mimalloc
/// call of a thread writes the random state of the thread's heap while that is still the
/// read-only empty heap, and crashes (under Wine, on i686, and in `debug` builds, the call
/// works). `Arena::reserve` initialises the thread first on every target
/// (`tests/tests/first_call.rs`).
#[cfg(all(
    feature = "v2",
    not(feature = "debug"),
    target_os = "linux",
    target_pointer_width = "64"
))]
#[test]
fn child_v2_reserving_an_arena_as_the_first_call_crashes() {
    const TEST: &str = "child_v2_reserving_an_arena_as_the_first_call_crashes";
    if is_child() {
        // A thread of its own, whose first mimalloc call this is: libtest 1.63 runs a lone test
        // on the main thread, which mimalloc's constructor has already initialised (this
        // binary's global allocator is the system's, so spawning calls no mimalloc).
        let err = std::thread::spawn(|| {
            let mut id = core::mem::MaybeUninit::uninit();
            // SAFETY: `id` is a valid place for the new arena's id.
            unsafe {
                mimalloc_sys::mi_reserve_os_memory_ex(64 << 20, false, false, true, id.as_mut_ptr())
            }
        })
        .join()
        .unwrap();
        println!("RESERVED {err}");
        return;
    }
    let out = run_child(TEST, &[]);
    assert!(
        !out.status.success() && !String::from_utf8_lossy(&out.stdout).contains("RESERVED"),
        "mimalloc 2 no longer crashes here: the bug is fixed, remove this canary and the \
         mi_thread_init in Arena::reserve: {out:?}"
    );
}

/// mimalloc 3.6.0 on 32-bit targets: a request beyond the bound in docs/known-issues.md faults
/// building its block's free list (`mi_page_free_list_extend`) where null should come back. The safe crate refuses them
/// (`route::beyond_largest`), so `MiMalloc` returns null; raw `mi_malloc` still crashes.
/// `secure` builds serve such a block (writable to its end, checked in a C program on i686), so
/// neither the refusal nor the canary applies to them. mimalloc-sys's build plan decides where
/// the bug is, and publishes it as `cfg(mimalloc_large_request_cap)`, which both follow.
#[cfg(mimalloc_large_request_cap)]
#[test]
fn child_32_bit_allocation_near_2_gib_crashes() {
    const TEST: &str = "child_32_bit_allocation_near_2_gib_crashes";
    let size = (1usize << 31) - (2 << 20);
    if is_child() {
        let layout = Layout::from_size_align(size, 1).unwrap();
        // SAFETY: a non-zero size; MiMalloc refuses it, so nothing is freed.
        assert!(unsafe { MiMalloc.alloc(layout) }.is_null());
        println!("REFUSED");
        // SAFETY: `mi_malloc` accepts any size; a block would be freed at once.
        let p = unsafe { mimalloc_sys::mi_malloc(size) };
        println!("RAW SURVIVED {}", p.is_null());
        return;
    }
    let out = run_child(TEST, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("REFUSED"), "MiMalloc served it: {out:?}");
    assert!(
        !out.status.success() && !stdout.contains("RAW SURVIVED"),
        "mi_malloc no longer crashes here: the bug is fixed, remove this canary and \
         route::beyond_largest: {out:?}"
    );
}
