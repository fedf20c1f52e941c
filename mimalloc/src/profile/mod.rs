//! Heap profiling: mimalloc 3's sampling profiler, writing pprof-compatible profiles.

mod complete;
#[cfg(target_os = "linux")]
pub(crate) mod environment;
mod images;
mod symbolize;
mod wire;

use mimalloc_sys as ffi;
use std::borrow::ToOwned;
use std::ffi::CString;
use std::fmt;
use std::format;
use std::io;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::vec::Vec;

/// mimalloc's default sample rate (`MIMALLOC_PROFILE_SAMPLE_RATE`): on average one sample per
/// this many allocated bytes.
pub const DEFAULT_SAMPLE_RATE: usize = 512 << 10;

/// The snapshot file name mimalloc accepts: its buffer is 1024 bytes, with room for the
/// sequence number and extension.
const MAX_BASE_LEN: usize = 1000;

/// One profiler at a time: mimalloc attaches a profiler to every heap of the process.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// The file format of a snapshot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Format {
    /// pprof's protobuf `Profile` (uncompressed), `<base>.NNNN.pb`: what `go tool pprof`,
    /// `mimalloc-prof` and most profile viewers read.
    #[default]
    Pprof,
    /// gperftools' text heap profile, `<base>.NNNN.heap`: what gperftools' own `pprof`
    /// (Debian's `google-pprof`) reads.
    Text,
}

impl Format {
    /// The extension of the snapshot files, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Pprof => "pb",
            Format::Text => "heap",
        }
    }
}

/// Why a profiler did not start or a snapshot was not written.
#[derive(Debug)]
#[non_exhaustive]
pub enum ProfileError {
    /// Another profiler is attached: a [`Profiler`] that has not been dropped, or the one
    /// `MIMALLOC_PROFILE` started when the process began.
    AlreadyRunning,
    /// This target's mimalloc records no call stacks (no `backtrace()` in its C library: musl,
    /// Android), so a profile would attribute nothing.
    NoStackCapture,
    /// The sample rate was 0.
    ZeroSampleRate,
    /// The base name is not UTF-8, contains a NUL byte, or is longer than mimalloc's
    /// file-name buffer allows.
    BadBaseName(PathBuf),
    /// mimalloc could not set up the profiler (out of memory).
    OutOfMemory,
    /// The directory of the snapshots cannot be used, or a snapshot file cannot be read back
    /// or replaced, or is not a well-formed profile (`io::ErrorKind::InvalidData`).
    Io(PathBuf, io::Error),
    /// mimalloc did not write the snapshot: the file could not be created (a missing or
    /// read-only directory, a symlink in its place) or the profiler's own heap ran out.
    NotWritten(PathBuf),
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProfileError::AlreadyRunning => f.write_str(
                "a heap profiler is already attached (another Profiler, or MIMALLOC_PROFILE)",
            ),
            ProfileError::NoStackCapture => f.write_str(
                "mimalloc records no call stacks on this target (no backtrace() in its C library)",
            ),
            ProfileError::ZeroSampleRate => f.write_str("the sample rate must be at least 1 byte"),
            ProfileError::BadBaseName(p) => write!(
                f,
                "{}: a profile base name must be UTF-8 without NUL bytes, at most {MAX_BASE_LEN} bytes",
                p.display()
            ),
            ProfileError::OutOfMemory => f.write_str("mimalloc could not allocate the profiler"),
            ProfileError::Io(p, e) => write!(f, "{}: {e}", p.display()),
            ProfileError::NotWritten(p) => write!(
                f,
                "{}: mimalloc wrote no snapshot (a missing or read-only directory, or out of memory)",
                p.display()
            ),
        }
    }
}

impl std::error::Error for ProfileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProfileError::Io(_, e) => Some(e),
            _ => None,
        }
    }
}

/// How to start a [`Profiler`]: [`Profiler::options`], then [`ProfilerOptions::start`].
#[derive(Clone, Copy, Debug)]
pub struct ProfilerOptions {
    sample_rate: usize,
    format: Format,
    symbolize: bool,
}

