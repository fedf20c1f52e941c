//! bursty, idle-light, idle-still: what is left resident after a burst of small objects
//! has been freed and the program goes (almost) quiet.
//!
//! - `bursty`: 4 bursts; each builds ~120 MiB (payload) of small boxed slices
//!   (16-256 bytes), frees them all, then runs 625 ms of light traffic (4 small
//!   allocations per millisecond, freeing older ones from a ring of 64). About 2.5 s of
//!   light traffic in all. The driver reports CPU time for it.
//! - `idle-light`: one 300 MiB burst, freed, then 5 s of the same light traffic.
//! - `idle-still`: one 300 MiB burst, freed, then 5 s of sleep with no allocation at all.
//!
//! `resident_end_kib` is read (from /proc/self/statm, without allocating) at the very end.

use crate::util::{keep, resident_kib, sleep_until, Report, Rng};
use std::time::{Duration, Instant};

fn burst(rng: &mut Rng, payload: u64) -> Vec<Box<[u8]>> {
    let mut objects = Vec::new();
    let mut bytes = 0;
    while bytes < payload {
        let len = rng.range(16, 256) as usize;
        let mut b = vec![bytes as u8; len].into_boxed_slice();
        b[len - 1] = len as u8;
        bytes += len as u64;
        objects.push(b);
    }
    objects
}

/// `ms` ticks of one millisecond; each tick replaces 4 objects of a 64-slot ring.
fn light_traffic(rng: &mut Rng, ms: u64) -> u64 {
    let mut ring: Vec<Option<Box<[u8]>>> = (0..64).map(|_| None).collect();
    let mut checksum = 0u64;
    let start = Instant::now();
    for tick in 0..ms {
        for _ in 0..4 {
            let slot = rng.below(64) as usize;
            let len = rng.range(16, 256) as usize;
            let b = vec![tick as u8; len].into_boxed_slice();
            checksum = checksum.wrapping_add(b[len / 2] as u64);
            ring[slot] = Some(b);
        }
        sleep_until(start, tick + 1);
    }
    drop(keep(ring));
    checksum
}

fn checksum_of(objects: &[Box<[u8]>]) -> u64 {
    objects
        .iter()
        .step_by(97)
        .fold(0u64, |a, b| a.wrapping_add(b[b.len() - 1] as u64))
}

pub fn bursty() {
    let mut rng = Rng::new(0x62_75_72_73_74);
    let start = Instant::now();
    let mut checksum = 0u64;
    let mut burst_time = Duration::ZERO;
    let mut resident_after_free = 0;
    for _ in 0..4 {
        let t = Instant::now();
        let objects = burst(&mut rng, 120 << 20);
        checksum = checksum.wrapping_add(checksum_of(&objects) + objects.len() as u64);
        drop(keep(objects));
        burst_time += t.elapsed();
        resident_after_free = resident_kib();
        checksum = checksum.wrapping_add(light_traffic(&mut rng, 625));
    }
    let resident_end = resident_kib();
    Report::new("bursty")
        .ms("work_ms", start.elapsed())
        .ms("burst_ms", burst_time)
        .kv("checksum", checksum)
        .kv("resident_after_free_kib", resident_after_free)
        .kv("resident_end_kib", resident_end)
        .print();
}

pub fn idle(light: bool) {
    let name = if light { "idle-light" } else { "idle-still" };
    let mut rng = Rng::new(0x69_64_6c_65);
    let start = Instant::now();
    let objects = burst(&mut rng, 300 << 20);
    let mut checksum = checksum_of(&objects) + objects.len() as u64;
    let resident_full = resident_kib();
    drop(keep(objects));
    let burst_time = start.elapsed();
    let resident_after_free = resident_kib();
    if light {
        checksum = checksum.wrapping_add(light_traffic(&mut rng, 5000));
    } else {
        std::thread::sleep(Duration::from_secs(5));
    }
    let resident_end = resident_kib();
    Report::new(name)
        .ms("work_ms", start.elapsed())
        .ms("burst_ms", burst_time)
        .kv("checksum", checksum)
        .kv("resident_full_kib", resident_full)
        .kv("resident_after_free_kib", resident_after_free)
        .kv("resident_end_kib", resident_end)
        .print();
}
