//! The multithreaded stress through `Heap`s: every thread allocates in one shared heap, blocks
//! are freed on other threads and after their threads exited, and the heap is then destroyed
//! with whatever the stress left in it. mimalloc 3 only: a mimalloc 2 heap allocates on its own
//! thread alone (`Heap` is not `Sync` there), which the stress's thread swaps cannot respect.
#![cfg(not(feature = "v2"))]

use core::alloc::Layout;
use core::ptr::NonNull;
use mimalloc::Heap;
use mimalloc_tests::stress::{self, Config};
use std::alloc::GlobalAlloc;

/// A heap seen through `GlobalAlloc`, the interface the stress drives.
struct InHeap<'h>(&'h Heap);

// SAFETY: every method forwards to the heap, whose blocks are valid for their layout until
// freed; `dealloc` and `realloc` receive only blocks this adapter returned.
unsafe impl GlobalAlloc for InHeap<'_> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.0
            .allocate(layout)
            .map_or(core::ptr::null_mut(), NonNull::as_ptr)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` is a live block of this heap (the trait's contract).
        unsafe { self.0.deallocate(NonNull::new_unchecked(ptr), layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`; on failure the block is left as it was.
        unsafe {
            self.0
                .reallocate(NonNull::new_unchecked(ptr), layout, new_size)
        }
        .map_or(core::ptr::null_mut(), NonNull::as_ptr)
    }
}

#[test]
fn stress_threads_through_one_shared_heap() {
    let config = Config::from_env().unwrap();
    let heap = Heap::new();
    let report = stress::run(&InHeap(&heap), &config);
    stress::report_and_check("heap", &config, &report);
    // A block of the heap is recognised as one, so the stress really ran in it.
    let probe = InHeap(&heap);
    let layout = Layout::new::<[u64; 4]>();
    // SAFETY: allocated and freed through the same heap.
    unsafe {
        let p = probe.alloc(layout);
        assert!(heap.contains(p));
        probe.dealloc(p, layout);
    }
    drop(heap);
}
