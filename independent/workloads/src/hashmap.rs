//! hashmap: a cache HashMap<u64, Vec<u8>> with 32-512-byte values, filled to about
//! 250 MiB of payload, then a mix of lookups, inserts of new entries and evictions of
//! random entries, then dropped.

use crate::util::{keep, Report, Rng};
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::time::Instant;

/// SipHash with fixed keys: the same table layout in every run and for every allocator.
type Fixed = BuildHasherDefault<DefaultHasher>;

const PAYLOAD: u64 = 250 << 20;
const OPS: u64 = 2_000_000;

fn value(rng: &mut Rng, key: u64) -> Vec<u8> {
    let len = rng.range(32, 512) as usize;
    let mut v = Vec::with_capacity(len);
    v.resize(len, key as u8);
    v[..8].copy_from_slice(&key.to_le_bytes());
    v
}

pub fn run() {
    let mut rng = Rng::new(0x68_61_73_68);
    let start = Instant::now();
    let mut map: HashMap<u64, Vec<u8>, Fixed> = HashMap::default();
    let mut keys: Vec<u64> = Vec::new();
    let mut payload: u64 = 0;
    while payload < PAYLOAD {
        let k = rng.next_u64();
        let v = value(&mut rng, k);
        payload += v.len() as u64;
        map.insert(k, v);
        keys.push(k);
    }
    let filled = start.elapsed();
    let entries_full = map.len();

    let mut hits: u64 = 0;
    let mut checksum: u64 = 0;
    for _ in 0..OPS {
        let op = rng.below(10);
        if op < 6 {
            let k = keys[rng.below(keys.len() as u64) as usize];
            if let Some(v) = map.get(&k) {
                hits += 1;
                checksum = checksum.wrapping_add(v[v.len() - 1] as u64 + v.len() as u64);
            }
        } else if op < 8 {
            let k = rng.next_u64();
            let v = value(&mut rng, k);
            payload += v.len() as u64;
            if let Some(old) = map.insert(k, v) {
                payload -= old.len() as u64;
            } else {
                keys.push(k);
            }
        } else {
            let idx = rng.below(keys.len() as u64) as usize;
            let k = keys.swap_remove(idx);
            if let Some(old) = map.remove(&k) {
                payload -= old.len() as u64;
            }
        }
    }
    let mixed = start.elapsed();
    let entries_end = map.len();
    drop(keep(map));
    drop(keys);
    let elapsed = start.elapsed();
    Report::new("hashmap")
        .ms("work_ms", elapsed)
        .ms("fill_ms", filled)
        .ms("ops_ms", mixed - filled)
        .kv("entries_full", entries_full)
        .kv("entries_end", entries_end)
        .kv("payload_end_mib", payload >> 20)
        .kv("hits", hits)
        .kv("checksum", checksum)
        .kv("resident_end_kib", crate::util::resident_kib())
        .print();
}
