//! `product`: the user's own program, built once per allocator and run in alternation, whole
//! process: wall and CPU time, peak RSS; the same tables as the workload benchmark, and one line
//! saying what to do about it.

mod advice;
mod build;
mod check;
mod manifest;
mod variants;

pub use manifest::Program;

use crate::binaries::Places;
use crate::machine::Machine;
use crate::measure;
use crate::progress;
use crate::report::{self, Named, Report};
use crate::stats::Samples;
use std::ffi::OsString;
use std::path::PathBuf;
use variants::Variant;

/// `product`'s command line.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Request {
    pub manifest: PathBuf,
    pub program: Program,
    /// The feature that turns the allocator on (`--feature`; the README's `mimalloc` without).
    pub feature: Option<String>,
    /// The program's arguments.
    pub args: Vec<OsString>,
    pub quick: bool,
    pub rounds: Option<usize>,
    pub allocators: Option<String>,
    /// `--variant` specs, parsed once the builds are known.
    pub extra: Vec<String>,
    pub out: Option<PathBuf>,
}

pub fn run(request: &Request, command: String) -> Result<(), String> {
    let places = Places::new(None);
    let feature = request.feature.as_deref().unwrap_or("mimalloc");
    let product = manifest::read(&request.manifest, &request.program, feature, &places.root)?;
    let variants = variants::chosen(request.allocators.as_deref(), &request.extra)?;
    let exes = build::build_all(&product, &variants, &places)?;
    for line in check::all(&variants, &exes, &request.args)? {
        println!("{line}");
    }
    let rounds = request.rounds.unwrap_or(if request.quick { 1 } else { 5 });
    let samples = measure_all(&variants, &exes, &request.args, rounds)?;
    let out = request
        .out
        .clone()
        .unwrap_or_else(|| places.builds.join("product"));
    publish(
        &product,
        &variants,
        &samples,
        request,
        command,
        Places::new(Some(out)),
    )
}

/// The table and the finding on the terminal, and the three files.
fn publish(
    product: &manifest::Product,
    variants: &[Variant],
    samples: &Samples,
    request: &Request,
    command: String,
    places: Places,
) -> Result<(), String> {
    let task = Named::new(
        format!("{} {}", product.kind, product.program),
        format!(
            "`{}` of package `{}`, whole process",
            shown(&product.program, &request.args),
            product.package
        ),
    );
    let floor = measure::spawn_floor_kib();
    let finding = advice::finding(variants, samples, floor);
    let report = Report {
        title: "Product benchmark results",
        noun: "command",
        tasks: vec![task],
        allocators: variants
            .iter()
            .map(|v| Named::new(v.name.clone(), v.about.clone()))
            .collect(),
        samples,
        machine: Machine::describe(),
        command,
        finding: Some(finding.clone()),
    };
    print!("{}", report::table::render(&report));
    if samples.grid[0][0]
        .iter()
        .flatten()
        .all(|s| s.peak_rss_kib.is_none())
    {
        println!("peak RSS and CPU time: not measured on this platform");
    }
    if let Some(floor) = floor {
        println!(
            "peak RSS floor: {} (what `true` peaks at when started from here)",
            report::mib(Some(floor as f64 / 1024.0))
        );
    }
    println!("\nfinding: {finding}");
    places.write_result("results.md", &report::markdown::render(&report))?;
    places.write_result("results.svg", &report::svg::render(&report))?;
    places.write_result("samples.csv", &report.csv())
}

/// The command as a person would type it.
fn shown(program: &str, args: &[OsString]) -> String {
    let args = args.iter().map(|a| a.to_string_lossy());
    std::iter::once(program.into())
        .chain(args)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every variant in turn, `rounds` times, each round starting the turn one variant later.
/// A failed run fails the whole measurement: a program that crashes on one allocator has
/// said something more important than its timings.
fn measure_all(
    variants: &[Variant],
    exes: &build::Executables,
    args: &[OsString],
    rounds: usize,
) -> Result<Samples, String> {
    let mut samples = Samples::new(1, variants.len(), rounds);
    let bar = progress::bar((rounds * variants.len()) as u64);
    for round in 0..rounds {
        for i in 0..variants.len() {
            let v = (i + round) % variants.len();
            let variant = &variants[v];
            bar.set_message(format!("round {}/{rounds}: {}", round + 1, variant.name));
            let mut command = crate::env::command(&exes[variant.build.name], &variant.env);
            command.args(args);
            let sample = measure::run_whole(command, &format!("the {} run", variant.name));
            samples.grid[0][v][round] = Some(sample.inspect_err(|_| bar.finish_and_clear())?);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(samples)
}
