//! `limit`: the phase change under a container's memory limit. Each allocator's driver runs the
//! `phase-change` workload (a 300 MiB burst of small objects freed, 1 s quiet, then 300 MiB
//! mapped by the program itself) in a memory cgroup of its own whose limit, 480 MiB, holds one
//! phase but not both: an allocator that still holds the burst when the second phase comes is
//! killed at the limit. Rounds alternate the allocators as the main job does; the table says
//! how many runs of each survived. Making a cgroup takes root and a writable memory controller
//! (cgroup v1's, or v2's at the root of the unified hierarchy): without them the command says
//! so and stops.

use crate::binaries::{Binaries, Places};
use crate::compare;
use crate::env;
use crate::measure::{self, Output};
use crate::options::Options;
use crate::progress;
use std::fmt::Write;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;
/// The limit: one phase (about 340 MiB resident with an allocator's pages) fits, both do not.
const LIMIT: u64 = 480 * MIB;
const WORKLOAD: &str = "phase-change";

/// How one run ended.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ending {
    /// It finished, at this peak RSS (MiB) and run time (s).
    Survived { peak_mib: f64, seconds: f64 },
    /// The kernel killed it at the limit.
    Killed,
}

pub fn run(options: &Options, command: String) -> Result<(), String> {
    // A cgroup first: without one there is nothing to measure, and no reason to build.
    drop(Cgroup::make("probe")?);
    let places = Places::new(options.out.clone());
    let binaries = compare::build(options, &places)?;
    let endings = run_all(options, &binaries)?;
    let names: Vec<&str> = options.variants.iter().map(|v| v.name.as_str()).collect();
    let table = render(&names, &endings);
    print!("{table}");
    let text = format!(
        "# The phase change under a {} MiB memory limit\n\n`{command}`\n\n{table}",
        LIMIT / MIB
    );
    places.write_result("limit.md", &text)
}

