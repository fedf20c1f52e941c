//! Arenas: reserved and caller-owned memory, exclusive arenas as hard memory budgets, and a
//! process-wide limit through options.

mimalloc::assign_global!();

use core::alloc::Layout;
use core::mem::MaybeUninit;
use mimalloc::{Arena, ArenaError, Heap, Sharing};
use mimalloc_tests::{in_child, is_child, Pattern};

const MIB: usize = 1 << 20;

/// Fills a heap with `chunk`-sized blocks until it refuses; returns the blocks. Its arenas hold
/// 64 MiB: four times that is a budget that never ran out (and stops before the machine does).
fn fill(heap: &Heap, chunk: Layout) -> Vec<core::ptr::NonNull<u8>> {
    let mut blocks = Vec::new();
    while let Ok(p) = heap.allocate(chunk) {
        blocks.push(p);
        assert!(
            blocks.len() * chunk.size() <= 256 * MIB,
            "the budget never ran out"
        );
    }
    blocks
}

#[test]
fn exclusive_arena_is_a_hard_budget() {
    let arena = Arena::reserve(64 * MIB, Sharing::Exclusive).unwrap();
    let (start, size) = arena.area();
    assert!(size >= 64 * MIB && !start.is_null());
    let budget = Heap::try_new_in(&arena).unwrap();

    for chunk in [
        Layout::from_size_align(MIB, 8).unwrap(),
        Layout::from_size_align(1000, 8).unwrap(),
    ] {
        let blocks = fill_the_budget(&arena, size, &budget, chunk);
        // The program goes on: more than the arena fails, through every API...
        more_than_the_arena_fails(&arena, &budget, chunk);
        // ...while the global allocator is unaffected...
        let elsewhere = vec![0u8; 8 * MIB];
        assert!(!arena.contains(elsewhere.as_ptr()));
        // ...and freeing makes room again.
        freeing_makes_room_again(&budget, chunk, blocks);
    }
}

/// Fills `budget` with `chunk`s: most of the arena's `size` bytes fit, no more, all inside it.
fn fill_the_budget(
    arena: &Arena,
    size: usize,
    budget: &Heap,
    chunk: Layout,
) -> Vec<core::ptr::NonNull<u8>> {
    let blocks = fill(budget, chunk);
    let used = blocks.len() * chunk.size();
    println!(
        "{}-byte blocks: {} fit, {} MiB of a {} MiB arena",
        chunk.size(),
        blocks.len(),
        used >> 20,
        size >> 20
    );
    assert!(used <= size, "the budget was exceeded: {used} > {size}");
    assert!(
        used >= size / 2,
        "only {used} of {size} bytes could be used"
    );
    assert!(
        blocks.iter().all(|p| arena.contains(p.as_ptr())),
        "a block came from outside the arena"
    );
    blocks
}

/// With the budget full, a request fails through every API: the heap's own, the `Allocator`
/// trait's, and a collection's `try_reserve`.
fn more_than_the_arena_fails(arena: &Arena, budget: &Heap, chunk: Layout) {
    assert!(budget
        .allocate(Layout::from_size_align(128 * MIB, 8).unwrap())
        .is_err());
    match allocator_api2::alloc::Allocator::allocate(&budget, chunk) {
        Err(_) => {}
        // With guard pages, the allocation that failed may have been a guarded one, which
        // needs room for its guard page too; a plain one can still fit, in the arena.
        Ok(p) if cfg!(feature = "guarded") => {
            assert!(
                arena.contains(p.as_ptr()),
                "a block came from outside the arena"
            );
            // SAFETY: a live block of `chunk`, freed once.
            unsafe { budget.deallocate(p.cast(), chunk) };
        }
        Ok(_) => panic!("an allocation beyond the budget succeeded"),
    }
    let mut v = allocator_api2::vec::Vec::<u8, _>::new_in(budget);
    assert!(v.try_reserve(8 * MIB).is_err());
}

