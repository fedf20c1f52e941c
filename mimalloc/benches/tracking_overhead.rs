//! What `Tracking<MiMalloc>` costs over `MiMalloc`, on small-object churn.
//!
//! ```sh
//! cargo bench -p mimalloc --features tracking --bench tracking_overhead
//! cargo bench -p mimalloc --features tracking --bench tracking_overhead -- --callgrind
//! ```
//!
//! Workloads, each run through `MiMalloc`, `Tracking<MiMalloc>`, and `Tracking<MiMalloc>` with a
//! budget scope selected on every thread that runs it ("scoped", `mimalloc::budget`), by direct
//! `GlobalAlloc` calls (the same code path a `#[global_allocator]` takes, minus the
//! `__rust_alloc` shim all would share):
//!
//! - `pair`: allocate a 32-byte block, write it, free it: the tightest alloc+free loop;
//! - `pair-zeroed`: the same with `alloc_zeroed`;
//! - `churn`: a larson-style working set of 2,000 blocks of 8-512 bytes (2% of 1-16 KiB);
//!   each step frees a random block and allocates a new one of a random size, writing its
//!   first and last byte and reading the freed one's (the small-object churn of server code);
//! - `churn-2-threads`: the same on two threads at once, each with its own working set.
//! - `pair-settling`: `pair` with a window of 0 (`tracking::set_window(Some(0))`), so that every
//!   call of `Tracking` takes its slow path and settles with the process-wide figures: the cost
//!   of that path, which the other workloads reach only when a thread's change leaves its window.
//!
//! - `churn-filled`: `churn`, but every new block is filled (memset) and every freed one read
//!   at both ends, as the benchmark's `server-churn` workload does with `vec![tag; len]`.
//!
//! Time: `ROUNDS` alternating runs of each allocator (MiMalloc, Tracking, scoped, MiMalloc, ...),
//! reporting the median and the minimum per step and the overhead of each. On Linux the clock
//! is the process's CPU time (time spent descheduled by other load does not count), elsewhere
//! wall time. The alternation, medians and minimums are there for noisy machines.
//!
//! `--callgrind`: runs itself under valgrind's callgrind twice per workload and allocator with
//! N and 2N steps, and prints the instructions per step: (I(2N) - I(N)) / N, which cancels the
//! setup. Instruction counts are deterministic; they are not time.

use mimalloc::budget::{self, Usage};
use mimalloc::{tracking, MiMalloc, Tracking};
use std::alloc::{GlobalAlloc, Layout};
use std::process::Command;

/// Nanoseconds of CPU time of the whole process (Linux), or of wall time elsewhere.
#[cfg(target_os = "linux")]
fn now_ns() -> u128 {
    #[repr(C)]
    struct Timespec {
        sec: std::os::raw::c_long,
        nsec: std::os::raw::c_long,
    }
    extern "C" {
        fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
    }
    const CLOCK_PROCESS_CPUTIME_ID: i32 = 2;
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `ts` is a valid `struct timespec` (two `long`s on Linux) to write to.
    let rc = unsafe { clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0);
    ts.sec as u128 * 1_000_000_000 + ts.nsec as u128
}

#[cfg(not(target_os = "linux"))]
fn now_ns() -> u128 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

static PLAIN: MiMalloc = MiMalloc;
static TRACKING: Tracking<MiMalloc> = Tracking::new(MiMalloc);

const ROUNDS: usize = 21;
const SLOTS: usize = 2_000;

/// xorshift64*: deterministic, cheap, the same sequence for both allocators.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Keeps `x` from being optimized away.
fn sink(x: usize) {
    // SAFETY: a read of a local variable.
    unsafe { std::ptr::read_volatile(&x) };
}

fn pair<A: GlobalAlloc>(a: &A, steps: usize) -> usize {
    pair_with(a, steps, false)
}

/// Inlined, so that `zeroed` is a constant in each loop.
#[inline(always)]
fn pair_with<A: GlobalAlloc>(a: &A, steps: usize, zeroed: bool) -> usize {
    let layout = Layout::from_size_align(32, 8).unwrap();
    let mut sum = 0usize;
    for i in 0..steps {
        // SAFETY: non-zero size; written within bounds; freed once with the same layout.
        unsafe {
            let p = if zeroed {
                a.alloc_zeroed(layout)
            } else {
                a.alloc(layout)
            };
            assert!(!p.is_null());
            p.write(i as u8);
            sum = sum.wrapping_add(std::ptr::read_volatile(p) as usize);
            a.dealloc(p, layout);
        }
    }
    sum
}

