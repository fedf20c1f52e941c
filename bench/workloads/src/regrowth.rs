//! Growth that starts over: 64 `Vec<u64>`s and 64 `String`s grown by interleaved pushes, as in
//! `growth`, but each has a random target size of up to about 800 KB; a lane that reaches it is
//! read back, dropped and grown again from empty towards a new target. So the heap keeps seeing
//! the whole life of a growing buffer, from a few bytes through every doubling to the large
//! sizes, and the blocks freed at each size are what the next lanes can reuse. It stands for
//! request buffers and builders that are reused by rebuilding them.

use crate::{Outcome, Run, Scale, Timing, Workload, mix};
use seeded_rng::Rng;

pub const WORKLOAD: Workload = Workload {
    name: "regrowth",
    summary: "64 Vec<u64> and 64 String lanes pushed in turn, each dropped and regrown at a random size to 800 KB",
    prepare,
    timing: Timing::Run,
    quiet: None,
};

const LANES: usize = 64;
const PIECES: [&str; 7] = ["a", "bb", "ccc", "dddd", "eeeee", "ffffff", "ggggggg"];
/// Steps at full scale, each one push onto a number lane and one onto a text lane.
const STEPS: usize = 40_000_000;

/// The size in bytes at which a lane is dropped and started again.
fn target(rng: &mut Rng) -> usize {
    rng.between(1_000, 800_000)
}

fn piece(step: usize) -> &'static str {
    PIECES[step % PIECES.len()]
}

fn prepare(scale: Scale) -> Run {
    let steps = scale.of(STEPS);
    let expected = simulate(steps);
    Box::new(move || Outcome {
        checksum: regrow(steps),
        expected,
    })
}

/// What a number lane adds when it is read back: its length and the sum of its values.
fn numbers_sum(lane: &[u64]) -> u64 {
    mix(
        lane.len() as u64,
        lane.iter().copied().fold(0, u64::wrapping_add),
    )
}

/// What a text lane adds when it is read back: its length and the sum of its bytes.
fn text_sum(lane: &str) -> u64 {
    let bytes = lane.bytes().map(u64::from).fold(0, u64::wrapping_add);
    mix(lane.len() as u64, bytes)
}

fn regrow(steps: usize) -> u64 {
    let mut rng = Rng::new(61);
    let mut numbers: Vec<(Vec<u64>, usize)> =
        (0..LANES).map(|_| (Vec::new(), target(&mut rng))).collect();
    let mut texts: Vec<(String, usize)> = (0..LANES)
        .map(|_| (String::new(), target(&mut rng)))
        .collect();
    let mut sum = 0;
    for step in 0..steps {
        let (lane, goal) = &mut numbers[rng.below(LANES)];
        lane.push(step as u64);
        if lane.len() * 8 >= *goal {
            sum = mix(sum, numbers_sum(&std::mem::take(lane)));
            *goal = target(&mut rng);
        }
        let (lane, goal) = &mut texts[rng.below(LANES)];
        lane.push_str(piece(step));
        if lane.len() >= *goal {
            sum = mix(sum, text_sum(&std::mem::take(lane)));
            *goal = target(&mut rng);
        }
    }
    let rest = numbers.iter().map(|(lane, _)| numbers_sum(lane));
    let rest = rest.chain(texts.iter().map(|(lane, _)| text_sum(lane)));
    rest.fold(sum, mix)
}

/// One lane as the generator sees it: its length, the sum of what it holds, and its target.
#[derive(Clone, Copy)]
struct Counts {
    len: usize,
    sum: u64,
    goal: usize,
}

impl Counts {
    /// An empty lane with a new target.
    fn fresh(rng: &mut Rng) -> Self {
        Counts {
            len: 0,
            sum: 0,
            goal: target(rng),
        }
    }
}

/// The same steps on counts alone, without a vector or a string.
fn simulate(steps: usize) -> u64 {
    let mut rng = Rng::new(61);
    let mut numbers: Vec<Counts> = (0..LANES).map(|_| Counts::fresh(&mut rng)).collect();
    let mut texts: Vec<Counts> = (0..LANES).map(|_| Counts::fresh(&mut rng)).collect();
    let mut sum = 0;
    for step in 0..steps {
        let lane = &mut numbers[rng.below(LANES)];
        (lane.len, lane.sum) = (lane.len + 1, lane.sum.wrapping_add(step as u64));
        if lane.len * 8 >= lane.goal {
            sum = mix(sum, mix(lane.len as u64, lane.sum));
            *lane = Counts::fresh(&mut rng);
        }
        let lane = &mut texts[rng.below(LANES)];
        let piece = piece(step);
        let bytes = piece.bytes().map(u64::from).sum::<u64>();
        (lane.len, lane.sum) = (lane.len + piece.len(), lane.sum.wrapping_add(bytes));
        if lane.len >= lane.goal {
            sum = mix(sum, mix(lane.len as u64, lane.sum));
            *lane = Counts::fresh(&mut rng);
        }
    }
    let rest = numbers.iter().chain(&texts);
    rest.fold(sum, |sum, lane| mix(sum, mix(lane.len as u64, lane.sum)))
}
