//! Canaries for bugs of the vendored mimalloc, found while testing this workspace. Each test
//! asserts the buggy behaviour, so that it *fails* when an update of `vendor/` fixes the bug:
//! then remove the canary and the workaround or documentation it stands for.

use core::alloc::Layout;
#[cfg(feature = "v2")]
use mimalloc::{Arena, Sharing};
use mimalloc::{Heap, MiMalloc};
use mimalloc_tests::{is_child, run_child};
use std::alloc::GlobalAlloc;

/// mimalloc 3.3.2 crashes freeing a block of a deleted heap when the block's page came straight
/// from the OS rather than from an arena (null `theap->tld` in `_mi_page_free`, reached from
/// `_mi_arenas_collect`). That only happens with arenas disabled. Documented on `Heap::delete`.
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

/// mimalloc 2.3.2: the memory of an exclusive arena is not reused by a heap created after the
/// heap that filled it was destroyed (mimalloc 3 reuses it; `arena.rs` tests that).
#[cfg(feature = "v2")]
#[test]
fn v2_exclusive_arena_memory_is_not_reused_after_destroy() {
    let arena = Arena::reserve(64 << 20, Sharing::Exclusive).unwrap();
    let chunk = Layout::from_size_align(4 << 20, 8).unwrap();
    let count = |heap: &Heap| {
        (0..100)
            .take_while(|_| heap.allocate(chunk).is_ok())
            .count()
    };
    let first = Heap::try_new_in(&arena).unwrap();
    assert!(count(&first) > 8);
    drop(first);
    mimalloc::collect(true);
    let second = Heap::try_new_in(&arena).unwrap();
    assert_eq!(
        count(&second),
        0,
        "mimalloc 2 now reuses the arena: the bug is fixed, enable a_heap_dropped_gives_its_budget_to_the_next for v2"
    );
}
