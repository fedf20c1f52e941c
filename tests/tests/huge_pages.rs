//! Huge pages for large blocks in a small heap: where the memory policy decides huge pages
//! (mimalloc 3 on 64-bit Linux, `cfg(mimalloc_adaptive_thp)`) and the heap is kept in 4 KiB
//! pages (`MIMALLOC_HUGE_PAGES_FROM=off`), a block of 2 MiB or more is still advised for
//! transparent huge pages (the kernel shows `hg` in the mapping's `VmFlags`), and the rest of
//! the heap's memory is not; `MIMALLOC_ALLOW_THP=0` turns the advice off. `policy.rs` tests the
//! heap's switch itself.

use mimalloc::MiMalloc;
use mimalloc_tests::kernel::{self, has_flag, vm_flags};
use mimalloc_tests::{in_child, is_child};

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

const HUGE_PAGE: usize = 2 << 20;

/// A large block, in a fresh process; returns whether the memory of mimalloc's arena a few huge
/// pages past it (where no large block has been) and the block's first whole huge page are
/// advised for huge pages.
fn advised() -> (bool, bool) {
    let large: Vec<u8> = Vec::with_capacity(8 * HUGE_PAGE);
    let start = large.as_ptr() as usize;
    let first_huge_page = (start + HUGE_PAGE - 1) & !(HUGE_PAGE - 1);
    // Past the huge page the block ends in, which the advice takes in whole, and within the
    // arena of 1 GiB that the policy reserves at start-up and mimalloc carved the block from.
    let beyond = ((start + large.capacity()) & !(HUGE_PAGE - 1)) + 2 * HUGE_PAGE;
    (
        has_flag(&vm_flags(beyond), "hg"),
        has_flag(&vm_flags(first_huge_page), "hg"),
    )
}

#[test]
#[cfg_attr(
    not(mimalloc_adaptive_thp),
    ignore = "this build leaves huge pages to mimalloc (the policy decides them with mimalloc 3 on 64-bit Linux only)"
)]
fn large_blocks_and_only_they_are_advised_for_huge_pages() {
    const TEST: &str = "large_blocks_and_only_they_are_advised_for_huge_pages";
    if !kernel::shows_huge_pages(TEST) {
        return;
    }
    if !is_child() {
        // In a child of its own, so that no other test's blocks share the ranges, with the
        // option as the build sets it, and a heap that never switches as a whole.
        let small_heap = ("MIMALLOC_HUGE_PAGES_FROM", "off");
        let out = in_child(TEST, &[("MIMALLOC_ALLOW_THP", "1"), small_heap]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("advised: beyond false, large true"), "{text}");
        let out = in_child(TEST, &[("MIMALLOC_ALLOW_THP", "0"), small_heap]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("advised: beyond false, large false"),
            "{text}"
        );
        return;
    }
    let (beyond, large) = advised();
    println!("advised: beyond {beyond}, large {large}");
}
