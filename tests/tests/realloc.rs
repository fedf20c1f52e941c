//! `realloc` keeps the common prefix byte for byte, growing and shrinking, in place and
//! moving, for plain and over-aligned layouts; a failed `realloc` leaves the block intact.

use mimalloc::MiMalloc;
use mimalloc_tests::Pattern;
use std::alloc::{GlobalAlloc, Layout};

#[derive(Default)]
struct Moves {
    in_place: usize,
    moved: usize,
}

/// Walks one block through `sizes`, checking the prefix and the alignment at every step.
fn walk(align: usize, sizes: &[usize], seed: u8, moves: &mut Moves) {
    let mut layout = Layout::from_size_align(sizes[0], align).unwrap();
    let pattern = Pattern::new(seed);
    // SAFETY: non-zero sizes; the block is only used through the latest pointer, at most
    // `layout.size()` bytes, and freed once with its current layout.
    unsafe {
        let mut p = MiMalloc.alloc(layout);
        assert!(!p.is_null());
        pattern.fill(p, layout.size());
        for &new_size in &sizes[1..] {
            let q = MiMalloc.realloc(p, layout, new_size);
            assert!(
                !q.is_null(),
                "realloc {} -> {new_size} (align {align})",
                layout.size()
            );
            assert_eq!(
                q as usize % align,
                0,
                "realloc {} -> {new_size} lost alignment {align}",
                layout.size()
            );
            if q == p {
                moves.in_place += 1;
            } else {
                moves.moved += 1;
            }
            let kept = layout.size().min(new_size);
            pattern.assert_at(
                q,
                kept,
                &format!("realloc {} -> {new_size} (align {align})", layout.size()),
            );
            // Refill the whole new block so that the next step checks all of it.
            pattern.fill(q, new_size);
            p = q;
            layout = Layout::from_size_align(new_size, align).unwrap();
        }
        MiMalloc.dealloc(p, layout);
    }
}

#[test]
fn grow_and_shrink_keep_contents() {
    let steps: &[&[usize]] = &[
        &[
            1,
            2,
            3,
            8,
            15,
            16,
            17,
            100,
            64,
            1000,
            999,
            4096,
            4097,
            100_000,
            3,
            1 << 20,
            (1 << 20) + 7,
            10,
            8 << 20,
            64,
        ],
        &[200, 150, 120, 100, 90, 80, 200, 400, 800, 1600, 3200, 100],
        &[(4 << 20) + 1, 4 << 20, 3 << 20, 5 << 20, 1 << 10, 1 << 22],
    ];
    let mut moves = Moves::default();
    for (i, sizes) in steps.iter().enumerate() {
        for align in [1, 2, 8, 16, 32, 64, 256, 4096, 65_536, 1 << 20] {
            walk(
                align,
                sizes,
                (i * 16 + align.trailing_zeros() as usize) as u8,
                &mut moves,
            );
        }
    }
    // Both of mimalloc's paths were taken: growing within the usable size (or shrinking by
    // less than half) stays in place, the rest moves.
    assert!(
        moves.in_place > 20,
        "only {} in-place reallocs",
        moves.in_place
    );
    assert!(moves.moved > 20, "only {} moving reallocs", moves.moved);
}

/// In every build, `guarded` ones included: mimalloc 3.6.0 and 2.5.2 resize a guarded block
/// in place within its usable size too (`memory_tools.rs` has the guarded realloc itself). Many
/// blocks, so that the guarded lane's sampling (one 100-byte block in about 40 with mimalloc 3,
/// one in ten with mimalloc 2) guards some of them.
#[test]
fn growing_within_usable_size_stays_in_place() {
    let layout = Layout::from_size_align(100, 8).unwrap();
    for i in 0..200u8 {
        // SAFETY: non-zero size; used within its usable size and freed once with the layout of
        // its final size.
        unsafe {
            let p = MiMalloc.alloc(layout);
            assert!(!p.is_null());
            let usable = mimalloc::heap::usable_size(p);
            assert!(usable >= 100);
            Pattern::new(i).fill(p, 100);
            let q = MiMalloc.realloc(p, layout, usable);
            assert_eq!(
                q, p,
                "growing to the usable size ({usable}) moved the block"
            );
            Pattern::new(i).assert_at(q, 100, "block grown in place");
            q.write_bytes(0, usable);
            MiMalloc.dealloc(q, Layout::from_size_align(usable, 8).unwrap());
        }
    }
}