fn block_len(rng: &mut Rng) -> usize {
    if rng.below(100) < 2 {
        1024 + rng.below(15 * 1024)
    } else {
        8 + rng.below(505)
    }
}

fn churn<A: GlobalAlloc>(a: &A, steps: usize, seed: u64) -> usize {
    churn_with(a, steps, seed, false)
}

fn churn_with<A: GlobalAlloc>(a: &A, steps: usize, seed: u64, fill: bool) -> usize {
    let mut rng = Rng(seed | 1);
    let mut slots: Vec<(usize, usize)> = vec![(0, 0); SLOTS]; // (address, length)
    let mut sum = 0usize;
    for _ in 0..steps {
        let slot = rng.below(SLOTS);
        let len = block_len(&mut rng);
        // SAFETY: every block is allocated here with `Layout(len, 8)`, written within bounds,
        // and freed once, with its own length.
        unsafe {
            let (addr, old) = slots[slot];
            if old > 0 {
                let p = addr as *mut u8;
                sum = sum.wrapping_add(*p as usize + *p.add(old - 1) as usize);
                a.dealloc(p, Layout::from_size_align_unchecked(old, 8));
            }
            let p = a.alloc(Layout::from_size_align_unchecked(len, 8));
            assert!(!p.is_null());
            if fill {
                p.write_bytes(len as u8, len);
            } else {
                p.write(len as u8);
                p.add(len - 1).write(len as u8);
            }
            slots[slot] = (p as usize, len);
        }
    }
    for (addr, len) in slots {
        if len > 0 {
            // SAFETY: as above.
            unsafe { a.dealloc(addr as *mut u8, Layout::from_size_align_unchecked(len, 8)) };
        }
    }
    sum
}

fn churn_2_threads<A: GlobalAlloc + Sync>(a: &'static A, steps: usize) -> usize {
    let other = std::thread::spawn(move || churn(a, steps / 2, 2));
    let mine = churn(a, steps / 2, 1);
    mine.wrapping_add(other.join().unwrap())
}

/// Runs `work` in a budget scope of its own.
fn scoped(work: impl FnOnce() -> usize) -> usize {
    let mut usage = Usage::new();
    let result = budget::scope(&mut usage, work);
    result.wrapping_add(usage.bytes() as usize)
}

fn churn_2_threads_scoped(steps: usize) -> usize {
    let other = std::thread::spawn(move || scoped(|| churn(&TRACKING, steps / 2, 2)));
    let mine = scoped(|| churn(&TRACKING, steps / 2, 1));
    mine.wrapping_add(other.join().unwrap())
}

/// Runs `work` with a window of 0, the thread's taken at once (publishing opens its next one),
/// then restores the default.
fn settling(work: impl FnOnce() -> usize) -> usize {
    tracking::set_window(Some(0));
    tracking::publish();
    let result = work();
    tracking::set_window(None);
    tracking::publish();
    result
}

struct Workload {
    name: &'static str,
    steps: usize,
    plain: fn(usize) -> usize,
    tracking: fn(usize) -> usize,
    scoped: fn(usize) -> usize,
}

impl Workload {
    fn run(&self, alloc: &str) -> fn(usize) -> usize {
        match alloc {
            "plain" => self.plain,
            "tracking" => self.tracking,
            "scoped" => self.scoped,
            _ => panic!("no allocator {alloc:?}: plain, tracking or scoped"),
        }
    }
}

const ALLOCATORS: [&str; 3] = ["plain", "tracking", "scoped"];

