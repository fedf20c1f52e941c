//! Large and over-aligned: blocks of 1-64 MiB are allocated, touched page by page and freed,
//! a few alive at once; and blocks with 64- to 4096-byte alignment are allocated and freed
//! in a churn (SIMD buffers, cache-line-padded structures, page-aligned I/O buffers).

use crate::{Outcome, Run, Scale, Timing, Workload, mix};
use seeded_rng::Rng;

pub const WORKLOAD: Workload = Workload {
    name: "large-aligned",
    summary: "1-64 MiB blocks touched and freed; 64-4096-byte aligned blocks churned",
    prepare,
    timing: Timing::Run,
    quiet: None,
};

const MIB: usize = 1 << 20;
const PAGE: usize = 4096;
/// Large blocks alive at once.
const LIVE_LARGE: usize = 3;
/// Over-aligned blocks alive at once.
const LIVE_ALIGNED: usize = 512;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct CacheLine([u8; 64]);
#[derive(Clone, Copy)]
#[repr(C, align(256))]
struct Align256([u8; 256]);
#[derive(Clone, Copy)]
#[repr(C, align(1024))]
struct Align1024([u8; 1024]);
#[derive(Clone, Copy)]
#[repr(C, align(4096))]
struct PageAligned([u8; 4096]);

/// An over-aligned buffer of some elements; its first byte and alignment are checked on free.
enum Aligned {
    A64(Vec<CacheLine>),
    A256(Vec<Align256>),
    A1024(Vec<Align1024>),
    A4096(Box<PageAligned>),
}

impl Aligned {
    fn new(kind: usize, count: usize, byte: u8) -> Self {
        match kind {
            0 => Aligned::A64(vec![CacheLine([byte; 64]); count]),
            1 => Aligned::A256(vec![Align256([byte; 256]); count]),
            2 => Aligned::A1024(vec![Align1024([byte; 1024]); count]),
            _ => Aligned::A4096(Box::new(PageAligned([byte; 4096]))),
        }
    }

    /// The first byte, after checking the block has its alignment.
    fn first_byte(&self) -> u8 {
        let (address, align, byte) = match self {
            Aligned::A64(v) => (v.as_ptr() as usize, 64, v[0].0[0]),
            Aligned::A256(v) => (v.as_ptr() as usize, 256, v[0].0[0]),
            Aligned::A1024(v) => (v.as_ptr() as usize, 1024, v[0].0[0]),
            Aligned::A4096(b) => (&**b as *const PageAligned as usize, 4096, b.0[0]),
        };
        assert_eq!(address % align, 0, "a block without its alignment");
        byte
    }
}

fn prepare(scale: Scale) -> Run {
    let (large_blocks, aligned_steps) = (scale.of(40), scale.of(400_000));
    let mut rng = Rng::new(8);
    let sizes: Vec<usize> = (0..large_blocks)
        .map(|_| rng.between(1, 64) * MIB - rng.below(PAGE))
        .collect();
    let aligned: Vec<(usize, usize)> = (0..aligned_steps)
        .map(|_| (rng.below(4), rng.between(1, 4)))
        .collect();
    let large_expected = sizes
        .iter()
        .fold(0, |sum, &size| mix(sum, touched_sum(size)));
    let aligned_expected = (0..aligned.len())
        .filter(|&i| i >= LIVE_ALIGNED)
        .map(|i| u64::from((i - LIVE_ALIGNED) as u8))
        .sum();
    Box::new(move || {
        let large = large_blocks_sum(&sizes);
        let aligned = aligned_churn_sum(&aligned);
        Outcome {
            checksum: mix(large, aligned),
            expected: mix(large_expected, aligned_expected),
        }
    })
}

/// The bytes written to a large block of `size`: one per page, the page number.
fn touched_sum(size: usize) -> u64 {
    (0..size.div_ceil(PAGE)).map(|page| page as u8 as u64).sum()
}

fn large_blocks_sum(sizes: &[usize]) -> u64 {
    let mut live: Vec<Vec<u8>> = Vec::with_capacity(LIVE_LARGE);
    let mut sum = 0;
    for (i, &size) in sizes.iter().enumerate() {
        // Alternate zeroed blocks (calloc: fresh pages need no clearing) and blocks filled
        // after allocation (malloc, then every byte written, as a buffer being read into).
        let mut block = if i % 2 == 0 {
            vec![0u8; size]
        } else {
            let mut block = Vec::with_capacity(size);
            block.resize(size, 0xff);
            block
        };
        for page in 0..size.div_ceil(PAGE) {
            block[page * PAGE] = page as u8;
        }
        let total: u64 = block.iter().step_by(PAGE).map(|&b| u64::from(b)).sum();
        sum = mix(sum, total);
        if live.len() == LIVE_LARGE {
            live.remove(0);
        }
        live.push(block);
    }
    sum
}

fn aligned_churn_sum(steps: &[(usize, usize)]) -> u64 {
    let mut ring: Vec<Option<Aligned>> = (0..LIVE_ALIGNED).map(|_| None).collect();
    let mut sum = 0u64;
    for (i, &(kind, count)) in steps.iter().enumerate() {
        let block = Aligned::new(kind, count, i as u8);
        if let Some(old) = ring[i % LIVE_ALIGNED].replace(block) {
            sum += u64::from(old.first_byte());
        }
    }
    for block in ring.iter().flatten() {
        block.first_byte();
    }
    sum
}
