//! What mimalloc counts: a typed snapshot of its counters ([`read`]), the blocks per size class
//! ([`size_bins`], mimalloc 3), and its own printout as a table ([`print`]) or JSON ([`json`]).
//!
//! ```
//! let before = mimalloc::stats::read();
//! let mut text = String::new();
//! mimalloc::stats::print(&mut text).unwrap();
//! assert!(mimalloc::stats::json().contains("\"reserved\""));
//! assert!(mimalloc::stats::read().reserved.peak >= before.reserved.current);
//! ```

use crate::output::with_output;
use core::fmt;
use mimalloc_sys as ffi;

/// A counter with a current value, the highest it reached, and the running total of increases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Count {
    /// The value now.
    pub current: i64,
    /// The highest value so far.
    pub peak: i64,
    /// The sum of every increase so far.
    pub total: i64,
}

impl From<ffi::mi_stat_count_t> for Count {
    fn from(c: ffi::mi_stat_count_t) -> Count {
        Count {
            current: c.current,
            peak: c.peak,
            total: c.total,
        }
    }
}

/// A snapshot of mimalloc's statistics (`mi_stats_get`): the counters of all heaps, for the
/// whole process, merged at the time of the call.
///
/// Memory counters are in bytes. mimalloc always counts what it takes from and gives back to
/// the OS. mimalloc 3 also counts blocks in every build, cheaply: a page adds up its
/// allocations and frees and hands them to the thread's counters when the thread takes its
/// slow path on it, so [`Stats::allocated`] and the other block counters lag the program by
/// the blocks of the pages in use (a few KiB to a few MiB per thread). mimalloc 2 counts
/// blocks only in `debug` builds; without them these fields are `None` there. For exact live
/// bytes per thread, or a limit, use the `Tracking` allocator.
///
/// ```
/// mimalloc::assign_global!();
///
/// fn main() {
///     let big = vec![1u8; 64 << 20];
///     let now = mimalloc::stats::read();
///     assert!(now.committed.current >= 64 << 20);
///     assert!(now.reserved.current >= now.committed.current);
///     drop(big);
/// }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Stats {
    /// Address space reserved from the OS, including the arenas the memory policy reserves for
    /// the heap ([`crate::policy`]), which mimalloc's own printouts ([`print`],
    /// [`json`]) leave out as they do all memory a program hands to mimalloc.
    pub reserved: Count,
    /// Memory committed from the OS. On systems that overcommit (Linux) mimalloc commits its
    /// arenas eagerly and gives memory back by purging it, which makes it non-resident without
    /// uncommitting it: there this stays high while the resident set shrinks; [`Stats::purged`]
    /// and the RSS show memory going back.
    pub committed: Count,
    /// The committed part of mimalloc's pages.
    pub page_committed: Count,
    /// mimalloc pages (the unit of allocation of one block size).
    pub pages: Count,
    /// Threads that have used mimalloc.
    pub threads: Count,
    /// Heaps (mimalloc 3 only).
    pub heaps: Option<Count>,
    /// Bytes in live blocks, including their rounding up to a size class; `None` with `v2`
    /// outside `debug` builds.
    pub allocated: Option<Count>,
    /// Blocks allocated so far (mimalloc 3; `None` with `v2`).
    pub malloc_count: Option<i64>,
    /// Blocks freed so far (mimalloc 3; `None` with `v2`).
    pub free_count: Option<i64>,
    /// Bytes freed so far, in whole blocks (mimalloc 3; `None` with `v2`).
    pub freed: Option<i64>,
    /// Bytes requested so far (mimalloc 3; `None` with `v2`). Exact per call in `debug`
    /// builds; otherwise counted per page, as the blocks' usable sizes.
    pub requested: Option<i64>,
    /// Arenas reserved so far.
    pub arenas: i64,
    /// Calls to the OS to map memory.
    pub mmap_calls: i64,
    /// Calls to the OS to commit memory.
    pub commit_calls: i64,
    /// Calls to the OS to return memory (decommit or reset).
    pub purge_calls: i64,
    /// Bytes returned to the OS so far (decommitted or reset).
    pub purged: i64,
}

