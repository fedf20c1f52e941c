//! Large blocks reused in steady state: 150 buffers of 1-64 MiB, each written one byte per
//! 4 KiB page, read back and freed, with at most two alive (a new buffer is filled while the one
//! before it is still held). Unlike `large-touch`, which measures a cold start (16 blocks), this
//! runs long enough that what an allocator does with a freed large range decides the time: one
//! that keeps it committed for the next buffer serves it without a page fault; one that hands it
//! back to the kernel at once (mimalloc 3.6 purges free ranges of 32 MiB or more immediately),
//! or maps every large block afresh (glibc, above its mmap threshold), faults every page in
//! again. It stands for services that read requests, files or frames into large buffers, one
//! after another, for as long as they run.

use crate::{Outcome, Run, Scale, Timing, Workload, mix};
use seeded_rng::Rng;

pub const WORKLOAD: Workload = Workload {
    name: "large-reuse",
    summary: "150 buffers of 1-64 MiB in turn, one byte written per 4 KiB page, at most two alive",
    prepare,
    timing: Timing::Run,
    quiet: None,
};

const MIB: usize = 1 << 20;
const PAGE: usize = 4096;
/// Buffers at full scale: about three seconds on an allocator that maps every buffer afresh
/// (glibc), and a fifth of a second on one that reuses its ranges.
const BUFFERS: usize = 150;

fn prepare(scale: Scale) -> Run {
    let mut rng = Rng::new(23);
    let sizes: Vec<usize> = (0..scale.of(BUFFERS).max(4))
        .map(|_| rng.between(1, 64) * MIB - rng.below(PAGE))
        .collect();
    let expected = sizes
        .iter()
        .enumerate()
        .fold(0, |sum, (buffer, &size)| mix(sum, stamp_sum(buffer, size)));
    Box::new(move || Outcome {
        checksum: fill_in_turn(&sizes),
        expected,
    })
}

/// The byte written to `page` of buffer `buffer`: differs between pages and between buffers, so
/// that a page served twice, or pages mixed up between buffers, change the sum.
fn stamp(buffer: usize, page: usize) -> u8 {
    (page.wrapping_mul(29) ^ buffer.wrapping_mul(7)) as u8
}

/// What reading back buffer `buffer` of `size` bytes must give, without a buffer.
fn stamp_sum(buffer: usize, size: usize) -> u64 {
    (0..size.div_ceil(PAGE))
        .map(|page| u64::from(stamp(buffer, page)))
        .sum()
}

/// The run: each buffer is allocated (uninitialised, as a buffer about to be read into is), has
/// one byte per page written, and is read back and freed once the next one is filled.
fn fill_in_turn(sizes: &[usize]) -> u64 {
    let mut held: Option<(Vec<u8>, usize)> = None;
    let mut sum = 0;
    for (buffer, &size) in sizes.iter().enumerate() {
        let mut fresh: Vec<u8> = Vec::with_capacity(size);
        let spare = fresh.spare_capacity_mut();
        for page in 0..size.div_ceil(PAGE) {
            spare[page * PAGE].write(stamp(buffer, page));
        }
        if let Some((old, old_size)) = held.replace((fresh, size)) {
            sum = mix(sum, read_back(&old, old_size));
        }
    }
    if let Some((old, old_size)) = held {
        sum = mix(sum, read_back(&old, old_size));
    }
    sum
}

/// The sum of the first byte of every page of the first `size` bytes of `filled`'s capacity,
/// of which exactly those bytes were written by [`fill_in_turn`].
fn read_back(filled: &Vec<u8>, size: usize) -> u64 {
    assert!(size <= filled.capacity());
    let base = filled.as_ptr();
    (0..size.div_ceil(PAGE))
        .map(|page| {
            // SAFETY: `page * PAGE < size <= capacity`, inside the allocation, and that byte
            // was written before the buffer was held.
            u64::from(unsafe { base.add(page * PAGE).read() })
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::{MIB, fill_in_turn, mix, stamp_sum};

    /// The run gives the generator's answer, and the answer depends on every buffer's pages.
    #[test]
    fn the_run_reads_back_what_the_plan_stamped() {
        let sizes = [MIB, 3 * MIB - 100, 2 * MIB, 5000];
        let expected = sizes
            .iter()
            .enumerate()
            .fold(0, |sum, (b, &s)| mix(sum, stamp_sum(b, s)));
        assert_eq!(fill_in_turn(&sizes), expected);
        assert_ne!(fill_in_turn(&sizes[..3]), expected);
    }
}
