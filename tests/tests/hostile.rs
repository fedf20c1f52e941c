//! Misuse of the heap: a double free, a free of memory mimalloc never handed out, and a write
//! past the end of a block into a free neighbour. Each runs in a child process so that the
//! suite survives it, with `MIMALLOC_SHOW_ERRORS=1` so that messages are printed whatever the
//! build's default. What each build does (x86_64 Linux; `docs/reliability.md`, "Secure mode
//! and misuse"):
//!
//! | misuse | default | `secure` | `debug` |
//! |--------|---------|----------|---------|
//! | double free | not noticed: the block is handed out again and again (the free list has a cycle) | message, free ignored | message, free ignored |
//! | free of memory mimalloc never returned (v3: an address of the program's static data; v2: zeroed memory where a segment header would be) | v3: crash (SIGSEGV); v2: "corrupted meta-data" message, survives | v3: ignored silently; v2: message and ignored | v3: message, crash; v2: message and ignored |
//! | overflow into a free block | the corrupted free-list link is handed out: crash (SIGSEGV) | message, abort | message, abort |
//!
//! Elsewhere than 64-bit Linux, and under the memory tools, each case asserts what does not
//! depend on the address-space layout (or on the tool); the part that does is a test of its
//! own, ignored there with the reason.

use mimalloc::MiMalloc;
use mimalloc_tests::{is_child, run_child_with_timeout, ChildRun};
use std::alloc::{GlobalAlloc, Layout};
use std::time::Duration;

const SECURE: bool = cfg!(feature = "secure");
const DEBUG: bool = cfg!(feature = "debug");
const V2: bool = cfg!(feature = "v2");
/// mimalloc 3's free validates every pointer (`MI_FREE_IS_CHECKED`, which the build plan
/// defines for `secure` builds and publishes as `cfg(mimalloc_checked_free)`).
const CHECKED_FREE: bool = cfg!(mimalloc_checked_free);

fn child(test: &str) -> ChildRun {
    // A free list turned into a cycle can make the child loop for ever: it gets a deadline.
    let run = run_child_with_timeout(
        test,
        &[("MIMALLOC_SHOW_ERRORS", "1")],
        Duration::from_secs(60),
    );
    println!(
        "{test}: status {:?}\n--- stdout\n{}--- stderr\n{}",
        run.status, run.stdout, run.stderr
    );
    run
}

const SMALL: usize = 48;

fn small() -> Layout {
    Layout::from_size_align(SMALL, 8).unwrap()
}

