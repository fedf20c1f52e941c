//! Instructions per small allocate+free pair, counted by valgrind (cachegrind without cache
//! simulation): deterministic on a noisy machine, unlike time. Each loop runs twice with
//! different iteration counts, and the difference divided by the difference in iterations is
//! the cost of one iteration, free of start-up and exit; the empty loop's cost is then
//! subtracted, leaving the pair.

use crate::binaries::{self, Places};
use crate::floor;
use crate::options::Options;
use crate::progress;
use std::fmt::Write;
use std::path::Path;
use std::process::Command;

const SHORT: u64 = 100_000;
const LONG: u64 = 1_100_000;

/// One column of the result: instructions per iteration of each loop.
#[derive(Debug)]
struct Counts {
    name: String,
    empty: f64,
    plain: f64,
    zeroed: f64,
}

impl Counts {
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
    let spinner = progress::spinner("building the driver binaries and the C floor");
    let binaries = binaries::build_all(&options.variants, &places, &|_, _| {})?;
    let floor_exe = floor::build(&places.root, &places.builds.join("floor"))?;
    spinner.finish_and_clear();

    let bar = progress::bar(options.variants.len() as u64 + 1);
    let mut columns = Vec::new();
    for variant in &options.variants {
        bar.set_message(variant.name.clone());
        let exe = &binaries[variant.binary].path;
        let per = |kind: &str| per_iteration(exe, &["pairs", kind], &variant.env);
        columns.push(Counts {
            name: variant.name.clone(),
            empty: per("empty")?,
            plain: per("box32")?,
            zeroed: per("box32-zeroed")?,
        });
        bar.inc(1);
    }
    bar.inc_length(options.workloads.len() as u64);
    bar.set_message("C floor");
    let per = |kind: &str| per_iteration(&floor_exe, &[kind], &[]);
    let floors = [
        Counts {
            name: "C floor: mi_malloc / mi_zalloc".into(),
            empty: per("empty")?,
            plain: per("malloc32")?,
            zeroed: per("zalloc32")?,
        },
        Counts {
            name: "C floor: mi_malloc_small / mi_zalloc_small".into(),
            empty: per("empty")?,
            plain: per("malloc_small32")?,
            zeroed: per("zalloc_small32")?,
        },
    ];
    bar.inc(1);

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
    bar.finish_and_clear();

