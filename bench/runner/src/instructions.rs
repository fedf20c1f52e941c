//! Instructions per small allocate+free pair, counted by valgrind (cachegrind without cache
//! simulation): deterministic on a noisy machine, unlike time. Each loop runs twice with
//! different iteration counts, and the difference divided by the difference in iterations is
//! the cost of one iteration, free of start-up and exit; the empty loop's cost is then
//! subtracted, leaving the pair.

use crate::binaries::{self, Binaries, Places};
use crate::env;
use crate::floor;
use crate::options::Options;
use crate::progress;
use crate::report::markdown_table::{header, row};
use crate::variants::{PEER, Variant};
use indicatif::ProgressBar;
use std::path::{Path, PathBuf};
use std::process::Command;

const SHORT: u64 = 100_000;
const LONG: u64 = 1_100_000;

/// The loops through this workspace's allocator other than as the global allocator, which only
/// its driver runs (`pairs <kind>`), and their columns.
const HEAP_LOOPS: [(&str, &str); 3] = [
    ("heap32", "Heap::allocate+deallocate"),
    ("heap-box32", "Box in &Heap (Allocator)"),
    ("api2-box32", "Box in MiMalloc (Allocator)"),
];

/// One column of the result: instructions per iteration of each loop.
#[derive(Debug)]
struct Counts {
    name: String,
    empty: f64,
    plain: f64,
    zeroed: f64,
    /// The [`HEAP_LOOPS`], in order, where the binary runs them.
    heap: Option<[f64; HEAP_LOOPS.len()]>,
}

impl Counts {
    /// Counts the loops called `[empty, plain, zeroed]`; `per` gives one loop's instructions
    /// per iteration.
    fn measure(
        name: String,
        per: impl Fn(&str) -> Result<f64, String>,
        [empty, plain, zeroed]: [&str; 3],
    ) -> Result<Self, String> {
        Ok(Counts {
            name,
            empty: per(empty)?,
            plain: per(plain)?,
            zeroed: per(zeroed)?,
            heap: None,
        })
    }
    fn plain_pair(&self) -> f64 {
        self.plain - self.empty
    }
    fn zeroed_pair(&self) -> f64 {
        self.zeroed - self.empty
    }
}

pub fn run(options: &Options) -> Result<(), String> {
    let places = Places::new(options.out.clone());
    valgrind_version()?;
    let (binaries, floor_exe) = build(options, &places)?;
    let bar = progress::bar(options.variants.len() as u64 + 1);
    let mut columns = Vec::new();
    for variant in &options.variants {
        bar.set_message(variant.name.clone());
        columns.push(variant_counts(variant, &binaries[variant.binary].path)?);
        bar.inc(1);
    }
    bar.inc_length(options.workloads.len() as u64);
    bar.set_message("C floor");
    let floors = floor_counts(&floor_exe)?;
    bar.inc(1);
    let whole = whole_runs(options, &binaries, &bar)?;
    bar.finish_and_clear();

    let mut text = render(&columns, &floors);
    text.push_str(&render_workloads(options, &whole));
    print!("{text}");
    places.write_result("instructions.md", &text)
}

fn build(options: &Options, places: &Places) -> Result<(Binaries, PathBuf), String> {
    let spinner = progress::spinner("building the driver binaries and the C floor");
    let binaries = binaries::build_all(&options.variants, places, &|_, _| {})?;
    let floor_exe = floor::build(&places.root, &places.builds.join("floor"))?;
    spinner.finish_and_clear();
    Ok((binaries, floor_exe))
}

fn variant_counts(variant: &Variant, exe: &Path) -> Result<Counts, String> {
    let per = |kind: &str| per_iteration(exe, &["pairs", kind], &variant.env);
    let mut counts = Counts::measure(
        variant.name.clone(),
        per,
        ["empty", "box32", "box32-zeroed"],
    )?;
    if variant.is_ours() {
        let [a, b, c] = HEAP_LOOPS.map(|(kind, _)| kind);
        counts.heap = Some([per(a)?, per(b)?, per(c)?]);
    }
    Ok(counts)
}

fn floor_counts(exe: &Path) -> Result<[Counts; 2], String> {
    let per = |kind: &str| per_iteration(exe, &[kind], &[]);
    Ok([
        Counts::measure(
            "C floor: mi_malloc / mi_zalloc".into(),
            per,
            ["empty", "malloc32", "zalloc32"],
        )?,
        Counts::measure(
            "C floor: mi_malloc_small / mi_zalloc_small".into(),
            per,
            ["empty", "malloc_small32", "zalloc_small32"],
        )?,
    ])
}

/// The instructions of a whole quick run of each workload on each allocator.
fn whole_runs(
    options: &Options,
    binaries: &Binaries,
    bar: &ProgressBar,
) -> Result<Vec<(&'static str, Vec<u64>)>, String> {
    let mut whole = Vec::new();
    for workload in &options.workloads {
        bar.set_message(format!("{} (quick), every allocator", workload.name));
        let counts = options
            .variants
            .iter()
            .map(|v| {
                let exe = &binaries[v.binary].path;
                instructions(exe, &["run", workload.name, "--quick"], &v.env)
            })
            .collect::<Result<Vec<u64>, String>>()?;
        whole.push((workload.name, counts));
        bar.inc(1);
    }
    Ok(whole)
}

