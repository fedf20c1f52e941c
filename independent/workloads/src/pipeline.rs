//! pipeline / producer-exit: 2 producer threads make messages (Vec<u8> of 16-1024 bytes,
//! filled) and send each, to a randomly chosen one of 2 bounded channels
//! (std::sync::mpsc::sync_channel, capacity 4096); each channel has one consumer thread
//! that hashes the message (FNV-1a over every byte) and frees it. Every message is
//! allocated on a producer thread and freed on a consumer thread.
//!
//! - `pipeline`: the producers stay alive (parked) until the consumers have finished.
//! - `producer-exit`: the producers exit as soon as they have sent everything; main joins
//!   them while the consumers are still draining the channels, so the last messages are
//!   freed after the thread that allocated them is gone.

use crate::util::{Report, Rng};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

const PER_PRODUCER: u64 = 300_000;
const CAPACITY: usize = 4096;

/// A consumer's result: the sum of its messages' hashes, and their bytes.
type Consumed = (u64, u64);

/// What main learns while joining the threads.
struct Joined {
    /// The consumers' results, in the order they were joined.
    results: Vec<Consumed>,
    /// producer-exit only: when the producers had all exited, and how many messages were
    /// not yet received then.
    producers_done_ms: f64,
    backlog_at_exit: u64,
}

pub fn run(producers_exit: bool) {
    let name = if producers_exit {
        "producer-exit"
    } else {
        "pipeline"
    };
    let start = Instant::now();
    let received = Arc::new(AtomicU64::new(0));
    let (tx_a, rx_a) = sync_channel::<Vec<u8>>(CAPACITY);
    let (tx_b, rx_b) = sync_channel::<Vec<u8>>(CAPACITY);

    let consumers = spawn_consumers([rx_a, rx_b], &received);
    let (holds, producers) = spawn_producers(&tx_a, &tx_b, producers_exit);
    drop(tx_a);
    drop(tx_b);

    // producer-exit never drops `holds` early: it lives to the end of this function.
    let joined = if producers_exit {
        join_producers_first(start, producers, consumers, &received)
    } else {
        join_consumers_first(consumers, holds, producers)
    };
    let elapsed = start.elapsed();
    report(name, producers_exit, elapsed, &received, &joined);
}

/// One consumer thread per channel.
fn spawn_consumers(
    rxs: [Receiver<Vec<u8>>; 2],
    received: &Arc<AtomicU64>,
) -> Vec<JoinHandle<Consumed>> {
    rxs.into_iter()
        .map(|rx| {
            let received = received.clone();
            thread::spawn(move || consume(rx, &received))
        })
        .collect()
}

/// A consumer: hashes (FNV-1a) and frees every message until every sender is gone.
fn consume(rx: Receiver<Vec<u8>>, received: &AtomicU64) -> Consumed {
    let mut hash_sum: u64 = 0;
    let mut bytes: u64 = 0;
    for msg in rx {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in msg.iter() {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
        hash_sum = hash_sum.wrapping_add(h);
        bytes += msg.len() as u64;
        drop(msg);
        received.fetch_add(1, Ordering::Relaxed);
    }
    (hash_sum, bytes)
}

/// The 2 producer threads, each with a sender to both channels, and the senders (`holds`)
/// whose drop lets parked producers exit.
fn spawn_producers(
    tx_a: &SyncSender<Vec<u8>>,
    tx_b: &SyncSender<Vec<u8>>,
    producers_exit: bool,
) -> (Vec<Sender<()>>, Vec<JoinHandle<()>>) {
    let mut holds = Vec::new();
    let producers: Vec<_> = (0..2u64)
        .map(|p| {
            let txs = [tx_a.clone(), tx_b.clone()];
            let (hold_tx, hold_rx) = channel::<()>();
            holds.push(hold_tx);
            thread::spawn(move || produce(p, txs, hold_rx, producers_exit))
        })
        .collect();
    (holds, producers)
}

/// A producer: makes and sends its messages, then exits (producer-exit) or parks until
/// main drops its `hold` sender (pipeline).
fn produce(p: u64, txs: [SyncSender<Vec<u8>>; 2], hold_rx: Receiver<()>, producers_exit: bool) {
    let mut rng = Rng::new(0x70_69_70_65 + p);
    for i in 0..PER_PRODUCER {
        let len = rng.range(16, 1024) as usize;
        let mut msg = Vec::with_capacity(len);
        msg.resize(len, (i ^ p) as u8);
        msg[0] = (i >> 8) as u8;
        let to = (rng.next_u64() & 1) as usize;
        txs[to].send(msg).expect("consumer gone");
    }
    drop(txs); // the consumers finish once every sender is gone
    if !producers_exit {
        let _ = hold_rx.recv(); // stay alive until main says so
    }
}

/// producer-exit: joins the producers (which exit once they have sent everything) while the
/// consumers are still draining, then the consumers.
fn join_producers_first(
    start: Instant,
    producers: Vec<JoinHandle<()>>,
    consumers: Vec<JoinHandle<Consumed>>,
    received: &AtomicU64,
) -> Joined {
    let mut results = Vec::new();
    for p in producers {
        p.join().expect("producer panicked");
    }
    let producers_done_ms = start.elapsed().as_secs_f64() * 1e3;
    let backlog_at_exit = 2 * PER_PRODUCER - received.load(Ordering::Relaxed);
    for c in consumers {
        results.push(c.join().expect("consumer panicked"));
    }
    Joined {
        results,
        producers_done_ms,
        backlog_at_exit,
    }
}

/// pipeline: joins the consumers while the producers are parked, then releases (drops
/// `holds`) and joins the producers.
fn join_consumers_first(
    consumers: Vec<JoinHandle<Consumed>>,
    holds: Vec<Sender<()>>,
    producers: Vec<JoinHandle<()>>,
) -> Joined {
    let mut results = Vec::new();
    for c in consumers {
        results.push(c.join().expect("consumer panicked"));
    }
    drop(holds);
    for p in producers {
        p.join().expect("producer panicked");
    }
    Joined {
        results,
        producers_done_ms: 0.0,
        backlog_at_exit: 0,
    }
}

fn report(
    name: &str,
    producers_exit: bool,
    elapsed: Duration,
    received: &AtomicU64,
    joined: &Joined,
) {
    let results = &joined.results;
    let checksum = results.iter().fold(0u64, |a, r| a.wrapping_add(r.0));
    let bytes: u64 = results.iter().map(|r| r.1).sum();
    let mut report = Report::new(name);
    report
        .ms("work_ms", elapsed)
        .kv("messages", received.load(Ordering::Relaxed))
        .kv("bytes_mib", bytes >> 20)
        .kv("checksum", checksum);
    if producers_exit {
        report
            .kv(
                "producers_done_ms",
                format!("{:.3}", joined.producers_done_ms),
            )
            .kv("backlog_at_producer_exit", joined.backlog_at_exit);
    }
    report
        .kv("resident_end_kib", crate::util::resident_kib())
        .print();
}