    let mut text = render(&columns, &floors);
    text.push_str(&render_workloads(options, &whole));
    print!("{text}");
    std::fs::create_dir_all(&places.out).map_err(|e| format!("{}: {e}", places.out.display()))?;
    let path = places.out.join("instructions.md");
    std::fs::write(&path, &text).map_err(|e| format!("{}: {e}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}

fn render(columns: &[Counts], floors: &[Counts; 2]) -> String {
    let floor = &floors[0];
    let peer = columns.iter().find(|c| c.name == crate::variants::PEER);
    let ours = columns.iter().find(|c| c.name == "ours");
    let mut out = String::from(
        "# Instructions per allocate+free pair (valgrind, minus the empty loop)\n\n\
         `Box::new(black_box([x; 32]))` dropped (plain) and `Box::new([0u8; 32])` dropped (zeroed), \
         each loop minus the same loop without the allocation. The C floors call `mi_malloc(32)` \
         (plain) or `mi_zalloc(32)` (zeroed), or their `_small` variants, and `mi_free` from C, built \
         from the same vendored sources with mimalloc-sys's release defines; *- floor* is against \
         the first. Counted under valgrind, whose virtual CPU lacks FSRM: mimalloc zeroes small \
         blocks with glibc's `memset` there rather than `rep stosb`, for every mimalloc column alike.\n\n\
         | allocator | empty loop | plain pair | zeroed pair | plain vs peer | zeroed vs peer | plain - floor | zeroed - floor |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for c in columns.iter().chain(floors) {
        let vs = |mine: f64, theirs: Option<f64>| {
            theirs.map_or("-".into(), |t| format!("{:+.1}%", (mine / t - 1.0) * 100.0))
        };
        let _ = writeln!(
            out,
            "| {} | {:.1} | {:.1} | {:.1} | {} | {} | {:+.1} | {:+.1} |",
            c.name,
            c.empty,
            c.plain_pair(),
            c.zeroed_pair(),
            vs(c.plain_pair(), peer.map(Counts::plain_pair)),
            vs(c.zeroed_pair(), peer.map(Counts::zeroed_pair)),
            c.plain_pair() - floor.plain_pair(),
            c.zeroed_pair() - floor.zeroed_pair(),
        );
    }
    if let (Some(ours), Some(peer)) = (ours, peer) {
        let _ = writeln!(
            out,
            "\nours vs peer: {:.1} vs {:.1} instructions per plain pair ({:.0}% fewer), \
             {:.1} vs {:.1} per zeroed pair ({:.0}% fewer). Ours is {:+.1} (plain) and {:+.1} \
             (zeroed) from the mi_malloc/mi_zalloc floor, {:+.1} and {:+.1} from the _small \
             floor that ours calls: Rust's allocation ABI (the `__rust_alloc` shim that holds \
             MiMalloc's layout test, the `__rust_dealloc` jump, rustc's \
             `__rust_no_alloc_shim_is_unstable` call, the null check before `handle_alloc_error`).",
            ours.plain_pair(),
            peer.plain_pair(),
            (1.0 - ours.plain_pair() / peer.plain_pair()) * 100.0,
            ours.zeroed_pair(),
            peer.zeroed_pair(),
            (1.0 - ours.zeroed_pair() / peer.zeroed_pair()) * 100.0,
            ours.plain_pair() - floor.plain_pair(),
            ours.zeroed_pair() - floor.zeroed_pair(),
            ours.plain_pair() - floors[1].plain_pair(),
            ours.zeroed_pair() - floors[1].zeroed_pair(),
        );
    }
    out
}

/// Whole quick-mode workload runs (start-up and preparation included, the same for every
/// allocator but for their own allocations), relative to the peer: a deterministic comparison
/// where wall time on a busy machine is not.
fn render_workloads(options: &Options, whole: &[(&str, Vec<u64>)]) -> String {
    let peer = options
        .variants
        .iter()
        .position(|v| v.name == crate::variants::PEER);
    let mut out = String::from(
        "\n## Instructions per whole workload run (quick mode), relative to the peer\n\n\
         The process's instructions for `run <workload> --quick` (a fiftieth of the measured size), \
         preparation and start-up included. Threads are serialised under valgrind, so the counts of \
         the threaded workloads include some waiting.\n\n| allocator |",
    );
    for (name, _) in whole {
        let _ = write!(out, " {name} |");
    }
    out.push_str("\n|---|");
    out.push_str(&"---:|".repeat(whole.len()));
    out.push('\n');
    for (v, variant) in options.variants.iter().enumerate() {
        let _ = write!(out, "| {} |", variant.name);
        for (_, counts) in whole {
            let cell = match peer {
                Some(p) => format!("{:.3}x", counts[v] as f64 / counts[p] as f64),
                None => format!("{:.1} M", counts[v] as f64 / 1e6),
            };
            let _ = write!(out, " {cell} |");
        }
        out.push('\n');
    }
    out.push_str("\n| millions of instructions |");
    for (name, _) in whole {
        let _ = write!(out, " {name} |");
    }
    out.push_str("\n|---|");
    out.push_str(&"---:|".repeat(whole.len()));
    out.push('\n');
    for (v, variant) in options.variants.iter().enumerate() {
        let _ = write!(out, "| {} |", variant.name);
        for (_, counts) in whole {
            let _ = write!(out, " {:.1} |", counts[v] as f64 / 1e6);
        }
        out.push('\n');
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
    let mut command = Command::new("valgrind");
    command
        .args([
            "--tool=cachegrind",
            "--cache-sim=no",
            "--cachegrind-out-file=/dev/null",
        ])
        .arg(exe)
        .args(args);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("MIMALLOC_") {
            command.env_remove(key);
        }
    }
    command.envs(env.iter().map(|(k, v)| (k, v)));
    let output = command
        .output()
        .map_err(|e| format!("cannot run valgrind: {e}"))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(format!(
            "valgrind {} {args:?} failed:\n{stderr}",
            exe.display()
        ));
    }
    // `==123== I   refs:      1,234,567`
    stderr
        .lines()
        .find_map(|line| {
            let (_, count) = line
                .split_once("I   refs:")
                .or_else(|| line.split_once("I refs:"))?;
            count.trim().replace(',', "").parse().ok()
        })
        .ok_or_else(|| format!("no instruction count in valgrind's output:\n{stderr}"))
}
