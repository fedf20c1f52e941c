//! `cargo run --release -p mimalloc-bench`: every allocator side by side on the benchmark's
//! workloads, in one alternating run, with time and peak memory. See `bench/README.md`.

mod binaries;
mod build_times;
mod compare;
mod env;
mod floor;
mod instructions;
mod limit;
mod machine;
mod measure;
mod options;
mod product;
mod progress;
mod report;
mod stats;
mod variants;

use options::{Command, Parsed, Problem};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match options::parse(&args) {
        Ok(parsed) => parsed,
        Err(Problem::Help) => {
            eprint!("{}", options::USAGE);
            return ExitCode::from(2);
        }
        Err(Problem::Invalid(problem)) => {
            eprintln!("{problem}\n{}", options::USAGE);
            return ExitCode::from(2);
        }
    };
    let command = std::iter::once("cargo run --release -p mimalloc-bench".to_owned())
        .chain((!args.is_empty()).then(|| format!("-- {}", args.join(" "))))
        .collect::<Vec<_>>()
        .join(" ");
    let options = match parsed {
        Parsed::Workloads(options) => options,
        Parsed::Product(request) => return exit(product::run(&request, command)),
    };
    let result = match options.command {
        Command::List => {
            list(&options);
            Ok(())
        }
        Command::Compare => compare::run(&options, command),
        Command::Instructions => instructions::run(&options),
        Command::Limit => limit::run(&options, command),
        Command::BuildTimes => {
            build_times::run(options.rounds, &binaries::Places::new(options.out.clone()))
        }
        Command::Product => unreachable!("options::parse returns Parsed::Product for product"),
    };
    exit(result)
}

fn exit(result: Result<(), String>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(problem) => {
            eprintln!("error: {problem}");
            ExitCode::FAILURE
        }
    }
}

fn list(options: &options::Options) {
    let names = options.workloads.iter().map(|w| w.name);
    let width = names
        .chain(options.variants.iter().map(|v| v.name.as_str()))
        .map(str::len)
        .max()
        .unwrap_or(0);
    println!("workloads:");
    for w in &options.workloads {
        println!("  {:<width$} {}", w.name, w.summary);
    }
    println!(
        "the first look (without --workloads and --rounds): {}",
        options::FIRST_LOOK.join(", ")
    );
    println!("allocators:");
    for v in &options.variants {
        println!("  {:<width$} {}", v.name, v.about);
    }
}
