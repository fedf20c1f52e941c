//! Growth: `Vec`s and `String`s built by pushing, many at once and interleaved, so that each
//! doubling goes through `realloc` and a block can rarely grow where it is.

use crate::{Outcome, Run, Scale, Timing, Workload, mix};
use seeded_rng::Rng;

pub const WORKLOAD: Workload = Workload {
    name: "growth",
    summary: "Vec<u64> and String push-heavy, 64 interleaved at a time (the realloc path)",
    prepare,
    timing: Timing::Run,
    quiet: None,
};

const LANES: usize = 64;
const PIECES: [&str; 7] = ["a", "bb", "ccc", "dddd", "eeeee", "ffffff", "ggggggg"];

fn prepare(scale: Scale) -> Run {
    let (steps, rounds) = (scale.of(3_000_000), 6);
    let per_round = mix(
        (0..steps as u64).sum(),
        (0..steps)
            .map(|s| PIECES[s % PIECES.len()].len() as u64)
            .sum(),
    );
    let expected = (0..rounds).fold(0, |sum, _| mix(sum, per_round));
    Box::new(move || {
        let checksum = (0..rounds).fold(0, |sum, round| mix(sum, grow(steps, round)));
        Outcome { checksum, expected }
    })
}

fn grow(steps: usize, round: u64) -> u64 {
    let mut rng = Rng::new(round);
    let mut numbers: Vec<Vec<u64>> = (0..LANES).map(|_| Vec::new()).collect();
    let mut texts: Vec<String> = (0..LANES).map(|_| String::new()).collect();
    for step in 0..steps {
        numbers[rng.below(LANES)].push(step as u64);
        texts[rng.below(LANES)].push_str(PIECES[step % PIECES.len()]);
    }
    let total: u64 = numbers.iter().flatten().sum();
    let text_len: usize = texts.iter().map(String::len).sum();
    mix(total, text_len as u64)
}
