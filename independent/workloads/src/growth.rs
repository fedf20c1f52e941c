//! growth: 64 live values, half Vec<u64> and half String, each grown element by element
//! towards its own random target size, visited in random interleaved order. A value that
//! reaches its target is checked, dropped and replaced by a fresh empty one. Every growth
//! step past the capacity is a realloc, and the interleaving keeps the reallocs of many
//! growing blocks mixed together.

use crate::util::{keep, Report, Rng};
use std::time::{Duration, Instant};

const SLOTS: usize = 64;
/// Bytes pushed in all, over the whole run.
const BUDGET: u64 = 400 << 20;
/// Target sizes, log-uniform (bytes).
const MIN_TARGET: u64 = 256;
const MAX_TARGET: u64 = 2 << 20;

const TEXT: &[u8] = b"the quick brown fox jumps over the lazy dog while five boxing wizards \
jump quickly and a grumpy wizard makes a toxic brew for the evil queen and jack ";

enum Value {
    Words(Vec<u64>, usize),
    Text(String, usize),
}

impl Value {
    fn fresh(rng: &mut Rng) -> Value {
        let bytes = rng.log_uniform(MIN_TARGET, MAX_TARGET) as usize;
        if rng.next_u64() & 1 == 0 {
            Value::Words(Vec::new(), bytes / 8)
        } else {
            Value::Text(String::new(), bytes)
        }
    }

    fn capacity_bytes(&self) -> usize {
        match self {
            Value::Words(v, _) => v.capacity() * 8,
            Value::Text(s, _) => s.capacity(),
        }
    }
}

/// What the run has done so far, besides the live values themselves.
#[derive(Default)]
struct Tally {
    /// Bytes pushed (the run stops at `BUDGET`).
    pushed: u64,
    /// Sum of the live values' capacities (bytes).
    cap_now: usize,
    /// The largest `cap_now` so far.
    cap_peak: usize,
    /// Values that reached their target.
    completed: u64,
    checksum: u64,
}

pub fn run() {
    let mut rng = Rng::new(0x67_72_6f_77_74_68);
    let start = Instant::now();
    let mut slots: Vec<Value> = (0..SLOTS).map(|_| Value::fresh(&mut rng)).collect();
    let mut tally = Tally::default();

    while tally.pushed < BUDGET {
        visit(&mut slots, &mut rng, &mut tally);
    }
    drop(keep(slots));
    let elapsed = start.elapsed();
    report(elapsed, &tally);
}

/// One visit: grows a random slot's value by 16-1024 steps; a value that reaches its target
/// is replaced by a fresh one.
fn visit(slots: &mut [Value], rng: &mut Rng, tally: &mut Tally) {
    let i = rng.below(SLOTS as u64) as usize;
    let steps = rng.range(16, 1024) as usize;
    let before = slots[i].capacity_bytes();
    let done = match &mut slots[i] {
        Value::Words(v, target) => grow_words(v, *target, steps, tally),
        Value::Text(s, target) => grow_text(s, *target, steps, rng, tally),
    };
    let after = slots[i].capacity_bytes();
    tally.cap_now = tally.cap_now + after - before;
    if done {
        tally.cap_now -= after;
        slots[i] = Value::fresh(rng);
        tally.completed += 1;
    }
    tally.cap_peak = tally.cap_peak.max(tally.cap_now);
}

/// Pushes up to `steps` words; true (and the value checked) once it reaches `target`.
fn grow_words(v: &mut Vec<u64>, target: usize, steps: usize, tally: &mut Tally) -> bool {
    let mut x = v.len() as u64 ^ 0x9E37_79B9;
    let n = steps.min(target - v.len());
    for _ in 0..n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        v.push(x);
    }
    tally.pushed += n as u64 * 8;
    if v.len() >= target {
        tally.checksum = tally
            .checksum
            .wrapping_add(v[v.len() / 2])
            .wrapping_add(v.len() as u64);
        true
    } else {
        false
    }
}

/// Appends up to `steps * 4` bytes of text; true (and the value checked) once it reaches
/// `target`.
fn grow_text(
    s: &mut String,
    target: usize,
    steps: usize,
    rng: &mut Rng,
    tally: &mut Tally,
) -> bool {
    // Words appended with push_str, separated by single pushed chars.
    let want = (target - s.len()).min(steps * 4);
    let goal = s.len() + want;
    while s.len() < goal {
        let at = rng.below(TEXT.len() as u64 - 16) as usize;
        let len = (rng.range(1, 12) as usize).min(goal - s.len());
        // TEXT is ASCII, so any byte range of it is valid UTF-8.
        s.push_str(std::str::from_utf8(&TEXT[at..at + len]).unwrap());
        if s.len() < goal {
            s.push(if len & 1 == 0 { ' ' } else { ',' });
        }
    }
    tally.pushed += want as u64;
    if s.len() >= target {
        let b = s.as_bytes();
        tally.checksum = tally
            .checksum
            .wrapping_add(b[b.len() / 2] as u64)
            .wrapping_add(b.len() as u64);
        true
    } else {
        false
    }
}

fn report(elapsed: Duration, tally: &Tally) {
    Report::new("growth")
        .ms("work_ms", elapsed)
        .kv("values_completed", tally.completed)
        .kv("pushed_mib", tally.pushed >> 20)
        .kv(
            "heap_peak_est_mib",
            format!("{:.1}", tally.cap_peak as f64 / 1048576.0),
        )
        .kv("checksum", tally.checksum)
        .kv("resident_end_kib", crate::util::resident_kib())
        .print();
}
