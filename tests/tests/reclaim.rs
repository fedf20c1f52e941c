//! Memory returns to the OS: after a large working set is freed and `collect(true)` runs,
//! mimalloc's committed memory drops back, so a long-running service does not grow without
//! bound. The only test of its binary, so that the process-wide figures are its own.

use mimalloc::MiMalloc;
use mimalloc_tests::resident_bytes;
use std::alloc::{GlobalAlloc, Layout};

const MIB: usize = 1 << 20;

/// The process's memory at one moment: mimalloc's statistics, then the OS's resident set.
struct Snapshot {
    stats: mimalloc::stats::Stats,
    rss: Option<usize>,
}

impl Snapshot {
    /// Takes mimalloc's statistics first and the resident set second, in that order.
    fn take() -> Snapshot {
        let stats = mimalloc::stats::read();
        let rss = resident_bytes();
        Snapshot { stats, rss }
    }

    /// mimalloc's committed statistic.
    fn committed(&self) -> i64 {
        self.stats.committed.current
    }
}

/// Not under AddressSanitizer: measured with mimalloc 3.6.0, 153 of 512 MiB were still resident
/// after the purge, where the plain build returns all but a few: the resident set also holds
/// the sanitizer's shadow (an eighth of every byte touched) and its quarantine of freed memory.
#[test]
#[cfg_attr(
    feature = "asan",
    ignore = "under AddressSanitizer the resident set holds the sanitizer's shadow and quarantine"
)]
fn freed_working_set_is_returned_after_collect() {
    if mimalloc_tests::emulator().as_deref() == Some("qemu") {
        // Under qemu-user on this machine, mimalloc's forced purge leaves the committed
        // statistic where it was, reproducibly when the test's output goes to a file and never
        // when it goes to a pipe; native 32- and 64-bit runs and Wine pass. Not understood.
        return mimalloc_tests::skip(
            "freed_working_set_is_returned_after_collect",
            "under qemu-user the purge's effect depends on the emulator's environment",
        );
    }
    let working_set = working_set_size();
    mimalloc::heap::collect(true);
    let before = Snapshot::take();

    let blocks = allocate_working_set(working_set);
    let peak = Snapshot::take();
    let ranges = free_blocks(blocks);
    mimalloc::heap::collect(true);
    let after = Snapshot::take();
    let os_committed = os_committed_within(&ranges);

    print_figures(working_set, &before, &peak, &after);
    assert!(
        peak.committed() - before.committed() >= (working_set as i64) * 9 / 10,
        "the working set was not committed: the test measures nothing"
    );
    let (name, grown) = match still_held(working_set, &before, &peak, &after, os_committed) {
        Some(held) => held,
        None => {
            return mimalloc_tests::skip(
                "freed_working_set_is_returned_after_collect",
                "the OS tells neither this process's resident set nor the commit state of its \
                 pages here; mimalloc's own committed figure is no evidence (on systems that \
                 overcommit it stays high by design)",
            )
        }
    };
    assert!(
        grown <= working_set / 10,
        "{} MiB of the {} MiB working set is still {name} after collect(true)",
        grown >> 20,
        working_set >> 20
    );
}

/// The bytes the test allocates: large enough that what stays after collect is clearly less.
fn working_set_size() -> usize {
    if cfg!(target_pointer_width = "64") {
        512 * MIB
    } else {
        128 * MIB
    }
}

/// Allocates and touches blocks of all kinds (small and medium pages, large blocks, huge ones)
/// until they add up to `working_set` bytes.
fn allocate_working_set(working_set: usize) -> Vec<(*mut u8, Layout)> {
    let sizes = [64, 1000, 8 << 10, 100 << 10, MIB, 6 * MIB];
    let mut blocks = Vec::new();
    let mut total = 0;
    let mut i = 0;
    while total < working_set {
        let layout = Layout::from_size_align(sizes[i % sizes.len()], 8).unwrap();
        // SAFETY: non-zero size; every block is touched within its size and freed once (by
        // `free_blocks`).
        unsafe {
            let p = MiMalloc.alloc(layout);
            assert!(!p.is_null());
            p.write_bytes(0xC3, layout.size());
            blocks.push((p, layout));
        }
        total += layout.size();
        i += 1;
    }
    blocks
}

