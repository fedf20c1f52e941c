//! One measurement: one process running one workload, its run time (as the driver timed it),
//! its peak resident set size and its minor page faults (as the kernel accounted them, from
//! `wait4`'s rusage), and for a workload that goes quiet after its run, the resident memory
//! it read then (as the driver printed it); or one whole program, timed from start to exit
//! (`product`).

use crate::env;
use crate::variants::Variant;
use bench_workloads::{Timing, Workload};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

#[derive(Clone, Debug)]
pub struct Sample {
    /// Wall time of the run.
    pub nanos: u64,
    /// User+system CPU time of the run, all threads: what a busy machine changes least.
    pub cpu_nanos: Option<u64>,
    /// `None` where the platform does not report it.
    pub peak_rss_kib: Option<u64>,
    /// Minor page faults of the whole process (start-up and preparation included, as for the
    /// peak RSS): pages the kernel had to map, which purging and huge pages change the most.
    /// `None` where the platform does not report them.
    pub minor_faults: Option<u64>,
    /// The resident memory (KiB) a workload that goes quiet after its run read at the end of
    /// its quiet phase: what the allocator kept of the run. `None` for the other workloads
    /// and where the platform does not report it.
    pub quiet_rss_kib: Option<u64>,
}

/// Runs `workload` in a fresh process of `binary`, with `variant`'s environment and no other
/// `MIMALLOC_*` variable, and times it as the workload says ([`timed`]).
pub fn run(
    binary: &Path,
    variant: &Variant,
    workload: &Workload,
    quick: bool,
) -> Result<Sample, String> {
    let mut command = env::command(binary, &variant.env);
    command.args(["run", workload.name]);
    if quick {
        command.arg("--quick");
    }
    let what = format!("{} on {}", workload.name, variant.name);
    let finished = run_to_end(command, &what, Output::Kept)?;
    if !finished.success {
        return Err(format!(
            "{what} failed: {}{}",
            finished.stdout.trim(),
            finished.stderr.trim()
        ));
    }
    let run = finished.sample(&what)?;
    let process = (finished.wall_nanos, finished.usage.cpu_nanos);
    timed(run, workload.timing, process, &what)
}

/// The sample's time as `timing` asks: the driver's clock around the run ([`Timing::Run`]), the
/// run's CPU time ([`Timing::Cpu`]), or the whole `process`'s wall and CPU time, from spawn to
/// exit ([`Timing::WholeProcess`]).
fn timed(
    run: Sample,
    timing: Timing,
    process: (u64, Option<u64>),
    what: &str,
) -> Result<Sample, String> {
    Ok(match timing {
        Timing::Run => run,
        Timing::Cpu => Sample {
            nanos: run.cpu_nanos.ok_or_else(|| {
                format!("{what}: its time is the run's CPU time, which this platform's driver does not report")
            })?,
            ..run
        },
        Timing::WholeProcess => Sample {
            nanos: process.0,
            cpu_nanos: process.1,
            ..run
        },
    })
}

/// A process that has exited.
pub struct Finished {
    pub success: bool,
    /// Empty unless its stdout was kept ([`Output::Kept`]).
    pub stdout: String,
    pub stderr: String,
    /// From start to exit.
    pub wall_nanos: u64,
    usage: Usage,
}

/// What the kernel accounted for a finished process.
#[derive(Clone, Copy, Debug, Default)]
struct Usage {
    peak_rss_kib: Option<u64>,
    minor_faults: Option<u64>,
    /// User+system CPU time of the process and the threads it ran.
    cpu_nanos: Option<u64>,
}

/// What happens to a process's stdout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// Read, for a driver's one line of results.
    Kept,
    /// Discarded, for a user's program, which may write any amount (and to both pipes: reading
    /// one to the end while the other fills could block both processes).
    Discarded,
}

