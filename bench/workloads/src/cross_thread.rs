//! Cross-thread: producers allocate messages that consumers on other threads free, through
//! channels, so every block is freed by a thread that did not allocate it (mimalloc's delayed
//! free path, jemalloc's remote frees, glibc's arena locks).

use crate::{Outcome, Run, Scale, Timing, Workload, mix};
use seeded_rng::Rng;
use std::sync::mpsc;
use std::thread;

pub const TWO_THREADS: Workload = Workload {
    name: "cross-thread-2",
    summary: "1 producer thread allocates messages, 1 consumer thread frees them (channels)",
    prepare: |scale| prepare(scale, 2),
    timing: Timing::Run,
    quiet: None,
};

pub const FOUR_THREADS: Workload = Workload {
    name: "cross-thread-4",
    summary: "2 producer threads allocate messages, 2 consumer threads free them (channels)",
    prepare: |scale| prepare(scale, 4),
    timing: Timing::Run,
    quiet: None,
};

/// Messages travel in batches, as a pipeline stage sends them; one channel send per batch.
const BATCH: usize = 64;
/// Batches in flight per channel before the producer waits.
const IN_FLIGHT: usize = 16;

struct Message {
    id: u64,
    payload: Vec<u8>,
}

/// Each message is its own allocation, as in a pipeline whose stages pass boxed messages on:
/// a batch of boxes, not a vector of messages, is the allocation pattern under test.
#[allow(clippy::vec_box)]
type Batch = Vec<Box<Message>>;

fn prepare(scale: Scale, threads: usize) -> Run {
    let pairs = threads / 2;
    let per_producer = scale.of(2_400_000) / pairs;
    let expected = (0..pairs).fold(0, |sum, p| mix(sum, expected_sum(p, per_producer)));
    Box::new(move || {
        let consumers: Vec<u64> = thread::scope(|scope| {
            let consumers: Vec<_> = (0..pairs)
                .map(|p| {
                    let (send, receive) = mpsc::sync_channel::<Batch>(IN_FLIGHT);
                    scope.spawn(move || produce(p, per_producer, &send));
                    scope.spawn(move || consume(&receive))
                })
                .collect();
            consumers
                .into_iter()
                .map(|c| c.join().expect("consumer"))
                .collect()
        });
        Outcome {
            checksum: consumers.into_iter().fold(0, mix),
            expected,
        }
    })
}

fn payload_len(rng: &mut Rng) -> usize {
    if rng.percent(5) {
        rng.between(512, 4096)
    } else {
        rng.between(8, 256)
    }
}

fn expected_sum(producer: usize, count: usize) -> u64 {
    let mut rng = Rng::new(100 + producer as u64);
    (0..count as u64).fold(0, |sum, id| {
        sum.wrapping_add(payload_len(&mut rng) as u64 + u64::from(id as u8))
    })
}

fn produce(producer: usize, count: usize, send: &mpsc::SyncSender<Batch>) {
    let mut rng = Rng::new(100 + producer as u64);
    let mut batch = Vec::with_capacity(BATCH);
    for id in 0..count as u64 {
        let payload = vec![id as u8; payload_len(&mut rng)];
        batch.push(Box::new(Message { id, payload }));
        if batch.len() == BATCH {
            send.send(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)))
                .expect("the consumer runs until the channel closes");
        }
    }
    if !batch.is_empty() {
        send.send(batch).expect("the consumer runs");
    }
}

fn consume(receive: &mpsc::Receiver<Batch>) -> u64 {
    let mut sum = 0u64;
    for batch in receive {
        for message in batch {
            let last = *message.payload.last().expect("payloads are not empty");
            assert_eq!(last, message.id as u8, "the payload arrived intact");
            sum = sum.wrapping_add(message.payload.len() as u64 + u64::from(last));
        }
    }
    sum
}
