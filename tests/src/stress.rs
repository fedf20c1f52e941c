//! A multithreaded allocator stress, after the idea of mimalloc's `test/test-stress.c` (this is
//! our own code): threads allocate blocks of mostly small sizes (1% large), stamp each with a
//! header and a pattern derived from its id, free random earlier blocks, and swap blocks through
//! a shared table of atomic slots, so that blocks are freed on other threads and outlive the
//! threads that made them (all threads join at the end of every round and new ones start).
//! Every block is verified, header and body, before it is freed.
//!
//! [`run`] is generic over the allocator, so the same stress drives the global allocator
//! ([`Global`], i.e. whatever `assign_global!` installed) and any other `GlobalAlloc`.

use crate::rng::{mix, Rng};
use crate::Pattern;
use std::alloc::{GlobalAlloc, Layout};
use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// The environment variable of the long run: `threads=8,steps=20000,seconds=40,seed=1`
/// (every key optional; the others keep their [`Config::short`] values).
pub const ENV: &str = "MIMALLOC_STRESS";

/// How much stress.
#[derive(Clone, Debug)]
pub struct Config {
    /// Threads started in every round.
    pub threads: usize,
    /// Allocation steps per thread per round.
    pub steps: usize,
    /// At least this many rounds...
    pub rounds: usize,
    /// ...and more until this much time has passed.
    pub duration: Duration,
    /// Slots of the shared table through which blocks change threads.
    pub slots: usize,
    /// The seed of every random choice (each thread derives its own from it).
    pub seed: u64,
}

impl Config {
    /// The run of `cargo test`: a second or two, even in the unoptimized test profile.
    pub fn short() -> Config {
        Config {
            threads: 4,
            steps: 8_000,
            rounds: 4,
            duration: Duration::ZERO,
            slots: 1_000,
            seed: 42,
        }
    }

    /// [`Config::short`] adjusted by the `MIMALLOC_STRESS` variable, if it is set.
    pub fn from_env() -> Result<Config, String> {
        let mut config = Config::short();
        let spec = match std::env::var(ENV) {
            Ok(spec) => spec,
            Err(_) => return Ok(config),
        };
        for item in spec.split(',').filter(|s| !s.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| format!("{ENV}: `{item}` is not key=value"))?;
            let n: u64 = value
                .parse()
                .map_err(|_| format!("{ENV}: `{value}` is not a number"))?;
            match key {
                "threads" => config.threads = n.max(1) as usize,
                "steps" => config.steps = n as usize,
                "rounds" => config.rounds = n.max(1) as usize,
                "seconds" => config.duration = Duration::from_secs(n),
                "slots" => config.slots = n.max(1) as usize,
                "seed" => config.seed = n,
                _ => return Err(format!("{ENV}: unknown key `{key}`")),
            }
        }
        Ok(config)
    }
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Rounds of threads started and joined.
    pub rounds: usize,
    /// Blocks allocated.
    pub allocs: u64,
    /// Blocks freed (all of them, by the end).
    pub frees: u64,
    /// Blocks freed by a thread other than the one that allocated them.
    pub foreign_frees: u64,
    /// Blocks freed after the thread that allocated them had exited.
    pub orphan_frees: u64,
    /// Bytes whose contents were checked before their block was freed.
    pub verified_bytes: u64,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
}

impl Report {
    /// Allocations and frees per second.
    pub fn ops_per_second(&self) -> f64 {
        (self.allocs + self.frees) as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    fn add(&mut self, other: &Report) {
        self.allocs += other.allocs;
        self.frees += other.frees;
        self.foreign_frees += other.foreign_frees;
        self.orphan_frees += other.orphan_frees;
        self.verified_bytes += other.verified_bytes;
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} rounds, {} allocs + {} frees ({} on another thread, {} after their thread \
             exited) in {:.1} s = {:.0} ops/s, {} bytes verified",
            self.rounds,
            self.allocs,
            self.frees,
            self.foreign_frees,
            self.orphan_frees,
            self.elapsed.as_secs_f64(),
            self.ops_per_second(),
            self.verified_bytes
        )
    }
}