const INTRO: &str = "# Instructions per allocate+free pair (valgrind, minus the empty loop)\n\n\
    `Box::new(black_box([x; 32]))` dropped (plain) and `Box::new([0u8; 32])` dropped (zeroed), \
    each loop minus the same loop without the allocation. The C floors call `mi_malloc(32)` \
    (plain) or `mi_zalloc(32)` (zeroed), or their `_small` variants, and `mi_free` from C, built \
    from the same vendored sources with mimalloc-sys's release defines; *- floor* is against \
    the first. Counted under valgrind, whose virtual CPU lacks FSRM: mimalloc zeroes small \
    blocks with glibc's `memset` there rather than `rep stosb`, for every mimalloc column alike.\n\n";

fn render(columns: &[Counts], floors: &[Counts; 2]) -> String {
    let peer = columns.iter().find(|c| c.name == PEER);
    let ours = columns.iter().find(|c| c.name == "ours");
    let mut out = String::from(INTRO);
    out.push_str(&pair_table(columns, floors, peer));
    if let (Some(ours), Some(peer)) = (ours, peer) {
        out.push_str(&ours_vs_peer(ours, peer, floors));
    }
    out.push_str(&heap_table(columns));
    out
}

fn pair_table(columns: &[Counts], floors: &[Counts; 2], peer: Option<&Counts>) -> String {
    let floor = &floors[0];
    let mut out = header(
        &["allocator"],
        &[
            "empty loop",
            "plain pair",
            "zeroed pair",
            "plain vs peer",
            "zeroed vs peer",
            "plain - floor",
            "zeroed - floor",
        ],
    );
    let vs = |mine: f64, theirs: Option<f64>| {
        theirs.map_or("-".into(), |t| format!("{:+.1}%", (mine / t - 1.0) * 100.0))
    };
    for c in columns.iter().chain(floors) {
        out.push_str(&row([
            c.name.clone(),
            format!("{:.1}", c.empty),
            format!("{:.1}", c.plain_pair()),
            format!("{:.1}", c.zeroed_pair()),
            vs(c.plain_pair(), peer.map(Counts::plain_pair)),
            vs(c.zeroed_pair(), peer.map(Counts::zeroed_pair)),
            format!("{:+.1}", c.plain_pair() - floor.plain_pair()),
            format!("{:+.1}", c.zeroed_pair() - floor.zeroed_pair()),
        ]));
    }
    out
}

fn ours_vs_peer(ours: &Counts, peer: &Counts, floors: &[Counts; 2]) -> String {
    format!(
        "\nours vs peer: {:.1} vs {:.1} instructions per plain pair ({:.0}% fewer), \
         {:.1} vs {:.1} per zeroed pair ({:.0}% fewer). Ours is {:+.1} (plain) and {:+.1} \
         (zeroed) from the mi_malloc/mi_zalloc floor, {:+.1} and {:+.1} from the _small \
         floor that ours calls: Rust's allocation ABI (the `__rust_alloc` shim that holds \
         MiMalloc's layout test, the `__rust_dealloc` jump, rustc's \
         `__rust_no_alloc_shim_is_unstable` call, the null check before `handle_alloc_error`).\n",
        ours.plain_pair(),
        peer.plain_pair(),
        (1.0 - ours.plain_pair() / peer.plain_pair()) * 100.0,
        ours.zeroed_pair(),
        peer.zeroed_pair(),
        (1.0 - ours.zeroed_pair() / peer.zeroed_pair()) * 100.0,
        ours.plain_pair() - floors[0].plain_pair(),
        ours.zeroed_pair() - floors[0].zeroed_pair(),
        ours.plain_pair() - floors[1].plain_pair(),
        ours.zeroed_pair() - floors[1].zeroed_pair(),
    )
}

/// The [`HEAP_LOOPS`] of the columns that ran them; nothing when none did.
fn heap_table(columns: &[Counts]) -> String {
    let ran: Vec<(&Counts, &[f64; HEAP_LOOPS.len()])> = columns
        .iter()
        .filter_map(|c| Some((c, c.heap.as_ref()?)))
        .collect();
    if ran.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\n## Instructions per pair outside the global allocator (this workspace only)\n\n\
         The loops allocate and free 32 bytes with `Heap::allocate` and `Heap::deallocate` in a \
         `Heap` of their own, or drop an allocator-api2 `Box::new_in([x; 32], ..)` in `&Heap` or \
         in `MiMalloc` (their `Allocator` impls), each minus the empty loop, next to the plain \
         `GlobalAlloc` pair of the first table.\n\n",
    );
    let [a, b, c] = HEAP_LOOPS.map(|(_, name)| name);
    let global = "GlobalAlloc Box (for comparison, the plain pair)";
    out.push_str(&header(&["allocator"], &[a, b, c, global]));
    for (c, loops) in ran {
        let pairs = loops.iter().map(|l| l - c.empty).chain([c.plain_pair()]);
        let cells = pairs.map(|p| format!("{p:.1}"));
        out.push_str(&row([c.name.clone()].into_iter().chain(cells)));
    }
    out
}

