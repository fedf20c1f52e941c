//! `mimalloc::Heap`: allocation, ownership, destroy versus delete, collections in a heap, the
//! `Allocator` contract, and the thread rules of each mimalloc version.

mimalloc::assign_global!();

use allocator_api2::alloc::{Allocator, Layout};
use mimalloc::{Heap, MiMalloc};
use mimalloc_tests::{first_nonzero, is_child, run_child, Pattern};
use std::collections::hash_map::RandomState;

const MIB: usize = 1 << 20;

#[test]
fn blocks_belong_to_their_heap() {
    let (a, b) = (Heap::new(), Heap::new());
    let mut blocks = Vec::new();
    for (i, size) in [1usize, 8, 100, 1000, 70_000, 3 * MIB].iter().enumerate() {
        for align in [1usize, 16, 64, 4096] {
            let layout = Layout::from_size_align(*size, align).unwrap();
            let p = a.allocate(layout).unwrap();
            assert_eq!(p.as_ptr() as usize % align, 0);
            assert!(a.contains(p.as_ptr()), "size {size} align {align}");
            assert!(!b.contains(p.as_ptr()));
            // SAFETY: a live block of `size` bytes.
            unsafe { Pattern::new(i as u8).fill(p.as_ptr(), *size) };
            blocks.push((p, layout, i as u8));
        }
    }
    for (p, layout, seed) in blocks {
        // SAFETY: each block is live, filled with its pattern, and freed once.
        unsafe {
            Pattern::new(seed).assert_at(p.as_ptr(), layout.size(), "heap block");
            a.deallocate(p, layout);
        }
    }
    let on_the_stack = 0u64;
    assert!(!a.contains(&on_the_stack));
}

#[test]
fn reallocate_moves_within_the_heap_and_keeps_contents() {
    let heap = Heap::new();
    let layout = Layout::from_size_align(100, 64).unwrap();
    let p = heap.allocate(layout).unwrap();
    // SAFETY: the block is used within its size, then only through the pointer realloc returns.
    unsafe {
        Pattern::new(3).fill(p.as_ptr(), 100);
        let q = heap.reallocate(p, layout, 5 * MIB).unwrap();
        assert_eq!(q.as_ptr() as usize % 64, 0);
        assert!(heap.contains(q.as_ptr()), "a moved block stays in its heap");
        Pattern::new(3).assert_at(q.as_ptr(), 100, "after growing");
        heap.deallocate(q, Layout::from_size_align(5 * MIB, 64).unwrap());
    }
}

#[test]
fn impossible_requests_fail_cleanly() {
    let heap = Heap::new();
    let huge = Layout::from_size_align(isize::MAX as usize - 4095, 4096).unwrap();
    if cfg!(target_pointer_width = "32") {
        // 2 GiB of a 4 GiB address space is possible, and may be served: then a second one,
        // with the first still live, is not (the two would leave less than the 8 KiB the
        // program's own code and stack take).
        match heap.allocate(huge) {
            Ok(first) => {
                assert_eq!(first.as_ptr() as usize % 4096, 0, "misaligned");
                // SAFETY: a live block of `huge.size()` bytes from mimalloc, freed once, below.
                unsafe {
                    assert!(mimalloc::heap::usable_size(first.as_ptr()) >= huge.size());
                    first.as_ptr().write(1);
                    first.as_ptr().add(huge.size() - 1).write(1);
                }
                assert_eq!(heap.allocate(huge), Err(mimalloc::AllocError));
                assert_eq!(heap.allocate_zeroed(huge), Err(mimalloc::AllocError));
                assert!(Allocator::allocate(&&heap, huge).is_err());
                // SAFETY: `first` is live, from this heap, with this layout.
                unsafe { heap.deallocate(first, huge) };
            }
            // Refused cleanly (no abort, no bogus block): what the test is for.
            Err(mimalloc::AllocError) => {
                println!("a 2 GiB block was refused in this process's address space")
            }
        }
        return;
    }
    assert_eq!(heap.allocate(huge), Err(mimalloc::AllocError));
    assert_eq!(heap.allocate_zeroed(huge), Err(mimalloc::AllocError));
    assert!(Allocator::allocate(&&heap, huge).is_err());
}