impl ProfilerOptions {
    /// The mean number of allocated bytes between two samples (default
    /// [`DEFAULT_SAMPLE_RATE`]). The gaps are drawn at random (exponentially distributed), so
    /// allocation patterns cannot line up with them. An allocation of `n` bytes is sampled
    /// with probability about `1 - exp(-n / rate)`.
    pub fn sample_rate(mut self, bytes: usize) -> ProfilerOptions {
        self.sample_rate = bytes;
        self
    }

    /// The file format of the snapshots (default [`Format::Pprof`]).
    pub fn format(mut self, format: Format) -> ProfilerOptions {
        self.format = format;
        self
    }

    /// Whether each snapshot carries the names, files and lines of its frames, resolved by
    /// this process (default `false`), so that readers name them without the binaries: a
    /// profile taken in a container or on a customer's machine is read elsewhere. In protobuf
    /// snapshots these are pprof's `Function` and `Line` tables (inlined functions as pprof
    /// orders them), in text snapshots gperftools' symbol section. Names come from DWARF where
    /// the program has it (with files, lines and inlined frames: `debug = "line-tables-only"`
    /// is enough), else from the symbol table. Sampling pauses while a snapshot is resolved,
    /// and the parsed debug information is let go afterwards; what it costs is in
    /// BENCHMARKS.md#heap-profiling.
    ///
    /// ```
    /// use mimalloc::profile::{Format, Profiler};
    /// mimalloc::assign_global!();
    ///
    /// fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let dir = std::env::temp_dir().join(format!("mimalloc-doc-sym-{}", std::process::id()));
    ///     std::fs::create_dir_all(&dir)?;
    ///     let profiler = Profiler::options()
    ///         .format(Format::Text)
    ///         .sample_rate(4096)
    ///         .symbolize(true)
    ///         .start(dir.join("heap"))?;
    ///     let kept = vec![1u8; 4 << 20];
    ///     let text = String::from_utf8(profiler.snapshot_bytes()?)?;
    ///     // gperftools' symbol section: an address and its functions per line, then the profile.
    ///     let (symbols, profile) = text.split_once("\n---\n").ok_or("no symbol section")?;
    ///     assert!(symbols.starts_with("--- symbol\n0x"));
    ///     assert!(profile.starts_with("heap profile:"));
    ///     drop((profiler, kept));
    ///     std::fs::remove_dir_all(&dir)?;
    ///     Ok(())
    /// }
    /// ```
    pub fn symbolize(mut self, symbolize: bool) -> ProfilerOptions {
        self.symbolize = symbolize;
        self
    }

    /// Starts sampling every heap of the process. Snapshots are written to
    /// `<base>.0001.pb`, `<base>.0002.pb`, ... (`.heap` for [`Format::Text`]); `base` is
    /// used as given, whatever extension it has.
    pub fn start(self, base: impl AsRef<Path>) -> Result<Profiler, ProfileError> {
        Profiler::start_with(self, base.as_ref())
    }
}

