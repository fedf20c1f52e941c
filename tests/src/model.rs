//! A differential model of an allocator: an interpreter that reads bytes as a sequence of
//! operations (alloc, alloc_zeroed, realloc grow/shrink, dealloc, rewrite, check), runs them
//! against a `GlobalAlloc`, and keeps a shadow of every live block's expected contents.
//! After every step it checks what the step touched: alignment, usable size, contents kept by
//! `realloc`, zeroing, and that requests which cannot be satisfied return null and leave the
//! old block intact. Every block is checked in full before it is freed.
//!
//! The fuzz target (`fuzz/fuzz_targets/model.rs`) feeds it libFuzzer's inputs; the normal test
//! suite (`tests/tests/model.rs`) feeds it seeded random bytes and the fuzz seed corpus.
//!
//! Huge blocks are modelled sparsely, by a head and a tail window: filling a 2 GiB block byte by
//! byte would take minutes on a 32-bit emulator, and would prove little more.

use crate::Pattern;
use std::alloc::{GlobalAlloc, Layout};

/// What the shadow says a live block holds, in its [`windows`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Content {
    Zero,
    Pattern(u8),
}

#[derive(Clone, Copy, Debug)]
struct Block {
    ptr: *mut u8,
    layout: Layout,
    content: Content,
}

/// The bytes of a block of `size` bytes that the shadow tracks: all of a block up to
/// `2 * WINDOW` bytes, the first and the last `WINDOW` bytes of a larger one.
const WINDOW: usize = 64 << 10;

/// The pattern of a block whose byte `i` is `(i + seed) % 251`, as seen from offset `start`.
fn pattern_from(seed: u8, start: usize) -> Pattern {
    Pattern::new(((seed as usize + start) % 251) as u8)
}

fn windows(size: usize) -> [(usize, usize); 2] {
    if size <= 2 * WINDOW {
        [(0, size), (size, size)]
    } else {
        [(0, WINDOW), (size - WINDOW, size)]
    }
}

/// How far the model may go on this target.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The most bytes live at once (blocks that would exceed it are not allocated).
    pub live_bytes: usize,
    /// The largest size asked for among the satisfiable requests.
    pub max_size: usize,
    /// Requests that must fail include alignments beyond any address space (2^57 and up):
    /// Wine and sanitizer runtimes try to reserve such amounts for real, so they opt out.
    pub absurd_alignments: bool,
}

impl Limits {
    /// Limits that keep a run fast and within memory on this target: 32-bit targets share 4
    /// GiB of address space (and run emulated here), 64-bit ones get more.
    pub fn for_target() -> Limits {
        if cfg!(target_pointer_width = "64") {
            Limits {
                live_bytes: 256 << 20,
                max_size: 64 << 20,
                absurd_alignments: true,
            }
        } else {
            Limits {
                live_bytes: 64 << 20,
                max_size: 16 << 20,
                absurd_alignments: false,
            }
        }
    }
}

/// What a run did, for reports and for tests that check the interpreter got everywhere.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Operations decoded and run.
    pub ops: u64,
    /// Successful `alloc`s and `alloc_zeroed`s.
    pub allocs: u64,
    /// Of which zeroed.
    pub zeroed: u64,
    /// Successful `realloc`s that grew, and that shrank (or kept) the size.
    pub grows: u64,
    pub shrinks: u64,
    /// `dealloc`s.
    pub deallocs: u64,
    /// Requests that had to fail and returned null (alloc, alloc_zeroed and realloc).
    pub refused: u64,
    /// Blocks of more than 1 MiB served.
    pub large_served: u64,
    /// Bytes compared against the shadow.
    pub checked_bytes: u64,
}

/// The most blocks live at once; an allocation into an occupied slot frees its block first.
const SLOTS: usize = 32;

/// The interpreter: an allocator under test and the shadow of its live blocks.
#[derive(Debug)]
pub struct Model<'a, A: GlobalAlloc> {
    alloc: &'a A,
    limits: Limits,
    slots: [Option<Block>; SLOTS],
    live_bytes: usize,
    counts: Counts,
}

