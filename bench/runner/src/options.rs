//! The command line.

use crate::product::{Program, Request};
use crate::variants::{self, Variant};
use bench_workloads::Workload;
use lexopt::{Arg, Parser, ValueExt};
use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;

pub const USAGE: &str = "\
usage: mimalloc-bench [OPTIONS]                  the workloads on every allocator, alternating: without
                                                 --workloads and --rounds, a first look (a minute or so)
       mimalloc-bench instructions [OPTIONS]     instructions per small allocate+free pair (valgrind)
       mimalloc-bench build-times [--rounds N]   clean build of mimalloc-sys vs the peer's libmimalloc-sys
       mimalloc-bench limit [OPTIONS]            a phase change in a 480 MiB memory cgroup: survived
                                                 or killed, per allocator (root; --workloads unused)
       mimalloc-bench product --manifest-path PATH [PRODUCT OPTIONS] [-- ARGS...]
                                                 your program, built on each allocator, run alternating

options:
  --quick                 a fiftieth of the work, one round: seconds, for tests
  --rounds N              measurement rounds of every workload (default 5; 1 with --quick);
                          --rounds 15 is the run of record (BENCHMARKS.md)
  --workloads A,B,...     only these workloads (default: all)
                          without either: the first look, 7 workloads (--list)
  --allocators A,B,...    only these allocators (default: all the built-in ones whose build
                          tools are installed; one left out is named)
  --variant NAME=BASE:VAR=VALUE[:VAR=VALUE...]
                          an extra allocator: BASE's binary run with these environment
                          variables (e.g. ours-purge0=ours:MIMALLOC_PURGE_DELAY=0); repeatable
  --out DIR               where results go (default: target/mimalloc-bench)
  --list                  print the workloads and allocators and exit

product options (the program runs with ARGS, from the current directory):
  --manifest-path PATH    the product's Cargo.toml (it follows the README's convention)
  --bin NAME              the binary to run (default: the product's only one, or default-run)
  --example NAME          an example to run instead
  --feature NAME          the feature that turns mimalloc on (default: mimalloc); where the
                          default features turn it on too, the system build is the defaults
                          without it (--no-default-features --features the rest)
  --rounds N, --quick     as above (--quick: one round)
  --allocators A,B,...    system, ours, ours-v2, ours-secure, ours-no-thp, ours-purge0
                          (default: all; system always runs, every ratio's base)
  --variant NAME=BUILD:VAR=VALUE[:VAR=VALUE...]
                          a build run with these variables (BUILD: system, ours, ours-v2,
                          ours-secure); repeatable
  --out DIR               where results go (default: target/mimalloc-bench/product)
";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    Compare,
    Instructions,
    BuildTimes,
    Limit,
    List,
    Product,
}

/// The subcommands, by the first argument that names them; without one, the comparison runs.
const SUBCOMMANDS: [(&str, Command); 4] = [
    ("instructions", Command::Instructions),
    ("build-times", Command::BuildTimes),
    ("limit", Command::Limit),
    ("product", Command::Product),
];

/// What the command line asks for.
#[derive(Debug)]
pub enum Parsed {
    /// The workload benchmark and its subcommands.
    Workloads(Options),
    /// `product`: the user's own program.
    Product(Request),
}

#[derive(Debug)]
pub struct Options {
    pub command: Command,
    pub quick: bool,
    /// A first look ([`FIRST_LOOK`]): the command line named no workloads and no rounds.
    pub first_look: bool,
    pub rounds: usize,
    pub workloads: Vec<&'static Workload>,
    pub variants: Vec<Variant>,
    pub out: Option<PathBuf>,
}

/// Why there are no options: asked for the usage, or a command line that does not parse.
#[derive(Debug, PartialEq, Eq)]
pub enum Problem {
    Help,
    Invalid(String),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Help => f.write_str("usage requested"),
            Problem::Invalid(problem) => f.write_str(problem),
        }
    }
}

impl From<&str> for Problem {
    fn from(problem: &str) -> Self {
        Problem::Invalid(problem.to_owned())
    }
}

impl From<String> for Problem {
    fn from(problem: String) -> Self {
        Problem::Invalid(problem)
    }
}

