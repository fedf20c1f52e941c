//! `core::alloc::Allocator` (the `nightly` feature): the standard collections in a heap.
//! Run by `.ci/run full` (lane `nightly`) with `cargo +nightly test -p mimalloc-tests --features nightly`.
#![cfg(feature = "nightly")]
#![feature(allocator_api)]

use mimalloc::{Heap, MiMalloc};
use std::collections::VecDeque;

#[test]
fn std_collections_in_a_heap() {
    let heap = Heap::new();
    let mut v: Vec<u64, &Heap> = Vec::new_in(&heap);
    v.extend(0..10_000);
    let b = Box::new_in([7u8; 100], &heap);
    let mut q = VecDeque::new_in(&heap);
    q.push_back("in a heap");
    assert!(
        heap.contains(v.as_ptr()) && heap.contains(&*b) && heap.contains(q.as_slices().0.as_ptr())
    );
    assert_eq!(v.iter().sum::<u64>(), 49_995_000);
    v.shrink_to(100);
    v.truncate(10);
    v.shrink_to_fit();
    assert_eq!(v, (0..10).collect::<Vec<u64>>());
}

#[test]
fn std_collections_with_mimalloc() {
    let mut v: Vec<u8, MiMalloc> = Vec::with_capacity_in(1000, MiMalloc);
    v.resize(1 << 20, 9);
    assert!(mimalloc::heap::is_in_heap_region(v.as_ptr()));
    assert!(v.try_reserve(isize::MAX as usize / 2).is_err());
}
