//! A `#![no_std]` product on mimalloc: `std` is not in scope here, so whatever
//! `assign_global!` expands to must not name it. Its tests run natively (mimalloc serves the
//! blocks) and under Miri (`cargo +nightly miri test -p mimalloc-test-no-std-product`), where
//! the macro must install an allocator that Miri can run.

#![no_std]

extern crate alloc;

use alloc::string::String;
use alloc::vec::Vec;

mimalloc::assign_global!();

/// What a library does with the heap: a growing `Vec` and a `String`, returned to the caller.
pub fn squares_and_label(n: u32) -> (Vec<u64>, String) {
    let mut squares = Vec::new();
    let mut label = String::new();
    for i in 0..n {
        squares.push(u64::from(i) * u64::from(i));
        label.push(char::from(b'a' + (i % 26) as u8));
    }
    (squares, label)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_work_and_hold_their_contents() {
        let (squares, label) = squares_and_label(1000);
        assert_eq!(squares.len(), 1000);
        assert_eq!(squares[999], 998_001);
        assert!(label.starts_with("abcdefghijklmnopqrstuvwxyzab"));
        let boxed = alloc::boxed::Box::new([7u8; 4096]);
        assert!(boxed.iter().all(|&b| b == 7));
    }

    /// Natively the product's blocks come from mimalloc. (Under Miri they cannot: the test
    /// above having run at all shows that the macro installed an allocator Miri can run.)
    #[test]
    #[cfg_attr(miri, ignore = "Miri cannot run mimalloc's C")]
    fn blocks_come_from_mimalloc_natively() {
        let v = alloc::vec![1u8; 100];
        #[cfg(not(miri))]
        assert!(mimalloc::heap::is_in_heap_region(v.as_ptr()));
        drop(v);
    }
}
