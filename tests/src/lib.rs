//! Helpers shared by the integration tests in `tests/tests/`.
//!
//! The tests use the workspace's crates the way a product does. They run natively and, through
//! `scripts/cross-test.sh`, under Wine, in emulated ARM machines (qemu-system) and as 32-bit
//! binaries, so everything here must also build with the MSRV (Rust 1.63).

pub mod model;
pub mod rng;
pub mod stress;

use std::process::{Command, Output};

/// The README's Rust examples, run as doc tests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeExamples;

/// The Rust examples of `docs/beyond-malloc.md` (heaps, arenas), run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/beyond-malloc.md")]
pub struct BeyondMallocExamples;

/// The Rust examples of `docs/budgets.md` (`Tracking`, budgets; the `tracking` feature, which
/// this crate always enables), run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/budgets.md")]
pub struct BudgetsExamples;

/// The Rust examples of `docs/profiling.md`: its one example is `ignore`d (the doc tests also
/// run with `v2`, which has no profiler); included so that any new example there runs.
#[cfg(doctest)]
#[doc = include_str!("../../docs/profiling.md")]
pub struct ProfilingExamples;

/// The period of [`Pattern`]: a prime, so that a block copied to the wrong offset, or two
/// blocks swapped, never still matches.
const PERIOD: usize = 251;
/// Whole periods, copied and compared in chunks (memcpy/memcmp: fast even in the unoptimized
/// test profile).
const CHUNK: usize = PERIOD * 64;

/// `0, 1, ..., 250, 0, 1, ...`: every pattern is a window into this sequence.
static SEQUENCE: [u8; CHUNK + PERIOD] = sequence();

const fn sequence() -> [u8; CHUNK + PERIOD] {
    let mut s = [0u8; CHUNK + PERIOD];
    let mut i = 0;
    while i < s.len() {
        s[i] = (i % PERIOD) as u8;
        i += 1;
    }
    s
}

/// A position-dependent byte pattern: byte `i` of a block is `(i + seed) % 251`.
#[derive(Clone, Copy, Debug)]
pub struct Pattern {
    seed: u8,
}

impl Pattern {
    /// A pattern distinguished by `seed` (use a different seed per block).
    pub fn new(seed: u8) -> Self {
        Pattern { seed }
    }

    fn chunk(self) -> &'static [u8] {
        &SEQUENCE[self.seed as usize % PERIOD..][..CHUNK]
    }

    /// Writes the pattern over `len` bytes at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for writes of `len` bytes.
    pub unsafe fn fill(self, ptr: *mut u8, len: usize) {
        let chunk = self.chunk();
        let mut at = 0;
        while at < len {
            let n = CHUNK.min(len - at);
            // SAFETY: `at + n <= len`, and the caller guarantees `len` writable bytes.
            unsafe { std::ptr::copy_nonoverlapping(chunk.as_ptr(), ptr.add(at), n) };
            at += n;
        }
    }

    /// The offset of the first of `len` bytes at `ptr` that does not hold the pattern.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for reads of `len` initialized bytes.
    pub unsafe fn first_mismatch(self, ptr: *const u8, len: usize) -> Option<usize> {
        let chunk = self.chunk();
        let mut at = 0;
        while at < len {
            let n = CHUNK.min(len - at);
            // SAFETY: `at + n <= len`, and the caller guarantees `len` readable bytes.
            let got = unsafe { std::slice::from_raw_parts(ptr.add(at), n) };
            if got != &chunk[..n] {
                let off = got.iter().zip(chunk).position(|(a, b)| a != b).unwrap();
                return Some(at + off);
            }
            at += n;
        }
        None
    }

    /// Panics with the offset if the `len` bytes at `ptr` do not hold the pattern.
    ///
    /// # Safety
    ///
    /// As for [`Pattern::first_mismatch`].
    #[track_caller]
    pub unsafe fn assert_at(self, ptr: *const u8, len: usize, what: &str) {
        // SAFETY: forwarded caller contract.
        if let Some(off) = unsafe { self.first_mismatch(ptr, len) } {
            panic!(
                "{what}: byte {off} of {len} lost its pattern (seed {})",
                self.seed
            )
        }
    }
}

