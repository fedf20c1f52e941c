//! A burst, then quiet: about 300 MiB of small objects (32-512 bytes) are built, read back and
//! all dropped, which is the timed run; then the process stays quiet for 5 seconds and reads
//! its resident memory (`VmRSS`), which is what the allocator kept of the burst. In
//! `idle-return` the quiet is light traffic, one small allocation used and freed per
//! millisecond, so an allocator that returns memory when it is next called gets the chance to;
//! in `idle-still` nothing is allocated at all, so only an allocator that returns memory by
//! itself (at the free, or from a thread or timer of its own) comes back down. glibc 2.36 keeps
//! nearly all of the burst in both: the freed chunks of up to 128 bytes stay in its fastbins,
//! which keeps their neighbours from merging into a top chunk it could trim (with
//! `GLIBC_TUNABLES=glibc.malloc.mxfast=0` it comes back down to a few MiB). They stand for
//! services that go quiet after a burst and keep running.

use crate::{Outcome, Run, Scale, Timing, Workload};
use seeded_rng::Rng;
use std::hint::black_box;
use std::thread;
use std::time::{Duration, Instant};

pub const RETURN: Workload = Workload {
    name: "idle-return",
    summary: "300 MiB of small objects built and dropped (timed); 5 s of light traffic; resident memory then",
    prepare,
    timing: Timing::Run,
    quiet: Some(quiet_with_traffic),
};

pub const STILL: Workload = Workload {
    name: "idle-still",
    summary: "300 MiB of small objects built and dropped (timed); 5 s without an allocation; resident memory then",
    prepare,
    timing: Timing::Run,
    quiet: Some(quiet_still),
};

const MIB: usize = 1 << 20;
/// The bytes of the burst's objects at full scale.
const BURST: usize = 300 * MIB;
/// How long the quiet lasts at full scale: past mimalloc 3's delay for purging freed arena
/// memory (`purge_delay` x `arena_purge_mult`, 1 s x 4 by default), so what is still resident
/// then is kept, not waiting.
const QUIET_MS: usize = 5_000;

fn object_len(rng: &mut Rng) -> usize {
    rng.between(32, 512)
}

/// The byte object `i` is filled with, so that an object read back torn changes the sum.
fn byte(i: usize) -> u8 {
    (i as u8).wrapping_mul(11) ^ (i >> 8) as u8
}

pub(crate) fn prepare(scale: Scale) -> Run {
    prepare_burst(scale.of(BURST))
}

/// A burst of objects that hold `bytes` in all, built, read back and freed.
pub(crate) fn prepare_burst(bytes: usize) -> Run {
    // The generator's answer: the same sizes and bytes, summed without an object.
    let (mut rng, mut total, mut i, mut expected) = (Rng::new(71), 0, 0, 0u64);
    while total < bytes {
        let len = object_len(&mut rng);
        expected = expected.wrapping_add(len as u64 + u64::from(byte(i)));
        (total, i) = (total + len, i + 1);
    }
    Box::new(move || Outcome {
        checksum: burst(bytes),
        expected,
    })
}

/// Builds objects until they hold `bytes`, then reads each back and frees it.
fn burst(bytes: usize) -> u64 {
    let mut rng = Rng::new(71);
    let (mut objects, mut total) = (Vec::<Box<[u8]>>::new(), 0);
    while total < bytes {
        let len = object_len(&mut rng);
        objects.push(vec![byte(objects.len()); len].into_boxed_slice());
        total += len;
    }
    // Each object is freed as soon as it has been read; the list last.
    objects.into_iter().fold(0, |sum, object| {
        let first = *object.first().expect("objects are not empty");
        assert!(object.iter().all(|&b| b == first), "an object is intact");
        sum.wrapping_add(object.len() as u64 + u64::from(first))
    })
}

fn quiet_with_traffic(scale: Scale) -> Option<u64> {
    traffic(scale.of(QUIET_MS));
    resident_kib()
}

/// Light traffic for `millis` milliseconds: one small allocation a millisecond, written, read
/// and freed.
pub(crate) fn traffic(millis: usize) {
    let mut rng = Rng::new(73);
    let start = Instant::now();
    for ms in 0..millis {
        let block = black_box(vec![ms as u8; object_len(&mut rng)]);
        black_box(block.iter().map(|&b| u64::from(b)).sum::<u64>());
        drop(block);
        // Against a deadline, so that the quiet lasts as long whatever each step took.
        let next = start + Duration::from_millis(ms as u64 + 1);
        thread::sleep(next.saturating_duration_since(Instant::now()));
    }
}

/// No allocation at all: the process only sleeps.
fn quiet_still(scale: Scale) -> Option<u64> {
    thread::sleep(Duration::from_millis(scale.of(QUIET_MS) as u64));
    resident_kib()
}

/// The process's resident memory in KiB, `VmRSS` in `/proc/self/status`. Read into a buffer
/// on the stack (and opened by a path std converts on the stack), so that reading it allocates
/// nothing: `idle-still` stays without an allocation to the end.
#[cfg(target_os = "linux")]
pub(crate) fn resident_kib() -> Option<u64> {
    use std::io::Read;
    let mut buffer = [0u8; 8192];
    let mut file = std::fs::File::open("/proc/self/status").ok()?;
    let mut len = 0;
    // `VmRSS` is in the first few hundred bytes; a status larger than the buffer is cut.
    while len < buffer.len() {
        match file.read(&mut buffer[len..]).ok()? {
            0 => break,
            n => len += n,
        }
    }
    let status = std::str::from_utf8(&buffer[..len]).ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
    line.trim().strip_suffix("kB")?.trim().parse().ok()
}

/// Elsewhere the figure is not read: the platforms' counters differ in what they count.
#[cfg(not(target_os = "linux"))]
pub(crate) fn resident_kib() -> Option<u64> {
    None
}