#[test]
fn child_double_free_is_caught_by_secure_and_debug() {
    if is_child() {
        // SAFETY: none; the double free is the point, and this process is disposable.
        unsafe {
            let a = MiMalloc.alloc(small());
            MiMalloc.dealloc(a, small());
            MiMalloc.dealloc(a, small());
            let mut handed_out: Vec<usize> = (0..10_000)
                .map(|_| MiMalloc.alloc(small()) as usize)
                .collect();
            let count = handed_out.len();
            handed_out.sort_unstable();
            handed_out.dedup();
            println!("DUPLICATES {}", count - handed_out.len());
        }
        return;
    }
    let run = child("child_double_free_is_caught_by_secure_and_debug");
    // The harness prints the test's name on the same line, before the child's output.
    let duplicates: Option<usize> = run
        .stdout
        .split("DUPLICATES ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok());
    let message = run.stderr.contains("double free detected");
    // `asan` builds track every block (padding, poisoned free blocks), and mimalloc 3.6.0
    // detects the double free there too.
    if SECURE || DEBUG || cfg!(all(feature = "asan", not(feature = "v2"))) {
        assert!(message, "the double free went unreported");
        assert!(run.succeeded(), "the child did not survive the double free");
        assert_eq!(duplicates, Some(0), "a block was handed out twice");
    } else {
        // Without the checks nothing is noticed, and the heap is corrupt. If this ever
        // changes, docs/reliability.md and the table above need updating.
        // The second free pushes the block on its page's free list again, whose link then
        // points to the block itself: it is handed out again and again, and the child goes on.
        assert!(!message, "a default build reported the double free");
        assert!(
            run.succeeded(),
            "a default build did not survive: {:?}",
            run.status
        );
        assert!(
            duplicates.map_or(false, |d| d > 0),
            "a default build handed out no block twice after a double free: {duplicates:?}"
        );
    }
}

/// Memory mimalloc 2 takes for a segment when given a pointer into it: zeroed, so its cookie
/// cannot match, at the address any pointer in its first 16 MiB rounds down to (mimalloc 2's
/// segments are 32 MiB on 64-bit targets and 16 MiB on 32-bit ones). Another address instead
/// rounds down to whatever the address-space layout put there, mapped or not: a message or a
/// crash by chance.
fn zeroed_fake_segment() -> *mut u8 {
    let layout = Layout::from_size_align(32 << 20, 32 << 20).unwrap();
    // SAFETY: a non-zero size; the block is never freed (the child process exits).
    let region = unsafe { std::alloc::System.alloc_zeroed(layout) };
    assert!(!region.is_null());
    region
}

/// Memory mimalloc 3 never maps near: the program's static data, which the loader places next
/// to the program's code, far below the mappings the kernel hands out (where mimalloc's arenas
/// and the test threads' stacks are, close enough together that mimalloc's page map may have a
/// part for a stack). Where the outcome must not depend on the layout (64-bit Linux), the free
/// takes [`foreign_address`] instead.
static STATIC_DATA: StaticData = StaticData(std::cell::UnsafeCell::new([0; 16]));

struct StaticData(std::cell::UnsafeCell<[u64; 16]>);
// SAFETY: only the child's test thread touches it, through the misuse below.
unsafe impl Sync for StaticData {}

/// The address mimalloc 3's builds free as foreign (but AddressSanitizer's, below) on 64-bit
/// Linux: one whose 256 MiB block has nothing mapped at its start. A default build of mimalloc 3
/// finds a block's page meta data by rounding its address down to 256 MiB
/// (`MI_PAGE_META_ALIGNMENT`), without a look at the page map: for the program's static data that
/// start lies in the program's own mapping in some runs (its own bytes, read as meta data: the
/// free then passed silently or was reported as corruption in two CI runs of 2026-12-06, and in
/// none of 2,300 runs here), and below it otherwise. Here it is never mapped, so the read faults
/// in every run. The kernel maps nothing this low on its own (programs load at 0x55...,
/// mappings come down from 0x7f...), and the block's start is checked to be unmapped (`msync`
/// answers `ENOMEM`).
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn foreign_address() -> *mut u8 {
    const BLOCK: usize = 256 << 20;
    (2..16)
        .map(|block| block * BLOCK)
        .find(|&start| {
            // SAFETY: `msync` on an unmapped range changes nothing and fails with `ENOMEM`.
            let synced = unsafe { libc::msync(start as *mut libc::c_void, 4096, libc::MS_ASYNC) };
            synced == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOMEM)
        })
        .map(|start| (start + BLOCK / 2) as *mut u8)
        .expect("every 256 MiB block from 512 MiB to 4 GiB has something mapped at its start")
}

/// The address mimalloc 3's builds free as foreign (but AddressSanitizer's, below) outside
/// 64-bit Linux.
#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
fn foreign_address() -> *mut u8 {
    STATIC_DATA.0.get().cast()
}

/// Frees memory mimalloc never returned, then allocates: the child part of the two tests below.
fn free_of_a_pointer_mimalloc_never_returned() {
    let mut on_the_stack = [0u64; 16];
    let foreign: *mut u8 = if V2 {
        // SAFETY: 4096 bytes into a 32 MiB block.
        unsafe { zeroed_fake_segment().add(4096) }
    } else if cfg!(feature = "asan") {
        // A build for AddressSanitizer (`MI_TRACK_ASAN`) read an address of the static data as
        // a heap block ("buffer overflow in heap block ... of size 18446744073709551608") and
        // went on; it faults on a stack address, as every mimalloc 3 build did before the
        // `override` build's page map came to cover a test thread's stack now and then.
        on_the_stack.as_mut_ptr().cast()
    } else {
        foreign_address()
    };
    // SAFETY: none; freeing memory mimalloc never returned is the point.
    unsafe {
        MiMalloc.dealloc(foreign, small());
        let p = MiMalloc.alloc(small());
        p.write_bytes(1, SMALL);
        MiMalloc.dealloc(p, small());
    }
    // SAFETY: a read of the static data, by the only thread that touches it.
    let first = unsafe { (*STATIC_DATA.0.get())[0] };
    println!("SURVIVED {} {}", on_the_stack[0], first);
}