impl From<lexopt::Error> for Problem {
    fn from(error: lexopt::Error) -> Self {
        Problem::Invalid(match error {
            lexopt::Error::MissingValue {
                option: Some(option),
            } => format!("{option} needs a value"),
            lexopt::Error::UnexpectedOption(option) => format!("unknown argument {option}"),
            lexopt::Error::UnexpectedArgument(value) => {
                format!("unknown argument {}", value.to_string_lossy())
            }
            other => other.to_string(),
        })
    }
}

/// Parses the arguments after the program's name.
pub fn parse(args: impl IntoIterator<Item = impl Into<OsString>>) -> Result<Parsed, Problem> {
    let mut parser = Parser::from_args(args);
    let command = subcommand(&mut parser);
    // Exhaustive, so that a new subcommand has to say here which options it takes.
    match command {
        Command::Compare
        | Command::Instructions
        | Command::BuildTimes
        | Command::Limit
        | Command::List => Ok(Parsed::Workloads(common(&mut parser)?.resolve(command)?)),
        Command::Product => Ok(Parsed::Product(product(&mut parser)?)),
    }
}

/// `product`'s options, and the program's arguments after `--`.
fn product(parser: &mut Parser) -> Result<Request, Problem> {
    let mut manifest = None;
    let mut request = Request::default();
    while let Some(arg) = parser.next()? {
        match arg {
            Arg::Long("manifest-path") => manifest = Some(parser.value()?.into()),
            Arg::Long("bin") => program(&mut request, Program::Bin(parser.value()?.string()?))?,
            Arg::Long("example") => {
                program(&mut request, Program::Example(parser.value()?.string()?))?
            }
            Arg::Long("feature") => request.feature = Some(parser.value()?.string()?),
            Arg::Long("quick") => request.quick = true,
            Arg::Long("rounds") => request.rounds = Some(rounds(parser)?),
            Arg::Long("allocators") => request.allocators = Some(parser.value()?.string()?),
            Arg::Long("variant") => request.extra.push(parser.value()?.string()?),
            Arg::Long("out") => request.out = Some(parser.value()?.into()),
            Arg::Short('h') | Arg::Long("help") => return Err(Problem::Help),
            // lexopt hands over everything after `--` as values, options or not.
            Arg::Value(value) => request.args.push(value),
            other => return Err(other.unexpected().into()),
        }
    }
    request.manifest =
        manifest.ok_or("product needs --manifest-path PATH (the product's Cargo.toml)")?;
    Ok(request)
}

fn program(request: &mut Request, program: Program) -> Result<(), Problem> {
    if request.program != Program::Default {
        return Err("product runs one program: give --bin or --example once"
            .to_owned()
            .into());
    }
    request.program = program;
    Ok(())
}

/// Takes the first argument if it names a subcommand.
fn subcommand(parser: &mut Parser) -> Command {
    let Some(mut raw) = parser.try_raw_args() else {
        return Command::Compare;
    };
    let named = raw.peek().and_then(|first| {
        let (_, command) = SUBCOMMANDS.iter().find(|(name, _)| first == *name)?;
        Some(*command)
    });
    if named.is_some() {
        raw.next();
    }
    named.unwrap_or(Command::Compare)
}

/// The options as given, before their names are looked up.
#[derive(Debug, Default)]
struct Given {
    quick: bool,
    rounds: Option<usize>,
    workloads: Option<String>,
    allocators: Option<String>,
    extra: Vec<Variant>,
    out: Option<PathBuf>,
    list: bool,
}

/// The options every subcommand takes (some ignore a few).
fn common(parser: &mut Parser) -> Result<Given, Problem> {
    let mut given = Given::default();
    while let Some(arg) = parser.next()? {
        match arg {
            Arg::Long("quick") => given.quick = true,
            Arg::Long("rounds") => given.rounds = Some(rounds(parser)?),
            Arg::Long("workloads") => given.workloads = Some(parser.value()?.string()?),
            Arg::Long("allocators") => given.allocators = Some(parser.value()?.string()?),
            Arg::Long("variant") => {
                let spec = parser.value()?.string()?;
                given.extra.push(variants::parse_extra(&spec)?);
            }
            Arg::Long("out") => given.out = Some(parser.value()?.into()),
            Arg::Long("list") => given.list = true,
            Arg::Short('h') | Arg::Long("help") => return Err(Problem::Help),
            other => return Err(other.unexpected().into()),
        }
    }
    Ok(given)
}