/// Frees the blocks that filled `budget`; then a `chunk` fits again.
fn freeing_makes_room_again(budget: &Heap, chunk: Layout, blocks: Vec<core::ptr::NonNull<u8>>) {
    for p in blocks {
        // SAFETY: every block came from `budget` with `chunk` and is freed once.
        unsafe { budget.deallocate(p, chunk) };
    }
    let again = budget.allocate(chunk).unwrap();
    // SAFETY: as above.
    unsafe { budget.deallocate(again, chunk) };
}

#[test]
#[cfg_attr(
    feature = "guarded",
    ignore = "in `guarded` builds mimalloc 2 deletes a dropped heap, so its blocks stay allocated \
              (documented on Heap), and mimalloc 3.6.0 leaves one 4 MiB chunk of the arena \
              unusable after a destroy (docs/known-issues.md)"
)]
fn a_heap_dropped_gives_its_budget_to_the_next() {
    let arena = Arena::reserve(64 * MIB, Sharing::Exclusive).unwrap();
    let chunk = Layout::from_size_align(4 * MIB, 8).unwrap();
    let first = Heap::try_new_in(&arena).unwrap();
    let count = fill(&first, chunk).len();
    drop(first); // destroyed with every block in it
    let second = Heap::try_new_in(&arena).unwrap();
    assert_eq!(
        fill(&second, chunk).len(),
        count,
        "the arena was not fully reusable: {count} chunks at first"
    );
}

/// Enough for mimalloc's arena alignment after a misaligned start (see `Arena::manage`).
const REGION_SIZE: usize = if cfg!(target_pointer_width = "64") {
    520 * MIB
} else {
    72 * MIB
};

/// Memory that is not mimalloc's own (a block of the global allocator, which is mimalloc here,
/// would be): the executable's zero-initialised data, which the OS maps on first touch. One
/// uninitialised array, not an array of uninitialised bytes: rustc evaluates the latter's
/// initializer element by element, which took 27 s of every build of this test.
static mut REGION: MaybeUninit<[u8; REGION_SIZE]> = MaybeUninit::uninit();

#[test]
fn caller_owned_region_with_a_misaligned_start() {
    // SAFETY: this test is the only user of REGION, and runs once; `MaybeUninit<[u8; N]>` has
    // the layout of `[MaybeUninit<u8>; N]`, and uninitialised bytes are valid for the latter.
    let whole: &'static mut [MaybeUninit<u8>; REGION_SIZE] =
        unsafe { &mut *std::ptr::addr_of_mut!(REGION).cast() };
    // A start that is not even page-aligned, which `Arena::manage` (mimalloc 3) or mimalloc
    // itself (mimalloc 2) aligns up.
    let skip = if (whole.as_ptr() as usize + 1) % 4096 == 0 {
        2
    } else {
        1
    };
    let region = &mut whole[skip..];
    let (base, len) = (region.as_ptr() as usize, region.len());
    let arena = Arena::manage(region, Sharing::Exclusive).unwrap();
    let (start, size) = arena.area();
    assert!(
        start as usize >= base && start as usize + size <= base + len,
        "the arena is not inside the region"
    );

    let heap = Heap::try_new_in(&arena).unwrap();
    let layout = Layout::from_size_align(100_000, 64).unwrap();
    let blocks: Vec<_> = (0..100)
        .map(|i| {
            let p = heap.allocate(layout).unwrap();
            assert!(arena.contains(p.as_ptr()));
            // SAFETY: a live block of `layout.size()` bytes.
            unsafe { Pattern::new(i as u8).fill(p.as_ptr(), layout.size()) };
            (p, i as u8)
        })
        .collect();
    for (p, seed) in blocks {
        // SAFETY: each block is live and freed once.
        unsafe {
            Pattern::new(seed).assert_at(p.as_ptr(), layout.size(), "block in a managed region");
            heap.deallocate(p, layout);
        }
    }
}

#[test]
fn a_region_too_small_is_refused() {
    let region: &'static mut [MaybeUninit<u8>] = Vec::leak(vec![MaybeUninit::uninit(); MIB]);
    assert_eq!(
        Arena::manage(region, Sharing::Shared),
        Err(ArenaError::Refused)
    );
}

