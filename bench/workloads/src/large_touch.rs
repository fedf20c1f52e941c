//! Large blocks, every page touched: fresh 1-64 MiB buffers written one byte per 4 KiB page,
//! freed at once or kept in turn (a kept one replaces a random older one, so at most a few are
//! alive). What it costs is mostly page faults: an allocator that hands a freed range back to
//! the kernel as soon as it is freed (mimalloc 3.6 purges ranges of 32 MiB or more at once)
//! faults every page in again on the next allocation, one that keeps it for a while does not,
//! and transparent huge pages change the count of faults by up to 512x. It stands for programs
//! that read files or network payloads into large fresh buffers.

use crate::{Outcome, Run, Scale, Timing, Workload, mix};
use seeded_rng::Rng;

pub const WORKLOAD: Workload = Workload {
    name: "large-touch",
    summary: "fresh 1-64 MiB Vec<u8>s, one byte written per 4 KiB page, freed or kept in turn",
    prepare,
    timing: Timing::Run,
    quiet: None,
};

const MIB: usize = 1 << 20;
const PAGE: usize = 4096;
/// Blocks kept alive at once: with the one being filled, at most 3 x 64 MiB are live, so that
/// peak memory stays bounded and the faults, not the memory, are what differs.
const KEPT: usize = 2;
/// Blocks at full scale, tuned so that a run takes 0.1-0.3 s on the system allocator of the
/// benchmark machine (glibc maps most blocks this large afresh: it faults in nearly every page).
const BLOCKS: usize = 16;

/// One allocation of the run, and what happens to the block once it is filled.
#[derive(Clone, Copy, Debug)]
struct Step {
    size: usize,
    fate: Fate,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    /// Read back and freed right away.
    Free,
    /// Kept: added to the kept set while it has room, else replacing (and freeing) the kept
    /// block in this slot.
    Keep { slot: usize },
}

fn prepare(scale: Scale) -> Run {
    // Quick mode still fills the kept set and replaces in it, so that every path runs.
    let blocks = scale.of(BLOCKS).max(2 * KEPT + 2);
    let mut rng = Rng::new(11);
    let steps: Vec<Step> = (0..blocks)
        .map(|i| Step {
            size: rng.between(1, 64) * MIB - rng.below(PAGE),
            fate: if i % 2 == 0 {
                Fate::Free
            } else {
                Fate::Keep {
                    slot: rng.below(KEPT),
                }
            },
        })
        .collect();
    let expected = expected_sum(&steps);
    Box::new(move || Outcome {
        checksum: touch_all(&steps),
        expected,
    })
}

/// The byte written to `page` of block `block`: differs between neighbouring pages and
/// between blocks, so that a page served twice, or a block's pages mixed up with another's,
/// changes the sum.
fn stamp(block: usize, page: usize) -> u8 {
    (page.wrapping_mul(31) ^ block) as u8
}

/// What the run must compute, from the plan alone: the blocks' stamp sums in the order the
/// blocks are freed (closed over the stamps, no buffers), found by replaying the fates on block
/// numbers.
fn expected_sum(steps: &[Step]) -> u64 {
    let stamped = |block: usize| -> u64 {
        let pages = steps[block].size.div_ceil(PAGE);
        (0..pages).map(|page| u64::from(stamp(block, page))).sum()
    };
    let mut kept: Vec<usize> = Vec::with_capacity(KEPT);
    let mut sum = 0;
    for (block, step) in steps.iter().enumerate() {
        match step.fate {
            Fate::Free => sum = mix(sum, stamped(block)),
            Fate::Keep { .. } if kept.len() < KEPT => kept.push(block),
            Fate::Keep { slot } => {
                sum = mix(sum, stamped(kept[slot]));
                kept[slot] = block;
            }
        }
    }
    kept.iter()
        .fold(sum, |sum, &block| mix(sum, stamped(block)))
}

/// The run: allocates, touches and frees as planned, summing each block's pages as it is freed.
fn touch_all(steps: &[Step]) -> u64 {
    let mut kept: Vec<Vec<u8>> = Vec::with_capacity(KEPT);
    let mut sum = 0;
    for (block, step) in steps.iter().enumerate() {
        // Zeroed, as a buffer about to be read into is usually made; fresh pages need no
        // clearing, so the cost is the allocator's and the kernel's, not a memset's.
        let mut buffer = vec![0u8; step.size];
        for page in 0..step.size.div_ceil(PAGE) {
            buffer[page * PAGE] = stamp(block, page);
        }
        match step.fate {
            Fate::Free => sum = mix(sum, read_back(&buffer)),
            Fate::Keep { .. } if kept.len() < KEPT => kept.push(buffer),
            Fate::Keep { slot } => {
                let old = std::mem::replace(&mut kept[slot], buffer);
                sum = mix(sum, read_back(&old));
            }
        }
    }
    kept.iter().fold(sum, |sum, b| mix(sum, read_back(b)))
}

/// The sum of the first byte of every page: what was stamped there, if the memory kept it.
fn read_back(buffer: &[u8]) -> u64 {
    buffer.iter().step_by(PAGE).map(|&b| u64::from(b)).sum()
}

#[cfg(test)]
mod tests {
    use super::{Fate, KEPT, Step, expected_sum, touch_all};

    /// A plan that frees, fills the kept set and replaces in it checks out, and the answer
    /// depends on which kept block is replaced (the fates are part of what is checked).
    #[test]
    fn the_run_matches_the_plan_and_the_plan_matters() {
        let plan = |slot| -> Vec<Step> {
            (0..2 * KEPT + 2)
                .map(|i| Step {
                    size: (i + 1) * 5000,
                    fate: if i % 2 == 0 {
                        Fate::Free
                    } else {
                        Fate::Keep { slot }
                    },
                })
                .collect()
        };
        let (a, b) = (plan(0), plan(KEPT - 1));
        assert_eq!(touch_all(&a), expected_sum(&a));
        assert_eq!(touch_all(&b), expected_sum(&b));
        assert_ne!(expected_sum(&a), expected_sum(&b));
    }
}
