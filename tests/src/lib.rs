//! Helpers shared by the integration tests in `tests/tests/`.
//!
//! The tests use the workspace's crates the way a product does. They run natively and, through
//! `scripts/cross-test.sh`, under Wine, in emulated ARM machines (qemu-system) and as 32-bit
//! binaries, so everything here must also build with the MSRV (Rust 1.63).

#[cfg(unix)]
pub mod fork;
pub mod kernel;
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

/// The Rust examples of `docs/memory-policy.md` (`mimalloc::policy`), run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/memory-policy.md")]
pub struct MemoryPolicyExamples;

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

/// Panics unless the block at `p` is aligned to `align` and mimalloc counts at least `size`
/// usable bytes in it: what every block must be, whichever path of the crate served it
/// (`tests/alignment.rs`, `tests/guarded_alignment.rs`); `context` names the block and its
/// layout in the message.
///
/// # Safety
///
/// `p` must point into a live block allocated by mimalloc (as for
/// `mimalloc::heap::usable_size`).
#[track_caller]
pub unsafe fn assert_aligned_and_usable(p: *const u8, size: usize, align: usize, context: &str) {
    assert_eq!(p as usize % align, 0, "{context}: {p:p} misaligned");
    // SAFETY: the caller guarantees a live block of mimalloc's.
    let usable = unsafe { mimalloc::heap::usable_size(p) };
    assert!(
        usable >= size,
        "{context}: usable size {usable} below {size}"
    );
}

/// The environment of a `guarded` build's child in which every block is guarded, and placed
/// exactly before its guard page (not rounded down to mimalloc's 16-byte alignment, which
/// would leave the first bytes past it writable): for the tests that must meet a guard page at
/// every block (`tests/memory_tools.rs`, `tests/guarded_alignment.rs`).
pub const EVERY_BLOCK_GUARDED: [(&str, &str); 3] = [
    ("MIMALLOC_GUARDED_SAMPLE_RATE", "1"),
    ("MIMALLOC_GUARDED_PRECISE", "1"),
    // 3.6 renamed the option (`unsafe_guarded_precise`): each version reads its own.
    ("MIMALLOC_UNSAFE_GUARDED_PRECISE", "1"),
];