/// `--rounds N`: at least one.
fn rounds(parser: &mut Parser) -> Result<usize, Problem> {
    let n = parser.value()?.string()?;
    let n: usize = n
        .parse()
        .map_err(|_| "--rounds takes a number".to_owned())?;
    Ok(n.max(1))
}

/// The main job's workloads when the command line names none and no rounds: one of each kind
/// the benchmark has, each a second or less a run, so that every allocator's first table comes
/// in a minute or so (three and a half on a fresh clone, with the builds) rather than the
/// quarter of an hour every workload takes. Left out, and
/// named when it ends: the quiet workloads (idle-return, idle-still, bursty), which wait
/// seconds a run, and the kinds these stand for.
pub const FIRST_LOOK: [&str; 7] = [
    // A single thread's mid-sized heap of small blocks.
    "indexing",
    // JSON-like trees built, walked and dropped.
    "document-tree",
    // Blocks freed by another thread than the one that allocated them.
    "cross-thread-4",
    // Working sets that move between threads.
    "server-churn",
    // Vectors and strings grown by `realloc`.
    "growth",
    // Blocks of megabytes, fresh and freed.
    "large-touch",
    // A whole process of 10 ms: the start-up and the first faults.
    "short-lived",
];

impl Given {
    fn resolve(self, command: Command) -> Result<Options, Problem> {
        let first_look = command == Command::Compare
            && !self.list
            && !self.quick
            && self.workloads.is_none()
            && self.rounds.is_none();
        let workloads = if first_look {
            workloads(Some(&FIRST_LOOK.join(",")))?
        } else {
            workloads(self.workloads.as_deref())?
        };
        let mut variants = allocators(self.allocators.as_deref())?;
        variants.extend(self.extra);
        Ok(Options {
            command: if self.list { Command::List } else { command },
            quick: self.quick,
            first_look,
            rounds: self.rounds.unwrap_or(if self.quick { 1 } else { 5 }),
            workloads,
            variants,
            out: self.out,
        })
    }
}

/// `--workloads A,B`; all of them without it.
fn workloads(names: Option<&str>) -> Result<Vec<&'static Workload>, String> {
    let Some(names) = names else {
        return Ok(bench_workloads::ALL.iter().collect());
    };
    names
        .split(',')
        .map(|n| bench_workloads::find(n).ok_or(format!("no workload called {n}")))
        .collect()
}

/// `--allocators A,B` among the built-in ones; without it, all of them whose build tools are
/// installed (a machine with Rust and a C compiler runs the rest, and hears what it left out and
/// how to include it).
fn allocators(names: Option<&str>) -> Result<Vec<Variant>, String> {
    let built_in = variants::built_in();
    let Some(names) = names else {
        let (runnable, left_out): (Vec<_>, Vec<_>) = built_in
            .into_iter()
            .map(|v| (v.missing_tool(), v))
            .partition(|(missing, _)| missing.is_none());
        for (tool, v) in left_out {
            let tool = tool.unwrap_or_default();
            eprintln!(
                "left out {}: its driver needs {tool}, which is not installed here \
                 (apt-get install {tool}, then run again to include it)",
                v.name
            );
        }
        return Ok(runnable.into_iter().map(|(_, v)| v).collect());
    };
    let find = |n: &str| {
        let found = built_in.iter().find(|v| v.name == n);
        found.cloned().ok_or(format!("no allocator called {n}"))
    };
    names.split(',').map(find).collect()
}

#[cfg(test)]
mod tests {
    use super::{Command, FIRST_LOOK, Options, Parsed, Problem, parse};
    use crate::product::{Program, Request};
    use bench_workloads::{Timing, Workload};

    fn ok(args: &str) -> Options {
        match parse(args.split_whitespace()) {
            Ok(Parsed::Workloads(options)) => options,
            other => panic!("{args}: {other:?}"),
        }
    }

    fn product(args: &str) -> Request {
        match parse(args.split_whitespace()) {
            Ok(Parsed::Product(request)) => request,
            other => panic!("{args}: {other:?}"),
        }
    }

