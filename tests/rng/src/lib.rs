//! A small deterministic random generator, shared by the tests (`mimalloc-tests`: the stress and
//! model runs replay exactly from their seed, on every target) and the benchmark's workloads
//! (every run of a workload sees the same inputs, on every allocator, so that their times
//! compare the same work). A crate of its own so that neither depends on the other, with no
//! dependency and Rust 1.63, as the tests need. The benchmark's published figures were measured
//! on its sequences: a change to them is a change to every workload's inputs.

/// SplitMix64: tiny, fast, and good enough to spread sizes, keys and victims; not for
/// cryptography.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator whose whole sequence is determined by `seed`. The seed is mixed with a
    /// constant first, so that small seeds (0, 1, 2, ...) do not start from small states.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5851_f42d_4c95_7f2d)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`0 < n <= u32::MAX`), by multiply-shift: no division on the hot path
    /// of a workload.
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }

    /// A number in `lo..=hi`.
    pub fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `percent`/100.
    pub fn percent(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}

/// Mixes a 64-bit value into a well-spread one (the first output of a generator seeded with
/// it): block cookies, per-thread seeds.
pub fn mix(x: u64) -> u64 {
    Rng::new(x).next_u64()
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn same_seed_same_sequence_and_bounds_hold() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let mut seen = [false; 10];
        for _ in 0..1000 {
            let x = a.between(3, 12);
            assert!((3..=12).contains(&x));
            seen[x - 3] = true;
        }
        assert!(seen.iter().all(|&s| s), "every value in range is produced");
        assert_ne!(Rng::new(1).next_u64(), Rng::new(2).next_u64());
    }

    /// The workloads' inputs, and so the benchmark's figures, depend on the exact sequence.
    #[test]
    fn the_sequence_is_the_one_the_benchmark_was_measured_on() {
        let mut rng = Rng::new(1);
        let first: [u64; 2] = [rng.next_u64(), rng.next_u64()];
        assert_eq!(first, [FIRST_OF_SEED_1, SECOND_OF_SEED_1]);
    }

    const FIRST_OF_SEED_1: u64 = 0xc1b4_bb72_8dd9_6dc3;
    const SECOND_OF_SEED_1: u64 = 0xfc94_d6cb_a1d4_622c;
}