/// The offset of the first non-zero byte among `len` bytes at `ptr`.
///
/// # Safety
///
/// `ptr` must be valid for reads of `len` initialized bytes.
pub unsafe fn first_nonzero(ptr: *const u8, len: usize) -> Option<usize> {
    let zeros = [0u8; 4096];
    let mut at = 0;
    while at < len {
        let n = zeros.len().min(len - at);
        // SAFETY: `at + n <= len`, and the caller guarantees `len` readable bytes.
        let got = unsafe { std::slice::from_raw_parts(ptr.add(at), n) };
        if got != &zeros[..n] {
            return Some(at + got.iter().position(|&b| b != 0).unwrap());
        }
        at += n;
    }
    None
}

/// The memory the OS really holds for this process (its resident set), where it can be told:
/// `/proc/self/statm` on Linux, the working set on Windows and the resident size on macOS (which
/// mimalloc reads from the OS there). `None` under an emulator that stands in for the kernel
/// (qemu-user's figure would be qemu's, Wine's is made up; a `qemu-system` guest's kernel counts
/// for real) and elsewhere. mimalloc's own `current_rss` on Linux is its committed memory, which
/// purged memory still counts in: see `mimalloc::Stats::committed`.
pub fn resident_bytes() -> Option<usize> {
    if os_emulator().is_some() {
        return None;
    }
    if cfg!(any(windows, target_os = "macos")) {
        return Some(mimalloc::process_info().current_rss);
    }
    resident_bytes_from_proc()
}

#[cfg(target_os = "linux")]
fn resident_bytes_from_proc() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * page_size as usize)
}

#[cfg(not(target_os = "linux"))]
fn resident_bytes_from_proc() -> Option<usize> {
    None
}

/// The emulator the tests run under, if any: `scripts/cross-test.sh` sets
/// `MIMALLOC_TESTS_EMULATOR` to `wine`, `qemu` (qemu-user), `qemu-system` (a whole emulated
/// machine running its own Linux kernel, `scripts/system-test.sh`) or `native` (a 32-bit
/// binary on this kernel).
pub fn emulator() -> Option<String> {
    std::env::var("MIMALLOC_TESTS_EMULATOR")
        .ok()
        .filter(|e| !e.is_empty() && e != "native")
}

/// The emulator, if it stands in for the OS kernel (Wine, qemu-user), so that what the OS
/// reports or does with address space is the emulator's own doing. Under `qemu-system` a real
/// kernel runs in the guest and answers as a native one does, only slower.
pub fn os_emulator() -> Option<String> {
    emulator().filter(|e| e != "qemu-system")
}

/// The memory tool this build runs under (`asan`, `tsan` or `valgrind` feature), if any.
pub fn memory_tool() -> Option<&'static str> {
    if cfg!(feature = "asan") {
        Some("AddressSanitizer")
    } else if cfg!(feature = "tsan") {
        Some("ThreadSanitizer")
    } else if cfg!(feature = "valgrind") {
        Some("Valgrind")
    } else {
        None
    }
}

/// Why requests for absurd amounts of address space (alignments of 2^31 and up) must not be
/// made here, if they must not: Wine and qemu-user reserve or emulate such ranges for real, and
/// so do the sanitizer runtimes and Valgrind, which then run for minutes or get killed.
pub fn no_huge_reservations() -> Option<String> {
    if let Some(tool) = memory_tool() {
        return Some(format!(
            "{tool} does not model huge address-space reservations"
        ));
    }
    os_emulator().map(|e| format!("{e} does not model huge address-space reservations"))
}