/// Whether the child survived its free of a foreign pointer.
fn survived(run: &ChildRun) -> bool {
    run.succeeded() && run.stdout.contains("SURVIVED")
}

#[test]
fn child_free_of_a_pointer_mimalloc_never_returned() {
    if is_child() {
        return free_of_a_pointer_mimalloc_never_returned();
    }
    let run = child("child_free_of_a_pointer_mimalloc_never_returned");
    let reported = run.stderr.contains("invalid pointer")
        || run.stderr.contains("does not point to a valid heap space")
        || run.stderr.contains("mi_is_in_heap_region(p)");
    let survived = survived(&run);
    assert!(!run.hung(), "the child hung");
    if V2 && (SECURE || DEBUG) {
        // Checked, mimalloc 2 finds no valid cookie in the segment header and ignores the free.
        assert!(
            run.stderr.contains("does not point to a valid heap space"),
            "{}",
            run.stderr
        );
        assert!(survived, "the checks did not keep the child alive");
    } else if V2 {
        // Unchecked, mimalloc 2 takes the zeroed memory for a segment header without a look
        // at its cookie, and trips only over the page's block size of 0 when it computes the
        // block's start (`mi_page_ptr_unalign`): a corrupted meta-data message (EFAULT, which
        // aborts only in `secure` and `debug` builds), and the free goes on into the fake page.
        // The pointer is not recognised as foreign, which is what `secure` and `debug` are for.
        assert!(
            !run.stderr.contains("does not point to a valid heap space"),
            "mimalloc 2 checked a pointer without `secure` or `debug`: {}",
            run.stderr
        );
        assert!(
            run.stderr
                .contains("reading from invalid page, possibly corrupted meta-data"),
            "{}",
            run.stderr
        );
        assert!(survived, "{run:?}");
    } else {
        assert_eq!(reported, DEBUG, "error message expected: {DEBUG}");
        if DEBUG && !CHECKED_FREE {
            // mimalloc 3.6.0 debug builds report the invalid pointer, then read the page meta
            // data the unchecked lookup found anyway.
            assert!(!survived, "a debug build survived a foreign free");
        } else if CHECKED_FREE {
            assert!(survived, "the checks did not keep the child alive");
        }
        // A default build: the next test.
    }
}

/// A default build of mimalloc 3 reads a foreign address's page meta data where the address
/// rounds down to 256 MiB, unchecked: on 64-bit Linux the test picks an address where nothing is
/// mapped there ([`foreign_address`]), and the read faults. Elsewhere the unchecked lookup
/// reads what lies at the program's static data rounded down, which depends on where the OS put
/// the program.
#[cfg(not(any(feature = "v2", feature = "secure", feature = "debug")))]
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_pointer_width = "64")),
    ignore = "outside 64-bit Linux, what mimalloc 3 does with a foreign address depends on the \
              address-space layout"
)]
fn child_free_of_a_pointer_mimalloc_never_returned_crashes_a_default_build() {
    if is_child() {
        return free_of_a_pointer_mimalloc_never_returned();
    }
    let run = child("child_free_of_a_pointer_mimalloc_never_returned_crashes_a_default_build");
    assert!(!run.hung(), "the child hung");
    assert!(
        !survived(&run),
        "a default build survived a foreign free on Linux: {run:?}"
    );
}

