//! Requests that cannot be satisfied fail cleanly through every API: null from mimalloc's C
//! functions and from `MiMalloc`, `Err` from `try_reserve`, and `handle_alloc_error` (the abort
//! with a message) from the collections that cannot report failure.

mimalloc::assign_global!();

use mimalloc::MiMalloc;
use mimalloc_sys as ffi;
use mimalloc_tests::{is_child, run_child};
use std::alloc::{GlobalAlloc, Layout};

/// More than any address space: a size no target can serve. (32-bit targets may serve any
/// valid `Layout`, so the size is `usize::MAX`-ish only for the C functions there.)
const IMPOSSIBLE: usize = usize::MAX / 2 + 1;

#[test]
fn c_functions_return_null() {
    // SAFETY: each call is checked for null; a non-null result would be freed (and fail the
    // assertion first).
    unsafe {
        let results = [
            ("mi_malloc", ffi::mi_malloc(IMPOSSIBLE)),
            ("mi_zalloc", ffi::mi_zalloc(IMPOSSIBLE)),
            ("mi_calloc", ffi::mi_calloc(IMPOSSIBLE, 1)),
            (
                "mi_calloc overflow",
                ffi::mi_calloc(1 << 20, usize::MAX >> 10),
            ),
            ("mi_mallocn", ffi::mi_mallocn(usize::MAX / 8, 16)),
            ("mi_malloc_aligned", ffi::mi_malloc_aligned(IMPOSSIBLE, 64)),
            (
                "mi_zalloc_aligned",
                ffi::mi_zalloc_aligned(IMPOSSIBLE, 4096),
            ),
            (
                "mi_realloc(null)",
                ffi::mi_realloc(std::ptr::null_mut(), IMPOSSIBLE),
            ),
        ];
        for (name, p) in results {
            assert!(p.is_null(), "{name} served an impossible request");
        }
        let p = ffi::mi_malloc(100);
        p.cast::<u8>().write_bytes(0x5A, 100);
        assert!(ffi::mi_realloc(p, IMPOSSIBLE).is_null());
        assert!(ffi::mi_reallocn(p, usize::MAX / 4, 8).is_null());
        assert!(ffi::mi_realloc_aligned(p, IMPOSSIBLE, 64).is_null());
        let kept = std::slice::from_raw_parts(p.cast::<u8>(), 100);
        assert!(
            kept.iter().all(|&b| b == 0x5A),
            "a failed realloc changed the block"
        );
        ffi::mi_free(p);
    }
}

/// The largest `Layout` size for an alignment, which no 64-bit address space can hold.
#[cfg(target_pointer_width = "64")]
#[test]
fn mimalloc_global_alloc_returns_null() {
    for align in [1, 16, 4096, 1 << 20] {
        let layout = Layout::from_size_align(isize::MAX as usize + 1 - align, align).unwrap();
        // SAFETY: non-zero sizes; a non-null result fails the assertion.
        unsafe {
            assert!(MiMalloc.alloc(layout).is_null(), "{layout:?}");
            assert!(MiMalloc.alloc_zeroed(layout).is_null(), "{layout:?}");
            assert!(std::alloc::alloc(layout).is_null(), "global {layout:?}");
        }
    }
}

#[test]
fn try_reserve_on_a_huge_vec_is_an_error() {
    let mut v: Vec<u8> = vec![1, 2, 3];
    // Fits a `Layout` on every target, exceeds what any address space can give.
    let huge = if cfg!(target_pointer_width = "64") {
        isize::MAX as usize - 64
    } else {
        usize::MAX / 2 // rejected as a capacity overflow before asking the allocator
    };
    assert!(v.try_reserve(huge).is_err());
    assert!(v.try_reserve_exact(huge).is_err());
    assert_eq!(v, [1, 2, 3], "a failed reservation changed the vector");
    let mut w: Vec<u64> = Vec::new();
    assert!(w.try_reserve(usize::MAX / 8).is_err());
}

/// A collection that cannot report failure calls `handle_alloc_error`, whose default hook
/// prints the request and aborts: reachable with mimalloc as the global allocator.
#[cfg(target_pointer_width = "64")]
#[test]
fn child_handle_alloc_error_is_reached() {
    const BYTES: usize = 1 << 60;
    if is_child() {
        let v: Vec<u8> = Vec::with_capacity(BYTES);
        println!("SURVIVED {}", v.capacity());
        return;
    }
    let out = run_child("child_handle_alloc_error_is_reached", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the child survived: {stderr}");
    assert!(
        stderr.contains(&format!("memory allocation of {BYTES} bytes failed")),
        "no handle_alloc_error message: {stderr}"
    );
}