#[test]
fn an_impossible_reservation_is_an_os_error() {
    // Half of a 64-bit address space; on 32-bit targets half is possible, seven eighths is not
    // (the program's own mappings sit in the middle).
    let impossible = if cfg!(target_pointer_width = "64") {
        usize::MAX / 2
    } else {
        usize::MAX / 8 * 7
    };
    match Arena::reserve(impossible, Sharing::Exclusive) {
        Err(ArenaError::Os(errno)) => assert!(errno > 0),
        other => panic!("reserving {impossible} bytes: {other:?}"),
    }
}

/// A process-wide limit from options alone: reserve an arena at start-up, no implicit arenas,
/// and no memory from the OS outside arenas. Run in a child process, since it caps the whole
/// process.
#[test]
fn child_process_wide_limit_through_options() {
    if is_child() {
        let mut total = 0usize;
        let mut kept = Vec::new();
        loop {
            let mut v: Vec<u8> = Vec::new();
            if v.try_reserve_exact(MIB).is_err() {
                break;
            }
            v.resize(MIB, 1);
            kept.push(v);
            total += MIB;
            assert!(total <= 1024 * MIB, "the limit never came");
        }
        println!("LIMIT REACHED at {} MiB", total >> 20);
        return;
    }
    let out = in_child(
        "child_process_wide_limit_through_options",
        &[
            ("MIMALLOC_RESERVE_OS_MEMORY", "96MiB"),
            ("MIMALLOC_ARENA_RESERVE", "0"),
            ("MIMALLOC_DISALLOW_OS_ALLOC", "1"),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let reached: usize = stdout
        .split("LIMIT REACHED at ")
        .nth(1)
        .and_then(|rest| rest.split(" MiB").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no limit line in: {stdout}"));
    println!("process-wide limit: allocations stopped at {reached} MiB of a 96 MiB arena");
    assert!((32..=96).contains(&reached), "stopped at {reached} MiB");
}

/// An arena holds `[start, start + size)`: its first and last bytes, nothing before or after.
#[test]
fn an_arena_contains_exactly_its_area() {
    let arena = Arena::reserve(32 * MIB, Sharing::Exclusive).unwrap();
    let (start, size) = arena.area();
    let at = |offset: isize| (start as usize).wrapping_add(offset as usize) as *const u8;
    assert!(arena.contains(at(0)) && arena.contains(at(size as isize - 1)));
    assert!(!arena.contains(at(-1)), "the byte before the area");
    assert!(
        !arena.contains(at(size as isize)),
        "the byte after the area"
    );
}

/// What a log line says of an arena and of a refusal: the area, and why.
#[test]
fn arenas_and_their_errors_describe_themselves() {
    let arena = Arena::reserve(32 * MIB, Sharing::Shared).unwrap();
    let (start, size) = arena.area();
    assert_eq!(
        format!("{arena:?}"),
        format!("Arena {{ start: {start:?}, size: {size} }}")
    );
    assert_eq!(
        ArenaError::Os(12).to_string(),
        "the OS refused to reserve the arena (errno 12)"
    );
    assert!(ArenaError::Refused.to_string().contains("region too small"));
}

/// Memory no heap was created in comes from the shared arenas and never from an exclusive one:
/// an exclusive arena is a budget that only its own heaps spend. Fresh threads make the fresh
/// pages, and mimalloc 3 starts each thread's search at another arena (by its sequence number),
/// so some of them start at the shared arena made here; mimalloc 2 searches from the first arena
/// (its own), so only the exclusive half holds there.
#[test]
fn ordinary_allocations_use_shared_arenas_never_exclusive_ones() {
    let size = if cfg!(target_pointer_width = "64") {
        64 * MIB
    } else {
        8 * MIB
    };
    let reserved = [Sharing::Shared, Sharing::Exclusive].map(|s| Arena::reserve(size, s).unwrap());
    assert_arenas_serve_ordinary_allocations(reserved);
    // The same for caller-owned regions (`Arena::manage`), of the size its docs name.
    let size = if cfg!(target_pointer_width = "64") {
        512 * MIB
    } else {
        64 * MIB
    };
    let managed = [Sharing::Shared, Sharing::Exclusive].map(|s| {
        let region: &'static mut [MaybeUninit<u8>] = Box::leak(untouched(size));
        Arena::manage(region, s).unwrap()
    });
    assert_arenas_serve_ordinary_allocations(managed);
}

/// `[shared, exclusive]`: blocks of 16 fresh threads land in the first (mimalloc 3), never in
/// the second.
fn assert_arenas_serve_ordinary_allocations([shared, exclusive]: [Arena; 2]) {
    let threads: Vec<_> = (0..16)
        .map(|_| {
            std::thread::spawn(move || {
                let blocks: Vec<Vec<u8>> = (0..4).map(|_| vec![1u8; 256 << 10]).collect();
                let inside = |arena: &Arena| blocks.iter().any(|b| arena.contains(b.as_ptr()));
                (inside(&shared), inside(&exclusive))
            })
        })
        .collect();
    let found: Vec<(bool, bool)> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(
        found.iter().all(|&(_, in_exclusive)| !in_exclusive),
        "an ordinary allocation in an exclusive arena: {found:?}"
    );
    if cfg!(not(feature = "v2")) {
        assert!(
            found.iter().any(|&(in_shared, _)| in_shared),
            "no fresh thread's memory came from the shared arena: {found:?}"
        );
    }
}

/// `size` bytes of address space, never written: it costs no memory until mimalloc uses it.
fn untouched(size: usize) -> Box<[MaybeUninit<u8>]> {
    let mut memory = Vec::<MaybeUninit<u8>>::with_capacity(size);
    // SAFETY: `MaybeUninit<u8>` needs no initialisation, and the capacity is `size`.
    unsafe { memory.set_len(size) };
    memory.into_boxed_slice()
}

/// The alignment mimalloc 3 wants of a caller's region in this build; mimalloc 2 aligns it
/// itself (any alignment serves its test below).
fn arena_alignment() -> usize {
    #[cfg(not(feature = "v2"))]
    // SAFETY: `mi_arena_min_alignment` has no preconditions; it returns a build constant.
    return unsafe { mimalloc_sys::mi_arena_min_alignment() };
    #[cfg(feature = "v2")]
    return 4 * MIB;
}

/// A region too short to hold an arena once its start is aligned is refused before mimalloc
/// sees it, so without the warning mimalloc 3 would print where errors are shown (a program may
/// treat stderr output as an error). mimalloc 2 aligns the region itself (`Arena::manage`), and
/// warns.
#[test]
fn child_a_region_too_short_for_its_aligned_start_is_refused_quietly() {
    if is_child() {
        // Half an alignment (at most 2 MiB) from 4160 bytes past an aligned address: the next
        // aligned start lies beyond the region's end in every build (the alignment is 256 MiB,
        // 64 KiB with `secure`, 32 KiB with page-map free).
        let align = arena_alignment();
        let len = (align / 2).min(2 * MIB);
        let whole: &'static mut [MaybeUninit<u8>] = Box::leak(untouched(align + len + 8192));
        let aligned = (align - whole.as_ptr() as usize % align) % align;
        let start = aligned + 4096 + 64;
        let region = &mut whole[start..start + len];
        // From here on only: a 32-bit start-up may warn of its own reservations.
        mimalloc::options::MiOption::ShowErrors.enable();
        assert_eq!(
            Arena::manage(region, Sharing::Shared),
            Err(ArenaError::Refused)
        );
        return;
    }
    // mimalloc shows its warnings only when asked to: the child asks (`ShowErrors`).
    let out = in_child(
        "child_a_region_too_short_for_its_aligned_start_is_refused_quietly",
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    if cfg!(not(feature = "v2")) {
        assert!(!stderr.contains("mimalloc"), "mimalloc warned: {stderr}");
    }
}