/// Whole quick-mode workload runs (start-up and preparation included, the same for every
/// allocator but for their own allocations), relative to the peer: a deterministic comparison
/// where wall time on a busy machine is not.
fn render_workloads(options: &Options, whole: &[(&str, Vec<u64>)]) -> String {
    let peer = options.variants.iter().position(|v| v.name == PEER);
    let mut out = String::from(
        "\n## Instructions per whole workload run (quick mode), relative to the peer\n\n\
         The process's instructions for `run <workload> --quick` (a fiftieth of the measured size), \
         preparation and start-up included. Threads are serialised under valgrind, so the counts of \
         the threaded workloads include some waiting.\n\n",
    );
    out.push_str(&workload_table(
        options,
        whole,
        "allocator",
        |v, counts| match peer {
            Some(p) => format!("{:.3}x", counts[v] as f64 / counts[p] as f64),
            None => format!("{:.1} M", counts[v] as f64 / 1e6),
        },
    ));
    out.push('\n');
    out.push_str(&workload_table(
        options,
        whole,
        "millions of instructions",
        |v, counts| format!("{:.1}", counts[v] as f64 / 1e6),
    ));
    out
}

/// A line per allocator, a column per workload; `cell(v, counts)` shows allocator `v`'s count
/// among a workload's `counts`.
fn workload_table(
    options: &Options,
    whole: &[(&str, Vec<u64>)],
    corner: &str,
    cell: impl Fn(usize, &[u64]) -> String,
) -> String {
    let names: Vec<&str> = whole.iter().map(|(name, _)| *name).collect();
    let mut out = header(&[corner], &names);
    for (v, variant) in options.variants.iter().enumerate() {
        let cells = whole.iter().map(|(_, counts)| cell(v, counts));
        out.push_str(&row([variant.name.clone()].into_iter().chain(cells)));
    }
    out
}

fn valgrind_version() -> Result<String, String> {
    let output = Command::new("valgrind")
        .arg("--version")
        .output()
        .map_err(|_| "valgrind is not installed (apt-get install valgrind)".to_owned())?;
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Instructions per iteration of the loop `args` runs (the count is appended).
fn per_iteration(exe: &Path, args: &[&str], env: &[(String, String)]) -> Result<f64, String> {
    let count = |n: u64| {
        let n = n.to_string();
        let mut args = args.to_vec();
        args.push(&n);
        instructions(exe, &args, env)
    };
    let (short, long) = (count(SHORT)?, count(LONG)?);
    Ok((long as f64 - short as f64) / (LONG - SHORT) as f64)
}

/// Instructions executed by the whole process.
fn instructions(exe: &Path, args: &[&str], env: &[(String, String)]) -> Result<u64, String> {
    let output = env::command("valgrind", env)
        .args([
            "--tool=cachegrind",
            "--cache-sim=no",
            "--cachegrind-out-file=/dev/null",
        ])
        .arg(exe)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run valgrind: {e}"))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(format!(
            "valgrind {} {args:?} failed:\n{stderr}",
            exe.display()
        ));
    }
    instruction_count(&stderr)
        .ok_or_else(|| format!("no instruction count in valgrind's output:\n{stderr}"))
}

/// The count in cachegrind's summary: `==123== I   refs:      1,234,567`.
fn instruction_count(stderr: &str) -> Option<u64> {
    stderr.lines().find_map(|line| {
        let (_, count) = line
            .split_once("I   refs:")
            .or_else(|| line.split_once("I refs:"))?;
        count.trim().replace(',', "").parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::{Counts, heap_table, instruction_count};

    fn counts(name: &str, heap: Option<[f64; 3]>) -> Counts {
        Counts {
            name: name.into(),
            empty: 10.0,
            plain: 50.5,
            zeroed: 60.0,
            heap,
        }
    }

    #[test]
    fn the_heap_table_shows_the_columns_that_ran_the_heap_loops_minus_their_empty_loop() {
        assert_eq!(heap_table(&[counts("system", None)]), "");
        let table = heap_table(&[
            counts("system", None),
            counts("ours", Some([30.0, 35.25, 40.0])),
        ]);
        assert!(table.starts_with("\n## Instructions per pair outside the global allocator"));
        assert!(
            table.ends_with("|---|---:|---:|---:|---:|\n| ours | 20.0 | 25.2 | 30.0 | 40.5 |\n")
        );
        assert!(!table.contains("system"));
    }

    #[test]
    fn reads_the_count_in_cachegrinds_summary() {
        let stderr = "==1== Cachegrind, a high-precision tracing profiler\n==1== \n==1== I   refs:      1,234,567\n";
        assert_eq!(instruction_count(stderr), Some(1_234_567));
        assert_eq!(instruction_count("==1== I refs: 42"), Some(42));
        assert_eq!(instruction_count("no summary"), None);
    }
}
