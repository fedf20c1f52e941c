//! The named form of `assign_global!` in a `#![no_std]` crate of its own (this test does not
//! link the library, which installs the unnamed form).

#![no_std]

extern crate alloc;

mimalloc::assign_global!(pub static GLOBAL);

#[test]
fn the_named_static_is_a_mimalloc_and_allocations_work() {
    // Code that names the static keeps compiling under Miri, where it is not the global
    // allocator.
    let _: &mimalloc::MiMalloc = &GLOBAL;
    let v: alloc::vec::Vec<u32> = (0..5000).collect();
    assert_eq!(v.iter().map(|&x| u64::from(x)).sum::<u64>(), 12_497_500);
    #[cfg(not(miri))]
    assert!(mimalloc::heap::is_in_heap_region(v.as_ptr()));
}
