//! `stats_reset` (mimalloc 2 only), alone in its binary: it zeroes counters that the other
//! statistics tests read concurrently.
#![cfg(feature = "v2")]

mimalloc::assign_global!();

use mimalloc::{stats, Stats};

const MIB: i64 = 1 << 20;

/// mimalloc 2 resets its counters (mimalloc 3.3.2 cannot: there the function does not exist).
#[test]
fn reset_zeroes_the_counters() {
    let big = vec![1u8; 48 << 20];
    drop(big);
    mimalloc::collect(true);
    assert!(stats().mmap_calls > 0);
    mimalloc::stats_reset();
    let after: Stats = stats();
    assert!(after.mmap_calls <= 1, "counters were not reset: {after:?}");
    assert!(
        after.committed.peak < 48 * MIB,
        "the peak was not reset: {after:?}"
    );
}