/// The memory the OS really holds for this process (its resident set), where it can be told:
/// `/proc/self/statm` on Linux, the working set on Windows and the resident size on macOS (which
/// mimalloc reads from the OS there). `None` under an emulator that stands in for the kernel
/// (qemu-user's figure would be qemu's; Wine's working set counts Wine's own libraries too, so
/// the tests that read it under Wine say so and read the host's count beside it:
/// [`wine_host_resident_bytes`]; a `qemu-system` guest's kernel counts for real) and elsewhere. mimalloc's own `current_rss` on Linux is its committed memory, which
/// purged memory still counts in: see `mimalloc::stats::Stats::committed`.
pub fn resident_bytes() -> Option<usize> {
    if os_emulator().is_some() {
        return None;
    }
    if cfg!(any(windows, target_os = "macos")) {
        return Some(mimalloc::process::info().current_rss);
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

/// Under Wine, the resident set the host's kernel counts for this child process, which runs
/// `test` (see [`child_command`]): a Windows program under Wine is a Linux process of its own
/// whose command line holds the program's arguments, and Wine shows the host's `/` as drive
/// `Z:`. Of the processes with `test` among their arguments (a parent run with it as its filter
/// is one) the child is the one that started last. `None` elsewhere. (Neither `/proc/self`,
/// which Wine opens in its server process, nor another process's `environ`, which Wine refuses,
/// would do.)
pub fn wine_host_resident_bytes(test: &str) -> Option<usize> {
    if emulator().as_deref() != Some("wine") {
        return None;
    }
    let proc = |pid: &str, file: &str| std::fs::read(format!(r"Z:\proc\{pid}\{file}")).ok();
    let runs_test = |cmdline: Vec<u8>| cmdline.split(|b| *b == 0).any(|arg| arg == test.as_bytes());
    let (_, pid) = std::fs::read_dir(r"Z:\proc")
        .ok()?
        .filter_map(|entry| {
            let pid = entry.ok()?.file_name().into_string().ok()?;
            if !runs_test(proc(&pid, "cmdline")?) {
                return None;
            }
            // The start time, field 22 of `stat`: the 20th after the command's closing bracket.
            let stat = String::from_utf8(proc(&pid, "stat")?).ok()?;
            let started: u64 = stat[stat.rfind(')')? + 2..]
                .split(' ')
                .nth(19)?
                .parse()
                .ok()?;
            Some((started, pid))
        })
        .max()?;
    let statm = String::from_utf8(proc(&pid, "statm")?).ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Whether [`resident_bytes`] answers here, for the tests that check that memory went back to
/// the OS; says why `test` is skipped where it does not.
pub fn reports_resident_set(test: &str) -> bool {
    let reported = resident_bytes().is_some();
    if !reported {
        skip(test, "this system does not report the resident set");
    }
    reported
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

/// Prints why a check does not run here; the caller then returns. Written straight to stderr,
/// past the test harness's output capture, so that it is always visible in the log (the
/// cross-test script collects these lines). Never used to hide a failure, and only for what is
/// told at run time (an emulator, a tool missing from the machine, the environment): a test
/// that cannot run in a build, as a `cfg!` of a feature or target says, is
/// `#[cfg_attr(CONDITION, ignore = "why")]` instead, which libtest counts as ignored.
pub fn skip(test: &str, why: &str) {
    use std::io::Write;
    // One write: `writeln!` on the unbuffered stderr makes a system call per formatted piece,
    // and the log is one file for stdout and stderr, where the harness's lines could land
    // between them and the line no longer start with `SKIPPED `.
    let line = format!("SKIPPED {test}: {why}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// The harness arguments of a child run: only `test`, by exact name, ignored or not (so that
/// the child runs whatever test its parent is running, `cargo test -- --ignored` included),
/// output not captured, on one thread. For tools that start the child themselves (Valgrind in
/// `tests/memory_tools.rs`), which then check it with [`assert_child_ran_the_test`].
pub fn child_harness_args(test: &str) -> [&str; 5] {
    [
        test,
        "--exact",
        "--include-ignored",
        "--nocapture",
        "--test-threads=1",
    ]
}

/// The command that runs this very test binary again, running only `test`, with
/// `MIMALLOC_TESTS_CHILD=1` and the given environment; for a caller that starts it in a way of
/// its own (in a cgroup: `tests/memory_limit.rs`) and checks it with
/// [`assert_child_ran_the_test`].
pub fn child_command(test: &str, env: &[(&str, &str)]) -> Command {
    let exe = std::env::current_exe().expect("the test binary knows its path");
    let mut cmd = Command::new(exe);
    cmd.args(child_harness_args(test))
        .env("MIMALLOC_TESTS_CHILD", "1")
        .env("RUST_BACKTRACE", "0");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Panics unless the child's output shows that libtest ran `test`, and only it: a child that
/// ran no test (the name passed is not the test's name any more, or the test is ignored in this
/// build) would otherwise look like one that did what was asked of it, and so would one that
/// ran several.
///
/// libtest prints `running 1 test` on stdout before it starts the test (Rust 1.63 as today), so
/// the check also holds for a child that crashes or aborts on purpose, which never prints the
/// `test result:` line; where that line is there, it must count the one test as run.
#[track_caller]
pub fn assert_child_ran_the_test(test: &str, stdout: &str, stderr: &str) {
    let context = || format!("\n--- the child's stdout\n{stdout}\n--- its stderr\n{stderr}");
    let count = stdout.lines().find_map(|line| {
        let rest = line.trim_end().strip_prefix("running ")?;
        let (n, noun) = rest.split_once(' ')?;
        if noun == "test" || noun == "tests" {
            n.parse::<usize>().ok()
        } else {
            None
        }
    });
    match count {
        Some(1) => {}
        Some(0) => panic!(
            "the child ran 0 tests: is the test still named `{test}`? (the child runs the test \
             binary with `{test} --exact`){}",
            context()
        ),
        Some(n) => panic!(
            "the child ran {n} tests, where it should have run `{test}` alone{}",
            context()
        ),
        None => panic!(
            "the child never reached the test harness (no `running N tests` line) when asked to \
             run `{test}`{}",
            context()
        ),
    }
    let ignored_line = format!("test {test} ... ignored");
    let result = stdout
        .lines()
        .find(|line| line.starts_with("test result: "));
    let ignored_by_result = result.map_or(false, |line| line.contains(" 1 ignored"));
    if stdout.lines().any(|line| line.starts_with(&ignored_line)) || ignored_by_result {
        panic!(
            "the child did not run `{test}`: libtest ignored it, so its child part never ran{}",
            context()
        );
    }
    if let Some(line) = result {
        assert!(
            line.contains(" 1 passed;") || line.contains(" 1 failed;"),
            "the child's harness counted no run of `{test}`: {line}{}",
            context()
        );
    }
}

/// Runs this very test binary again as a child process, running only `test` (exact name) with
/// `MIMALLOC_TESTS_CHILD=1` and the given environment, and returns what it did. The child part
/// of a test checks `is_child()`; this is how tests of aborts and crashes survive them. Panics
/// if the child did not run exactly that one test ([`assert_child_ran_the_test`]).
#[track_caller]
pub fn run_child(test: &str, env: &[(&str, &str)]) -> Output {
    let out = child_command(test, env)
        .output()
        .expect("the test binary can be run again");
    assert_child_ran_the_test(
        test,
        &String::from_utf8_lossy(&out.stdout),
        &String::from_utf8_lossy(&out.stderr),
    );
    out
}

/// As [`run_child`], for a child that must succeed: panics with its status and everything it
/// printed unless it exited with status 0, and returns its output for the checks that read it.
#[track_caller]
pub fn in_child(test: &str, env: &[(&str, &str)]) -> Output {
    let out = run_child(test, env);
    assert!(
        out.status.success(),
        "the child running `{test}` failed ({})\n--- its stdout\n{}\n--- its stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The memory policy's notes and warnings in what a child wrote to `stderr`, one line each
/// without its newline: the policy speaks through mimalloc's output (`mimalloc: policy: ...`,
/// `mimalloc: warning: policy: ...`; its notes with `MIMALLOC_VERBOSE=1`), which is how its
/// tests read what it decided.
pub fn policy_lines(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|line| line.starts_with("mimalloc: ") && line.contains("policy: "))
        .map(str::to_owned)
        .collect()
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
/// outcome may be an endless loop (a free list that became a cycle). A child killed at the
/// deadline must also have started the test.
#[track_caller]
pub fn run_child_with_timeout(
    test: &str,
    env: &[(&str, &str)],
    timeout: std::time::Duration,
) -> ChildRun {
    use std::io::Read;
    use std::process::Stdio;
    let mut cmd = child_command(test, env);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("the test binary can be run again");
    // Read both pipes while waiting, so that a chatty child cannot block on a full pipe.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        out.read_to_end(&mut buf)
            .expect("reading the child's standard output");
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        err.read_to_end(&mut buf)
            .expect("reading the child's standard error");
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
    let run = ChildRun {
        status,
        stdout: text(out_reader.join().unwrap()),
        stderr: text(err_reader.join().unwrap()),
    };
    assert_child_ran_the_test(test, &run.stdout, &run.stderr);
    run
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
        in_child(test, &[]);
        return;
    }
    std::thread::spawn(body).join().unwrap();
}

/// `Tracking`'s process-wide live bytes, with this thread's unpublished change published
/// first: for the child tests that compare the figure before and after threads come and go
/// (`tests/tracking_global.rs`, `tests/tracking_thread_exit.rs`), where the difference is exact
/// while the process's other threads wait (a thread's change is flushed when it exits).
pub fn tracked_process_bytes() -> isize {
    mimalloc::tracking::flush();
    mimalloc::tracking::stats().live_bytes as isize
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

/// [`assert_child_ran_the_test`] on what libtest prints (the lines it reads are the same in
/// Rust 1.63 and today's stable; `scripts/cross-test.sh` runs the suite's children with 1.63).
#[cfg(test)]
mod child_check {
    use super::assert_child_ran_the_test;

    const NAME: &str = "child_x";

    #[test]
    fn one_test_that_passed() {
        assert_child_ran_the_test(
            NAME,
            "\nrunning 1 test\ntest child_x ... OK\nok\n\ntest result: ok. 1 passed; 0 failed; \
             0 ignored; 0 measured; 6 filtered out; finished in 0.01s\n\n",
            "",
        );
    }

    #[test]
    fn one_test_that_failed() {
        assert_child_ran_the_test(
            NAME,
            "\nrunning 1 test\ntest child_x ... FAILED\n\nfailures:\n\ntest result: FAILED. 0 \
             passed; 1 failed; 0 ignored; 0 measured; 6 filtered out; finished in 0.00s\n",
            "thread 'child_x' panicked at 'boom'",
        );
    }

    /// A child that aborts or crashes on purpose never prints the result line.
    #[test]
    fn one_test_that_crashed() {
        assert_child_ran_the_test(NAME, "\r\nrunning 1 test\r\ntest child_x ... ", "");
    }

    #[test]
    #[should_panic(expected = "the child ran 0 tests: is the test still named `child_x`?")]
    fn no_test_of_that_name() {
        assert_child_ran_the_test(
            NAME,
            "\nrunning 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 7 \
             filtered out; finished in 0.00s\n\n",
            "",
        );
    }

    #[test]
    #[should_panic(expected = "the child ran 2 tests")]
    fn more_than_one_test() {
        assert_child_ran_the_test(NAME, "\nrunning 2 tests\ntest child_x ... ok\n", "");
    }

    #[test]
    #[should_panic(expected = "libtest ignored it")]
    fn an_ignored_test() {
        assert_child_ran_the_test(
            NAME,
            "\nrunning 1 test\ntest child_x ... ignored, not an `asan` build\n\ntest result: ok. \
             0 passed; 0 failed; 1 ignored; 0 measured; 6 filtered out; finished in 0.00s\n\n",
            "",
        );
    }

    #[test]
    #[should_panic(expected = "the child never reached the test harness")]
    fn no_harness_at_all() {
        assert_child_ran_the_test(NAME, "", "error while loading shared libraries");
    }
}
