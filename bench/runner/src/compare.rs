//! The main job: builds every allocator's driver, runs the workloads (the first look's, or
//! those the command line names) on every allocator in turn for several rounds, and reports.

use crate::binaries::{self, Binaries, Places};
use crate::machine::Machine;
use crate::measure;
use crate::options::Options;
use crate::progress;
use crate::report::{self, Report};
use crate::stats::Samples;
use bench_workloads::Workload;
use indicatif::ProgressBar;
use seeded_rng::Rng;

pub fn run(options: &Options, command: String) -> Result<(), String> {
    let places = Places::new(options.out.clone());
    if let Some(note) = first_look(options) {
        println!("{}", note.starting);
    }
    let binaries = build(options, &places)?;
    let (samples, failures) = measure_all(options, &binaries);
    let report = Report {
        title: "Allocator benchmark results",
        noun: "workload",
        tasks: report::workloads(&options.workloads),
        allocators: report::variants(&options.variants),
        samples: &samples,
        machine: Machine::describe(),
        command,
        finding: None,
    };
    print!("{}", report::table::render(&report));
    places.write_result("results.md", &report::markdown::render(&report))?;
    places.write_result("results.svg", &report::svg::render(&report))?;
    places.write_result("samples.csv", &report.csv())?;
    if let Some(note) = first_look(options) {
        println!("{}", note.ending);
    }
    let checks = options.workloads.len() * options.variants.len() * options.rounds;
    verdict(checks, &failures)
}

/// What a first look says before it starts and after its table: what it runs, what it leaves
/// out, and the command of the run of record.
struct FirstLook {
    starting: String,
    ending: String,
}

/// The run of record: every workload, as many rounds as BENCHMARKS.md's full results.
const RECORD: &str = "cargo run --release -p mimalloc-bench -- --rounds 15";

fn first_look(options: &Options) -> Option<FirstLook> {
    if !options.first_look {
        return None;
    }
    let ran: Vec<&str> = options.workloads.iter().map(|w| w.name).collect();
    let left_out: Vec<&str> = bench_workloads::ALL
        .iter()
        .map(|w| w.name)
        .filter(|n| !ran.contains(n))
        .collect();
    let what = format!(
        "a first look: {} of the {} workloads, {} rounds, every allocator",
        ran.len(),
        ran.len() + left_out.len(),
        options.rounds
    );
    Some(FirstLook {
        starting: format!("{what} ({})", ran.join(", ")),
        ending: format!(
            "\nThat was {what}. Left out: {}.\nEvery workload, for the figures of record: {RECORD}",
            left_out.join(", ")
        ),
    })
}

pub(crate) fn build(options: &Options, places: &Places) -> Result<Binaries, String> {
    let spinner = progress::spinner("building the driver binaries (the first build takes minutes)");
    let report = |name: &str, built: &binaries::Built| {
        spinner.println(format!("built {name:<12} in {:6.1} s", built.seconds));
    };
    let built = binaries::build_all(&options.variants, places, &report);
    spinner.finish_and_clear();
    built
}

