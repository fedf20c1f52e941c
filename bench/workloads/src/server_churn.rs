//! Server churn (larson-style): each thread keeps a working set of random-size blocks and
//! replaces random ones, as a server's request handlers do; between rounds the working sets
//! change hands, so blocks allocated by one thread are freed by another.

use crate::{Outcome, Run, Scale, Timing, Workload, mix};
use seeded_rng::Rng;
use std::thread;

pub const WORKLOAD: Workload = Workload {
    name: "server-churn",
    summary: "2 threads replace random-size blocks in working sets that change threads each round",
    prepare,
    timing: Timing::Run,
    quiet: None,
};

const THREADS: usize = 2;
const SLOTS: usize = 2_000;
const ROUNDS: usize = 10;

/// A block whose contents prove whose it is: its length and a tag byte repeated.
type Block = Vec<u8>;

fn block_len(rng: &mut Rng) -> usize {
    if rng.percent(2) {
        rng.between(1024, 16 * 1024)
    } else {
        rng.between(8, 512)
    }
}

fn tag(len: usize, round: usize) -> u8 {
    (len as u8) ^ (round as u8)
}

fn prepare(scale: Scale) -> Run {
    let steps = scale.of(3_000_000) / (THREADS * ROUNDS);
    let expected = simulate(steps);
    Box::new(move || {
        let mut sets: Vec<Vec<Block>> = (0..THREADS).map(|_| vec![Vec::new(); SLOTS]).collect();
        let mut sum = 0u64;
        for round in 0..ROUNDS {
            let results: Vec<(Vec<Block>, u64)> = thread::scope(|scope| {
                let handles: Vec<_> = sets
                    .drain(..)
                    .enumerate()
                    .map(|(t, set)| scope.spawn(move || churn(set, seed(round, t), round, steps)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("worker"))
                    .collect()
            });
            for (set, freed) in results {
                sum = mix(sum, freed);
                sets.push(set);
            }
            // The next round's thread t works on the set thread t+1 filled.
            sets.rotate_left(1);
        }
        let live: u64 = sets.iter().flatten().map(|b| b.len() as u64).sum();
        Outcome {
            checksum: mix(sum, live),
            expected,
        }
    })
}

fn seed(round: usize, thread: usize) -> u64 {
    (round * THREADS + thread) as u64
}

/// Replaces `steps` random blocks; returns the set and a sum over the blocks it freed, read
/// from their memory.
fn churn(mut set: Vec<Block>, seed: u64, round: usize, steps: usize) -> (Vec<Block>, u64) {
    let mut rng = Rng::new(seed);
    let mut freed = 0u64;
    for _ in 0..steps {
        let slot = rng.below(SLOTS);
        let len = block_len(&mut rng);
        let old = std::mem::replace(&mut set[slot], vec![tag(len, round); len]);
        if let (Some(&first), Some(&last)) = (old.first(), old.last()) {
            freed =
                freed.wrapping_add(old.len() as u64 + u64::from(first ^ last) + u64::from(first));
        }
    }
    (set, freed)
}

/// The same rounds on lengths and tags alone.
fn simulate(steps: usize) -> u64 {
    let mut sets: Vec<Vec<(usize, u8)>> = vec![vec![(0, 0); SLOTS]; THREADS];
    let mut sum = 0u64;
    for round in 0..ROUNDS {
        for (t, set) in sets.iter_mut().enumerate() {
            let mut rng = Rng::new(seed(round, t));
            let mut freed = 0u64;
            for _ in 0..steps {
                let slot = rng.below(SLOTS);
                let len = block_len(&mut rng);
                let (old_len, old_tag) = std::mem::replace(&mut set[slot], (len, tag(len, round)));
                if old_len > 0 {
                    freed = freed.wrapping_add(old_len as u64 + u64::from(old_tag));
                }
            }
            sum = mix(sum, freed);
        }
        sets.rotate_left(1);
    }
    let live: u64 = sets.iter().flatten().map(|&(len, _)| len as u64).sum();
    mix(sum, live)
}
