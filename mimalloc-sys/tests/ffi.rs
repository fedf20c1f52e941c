//! The raw bindings link and behave as the C documentation says, for the selected version.

use core::ffi::c_void;
use mimalloc_sys::*;

#[test]
fn linked_library_is_the_header_version() {
    // SAFETY: no preconditions.
    let v = unsafe { mi_version() };
    assert_eq!(v as u32, MI_MALLOC_VERSION);
    let major = MI_MALLOC_VERSION / 10_000;
    assert_eq!(major, if cfg!(feature = "v2") { 2 } else { 3 });
}

#[test]
fn malloc_calloc_realloc_free() {
    // SAFETY: every pointer is checked for null, used within its size, and freed once.
    unsafe {
        let p = mi_malloc(64).cast::<u8>();
        assert!(!p.is_null());
        assert!(mi_usable_size(p.cast()) >= 64);
        p.write_bytes(0xAB, 64);
        // In `guarded` builds too: mimalloc 3.6.0 and 2.5.2 copy a guarded block's object, not
        // its whole usable size into the guard page (`tests/tests/memory_tools.rs`).
        let q = mi_realloc(p.cast(), 10_000).cast::<u8>();
        assert!(!q.is_null());
        assert!((0..64).all(|i| *q.add(i) == 0xAB));
        mi_free(q.cast());

        let z = mi_calloc(100, 10).cast::<u8>();
        assert!(!z.is_null());
        assert!((0..1000).all(|i| *z.add(i) == 0));
        mi_free(z.cast());

        // Overflowing count * size is refused, not wrapped.
        assert!(mi_calloc(usize::MAX / 2, 3).is_null());
        assert!(mi_mallocn(usize::MAX / 2, 3).is_null());
        mi_free(core::ptr::null_mut());
    }
}

#[test]
fn aligned_allocation() {
    for align in [16usize, 64, 4096, 1 << 16, 1 << 20] {
        // SAFETY: checked for null, freed once.
        unsafe {
            let p = mi_malloc_aligned(100, align);
            assert!(!p.is_null());
            assert_eq!(p as usize % align, 0);
            p.cast::<u8>().write_bytes(0xCD, 100);
            let q = mi_realloc_aligned(p, 100_000, align);
            assert!(
                !q.is_null(),
                "mi_realloc_aligned to 100000 (align {align}) failed"
            );
            assert_eq!(q as usize % align, 0);
            assert!(
                (0..100).all(|i| *q.cast::<u8>().add(i) == 0xCD),
                "mi_realloc_aligned lost the contents (align {align})"
            );
            mi_free(q);
        }
    }
    // SAFETY: a non-power-of-two alignment must be refused.
    assert!(unsafe { mi_malloc_aligned(100, 48) }.is_null());
}

#[test]
fn good_size_rounds_up_to_a_size_class() {
    for size in [1usize, 7, 100, 1000, 5000, 100_000] {
        // SAFETY: no preconditions.
        let good = unsafe { mi_good_size(size) };
        assert!(good >= size, "mi_good_size({size}) = {good}");
        // SAFETY: a block of the good size uses it fully.
        unsafe {
            let p = mi_malloc(size);
            assert!(mi_usable_size(p) >= size);
            mi_free(p);
        }
    }
}

#[test]
fn heap_new_allocate_destroy() {
    // SAFETY: the heap is used only on this thread (v2's rule) and destroyed once; its blocks
    // are not used after the destroy.
    unsafe {
        let heap = mi_heap_new();
        assert!(!heap.is_null());
        let p: *mut c_void = mi_heap_malloc(heap, 1000);
        assert!(!p.is_null());
        #[cfg(not(feature = "v2"))]
        assert!(mi_heap_contains(heap, p));
        #[cfg(feature = "v2")]
        assert!(mi_heap_contains_block(heap, p));
        mi_heap_destroy(heap);
    }
}

#[test]
fn option_round_trip() {
    // SAFETY: options are plain process-wide integers.
    unsafe {
        let before = mi_option_get(mi_option_max_warnings);
        mi_option_set(mi_option_max_warnings, before + 7);
        assert_eq!(mi_option_get(mi_option_max_warnings), before + 7);
        mi_option_set(mi_option_max_warnings, before);
        assert_eq!(mi_option_get(mi_option_max_warnings), before);
    }
}

#[test]
fn stats_get_fills_the_versioned_struct() {
    // SAFETY: mi_stats_t is plain integers; the header says how much the caller provides.
    unsafe {
        let mut stats: mi_stats_t = core::mem::zeroed();
        stats.size = core::mem::size_of::<mi_stats_t>();
        stats.version = MI_STAT_VERSION as usize;
        let p = mi_malloc(3000);
        assert!(mi_stats_get(&mut stats));
        mi_free(p);
        assert!(
            stats.reserved.current > 0,
            "mimalloc reserved no memory: {:?}",
            stats.reserved
        );
    }
}