/// Whether mimalloc counts every block: mimalloc 3 in every build (`MI_STATS` is 1 in release
/// builds, 2 in debug ones); mimalloc 2's `MI_STAT` follows `MI_DEBUG`, which only a debug build
/// of mimalloc turns on (`debug`, or `debug_in_debug` outside the release profile: mimalloc-sys's
/// plan publishes it as `cfg(mimalloc_debug)`).
const COUNTS_BLOCKS: bool = cfg!(not(feature = "v2")) || cfg!(mimalloc_debug);

// The fields read here are those of the vendored header's layout: a mimalloc update that
// changes it (and `MI_STAT_VERSION`) must be read again before this compiles.
#[cfg(not(feature = "v2"))]
const _: () = assert!(
    ffi::MI_STAT_VERSION == 6,
    "mi_stats_t changed: update stats.rs"
);
#[cfg(feature = "v2")]
const _: () = assert!(
    ffi::MI_STAT_VERSION == 4,
    "mi_stats_t changed: update stats.rs"
);

impl Stats {
    fn from_raw(raw: &ffi::mi_stats_t) -> Stats {
        #[cfg(not(feature = "v2"))]
        let (allocated, blocks) = (
            Count::from(raw.allocated),
            Some([
                raw.malloc_count.total,
                raw.free_count.total,
                raw.freed.total,
                raw.malloc_requested.total,
            ]),
        );
        #[cfg(feature = "v2")]
        let (allocated, blocks) = {
            let mut allocated = Count::from(raw.malloc_normal);
            let huge = Count::from(raw.malloc_huge);
            allocated.current += huge.current;
            allocated.peak += huge.peak; // an upper bound: the two peaks need not coincide
            allocated.total += huge.total;
            (allocated, None::<[i64; 4]>)
        };
        let policy = crate::policy::reserved() as i64;
        Stats {
            reserved: Count {
                current: raw.reserved.current + policy,
                // An upper bound, as the policy reserves its arenas before the heap grows.
                peak: raw.reserved.peak + policy,
                total: raw.reserved.total + policy,
            },
            committed: raw.committed.into(),
            page_committed: raw.page_committed.into(),
            pages: raw.pages.into(),
            threads: raw.threads.into(),
            #[cfg(not(feature = "v2"))]
            heaps: Some(raw.heaps.into()),
            #[cfg(feature = "v2")]
            heaps: None,
            allocated: if COUNTS_BLOCKS { Some(allocated) } else { None },
            malloc_count: blocks.map(|b| b[0]),
            free_count: blocks.map(|b| b[1]),
            freed: blocks.map(|b| b[2]),
            requested: blocks.map(|b| b[3]),
            arenas: raw.arena_count.total,
            mmap_calls: raw.mmap_calls.total,
            commit_calls: raw.commit_calls.total,
            purge_calls: raw.purge_calls.total,
            purged: raw.purged.total,
        }
    }
}

/// A `mi_stats_t` with its header filled in, as `mi_stats_get` requires.
fn empty_raw() -> ffi::mi_stats_t {
    ffi::mi_stats_t {
        size: core::mem::size_of::<ffi::mi_stats_t>(),
        version: ffi::MI_STAT_VERSION as usize,
        ..Default::default()
    }
}

/// Reads mimalloc's process-wide statistics (`mi_stats_get`). See [`Stats`].
///
/// mimalloc counts per thread and adds a thread's counts to the process's when the thread
/// exits or calls [`merge`]; this function merges the calling thread's first, so the
/// snapshot covers this thread and every exited one.
pub fn read() -> Stats {
    merge();
    let mut raw = empty_raw();
    // SAFETY: `raw` is a valid, writable `mi_stats_t` whose header names its size and version.
    let filled = unsafe { ffi::mi_stats_get(&mut raw) };
    // The header always matches: the struct comes from the same vendored header as the library.
    debug_assert!(filled, "mi_stats_get rejected the stats header");
    Stats::from_raw(&raw)
}

