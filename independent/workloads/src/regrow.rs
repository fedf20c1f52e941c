//! regrow: 64 byte vectors; each iteration picks one, drops it, and grows a new one by
//! appending 256-byte chunks until it reaches a random size between 1 KiB and 800 KiB.

use crate::util::{keep, Report, Rng};
use std::time::Instant;

const SLOTS: usize = 64;
const ITERATIONS: u64 = 6000;
const CHUNK: usize = 256;

pub fn run() {
    let mut rng = Rng::new(0x72_65_67_72_6f_77);
    let start = Instant::now();
    let mut chunk = [0u8; CHUNK];
    for (i, b) in chunk.iter_mut().enumerate() {
        *b = (i * 7 + 3) as u8;
    }
    let mut slots: Vec<Vec<u8>> = (0..SLOTS).map(|_| Vec::new()).collect();
    let mut appended: u64 = 0;
    let mut checksum: u64 = 0;
    for it in 0..ITERATIONS {
        let i = rng.below(SLOTS as u64) as usize;
        let target = rng.range(1 << 10, 800 << 10) as usize;
        slots[i] = Vec::new(); // the old vector is freed here
        let v = &mut slots[i];
        chunk[0] = it as u8;
        while v.len() < target {
            v.extend_from_slice(&chunk);
        }
        appended += v.len() as u64;
        checksum = checksum.wrapping_add(v[v.len() - 1] as u64 + v.len() as u64);
    }
    let live: usize = slots.iter().map(|v| v.capacity()).sum();
    drop(keep(slots));
    let elapsed = start.elapsed();
    Report::new("regrow")
        .ms("work_ms", elapsed)
        .kv("appended_mib", appended >> 20)
        .kv("live_end_mib", live >> 20)
        .kv("checksum", checksum)
        .kv("resident_end_kib", crate::util::resident_kib())
        .print();
}
