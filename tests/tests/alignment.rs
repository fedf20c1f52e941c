//! Every valid `Layout` through `MiMalloc`'s `GlobalAlloc`: sizes from 1 byte to 64 MiB crossed
//! with alignments from 1 to 2^22, then alignments far beyond, up to the absurd.

use mimalloc::MiMalloc;
use mimalloc_tests::{assert_aligned_and_usable, Pattern};
#[cfg(mimalloc_large_request_cap)]
use mimalloc_tests::{is_child, run_child};
use std::alloc::{GlobalAlloc, Layout};

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

/// Small sizes one by one, then every size-class neighbourhood cheap to reach, then large.
fn sizes() -> Vec<usize> {
    let mut sizes: Vec<usize> = (1..=256).collect();
    for p in 9..=26 {
        let base = 1usize << p;
        sizes.extend([base - 1, base, base + 1]);
        sizes.push(base + base / 2 + 3); // odd, between powers of two
    }
    sizes.push(64 * MIB);
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// Allocates `layout` (plain or zeroed), checks alignment and usable size, writes and reads the
/// whole block back, frees it. Returns false if mimalloc returned null.
fn exercise(layout: Layout, zeroed: bool, seed: u8) -> bool {
    let (size, align) = (layout.size(), layout.align());
    // SAFETY: every layout used here has a non-zero size.
    let p = unsafe {
        if zeroed {
            MiMalloc.alloc_zeroed(layout)
        } else {
            MiMalloc.alloc(layout)
        }
    };
    if p.is_null() {
        return false;
    }
    let context = format!("size {size} align {align}");
    // SAFETY: `p` is a live block of `size` bytes from mimalloc.
    unsafe {
        assert_aligned_and_usable(p, size, align, &context);
        if zeroed {
            assert_eq!(
                mimalloc_tests::first_nonzero(p, size),
                None,
                "size {size} align {align}: not zeroed"
            );
        }
        let pattern = Pattern::new(seed);
        pattern.fill(p, size);
        pattern.assert_at(p, size, &context);
        MiMalloc.dealloc(p, layout);
    }
    true
}

#[test]
fn every_size_with_every_alignment_up_to_4_mib() {
    let mut count = 0;
    for (i, size) in sizes().into_iter().enumerate() {
        for shift in 0..=22 {
            let align = 1usize << shift;
            // Past 1 MiB blocks, every third alignment keeps the run short; below, all of them.
            if size > MIB && shift % 3 != 0 && shift < 20 {
                continue;
            }
            let layout = Layout::from_size_align(size, align).unwrap();
            let zeroed = (i + shift) % 2 == 0;
            assert!(
                exercise(layout, zeroed, (i + shift) as u8),
                "size {size} align {align} returned null"
            );
            count += 1;
        }
    }
    assert!(count > 6_000, "the sweep covered only {count} layouts");
}

/// The rule `MiMalloc` relies on to skip the aligned path (`alloc.rs: is_natural`): a plain
/// `mi_malloc` block of `size` bytes is aligned to `min(16, size)` rounded down to a power of
/// two. Checked directly on the C function, for every size up to 4 KiB and a few larger ones.
#[test]
fn plain_mi_malloc_is_naturally_aligned() {
    let mut live = Vec::new();
    for size in (1..=4096).chain([8191, 65_536 + 8, MIB + 24]) {
        let natural = if size >= 16 {
            16
        } else {
            1usize << (usize::BITS - 1 - size.leading_zeros())
        };
        // Several blocks per size, so that not only the first block of a page is looked at.
        for _ in 0..4 {
            // SAFETY: plain C allocation, freed below.
            let p = unsafe { mimalloc_sys::mi_malloc(size) } as usize;
            assert_ne!(p, 0);
            assert_eq!(
                p % natural,
                0,
                "mi_malloc({size}) = {p:#x} is not {natural}-aligned"
            );
            live.push(p);
        }
    }
    for p in live {
        // SAFETY: each pointer came from mi_malloc above and is freed once.
        unsafe { mimalloc_sys::mi_free(p as *mut _) };
    }
}

/// The first alignment (as a power of two) that mimalloc 3 refuses: it keeps page metadata at
/// addresses aligned to 256 MiB (32 MiB on 32-bit targets), `MI_PAGE_META_ALIGNMENT`, and
/// cannot place a block at such an alignment or above ("requested alignment is too large").
/// Builds whose free finds pages through the page map instead (`secure`, `free_use_pagemap`:
/// `cfg(mimalloc_page_map_free)`) have no such limit, nor has mimalloc 2.
/// `docs/known-issues.md` says so.
fn refused_from() -> Option<u32> {
    if cfg!(any(feature = "v2", mimalloc_page_map_free)) {
        None
    } else if cfg!(target_pointer_width = "64") {
        Some(28)
    } else {
        Some(25)
    }
}

/// Alignments from 8 MiB to 1 GiB: mimalloc serves them from dedicated OS mappings, up to its
/// limit, and returns null from there on; nothing aborts.
#[test]
fn huge_alignments_are_aligned_or_null() {
    // A 64-bit address space always has room for these. A 32-bit one (4 GiB, shared with the
    // other tests running at the same time) may be too fragmented for a 512 MiB or 1 GiB
    // aligned block, so there only the smaller ones must succeed.
    let must_serve_up_to = if cfg!(target_pointer_width = "64") {
        30
    } else {
        28
    };
    for shift in 23..=30 {
        for size in [1, 8, 4 * KIB, MIB + 1] {
            let layout = Layout::from_size_align(size, 1 << shift).unwrap();
            let served = exercise(layout, shift % 2 == 1, shift as u8);
            match refused_from() {
                Some(limit) if shift >= limit => assert!(
                    !served,
                    "size {size} align 2^{shift} was served: mimalloc's alignment limit moved, \
                     update refused_from() and docs/known-issues.md"
                ),
                _ => assert!(
                    served || shift > must_serve_up_to,
                    "size {size} align 2^{shift} returned null"
                ),
            }
        }
    }
}

/// Alignments from 2 GiB up to 2^62 cannot be served in a 47-bit address space, or barely:
/// mimalloc must return null (or a correct block), never abort or misalign. (On 32-bit targets
/// no `Layout` has an alignment above 2^30, which `huge_alignments_are_aligned_or_null` covers.)
///
/// Not under the memory tools (a build-time choice), whose runtimes reserve such ranges for
/// real and then run for minutes or get killed; under Wine and qemu-user (told at run time),
/// which do the same, the test says it was skipped.
#[cfg(target_pointer_width = "64")]
#[test]
#[cfg_attr(
    any(feature = "asan", feature = "tsan", feature = "valgrind"),
    ignore = "the memory tools do not model huge address-space reservations"
)]
fn absurd_alignments_are_aligned_or_null() {
    if let Some(emulator) = mimalloc_tests::os_emulator() {
        return mimalloc_tests::skip(
            "absurd_alignments_are_aligned_or_null",
            &format!("{emulator} does not model huge address-space reservations"),
        );
    }
    let max_shift = usize::BITS - 2;
    let mut null = 0;
    let mut served = Vec::new();
    for shift in 31..=max_shift {
        for size in [1, 4 * KIB] {
            if let Ok(layout) = Layout::from_size_align(size, 1usize << shift) {
                if exercise(layout, false, 1) {
                    served.push(format!("2^{shift}/{size}B"));
                } else {
                    null += 1;
                }
            }
        }
    }
    println!("absurd alignments served (alignment/size): {served:?}; {null} returned null");
    // At least the alignments beyond any address space the OS gives out must fail.
    assert!(
        null >= 2,
        "alignments up to 2^{max_shift} never returned null"
    );
}

