//! A bursty service: four bursts of about 128 MiB of small objects (32-512 bytes), each built,
//! read back and freed, and after each half a second of light traffic (one small allocation a
//! millisecond). The bursts and the first three pauses are the run, timed by its CPU time
//! ([`Timing::Cpu`]: its wall time is mostly the pauses); the last pause is the quiet phase,
//! after which the process reads its resident memory. An allocator that gives a freed burst
//! back during a pause ends lean and pays for it in the next burst's page faults; one that
//! keeps it runs the bursts in memory it already has and ends holding a burst. The pause is
//! shorter than mimalloc 3's default delay before freed arena memory is purged (`purge_delay`
//! x `arena_purge_mult`, 1 s x 4), which is what this workload puts to the test.

use crate::{Outcome, Run, Scale, Timing, Workload, idle, mix};

pub const WORKLOAD: Workload = Workload {
    name: "bursty",
    summary: "4 bursts of 128 MiB of small objects, each dropped and followed by 500 ms of light traffic (CPU time); resident memory then",
    prepare,
    timing: Timing::Cpu,
    quiet: Some(last_pause),
};

const MIB: usize = 1 << 20;
const BURSTS: usize = 4;
/// The bytes of one burst's objects at full scale.
const BURST: usize = 128 * MIB;
/// The light traffic after each burst, at full scale.
const PAUSE_MS: usize = 500;

fn prepare(scale: Scale) -> Run {
    let bursts: Vec<Run> = (0..BURSTS)
        .map(|_| idle::prepare_burst(scale.of(BURST)))
        .collect();
    Box::new(move || {
        let mut bursts = bursts.into_iter();
        let first = bursts.next().expect("at least one burst");
        // A pause between each two bursts; the one after the last is the quiet phase.
        bursts.fold(first(), |sum, burst| {
            idle::traffic(scale.of(PAUSE_MS));
            let outcome = burst();
            Outcome {
                checksum: mix(sum.checksum, outcome.checksum),
                expected: mix(sum.expected, outcome.expected),
            }
        })
    })
}

/// The pause after the last burst, then the resident memory.
fn last_pause(scale: Scale) -> Option<u64> {
    idle::traffic(scale.of(PAUSE_MS));
    idle::resident_kib()
}

#[cfg(test)]
mod tests {
    use super::WORKLOAD;
    use crate::Scale;
    use crate::tests::allocated_here;
    use std::time::{Duration, Instant};

    /// The quick run builds its four bursts (a fiftieth of 128 MiB of objects each) and pauses
    /// between them; it is one thread, so this thread's allocations are the run's.
    #[test]
    fn the_quick_run_builds_every_burst_and_pauses_between_them() {
        let run = (WORKLOAD.prepare)(Scale::Quick);
        let (before, start) = (allocated_here(), Instant::now());
        assert!(run().passed());
        let (bytes, took) = (allocated_here() - before, start.elapsed());
        // Figures written out, not derived from the constants they check: a fiftieth of
        // 128 MiB is 2.68 MB, of 500 ms 10 ms.
        assert!(
            bytes >= 4 * 2_680_000,
            "{bytes} bytes: four bursts of 2.68 MB"
        );
        assert!(
            took >= Duration::from_millis(30),
            "{took:?}: three pauses of 10 ms"
        );
    }
}
