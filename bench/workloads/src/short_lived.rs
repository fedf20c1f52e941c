//! A short-lived process: about 10 ms from start to exit, as a command-line tool that parses a
//! small JSON input, answers a few queries and exits (regorus' `eval` takes about as long).
//! Timed from spawn to exit, so what an allocator costs at start-up (reserving and committing
//! its first arenas, reading its options) and at exit counts, and its peak RSS is mostly what it
//! committed up front.

use crate::{Outcome, Run, Scale, Timing, Workload, mix};
use seeded_rng::Rng;
use serde_json::Value;

pub const WORKLOAD: Workload = Workload {
    name: "short-lived",
    summary: "a 10 ms process: parse a 200 KB JSON input, answer queries, exit (timed spawn to exit)",
    prepare,
    timing: Timing::WholeProcess,
    quiet: None,
};

fn prepare(scale: Scale) -> Run {
    let records = scale.of(3_000);
    // The input is generated in the process too, as a tool would read it: cheap next to the
    // parse, and the same on every allocator.
    let mut rng = Rng::new(41);
    let mut input = String::from("[");
    let mut expected = 0;
    for i in 0..records {
        let (score, tags) = (rng.below(1000), rng.between(1, 4));
        if i > 0 {
            input.push(',');
        }
        input.push_str(&format!(
            r#"{{"id":{i},"name":"record-{i}","score":{score},"tags":["#
        ));
        for t in 0..tags {
            input.push_str(&format!(
                r#"{}"t{}""#,
                if t > 0 { "," } else { "" },
                (i + t) % 17
            ));
        }
        input.push_str("]}");
        expected = mix(expected, (score + tags) as u64);
    }
    input.push(']');
    Box::new(move || {
        let document: Value = serde_json::from_str(&input).expect("the generated input parses");
        let checksum = document
            .as_array()
            .expect("an array of records")
            .iter()
            .fold(0, |sum, record| {
                let score = record["score"].as_u64().expect("a score");
                let tags = record["tags"].as_array().expect("tags").len() as u64;
                mix(sum, score + tags)
            });
        Outcome { checksum, expected }
    })
}
