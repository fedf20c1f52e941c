//! `mi_stats_reset`, alone in its binary: with mimalloc 2 it zeroes counters that the other
//! statistics tests read concurrently.

mimalloc::assign_global!();

use mimalloc::stats::{self, Stats};

const MIB: i64 = 1 << 20;

/// Allocates and frees a 48 MiB block, so that the committed peak and the OS calls show it.
fn churn() -> Stats {
    let big = vec![1u8; 48 << 20];
    drop(big);
    mimalloc::heap::collect(true);
    let before = stats::read();
    assert!(before.mmap_calls > 0, "{before:?}");
    assert!(before.committed.peak >= 48 * MIB, "{before:?}");
    before
}

/// mimalloc 2 resets its counters. (With mimalloc 3 the crate has no `stats::reset`: see the
/// canary below.)
#[cfg(feature = "v2")]
#[test]
fn reset_zeroes_the_counters() {
    churn();
    mimalloc::stats::reset();
    let after: Stats = stats::read();
    assert!(after.mmap_calls <= 1, "counters were not reset: {after:?}");
    assert!(
        after.committed.peak < 48 * MIB,
        "the peak was not reset: {after:?}"
    );
}

/// A canary: mimalloc 3.6.0 declares `mi_stats_reset`, but as a deprecated function that merges
/// the main heap's statistics and resets nothing (`src/util/stats.c`), so the crate offers no
/// `stats::reset` with mimalloc 3 rather than one that silently does nothing
/// (`mimalloc/src/stats.rs`). When this fails, mimalloc 3 resets again: `stats::reset` can be
/// offered with both versions, and this becomes `reset_zeroes_the_counters` for both.
#[cfg(not(feature = "v2"))]
#[test]
fn mimalloc_3_stats_reset_resets_nothing() {
    let before = churn();
    // SAFETY: no preconditions.
    unsafe { mimalloc_sys::mi_stats_reset() };
    let after = stats::read();
    assert!(
        after.mmap_calls >= before.mmap_calls && after.committed.peak >= before.committed.peak,
        "mi_stats_reset reset the counters of mimalloc {}: give mimalloc 3 `stats_reset` and \
         turn this canary into a test of it\nbefore {before:?}\nafter {after:?}",
        mimalloc::Version::linked()
    );
}
