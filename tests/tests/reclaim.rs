//! Memory returns to the OS: after a large working set is freed and `collect(true)` runs,
//! mimalloc's committed memory drops back, so a long-running service does not grow without
//! bound. The only test of its binary, so that the process-wide figures are its own.

use mimalloc::MiMalloc;
use mimalloc_tests::resident_bytes;
use std::alloc::{GlobalAlloc, Layout};

const MIB: usize = 1 << 20;

/// The process's memory at one moment: mimalloc's statistics, then the OS's resident set.
struct Snapshot {
    stats: mimalloc::Stats,
    rss: Option<usize>,
}

impl Snapshot {
    /// Takes mimalloc's statistics first and the resident set second, in that order.
    fn take() -> Snapshot {
        let stats = mimalloc::stats();
        let rss = resident_bytes();
        Snapshot { stats, rss }
    }

    /// mimalloc's committed statistic.
    fn committed(&self) -> i64 {
        self.stats.committed.current
    }
}

#[test]
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
    if mimalloc_tests::memory_tool() == Some("AddressSanitizer") {
        // Measured with mimalloc 3.6.0: 153 of 512 MiB still resident after the purge, where
        // the plain build returns all but a few: the resident set also holds AddressSanitizer's
        // shadow (an eighth of every byte touched) and its quarantine of freed memory.
        return mimalloc_tests::skip(
            "freed_working_set_is_returned_after_collect",
            "under AddressSanitizer the resident set holds the sanitizer's shadow and quarantine",
        );
    }
    let working_set = working_set_size();
    mimalloc::collect(true);
    let before = Snapshot::take();

    let blocks = allocate_working_set(working_set);
    let peak = Snapshot::take();
    free_blocks(blocks);
    mimalloc::collect(true);
    let after = Snapshot::take();

    print_figures(working_set, &before, &peak, &after);
    assert!(
        peak.committed() - before.committed() >= (working_set as i64) * 9 / 10,
        "the working set was not committed: the test measures nothing"
    );
    let (name, grown) = still_held(working_set, &before, &peak, &after);
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

/// Frees, in allocation order, the blocks `allocate_working_set` returned.
fn free_blocks(blocks: Vec<(*mut u8, Layout)>) {
    for (p, layout) in blocks {
        // SAFETY: each block is live and freed once.
        unsafe { MiMalloc.dealloc(p, layout) };
    }
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

/// What of the working set is still held after collect, and by which measure.
///
/// Nearly all of it is returned: what stays is mimalloc's metadata and caches. Where the OS
/// tells the resident set, that is what counts (purged memory may stay "committed" in
/// mimalloc's accounts, see `mimalloc::Stats::committed`); elsewhere the statistic has to do.
fn still_held(
    working_set: usize,
    before: &Snapshot,
    peak: &Snapshot,
    after: &Snapshot,
) -> (&'static str, usize) {
    match (before.rss, peak.rss, after.rss) {
        (Some(before), Some(peak), Some(after)) => {
            assert!(
                peak - before.min(peak) >= working_set * 9 / 10,
                "the working set was not resident: the test measures nothing"
            );
            ("resident", after.saturating_sub(before))
        }
        _ => (
            "committed",
            (after.committed() - before.committed()).max(0) as usize,
        ),
    }
}
