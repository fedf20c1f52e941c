//! The workloads of the allocator benchmark, and the command line of the driver binaries.
//!
//! Each workload is modelled on a program whose team published allocator comparisons (a log
//! viewer's producer loop, a search engine's indexer, a policy engine, a blockchain node's block
//! replay, ...) or on a shape of program users run (a cache, thread pools handing requests on,
//! a service that goes quiet after a burst). A workload is prepared first (its input and the
//! answer it must produce, both from a fixed seed), then run; only the run is timed. The run
//! computes its answer from the memory it allocated, and the driver refuses a run whose answer
//! differs: an allocator cannot win by doing less, and a broken one cannot pass. A workload
//! that goes quiet after its run (untimed) also reports the resident memory it has then.
//!
//! Every allocator is linked into its own copy of the same driver ([`driver::main`]): the
//! workloads never know which allocator serves them.

pub mod driver;

mod bursty;
mod cross_thread;
mod document_tree;
mod growth;
mod handoff;
mod idle;
mod indexing;
mod large_aligned;
mod large_reuse;
mod large_touch;
mod phase_change;
mod pipeline;
mod policy_eval;
mod producer_consumer;
mod producer_loop;
mod regrowth;
mod replay;
mod server_churn;
mod short_lived;
mod small_heap;

/// How much work a run does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// The measured size: each workload's run takes about 0.3-3 s in a release build (the
    /// quiet phase of a workload that goes quiet afterwards adds its 5 s, untimed).
    Full,
    /// About a fiftieth of it: enough to exercise every code path in milliseconds (tests).
    Quick,
}

impl Scale {
    /// `full` at full scale, and a fiftieth of it (at least 1) in quick mode.
    pub fn of(self, full: usize) -> usize {
        match self {
            Scale::Full => full,
            Scale::Quick => (full / 50).max(1),
        }
    }
}

/// What a run computed, and what it should have computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Derived from the memory the run allocated and filled.
    pub checksum: u64,
    /// Derived from the generator's own record of the input, without the run's data structures.
    pub expected: u64,
}

impl Outcome {
    /// Whether the run produced the answer it had to.
    pub fn passed(&self) -> bool {
        self.checksum == self.expected
    }
}

/// A prepared workload: calling it does the timed work.
pub type Run = Box<dyn FnOnce() -> Outcome>;

/// One workload of the benchmark.
#[derive(Clone, Copy, Debug)]
pub struct Workload {
    /// Its name on the command line and in the reports.
    pub name: &'static str,
    /// One line on what it does and which program it stands for.
    pub summary: &'static str,
    /// Generates the input and the expected answer (untimed unless the timing is the whole
    /// process's).
    pub prepare: fn(Scale) -> Run,
    /// What its time is.
    pub timing: Timing,
    /// What the process does after the timed run, if it stands for a service that goes quiet
    /// after a burst: the phase is left out of the time, and reports the resident memory the
    /// allocator kept.
    pub quiet: Option<Quiet>,
}

/// A quiet phase after the run: waits as an idle service does, then returns the process's
/// resident memory in KiB (`None` where the platform does not say).
pub type Quiet = fn(Scale) -> Option<u64>;

/// What a workload's time measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    /// The run alone, as the driver clocks it: preparation, start-up and exit are left out.
    Run,
    /// The run's CPU time, all threads: for a workload that pauses by design, whose wall time
    /// is mostly its pauses and would hide what the allocator costs.
    Cpu,
    /// The whole process, from spawn to exit, as the benchmark runner clocks it: for workloads
    /// that stand for short-lived programs, whose allocator's start-up and exit are part of
    /// what their users wait for.
    WholeProcess,
}

