//! `alloc_zeroed` must return zeros even when mimalloc hands back memory that was just dirtied
//! and freed (its free lists reuse blocks immediately, and a page may be reused for a new size).

use mimalloc::MiMalloc;
use mimalloc_tests::{first_nonzero, Pattern};
use std::alloc::{GlobalAlloc, Layout};

/// Enough blocks of `size` to fill several of mimalloc's pages: a page hands out its fresh
/// blocks before the ones freed into it, so reuse only starts once pages are full.
fn count_for(size: usize) -> usize {
    ((4 << 20) / size).clamp(8, 50_000)
}

fn dirty_then_zeroed(size: usize, align: usize) {
    dirty_then_zeroed_blocks(size, align, count_for(size));
}

fn dirty_then_zeroed_blocks(size: usize, align: usize, count: usize) {
    let layout = Layout::from_size_align(size, align).unwrap();
    let mut blocks = Vec::with_capacity(count);
    for i in 0..count {
        // SAFETY: non-zero size; each block is filled within its size and freed once below.
        unsafe {
            let p = MiMalloc.alloc(layout);
            assert!(!p.is_null());
            Pattern::new(0xA5 ^ i as u8).fill(p, size);
            blocks.push(p as usize);
        }
    }
    for &p in &blocks {
        // SAFETY: each block is live and freed exactly once.
        unsafe { MiMalloc.dealloc(p as *mut u8, layout) };
    }
    let blocks: std::collections::HashSet<usize> = blocks.into_iter().collect();
    let mut reused = 0;
    let mut zeroed = Vec::with_capacity(count);
    for _ in 0..count {
        // SAFETY: non-zero size; freed below.
        let p = unsafe { MiMalloc.alloc_zeroed(layout) };
        assert!(!p.is_null());
        assert_eq!(p as usize % align, 0);
        if blocks.contains(&(p as usize)) {
            reused += 1;
        }
        // SAFETY: `p` is a live block of `size` bytes.
        if let Some(off) = unsafe { first_nonzero(p, size) } {
            panic!("alloc_zeroed({size}, align {align}) byte {off} is not zero");
        }
        zeroed.push(p);
    }
    for p in zeroed {
        // SAFETY: each block is live and freed once.
        unsafe { MiMalloc.dealloc(p, layout) };
    }
    // The point of the test is reused memory: make sure the small sizes really reused blocks
    // (large ones may legitimately get fresh, already-zero pages from the OS). An alignment of
    // 64 KiB or more takes a block padded past 64 KiB, which this build's page layout gives a
    // page of its own (blocks of 64-512 KiB: `MI_ENABLE_LARGE_PAGES=0` in the build plan):
    // freed, the page goes back to the arena, and the next such block need not land where it
    // was (a `secure` build reused none of 69 in one CI run).
    if size <= 64 * 1024 && align < 64 * 1024 {
        assert!(
            reused > 0,
            "size {size} align {align}: no block was reused, the test proved nothing"
        );
    }
}

#[test]
fn small_plain() {
    for size in [1, 7, 8, 16, 24, 100, 512, 1000, 4096, 10_000, 65_536] {
        dirty_then_zeroed(size, 8.min(size.next_power_of_two()));
    }
}

/// Every size around `MiMalloc`'s inline zeroing (two overlapping stores up to 64 bytes, then
/// `memset`), at alignment 1 so that no size is rounded up. Writing past the size is caught
/// too, by the padding checks of the `secure` and `debug` builds in the feature matrix.
#[test]
fn every_size_up_to_80() {
    for size in 1..=80 {
        // A few pages' worth (64 KiB pages): enough for reuse, quick for 80 sizes.
        dirty_then_zeroed_blocks(size, 1, 4096);
    }
}

#[test]
fn small_over_aligned() {
    for (size, align) in [
        (8, 64),
        (100, 128),
        (1000, 4096),
        (24, 32),
        (4096, 8192),
        (60_000, 65_536),
    ] {
        dirty_then_zeroed(size, align);
    }
}

#[test]
fn large_plain_and_over_aligned() {
    for (size, align) in [
        (1 << 20, 16),
        ((1 << 20) + 1, 8),
        (8 << 20, 4096),
        (3 << 20, 1 << 21),
    ] {
        dirty_then_zeroed(size, align);
    }
}

/// Zeroed memory also comes from `realloc` of a zeroed block: the bytes past the old size are
/// not promised by `GlobalAlloc::realloc`, but the old ones must stay zero.
#[test]
fn zeroed_growth_keeps_the_zero_prefix() {
    for (size, align) in [(10, 8), (100, 16), (5000, 64), (1 << 20, 4096)] {
        let layout = Layout::from_size_align(size, align).unwrap();
        // SAFETY: non-zero size; the block is grown once and freed with its new layout.
        unsafe {
            let p = MiMalloc.alloc_zeroed(layout);
            assert!(!p.is_null());
            let q = MiMalloc.realloc(p, layout, size * 3);
            assert!(!q.is_null());
            assert_eq!(q as usize % align, 0);
            assert_eq!(first_nonzero(q, size), None, "size {size} align {align}");
            MiMalloc.dealloc(q, Layout::from_size_align(size * 3, align).unwrap());
        }
    }
}

/// A `Heap`'s zeroed blocks are zero too, through each of its entries (small, any size, aligned),
/// after the heap's own blocks of that layout were dirtied and freed.
#[test]
fn a_heaps_zeroed_blocks_are_zero() {
    let heap = mimalloc::Heap::new();
    for size in [8, 100, 1000, 4096, 10_000, 65_536, 3 << 20] {
        for align in [8, 64, 4096] {
            let layout = Layout::from_size_align(size, align).unwrap();
            let count = count_for(size).min(512);
            let dirty: Vec<_> = (0..count)
                .map(|i| {
                    let p = heap.allocate(layout).expect("memory").cast::<u8>();
                    // SAFETY: a live block of `size` bytes.
                    unsafe { Pattern::new(i as u8 | 1).fill(p.as_ptr(), size) };
                    p
                })
                .collect();
            for p in dirty {
                // SAFETY: each block is live, from `heap` with `layout`, and freed once.
                unsafe { heap.deallocate(p, layout) };
            }
            let zeroed: Vec<_> = (0..count)
                .map(|_| {
                    heap.allocate_zeroed(layout)
                        .expect("zeroed memory")
                        .cast::<u8>()
                })
                .collect();
            for p in zeroed {
                // SAFETY: a live block of `size` bytes, freed once.
                unsafe {
                    let nonzero = first_nonzero(p.as_ptr(), size);
                    assert_eq!(nonzero, None, "size {size} align {align}: a non-zero byte");
                    heap.deallocate(p, layout);
                }
            }
        }
    }
}