/// On 64-bit targets a size near `isize::MAX` exceeds any address space: null, not an abort.
#[cfg(target_pointer_width = "64")]
#[test]
fn impossible_sizes_return_null() {
    for align in [1, 8, 16, 64, 4096, 1 << 20] {
        for size in [
            isize::MAX as usize - align + 1,
            isize::MAX as usize / 2 + 1,
            usize::MAX / 4,
        ] {
            // Each is a valid `Layout` (rounded up to its alignment, none passes `isize::MAX`).
            let layout = Layout::from_size_align(size, align).unwrap();
            // SAFETY: non-zero size; a non-null result would be freed.
            unsafe {
                assert!(MiMalloc.alloc(layout).is_null(), "alloc({size}, {align})");
                assert!(
                    MiMalloc.alloc_zeroed(layout).is_null(),
                    "alloc_zeroed({size}, {align})"
                );
            }
        }
    }
}

/// On 32-bit targets the largest `Layout`s (2 GiB) may fit in the 4 GiB address space of a
/// 32-bit process on a 64-bit kernel: each must be null or a block whose ends are usable. With
/// mimalloc 3 outside `secure` builds the crate refuses every one of them
/// (`route::beyond_largest`: mimalloc 3.6.0 faults building such a block's free list), so
/// there each must be null.
#[cfg(target_pointer_width = "32")]
#[test]
fn largest_layouts_are_usable_or_null() {
    let refused_by_the_crate = cfg!(not(any(feature = "v2", feature = "secure")));
    for align in [1, 8, 16, 4096, 1 << 20] {
        let layout = Layout::from_size_align(isize::MAX as usize - align + 1, align).unwrap();
        // SAFETY: non-zero size; a non-null block is written at both ends and freed.
        unsafe {
            let p = MiMalloc.alloc(layout);
            if p.is_null() {
                continue;
            }
            assert!(
                !refused_by_the_crate,
                "{layout:?} was served, which the crate refuses with mimalloc 3"
            );
            assert_eq!(p as usize % align, 0);
            p.write(1);
            p.add(layout.size() - 1).write(2);
            assert_eq!((p.read(), p.add(layout.size() - 1).read()), (1, 2));
            MiMalloc.dealloc(p, layout);
        }
    }
}

