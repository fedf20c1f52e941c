//! Producer/consumer in steady state: two producer threads allocate small messages, one at a
//! time, and send each through a bounded channel to one of two consumer threads, which free
//! them. Every consumer frees blocks of both producers, for seconds, while the producers keep
//! allocating: what an allocator does with the pages that other threads free into decides its
//! memory here (mimalloc 3.6 lets a freeing thread reclaim such a page into its own heap, where
//! nothing is allocated, so the producers take fresh pages). Unlike `cross-thread-4`, messages
//! travel one by one and the run is long enough to reach the steady state. It stands for
//! services whose request threads hand work items to worker threads.

use crate::{Outcome, Run, Scale, Timing, Workload, mix};
use seeded_rng::Rng;
use std::sync::mpsc;
use std::thread;

pub const WORKLOAD: Workload = Workload {
    name: "producer-consumer",
    summary: "2 producer threads send small messages one by one to 2 consumer threads, which free them",
    prepare,
    timing: Timing::Run,
    quiet: None,
};

const PRODUCERS: usize = 2;
const CONSUMERS: usize = 2;
/// Messages waiting per channel before a producer blocks: producers run ahead of consumers in
/// bursts, so a few megabytes of messages are in flight at times.
const BOUND: usize = 8192;

/// A message as a pipeline passes it on: an owned, heap-allocated payload of its own.
struct Message {
    producer: usize,
    payload: Vec<u8>,
}

fn prepare(scale: Scale) -> Run {
    let per_producer = scale.of(2_000_000);
    let expected = (0..PRODUCERS).fold(0u64, |sum, p| {
        sum.wrapping_add(expected_sum(p, per_producer))
    });
    Box::new(move || {
        let sums = thread::scope(|scope| {
            let (senders, receivers): (Vec<_>, Vec<_>) = (0..CONSUMERS)
                .map(|_| mpsc::sync_channel::<Message>(BOUND))
                .unzip();
            for p in 0..PRODUCERS {
                let senders = senders.clone();
                scope.spawn(move || produce(p, per_producer, &senders));
            }
            drop(senders);
            let consumers: Vec<_> = receivers
                .into_iter()
                .map(|r| scope.spawn(move || consume(&r)))
                .collect();
            consumers
                .into_iter()
                .map(|c| c.join().expect("consumer"))
                .collect::<Vec<u64>>()
        });
        Outcome {
            // The consumers' shares depend on scheduling; their total does not.
            checksum: mix(0, sums.into_iter().fold(0, u64::wrapping_add)),
            expected: mix(0, expected),
        }
    })
}

fn payload_len(rng: &mut Rng) -> usize {
    rng.between(16, 240)
}

/// What one producer's messages add up to, from its generator alone.
fn expected_sum(producer: usize, count: usize) -> u64 {
    let mut rng = Rng::new(300 + producer as u64);
    (0..count).fold(0u64, |sum, i| {
        let len = payload_len(&mut rng);
        sum.wrapping_add(len as u64 + u64::from(byte(producer, i)))
    })
}

/// The byte a message is filled with: depends on its producer and its number, so that a
/// message delivered twice, or torn, changes the sum.
fn byte(producer: usize, i: usize) -> u8 {
    (i as u8).wrapping_mul(3) ^ producer as u8
}

fn produce(producer: usize, count: usize, consumers: &[mpsc::SyncSender<Message>]) {
    let mut rng = Rng::new(300 + producer as u64);
    for i in 0..count {
        let payload = vec![byte(producer, i); payload_len(&mut rng)];
        consumers[i % consumers.len()]
            .send(Message { producer, payload })
            .expect("the consumers run until every producer is done");
    }
}

fn consume(messages: &mpsc::Receiver<Message>) -> u64 {
    let mut sum = 0u64;
    for message in messages {
        let last = *message.payload.last().expect("payloads are not empty");
        assert!(
            message.payload.iter().all(|&b| b == last),
            "the message of producer {} arrived intact",
            message.producer
        );
        sum = sum.wrapping_add(message.payload.len() as u64 + u64::from(last));
    }
    sum
}
