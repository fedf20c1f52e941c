use core::alloc::{GlobalAlloc, Layout};
use mimalloc::MiMalloc;

/// mimalloc 2 or 3, whichever the dependency line chose (the registry's `mimalloc` and ours
/// default to 3, `mimalloc-safe` to 2).
#[test]
fn version_is_a_mimalloc_release() {
    let v = mimalloc_user::allocator_version();
    assert!(v.starts_with("2.") || v.starts_with("3."), "{v}");
}

#[test]
fn usable_size_covers_the_request() {
    for n in [1, 8, 100, 4096, 1 << 20] {
        assert!(mimalloc_user::usable_bytes(n) >= n, "{n}");
    }
}

#[test]
fn stats_json_is_a_document_that_counts_this_program() {
    let keep: Vec<Box<[u8; 64]>> = (0..1000).map(|_| Box::new([1; 64])).collect();
    let doc = mimalloc_user::stats_document();
    assert!(
        doc.starts_with('{') && doc.trim_end().ends_with('}'),
        "{doc}"
    );
    assert!(doc.contains("\"malloc_requested\""), "{doc}");
    drop(keep);
}

#[test]
fn the_allocator_as_a_value() {
    let layout = Layout::from_size_align(48, 16).unwrap();
    // SAFETY: a non-zero size; the block is written within its size and freed once.
    unsafe {
        let p = MiMalloc.alloc_zeroed(layout);
        assert!(!p.is_null() && p as usize % 16 == 0);
        assert!((0..48).all(|i| *p.add(i) == 0));
        let q = MiMalloc.realloc(p, layout, 4096);
        assert!(!q.is_null() && MiMalloc.usable_size(q) >= 4096);
        MiMalloc.dealloc(q, Layout::from_size_align(4096, 16).unwrap());
    }
}