/// The blocks of one size class: a line of [`SizeBins`].
#[cfg(not(feature = "v2"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SizeBin {
    /// The size of the class's blocks in bytes: the largest request it serves. For the huge
    /// class, the smallest block it holds is larger than every other class's.
    pub block_size: usize,
    /// Whether this is the huge class (blocks of any size above the largest class, each in a
    /// page of its own).
    pub huge: bool,
    /// Blocks of this class: live now, the most at once, and all so far.
    pub blocks: Count,
}

/// mimalloc 3's block counts per size class, counted as [`Stats::allocated`] is: which sizes
/// a program allocates, and how many it keeps. Prints as a table.
///
/// ```
/// mimalloc::assign_global!();
///
/// fn main() {
///     let kept: Vec<Box<[u8; 100]>> = (0..20_000).map(|_| Box::new([0u8; 100])).collect();
///     let bins = mimalloc::stats::size_bins();
///     let class = bins.iter().find(|b| b.block_size >= 100 && !b.huge).unwrap();
///     // The blocks of the pages in use are not counted yet: up to a few pages' worth.
///     assert!(class.blocks.current >= 20_000 - 8 * 64 * 1024 / 112, "{bins}");
///     println!("{bins}");
///     drop(kept);
/// }
/// ```
#[cfg(not(feature = "v2"))]
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SizeBins {
    bins: rust_alloc::vec::Vec<SizeBin>,
}

#[cfg(not(feature = "v2"))]
impl SizeBins {
    /// The classes that have had blocks, smallest first.
    pub fn iter(&self) -> core::slice::Iter<'_, SizeBin> {
        self.bins.iter()
    }
}

#[cfg(not(feature = "v2"))]
impl fmt::Display for SizeBins {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:>12} {:>12} {:>12} {:>14}",
            "block size", "live", "peak", "total"
        )?;
        for bin in &self.bins {
            let size = if bin.huge {
                rust_alloc::format!(">{}", bin.block_size)
            } else {
                rust_alloc::format!("{}", bin.block_size)
            };
            writeln!(
                f,
                "{size:>12} {:>12} {:>12} {:>14}",
                bin.blocks.current, bin.blocks.peak, bin.blocks.total
            )?;
        }
        Ok(())
    }
}

/// Reads mimalloc 3's block counts per size class (`mi_stats_t::malloc_bins`), merged as
/// [`read`] merges. mimalloc 2 keeps them only in `debug` builds: with `v2` this does not
/// exist.
#[cfg(not(feature = "v2"))]
pub fn size_bins() -> SizeBins {
    merge();
    let mut raw = empty_raw();
    // SAFETY: as in `read`: a valid, writable `mi_stats_t` with its header filled in.
    let filled = unsafe { ffi::mi_stats_get(&mut raw) };
    debug_assert!(filled, "mi_stats_get rejected the stats header");
    let huge = ffi::MI_BIN_HUGE as usize;
    let bins = raw
        .malloc_bins
        .iter()
        .enumerate()
        .filter(|(_, count)| count.total > 0)
        .map(|(i, count)| SizeBin {
            // SAFETY: no preconditions; `i` is at most MI_BIN_HUGE, a valid bin.
            block_size: unsafe { ffi::mi_stats_get_bin_size(if i == huge { i - 1 } else { i }) },
            huge: i == huge,
            blocks: Count::from(*count),
        })
        .collect();
    SizeBins { bins }
}

/// Writes mimalloc's statistics table (`mi_stats_print_out`) to `out`: the same text as
/// `MIMALLOC_SHOW_STATS=1` prints at exit, sent to the writer instead of stderr, so it never
/// interleaves with other output.
///
/// ```
/// mimalloc::assign_global!();
///
/// fn main() {
///     let data = vec![0u8; 1 << 20]; // mimalloc has reserved memory now
///     let mut text = String::new();
///     mimalloc::stats::print(&mut text).unwrap();
///     assert!(text.contains("reserved"), "{text}");
///     # drop(data);
/// }
/// ```
pub fn print(out: &mut dyn fmt::Write) -> fmt::Result {
    // SAFETY: `with_output` passes a valid callback and its argument; mimalloc calls it
    // synchronously, before returning.
    with_output(out, |callback, arg| unsafe {
        ffi::mi_stats_print_out(callback, arg)
    })
}