    fn invalid(args: &str) -> String {
        match parse(args.split_whitespace()) {
            Err(Problem::Invalid(problem)) => problem,
            other => panic!("{args}: {other:?}"),
        }
    }

    fn names(options: &Options) -> Vec<&str> {
        options.variants.iter().map(|v| v.name.as_str()).collect()
    }

    fn workload_names(options: &Options) -> Vec<&str> {
        options.workloads.iter().map(|w| w.name).collect()
    }

    #[test]
    fn without_arguments_the_first_look_runs_on_every_built_in_allocator_five_times() {
        let options = ok("");
        assert_eq!(options.command, Command::Compare);
        assert!(!options.quick && options.first_look);
        assert_eq!(options.rounds, 5);
        assert_eq!(workload_names(&options), FIRST_LOOK);
        // Every built-in allocator whose build tools run here: the others are left out, with a
        // line saying so (`a_missing_build_tool_is_named` in variants.rs).
        let built_in = crate::variants::built_in();
        let buildable: Vec<_> = built_in
            .iter()
            .filter(|v| v.missing_tool().is_none())
            .map(|v| &v.name)
            .collect();
        // Only mimalloc-safe's driver needs more than Rust and a C compiler (cmake).
        assert!(buildable.len() >= built_in.len() - 1, "{buildable:?}");
        assert_eq!(names(&options), buildable);
        assert_eq!(options.out, None);
    }