/// Every round on every allocator, in the main job's alternating order.
fn run_all(options: &Options, binaries: &Binaries) -> Result<Vec<Vec<Ending>>, String> {
    let mut endings = vec![Vec::new(); options.variants.len()];
    let bar = progress::bar((options.rounds * options.variants.len()) as u64);
    for round in 0..options.rounds {
        for v in compare::turn(round, options.variants.len()) {
            let variant = &options.variants[v];
            bar.set_message(format!(
                "round {}/{}: {}",
                round + 1,
                options.rounds,
                variant.name
            ));
            let binary = &binaries[variant.binary].path;
            let ending = run_one(binary, &variant.env, options.quick, &variant.name)?;
            bar.println(format!("round {}: {} {ending:?}", round + 1, variant.name));
            endings[v].push(ending);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(endings)
}

/// One run of the workload in a fresh cgroup. A run that fails other than by the limit's kill
/// is an error: the workload checks its own answer.
fn run_one(
    binary: &Path,
    vars: &[(String, String)],
    quick: bool,
    name: &str,
) -> Result<Ending, String> {
    let cgroup = Cgroup::make(name)?;
    // The shell moves itself into the cgroup before it becomes the driver, so that every page
    // the driver touches is charged to it.
    let mut command = env::command("sh", vars);
    command
        .args(["-c", "echo $$ > \"$0/cgroup.procs\" && exec \"$@\""])
        .arg(&cgroup.dir)
        .arg(binary)
        .args(["run", WORKLOAD]);
    if quick {
        command.arg("--quick");
    }
    let what = format!("{WORKLOAD} on {name}");
    let finished = measure::run_to_end(command, &what, Output::Kept)?;
    if finished.success {
        let sample = finished.sample(&what)?;
        return Ok(Ending::Survived {
            peak_mib: sample.peak_rss_kib.unwrap_or(0) as f64 / 1024.0,
            seconds: sample.nanos as f64 / 1e9,
        });
    }
    if cgroup.oom_kills()? > 0 {
        return Ok(Ending::Killed);
    }
    Err(format!(
        "{what} failed, not at the limit:\n{}",
        finished.stderr_tail(20)
    ))
}

/// The table: per allocator, the runs that survived and were killed, and the survivors'
/// median peak RSS and run time.
fn render(names: &[&str], endings: &[Vec<Ending>]) -> String {
    let mut table = String::from(
        "| allocator | survived | killed | peak RSS of survivors (median MiB) | run time of survivors (median s) |\n|---|---:|---:|---:|---:|\n",
    );
    for (name, runs) in names.iter().zip(endings) {
        let (mut peaks, mut times) = (Vec::new(), Vec::new());
        for ending in runs {
            if let Ending::Survived { peak_mib, seconds } = *ending {
                peaks.push(peak_mib);
                times.push(seconds);
            }
        }
        let killed = runs.len() - peaks.len();
        let median = |values: &mut Vec<f64>, digits: usize| match median(values) {
            Some(m) => format!("{m:.digits$}"),
            None => "-".to_owned(),
        };
        let _ = writeln!(
            table,
            "| {name} | {} | {killed} | {} | {} |",
            peaks.len(),
            median(&mut peaks, 0),
            median(&mut times, 2)
        );
    }
    table
}

fn median(values: &mut [f64]) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

/// A memory cgroup of one run, with the limit and no swap, removed when dropped.
struct Cgroup {
    dir: PathBuf,
    v1: bool,
}

impl Cgroup {
    /// Under cgroup v1's memory hierarchy, or else at the root of v2's where the memory
    /// controller is enabled for its children.
    fn make(name: &str) -> Result<Cgroup, String> {
        let v1 = Path::new("/sys/fs/cgroup/memory");
        let v2 = Path::new("/sys/fs/cgroup");
        let (parent, is_v1) = if v1.join("memory.limit_in_bytes").exists() {
            (v1, true)
        } else if read(&v2.join("cgroup.subtree_control")).is_ok_and(|c| c.contains("memory")) {
            (v2, false)
        } else {
            return Err("limit needs a memory cgroup controller: cgroup v1's, or v2's enabled at the root (cgroup.subtree_control)".into());
        };
        let dir = parent.join(format!("mimalloc-bench-{}-{name}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| {
            format!(
                "limit makes a memory cgroup, which takes root: {}: {e}",
                dir.display()
            )
        })?;
        let cgroup = Cgroup { dir, v1: is_v1 };
        let limit = LIMIT.to_string();
        // Swap would let the limit be passed slowly instead of enforced.
        let settings: &[(&str, &str)] = if is_v1 {
            &[
                ("memory.swappiness", "0"),
                ("memory.limit_in_bytes", &limit),
                ("memory.memsw.limit_in_bytes", &limit),
            ]
        } else {
            &[("memory.max", &limit), ("memory.swap.max", "0")]
        };
        for (file, value) in settings {
            let path = cgroup.dir.join(file);
            // memsw and swap.max exist only where the kernel accounts swap: without it there is none to use.
            if path.exists() {
                std::fs::write(&path, value).map_err(|e| format!("{}: {e}", path.display()))?;
            }
        }
        Ok(cgroup)
    }

    /// How many processes of the cgroup the kernel killed at its limit.
    fn oom_kills(&self) -> Result<u64, String> {
        let file = if self.v1 {
            "memory.oom_control"
        } else {
            "memory.events"
        };
        let text = read(&self.dir.join(file))?;
        let kills = text
            .lines()
            .find_map(|line| line.strip_prefix("oom_kill "))
            .and_then(|n| n.trim().parse().ok());
        kills.ok_or(format!(
            "{}: no oom_kill line",
            self.dir.join(file).display()
        ))
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::{Ending, median, render};

    #[test]
    fn the_table_counts_each_ending_and_takes_the_survivors_medians() {
        let survived = |peak_mib, seconds| Ending::Survived { peak_mib, seconds };
        let endings = vec![
            vec![
                survived(300.0, 1.5),
                survived(310.0, 1.25),
                survived(320.0, 1.0),
            ],
            vec![Ending::Killed, survived(400.0, 2.0), Ending::Killed],
            vec![Ending::Killed],
        ];
        let table = render(&["ours", "peer", "jemalloc"], &endings);
        let rows: Vec<&str> = table.lines().skip(2).collect();
        assert_eq!(
            rows,
            [
                "| ours | 3 | 0 | 310 | 1.25 |",
                "| peer | 1 | 2 | 400 | 2.00 |",
                "| jemalloc | 0 | 1 | - | - |"
            ]
        );
    }

    #[test]
    fn the_median_of_an_even_count_is_the_middle_twos_mean() {
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&mut [5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&mut []), None);
    }
}