/// Frees, in allocation order, the blocks `allocate_working_set` returned; returns where they
/// were (address and size).
fn free_blocks(blocks: Vec<(*mut u8, Layout)>) -> Vec<(usize, usize)> {
    let ranges = blocks
        .iter()
        .map(|&(p, layout)| (p as usize, layout.size()))
        .collect();
    for (p, layout) in blocks {
        // SAFETY: each block is live and freed once.
        unsafe { MiMalloc.dealloc(p, layout) };
    }
    ranges
}

/// How many bytes of the given (freed, disjoint) ranges the OS still has committed for this
/// process, where it can be asked about given addresses: Windows, through `VirtualQuery`. Wine
/// keeps every page's state itself (it implements `VirtualFree`'s decommit), so the answer is
/// the emulated OS's own there too, where the resident set is made up.
#[cfg(windows)]
fn os_committed_within(ranges: &[(usize, usize)]) -> Option<usize> {
    use std::mem::{size_of, MaybeUninit};
    /// `MEMORY_BASIC_INFORMATION`.
    #[allow(dead_code)] // the layout is the OS's: every field is there, not every one is read
    #[repr(C)]
    struct MemoryBasicInformation {
        base_address: usize,
        allocation_base: usize,
        allocation_protect: u32,
        #[cfg(target_pointer_width = "64")]
        partition_id: u16,
        region_size: usize,
        state: u32,
        protect: u32,
        kind: u32,
    }
    const MEM_COMMIT: u32 = 0x1000;
    extern "system" {
        fn VirtualQuery(
            address: *const u8,
            buffer: *mut MemoryBasicInformation,
            length: usize,
        ) -> usize;
    }
    let mut committed = 0;
    for &(start, len) in ranges {
        let end = start + len;
        let mut at = start;
        while at < end {
            let mut info = MaybeUninit::<MemoryBasicInformation>::uninit();
            // SAFETY: VirtualQuery only asks the OS about the address (any address is allowed;
            // no memory there is read) and writes at most `length` bytes to `info`.
            let filled = unsafe {
                VirtualQuery(
                    at as *const u8,
                    info.as_mut_ptr(),
                    size_of::<MemoryBasicInformation>(),
                )
            };
            if filled == 0 {
                return None;
            }
            // SAFETY: a non-zero return means VirtualQuery filled in `info`.
            let info = unsafe { info.assume_init() };
            let upto = (info.base_address + info.region_size).min(end);
            if info.state == MEM_COMMIT {
                committed += upto - at;
            }
            at = upto;
        }
    }
    Some(committed)
}

#[cfg(not(windows))]
fn os_committed_within(_ranges: &[(usize, usize)]) -> Option<usize> {
    None
}

/// Prints the committed and resident figures at the three moments, for the CI log.
fn print_figures(working_set: usize, before: &Snapshot, peak: &Snapshot, after: &Snapshot) {
    let mib = |b: Option<usize>| b.map(|b| (b >> 20).to_string());
    println!(
        "working set {} MiB; committed (mimalloc's statistic): {} / {} / {} MiB; resident: \
         {:?} / {:?} / {:?} MiB (before / with the working set / after collect)",
        working_set >> 20,
        before.committed() >> 20,
        peak.committed() >> 20,
        after.committed() >> 20,
        mib(before.rss),
        mib(peak.rss),
        mib(after.rss),
    );
}

/// What of the working set is still held after collect, by the OS's measure; `None` where the
/// OS cannot tell.
///
/// Nearly all of it is returned: what stays is mimalloc's metadata and caches. Where the OS
/// tells the resident set (Linux, macOS, Windows), that is what counts: purged memory may stay
/// "committed" in mimalloc's accounts, see `mimalloc::stats::Stats::committed`. Under Wine, whose
/// resident set is made up, the pages of the freed blocks still committed, by `VirtualQuery`.
fn still_held(
    working_set: usize,
    before: &Snapshot,
    peak: &Snapshot,
    after: &Snapshot,
    os_committed: Option<usize>,
) -> Option<(&'static str, usize)> {
    match (before.rss, peak.rss, after.rss) {
        (Some(before), Some(peak), Some(after)) => {
            assert!(
                peak - before.min(peak) >= working_set * 9 / 10,
                "the working set was not resident: the test measures nothing"
            );
            Some(("resident", after.saturating_sub(before)))
        }
        _ => os_committed.map(|bytes| ("committed (VirtualQuery) in the freed blocks", bytes)),
    }
}
