//! Work handed over, then left behind: two producer threads build messages of 16 B to 1 KiB (a
//! byte buffer or a string, as a request or a log line is) and send them through two bounded
//! channels to two consumer threads, which check and free them; each producer exits once it has
//! sent its share, while up to 8 192 of its messages still wait to be freed. Every consumer frees
//! into pages that other threads allocated, and at the end into pages whose thread is gone
//! (mimalloc 3.6 lets a freeing thread reclaim such pages into its own heap, where nothing is
//! allocated: `page_reclaim_on_free`). Unlike `producer-consumer` and `pipeline`, the messages
//! spread over the size classes up to 1 KiB, where a page holds few blocks. It stands for
//! services that hand requests from short-lived connection threads to workers.

use crate::{Outcome, Run, Scale, Timing, Workload, mix};
use seeded_rng::Rng;
use std::sync::mpsc;
use std::thread;

pub const WORKLOAD: Workload = Workload {
    name: "handoff",
    summary: "2 producer threads send 16 B-1 KiB messages to 2 consumer threads and exit while their last messages wait to be freed",
    prepare,
    timing: Timing::Run,
    quiet: None,
};

const PRODUCERS: usize = 2;
const CONSUMERS: usize = 2;
/// Messages waiting per channel before a producer blocks.
const BOUND: usize = 4096;
/// Messages per producer at full scale.
const MESSAGES: usize = 1_000_000;

/// A message: bytes or text of one repeated character, so that a consumer can check it whole.
enum Message {
    Bytes(Vec<u8>),
    Text(String),
}

impl Message {
    fn content(&self) -> &[u8] {
        match self {
            Message::Bytes(bytes) => bytes,
            Message::Text(text) => text.as_bytes(),
        }
    }
}

fn prepare(scale: Scale) -> Run {
    let per_producer = scale.of(MESSAGES);
    let expected = (0..PRODUCERS).fold(0u64, |sum, p| {
        sum.wrapping_add(expected_sum(p, per_producer))
    });
    Box::new(move || {
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..CONSUMERS)
            .map(|_| mpsc::sync_channel::<Message>(BOUND))
            .unzip();
        let consumers: Vec<_> = receivers
            .into_iter()
            .map(|r| thread::spawn(move || consume(&r)))
            .collect();
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let senders = senders.clone();
                thread::spawn(move || produce(p, per_producer, &senders))
            })
            .collect();
        drop(senders);
        // The producers are gone before the consumers have freed the last of their messages.
        for producer in producers {
            producer.join().expect("producer");
        }
        let sums = consumers.into_iter().map(|c| c.join().expect("consumer"));
        Outcome {
            // The consumers' shares depend on scheduling; their total does not.
            checksum: mix(0, sums.fold(0, u64::wrapping_add)),
            expected: mix(0, expected),
        }
    })
}

/// A message's length and character, and whether it is text, from the producer's generator.
fn draw(rng: &mut Rng) -> (usize, u8, bool) {
    let len = rng.between(16, 1024);
    let character = b'a' + rng.below(26) as u8;
    (len, character, rng.percent(50))
}

/// What one producer's messages add up to, from its generator alone.
fn expected_sum(producer: usize, count: usize) -> u64 {
    let mut rng = Rng::new(700 + producer as u64);
    (0..count).fold(0u64, |sum, _| {
        let (len, character, _) = draw(&mut rng);
        sum.wrapping_add(len as u64 * u64::from(character))
    })
}

fn produce(producer: usize, count: usize, consumers: &[mpsc::SyncSender<Message>]) {
    let mut rng = Rng::new(700 + producer as u64);
    for i in 0..count {
        let (len, character, text) = draw(&mut rng);
        let bytes = vec![character; len];
        let message = if text {
            Message::Text(String::from_utf8(bytes).expect("ASCII letters"))
        } else {
            Message::Bytes(bytes)
        };
        consumers[i % consumers.len()]
            .send(message)
            .expect("the consumers run until every producer is done");
    }
}

fn consume(messages: &mpsc::Receiver<Message>) -> u64 {
    let mut sum = 0u64;
    for message in messages {
        let content = message.content();
        let first = content[0];
        assert!(
            content.iter().all(|&b| b == first),
            "a message arrived intact"
        );
        sum = sum.wrapping_add(content.len() as u64 * u64::from(first));
    }
    sum
}