/// Not in `v2` + `debug` builds, where mimalloc 2.5.2 (as 2.3.2 before it) aborts on the
/// assertion `size <= heap->pages_full_size`: the canary
/// `child_v2_debug_freeing_blocks_of_a_deleted_heap_from_full_pages` in upstream_bugs.rs runs
/// the same frees in a child process and expects the abort.
#[test]
#[cfg_attr(
    all(feature = "v2", feature = "debug"),
    ignore = "mimalloc 2.5.2 debug builds abort freeing blocks of a deleted heap from full pages \
              (the canary in upstream_bugs.rs)"
)]
fn delete_keeps_blocks_alive() {
    let heap = Heap::new();
    let layout = Layout::from_size_align(4000, 32).unwrap();
    let blocks: Vec<_> = (0..100u8)
        .map(|i| {
            let p = heap.allocate(layout).unwrap();
            // SAFETY: a live 4000-byte block.
            unsafe { Pattern::new(i).fill(p.as_ptr(), 4000) };
            (p, i)
        })
        .collect();
    heap.delete();
    for (p, seed) in blocks {
        assert!(mimalloc::heap::is_in_heap_region(p.as_ptr()));
        // SAFETY: `delete` moved the blocks to the default heap; each is live and freed once.
        unsafe {
            Pattern::new(seed).assert_at(p.as_ptr(), 4000, "block of a deleted heap");
            std::alloc::GlobalAlloc::dealloc(&MiMalloc, p.as_ptr(), layout);
        }
    }
}

/// The process's statistics after returning to the OS what can be returned.
fn stats_after_collect() -> mimalloc::stats::Stats {
    mimalloc::heap::collect(true);
    mimalloc::stats::read()
}

/// The process's memory at one moment: mimalloc's statistics and the resident set.
struct Snapshot {
    stats: mimalloc::stats::Stats,
    resident: Option<usize>,
}

impl Snapshot {
    /// Adds the resident set, measured now, to statistics just taken.
    fn with_resident_set(stats: mimalloc::stats::Stats) -> Snapshot {
        let resident = mimalloc_tests::resident_bytes();
        Snapshot { stats, resident }
    }
}

/// A hashbrown map in a heap.
type HeapMap<'h> = hashbrown::HashMap<u64, u64, RandomState, &'h Heap>;
/// A Vec in a heap.
type HeapVec<'h, T> = allocator_api2::vec::Vec<T, &'h Heap>;

/// The heap example of `docs/beyond-malloc.md` as a test: a hashbrown map and a Vec in a heap;
/// dropping the heap frees all of it at once, and the statistics show the memory going back to
/// the OS.
#[test]
fn collections_in_a_heap_go_back_when_it_drops() {
    let before = Snapshot::with_resident_set(stats_after_collect());
    let heap = Heap::new();
    let (map, vec, big) = fill_collections(&heap);
    let during = Snapshot::with_resident_set(mimalloc::stats::read());
    print_statistics_with_the_heap_full();
    free_all_at_once(map, vec, big);
    drop(heap);
    let after = Snapshot::with_resident_set(stats_after_collect());

    // Given back by purging arena pages (on x86_64 Linux the committed figure stays, as
    // mimalloc commits arenas eagerly there), or by decommitting or unmapping, which lowers
    // the committed figure without counting as a purge (i686 with mimalloc 3.6.0: 21 MiB
    // purged, committed 94 -> 26 MiB, resident 79 -> 4 MiB).
    let purged = after.stats.purged - during.stats.purged;
    let uncommitted = during.stats.committed.current - after.stats.committed.current;
    let returned = purged.max(uncommitted);
    print_figures(returned, &before, &during, &after);
    assert!(
        returned >= 64 << 20,
        "dropping the heap returned only {returned} bytes to the OS"
    );
    check_resident_set_shrank(&during, &after);
}

