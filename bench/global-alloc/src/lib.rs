//! The operations the micro-benchmarks time, written once for any `GlobalAlloc`, so that every
//! allocator runs exactly the same code (`benches/global_alloc.rs` instantiates them per
//! allocator with one macro).

use std::alloc::{GlobalAlloc, Layout};
use std::hint::black_box;

/// Allocates and frees one block of `layout`.
#[inline(always)]
pub fn alloc_free<A: GlobalAlloc>(allocator: &A, layout: Layout) {
    // SAFETY: every layout the benchmarks use has a non-zero size; the block is checked for
    // null and freed once, with the layout it was allocated with.
    unsafe {
        let p = allocator.alloc(layout);
        assert!(!p.is_null());
        allocator.dealloc(black_box(p), layout);
    }
}

/// Allocates a zeroed block of `layout`, reads a byte of it, and frees it.
#[inline(always)]
pub fn alloc_zeroed_free<A: GlobalAlloc>(allocator: &A, layout: Layout) -> u8 {
    // SAFETY: as in `alloc_free`; the block is `layout.size()` > 0 bytes, so its last byte
    // is in bounds and initialised (zeroed).
    unsafe {
        let p = allocator.alloc_zeroed(layout);
        assert!(!p.is_null());
        let last = p.add(layout.size() - 1).read();
        allocator.dealloc(black_box(p), layout);
        last
    }
}

/// Grows a block from 16 bytes to `max` by doubling with `realloc`, as `Vec` does, writing
/// its last byte at each size, then frees it.
#[inline(always)]
pub fn realloc_growth<A: GlobalAlloc>(allocator: &A, max: usize) {
    let mut layout = Layout::from_size_align(16, 8).expect("a valid layout");
    // SAFETY: the block is live from `alloc` to `dealloc`; each `realloc` gets the block's
    // current layout and a non-zero new size, and the returned pointer replaces the old one
    // (which `realloc` freed). Writes stay below the block's current size.
    unsafe {
        let mut p = allocator.alloc(layout);
        assert!(!p.is_null());
        while layout.size() < max {
            let new_size = layout.size() * 2;
            p = allocator.realloc(p, layout, new_size);
            assert!(!p.is_null());
            layout = Layout::from_size_align(new_size, 8).expect("a valid layout");
            p.add(new_size - 1).write(1);
        }
        allocator.dealloc(black_box(p), layout);
    }
}

#[cfg(test)]
mod tests {
    use super::{alloc_free, alloc_zeroed_free, realloc_growth};
    use std::alloc::{Layout, System};

    #[test]
    fn the_operations_work_on_mimalloc_and_system() {
        let layouts = [(8, 8), (32, 8), (4096, 4096), (100, 64)];
        for (size, align) in layouts {
            let layout = Layout::from_size_align(size, align).unwrap();
            alloc_free(&mimalloc::MiMalloc, layout);
            alloc_free(&System, layout);
            assert_eq!(alloc_zeroed_free(&mimalloc::MiMalloc, layout), 0);
            assert_eq!(alloc_zeroed_free(&System, layout), 0);
        }
        realloc_growth(&mimalloc::MiMalloc, 1 << 20);
        realloc_growth(&System, 1 << 20);
    }
}