/// A realloc to the largest size a `Layout` allows: impossible on 64-bit targets, where it must
/// return null and leave the old block intact; possible on 32-bit ones (2 GiB of a 4 GiB
/// address space), where either outcome must keep the contents.
#[test]
fn failed_realloc_leaves_the_block_intact() {
    for align in [8, 64, 4096] {
        let layout = Layout::from_size_align(1000, align).unwrap();
        let pattern = Pattern::new(align as u8);
        let huge = isize::MAX as usize - 4096;
        // SAFETY: after a failed realloc the old block is still live and owned by us; after a
        // successful one only the new block is used, and freed with its layout.
        unsafe {
            let p = MiMalloc.alloc(layout);
            pattern.fill(p, 1000);
            let q = MiMalloc.realloc(p, layout, huge);
            if q.is_null() {
                pattern.assert_at(p, 1000, "block after a failed realloc");
                MiMalloc.dealloc(p, layout);
            } else {
                if cfg!(target_pointer_width = "64") {
                    panic!("a realloc to {huge} bytes succeeded on a 64-bit target");
                }
                pattern.assert_at(q, 1000, "block after a 2 GiB realloc");
                MiMalloc.dealloc(q, Layout::from_size_align(huge, align).unwrap());
            }
        }
    }
}

/// Small blocks with an alignment above their size sit in larger pages (mimalloc over-allocates
/// for them), so `dealloc` must not free them as small-page blocks; and shrinking one into a
/// layout that is freed that way (`Allocator::shrink` may lower the alignment) must move it.
/// With the wrong free (tried: `in_small_page` ignoring the alignment), the default build takes
/// a wrong page for the block and faults (SIGSEGV), in debug and release profiles alike.
#[test]
fn over_aligned_small_blocks_are_freed_from_their_own_page() {
    use allocator_api2::alloc::Allocator;
    let heap = mimalloc::Heap::new();
    let pattern = Pattern::new(7);
    let heap_ref: &dyn Allocator = &&heap;
    for allocator in [&MiMalloc as &dyn Allocator, heap_ref] {
        for align in [2 << 10, 16 << 10, 64 << 10, 1 << 20] {
            for (size, small) in [(8, 8), (100, 64), (1000, 600)] {
                let old = Layout::from_size_align(size, align).unwrap();
                let new = Layout::from_size_align(small, 8).unwrap();
                // SAFETY: live blocks of `old`, freed once with it, or shrunk to `new` and
                // freed once with that; only `new.size()` bytes of the result are read.
                unsafe {
                    let kept = allocator.allocate(old).unwrap().cast::<u8>();
                    let p = allocator.allocate(old).unwrap().cast::<u8>();
                    pattern.fill(p.as_ptr(), size);
                    let q = allocator.shrink(p, old, new).unwrap().cast::<u8>();
                    assert_eq!(q.as_ptr() as usize % 8, 0);
                    pattern.assert_at(q.as_ptr(), small, "the shrunk block");
                    allocator.deallocate(q, new);
                    allocator.deallocate(kept, old);
                }
            }
        }
    }
    // The allocator still serves and frees small blocks after the frees above.
    let blocks: Vec<Box<[u8; 64]>> = (0..10_000).map(|i| Box::new([i as u8; 64])).collect();
    assert!(blocks.iter().enumerate().all(|(i, b)| b[63] == i as u8));
}
