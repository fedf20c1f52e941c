//! The command line.

use crate::variants::{self, Variant};
use bench_workloads::Workload;
use std::path::PathBuf;

pub const USAGE: &str = "\
usage: mimalloc-bench [OPTIONS]                  every workload on every allocator, alternating
       mimalloc-bench instructions [OPTIONS]     instructions per small allocate+free pair (valgrind)
       mimalloc-bench build-times [--rounds N]   clean build of mimalloc-sys vs the peer's libmimalloc-sys

options:
  --quick                 a fiftieth of the work, one round: seconds, for tests
  --rounds N              measurement rounds (default 5; 1 with --quick)
  --workloads A,B,...     only these workloads (default: all)
  --allocators A,B,...    only these allocators (default: all the built-in ones)
  --variant NAME=BASE:VAR=VALUE[:VAR=VALUE...]
                          an extra allocator: BASE's binary run with these environment
                          variables (e.g. ours-purge0=ours:MIMALLOC_PURGE_DELAY=0); repeatable
  --out DIR               where results go (default: target/mimalloc-bench)
  --list                  print the workloads and allocators and exit
";

#[derive(Debug)]
pub enum Command {
    Compare,
    Instructions,
    BuildTimes,
    List,
}

#[derive(Debug)]
pub struct Options {
    pub command: Command,
    pub quick: bool,
    pub rounds: usize,
    pub workloads: Vec<&'static Workload>,
    pub variants: Vec<Variant>,
    pub out: Option<PathBuf>,
}

pub fn parse(args: &[String]) -> Result<Options, String> {
    let mut args = args.iter().map(String::as_str).peekable();
    let command = match args.peek() {
        Some(&"instructions") => Command::Instructions,
        Some(&"build-times") => Command::BuildTimes,
        _ => Command::Compare,
    };
    if !matches!(command, Command::Compare) {
        args.next();
    }
    let mut quick = false;
    let mut rounds = None;
    let mut workloads = None;
    let mut allocators = None;
    let mut extra = Vec::new();
    let mut out = None;
    let mut list = false;
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg {
            "--quick" => quick = true,
            "--rounds" => {
                let n: usize = value()?.parse().map_err(|_| "--rounds takes a number")?;
                rounds = Some(n.max(1));
            }
            "--workloads" => workloads = Some(value()?.to_owned()),
            "--allocators" => allocators = Some(value()?.to_owned()),
            "--variant" => extra.push(variants::parse_extra(value()?)?),
            "--out" => out = Some(PathBuf::from(value()?)),
            "--list" => list = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    let workloads = match workloads {
        None => bench_workloads::ALL.iter().collect(),
        Some(names) => names
            .split(',')
            .map(|n| bench_workloads::find(n).ok_or(format!("no workload called {n}")))
            .collect::<Result<_, _>>()?,
    };
    let built_in = variants::built_in();
    let mut variants: Vec<Variant> = match allocators {
        None => built_in,
        Some(names) => names
            .split(',')
            .map(|n| {
                built_in
                    .iter()
                    .find(|v| v.name == n)
                    .cloned()
                    .ok_or(format!("no allocator called {n}"))
            })
            .collect::<Result<_, _>>()?,
    };
    variants.extend(extra);
    Ok(Options {
        command: if list { Command::List } else { command },
        quick,
        rounds: rounds.unwrap_or(if quick { 1 } else { 5 }),
        workloads,
        variants,
        out,
    })
}