/// Fills a map, a Vec and a 64 MiB buffer in `heap`, and checks they live there.
fn fill_collections(heap: &Heap) -> (HeapMap<'_>, HeapVec<'_, u64>, HeapVec<'_, u8>) {
    let mut map = hashbrown::HashMap::with_hasher_in(RandomState::new(), heap);
    let mut vec = allocator_api2::vec::Vec::new_in(heap);
    for i in 0..200_000u64 {
        map.insert(i, i * 2);
        vec.push(i * 3);
    }
    let mut big = allocator_api2::vec::Vec::<u8, _>::with_capacity_in(64 * MIB, heap);
    big.resize(64 * MIB, 1); // touched, so resident for real
    assert!(heap.contains(vec.as_ptr()) && heap.contains(big.as_ptr()));
    assert_eq!(map.get(&12_345), Some(&24_690));
    (map, vec, big)
}

/// Prints mimalloc's statistics while the heap holds the collections, for the CI log.
fn print_statistics_with_the_heap_full() {
    let mut printout = String::new();
    mimalloc::stats::print(&mut printout).unwrap();
    println!("statistics with the heap full:\n{printout}");
}

/// Ends the collections without freeing their blocks one by one, so the heap can be dropped.
fn free_all_at_once(map: HeapMap<'_>, vec: HeapVec<'_, u64>, big: HeapVec<'_, u8>) {
    // The collections borrow the heap, so it cannot be dropped while they are alive. Forgetting
    // them (instead of dropping them, which would free their memory block by block) shows that
    // destroying the heap frees everything in it at once.
    if cfg!(all(feature = "guarded", feature = "v2")) {
        // mimalloc 2 cannot destroy a heap in guarded builds (see `Heap`): the collections
        // free their memory.
        drop((map, vec, big));
    } else {
        std::mem::forget(map);
        std::mem::forget(vec);
        std::mem::forget(big);
    }
}

/// Prints what went back to the OS and the committed and resident figures, for the CI log.
fn print_figures(returned: i64, before: &Snapshot, during: &Snapshot, after: &Snapshot) {
    println!(
        "returned to the OS (purged, or uncommitted if more): {} MiB; committed {} -> {} -> {} MiB; resident {:?} -> {:?} -> {:?} MiB",
        returned >> 20,
        before.stats.committed.current >> 20,
        during.stats.committed.current >> 20,
        after.stats.committed.current >> 20,
        before.resident.map(|r| r >> 20),
        during.resident.map(|r| r >> 20),
        after.resident.map(|r| r >> 20),
    );
}

/// Where the OS tells the resident set, dropping the heap shrank it by the 64 MiB buffer.
fn check_resident_set_shrank(during: &Snapshot, after: &Snapshot) {
    match (during.resident, after.resident) {
        (Some(during), Some(after)) => assert!(
            during - after >= 64 << 20,
            "the resident set shrank by only {} bytes",
            during.saturating_sub(after)
        ),
        _ => mimalloc_tests::skip(
            "collections_in_a_heap_go_back_when_it_drops (resident set)",
            "no resident-set figure here (an emulator that stands in for the kernel, or an OS \
             `resident_bytes` cannot ask)",
        ),
    }
}

