//! buffers: 150 zeroed buffers (`vec![0u8; n]`) of 1-64 MiB, random sizes, in turn; one
//! byte written per 4 KiB page; the buffer before the previous one is freed before each
//! new one is made, so at most two are alive at a time.

use crate::util::{keep, Report, Rng};
use std::time::Instant;

const BUFFERS: u64 = 150;

pub fn run() {
    let mut rng = Rng::new(0x62_75_66_66);
    let start = Instant::now();
    let mut older: Option<Vec<u8>> = None;
    let mut newer: Option<Vec<u8>> = None;
    let mut total: u64 = 0;
    let mut checksum: u64 = 0;
    for i in 0..BUFFERS {
        let size = rng.range(1 << 20, 64 << 20) as usize;
        drop(older.take());
        older = newer.take();
        let mut buf = vec![0u8; size];
        let mut off = (i as usize * 64) % 4096;
        while off < size {
            buf[off] = (off >> 12) as u8 ^ i as u8;
            off += 4096;
        }
        checksum = checksum.wrapping_add(buf[size - 1] as u64 + buf[size / 2] as u64);
        total += size as u64;
        newer = Some(keep(buf));
    }
    drop(older);
    drop(newer);
    let elapsed = start.elapsed();
    Report::new("buffers")
        .ms("work_ms", elapsed)
        .kv("total_mib", total >> 20)
        .kv("checksum", checksum)
        .kv("resident_end_kib", crate::util::resident_kib())
        .print();
}
