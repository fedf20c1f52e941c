//! What the operating system says about the process (`mi_process_info`): [`info`].
//!
//! ```
//! let info = mimalloc::process::info();
//! assert!(info.peak_rss >= info.current_rss.min(info.peak_rss));
//! println!("{:?} of CPU time so far", info.user_time + info.system_time);
//! ```

use core::time::Duration;
use mimalloc_sys as ffi;

/// Time and memory of the whole process, as a benchmark or a service's metrics endpoint wants
/// them (`mi_process_info`). Memory figures are in bytes. Where mimalloc does not read a figure
/// from the OS it reports its own view (see [`ProcessInfo::current_rss`]).
///
/// ```
/// let info = mimalloc::process::info();
/// assert!(info.peak_rss > 0);
/// println!("{} MiB resident at most, {} page faults", info.peak_rss >> 20, info.page_faults);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ProcessInfo {
    /// Wall-clock time since mimalloc started (about the start of the process).
    pub elapsed: Duration,
    /// CPU time spent in user mode.
    pub user_time: Duration,
    /// CPU time spent in the kernel.
    pub system_time: Duration,
    /// Resident set size now, where the OS reports it (Windows, macOS). On Linux and the BSDs
    /// mimalloc has no such figure and reports its committed memory instead.
    pub current_rss: usize,
    /// The largest resident set size so far.
    pub peak_rss: usize,
    /// Committed memory now (mimalloc's own count where the OS has none).
    pub current_commit: usize,
    /// The largest committed memory so far.
    pub peak_commit: usize,
    /// Page faults (hard faults where the OS distinguishes them).
    pub page_faults: usize,
}

/// Asks the OS, through mimalloc, about the process's time and memory. See [`ProcessInfo`].
pub fn info() -> ProcessInfo {
    let mut v = [0usize; 8];
    let [elapsed, user, system, rss, peak_rss, commit, peak_commit, faults] = &mut v;
    // SAFETY: every argument is a valid, distinct place for mimalloc to write a `size_t` into.
    unsafe {
        ffi::mi_process_info(
            elapsed,
            user,
            system,
            rss,
            peak_rss,
            commit,
            peak_commit,
            faults,
        )
    };
    let ms = |n: usize| Duration::from_millis(n as u64);
    ProcessInfo {
        elapsed: ms(v[0]),
        user_time: ms(v[1]),
        system_time: ms(v[2]),
        current_rss: v[3],
        peak_rss: v[4],
        current_commit: v[5],
        peak_commit: v[6],
        page_faults: v[7],
    }
}
