//! What the plugin of `tests/plugin` allocates, and how its memory is summed. A crate of its own,
//! used by the plugin and by `tests/tests/plugin.rs`, which rebuilds every block in the host's
//! (system) memory to know the checksum the plugin must return: a block that mimalloc corrupted, lost or handed out twice
//! while it travelled between threads changes the plugin's sum, not the host's.

/// Block sizes in words: from one word to 2.4 MB, so that small, medium, large and huge pages
/// all travel between threads.
const WORDS: [usize; 8] = [1, 3, 16, 100, 1_000, 8_000, 70_000, 300_000];

/// splitmix64's finalizer: every input bit changes about half of the output bits.
pub fn mix(x: u64) -> u64 {
    let x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// One allocation of each kind a Rust library makes: a growing `Vec`, a `String` and a `Box`.
#[derive(Debug)]
pub struct Block {
    words: Vec<u64>,
    label: String,
    boxed: Box<[u64; 4]>,
}

impl Block {
    /// Block `index` of the call with `seed`. The words are pushed one by one, so the `Vec`
    /// reallocates as it grows, as real code does.
    pub fn new(seed: u64, index: u32) -> Block {
        let key = mix(seed ^ (u64::from(index) << 32));
        let len = WORDS[(key % WORDS.len() as u64) as usize];
        let mut words = Vec::new();
        for i in 0..len {
            words.push(mix(key ^ i as u64));
        }
        Block {
            words,
            label: format!("block {index} of call {seed:#x}"),
            boxed: Box::new([key, !key, len as u64, u64::from(index)]),
        }
    }

    /// A hash of everything the block holds, read from its memory; order-sensitive, so a word
    /// moved within the block changes it.
    pub fn hash(&self) -> u64 {
        let bytes = self.label.bytes().map(u64::from);
        let all = self
            .words
            .iter()
            .copied()
            .chain(bytes)
            .chain(self.boxed.iter().copied());
        all.fold(0x6d69_6d61_6c6c_6f63, |h, w| mix(h ^ w))
    }
}

/// The threads each call of the plugin starts. A call with `blocks` makes `blocks` blocks on
/// its calling thread and `blocks` on each worker, numbered in that order.
pub const WORKERS: u32 = 2;

/// The index of the block a call keeps for a later thread to free (`plugin_keep`), which no
/// call's own blocks reach.
pub const KEPT: u32 = u32::MAX;

/// The checksum of a call: the sum of its blocks' hashes, in any order (threads finish in any
/// order).
pub fn checksum(hashes: impl Iterator<Item = u64>) -> u64 {
    hashes.fold(0, u64::wrapping_add)
}