/// [`print`] to an `std::io::Write`, e.g. a file or a locked stdout.
///
/// ```
/// mimalloc::stats::print_io(&mut std::io::stderr().lock()).unwrap();
/// ```
#[cfg(feature = "std")]
pub fn print_io<W: std::io::Write + ?Sized>(out: &mut W) -> std::io::Result<()> {
    let mut adapter = crate::output::IoWriter {
        inner: out,
        error: None,
    };
    match print(&mut adapter) {
        Ok(()) => Ok(()),
        Err(fmt::Error) => Err(adapter.error.take().unwrap_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::Other, "formatting failed")
        })),
    }
}

/// mimalloc's statistics as a JSON document (`mi_stats_get_json`), for a metrics endpoint.
///
/// # Panics
///
/// If mimalloc cannot allocate the document (about 15 KiB).
///
/// ```
/// let json = mimalloc::stats::json();
/// assert!(json.starts_with('{') && json.contains("\"reserved\""));
/// ```
pub fn json() -> rust_alloc::string::String {
    // SAFETY: without a buffer, mimalloc allocates the document itself (growing it until it
    // fits) and returns it NUL-terminated, or null if it could not allocate.
    let text = unsafe { ffi::mi_stats_get_json(0, core::ptr::null_mut()) };
    assert!(
        !text.is_null(),
        "mimalloc could not allocate the statistics document"
    );
    // SAFETY: a NUL-terminated string, alive until it is freed below.
    let json =
        rust_alloc::string::String::from_utf8_lossy(unsafe { crate::output::c_str_bytes(text) })
            .into_owned();
    // SAFETY: the document is a block of mimalloc's, freed once and not read afterwards.
    unsafe { ffi::mi_free(text.cast()) };
    json
}

/// Resets the statistics counters to zero (`mi_stats_reset`, mimalloc 2 only).
///
/// mimalloc 3.6.0 keeps `mi_stats_reset` as a deprecated function that merges the main heap's
/// statistics and resets nothing, so with mimalloc 3 this function does not exist rather than
/// silently do nothing: compare two [`read`] snapshots instead.
///
/// ```
/// mimalloc::stats::reset();
/// assert_eq!(mimalloc::stats::read().mmap_calls, 0);
/// ```
#[cfg(feature = "v2")]
pub fn reset() {
    // SAFETY: no preconditions.
    unsafe { ffi::mi_stats_reset() }
}

/// Merges the calling thread's statistics into the process-wide ones now, rather than when the
/// thread exits or collects.
///
/// mimalloc 2 has `mi_stats_merge` for this. mimalloc 3.6.0 declares it but does not define
/// it; there the thread's counters are merged by `mi_thread_stats_print_out`, whose output this
/// function discards.
///
/// ```
/// mimalloc::stats::merge();
/// ```
pub fn merge() {
    #[cfg(feature = "v2")]
    // SAFETY: no preconditions.
    unsafe {
        ffi::mi_stats_merge()
    }
    #[cfg(not(feature = "v2"))]
    // SAFETY: the callback ignores its arguments, so any argument is fine.
    unsafe {
        ffi::mi_thread_stats_print_out(Some(crate::output::discard), core::ptr::null_mut())
    }
}

/// mimalloc's statistics as a JSON document in the registry crates' type, the one
/// [`MiMalloc::stats_json`](crate::MiMalloc::stats_json) returns; dereferences to a `CStr`.
/// [`json`] gives the same document as a `String`. (`CStr` outside `std` needs Rust 1.64, hence
/// the `std` feature, which `extended` turns on.)
///
/// ```
/// let json: mimalloc::stats::StatsJson = mimalloc::MiMalloc::stats_json().unwrap();
/// assert!(json.to_str().unwrap().starts_with('{'));
/// ```
#[cfg(feature = "std")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatsJson {
    pub(crate) text: std::ffi::CString,
}

#[cfg(feature = "std")]
impl core::ops::Deref for StatsJson {
    type Target = std::ffi::CStr;

    fn deref(&self) -> &std::ffi::CStr {
        &self.text
    }
}