/// Prints why a check does not run here; the caller then returns. Written straight to stderr,
/// past the test harness's output capture, so that it is always visible in the log (the
/// cross-test script collects these lines). Never used to hide a failure.
pub fn skip(test: &str, why: &str) {
    use std::io::Write;
    // One write: `writeln!` on the unbuffered stderr makes a system call per formatted piece,
    // and the log is one file for stdout and stderr, where the harness's lines could land
    // between them and the line no longer start with `SKIPPED `.
    let line = format!("SKIPPED {test}: {why}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Runs this very test binary again as a child process, running only `test` (exact name) with
/// `MIMALLOC_TESTS_CHILD=1` and the given environment, and returns what it did. The child part
/// of a test checks `is_child()`; this is how tests of aborts and crashes survive them.
pub fn run_child(test: &str, env: &[(&str, &str)]) -> Output {
    let exe = std::env::current_exe().expect("the test binary knows its path");
    let mut cmd = Command::new(exe);
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env("MIMALLOC_TESTS_CHILD", "1")
        .env("RUST_BACKTRACE", "0");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the test binary can be run again")
}

/// What a child process did: its exit status (`None`: it was still running at the deadline and
/// was killed) and everything it printed.
#[derive(Debug)]
pub struct ChildRun {
    /// How it ended, unless it had to be killed.
    pub status: Option<std::process::ExitStatus>,
    /// Its standard output, lossily decoded.
    pub stdout: String,
    /// Its standard error, lossily decoded.
    pub stderr: String,
}

impl ChildRun {
    /// Whether it exited by itself with status 0.
    pub fn succeeded(&self) -> bool {
        self.status.map_or(false, |s| s.success())
    }
    /// Whether it was killed at the deadline.
    pub fn hung(&self) -> bool {
        self.status.is_none()
    }
}

/// As [`run_child`], but a child still running after `timeout` is killed: for misuse whose
/// outcome may be an endless loop (a free list that became a cycle).
pub fn run_child_with_timeout(
    test: &str,
    env: &[(&str, &str)],
    timeout: std::time::Duration,
) -> ChildRun {
    use std::io::Read;
    use std::process::Stdio;
    let exe = std::env::current_exe().expect("the test binary knows its path");
    let mut cmd = Command::new(exe);
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env("MIMALLOC_TESTS_CHILD", "1")
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("the test binary can be run again");
    // Read both pipes while waiting, so that a chatty child cannot block on a full pipe.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = out.read_to_end(&mut buf);
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = err.read_to_end(&mut buf);
        buf
    });
    let deadline = std::time::Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for the child") {
            break Some(status);
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let text = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).into_owned();
    ChildRun {
        status,
        stdout: text(out_reader.join().unwrap()),
        stderr: text(err_reader.join().unwrap()),
    }
}

/// Whether this process is the child started by [`run_child`].
pub fn is_child() -> bool {
    std::env::var_os("MIMALLOC_TESTS_CHILD").is_some()
}

/// Runs `body` on a thread of its own, in a child process of this test binary that runs only
/// `test`: for tests of process-wide figures, which the binary's other tests would move. On a
/// spawned thread, as under every libtest: libtest 1.63 runs a lone test on the main thread,
/// which mimalloc 2 leaves out of its thread count.
pub fn in_child_on_a_thread(test: &str, body: fn()) {
    if !is_child() {
        let out = run_child(test, &[]);
        assert!(out.status.success(), "{out:?}");
        return;
    }
    std::thread::spawn(body).join().unwrap();
}

extern "C" {
    static mimalloc_tests_abi: [usize; 0];
    static mimalloc_tests_abi_len: usize;
}

/// The sizes, alignments and offsets of mimalloc's types as the target's C compiler sees them
/// (`abi/probe.c`, compiled by `build.rs` against mimalloc-sys's headers), for `tests/abi.rs`.
pub fn c_abi_probe() -> &'static [usize] {
    // SAFETY: the probe defines `mimalloc_tests_abi` as an array of `mimalloc_tests_abi_len`
    // `size_t`s (the same type as `usize`), immutable for the life of the program.
    unsafe { std::slice::from_raw_parts(mimalloc_tests_abi.as_ptr(), mimalloc_tests_abi_len) }
}

/// `value`, which the compiler must now assume was read and written through: allocations a
/// test makes only to see them counted are not removed as unused (the compiler may remove an
/// allocation whose block is never used, and does in release builds). `std::hint::black_box`
/// is newer than the suite's Rust 1.63.
pub fn keep<T>(value: T) -> T {
    // SAFETY: the assembly is empty: it reads and writes nothing, touches no stack and no
    // flags, whatever the compiler must assume it does with the pointer it is given.
    unsafe {
        std::arch::asm!("/* {0} */", in(reg) &value as *const T, options(nostack, preserves_flags));
    }
    value
}