/// mimalloc's heap profiler, sampling the allocations of every heap of the process until it
/// is dropped.
///
/// Each sampled allocation records its call stack and size; a [snapshot](Profiler::snapshot)
/// writes, per call stack, the sampled allocations and bytes so far and those still live.
/// The figures are the sampled ones, not estimates of the totals: `mimalloc-prof` scales
/// them (it divides each by the chance that an allocation of that average size is sampled),
/// as pprof tools do for Go and gperftools heap profiles.
///
/// # Costs
/// Measured in BENCHMARKS.md#heap-profiling:
/// - Stopped (no `Profiler`): 0.1 instruction per allocate+free pair against a build with the
///   profiler compiled out. mimalloc counts down requested bytes on its slow path in every
///   build.
/// - Running: each sample walks the stack (`backtrace()`, `CaptureStackBackTrace` on
///   Windows; on Linux about 38 000 instructions in libgcc's unwinder) and looks the stack up
///   in a lock-free table, and the sampled block carries 48 bytes of extra header. At the
///   default rate that is about four samples per MiB allocated (mimalloc 3.6.0 samples twice
///   as often as the rate says: see `docs/profiling.md`). A page that holds a sampled block
///   frees all its blocks through mimalloc's slower generic path. In the benchmarks that cost
///   1.6-13.5% of wall time on the single-threaded workloads, 33% on a churn of small blocks,
///   and 68% (with 77% more peak memory) on a workload that grows large vectors, whose
///   reallocations are nearly all sampled. A rate of 1 MiB halves the samples: policy-eval then costs
///   1.3% instead of 5.7%, the vector growth 16% instead of 68%.
/// - After it is dropped, its tables (about 130 KiB, plus the call stacks it saw) stay until
///   the process exits: a block sampled by it may be freed at any later time, and mimalloc
///   then updates those tables.
///
/// # Where it works
/// mimalloc 3 only: with the `v2` feature this module does not exist (mimalloc 2 has no
/// profiler; asking for it is a compile error, see the README's feature table). Call stacks
/// come from glibc's, Apple's and the BSDs' `backtrace()` and from `CaptureStackBackTrace`
/// on Windows; elsewhere (musl, Android) starting fails with
/// [`ProfileError::NoStackCapture`]. Frames are return addresses of the running process:
/// the snapshot lists the loaded files and where they were mapped, so they can be
/// symbolized later against the same binaries. On Linux each mapping also carries its file
/// offset and its file's GNU build id, which mimalloc's own writer leaves out: `go tool
/// pprof`, the standalone `pprof`, gperftools' `pprof` and `mimalloc-prof` then symbolize
/// position-independent executables and shared libraries (`docs/profiling.md`). With
/// [`ProfilerOptions::symbolize`] the snapshot names its frames itself, for readers that do
/// not have the binaries. `MIMALLOC_PROFILE` starts the same profiler with no code, and on Linux
/// its snapshots are completed (and protobuf ones symbolized) at exit.
///
/// # Why there are no Rust callbacks
/// mimalloc can call a custom profiler on every sampled allocation and free. Those calls run
/// inside the allocator, on whatever thread allocates, possibly while it holds its own locks:
/// a callback that allocates through the global allocator, or panics, would recurse into or
/// unwind through mimalloc's C frames (undefined behaviour with Rust 1.63's `extern "C"`).
/// Nothing in Rust's type system can promise neither happens, so this crate offers only the
/// built-in profiler.
///
/// ```
/// mimalloc::assign_global!();
///
/// fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let dir = std::env::temp_dir().join(format!("mimalloc-doc-{}", std::process::id()));
///     std::fs::create_dir_all(&dir)?;
///     let profiler = mimalloc::profile::Profiler::options()
///         .sample_rate(4096)
///         .start(dir.join("heap"))?;
///     let kept: Vec<Vec<u8>> = (0..64).map(|_| vec![1u8; 64 << 10]).collect();
///     let path = profiler.snapshot()?;
///     assert_eq!(path, dir.join("heap.0001.pb"));
///     assert!(std::fs::metadata(&path)?.len() > 0);
///     drop((profiler, kept));
///     std::fs::remove_dir_all(&dir)?;
///     Ok(())
/// }
/// ```
pub struct Profiler {
    raw: NonNull<ffi::mi_profiler_t>,
    base: PathBuf,
    format: Format,
    symbolize: bool,
    /// Snapshots written so far: mimalloc numbers its files the same way. The lock also keeps
    /// two threads' snapshots apart (mimalloc skips a snapshot asked for during another).
    snapshots: Mutex<usize>,
}

// SAFETY: mimalloc's profiler functions may be called from any thread (its tables are
// lock-free, and its snapshot is serialized by `snapshots` here and by mimalloc's own guard).
unsafe impl Send for Profiler {}
// SAFETY: see `Send`: every `&self` method either calls a thread-safe mimalloc function or
// takes the `snapshots` lock first.
unsafe impl Sync for Profiler {}

