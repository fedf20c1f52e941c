//! A program that installs mimalloc with `assign_global!()`: the standard collections really
//! get their memory from mimalloc. (Pointers are checked with mimalloc's own map of its memory;
//! exact allocation counts are not asserted, since the compiler may remove allocations.)

mimalloc::assign_global!();

use std::collections::HashMap;

fn served_by_mimalloc<T: ?Sized>(ptr: *const T) -> bool {
    // SAFETY: every pointer passed here is a live heap allocation of this program.
    mimalloc::heap::is_in_heap_region(ptr) && unsafe { mimalloc::heap::usable_size(ptr) } > 0
}

#[test]
fn collections_come_from_mimalloc() {
    let boxed = Box::new([7u64; 4]);
    let vec: Vec<u32> = (0..1000).collect();
    let string = "served by mimalloc".repeat(10);
    let mut map = HashMap::new();
    for i in 0..100 {
        map.insert(i, i.to_string());
    }
    assert!(served_by_mimalloc(&*boxed), "Box");
    assert!(served_by_mimalloc(vec.as_ptr()), "Vec");
    assert!(served_by_mimalloc(string.as_ptr()), "String");
    assert!(
        map.values().all(|v| served_by_mimalloc(v.as_ptr())),
        "HashMap values"
    );
    let big = vec![0u8; 64 << 20];
    assert!(served_by_mimalloc(big.as_ptr()), "a 64 MiB Vec");
}

#[test]
fn memory_is_reused_after_free() {
    let first = Box::new([1u8; 48]);
    let addr = &*first as *const [u8; 48] as usize;
    drop(first);
    // mimalloc's free list is per page and LIFO within it: the same thread gets the block back
    // after the page's fresh blocks are used up. Allocate until it comes back.
    let mut keep = Vec::new();
    let reused = (0..100_000).any(|_| {
        let b = Box::new([2u8; 48]);
        let same = &*b as *const [u8; 48] as usize == addr;
        keep.push(b);
        same
    });
    assert!(reused, "a freed 48-byte block was never handed out again");
}

#[test]
fn threads_allocate_from_mimalloc_too() {
    let handles: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                let v = vec![t as u8; 10_000];
                served_by_mimalloc(v.as_ptr())
            })
        })
        .collect();
    for h in handles {
        assert!(h.join().unwrap());
    }
}
