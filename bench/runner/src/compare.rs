//! The main job: builds every allocator's driver, runs every workload on every allocator in
//! turn for several rounds, and reports.

use crate::binaries::{self, Places};
use crate::machine::Machine;
use crate::measure;
use crate::options::Options;
use crate::progress;
use crate::report::{self, Report};
use crate::stats::Samples;

pub fn run(options: &Options, command: String) -> Result<(), String> {
    let places = Places::new(options.out.clone());
    let binaries = build(options, &places)?;
    let (workloads, variants) = (&options.workloads, &options.variants);
    let mut samples = Samples::new(workloads.len(), variants.len(), options.rounds);
    let mut failures = Vec::new();
    let total = options.rounds * workloads.len() * variants.len();
    let bar = progress::bar(total as u64);
    for round in 0..options.rounds {
        for (w, workload) in workloads.iter().enumerate() {
            // Each round starts the alternation with a different allocator, so that none is
            // always first after another workload (or always last before one).
            for i in 0..variants.len() {
                let v = (i + round) % variants.len();
                let variant = &variants[v];
                bar.set_message(format!(
                    "round {}/{}: {} on {}",
                    round + 1,
                    options.rounds,
                    workload.name,
                    variant.name
                ));
                let binary = &binaries[variant.binary].path;
                match measure::run(binary, variant, workload.name, options.quick) {
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

    let report = Report {
        workloads,
        variants,
        samples: &samples,
        machine: Machine::describe(),
        command,
    };
    print!("{}", report::table::render(&report));
    let files = [
        ("results.md", report::markdown::render(&report)),
        ("results.svg", report::svg::render(&report)),
        ("samples.csv", report.csv()),
    ];
    std::fs::create_dir_all(&places.out).map_err(|e| format!("{}: {e}", places.out.display()))?;
    for (name, text) in files {
        let path = places.out.join(name);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    let checks = workloads.len() * variants.len() * options.rounds;
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

fn build(
    options: &Options,
    places: &Places,
) -> Result<std::collections::BTreeMap<&'static str, binaries::Built>, String> {
    let spinner = progress::spinner("building the driver binaries (the first build takes minutes)");
    let report = |name: &str, built: &binaries::Built| {
        spinner.println(format!("built {name:<12} in {:6.1} s", built.seconds));
    };
    let built = binaries::build_all(&options.variants, places, &report);
    spinner.finish_and_clear();
    built
}