impl fmt::Debug for Profiler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Profiler")
            .field("base", &self.base)
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

impl Profiler {
    /// The options to start a profiler with: [`DEFAULT_SAMPLE_RATE`], [`Format::Pprof`].
    pub fn options() -> ProfilerOptions {
        ProfilerOptions {
            sample_rate: DEFAULT_SAMPLE_RATE,
            format: Format::Pprof,
            symbolize: false,
        }
    }

    /// Starts sampling with the default options; see [`ProfilerOptions::start`].
    pub fn start(base: impl AsRef<Path>) -> Result<Profiler, ProfileError> {
        Profiler::options().start(base)
    }

    fn start_with(options: ProfilerOptions, base: &Path) -> Result<Profiler, ProfileError> {
        if !cfg!(mimalloc_profiler) {
            return Err(ProfileError::NoStackCapture);
        }
        if options.sample_rate == 0 {
            return Err(ProfileError::ZeroSampleRate);
        }
        let name = c_base_name(base, options.format)?;
        check_directory(base)?;
        if ACTIVE.swap(true, Ordering::AcqRel) {
            return Err(ProfileError::AlreadyRunning);
        }
        match attach(&name, options.sample_rate) {
            Ok(raw) => Ok(Profiler {
                raw,
                base: base.to_owned(),
                format: options.format,
                symbolize: options.symbolize,
                snapshots: Mutex::new(0),
            }),
            Err(e) => {
                ACTIVE.store(false, Ordering::Release);
                Err(e)
            }
        }
    }

    /// Writes a snapshot of what has been sampled so far and returns its path. Sampling pauses
    /// while mimalloc writes it (allocations meanwhile are not sampled) and then goes on. The
    /// file is then completed for pprof's readers (see "Where it works" above).
    pub fn snapshot(&self) -> Result<PathBuf, ProfileError> {
        let mut count = self.snapshots.lock().unwrap_or_else(|e| e.into_inner());
        let path = snapshot_path(&self.base, self.format, *count + 1);
        // A file left from an earlier run must not pass for this snapshot.
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(ProfileError::Io(path, e)),
        }
        // SAFETY: `self.raw` is the attached, never freed profiler; the lock held here keeps
        // mimalloc's snapshot guard from skipping this call.
        unsafe { ffi::mi_profiler_snapshot(self.raw.as_ptr()) };
        *count += 1; // mimalloc numbers a snapshot even when it cannot write it
        if !path.is_file() {
            return Err(ProfileError::NotWritten(path));
        }
        // SAFETY: `self.raw` is the attached profiler; stopping and starting it again keeps
        // what completing the file allocates out of the profile.
        let was_running = unsafe { ffi::mi_profiler_stop(self.raw.as_ptr()) };
        let completed = complete_file(&path, self.format, self.symbolize);
        if was_running {
            // SAFETY: as above.
            unsafe { ffi::mi_profiler_start(self.raw.as_ptr()) };
        }
        completed?;
        Ok(path)
    }

    /// Takes a snapshot and returns its bytes (for a `/debug/pprof/heap` endpoint), leaving no
    /// file behind.
    pub fn snapshot_bytes(&self) -> Result<Vec<u8>, ProfileError> {
        let path = self.snapshot()?;
        let bytes = std::fs::read(&path).map_err(|e| ProfileError::Io(path.clone(), e))?;
        std::fs::remove_file(&path).map_err(|e| ProfileError::Io(path, e))?;
        Ok(bytes)
    }

    /// Stops sampling and detaches the profiler; the same as dropping it. Snapshot first to
    /// keep what it saw.
    pub fn stop(self) {}
}

impl Drop for Profiler {
    fn drop(&mut self) {
        // SAFETY: `self.raw` is the attached profiler. It is stopped and detached from every
        // heap, and deliberately never deleted: blocks it sampled keep pointers into its
        // tables, which mimalloc follows when they are freed, even under a later profiler.
        unsafe {
            ffi::mi_profiler_stop(self.raw.as_ptr());
            ffi::mi_profile(core::ptr::null_mut());
        }
        ACTIVE.store(false, Ordering::Release);
    }
}