/// Reads operands out of the input; past its end every read is zero.
struct Input<'b> {
    bytes: &'b [u8],
}

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((&b, rest)) => {
                self.bytes = rest;
                b
            }
            None => 0,
        }
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }
}

/// A request size: mostly small, sometimes at the limit, with size-class boundaries favoured.
fn size(input: &mut Input<'_>, limits: &Limits) -> usize {
    let class = input.byte();
    let raw = input.u32() as usize;
    let size = match class % 8 {
        0 => 1 + raw % 16,
        1 => 1 + raw % 256,
        2 => 1 + raw % 4096,
        3 => 1 + raw % (64 << 10),
        4 => 1 + raw % (1 << 20),
        5 => 1 + raw % limits.max_size,
        // Powers of two and their neighbours, where size classes and page kinds change.
        6 => {
            let base = 1usize << (raw % (limits.max_size.trailing_zeros() as usize + 1));
            (base + (raw >> 8) % 3).saturating_sub(1).max(1)
        }
        _ => 1 + raw % 64,
    };
    size.min(limits.max_size)
}

fn align(input: &mut Input<'_>) -> usize {
    let b = input.byte();
    match b % 4 {
        // Mostly the alignments of ordinary types, sometimes over-aligned up to 4 MiB.
        0 | 1 => 1 << (b / 4 % 5),
        2 => 1 << (b / 4 % 13),
        _ => 1 << (b / 4 % 23),
    }
}

/// A request that cannot be satisfied on this target: null is the only right answer.
fn impossible(input: &mut Input<'_>, limits: &Limits) -> Option<Layout> {
    let b = input.byte();
    if cfg!(target_pointer_width = "32") {
        // Every valid `Layout` might fit a 32-bit address space (2 GiB of 4): none must fail.
        return None;
    }
    let max = isize::MAX as usize;
    let (size, align) = match b % 4 {
        0 => (max - (b as usize >> 2), 1),
        1 => (max / 2 + 1 + (b as usize >> 2), 8),
        2 => (1 << (usize::BITS - 4), 4096),
        _ if limits.absurd_alignments => (1 + b as usize, 1 << (57 + b as usize % 5)),
        _ => (1 << (usize::BITS - 5), 1 << 20),
    };
    Layout::from_size_align(size, align).ok()
}

impl<'a, A: GlobalAlloc> Model<'a, A> {
    /// A model with no live blocks.
    pub fn new(alloc: &'a A, limits: Limits) -> Self {
        Model {
            alloc,
            limits,
            slots: [None; SLOTS],
            live_bytes: 0,
            counts: Counts::default(),
        }
    }

    /// Runs every operation encoded in `bytes`, then checks and frees every live block.
    pub fn run(mut self, bytes: &[u8]) -> Counts {
        let mut input = Input { bytes };
        while !input.bytes.is_empty() {
            self.step(&mut input);
        }
        for slot in 0..SLOTS {
            self.free(slot);
        }
        self.counts
    }

    fn step(&mut self, input: &mut Input<'_>) {
        self.counts.ops += 1;
        let op = input.byte();
        let slot = input.byte() as usize % SLOTS;
        match op % 8 {
            0 | 1 => {
                let (size, align) = (size(input, &self.limits), align(input));
                self.allocate(slot, size, align, false);
            }
            2 => {
                let (size, align) = (size(input, &self.limits), align(input));
                self.allocate(slot, size, align, true);
            }
            3 => {
                let new_size = size(input, &self.limits);
                self.realloc(slot, new_size);
            }
            4 => self.free(slot),
            5 => {
                let seed = input.byte();
                self.rewrite(slot, Content::Pattern(seed));
            }
            6 => {
                if let Some(layout) = impossible(input, &self.limits) {
                    self.refuse(slot, layout);
                }
            }
            _ => self.check(slot),
        }
    }

