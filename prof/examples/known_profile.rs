//! A program whose heap profile is known by construction, profiled at mimalloc's default
//! sample rate (512 KiB):
//!
//! - `keeps_48_mib` allocates 48 MiB and keeps it,
//! - `keeps_8_mib` allocates 8 MiB and keeps it,
//! - `churns_200_mib` allocates 200 MiB one block at a time, freeing each.
//!
//! So the in-use bytes of the snapshot belong to the first two, about 6:1, and the third shows
//! up only in allocated bytes. `cargo run --release -p mimalloc-prof --example known_profile`
//! writes `target/known-profile/heap.0001.pb` (`-- DIR text`: gperftools' text format), then `cargo run --release -p mimalloc-prof --
//! target/known-profile/heap.0001.pb` prints the report and writes the flame graph.
//!
//! `-- --no-profiler` runs the same functions with no profiler code and exits holding the
//! memory: `MIMALLOC_PROFILE=target/known-profile/env` then writes the profile at exit.

use mimalloc::profile::{Format, Profiler};
use std::hint::black_box;
use std::path::{Path, PathBuf};

mimalloc::assign_global!();

/// The size of every block: small against the sample rate, so each is sampled with
/// probability `1 - exp(-64 KiB / 512 KiB)` = 11.75%.
pub const BLOCK: usize = 64 << 10;

#[inline(never)]
pub fn keeps_48_mib() -> Vec<Vec<u8>> {
    let mut kept = Vec::with_capacity((48 << 20) / BLOCK);
    for i in 0..kept.capacity() {
        kept.push(vec![i as u8; BLOCK]);
    }
    kept
}

#[inline(never)]
pub fn keeps_8_mib() -> Vec<Vec<u8>> {
    let mut kept = Vec::with_capacity((8 << 20) / BLOCK);
    for i in 0..kept.capacity() {
        kept.push(vec![i as u8; BLOCK]);
    }
    kept
}

#[inline(never)]
pub fn churns_200_mib() -> u64 {
    let mut sum = 0;
    for i in 0..(200 << 20) / BLOCK {
        sum += black_box(vec![i as u8; BLOCK])[BLOCK - 1] as u64;
    }
    sum
}

/// Runs the three functions under the profiler and returns the snapshot's path.
pub fn profile_into(dir: &Path, format: Format) -> Result<PathBuf, Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir)?;
    let profiler = Profiler::options().format(format).start(dir.join("heap"))?;
    let big = keeps_48_mib();
    let small = keeps_8_mib();
    black_box(churns_200_mib());
    let path = profiler.snapshot()?;
    drop((big, small));
    Ok(path)
}

#[allow(dead_code)] // when the test includes this file, its `main` is not the program's
fn main() -> Result<(), Box<dyn std::error::Error>> {
    // [DIR [text]]: where to write (target/known-profile), and gperftools' text format instead
    // of pprof's protobuf.
    let mut args = std::env::args_os().skip(1).peekable();
    if args.peek().is_some_and(|a| a == "--no-profiler") {
        let kept = (keeps_48_mib(), keeps_8_mib());
        black_box(churns_200_mib());
        std::mem::forget(kept); // in use when mimalloc writes the profile at exit
        return Ok(());
    }
    let dir = args
        .next()
        .map_or_else(|| PathBuf::from("target/known-profile"), PathBuf::from);
    let format = if args.next().is_some_and(|a| a == "text") {
        Format::Text
    } else {
        Format::Pprof
    };
    let path = profile_into(&dir, format)?;
    println!("{}", path.display());
    Ok(())
}
