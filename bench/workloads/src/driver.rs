//! The command line shared by every allocator's driver binary. A driver is this function plus a
//! `#[global_allocator]`; the benchmark runner starts one process per measurement.
//!
//! ```text
//! <driver> list                       the workload names, one per line
//! <driver> run <workload> [--quick]   prepares, runs (timed) and checks one workload
//! <driver> pairs <kind> <count>       allocate+free loops for instruction counting
//! ```
//!
//! `run` prints one line, `workload=<name> nanos=<run time> checksum=<..> expected=<..>`, and
//! exits with status 1 when the checksum is not the expected one.

use crate::{Scale, find};
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
            let scale = match rest {
                [] => Scale::Full,
                ["--quick"] => Scale::Quick,
                _ => return usage("`run` takes a workload name and optionally --quick"),
            };
            let run = (workload.prepare)(scale);
            let start = Instant::now();
            let outcome = run();
            let nanos = start.elapsed().as_nanos();
            println!(
                "workload={name} nanos={nanos} checksum={} expected={}",
                outcome.checksum, outcome.expected
            );
            if outcome.passed() {
                ExitCode::SUCCESS
            } else {
                eprintln!("{name}: the result check failed");
                ExitCode::FAILURE
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