/// The global allocator, whatever `#[global_allocator]` (e.g. `assign_global!`) installed.
#[derive(Clone, Copy, Debug)]
pub struct Global;

// SAFETY: forwards every call, with its contract, to the program's global allocator.
unsafe impl GlobalAlloc for Global {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `GlobalAlloc::alloc`'s, which `std::alloc::alloc` has.
        unsafe { std::alloc::alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above, for `dealloc`.
        unsafe { std::alloc::dealloc(ptr, layout) }
    }
}

/// The header at the start of every block: who it is, how it was allocated, and a check word
/// tying the three together (a header overwritten by another block fails the check).
const HEADER: usize = 4 * 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Header {
    id: u64,
    size: u64,
    align: u64,
    check: u64,
}

impl Header {
    fn new(id: u64, layout: Layout) -> Header {
        let (size, align) = (layout.size() as u64, layout.align() as u64);
        Header {
            id,
            size,
            align,
            check: mix(id ^ size.rotate_left(20) ^ align.rotate_left(48)),
        }
    }
    fn is_consistent(&self) -> bool {
        let layout = Layout::from_size_align(self.size as usize, self.align as usize);
        layout.map_or(false, |l| *self == Header::new(self.id, l))
    }
    fn pattern(&self) -> Pattern {
        Pattern::new(mix(self.id) as u8)
    }
    /// The thread that allocated the block (see `ids`).
    fn owner(&self) -> u64 {
        self.id >> 32
    }
}

/// A live block's address; the header inside says everything else.
type Block = usize;

/// One thread's share of a round.
struct Worker<'a, A: GlobalAlloc> {
    alloc: &'a A,
    table: &'a [AtomicUsize],
    rng: Rng,
    /// `round << 16 | thread`, also the upper half of every id this worker makes.
    me: u64,
    next_id: u64,
    live: Vec<Block>,
    report: Report,
}

impl<'a, A: GlobalAlloc> Worker<'a, A> {
    /// A worker that holds no blocks yet and has done nothing.
    fn new(alloc: &'a A, table: &'a [AtomicUsize], rng: Rng, me: u64) -> Worker<'a, A> {
        Worker {
            alloc,
            table,
            rng,
            me,
            next_id: 0,
            live: Vec::new(),
            report: Report::default(),
        }
    }

    /// One thread's work in a round: `steps` steps, then the blocks it still holds freed.
    fn work(mut self, steps: usize) -> Report {
        for _ in 0..steps {
            self.step();
        }
        // Blocks still held die with their thread; the table's outlive it.
        while let Some(block) = self.live.pop() {
            self.free(block);
        }
        self.report
    }

    fn layout(&mut self) -> Layout {
        let size = if self.rng.percent(1) {
            // Large: 64 KiB to 4 MiB, beyond mimalloc's small and medium pages.
            (64 << 10) << self.rng.below(7)
        } else {
            // Mostly small: 2^k words, as in test-stress, plus some odd sizes.
            let words = 4usize << self.rng.below(8);
            words * 8 + self.rng.below(2) * self.rng.below(64)
        };
        let align = if self.rng.percent(5) {
            64 << self.rng.below(7)
        } else {
            8
        };
        Layout::from_size_align(size.max(HEADER), align).unwrap()
    }

    fn allocate(&mut self) -> Block {
        let layout = self.layout();
        // SAFETY: the size is at least `HEADER` bytes, never zero.
        let p = unsafe { self.alloc.alloc(layout) };
        assert!(!p.is_null(), "allocation of {layout:?} failed");
        assert_eq!(p as usize % layout.align(), 0, "{layout:?} misaligned");
        let header = Header::new(self.me << 32 | self.next_id, layout);
        self.next_id += 1;
        // SAFETY: `p` is a fresh block of `layout.size() >= HEADER` bytes, aligned to 8.
        unsafe {
            p.cast::<Header>().write(header);
            header.pattern().fill(p.add(HEADER), layout.size() - HEADER);
        }
        self.report.allocs += 1;
        p as usize
    }

    /// Checks a block, header and body, and frees it.
    fn free(&mut self, block: Block) {
        let p = block as *mut u8;
        // SAFETY: every `Block` is a live block this stress allocated with a `Header` at its
        // start; its owner (this thread now) frees it exactly once.
        unsafe {
            let header = p.cast::<Header>().read();
            assert!(
                header.is_consistent(),
                "block {p:p}: header overwritten: {header:?}"
            );
            let size = header.size as usize;
            header
                .pattern()
                .assert_at(p.add(HEADER), size - HEADER, "stress block body");
            self.report.verified_bytes += header.size;
            if header.owner() != self.me {
                self.report.foreign_frees += 1;
                if header.owner() >> 16 != self.me >> 16 {
                    self.report.orphan_frees += 1;
                }
            }
            let layout = Layout::from_size_align_unchecked(size, header.align as usize);
            self.alloc.dealloc(p, layout);
        }
        self.report.frees += 1;
    }

    fn step(&mut self) {
        let roll = self.rng.below(100);
        if roll < 50 || self.live.is_empty() {
            let block = self.allocate();
            self.live.push(block);
        } else if roll < 75 {
            let victim = self.rng.below(self.live.len());
            let block = self.live.swap_remove(victim);
            self.free(block);
        } else {
            // Swap one of ours (or a new one) into a random slot; whatever was there, made
            // by some thread of this or an earlier round, is ours to free now.
            let ours = if self.rng.percent(50) {
                self.live.swap_remove(self.rng.below(self.live.len()))
            } else {
                self.allocate()
            };
            let slot = &self.table[self.rng.below(self.table.len())];
            let theirs = slot.swap(ours, Ordering::AcqRel);
            if theirs != 0 {
                self.live.push(theirs);
            }
        }
    }
}

