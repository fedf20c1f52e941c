//! One measurement: one process running one workload, its run time (as the driver timed it),
//! its peak resident set size and its minor page faults (as the kernel accounted them, from
//! `wait4`'s rusage).

use crate::env;
use crate::variants::Variant;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

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
}

/// Runs `workload` in a fresh process of `binary`, with `variant`'s environment and no other
/// `MIMALLOC_*` variable.
pub fn run(
    binary: &Path,
    variant: &Variant,
    workload: &str,
    quick: bool,
) -> Result<Sample, String> {
    let mut command = env::command(binary, &variant.env);
    command.args(["run", workload]);
    if quick {
        command.arg("--quick");
    }
    let finished = run_to_end(command, binary)?;
    let what = format!("{workload} on {}", variant.name);
    if !finished.success {
        return Err(format!(
            "{what} failed: {}{}",
            finished.stdout.trim(),
            finished.stderr.trim()
        ));
    }
    sample(&finished, &what)
}

/// A driver process that has exited.
struct Finished {
    success: bool,
    stdout: String,
    stderr: String,
    usage: Usage,
}

/// What the kernel accounted for a finished process.
#[derive(Clone, Copy, Debug, Default)]
struct Usage {
    peak_rss_kib: Option<u64>,
    minor_faults: Option<u64>,
}

fn run_to_end(mut command: Command, binary: &Path) -> Result<Finished, String> {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    let (mut stdout, mut stderr) = (String::new(), String::new());
    // The driver prints one line at the end: reading to the end before waiting cannot block.
    child
        .stdout
        .take()
        .expect("piped")
        .read_to_string(&mut stdout)
        .ok();
    child
        .stderr
        .take()
        .expect("piped")
        .read_to_string(&mut stderr)
        .ok();
    let (success, usage) = wait(child)?;
    Ok(Finished {
        success,
        stdout,
        stderr,
        usage,
    })
}

/// The sample in a successful run's `key=value` line, once its checksum is the expected one.
fn sample(finished: &Finished, what: &str) -> Result<Sample, String> {
    let stdout = &finished.stdout;
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
        peak_rss_kib: finished.usage.peak_rss_kib,
        minor_faults: finished.usage.minor_faults,
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
    // Linux reports ru_maxrss in KiB (macOS in bytes).
    let max = usage.ru_maxrss.max(0) as u64;
    let kib = if cfg!(target_os = "macos") {
        max / 1024
    } else {
        max
    };
    let usage = Usage {
        peak_rss_kib: Some(kib),
        minor_faults: Some(usage.ru_minflt.max(0) as u64),
    };
    Ok((success, usage))
}

#[cfg(not(unix))]
fn wait(mut child: std::process::Child) -> Result<(bool, Usage), String> {
    let status = child.wait().map_err(|e| format!("wait: {e}"))?;
    Ok((status.success(), Usage::default()))
}
