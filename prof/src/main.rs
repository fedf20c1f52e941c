//! `mimalloc-prof PROFILE [--binary PATH] [--top N] [--svg FILE] [--allocated]`: prints the top
//! allocation sites of a mimalloc heap profile and writes its flame graph (`PROFILE.svg`).

use mimalloc_prof::{Measure, flame};
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str =
    "usage: mimalloc-prof PROFILE.pb [--binary PATH] [--top N] [--svg FILE] [--allocated]

Prints the top allocation sites of a heap profile written by mimalloc::profile::Profiler (by
estimated in-use bytes and by allocated bytes, exclusive and inclusive), and writes a flame
graph of in-use bytes (of allocated bytes with --allocated) to FILE, PROFILE.svg by default.
Frames are symbolized against the files the profiled process had loaded, as the profile names
them; --binary replaces the executable (e.g. with an unstripped copy). Where the profile records
a file's build id, the file read must have the same GNU build id: a binary rebuilt since the
profile was taken (or one without a build id) is refused with an error, not misread.";

struct Args {
    profile: PathBuf,
    binary: Option<PathBuf>,
    top: usize,
    svg: Option<PathBuf>,
    measure: Measure,
}

fn parse() -> Result<Args, lexopt::Error> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_env();
    let (mut profile, mut binary, mut top, mut svg, mut measure) =
        (None, None, 10, None, Measure::InUse);
    while let Some(arg) = parser.next()? {
        match arg {
            Long("binary") => binary = Some(parser.value()?.into()),
            Long("top") => top = parser.value()?.parse()?,
            Long("svg") => svg = Some(parser.value()?.into()),
            Long("allocated") => measure = Measure::Allocated,
            Short('h') | Long("help") => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            Value(path) if profile.is_none() => profile = Some(PathBuf::from(path)),
            _ => return Err(arg.unexpected()),
        }
    }
    let profile = profile.ok_or("missing the profile to read")?;
    Ok(Args {
        profile,
        binary,
        top,
        svg,
        measure,
    })
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("mimalloc-prof: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mimalloc-prof: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    let report = mimalloc_prof::read(&args.profile, args.binary.clone())?;
    print!("{}", report.text(args.top));
    let svg_path = args.svg.clone().unwrap_or_else(|| {
        let mut name = args.profile.clone().into_os_string();
        name.push(".svg");
        name.into()
    });
    let title = match args.measure {
        Measure::InUse => "In-use bytes (estimated)",
        Measure::Allocated => "Allocated bytes (estimated)",
    };
    let svg = flame::svg(&report, args.measure, title)?;
    std::fs::write(&svg_path, svg).map_err(|e| format!("{}: {e}", svg_path.display()))?;
    println!("\nflame graph: {}", svg_path.display());
    Ok(())
}