    fn allocate(&mut self, slot: usize, size: usize, align: usize, zeroed: bool) {
        self.free(slot);
        if self.live_bytes + size > self.limits.live_bytes {
            return;
        }
        let layout = match Layout::from_size_align(size, align) {
            Ok(layout) => layout,
            Err(_) => return,
        };
        // SAFETY: the size is at least 1.
        let ptr = unsafe {
            if zeroed {
                self.alloc.alloc_zeroed(layout)
            } else {
                self.alloc.alloc(layout)
            }
        };
        assert!(
            !ptr.is_null(),
            "alloc{} of {layout:?} returned null",
            if zeroed { "_zeroed" } else { "" }
        );
        self.accept(slot, ptr, layout);
        self.counts.allocs += 1;
        if zeroed {
            self.counts.zeroed += 1;
            let block = Block {
                ptr,
                layout,
                content: Content::Zero,
            };
            self.verify(&block, layout.size(), "alloc_zeroed");
            self.slots[slot] = Some(block);
        } else {
            let block = Block {
                ptr,
                layout,
                content: Content::Pattern(slot as u8),
            };
            self.fill(&block, 0);
            self.slots[slot] = Some(block);
        }
    }

    /// Checks a block the allocator just returned, and takes it into the shadow's accounts.
    fn accept(&mut self, slot: usize, ptr: *mut u8, layout: Layout) {
        assert_eq!(
            ptr as usize % layout.align(),
            0,
            "{layout:?}: {ptr:p} is misaligned"
        );
        // SAFETY: `ptr` is a live block just returned by mimalloc.
        let usable = unsafe { mimalloc::heap::usable_size(ptr) };
        assert!(usable >= layout.size(), "{layout:?}: usable size {usable}");
        for other in self.slots.iter().flatten() {
            let (a, b) = (ptr as usize, other.ptr as usize);
            assert!(
                a + layout.size() <= b || b + other.layout.size() <= a,
                "slot {slot}: {layout:?} at {ptr:p} overlaps the live {:?} at {:p}",
                other.layout,
                other.ptr
            );
        }
        self.live_bytes += layout.size();
        if layout.size() > 1 << 20 {
            self.counts.large_served += 1;
        }
    }

    fn realloc(&mut self, slot: usize, new_size: usize) {
        let mut block = match self.slots[slot] {
            Some(block) => block,
            None => return,
        };
        let old = block.layout;
        if self.live_bytes - old.size() + new_size > self.limits.live_bytes {
            return;
        }
        let new = match Layout::from_size_align(new_size, old.align()) {
            Ok(layout) => layout,
            Err(_) => return,
        };
        // SAFETY: the block is live with layout `old`; `new_size` is non-zero and a valid
        // `Layout` size for the alignment (checked just above).
        let ptr = unsafe { self.alloc.realloc(block.ptr, old, new_size) };
        assert!(
            !ptr.is_null(),
            "realloc {old:?} -> {new_size} returned null"
        );
        self.slots[slot] = None;
        self.live_bytes -= old.size();
        self.accept(slot, ptr, new);
        block.ptr = ptr;
        block.layout = new;
        // The prefix the two sizes share is kept: what the shadow knew of it must still be
        // there. Then the windows of the new size are written in full (the old content again
        // where it was kept, so nothing known is lost).
        let kept = old.size().min(new_size);
        self.verify_windows(&block, old.size(), kept, "realloc");
        self.fill(&block, 0);
        if new_size > old.size() {
            self.counts.grows += 1;
        } else {
            self.counts.shrinks += 1;
        }
        self.slots[slot] = Some(block);
    }

