//! Every allocator of the crate keeps every layout's alignment when every block is guarded and
//! placed exactly before its guard page (`MIMALLOC_UNSAFE_GUARDED_PRECISE=1`, or
//! `MIMALLOC_GUARDED_PRECISE=1` for mimalloc 2), where mimalloc puts a block at
//! `guard_page - size`: aligned only to the largest power of two dividing the size.
//! The routing core rounds plain requests up to their alignment in `guarded` builds; before it
//! did, `Layout(100, 8)` came back 4-aligned.

use allocator_api2::alloc::Allocator;
use mimalloc::{Heap, MiMalloc};
use mimalloc_tests::{assert_aligned_and_usable, is_child, run_child_with_timeout};
use std::alloc::{GlobalAlloc, Layout};
use std::ptr::NonNull;
use std::time::Duration;

const PAGE: usize = 4096;
const TEST: &str = "child_thread_guarded_precise_blocks_keep_their_alignment";

/// Sizes of every kind: each small size (most not a multiple of the alignments below), then
/// around the small/medium boundary, pages and beyond.
fn sizes() -> Vec<usize> {
    let mut sizes: Vec<usize> = (1..=130).collect();
    sizes.extend([
        200, 250, 255, 256, 1000, 1023, 1024, 1025, 4000, 4097, 10_000, 70_001,
    ]);
    sizes
}

const ALIGNS: [usize; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 4096];

/// What one pass found: layouts checked, and plain blocks that ended exactly at a page boundary
/// (the signature of a precisely placed guarded block).
#[derive(Default)]
struct Tally {
    checked: usize,
    at_guard_page: usize,
}

impl Tally {
    /// Checks a block: aligned, usable for `size` bytes, writable to its last byte.
    fn check(&mut self, what: &str, p: *mut u8, size: usize, align: usize) {
        let context = format!("{what}: size {size} align {align}");
        assert!(!p.is_null(), "{context}: null");
        // SAFETY: every caller passes a block mimalloc just served (not null: checked above),
        // of at least `size` usable bytes (checked before the write).
        unsafe {
            assert_aligned_and_usable(p, size, align, &context);
            p.write_bytes(0x5a, size);
        }
        let rounded = (size + align - 1) / align * align;
        if align <= 16 && (p as usize + rounded) % PAGE == 0 {
            self.at_guard_page += 1;
        }
        self.checked += 1;
    }
}

/// `GlobalAlloc`: alloc, alloc_zeroed, realloc up and down.
fn global(tally: &mut Tally, layout: Layout) {
    let (size, align) = (layout.size(), layout.align());
    // SAFETY: non-zero sizes; every block is freed once with the layout it has.
    unsafe {
        let p = MiMalloc.alloc(layout);
        tally.check("GlobalAlloc::alloc", p, size, align);
        let grown = size + 37;
        let p = MiMalloc.realloc(p, layout, grown);
        tally.check("GlobalAlloc::realloc (grow)", p, grown, align);
        let shrunk = size / 2 + 1;
        let p = MiMalloc.realloc(p, Layout::from_size_align(grown, align).unwrap(), shrunk);
        tally.check("GlobalAlloc::realloc (shrink)", p, shrunk, align);
        MiMalloc.dealloc(p, Layout::from_size_align(shrunk, align).unwrap());
        let p = MiMalloc.alloc_zeroed(layout);
        tally.check("GlobalAlloc::alloc_zeroed", p, size, align);
        MiMalloc.dealloc(p, layout);
    }
}

/// `Heap`'s own methods.
fn heap_methods(tally: &mut Tally, heap: &Heap, layout: Layout) {
    let (size, align) = (layout.size(), layout.align());
    let p = heap.allocate(layout).unwrap();
    tally.check("Heap::allocate", p.as_ptr(), size, align);
    // SAFETY: `p` is live, allocated with `layout`; each block is freed once.
    unsafe {
        let q = heap.reallocate(p, layout, size * 3).unwrap();
        tally.check("Heap::reallocate", q.as_ptr(), size * 3, align);
        heap.deallocate(q, Layout::from_size_align(size * 3, align).unwrap());
    }
    let p = heap.allocate_zeroed(layout).unwrap();
    tally.check("Heap::allocate_zeroed", p.as_ptr(), size, align);
    // SAFETY: as above.
    unsafe { heap.deallocate(p, layout) };
}

/// An `Allocator` (allocator-api2): allocate, allocate_zeroed, grow, shrink.
fn allocator(tally: &mut Tally, what: &str, a: impl Allocator, layout: Layout) {
    let (size, align) = (layout.size(), layout.align());
    let p = a.allocate(layout).unwrap().cast::<u8>();
    tally.check(what, p.as_ptr(), size, align);
    let bigger = Layout::from_size_align(size * 2 + 5, align).unwrap();
    let smaller = Layout::from_size_align(size / 3 + 1, align).unwrap();
    // SAFETY: each block is live with the layout passed, and freed once.
    unsafe {
        let q: NonNull<u8> = a.grow(p, layout, bigger).unwrap().cast();
        tally.check(what, q.as_ptr(), bigger.size(), align);
        let r: NonNull<u8> = a.shrink(q, bigger, smaller).unwrap().cast();
        tally.check(what, r.as_ptr(), smaller.size(), align);
        a.deallocate(r, smaller);
    }
    let p = a.allocate_zeroed(layout).unwrap().cast::<u8>();
    tally.check(what, p.as_ptr(), size, align);
    // SAFETY: as above.
    unsafe { a.deallocate(p, layout) };
}

#[test]
#[cfg_attr(
    not(feature = "guarded"),
    ignore = "not a `guarded` build: no block is placed before a guard page"
)]
fn child_thread_guarded_precise_blocks_keep_their_alignment() {
    if is_child() {
        // A thread of its own, though the main thread guards the same blocks: the rate comes
        // from the environment, which every heap reads (a later `MiOption::set` would not
        // reach the main thread's default heap).
        let tally = std::thread::spawn(|| {
            let heap = Heap::new();
            let mut tally = Tally::default();
            for size in sizes() {
                for align in ALIGNS {
                    let layout = Layout::from_size_align(size, align).unwrap();
                    global(&mut tally, layout);
                    heap_methods(&mut tally, &heap, layout);
                    allocator(&mut tally, "Allocator for MiMalloc", MiMalloc, layout);
                    allocator(&mut tally, "Allocator for &Heap", &heap, layout);
                }
            }
            tally
        })
        .join()
        .unwrap();
        println!(
            "CHECKED {} AT_GUARD_PAGE {}",
            tally.checked, tally.at_guard_page
        );
        return;
    }
    let run = run_child_with_timeout(
        TEST,
        &mimalloc_tests::EVERY_BLOCK_GUARDED,
        Duration::from_secs(300),
    );
    println!("{TEST}: {:?}\n{}\n{}", run.status, run.stdout, run.stderr);
    assert!(
        run.succeeded(),
        "a block was misaligned or unusable (above)"
    );
    // libtest prints the test's name on the same line, before the child's own output.
    let report = run.stdout.split("CHECKED ").nth(1);
    let counts: Vec<usize> = report
        .and_then(|rest| rest.lines().next())
        .expect("the child reports its counts")
        .split(" AT_GUARD_PAGE ")
        .map(|n| n.parse().unwrap())
        .collect();
    // Plain-path blocks are a little over half of all checked; most of them must have been
    // guarded, or the test did not test guarded blocks at all.
    assert!(
        counts[1] * 4 > counts[0],
        "only {} of {} blocks were placed before a guard page: the sampling did not happen",
        counts[1],
        counts[0]
    );
}
