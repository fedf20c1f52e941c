//! The memory policy's arenas (`policy/reserved.rs`): the first is reserved when the program loads,
//! in whole huge pages of mimalloc's `arena_reserve`, backed as the heap's stage says; the next
//! once the heap has committed three quarters of them, large enough for the block that asked;
//! all of them counted in the `reserved` statistic; and none where mimalloc reserved memory for
//! the heap itself. Read from the policy's notes (`MIMALLOC_VERBOSE=1`), the statistics and the
//! kernel's view of the mappings.

use mimalloc::policy::{self, HugePages};
use mimalloc::MiMalloc;
use mimalloc_tests::kernel::{self, has_flag, vm_flags};
use mimalloc_tests::{in_child, is_child, keep, policy_lines};

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

const MIB: usize = 1 << 20;

/// An arena as the policy's note describes it: (its number, MiB, start, backing).
fn arena_notes(lines: &[String]) -> Vec<(usize, usize, usize, String)> {
    lines
        .iter()
        .filter_map(|line| {
            let rest = line.strip_prefix("mimalloc: policy: heap arena ")?;
            let (number, rest) = rest.split_once(" of ")?;
            let (mib, rest) = rest.split_once(" MiB at 0x")?;
            let (start, rest) = rest.split_once(" (")?;
            let backing = rest.strip_suffix(" pages)")?;
            Some((
                number.parse().ok()?,
                mib.parse().ok()?,
                usize::from_str_radix(start, 16).ok()?,
                backing.to_owned(),
            ))
        })
        .collect()
}

fn reserved() -> usize {
    mimalloc::stats::read().reserved.current as usize
}

fn committed() -> usize {
    mimalloc::stats::read().committed.current as usize
}

/// With `arena_reserve` at 33 MiB the first arena is 32 MiB (whole huge pages), counted in
/// `reserved`. Blocks of 2 MiB grow the heap until, before the block that takes it to three
/// quarters of 32 MiB, the second arena is reserved: 66 MiB, room for the block and mimalloc's
/// 64 MiB of metadata. Both are backed as the heap stands: 4 KiB pages (`nh`) for a heap that
/// never switches, huge pages (`hg`) for one that has them from the start.
#[test]
#[cfg_attr(
    not(mimalloc_adaptive_thp),
    ignore = "this build has no policy arenas (mimalloc 3 on 64-bit Linux)"
)]
fn child_arenas_are_sized_backed_and_counted() {
    const TEST: &str = "child_arenas_are_sized_backed_and_counted";
    if !is_child() {
        if !kernel::shows_mappings(TEST) {
            return;
        }
        for (from, backing) in [("off", "Small"), ("0", "Huge")] {
            let env = [
                ("MIMALLOC_ARENA_RESERVE", "33MiB"),
                ("MIMALLOC_HUGE_PAGES_FROM", from),
                ("MIMALLOC_VERBOSE", "1"),
            ];
            let out = in_child(TEST, &env);
            let arenas = arena_notes(&policy_lines(&out.stderr));
            let sizes: Vec<_> = arenas.iter().map(|a| (a.0, a.1, a.3.as_str())).collect();
            assert_eq!(sizes, [(1, 32, backing), (2, 66, backing)], "from {from}");
            for arena in &arenas {
                assert_eq!(
                    arena.2 % (2 * MIB),
                    0,
                    "arena {} at {:#x}",
                    arena.0,
                    arena.2
                );
            }
        }
        return;
    }
    let stage = policy::huge_pages();
    let first = keep(vec![1u8; 4096]);
    let flags = vm_flags(first.as_ptr() as usize);
    match stage {
        HugePages::Off => assert!(has_flag(&flags, "nh"), "{flags:?}"),
        HugePages::Huge => assert!(has_flag(&flags, "hg"), "{flags:?}"),
        other => panic!("{other:?}"),
    }
    // The first arena and what mimalloc reserved itself (a few MiB of its own metadata).
    let before = reserved();
    assert!((32 * MIB..40 * MIB).contains(&before), "reserved {before}");
    let mut blocks = Vec::with_capacity(64);
    let at = loop {
        assert!(
            blocks.len() < 32,
            "no second arena: reserved {}",
            reserved()
        );
        let at = committed();
        blocks.push(keep(vec![1u8; 2 * MIB]));
        // An arena, not the few KiB of metadata mimalloc may map meanwhile.
        if reserved() >= before + 32 * MIB {
            break at;
        }
    };
    let grown = reserved() - before;
    println!("second arena before a block at {at} bytes committed, reserved +{grown}");
    assert!((66 * MIB..70 * MIB).contains(&grown), "reserved +{grown}");
    // The policy looks before the block is served, with the block counted in.
    assert!(at + 2 * MIB >= 24 * MIB, "too early: {at}");
    assert!(at + 2 * MIB < 27 * MIB, "too late: {at}");
    drop((first, blocks));
}