/// Destroying a heap with live blocks frees them: doing it again and again does not grow the
/// process. In a child process, so that no other test's memory moves the figures.
#[test]
#[cfg_attr(
    all(feature = "guarded", feature = "v2"),
    ignore = "in `guarded` builds mimalloc 2 turns mi_heap_destroy into mi_heap_delete \
              (documented on Heap), which frees no block"
)]
fn child_destroy_frees_every_block() {
    if is_child() {
        let layout = Layout::from_size_align(1000, 8).unwrap();
        let mut resident = Vec::new();
        for round in 0..30u8 {
            let heap = Heap::new();
            for _ in 0..10_000 {
                // Never freed one by one.
                let p = heap.allocate(layout).unwrap();
                // SAFETY: a live block of 1000 bytes: touched, so it is resident.
                unsafe { p.as_ptr().write_bytes(round, 1000) };
            }
            drop(heap);
            mimalloc::heap::collect(true);
            resident.push(mimalloc_tests::resident_bytes());
        }
        match (resident[2], resident[29]) {
            // 30 rounds of 10 MB each would be 300 MB without the destroy.
            (Some(first), Some(last)) => {
                assert!(
                    last < first + (32 << 20),
                    "the resident set grew from {first} to {last}"
                );
                println!(
                    "DESTROYED: resident {} -> {} MiB over 30 heaps of 10 MB",
                    first >> 20,
                    last >> 20
                );
            }
            _ => println!("DESTROYED: no resident-set figure here"),
        }
        return;
    }
    let out = run_child("child_destroy_frees_every_block", &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("DESTROYED"),
        "{out:?}"
    );
    println!(
        "{}",
        stdout
            .lines()
            .find(|l| l.contains("DESTROYED"))
            .unwrap_or_default()
    );
    if stdout.contains("no resident-set figure") {
        mimalloc_tests::skip(
            "child_destroy_frees_every_block",
            "no resident-set figure here (an emulator that stands in for the kernel, or an OS \
             `resident_bytes` cannot ask)",
        );
    }
}

#[test]
fn allocator_contract_zero_sized() {
    let heap = Heap::new();
    let in_heap = &heap;
    for allocator in [&in_heap as &dyn Allocator, &MiMalloc] {
        for align in [1, 8, 4096] {
            let layout = Layout::from_size_align(0, align).unwrap();
            let p = allocator.allocate(layout).unwrap();
            assert_eq!(p.len(), 0);
            assert_eq!(p.as_ptr() as *mut u8 as usize % align, 0);
            // SAFETY: returned by this allocator with this layout.
            unsafe { allocator.deallocate(p.cast(), layout) };
        }
    }
}

#[test]
fn allocator_contract_grow_shrink() {
    let heap = Heap::new();
    let in_heap = &heap;
    for allocator in [&in_heap as &dyn Allocator, &MiMalloc] {
        for align in [8usize, 64, 8192] {
            let small = Layout::from_size_align(100, align).unwrap();
            let large = Layout::from_size_align(100_000, align).unwrap();
            let p = allocator.allocate(small).unwrap().cast::<u8>();
            // SAFETY: each pointer is used within its layout and only after the last resize.
            unsafe {
                Pattern::new(9).fill(p.as_ptr(), 100);
                let q = allocator.grow(p, small, large).unwrap();
                assert_eq!(q.len(), 100_000);
                assert_eq!(q.as_ptr() as *mut u8 as usize % align, 0);
                Pattern::new(9).assert_at(q.cast().as_ptr(), 100, "grown block");
                Pattern::new(10).fill(q.cast().as_ptr(), 100_000);
                // Shrinking by less than half stays in place (mimalloc's rule).
                let mid = Layout::from_size_align(60_000, align).unwrap();
                let r = allocator.shrink(q.cast(), large, mid).unwrap();
                assert_eq!(
                    r.cast::<u8>(),
                    q.cast::<u8>(),
                    "a small shrink moved the block"
                );
                Pattern::new(10).assert_at(r.cast().as_ptr(), 60_000, "shrunk block");
                // Growing back zeroes the bytes past the old size, even in place where they
                // still hold the pattern from before the shrink.
                let z = allocator.grow_zeroed(r.cast(), mid, large).unwrap();
                Pattern::new(10).assert_at(z.cast().as_ptr(), 60_000, "prefix after grow_zeroed");
                assert_eq!(
                    first_nonzero(z.cast::<u8>().as_ptr().add(60_000), 40_000),
                    None
                );
                allocator.deallocate(z.cast(), large);
            }
        }
    }
}