/// Overflows a block into its free neighbour's free-list link, then allocates: the child part
/// of the two tests below.
fn overflow_into_a_free_block() {
    let layout = Layout::from_size_align(64, 8).unwrap();
    // SAFETY: none past the overflow, which is the point.
    unsafe {
        let mut blocks: Vec<*mut u8> = (0..64).map(|_| MiMalloc.alloc(layout)).collect();
        blocks.sort_unstable();
        let usable = mimalloc::heap::usable_size(blocks[0]);
        // Two neighbours in one page: `b` starts less than two blocks after `a`.
        let (a, b) = blocks
            .windows(2)
            .map(|w| (w[0], w[1]))
            .find(|(a, b)| (*b as usize - *a as usize) < 2 * usize::max(usable, 64))
            .expect("two neighbouring blocks");
        // `b` goes on its page's free list, whose link is in its first word; the write from
        // `a` runs over the padding and that link.
        MiMalloc.dealloc(b, layout);
        a.write_bytes(0x41, b as usize - a as usize + 16);
        for _ in 0..200 {
            MiMalloc.alloc(layout).write_bytes(1, 64);
        }
    }
    println!("SURVIVED");
}

#[test]
fn child_overflow_into_a_free_block_is_caught_by_secure_and_debug() {
    if is_child() {
        return overflow_into_a_free_block();
    }
    let run = child("child_overflow_into_a_free_block_is_caught_by_secure_and_debug");
    assert!(!run.hung(), "the child hung");
    let message = run.stderr.contains("corrupted free list entry");
    assert_eq!(message, SECURE || DEBUG, "corruption reported");
    if SECURE || DEBUG {
        // The link is checked before it is followed: mimalloc reports it as EFAULT, which
        // aborts in `secure` and `debug` builds (`mi_error_default`).
        assert_eq!(ending(&run), End::Abort, "{run:?}");
    } else {
        // Unchecked, the corrupted link is handed out as a block: the child must not finish
        // cleanly (how it ends: the next test).
        assert!(
            !run.succeeded(),
            "an overflow into a free block's link went unnoticed and did no harm?"
        );
    }
}

/// Without the checks, 0x4141414141414141 is handed out as a block: not a canonical address, so
/// the first write to it faults. On 32-bit targets 0x41414141 is an ordinary address, which may
/// be mapped; the memory tools handle the fault themselves and exit with their own status.
#[cfg(not(any(feature = "secure", feature = "debug")))]
#[test]
#[cfg_attr(
    any(feature = "asan", feature = "tsan", feature = "valgrind"),
    ignore = "a memory tool handles the fault itself and exits with its own status"
)]
#[cfg_attr(
    all(
        not(any(feature = "asan", feature = "tsan", feature = "valgrind")),
        target_pointer_width = "32"
    ),
    ignore = "on 32-bit targets the corrupted link 0x41414141 may be a mapped address"
)]
fn child_overflow_into_a_free_block_faults_in_a_default_build() {
    if is_child() {
        return overflow_into_a_free_block();
    }
    let run = child("child_overflow_into_a_free_block_faults_in_a_default_build");
    assert!(!run.hung(), "the child hung");
    assert_eq!(ending(&run), End::Fault, "{run:?}");
}

/// How a child process ended, as far as the tests tell endings apart.
#[derive(Debug, PartialEq, Eq)]
enum End {
    /// Exited by itself with this code.
    Exited(i32),
    /// Killed for a bad memory access: SIGSEGV, or on Windows an access violation (under Wine,
    /// its debugger's exit after naming the page fault).
    Fault,
    /// `abort()`: SIGABRT, or on Windows (msvcrt's `abort`) exit code 3.
    Abort,
    /// Killed by another signal.
    Signal(i32),
    /// Still running at the deadline.
    Hung,
}

fn ending(run: &ChildRun) -> End {
    let status = match run.status {
        Some(status) => status,
        None => return End::Hung,
    };
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        match status.signal() {
            Some(libc::SIGSEGV) => return End::Fault,
            Some(libc::SIGABRT) => return End::Abort,
            Some(signal) => return End::Signal(signal),
            None => {}
        }
    }
    match status.code() {
        #[cfg(windows)]
        Some(code) if code as u32 == 0xC000_0005 => End::Fault,
        // Wine hands an unhandled exception to its debugger, which names the fault and exits
        // with STATUS_DEBUGGER_INACTIVE instead of the exception's code.
        #[cfg(windows)]
        Some(code)
            if code as u32 == 0xC000_0354
                && (run.stdout.contains("page fault") || run.stderr.contains("page fault")) =>
        {
            End::Fault
        }
        #[cfg(windows)]
        Some(3) => End::Abort,
        Some(code) => End::Exited(code),
        None => End::Signal(-1),
    }
}
