//! The control for `global.rs`: a program that does *not* install mimalloc keeps the system
//! allocator, and mimalloc does not claim its memory. With the `override` feature the C
//! allocator itself is mimalloc (where the platform allows), so the same memory *is* claimed.

use std::collections::HashMap;

/// Whether `malloc` is mimalloc in this build: the `override` feature, except on Windows,
/// where a statically linked mimalloc cannot replace the CRT's allocator.
const C_MALLOC_IS_MIMALLOC: bool = cfg!(all(feature = "override", not(windows)));

#[test]
fn collections_come_from_the_system_allocator() {
    let boxed = Box::new([7u64; 4]);
    let vec: Vec<u32> = (0..1000).collect();
    let string = "served by the system allocator".repeat(10);
    let map: HashMap<i32, String> = (0..100).map(|i| (i, i.to_string())).collect();
    let expected = C_MALLOC_IS_MIMALLOC;
    assert_eq!(mimalloc::heap::is_in_heap_region(&*boxed), expected, "Box");
    assert_eq!(
        mimalloc::heap::is_in_heap_region(vec.as_ptr()),
        expected,
        "Vec"
    );
    assert_eq!(
        mimalloc::heap::is_in_heap_region(string.as_ptr()),
        expected,
        "String"
    );
    assert!(
        map.values()
            .all(|v| mimalloc::heap::is_in_heap_region(v.as_ptr()) == expected),
        "HashMap values"
    );

    // ...while a block mimalloc does allocate is recognised, so the check above can tell.
    let layout = std::alloc::Layout::new::<[u64; 4]>();
    // SAFETY: non-zero size; freed right after the check.
    unsafe {
        use std::alloc::GlobalAlloc;
        let p = mimalloc::MiMalloc.alloc(layout);
        assert!(mimalloc::heap::is_in_heap_region(p));
        mimalloc::MiMalloc.dealloc(p, layout);
    }
}

#[test]
fn c_malloc_is_mimalloc_only_with_override() {
    // SAFETY: plain C allocation, checked and freed with the matching `free`.
    unsafe {
        let p = libc::malloc(100);
        assert!(!p.is_null());
        assert_eq!(
            mimalloc::heap::is_in_heap_region(p),
            C_MALLOC_IS_MIMALLOC,
            "malloc(100)"
        );
        libc::free(p);
    }
}