    /// A request that must fail: null from `alloc`, `alloc_zeroed` and `realloc`, and the block
    /// in `slot` (if any) intact after the failed `realloc`.
    fn refuse(&mut self, slot: usize, layout: Layout) {
        // SAFETY: non-zero size; a non-null result is a bug reported by the panic below
        // (after freeing it, so that the failure is not also a leak).
        unsafe {
            for zeroed in [false, true] {
                let p = if zeroed {
                    self.alloc.alloc_zeroed(layout)
                } else {
                    self.alloc.alloc(layout)
                };
                if !p.is_null() {
                    self.alloc.dealloc(p, layout);
                    panic!("an impossible request {layout:?} was served (zeroed: {zeroed})");
                }
                self.counts.refused += 1;
            }
        }
        if let Some(block) = self.slots[slot] {
            // Only the size can make a `realloc` impossible (it keeps the block's alignment).
            // (64-bit targets only: `impossible` gives no request on 32-bit ones.)
            let size_impossible =
                cfg!(target_pointer_width = "64") && layout.size() >= 1 << (usize::BITS - 8);
            if !size_impossible
                || Layout::from_size_align(layout.size(), block.layout.align()).is_err()
            {
                return;
            }
            // SAFETY: the block is live with its layout; the new size is valid for its
            // alignment (checked above).
            let p = unsafe { self.alloc.realloc(block.ptr, block.layout, layout.size()) };
            assert!(
                p.is_null(),
                "realloc of {:?} to {} bytes succeeded",
                block.layout,
                layout.size()
            );
            self.counts.refused += 1;
            self.verify(
                &block,
                block.layout.size(),
                "the block after a failed realloc",
            );
        }
    }

    fn rewrite(&mut self, slot: usize, content: Content) {
        if let Some(block) = self.slots[slot].as_mut() {
            block.content = content;
            let block = *block;
            self.fill(&block, 0);
        }
    }

    fn check(&mut self, slot: usize) {
        if let Some(block) = self.slots[slot] {
            self.verify(&block, block.layout.size(), "check");
        }
    }

    fn free(&mut self, slot: usize) {
        if let Some(block) = self.slots[slot].take() {
            self.verify(&block, block.layout.size(), "before dealloc");
            // SAFETY: the block is live with this layout and leaves the shadow here.
            unsafe { self.alloc.dealloc(block.ptr, block.layout) };
            self.live_bytes -= block.layout.size();
            self.counts.deallocs += 1;
        }
    }

    /// Writes the block's content over its windows, from byte `from` on.
    fn fill(&mut self, block: &Block, from: usize) {
        for (start, end) in windows(block.layout.size()) {
            let start = start.max(from);
            if start >= end {
                continue;
            }
            // SAFETY: `start..end` lies within the live block.
            unsafe {
                let p = block.ptr.add(start);
                match block.content {
                    Content::Zero => p.write_bytes(0, end - start),
                    Content::Pattern(seed) => pattern_from(seed, start).fill(p, end - start),
                }
            }
        }
    }

    /// Compares the block's windows below `upto` with the shadow; panics on a difference.
    fn verify(&mut self, block: &Block, upto: usize, what: &str) {
        self.verify_windows(block, block.layout.size(), upto, what)
    }

    /// As [`Model::verify`], over the windows of a block of `tracked` bytes (the size it had
    /// when its content was last written, which a `realloc` changes).
    fn verify_windows(&mut self, block: &Block, tracked: usize, upto: usize, what: &str) {
        for (start, end) in windows(tracked) {
            let end = end.min(upto);
            if start >= end {
                continue;
            }
            // SAFETY: `start..end` lies within the live block, whose bytes in the windows
            // were all written (by `fill` or the allocator's zeroing).
            let bad = unsafe {
                let p = block.ptr.add(start);
                match block.content {
                    Content::Zero => crate::first_nonzero(p, end - start),
                    Content::Pattern(seed) => {
                        pattern_from(seed, start).first_mismatch(p, end - start)
                    }
                }
            };
            if let Some(off) = bad {
                panic!(
                    "{what}: {:?} at {:p} holds the wrong byte at offset {} (expected {:?})",
                    block.layout,
                    block.ptr,
                    start + off,
                    block.content
                );
            }
            self.counts.checked_bytes += (end - start) as u64;
        }
    }
}