/// Where mimalloc writes snapshot `sequence` (from 1): `<base>.NNNN.pb` or `.heap`.
fn snapshot_path(base: &Path, format: Format, sequence: usize) -> PathBuf {
    let mut name = base.to_owned().into_os_string();
    name.push(format!(".{sequence:04}.{}", format.extension()));
    PathBuf::from(name)
}

/// Adds to the snapshot at `path` what pprof's own readers need and mimalloc's writer leaves
/// out (`complete.rs`): file offsets and build ids of the mappings, lower-case addresses in
/// the text format; and with `symbolize`, the frames' names, files and lines (`symbolize.rs`).
fn complete_file(path: &Path, format: Format, symbolize: bool) -> Result<(), ProfileError> {
    let io_error = |e| ProfileError::Io(path.to_owned(), e);
    let written = std::fs::read(path).map_err(io_error)?;
    let images = images::Images::loaded();
    let resolve = &mut symbolize::resolve;
    let completed = match format {
        Format::Pprof => complete::protobuf(&written, &images).and_then(|completed| {
            if symbolize {
                symbolize::protobuf(&completed, resolve)
            } else {
                Ok(completed)
            }
        }),
        Format::Text => {
            let completed = complete::text(&written, &images);
            Ok(if symbolize {
                symbolize::text(&completed, resolve)
            } else {
                completed
            })
        }
    };
    if symbolize {
        symbolize::release();
    }
    let completed = completed.map_err(|e| {
        let why = format!("mimalloc's snapshot is not a well-formed profile: {e}");
        io_error(io::Error::new(io::ErrorKind::InvalidData, why))
    })?;
    std::fs::write(path, completed).map_err(io_error)
}

/// `base` with the format's extension, which mimalloc strips again (it strips any extension,
/// and picks the format from it): the files are then named after `base` exactly.
fn c_base_name(base: &Path, format: Format) -> Result<CString, ProfileError> {
    let bad = || ProfileError::BadBaseName(base.to_owned());
    let text = base.to_str().ok_or_else(bad)?;
    if text.len() > MAX_BASE_LEN || text.is_empty() {
        return Err(bad());
    }
    CString::new(format!("{text}.{}", format.extension())).map_err(|_| bad())
}

/// The snapshots' directory must exist: mimalloc would only fail later, at the first snapshot.
fn check_directory(base: &Path) -> Result<(), ProfileError> {
    let dir = match base.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(ProfileError::Io(
            dir.to_owned(),
            io::Error::new(io::ErrorKind::Other, "not a directory"),
        )),
        Err(e) => Err(ProfileError::Io(dir.to_owned(), e)),
    }
}

/// Creates mimalloc's pprof profiler, attaches it to every heap, and starts it.
fn attach(name: &CString, sample_rate: usize) -> Result<NonNull<ffi::mi_profiler_t>, ProfileError> {
    // SAFETY: `name` is a NUL-terminated string that mimalloc copies; no automatic snapshots
    // (the three intervals are 0), so files appear only when `snapshot` asks.
    let raw = unsafe { ffi::mi_pprof_profiler_new(sample_rate, name.as_ptr(), 0, 0, 0) };
    let raw = NonNull::new(raw).ok_or(ProfileError::OutOfMemory)?;
    // SAFETY: `raw` is a live profiler, not attached yet.
    if !unsafe { ffi::mi_profile(raw.as_ptr()) } {
        // Someone else's profiler is attached (MIMALLOC_PROFILE): ours was never attached,
        // so nothing points into it and it can be deleted.
        // SAFETY: `raw` came from `mi_pprof_profiler_new` and is not attached.
        unsafe { ffi::mi_pprof_profiler_delete(raw.as_ptr()) };
        return Err(ProfileError::AlreadyRunning);
    }
    // SAFETY: `raw` is attached; starting it makes every heap sample from now on.
    unsafe { ffi::mi_profiler_start(raw.as_ptr()) };
    Ok(raw)
}