/// Where mimalloc reserves memory at start-up (`MIMALLOC_RESERVE_OS_MEMORY`, or huge OS pages
/// with `MIMALLOC_RESERVE_HUGE_OS_PAGES`), that memory holds the heap: the policy reserves no
/// arena, says so, and leaves huge pages off.
#[test]
#[cfg_attr(
    not(mimalloc_adaptive_thp),
    ignore = "this build has no policy arenas (mimalloc 3 on 64-bit Linux)"
)]
fn child_memory_mimalloc_reserved_holds_the_heap() {
    const TEST: &str = "child_memory_mimalloc_reserved_holds_the_heap";
    if is_child() {
        assert_eq!(policy::huge_pages(), HugePages::Off);
        assert_eq!(policy::set_huge_pages_from(Some(0)), HugePages::Off);
        return;
    }
    for reserve in [
        ("MIMALLOC_RESERVE_OS_MEMORY", "64MiB"),
        ("MIMALLOC_RESERVE_HUGE_OS_PAGES", "1"),
    ] {
        let out = in_child(TEST, &[reserve, ("MIMALLOC_VERBOSE", "1")]);
        let lines = policy_lines(&out.stderr);
        assert_eq!(
            lines,
            ["mimalloc: policy: the heap is in the memory mimalloc reserved at start-up"],
            "{reserve:?}"
        );
    }
}

/// The policy's arenas belong to no NUMA node: on a machine of several nodes (as mimalloc
/// counts them with `MIMALLOC_USE_NUMA_NODES=2`), once mimalloc has reserved an arena of its
/// own beside them (here: blocks of 64 KiB or less, which do not make the policy look, past the
/// first arena), the heap's next block still comes from the policy's first arena, as a thread's
/// search starts there, in 4 KiB pages (`nh`) for a heap that never switches.
#[test]
#[cfg_attr(
    not(mimalloc_adaptive_thp),
    ignore = "this build has no policy arenas (mimalloc 3 on 64-bit Linux)"
)]
fn child_the_policys_arenas_belong_to_no_numa_node() {
    const TEST: &str = "child_the_policys_arenas_belong_to_no_numa_node";
    if !is_child() {
        if kernel::shows_mappings(TEST) {
            let env = [
                ("MIMALLOC_USE_NUMA_NODES", "2"),
                ("MIMALLOC_ARENA_RESERVE", "32MiB"),
                ("MIMALLOC_HUGE_PAGES_FROM", "off"),
                ("MIMALLOC_VERBOSE", "1"),
            ];
            in_child(TEST, &env);
        }
        return;
    }
    let before = reserved();
    // A hole in the first arena, left once the heap has outgrown it.
    let hole = vec![1u8; 512 << 10];
    let blocks: Vec<Vec<u8>> = (0..720).map(|_| vec![1u8; 48 << 10]).collect();
    assert!(reserved() > before, "mimalloc reserved no arena of its own");
    drop(hole);
    let block = keep(vec![1u8; 512 << 10]);
    let flags = vm_flags(block.as_ptr() as usize);
    assert!(has_flag(&flags, "nh"), "{flags:?}");
    drop(blocks);
}

/// A block of 2 MiB or more outside the policy's arenas is advised for huge pages itself, in a
/// heap that has them: here one in the arena mimalloc reserved of its own once blocks under
/// 64 KiB or less (which do not make the policy look) had filled the policy's first arena.
#[test]
#[cfg_attr(
    not(mimalloc_adaptive_thp),
    ignore = "this build has no policy arenas (mimalloc 3 on 64-bit Linux)"
)]
fn child_a_large_block_outside_the_policys_arenas_is_advised() {
    const TEST: &str = "child_a_large_block_outside_the_policys_arenas_is_advised";
    if !is_child() {
        if !kernel::shows_mappings(TEST) {
            return;
        }
        let env = [
            ("MIMALLOC_ARENA_RESERVE", "32MiB"),
            ("MIMALLOC_HUGE_PAGES_FROM", "0"),
            ("MIMALLOC_VERBOSE", "1"),
        ];
        let out = in_child(TEST, &env);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let block = stdout
            .split("large block at 0x")
            .nth(1)
            .and_then(|rest| usize::from_str_radix(rest.split_whitespace().next()?, 16).ok())
            .expect("the child's block");
        let arenas = arena_notes(&policy_lines(&out.stderr));
        let inside = arenas
            .iter()
            .any(|a| (a.2..a.2 + a.1 * MIB).contains(&block));
        assert!(
            !inside,
            "the block {block:#x} is in a policy arena: {arenas:?}"
        );
        return;
    }
    let before = reserved();
    let blocks: Vec<Vec<u8>> = (0..1024).map(|_| vec![1u8; 48 << 10]).collect();
    assert!(reserved() > before, "mimalloc reserved no arena of its own");
    let large: Vec<u8> = Vec::with_capacity(8 * MIB);
    let start = large.as_ptr() as usize;
    println!("large block at {start:#x}");
    let whole = (start + 2 * MIB - 1) & !(2 * MIB - 1);
    let flags = vm_flags(whole);
    assert!(has_flag(&flags, "hg"), "{flags:?}");
    drop((blocks, large));
}
