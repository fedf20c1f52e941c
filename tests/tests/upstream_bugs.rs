//! Canaries for bugs of the vendored mimalloc, found while testing this workspace. Each test
//! asserts the buggy behaviour, so that it *fails* when an update of `vendor/` fixes the bug:
//! then remove the canary and the workaround or documentation it stands for.

use core::alloc::Layout;
use mimalloc::{Heap, MiMalloc};
use mimalloc_tests::{is_child, run_child};
use std::alloc::GlobalAlloc;

/// mimalloc 3.3.2 crashes freeing a block of a deleted heap when the block's page came straight
/// from the OS rather than from an arena (null `theap->tld` in `_mi_page_free`, reached from
/// `_mi_arenas_collect`). That only happens with arenas disabled. Documented on `Heap::delete`.
/// (mimalloc 2 debug builds abort here for the reason of the canary below.)
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
    if cfg!(feature = "v2") {
        assert!(
            out.status.success() && freed,
            "mimalloc 2 frees them: {out:?}"
        );
    } else {
        assert!(
            !out.status.success() && !freed,
            "mimalloc 3 no longer crashes here: the bug is fixed, update Heap::delete's docs and remove this canary"
        );
    }
}

/// mimalloc 2.3.2 debug builds: `mi_heap_delete` moves full pages to the default heap without
/// moving their share of `pages_full_size`, so freeing a block from one of them fails the
/// assertion `size <= heap->pages_full_size`. Release builds never read the counter; only the
/// `v2` + `debug` combination aborts. Documented on `Heap::delete`.
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
         skip in heap.rs and the note on Heap::delete: {out:?}"
    );
}