/// Every workload, in the order the reports list them.
pub const ALL: &[Workload] = &[
    producer_loop::WORKLOAD,
    indexing::WORKLOAD,
    policy_eval::WORKLOAD,
    replay::WORKLOAD,
    small_heap::WORKLOAD,
    cross_thread::TWO_THREADS,
    cross_thread::FOUR_THREADS,
    server_churn::WORKLOAD,
    growth::WORKLOAD,
    regrowth::WORKLOAD,
    large_aligned::WORKLOAD,
    large_touch::WORKLOAD,
    large_reuse::WORKLOAD,
    producer_consumer::WORKLOAD,
    pipeline::WORKLOAD,
    handoff::WORKLOAD,
    document_tree::WORKLOAD,
    short_lived::WORKLOAD,
    idle::RETURN,
    idle::STILL,
    bursty::WORKLOAD,
];

/// The workloads that only mean something under a memory limit (the runner's `limit` command),
/// which the benchmark's runs leave out.
pub const UNDER_A_LIMIT: &[Workload] = &[phase_change::WORKLOAD];

/// The workload called `name`, of either list.
pub fn find(name: &str) -> Option<&'static Workload> {
    ALL.iter().chain(UNDER_A_LIMIT).find(|w| w.name == name)
}

/// Folds `value` into a running checksum; order matters, so a reordered result is caught too.
pub fn mix(sum: u64, value: u64) -> u64 {
    (sum ^ value).wrapping_mul(0x0100_0000_01b3).rotate_left(17)
}

#[cfg(test)]
mod tests {
    use super::{ALL, Scale, UNDER_A_LIMIT, Workload};
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;
    use std::time::{Duration, Instant};

    /// The test binary's allocator: the system's, counting the bytes each thread allocates, so
    /// that a test can check the size of a workload it runs on its own thread.
    struct Counting;

    thread_local! {
        static ALLOCATED: Cell<usize> = const { Cell::new(0) };
    }

    // SAFETY: every call is forwarded to `System` with the same arguments; the count is a
    // const-initialized thread-local, whose access allocates nothing.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let _ = ALLOCATED.try_with(|n| n.set(n.get() + layout.size()));
            // SAFETY: the caller's contract for `alloc`, passed on.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: the caller's contract for `dealloc`: `ptr` came from `System` above.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[global_allocator]
    static COUNTING: Counting = Counting;

    /// The bytes this thread has allocated so far.
    pub(crate) fn allocated_here() -> usize {
        ALLOCATED.with(Cell::get)
    }

    fn every_workload() -> impl Iterator<Item = &'static Workload> {
        ALL.iter().chain(UNDER_A_LIMIT)
    }

    /// Every workload's quick run produces the answer its generator predicted. The benchmark's
    /// integration test checks the same in every allocator's binary; this one fails closer to
    /// the code when a workload itself is wrong.
    #[test]
    fn every_workload_passes_its_own_check_in_quick_mode() {
        for workload in every_workload() {
            let outcome = (workload.prepare)(Scale::Quick)();
            assert!(outcome.passed(), "{}: {outcome:?}", workload.name);
            assert_ne!(outcome.checksum, 0, "{}: an empty run", workload.name);
        }
    }

    /// A workload that goes quiet stays quiet for its phase (the shortest, bursty's last pause,
    /// is 10 ms in quick mode), then reads its resident memory, where the platform says it
    /// (Linux): at least the MiB of the test binary's own pages.
    #[test]
    fn every_quiet_phase_lasts_and_reports_resident_memory_where_the_platform_has_it() {
        for workload in ALL {
            let Some(quiet) = workload.quiet else {
                continue;
            };
            let start = Instant::now();
            let kib = quiet(Scale::Quick);
            let took = start.elapsed();
            assert!(
                took >= Duration::from_millis(10),
                "{}: {took:?}",
                workload.name
            );
            if cfg!(target_os = "linux") {
                assert!(kib.is_some_and(|k| k >= 1024), "{}: {kib:?}", workload.name);
            } else {
                assert_eq!(kib, None, "{}", workload.name);
            }
        }
    }

    #[test]
    fn names_are_unique_and_command_line_friendly() {
        let all: Vec<&Workload> = every_workload().collect();
        for (i, a) in all.iter().enumerate() {
            assert!(
                a.name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            );
            assert!(
                all[i + 1..].iter().all(|b| b.name != a.name),
                "{} twice",
                a.name
            );
        }
    }
}
