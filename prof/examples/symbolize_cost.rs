//! What symbolizing a snapshot in the process costs (`ProfilerOptions::symbolize`): the time of
//! a snapshot with and without it, and the resident memory the process keeps afterwards, over
//! the worked example's heap (BENCHMARKS.md#heap-profiling). Rounds alternate the two, each
//! with a profiler of its own (the option is the profiler's), and print medians:
//!
//! ```sh
//! cargo run --release -p mimalloc-prof --example symbolize_cost            # symbol table only
//! CARGO_PROFILE_RELEASE_DEBUG=line-tables-only cargo run --release -p mimalloc-prof --example symbolize_cost
//! ```

use mimalloc::profile::Profiler;
use std::hint::black_box;
use std::time::{Duration, Instant};

mimalloc::assign_global!();

const BLOCK: usize = 64 << 10;
const ROUNDS: usize = 7;
/// Longer than mimalloc's purge delay with the policy's multiplier (docs/memory-policy.md).
const QUIET: Duration = Duration::from_secs(3);

#[inline(never)]
fn keeps(bytes: usize) -> Vec<Vec<u8>> {
    let mut kept = Vec::with_capacity(bytes / BLOCK);
    for i in 0..kept.capacity() {
        kept.push(vec![i as u8; BLOCK]);
    }
    kept
}

/// One snapshot's time; the resident bytes it adds, at its end and once the memory it freed has
/// gone back to the OS (mimalloc's purge delay, then the background purge: `QUIET`), measured
/// from a process that has settled too.
fn one(symbolize: bool, base: &std::path::Path) -> (Duration, isize, isize) {
    let profiler = Profiler::options()
        .symbolize(symbolize)
        .start(base)
        .unwrap();
    let kept = black_box((keeps(48 << 20), keeps(8 << 20)));
    settle();
    let before = resident();
    let started = Instant::now();
    let bytes = profiler.snapshot_bytes().unwrap();
    let took = started.elapsed();
    drop(bytes);
    let at_end = resident();
    settle();
    let quiet = resident();
    drop((profiler, kept));
    (took, at_end - before, quiet - before)
}

/// The resident bytes of the process, as the kernel counts them (`/proc/self/statm`).
fn resident() -> isize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("Linux");
    let pages: isize = statm
        .split(' ')
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("statm");
    pages * 4096
}

/// Waits until what was freed has gone back to the OS.
fn settle() {
    std::thread::sleep(QUIET);
    mimalloc::heap::collect(true);
}

fn median<T: Ord + Copy>(mut values: Vec<T>) -> T {
    values.sort();
    values[values.len() / 2]
}

fn main() {
    let dir = std::env::temp_dir().join(format!("symbolize-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (mut plain, mut symbolized) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        // Alternating which goes first, so neither always meets a warmer process.
        for symbolize in [round % 2 == 0, round % 2 != 0] {
            let result = one(symbolize, &dir.join(format!("r{round}-{symbolize}")));
            if symbolize {
                &mut symbolized
            } else {
                &mut plain
            }
            .push(result);
        }
    }
    for (name, results) in [("plain", &plain), ("symbolized", &symbolized)] {
        let time = median(results.iter().map(|r| r.0).collect());
        let slowest = results.iter().map(|r| r.0).max().unwrap();
        let mib = |bytes: isize| bytes as f64 / (1 << 20) as f64;
        let at_end = median(results.iter().map(|r| r.1).collect());
        let quiet = median(results.iter().map(|r| r.2).collect());
        let quiet_max = results.iter().map(|r| r.2).max().unwrap();
        println!(
            "{name:>10}: snapshot {:.1} ms median, {:.1} ms slowest; resident added: {:+.2} MiB at its end, \
             {:+.2} MiB once quiet (median; {:+.2} MiB at most)",
            time.as_secs_f64() * 1e3,
            slowest.as_secs_f64() * 1e3,
            mib(at_end),
            mib(quiet),
            mib(quiet_max),
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
