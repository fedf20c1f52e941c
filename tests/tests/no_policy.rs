//! A build with the `no_policy` feature, for products that must not get a thread or a mapping
//! they did not ask for (sandboxes, programs that call `unshare(CLONE_NEWUSER)`): the policy's
//! functions answer `NotBuilt`, no thread starts however large the heap grows, and the heap
//! lives in mimalloc's own arena, which mimalloc advises for huge pages (`hg`) from its first
//! block, rather than in the policy's, kept in 4 KiB pages (`nh`) until the heap has grown.

use mimalloc::policy::{self, BackgroundPurge, HugePages, MemoryLimit};
use mimalloc::MiMalloc;
use mimalloc_tests::kernel::{self, has_flag, threads, vm_flags};
use mimalloc_tests::{in_child, is_child, keep};
use std::time::Duration;

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

#[test]
#[cfg_attr(
    not(all(feature = "no_policy", target_os = "linux")),
    ignore = "the `no_policy` build's test, on Linux (`bash .ci/run lane features`)"
)]
fn child_no_policy_starts_no_thread_and_leaves_the_arena_to_mimalloc() {
    const TEST: &str = "child_no_policy_starts_no_thread_and_leaves_the_arena_to_mimalloc";
    if !is_child() {
        in_child(TEST, &[]);
        return;
    }
    assert_eq!(policy::huge_pages(), HugePages::NotBuilt);
    assert_eq!(policy::background_purge(), BackgroundPurge::NotBuilt);
    assert_eq!(policy::memory_limit(), MemoryLimit::NotBuilt);
    let small = keep(Box::new(7u64));
    let flags = vm_flags(&*small as *const u64 as usize);
    assert!(
        !has_flag(&flags, "nh"),
        "no policy keeps the heap in small pages: {flags:?}"
    );
    if cfg!(target_pointer_width = "64") && kernel::shows_huge_pages(TEST) {
        assert!(
            has_flag(&flags, "hg"),
            "mimalloc advises its own arena: {flags:?}"
        );
    }
    let before = threads();
    // Well past the policy's thresholds, and longer than its thread takes to start.
    let heap = keep(vec![1u8; 4 * policy::PURGE_FROM]);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(kernel::purge_threads(), 0);
    assert_eq!(threads(), before, "no thread of the allocator's");
    drop((heap, small));
}