#[test]
fn allocator_contract_alignment_can_change() {
    let heap = Heap::new();
    let a = Layout::from_size_align(256, 8).unwrap();
    let b = Layout::from_size_align(512, 4096).unwrap();
    let p = Allocator::allocate(&&heap, a).unwrap();
    // SAFETY: used within the layouts, through the latest pointer only.
    unsafe {
        Pattern::new(4).fill(p.cast().as_ptr(), 256);
        let q = Allocator::grow(&&heap, p.cast(), a, b).unwrap();
        assert_eq!(q.as_ptr() as *mut u8 as usize % 4096, 0);
        Pattern::new(4).assert_at(q.cast().as_ptr(), 256, "re-aligned block");
        Allocator::deallocate(&&heap, q.cast(), b);
    }
}

#[test]
fn hashbrown_and_vec_with_mimalloc_as_allocator() {
    let mut map = hashbrown::HashMap::with_hasher_in(RandomState::new(), MiMalloc);
    let mut vec = allocator_api2::vec::Vec::new_in(MiMalloc);
    for i in 0..10_000 {
        map.insert(i, i * 2);
        vec.push(i);
    }
    assert!(mimalloc::heap::is_in_heap_region(vec.as_ptr()));
    assert_eq!(map[&777], 1554);
    // A quarter of the address space in bytes on 64-bit targets reaches mimalloc and fails
    // there; on 32-bit ones no request below `isize::MAX` is impossible, so the reserve goes
    // beyond it (and fails in `Vec`'s own check).
    let impossible = if cfg!(target_pointer_width = "64") {
        isize::MAX as usize / 8
    } else {
        isize::MAX as usize
    };
    assert!(
        vec.try_reserve(impossible).is_err(),
        "an impossible reserve must fail"
    );
}

