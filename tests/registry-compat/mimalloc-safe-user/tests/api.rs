use core::alloc::{GlobalAlloc, Layout};
use mimalloc_safe::MiMalloc;

/// mimalloc 2 or 3, whichever the dependency line chose (the registry's `mimalloc` and ours
/// default to 3, `mimalloc-safe` to 2).
#[test]
fn version_is_a_mimalloc_release() {
    let v = mimalloc_safe_user::allocator_version();
    assert!(v.starts_with("2.") || v.starts_with("3."), "{v}");
}

#[test]
fn usable_size_covers_the_request() {
    for n in [1, 24, 1000, 65536, 3 << 20] {
        assert!(mimalloc_safe_user::usable_bytes(n) >= n, "{n}");
    }
}

#[test]
fn the_allocator_as_a_value() {
    let layout = Layout::from_size_align(5000, 64).unwrap();
    // SAFETY: a non-zero size; the block is written within its size and freed once.
    unsafe {
        let p = MiMalloc.alloc(layout);
        assert!(!p.is_null() && p as usize % 64 == 0);
        p.write_bytes(7, 5000);
        assert!(MiMalloc.usable_size(p) >= 5000);
        MiMalloc.dealloc(p, layout);
    }
}
