//! Producer loop: a generated binary log of length-prefixed records is parsed into owned
//! messages, one message per parse call on some passes and a batch per call on others, as the
//! log viewer's producer loop does before handing messages on.

use crate::{Outcome, Run, Scale, Timing, Workload};
use seeded_rng::Rng;

pub const WORKLOAD: Workload = Workload {
    name: "producer-loop",
    summary: "parse a binary log into owned messages, one per call and batches per call",
    prepare,
    timing: Timing::Run,
    quiet: None,
};

/// A parsed log record; it owns its strings, as messages sent to another stage must.
struct Message {
    level: u8,
    target: String,
    text: String,
}

/// Batch size of the many-per-call passes.
const BATCH: usize = 256;

fn prepare(scale: Scale) -> Run {
    let records = scale.of(100_000);
    let passes = 40;
    let mut rng = Rng::new(1);
    let mut log = Vec::new();
    let mut per_pass = 0u64;
    for _ in 0..records {
        let level = rng.below(5) as u8;
        let target: Vec<u8> = (0..rng.between(4, 40)).map(|_| letter(&mut rng)).collect();
        let text: Vec<u8> = (0..rng.between(10, 400))
            .map(|_| letter(&mut rng))
            .collect();
        let payload_len = 2 + target.len() + text.len();
        log.extend_from_slice(&(payload_len as u32).to_le_bytes());
        log.push(level);
        log.push(target.len() as u8);
        log.extend_from_slice(&target);
        log.extend_from_slice(&text);
        per_pass = per_pass.wrapping_add(weight(level, target.len(), &text));
    }
    let expected = per_pass.wrapping_mul(passes);
    Box::new(move || Outcome {
        checksum: run(&log, passes),
        expected,
    })
}

fn letter(rng: &mut Rng) -> u8 {
    b" abcdefghijklmnopqrstuvwxyz"[rng.below(27)]
}

/// What the consumer of a message adds to the checksum.
fn weight(level: u8, target_len: usize, text: &[u8]) -> u64 {
    u64::from(level) + 31 * target_len as u64 + text.len() as u64 + u64::from(text[0])
}

fn consume(sum: u64, message: &Message) -> u64 {
    sum.wrapping_add(weight(
        message.level,
        message.target.len(),
        message.text.as_bytes(),
    ))
}

fn run(log: &[u8], passes: u64) -> u64 {
    let mut sum = 0u64;
    for pass in 0..passes {
        let mut rest = log;
        if pass % 2 == 0 {
            while let Some((message, used)) = parse_one(rest) {
                sum = consume(sum, &message);
                rest = &rest[used..];
            }
        } else {
            loop {
                let (batch, used) = parse_many(rest, BATCH);
                if batch.is_empty() {
                    break;
                }
                sum = batch.iter().fold(sum, consume);
                rest = &rest[used..];
            }
        }
        assert!(rest.is_empty(), "the log parses to its end");
    }
    sum
}

/// Parses the record at the start of `input`: the message and the bytes it used.
fn parse_one(input: &[u8]) -> Option<(Message, usize)> {
    let len = u32::from_le_bytes(input.get(..4)?.try_into().ok()?) as usize;
    let payload = input.get(4..4 + len)?;
    let (&level, rest) = payload.split_first()?;
    let (&target_len, rest) = rest.split_first()?;
    let (target, text) = rest.split_at_checked(usize::from(target_len))?;
    let message = Message {
        level,
        target: String::from_utf8(target.to_vec()).ok()?,
        text: String::from_utf8(text.to_vec()).ok()?,
    };
    Some((message, 4 + len))
}

/// Parses up to `max` records from the start of `input`.
fn parse_many(mut input: &[u8], max: usize) -> (Vec<Message>, usize) {
    let mut batch = Vec::new();
    let mut used = 0;
    while batch.len() < max {
        let Some((message, n)) = parse_one(input) else {
            break;
        };
        batch.push(message);
        input = &input[n..];
        used += n;
    }
    (batch, used)
}