/// Every round of every workload on every allocator; the samples, and the failed runs.
fn measure_all(options: &Options, binaries: &Binaries) -> (Samples, Vec<String>) {
    let (workloads, variants) = (&options.workloads, &options.variants);
    let mut samples = Samples::new(workloads.len(), variants.len(), options.rounds);
    let mut failures = Vec::new();
    let bar = progress::bar((options.rounds * workloads.len() * variants.len()) as u64);
    for round in 0..options.rounds {
        for (w, workload) in workloads.iter().enumerate() {
            for v in turn(round, variants.len()) {
                let at = Turn { round, workload, v };
                match measure_one(options, binaries, &at, &bar) {
                    Ok(sample) => samples.grid[w][v][round] = Some(sample),
                    Err(problem) => {
                        bar.println(format!("FAILED {problem}"));
                        failures.push(problem);
                    }
                }
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    (samples, failures)
}

/// The order of the allocators in a round: a shuffle of its own (seeded by the round, so a run
/// is repeatable), so that no allocator always runs first or last, nor always right after the
/// same other one. What a process leaves behind changes the next one's page faults: on a VM
/// that hands freed guest memory back to its host (free page reporting), a process faulting in
/// huge pages after one that freed hundreds of MiB of 4 KiB pages spent 0.4 s more in the kernel
/// than after one that freed huge pages (BENCHMARKS.md#noise), and a fixed rotation put the
/// same allocator after the system allocator in every round.
pub(crate) fn turn(round: usize, variants: usize) -> impl Iterator<Item = usize> {
    let mut order: Vec<usize> = (0..variants).collect();
    let mut rng = Rng::new(0x7u64.wrapping_add(round as u64));
    for i in (1..variants).rev() {
        order.swap(i, rng.below(i + 1));
    }
    order.into_iter()
}

/// Which run of the alternation is next.
struct Turn<'a> {
    round: usize,
    workload: &'a Workload,
    /// The allocator's index in the options' variants.
    v: usize,
}

fn measure_one(
    options: &Options,
    binaries: &Binaries,
    at: &Turn,
    bar: &ProgressBar,
) -> Result<measure::Sample, String> {
    let variant = &options.variants[at.v];
    bar.set_message(format!(
        "round {}/{}: {} on {}",
        at.round + 1,
        options.rounds,
        at.workload.name,
        variant.name
    ));
    let binary = &binaries[variant.binary].path;
    measure::run(binary, variant, at.workload, options.quick)
}

/// Every run checks the driver's answer: the run fails when any did not match.
fn verdict(checks: usize, failures: &[String]) -> Result<(), String> {
    println!(
        "result checks: {} passed, {} failed",
        checks - failures.len(),
        failures.len()
    );
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} runs failed:\n{}",
            failures.len(),
            failures.join("\n")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::{RECORD, first_look, turn};
    use crate::options::{FIRST_LOOK, Parsed, parse};

    /// A first look names what it runs, every workload it leaves out, and the command that runs
    /// them all; a run that named its workloads or rounds says nothing of the kind.
    #[test]
    fn a_first_look_says_what_it_left_out_and_how_to_run_everything() {
        let options = |args: &str| match parse(args.split_whitespace()) {
            Ok(Parsed::Workloads(options)) => options,
            other => panic!("{args}: {other:?}"),
        };
        let note = first_look(&options("")).expect("no arguments: a first look");
        let every = bench_workloads::ALL.len();
        let what = format!("a first look: 7 of the {every} workloads, 5 rounds");
        assert!(note.starting.starts_with(&what), "{}", note.starting);
        assert!(note.ending.contains(&what), "{}", note.ending);
        assert!(note.ending.ends_with(RECORD), "{}", note.ending);
        let list = |text: &str, after: &str, before: char| -> Vec<String> {
            let rest = text.split(after).nth(1).expect("a list");
            let list = &rest[..rest.find(before).expect("its end")];
            list.split(", ").map(str::to_owned).collect()
        };
        let ran = list(&note.starting, "(", ')');
        let left_out = list(&note.ending, "Left out: ", '.');
        for w in bench_workloads::ALL {
            let first = FIRST_LOOK.contains(&w.name);
            assert_eq!(ran.iter().any(|n| n == w.name), first, "{}", w.name);
            assert_eq!(left_out.iter().any(|n| n == w.name), !first, "{}", w.name);
        }
        assert!(first_look(&options("--rounds 15")).is_none());
        assert!(first_look(&options("--workloads growth")).is_none());
    }

    /// Every round runs every allocator once, and over the rounds of a full run each allocator
    /// follows several others and is sometimes first.
    #[test]
    fn every_round_is_a_permutation_and_neighbours_change() {
        let (variants, rounds) = (10, 15);
        let orders: Vec<Vec<usize>> = (0..rounds).map(|r| turn(r, variants).collect()).collect();
        for order in &orders {
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..variants).collect::<Vec<_>>());
        }
        assert_eq!(
            orders,
            (0..rounds)
                .map(|r| turn(r, variants).collect())
                .collect::<Vec<Vec<usize>>>()
        );
        for v in 0..variants {
            let mut before: Vec<usize> = orders
                .iter()
                .filter_map(|o| {
                    o.iter()
                        .position(|&x| x == v)
                        .filter(|&i| i > 0)
                        .map(|i| o[i - 1])
                })
                .collect();
            before.sort_unstable();
            before.dedup();
            assert!(before.len() >= 4, "allocator {v} follows only {before:?}");
        }
        let firsts: std::collections::BTreeSet<usize> = orders.iter().map(|o| o[0]).collect();
        assert!(firsts.len() >= 5, "first places: {firsts:?}");
    }
}