const WORKLOADS: &[Workload] = &[
    Workload {
        name: "pair",
        steps: 20_000_000,
        plain: |n| pair(&PLAIN, n),
        tracking: |n| pair(&TRACKING, n),
        scoped: |n| scoped(|| pair(&TRACKING, n)),
    },
    Workload {
        name: "pair-zeroed",
        steps: 20_000_000,
        plain: |n| pair_with(&PLAIN, n, true),
        tracking: |n| pair_with(&TRACKING, n, true),
        scoped: |n| scoped(|| pair_with(&TRACKING, n, true)),
    },
    Workload {
        name: "churn",
        steps: 10_000_000,
        plain: |n| churn(&PLAIN, n, 1),
        tracking: |n| churn(&TRACKING, n, 1),
        scoped: |n| scoped(|| churn(&TRACKING, n, 1)),
    },
    Workload {
        name: "churn-filled",
        steps: 5_000_000,
        plain: |n| churn_with(&PLAIN, n, 1, true),
        tracking: |n| churn_with(&TRACKING, n, 1, true),
        scoped: |n| scoped(|| churn_with(&TRACKING, n, 1, true)),
    },
    Workload {
        name: "churn-2-threads",
        steps: 10_000_000,
        plain: |n| churn_2_threads(&PLAIN, n),
        tracking: |n| churn_2_threads(&TRACKING, n),
        scoped: churn_2_threads_scoped,
    },
    Workload {
        name: "pair-settling",
        steps: 2_000_000,
        plain: |n| pair(&PLAIN, n),
        tracking: |n| settling(|| pair(&TRACKING, n)),
        scoped: |n| settling(|| scoped(|| pair(&TRACKING, n))),
    },
];

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn time(filter: Option<&str>) {
    let clock = if cfg!(target_os = "linux") {
        "CPU"
    } else {
        "wall"
    };
    println!("{clock} time, {ROUNDS} alternating rounds, ns per step: median (minimum)");
    for w in WORKLOADS
        .iter()
        .filter(|w| filter.map_or(true, |f| w.name == f))
    {
        let mut times: [Vec<f64>; 3] = Default::default();
        for _ in 0..ROUNDS {
            for (alloc, times) in ALLOCATORS.iter().zip(times.iter_mut()) {
                let run = w.run(alloc);
                let start = now_ns();
                sink(run(w.steps));
                times.push((now_ns() - start) as f64 / w.steps as f64);
            }
        }
        let min = |v: &[f64]| v.iter().cloned().fold(f64::MAX, f64::min);
        let [plain, tracking, scoped] = &mut times;
        let (pm, tm, sm) = (min(plain), min(tracking), min(scoped));
        let (p, t, s) = (median(plain), median(tracking), median(scoped));
        println!(
            "  {:<16} MiMalloc {p:6.2} ({pm:6.2})  Tracking {t:6.2} ({tm:6.2}) {:+.1}% ({:+.1}%)  \
             scoped {s:6.2} ({sm:6.2}) {:+.1}% ({:+.1}%)",
            w.name,
            (t / p - 1.0) * 100.0,
            (tm / pm - 1.0) * 100.0,
            (s / p - 1.0) * 100.0,
            (sm / pm - 1.0) * 100.0
        );
    }
}

/// Instructions callgrind counted for one run of `count WORKLOAD ALLOC STEPS` of this binary.
fn instructions(workload: &str, alloc: &str, steps: usize) -> Option<u64> {
    let exe = std::env::current_exe().ok()?;
    let out = Command::new("valgrind")
        .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
        .arg(exe)
        .args(["count", workload, alloc, &steps.to_string()])
        .output()
        .ok()?;
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err.lines().find(|l| l.contains("Collected :"))?;
    line.rsplit(':').next()?.trim().parse().ok()
}

fn callgrind(filter: Option<&str>) {
    if Command::new("valgrind").arg("--version").output().is_err() {
        println!("SKIPPED callgrind: valgrind is not installed");
        return;
    }
    println!("callgrind, instructions per step, (I(2N) - I(N)) / N:");
    for w in WORKLOADS
        .iter()
        .filter(|w| filter.map_or(true, |f| w.name == f))
    {
        let n = 200_000;
        let per_step = |alloc: &str| -> Option<f64> {
            let one = instructions(w.name, alloc, n)?;
            let two = instructions(w.name, alloc, 2 * n)?;
            Some((two as f64 - one as f64) / n as f64)
        };
        match (per_step("plain"), per_step("tracking"), per_step("scoped")) {
            (Some(p), Some(t), Some(s)) => println!(
                "  {:<16} MiMalloc {p:7.1}  Tracking {t:7.1} (+{:.1}, {:+.1}%)  \
                 scoped {s:7.1} (+{:.1}, {:+.1}%)",
                w.name,
                t - p,
                (t / p - 1.0) * 100.0,
                s - p,
                (s / p - 1.0) * 100.0
            ),
            _ => println!("  {:<16} could not be measured", w.name),
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("count") {
        let w = WORKLOADS
            .iter()
            .find(|w| w.name == args[1])
            .expect("workload");
        let steps = args[3].parse().expect("steps");
        sink(w.run(&args[2])(steps));
        return;
    }
    // `cargo bench` passes `--bench`; anything else not starting with "--" picks a workload.
    let filter = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .map(String::as_str);
    if args.iter().any(|a| a == "--callgrind") {
        callgrind(filter);
    } else {
        time(filter);
    }
}
