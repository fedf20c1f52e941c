//! The command line shared by every allocator's driver binary. A driver is this function plus a
//! `#[global_allocator]`; the benchmark runner starts one process per measurement.
//!
//! ```text
//! <driver> list                       the workload names, one per line
//! <driver> run <workload> [--quick]   prepares, runs (timed) and checks one workload
//! <driver> pairs <kind> <count>       allocate+free loops for instruction counting
//! ```
//!
//! `run` prints one line, `workload=<name> nanos=<run time> cpu_nanos=<..> checksum=<..>
//! expected=<..> quiet_rss_kib=<..>`, and exits with status 1 when the checksum is not the
//! expected one. `cpu_nanos` is the process's user+system CPU time during the run, all threads
//! included (absent where the platform has no `getrusage`). `quiet_rss_kib` is the resident
//! memory a workload that goes quiet after its run read at the end of its quiet phase (which
//! the run time leaves out), in KiB; absent for the other workloads, and where the platform
//! does not say.

use crate::{Scale, Workload, find};
use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

/// The `pairs` loops: what one iteration does besides counting.
pub const PAIR_KINDS: [&str; 3] = ["empty", "box32", "box32-zeroed"];

/// Runs the driver command line in `args` (without the program name).
pub fn main(args: &[String]) -> ExitCode {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["list"] => {
            for workload in crate::ALL {
                println!("{}", workload.name);
            }
            ExitCode::SUCCESS
        }
        ["run", name, rest @ ..] => {
            let Some(workload) = find(name) else {
                return usage(&format!("no workload called {name}"));
            };
            match rest {
                [] => run(workload, Scale::Full),
                ["--quick"] => run(workload, Scale::Quick),
                _ => usage("`run` takes a workload name and optionally --quick"),
            }
        }
        ["pairs", kind, count] => {
            let Ok(count) = count.parse::<u64>() else {
                return usage("the count must be a number");
            };
            let byte = black_box(count as u8);
            match *kind {
                "empty" => empty_loop(count, byte),
                "box32" => box32_pairs(count, byte),
                "box32-zeroed" => box32_zeroed_pairs(count),
                _ => return usage(&format!("the kinds are {PAIR_KINDS:?}")),
            }
            ExitCode::SUCCESS
        }
        _ => usage("unknown command"),
    }
}

/// Prepares and runs (timed) one workload, then its quiet phase if it has one (untimed), and
/// prints and checks the result.
fn run(workload: &Workload, scale: Scale) -> ExitCode {
    let name = workload.name;
    let run = (workload.prepare)(scale);
    let (start, cpu_start) = (Instant::now(), cpu_nanos());
    let outcome = run();
    let nanos = start.elapsed().as_nanos();
    let cpu = cpu_start.zip(cpu_nanos()).map(|(a, b)| b.saturating_sub(a));
    // After the clock has stopped, since the quiet phase stands for a service's idle time, and
    // before anything is formatted, since `idle-still` must not allocate after its run.
    let quiet_kib = workload.quiet.and_then(|quiet| quiet(scale));
    println!(
        "workload={name} nanos={nanos}{} checksum={} expected={}{}",
        optional("cpu_nanos", cpu),
        outcome.checksum,
        outcome.expected,
        optional("quiet_rss_kib", quiet_kib),
    );
    if outcome.passed() {
        ExitCode::SUCCESS
    } else {
        eprintln!("{name}: the result check failed");
        ExitCode::FAILURE
    }
}

/// ` name=value`, or nothing for a figure the run does not have.
fn optional(name: &str, value: Option<impl std::fmt::Display>) -> String {
    value.map_or(String::new(), |v| format!(" {name}={v}"))
}

/// User plus system CPU time of the whole process so far (threads that ended included).
#[cfg(unix)]
fn cpu_nanos() -> Option<u128> {
    // SAFETY: `rusage` is a C struct of integers, for which all-zero bytes are a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a live, writable `rusage`; RUSAGE_SELF is a valid `who`.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return None;
    }
    let nanos = |t: libc::timeval| t.tv_sec as u128 * 1_000_000_000 + t.tv_usec as u128 * 1_000;
    Some(nanos(usage.ru_utime) + nanos(usage.ru_stime))
}

#[cfg(not(unix))]
fn cpu_nanos() -> Option<u128> {
    None
}

fn usage(problem: &str) -> ExitCode {
    eprintln!("{problem}\nusage: list | run <workload> [--quick] | pairs <kind> <count>");
    ExitCode::from(2)
}

// The three loops differ only in the allocation, so that the difference of their instruction
// counts is the allocate+free pair. `inline(never)` keeps each one a function of its own in a
// profile.

#[inline(never)]
fn empty_loop(count: u64, byte: u8) {
    for _ in 0..count {
        let value = black_box([byte; 32]);
        black_box(&value);
    }
}

#[inline(never)]
fn box32_pairs(count: u64, byte: u8) {
    for _ in 0..count {
        let boxed = Box::new(black_box([byte; 32]));
        black_box(&boxed);
    }
}

#[inline(never)]
fn box32_zeroed_pairs(count: u64) {
    for _ in 0..count {
        let boxed = Box::new([0u8; 32]);
        black_box(&boxed);
    }
}