/// Runs the stress on `alloc` as `config` says; panics at the first corrupted block.
pub fn run<A: GlobalAlloc + Sync>(alloc: &A, config: &Config) -> Report {
    let table: Vec<AtomicUsize> = (0..config.slots).map(|_| AtomicUsize::new(0)).collect();
    let mut total = Report::default();
    let start = Instant::now();
    while total.rounds < config.rounds || start.elapsed() < config.duration {
        let reports = run_round(alloc, config, &table, total.rounds as u64);
        for report in &reports {
            total.add(report);
        }
        total.rounds += 1;
    }
    total.add(&sweep(alloc, config, &table));
    total.elapsed = start.elapsed();
    assert_eq!(total.allocs, total.frees, "the stress lost track of blocks");
    total
}

/// Writes the `STRESS [label] ...` line that the `stress` lane collects for its report, and
/// checks what every run must have done, whatever allocator it drove: all its rounds, and
/// blocks that changed threads (freed on another thread, and after their thread exited), or
/// the stress did not test what it is for.
#[track_caller]
pub fn report_and_check(label: &str, config: &Config, report: &Report) {
    let _ = writeln!(
        std::io::stderr(),
        "STRESS [{label}] mimalloc {}, {} threads x {} steps: {report}",
        mimalloc::Version::linked(),
        config.threads,
        config.steps
    );
    assert!(report.rounds >= config.rounds);
    assert!(
        report.foreign_frees > 0 && report.orphan_frees > 0,
        "no block changed threads: {report}"
    );
}

/// Starts `config.threads` workers for round number `round` and waits for them all to exit;
/// returns their reports.
fn run_round<A: GlobalAlloc + Sync>(
    alloc: &A,
    config: &Config,
    table: &[AtomicUsize],
    round: u64,
) -> Vec<Report> {
    thread::scope(|s| {
        let handles: Vec<_> = (0..config.threads as u64)
            .map(|t| {
                s.spawn(move || {
                    let me = (round + 1) << 16 | t;
                    Worker::new(alloc, table, Rng::new(config.seed ^ mix(me)), me)
                        .work(config.steps)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Frees the last survivors, the blocks left in the table, long after their threads exited.
fn sweep<A: GlobalAlloc>(alloc: &A, config: &Config, table: &[AtomicUsize]) -> Report {
    let mut sweeper = Worker::new(alloc, table, Rng::new(config.seed), 0);
    for slot in table {
        let block = slot.swap(0, Ordering::AcqRel);
        if block != 0 {
            sweeper.free(block);
        }
    }
    sweeper.report
}