/// Where the crate refuses requests near 2 GiB (`cfg(mimalloc_large_request_cap)`: mimalloc 3.6.0
/// faults on them, docs/known-issues.md), it refuses exactly those beyond the bound less the
/// alignment (`route::beyond_largest`), through each entry: one byte beyond is null, allocated
/// plain or zeroed, at any alignment; a request of the bound itself is served and usable at both
/// ends, and growing it past the bound is refused with the block kept. In a child, whose 4 GiB
/// address space has room for one such block and holds nothing of the other tests.
#[cfg(mimalloc_large_request_cap)]
#[test]
fn child_the_32_bit_cap_refuses_exactly_the_requests_beyond_it() {
    const TEST: &str = "child_the_32_bit_cap_refuses_exactly_the_requests_beyond_it";
    const BOUND: usize = (1 << 31) - (4 << 20);
    if is_child() {
        // SAFETY: non-zero sizes; the one block served is written within its size and freed
        // once, with its layout (the refused realloc leaves it as it was).
        unsafe {
            for align in [1, 16, 4096] {
                let beyond = Layout::from_size_align(BOUND - align + 1, align).unwrap();
                assert!(MiMalloc.alloc(beyond).is_null(), "{beyond:?} was served");
                assert!(
                    MiMalloc.alloc_zeroed(beyond).is_null(),
                    "{beyond:?} was served zeroed"
                );
            }
            // One block of the bound: the address space has room for one.
            let at = Layout::from_size_align(BOUND - 1, 1).unwrap();
            let p = MiMalloc.alloc(at);
            assert!(!p.is_null(), "{at:?} was refused");
            p.write(1);
            p.add(at.size() - 1).write(2);
            assert!(MiMalloc.realloc(p, at, at.size() + 1).is_null());
            assert_eq!((p.read(), p.add(at.size() - 1).read()), (1, 2));
            MiMalloc.dealloc(p, at);
        }
        println!("BOUND HELD");
        return;
    }
    let out = run_child(TEST, &[]);
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("BOUND HELD"),
        "{out:?}"
    );
}