    /// The first look is one of each kind and none that waits: every name is a workload, none
    /// twice, none with a quiet phase, and some of each timing but the CPU time of a pausing one.
    #[test]
    fn the_first_look_names_distinct_workloads_that_do_not_wait() {
        let found: Vec<&Workload> = FIRST_LOOK
            .iter()
            .map(|n| bench_workloads::find(n).expect(n))
            .collect();
        let mut names = FIRST_LOOK.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FIRST_LOOK.len());
        assert!(
            found
                .iter()
                .all(|w| w.quiet.is_none() && w.timing != Timing::Cpu)
        );
        for timing in [Timing::Run, Timing::WholeProcess] {
            assert!(found.iter().any(|w| w.timing == timing), "{timing:?}");
        }
    }

    /// Naming rounds or workloads, or asking for the quick run or another command, leaves the
    /// first look: `--rounds 15`, the run of record, runs every workload.
    #[test]
    fn rounds_workloads_quick_and_the_other_commands_leave_the_first_look() {
        let every = bench_workloads::ALL.len();
        let record = ok("--rounds 15");
        assert!(!record.first_look);
        assert_eq!((record.workloads.len(), record.rounds), (every, 15));
        let named = ok("--workloads growth");
        assert!(!named.first_look);
        assert_eq!((workload_names(&named), named.rounds), (vec!["growth"], 5));
        let quick = ok("--quick");
        assert!(!quick.first_look);
        assert_eq!((quick.workloads.len(), quick.rounds), (every, 1));
        for args in ["instructions", "limit", "build-times", "--list"] {
            let options = ok(args);
            assert!(!options.first_look, "{args}");
            assert_eq!(options.workloads.len(), every, "{args}");
        }
        let chosen = ok("--allocators ours,peer --variant x=ours:A=1");
        assert!(chosen.first_look);
        assert_eq!(chosen.rounds, 5);
    }

    #[test]
    fn quick_means_one_round_unless_rounds_says_otherwise_and_rounds_is_at_least_one() {
        let quick = ok("--quick");
        assert!(quick.quick);
        assert_eq!(quick.rounds, 1);
        assert_eq!(ok("--quick --rounds 3").rounds, 3);
        assert_eq!(ok("--rounds 3 --quick").rounds, 3);
        assert_eq!(ok("--rounds=7").rounds, 7);
        assert_eq!(ok("--rounds 0").rounds, 1);
        assert_eq!(invalid("--rounds x"), "--rounds takes a number");
        assert_eq!(invalid("--rounds -2"), "--rounds takes a number");
    }

    #[test]
    fn every_option_is_read() {
        let options = ok("--workloads replay,growth --allocators ours,peer \
             --variant ours-purge0=ours:MIMALLOC_PURGE_DELAY=0 --variant sys-x=system:A=1:B=2 \
             --out /tmp/somewhere");
        let workloads: Vec<&str> = options.workloads.iter().map(|w| w.name).collect();
        assert_eq!(workloads, ["replay", "growth"]);
        assert_eq!(names(&options), ["ours", "peer", "ours-purge0", "sys-x"]);
        assert_eq!(options.variants[3].env.len(), 2);
        assert_eq!(options.out.as_deref(), Some("/tmp/somewhere".as_ref()));
        assert_eq!(ok("--list").command, Command::List);
        assert_eq!(ok("instructions --list").command, Command::List);
    }

    #[test]
    fn names_that_do_not_exist_are_errors() {
        assert_eq!(
            invalid("--workloads replay,nosuch"),
            "no workload called nosuch"
        );
        assert_eq!(invalid("--allocators nosuch"), "no allocator called nosuch");
        assert!(invalid("--variant x=ours").starts_with("--variant x=ours: expected"));
    }

    #[test]
    fn an_unknown_argument_is_an_error() {
        assert_eq!(invalid("--bogus"), "unknown argument --bogus");
        assert_eq!(invalid("-x"), "unknown argument -x");
        assert_eq!(invalid("foo"), "unknown argument foo");
        assert_eq!(invalid("--quick extra"), "unknown argument extra");
        // A subcommand is only a subcommand first.
        assert_eq!(
            invalid("--quick instructions"),
            "unknown argument instructions"
        );
        assert_eq!(invalid("--bogus --help"), "unknown argument --bogus");
        assert!(invalid("--quick=yes").contains("--quick"));
    }

    #[test]
    fn an_option_without_its_value_is_an_error() {
        for option in [
            "--rounds",
            "--workloads",
            "--allocators",
            "--variant",
            "--out",
        ] {
            assert_eq!(invalid(option), format!("{option} needs a value"));
        }
        assert_eq!(invalid("instructions --rounds"), "--rounds needs a value");
    }

    #[test]
    fn help_stops_at_once() {
        for args in [
            "-h",
            "--help",
            "--quick --help",
            "--help --bogus",
            "build-times -h",
            "product --help",
        ] {
            assert_eq!(parse(args.split_whitespace()).unwrap_err(), Problem::Help);
        }
    }

    #[test]
    fn a_subcommand_comes_first_and_takes_the_options() {
        let options = ok("instructions --allocators ours --workloads replay");
        assert_eq!(options.command, Command::Instructions);
        assert_eq!(names(&options), ["ours"]);
        assert_eq!(options.workloads[0].name, "replay");
        let options = ok("build-times --rounds 2");
        assert_eq!(options.command, Command::BuildTimes);
        assert_eq!(options.rounds, 2);
        assert_eq!(
            invalid("instructions build-times"),
            "unknown argument build-times"
        );
    }

    #[test]
    fn product_takes_its_options_and_the_program_arguments_after_the_double_dash() {
        let request = product(
            "product --manifest-path ../p/Cargo.toml --bin server --rounds 3 --feature fast-alloc \
             --allocators ours --variant big=ours:MIMALLOC_X=1 --out /tmp/o -- --port 80 -v",
        );
        assert_eq!(request.feature.as_deref(), Some("fast-alloc"));
        assert_eq!(request.manifest, std::path::Path::new("../p/Cargo.toml"));
        assert_eq!(request.program, Program::Bin("server".into()));
        assert_eq!(request.rounds, Some(3));
        assert_eq!(request.allocators.as_deref(), Some("ours"));
        assert_eq!(request.extra, ["big=ours:MIMALLOC_X=1"]);
        assert_eq!(request.out.as_deref(), Some("/tmp/o".as_ref()));
        assert_eq!(request.args, ["--port", "80", "-v"]);
        let quick = product("product --quick --manifest-path Cargo.toml --example demo");
        assert!(quick.quick && quick.args.is_empty());
        assert_eq!(quick.program, Program::Example("demo".into()));
    }

    #[test]
    fn product_refuses_what_it_cannot_measure() {
        assert!(invalid("product --bin x").contains("needs --manifest-path"));
        assert!(invalid("product --manifest-path M --bin a --example b").contains("one program"));
        assert_eq!(
            invalid("product --manifest-path M --workloads x"),
            "unknown argument --workloads"
        );
        assert_eq!(
            invalid("product --manifest-path"),
            "--manifest-path needs a value"
        );
    }
}