/// Runs `command` to its end with its stderr (and, if asked, its stdout) read.
pub fn run_to_end(mut command: Command, what: &str, output: Output) -> Result<Finished, String> {
    let stdout_to = match output {
        Output::Kept => Stdio::piped(),
        Output::Discarded => Stdio::null(),
    };
    let start = Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(stdout_to)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {what}: {e}"))?;
    let (mut stdout, mut stderr) = (String::new(), String::new());
    // A driver prints one line at the end, and a discarded stdout is no pipe: reading to the
    // end before waiting cannot block.
    if let Some(mut pipe) = child.stdout.take() {
        pipe.read_to_string(&mut stdout).ok();
    }
    let mut pipe = child.stderr.take().expect("piped");
    pipe.read_to_string(&mut stderr).ok();
    let (success, usage) = wait(child)?;
    Ok(Finished {
        success,
        stdout,
        stderr,
        wall_nanos: start.elapsed().as_nanos() as u64,
        usage,
    })
}

impl Finished {
    /// The sample in a driver's line, with what the kernel accounted for its process, once its
    /// checksum is the expected one.
    pub fn sample(&self, what: &str) -> Result<Sample, String> {
        sample(&self.stdout, self.usage, what)
    }

    /// The last `lines` lines of its stderr.
    pub fn stderr_tail(&self, lines: usize) -> String {
        let all: Vec<&str> = self.stderr.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

/// Runs a whole program to its end, its output discarded: wall time from start to exit, and
/// CPU time and peak RSS as the kernel accounted them (`None` where the platform does not).
/// Fails when it exits with a non-zero status, showing the end of what it wrote to stderr.
pub fn run_whole(command: Command, what: &str) -> Result<Sample, String> {
    let finished = run_to_end(command, what, Output::Discarded)?;
    if !finished.success {
        return Err(format!("{what} failed:\n{}", finished.stderr_tail(20)));
    }
    Ok(Sample {
        nanos: finished.wall_nanos,
        cpu_nanos: finished.usage.cpu_nanos,
        peak_rss_kib: finished.usage.peak_rss_kib,
        minor_faults: finished.usage.minor_faults,
        quiet_rss_kib: None,
    })
}

/// The sample in a successful run's `key=value` line (`stdout`), with what the kernel
/// accounted for its process, once its checksum is the expected one.
fn sample(stdout: &str, usage: Usage, what: &str) -> Result<Sample, String> {
    let field = |name: &str| -> Option<u64> {
        stdout
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .and_then(|v| v.parse().ok())
    };
    let (Some(nanos), Some(checksum), Some(expected)) =
        (field("nanos"), field("checksum"), field("expected"))
    else {
        return Err(format!("{what}: unexpected output {stdout:?}"));
    };
    if checksum != expected {
        return Err(format!("{what}: checksum {checksum}, expected {expected}"));
    }
    Ok(Sample {
        nanos,
        cpu_nanos: field("cpu_nanos"),
        peak_rss_kib: usage.peak_rss_kib,
        minor_faults: usage.minor_faults,
        quiet_rss_kib: field("quiet_rss_kib"),
    })
}

/// Waits for the child; returns whether it exited with status 0, and its peak RSS (in KiB)
/// and minor faults.
#[cfg(unix)]
fn wait(child: std::process::Child) -> Result<(bool, Usage), String> {
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is a C struct of integers, for which all-zero bytes are a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet waited for (std's `Child` only waits when asked);
    // both out-pointers point to live, writable locals of the right types.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    if reaped != pid {
        return Err(format!("wait4: {}", std::io::Error::last_os_error()));
    }
    let success = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    let nanos =
        |t: libc::timeval| t.tv_sec.max(0) as u64 * 1_000_000_000 + t.tv_usec.max(0) as u64 * 1000;
    let usage = Usage {
        peak_rss_kib: Some(max_rss_kib(&usage)),
        minor_faults: Some(usage.ru_minflt.max(0) as u64),
        cpu_nanos: Some(nanos(usage.ru_utime) + nanos(usage.ru_stime)),
    };
    Ok((success, usage))
}

/// The peak RSS this process's children cannot report less than, in KiB: what `true` peaks at
/// when started from here. Linux starts a spawned child's peak RSS at pages of its parent's
/// (a vforked child inherits the parent's whole peak), so a figure at or below this one says
/// only "at most this much". It is taken once, after the measured runs, as an estimate of the
/// floor they had. `None` where `true` cannot be started or RSS is not measured.
pub fn spawn_floor_kib() -> Option<u64> {
    let child = Command::new("true")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let (success, usage) = wait(child).ok()?;
    success.then_some(usage.peak_rss_kib).flatten()
}

/// `ru_maxrss` in KiB: Linux and the BSDs report KiB, macOS bytes.
#[cfg(unix)]
fn max_rss_kib(usage: &libc::rusage) -> u64 {
    let max = usage.ru_maxrss.max(0) as u64;
    if cfg!(target_os = "macos") {
        max / 1024
    } else {
        max
    }
}

#[cfg(not(unix))]
fn wait(mut child: std::process::Child) -> Result<(bool, Usage), String> {
    let status = child.wait().map_err(|e| format!("wait: {e}"))?;
    Ok((status.success(), Usage::default()))
}

#[cfg(test)]
mod tests {
    use super::{Usage, sample, timed};
    use bench_workloads::Timing;

    const USAGE: Usage = Usage {
        peak_rss_kib: Some(4096),
        minor_faults: Some(900),
        cpu_nanos: Some(7),
    };

    #[test]
    fn the_quiet_figure_is_read_from_the_line_when_the_driver_prints_it() {
        let line = "workload=idle-still nanos=250 cpu_nanos=240 checksum=9 expected=9 \
                    quiet_rss_kib=8444\n";
        let s = sample(line, USAGE, "idle-still").expect("a successful run's line");
        assert_eq!(s.quiet_rss_kib, Some(8444));
        assert_eq!((s.nanos, s.cpu_nanos), (250, Some(240)));
        assert_eq!((s.peak_rss_kib, s.minor_faults), (Some(4096), Some(900)));
    }

    #[test]
    fn a_line_without_the_quiet_figure_still_parses() {
        let line = "workload=growth nanos=250 checksum=9 expected=9\n";
        let s = sample(line, USAGE, "growth").expect("a successful run's line");
        assert_eq!((s.nanos, s.cpu_nanos, s.quiet_rss_kib), (250, None, None));
        assert_eq!(s.peak_rss_kib, Some(4096));
        // The line's own figures decide whether the run passed, the optional ones never.
        let wrong = "workload=growth nanos=250 checksum=9 expected=8 quiet_rss_kib=1";
        assert!(sample(wrong, USAGE, "growth").is_err());
        assert!(sample("workload=growth checksum=9 expected=9", USAGE, "growth").is_err());
    }

    #[test]
    fn each_timing_takes_its_own_clock() {
        let line = "workload=bursty nanos=2000 cpu_nanos=400 checksum=9 expected=9\n";
        let run = sample(line, USAGE, "bursty").expect("a successful run's line");
        let process = (2500, Some(450));
        let time =
            |timing| timed(run.clone(), timing, process, "bursty").map(|s| (s.nanos, s.cpu_nanos));
        assert_eq!(time(Timing::Run), Ok((2000, Some(400))));
        assert_eq!(time(Timing::Cpu), Ok((400, Some(400))));
        assert_eq!(time(Timing::WholeProcess), Ok((2500, Some(450))));
        // No CPU time from the driver: an error, not the wall time in its place.
        let no_cpu = sample(
            "workload=bursty nanos=2000 checksum=9 expected=9",
            USAGE,
            "bursty",
        )
        .expect("a successful run's line");
        assert!(timed(no_cpu, Timing::Cpu, process, "bursty").is_err());
    }
}
