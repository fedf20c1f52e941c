//! mimalloc's own view of the process: statistics, `collect`, process information.
//!
//! Through the raw `mimalloc_sys` functions for now; when the safe `mimalloc::stats` module
//! lands, only this file changes.

use mimalloc_sys as ffi;

/// The process-wide figures the tests reason about, in bytes or counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Memory committed from the OS now (`stats.committed.current`).
    pub committed: i64,
    /// The most ever committed at once.
    pub committed_peak: i64,
    /// Address space reserved from the OS now.
    pub reserved: i64,
    /// Threads that mimalloc knows are alive (`stats.threads.current`).
    pub threads: i64,
    /// Pages in use (`stats.pages.current`).
    pub pages: i64,
    /// Pages left behind by exited threads and not yet reclaimed.
    pub pages_abandoned: i64,
    /// Bytes in live blocks of small and large sizes (kept only when `MI_STAT > 0`, i.e. with
    /// the `debug` feature).
    pub malloc_normal: i64,
    /// Bytes in live huge blocks (likewise).
    pub malloc_huge: i64,
    /// Blocks mimalloc placed in front of a guard page (`guarded` builds).
    pub guarded_count: i64,
}

/// Whether this build keeps the per-block statistics (`malloc_normal`, `malloc_huge`).
pub const DETAILED: bool = cfg!(feature = "debug");

/// mimalloc's statistics now (`mi_stats_get`), merged over all threads.
pub fn snapshot() -> Snapshot {
    // SAFETY: `mi_stats_t` is plain old data (integers and arrays of them), so all-zero is a
    // valid value; `mi_stats_get` checks the size and version we set and fills the rest.
    let stats = unsafe {
        let mut stats: ffi::mi_stats_t = std::mem::zeroed();
        stats.size = std::mem::size_of::<ffi::mi_stats_t>();
        stats.version = ffi::MI_STAT_VERSION as usize;
        assert!(
            ffi::mi_stats_get(&mut stats),
            "mi_stats_get refused the statistics struct of the bindings"
        );
        stats
    };
    Snapshot {
        committed: stats.committed.current,
        committed_peak: stats.committed.peak,
        reserved: stats.reserved.current,
        threads: stats.threads.current,
        pages: stats.pages.current,
        pages_abandoned: stats.pages_abandoned.current,
        malloc_normal: stats.malloc_normal.current,
        malloc_huge: stats.malloc_huge.current,
        guarded_count: stats.malloc_guarded_count.total,
    }
}

/// Returns free memory to the OS (`mi_collect`; `force` also purges what is normally kept).
pub fn collect(force: bool) {
    // SAFETY: `mi_collect` has no preconditions.
    unsafe { ffi::mi_collect(force) }
}

/// `mi_process_info`: (resident set, committed memory), in bytes.
fn process_info() -> (usize, usize) {
    let (mut elapsed, mut user, mut system, mut rss, mut peak_rss) = (0, 0, 0, 0, 0);
    let (mut commit, mut peak_commit, mut faults) = (0, 0, 0);
    // SAFETY: every out-pointer is a valid, distinct `usize` for the duration of the call.
    unsafe {
        ffi::mi_process_info(
            &mut elapsed,
            &mut user,
            &mut system,
            &mut rss,
            &mut peak_rss,
            &mut commit,
            &mut peak_commit,
            &mut faults,
        )
    };
    (rss, commit)
}

/// The process's committed memory as mimalloc measures it (`mi_process_info`), in bytes.
pub fn process_commit() -> usize {
    process_info().1
}

/// The memory the OS really holds for the process (resident set), where it can be measured:
/// `/proc/self/statm` on Linux and Android, the working set on Windows. (mimalloc's own
/// `current_rss` is its committed figure on Linux, which purged memory still counts in: it
/// purges with `MADV_DONTNEED` unless memory is decommitted, as `secure` builds do.)
pub fn resident_bytes() -> Option<usize> {
    if cfg!(windows) {
        return Some(process_info().0);
    }
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * page_size())
}

#[cfg(unix)]
fn page_size() -> usize {
    // SAFETY: `sysconf` has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

#[cfg(not(unix))]
fn page_size() -> usize {
    4096
}