/// mimalloc 3: many threads allocate in one heap at once and free each other's blocks.
#[cfg(not(feature = "v2"))]
#[test]
fn one_heap_shared_by_threads() {
    let heap = Heap::new();
    let layout = Layout::from_size_align(200, 16).unwrap();
    let blocks: Vec<Vec<(usize, u8)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4u8)
            .map(|t| {
                let heap = &heap;
                s.spawn(move || {
                    (0..5_000u32)
                        .map(|i| {
                            let p = heap.allocate(layout).unwrap();
                            let seed = t.wrapping_mul(31).wrapping_add(i as u8);
                            // SAFETY: a live 200-byte block.
                            unsafe { Pattern::new(seed).fill(p.as_ptr(), 200) };
                            (p.as_ptr() as usize, seed)
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // Each thread's blocks are checked and freed by another thread.
    std::thread::scope(|s| {
        for (t, list) in blocks.iter().enumerate() {
            let heap = &heap;
            s.spawn(move || {
                for &(p, seed) in list {
                    assert!(heap.contains(p as *const u8), "thread {t}");
                    // SAFETY: each block is live, filled, and freed once, here.
                    unsafe {
                        Pattern::new(seed).assert_at(p as *const u8, 200, "shared heap");
                        heap.deallocate(std::ptr::NonNull::new(p as *mut u8).unwrap(), layout);
                    }
                }
            });
        }
    });
}

/// mimalloc 3: a heap dropped while threads that used it are still alive.
#[cfg(not(feature = "v2"))]
#[test]
fn heap_dropped_while_its_threads_live_on() {
    use std::sync::{Arc, Barrier};
    let barrier = Arc::new(Barrier::new(3));
    let heap = Arc::new(Heap::new());
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let (heap, barrier) = (Arc::clone(&heap), Arc::clone(&barrier));
            std::thread::spawn(move || {
                for _ in 0..1000 {
                    heap.allocate(Layout::new::<[u8; 64]>()).unwrap();
                }
                drop(heap);
                barrier.wait(); // the main thread drops the heap now
                barrier.wait();
                // The thread goes on allocating elsewhere after its heap is gone.
                let v = vec![1u8; 100_000];
                v.iter().map(|&b| b as usize).sum::<usize>()
            })
        })
        .collect();
    barrier.wait();
    let heap = Arc::try_unwrap(heap).expect("the threads let go of the heap");
    drop(heap);
    barrier.wait();
    for t in threads {
        assert_eq!(t.join().unwrap(), 100_000);
    }
}

/// mimalloc 2: a heap allocates on its own thread, and its blocks can be freed on others.
#[cfg(feature = "v2")]
#[test]
fn v2_heap_blocks_freed_on_other_threads() {
    let heap = Heap::new();
    let layout = Layout::from_size_align(300, 8).unwrap();
    let blocks: Vec<usize> = (0..5_000u32)
        .map(|i| {
            let p = heap.allocate(layout).unwrap();
            // SAFETY: a live 300-byte block.
            unsafe { Pattern::new(i as u8).fill(p.as_ptr(), 300) };
            p.as_ptr() as usize
        })
        .collect();
    std::thread::spawn(move || {
        for (i, p) in blocks.into_iter().enumerate() {
            // SAFETY: each block is live, owned by this thread now, and freed once.
            unsafe {
                Pattern::new(i as u8).assert_at(p as *const u8, 300, "v2 heap block");
                std::alloc::GlobalAlloc::dealloc(&MiMalloc, p as *mut u8, layout);
            }
        }
    })
    .join()
    .unwrap();
    heap.collect(true);
}

/// `Heap::collect` gives the pages a heap emptied back: mimalloc keeps an emptied page in its
/// heap for the next allocation of that size until the heap is collected. In a child process,
/// whose page count no other test moves.
#[test]
fn child_collect_frees_the_pages_a_heap_emptied() {
    mimalloc_tests::in_child_on_a_thread("child_collect_frees_the_pages_a_heap_emptied", || {
        let heap = Heap::new();
        let blocks: Vec<_> = [16usize, 1000, 20_000]
            .iter()
            .flat_map(|&size| (0..64).map(move |_| Layout::from_size_align(size, 8).unwrap()))
            .map(|layout| (heap.allocate(layout).unwrap(), layout))
            .collect();
        for (p, layout) in blocks {
            // SAFETY: each block is live, from `heap`, and freed once.
            unsafe { heap.deallocate(p.cast(), layout) };
        }
        let before = mimalloc::stats::read().pages.current;
        heap.collect(true);
        let after = mimalloc::stats::read().pages.current;
        assert!(
            after < before,
            "pages in use: {before} before collecting, {after} after"
        );
    });
}

/// A heap's `Debug` names it by mimalloc's heap pointer, which tells two heaps apart in a log.
#[test]
fn heaps_describe_themselves_by_their_address() {
    let (a, b) = (Heap::new(), Heap::new());
    let (text_a, text_b) = (format!("{a:?}"), format!("{b:?}"));
    assert!(text_a.starts_with("Heap(0x"), "{text_a}");
    assert_ne!(text_a, text_b);
}

/// The questions about single blocks: where mimalloc's memory is, and what size a request
/// really gets.
#[test]
fn mimalloc_knows_its_memory_and_its_size_classes() {
    let on_the_stack = 0u8;
    let boxed = Box::new(0u64);
    assert!(!mimalloc::heap::is_in_heap_region(&on_the_stack));
    assert!(mimalloc::heap::is_in_heap_region(&*boxed));
    for size in [1usize, 100, 1000, 70_000, 3 * MIB] {
        let good = mimalloc::heap::good_size(size);
        // A class holds the request and wastes at most a quarter of it (16 bytes of tiny ones).
        assert!(
            good >= size && good <= size + size / 4 + 16,
            "{size} -> {good}"
        );
    }
}
