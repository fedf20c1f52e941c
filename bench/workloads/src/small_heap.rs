//! A mid-sized heap of small blocks: a `HashMap<u64, Box<[u8]>>` with values of 32-512 bytes
//! is filled to about 250 MiB of live data, then serves a steady mix of lookups, inserts and
//! evictions of random entries that keeps it about that size. Nothing is freed in the order it
//! was allocated, so the free blocks are scattered over every page of the heap, and how an
//! allocator reuses them (and how many pages its heap of this size takes) decides both time and
//! memory. It stands for caches and in-memory indexes.

use crate::{Outcome, Run, Scale, Timing, Workload, mix};
use seeded_rng::Rng;
use std::collections::HashMap;

pub const WORKLOAD: Workload = Workload {
    name: "small-heap",
    summary: "a HashMap cache of 32-512-byte values filled to 250 MiB; lookups, inserts and random evictions",
    prepare,
    timing: Timing::Run,
    quiet: None,
};

/// Entries at full scale: about 250 MiB of values (272 bytes on average).
const ENTRIES: usize = 960_000;
/// Operations on the full cache: with the fill, about 1.5 s on glibc.
const OPERATIONS: usize = 2_000_000;

/// One step of the steady state, drawn the same way by the run and by the generator.
enum Op {
    /// Reads the value of the live entry at this index of the key list.
    Lookup(usize),
    /// Adds an entry with a new key and a value of this length.
    Insert(usize),
    /// Removes the live entry at this index of the key list.
    Evict(usize),
}

/// Lookups dominate, as in a cache; inserts and evictions are equally likely, so the size
/// stays where the fill left it.
fn next_op(rng: &mut Rng, live: usize) -> Op {
    match rng.below(100) {
        0..60 => Op::Lookup(rng.below(live)),
        60..80 => Op::Insert(value_len(rng)),
        _ => Op::Evict(rng.below(live)),
    }
}

fn value_len(rng: &mut Rng) -> usize {
    rng.between(32, 512)
}

/// Entry `id`'s key: an odd multiplier makes it a bijection, so keys never collide, yet they
/// are spread over the whole range as hashed identifiers are.
fn key(id: usize) -> u64 {
    (id as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// The byte entry `id`'s value is filled with: an entry read back under the wrong key, or
/// torn, changes the sum.
fn byte(id: usize) -> u8 {
    (id as u8).wrapping_mul(7) ^ (id >> 8) as u8
}

fn prepare(scale: Scale) -> Run {
    let (entries, operations) = (scale.of(ENTRIES), scale.of(OPERATIONS));
    let expected = simulate(entries, operations);
    Box::new(move || Outcome {
        checksum: serve(entries, operations),
        expected,
    })
}

/// What a value read back adds to the sum: its length and its bytes at both ends.
fn value_sum(value: &[u8]) -> u64 {
    let (first, last) = (value.first().copied(), value.last().copied());
    value.len() as u64 + u64::from(first.unwrap_or(0)) + u64::from(last.unwrap_or(0))
}

/// The cache, and its live keys in a list, so that a random entry can be picked: the map
/// itself has no order to pick by.
#[derive(Default)]
struct Cache {
    map: HashMap<u64, Box<[u8]>>,
    keys: Vec<u64>,
}

impl Cache {
    fn insert(&mut self, id: usize, len: usize) {
        self.keys.push(key(id));
        self.map
            .insert(key(id), vec![byte(id); len].into_boxed_slice());
    }
}

fn serve(entries: usize, operations: usize) -> u64 {
    let mut rng = Rng::new(53);
    let mut cache = Cache::default();
    for id in 0..entries {
        cache.insert(id, value_len(&mut rng));
    }
    let (mut sum, mut next_id) = (0u64, entries);
    for _ in 0..operations {
        match next_op(&mut rng, cache.keys.len()) {
            Op::Lookup(i) => {
                let value = cache.map.get(&cache.keys[i]);
                let value = value.expect("every listed key is cached");
                sum = sum.wrapping_add(value_sum(value));
            }
            Op::Insert(len) => {
                cache.insert(next_id, len);
                next_id += 1;
            }
            Op::Evict(i) => {
                let value = cache.map.remove(&cache.keys.swap_remove(i));
                sum = sum.wrapping_add(value_sum(&value.expect("every listed key is cached")));
            }
        }
    }
    let live: u64 = cache.map.values().map(|v| value_sum(v)).sum();
    mix(mix(sum, live), cache.map.len() as u64)
}

/// The same steps on a list of (id, length) pairs, without a map or any value.
fn simulate(entries: usize, operations: usize) -> u64 {
    let mut rng = Rng::new(53);
    let mut live: Vec<(usize, usize)> = (0..entries).map(|id| (id, value_len(&mut rng))).collect();
    let sum_of = |(id, len): (usize, usize)| len as u64 + 2 * u64::from(byte(id));
    let (mut sum, mut next_id) = (0u64, entries);
    for _ in 0..operations {
        match next_op(&mut rng, live.len()) {
            Op::Lookup(i) => sum = sum.wrapping_add(sum_of(live[i])),
            Op::Insert(len) => {
                live.push((next_id, len));
                next_id += 1;
            }
            Op::Evict(i) => sum = sum.wrapping_add(sum_of(live.swap_remove(i))),
        }
    }
    let total: u64 = live.iter().map(|&entry| sum_of(entry)).sum();
    mix(mix(sum, total), live.len() as u64)
}
