//! A pipeline with many messages in flight: two producer threads send small boxed messages
//! through four bounded channels, each producer going round all four in turn, and two consumer
//! threads each take from two of them alternately and free what they receive. Up to 16 000
//! messages wait in the channels at a time, so every consumer frees blocks of both producers
//! long after they were allocated, from pages the producers have moved on from. Unlike
//! `producer-consumer` (two channels, one per consumer), messages reach a consumer along two
//! paths. It stands for services that hand many requests between thread pools.

use crate::{Outcome, Run, Scale, Timing, Workload, mix};
use seeded_rng::Rng;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread;

pub const WORKLOAD: Workload = Workload {
    name: "pipeline",
    summary: "2 producer threads send small messages round 4 bounded channels to 2 consumer threads, which free them",
    prepare,
    timing: Timing::Run,
    quiet: None,
};

const PRODUCERS: usize = 2;
const CONSUMERS: usize = 2;
/// Two for each consumer.
const CHANNELS: usize = 2 * CONSUMERS;
/// Messages waiting per channel before a producer blocks.
const BOUND: usize = 4000;
/// Messages per producer at full scale.
const MESSAGES: usize = 1_500_000;

fn prepare(scale: Scale) -> Run {
    let per_producer = scale.of(MESSAGES);
    let expected = (0..PRODUCERS).fold(0u64, |sum, p| {
        sum.wrapping_add(expected_sum(p, per_producer))
    });
    Box::new(move || Outcome {
        // Which consumer frees a message depends on scheduling; the total does not.
        checksum: mix(0, pass_on(per_producer)),
        expected: mix(0, expected),
    })
}

/// Runs the producers and the consumers to the end; the sum of what the consumers read.
fn pass_on(per_producer: usize) -> u64 {
    thread::scope(|scope| {
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..CHANNELS)
            .map(|_| mpsc::sync_channel::<Box<[u8]>>(BOUND))
            .unzip();
        for p in 0..PRODUCERS {
            let senders = senders.clone();
            scope.spawn(move || produce(p, per_producer, &senders));
        }
        // The channels close when the producers' clones are gone.
        drop(senders);
        // Consumer `c` gets channels `c` and `c + CONSUMERS`.
        let mut receivers = receivers.into_iter();
        let first: Vec<_> = receivers.by_ref().take(CONSUMERS).collect();
        let consumers: Vec<_> = first
            .into_iter()
            .zip(receivers)
            .map(|(a, b)| scope.spawn(move || consume(&[a, b])))
            .collect();
        let sums = consumers.into_iter().map(|c| c.join().expect("consumer"));
        sums.fold(0, u64::wrapping_add)
    })
}

fn payload_len(rng: &mut Rng) -> usize {
    rng.between(16, 256)
}

/// The byte a message is filled with: depends on its producer and its number, so that a
/// message delivered twice, or torn, changes the sum.
fn byte(producer: usize, i: usize) -> u8 {
    (i as u8).wrapping_mul(5) ^ (producer as u8).wrapping_mul(0x55)
}

/// What one producer's messages add up to, from its generator alone.
fn expected_sum(producer: usize, count: usize) -> u64 {
    let mut rng = Rng::new(400 + producer as u64);
    (0..count).fold(0u64, |sum, i| {
        let len = payload_len(&mut rng);
        sum.wrapping_add(len as u64 + u64::from(byte(producer, i)))
    })
}

/// Sends message `i` to channel `i + producer` (mod 4): each producer goes round every channel,
/// starting at a different one.
fn produce(producer: usize, count: usize, channels: &[SyncSender<Box<[u8]>>]) {
    let mut rng = Rng::new(400 + producer as u64);
    for i in 0..count {
        let message = vec![byte(producer, i); payload_len(&mut rng)].into_boxed_slice();
        channels[(i + producer) % channels.len()]
            .send(message)
            .expect("the consumers run until every producer is done");
    }
}

/// Takes from its channels alternately, one message each, until all are closed and empty.
/// Blocking on one while the other fills cannot stall the producers: every producer sends to
/// both of a consumer's channels in turn, so while one is empty the other holds at most two
/// messages, far below the bound.
fn consume<const N: usize>(channels: &[Receiver<Box<[u8]>>; N]) -> u64 {
    let mut open = [true; N];
    let mut sum = 0u64;
    while open.contains(&true) {
        for (channel, open) in channels.iter().zip(&mut open) {
            // A closed and drained channel answers at once, without blocking.
            match channel.recv() {
                Ok(message) => sum = sum.wrapping_add(read(&message)),
                Err(_) => *open = false,
            }
        }
    }
    sum
}

/// What a message adds to the sum, read from its memory before it is freed.
fn read(message: &[u8]) -> u64 {
    let last = *message.last().expect("messages are not empty");
    assert!(
        message.iter().all(|&b| b == last),
        "a message arrived intact"
    );
    message.len() as u64 + u64::from(last)
}
