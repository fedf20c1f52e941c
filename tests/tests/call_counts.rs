//! The fast paths are the ones taken. Some decisions of the crate change only how fast a request
//! is served, never what it returns: a small request sent to `mi_malloc` instead of
//! `mi_malloc_small`, a small block freed by `mi_free` instead of `mi_free_small_nonnull`, a
//! budget scope's allocations settling with the shared books instead of taking from the thread's
//! window, a `budget::poll` that checks every time. No figure a program reads tells them apart;
//! the calls they make do. Each test runs a workload in a child process under Callgrind
//! (Valgrind's call-graph tool), counting the calls made inside the workload's function only,
//! and asserts which functions were called how often.
//!
//! mimalloc's entries are C functions the crate calls through FFI, so their calls are counted in
//! any build; the crate's own functions (`settle`, `check`) are inlined away by an optimized
//! build, so the tests that count those run in unoptimized builds (what `cargo test` builds)
//! only. Each test expects a count above zero of one function it counts, so that a name
//! Callgrind does not show (renamed, inlined) fails the test instead of passing it.

use mimalloc::budget::{self, Usage};
use mimalloc::{tracking, MiMalloc, Tracking};
use mimalloc_tests::{
    assert_child_ran_the_test, child_harness_args, emulator, is_child, keep, memory_tool, skip,
};
use std::alloc::{GlobalAlloc, Layout};
use std::collections::HashMap;

#[global_allocator]
static GLOBAL: Tracking<MiMalloc> = Tracking::new(MiMalloc);

/// The largest size mimalloc's `mi_malloc_small` serves: 128 words (`MI_SMALL_SIZE_MAX`).
const SMALL: usize = mimalloc_sys::MI_SMALL_WSIZE_MAX as usize * std::mem::size_of::<usize>();

/// How many times the child repeats a workload while Callgrind counts.
const REPS: u64 = 10;

/// How many times each function was called while Callgrind counted, by name.
struct Calls(HashMap<String, u64>);

impl Calls {
    /// How many times one repetition of the workload called the function `name`: a C function
    /// by its name, a Rust one by the end of its path (`books::settle`). Panics unless the count
    /// is a whole number of calls per repetition: then something other than the workload called
    /// it while Callgrind counted, and the figure would mean nothing.
    fn per_rep(&self, name: &str) -> u64 {
        let path_end = format!("::{name}");
        let calls: u64 = self
            .0
            .iter()
            .map(|(f, n)| (without_generics(f), n))
            .filter(|(f, _)| f == name || (name.contains("::") && f.ends_with(&path_end)))
            .map(|(_, n)| n)
            .sum();
        assert!(
            calls % REPS == 0,
            "`{name}` was called {calls} times in {REPS} repetitions"
        );
        calls / REPS
    }

    /// Reads Callgrind's output (written with `--compress-strings=no`): each `cfn=` line names
    /// a callee, and the `calls=` line after it says how many times it was called from the
    /// function of the block it is in.
    fn parse(text: &str) -> Calls {
        let mut calls = HashMap::new();
        let mut callee = None;
        for line in text.lines() {
            if let Some(name) = line.strip_prefix("cfn=") {
                callee = Some(name.to_string());
            } else if let Some(rest) = line.strip_prefix("calls=") {
                let count: u64 = rest
                    .split_whitespace()
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("a `calls=` line without a count: {line}"));
                let name = callee
                    .take()
                    .expect("a `calls=` line follows a `cfn=` line");
                *calls.entry(name).or_insert(0) += count;
            }
        }
        Calls(calls)
    }
}

/// A function's name as legacy symbols demangle it, from the v0 symbols of newer toolchains:
/// without the generic arguments they carry (`mimalloc::policy::around_large::<...>`), and an
/// inherent method's type without its brackets (`<core::sync::atomic::Atomic<usize>>::fetch_max`).
fn without_generics(name: &str) -> String {
    let name = name.find("::<").map_or(name, |at| &name[..at]);
    if !name.starts_with('<') {
        return name.to_owned();
    }
    let mut depth = 0;
    for (at, c) in name.char_indices() {
        depth += match c {
            '<' => 1,
            '>' => -1,
            _ => 0,
        };
        if depth == 0 {
            let (inner, rest) = (&name[1..at], &name[at + 1..]);
            if !inner.contains(" as ") {
                return format!("{inner}{rest}");
            }
            break;
        }
    }
    name.to_owned()
}

/// Runs this test binary's `test` in a child under Callgrind and returns the calls made by the
/// workload's repetitions ([`counted_repetitions`]): Callgrind zeroes its counters when that
/// function is entered and writes them out (its first dump, file `.1`) when the function after
/// it is. Other threads' calls meanwhile would count too; the harness's main thread only waits
/// then. `None` (after saying why) where Callgrind cannot run the child.
fn calls_in_child(test: &str) -> Option<Calls> {
    if let Some(emulator) = emulator() {
        skip(
            test,
            &format!("under {emulator}, where Valgrind cannot run"),
        );
        return None;
    }
    if let Some(tool) = memory_tool() {
        skip(
            test,
            &format!("built for {tool}, which Valgrind cannot run with"),
        );
        return None;
    }
    let out_file = std::env::temp_dir().join(format!(
        "mimalloc-tests-callgrind-{}-{test}",
        std::process::id()
    ));
    let spawned = std::process::Command::new("valgrind")
        .args([
            "--tool=callgrind",
            "--zero-before=*counted_repetitions",
            "--dump-before=*counted_calls_end",
            "--compress-strings=no",
            "--compress-pos=no",
        ])
        .arg(format!("--callgrind-out-file={}", out_file.display()))
        .arg("--")
        .arg(std::env::current_exe().unwrap())
        .args(child_harness_args(test))
        .env("MIMALLOC_TESTS_CHILD", "1")
        .output();
    let out = match spawned {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            skip(test, "no `valgrind` on this machine");
            return None;
        }
        Err(e) => panic!("valgrind could not be started: {e}"),
    };
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_child_ran_the_test(test, &stdout, &stderr);
    assert!(
        out.status.success(),
        "the child failed under Callgrind: {:?}\n{stdout}\n{stderr}",
        out.status
    );
    let dump = out_file.with_file_name(format!(
        "{}.1",
        out_file.file_name().unwrap().to_string_lossy()
    ));
    let text = std::fs::read_to_string(&dump).unwrap_or_else(|e| {
        panic!("Callgrind wrote no dump at the end of the repetitions ({e})\n{stderr}")
    });
    let _ = std::fs::remove_file(&dump);
    let _ = std::fs::remove_file(&out_file);
    Some(Calls::parse(&text))
}

/// In the child: runs `workload` once to warm up (a thread's first allocations set up its
/// heap), then `REPS` times in [`counted_repetitions`].
fn repeat(mut workload: impl FnMut()) {
    workload();
    counted_repetitions(&mut workload);
    counted_calls_end();
}

/// Callgrind writes out its counters when this is entered: the calls of [`counted_repetitions`]
/// alone.
#[inline(never)]
fn counted_calls_end() {
    keep(());
}

/// The function whose calls Callgrind counts: it zeroes its counters when this is entered and
/// writes them out when it returns.
#[inline(never)]
fn counted_repetitions(workload: &mut dyn FnMut()) {
    for _ in 0..REPS {
        workload();
    }
}

/// Allocates and frees a block of `layout` through `MiMalloc` (not the global allocator, whose
/// own books would add their calls).
fn pair(layout: Layout) {
    // SAFETY: a fresh block of `layout`, freed once.
    unsafe { MiMalloc.dealloc(keep(MiMalloc.alloc(layout)), layout) };
}

fn layout(size: usize, align: usize) -> Layout {
    Layout::from_size_align(size, align).unwrap()
}

/// The layouts `mi_malloc_small` serves (at most `SMALL` bytes, aligned to at most 16, a
/// smaller size rounded up to the alignment), and the plain ones beyond it, `mi_malloc`'s.
const SMALL_LAYOUTS: [(usize, usize); 6] = [
    (1, 1),
    (8, 8),
    (100, 8),
    (SMALL - 1, 1),
    (SMALL, 16),
    (8, 16),
];
const LARGE_LAYOUTS: [(usize, usize); 4] =
    [(SMALL + 1, 1), (SMALL + 8, 8), (2 * SMALL, 16), (4096, 8)];

/// mimalloc's small allocation entry: `mi_wmalloc_small` (the size in words) with mimalloc 3,
/// `mi_malloc_small` with mimalloc 2.
const SMALL_ENTRY: &str = if cfg!(feature = "v2") {
    "mi_malloc_small"
} else {
    "mi_wmalloc_small"
};

/// Calls of mimalloc's entry `name` per repetition. An `override` build's `malloc` and `free`
/// are `mi_malloc` and `mi_free` under another name (aliases: one address), and Callgrind names
/// the address by either.
fn entry(calls: &Calls, name: &str) -> u64 {
    let alias = match name {
        "mi_malloc" => "malloc",
        "mi_free" => "free",
        _ => return calls.per_rep(name),
    };
    let aliased = if cfg!(feature = "override") {
        calls.per_rep(alias)
    } else {
        0
    };
    calls.per_rep(name) + aliased
}

#[test]
fn requests_take_the_entry_for_their_size() {
    let test = "requests_take_the_entry_for_their_size";
    if is_child() {
        return repeat(|| {
            for (size, align) in SMALL_LAYOUTS.iter().chain(&LARGE_LAYOUTS) {
                pair(layout(*size, *align));
            }
            pair(layout(64, 32));
            let zeroed = [layout(SMALL, 8), layout(4096, 8)];
            for layout in zeroed {
                // SAFETY: a fresh block of `layout`, freed once.
                unsafe { MiMalloc.dealloc(keep(MiMalloc.alloc_zeroed(layout)), layout) };
            }
        });
    }
    let calls = match calls_in_child(test) {
        Some(calls) => calls,
        None => return,
    };
    let small = SMALL_LAYOUTS.len() as u64 + 1;
    let large = LARGE_LAYOUTS.len() as u64;
    assert_eq!(entry(&calls, SMALL_ENTRY), small, "small requests");
    assert_eq!(
        entry(&calls, "mi_malloc"),
        large,
        "plain requests beyond the small size"
    );
    assert_eq!(
        entry(&calls, "mi_malloc_aligned"),
        1,
        "over-aligned requests"
    );
    assert_eq!(
        entry(&calls, "mi_zalloc"),
        1,
        "zeroed requests beyond the small size"
    );
    let (free_small, free) = if cfg!(mimalloc_small_free) {
        (small, large + 2)
    } else {
        (0, small + large + 2)
    };
    assert_eq!(
        entry(&calls, "mi_free_small_nonnull"),
        free_small,
        "frees of small blocks"
    );
    assert_eq!(entry(&calls, "mi_free"), free, "the other frees");
}

/// A budget scope keeps the thread's window aside for its allocations: while they fit, none
/// settles with the process-wide books (the hot path's cost, not a lock-free update of shared
/// counters per call). Allocations that do not fit settle, each: the same count seen where it
/// must not be zero.
#[test]
#[cfg_attr(
    not(debug_assertions),
    ignore = "an optimized build inlines the function counted"
)]
fn a_scope_allocates_from_its_window_without_settling() {
    let test = "a_scope_allocates_from_its_window_without_settling";
    if is_child() {
        let mut usage = Usage::new();
        return budget::scope(&mut usage, || {
            repeat(|| {
                for _ in 0..8 {
                    keep(Box::new([0u8; 100]));
                }
                let beyond_the_window = tracking::window() + 1;
                keep(vec![0u8; beyond_the_window]);
            })
        });
    }
    let calls = match calls_in_child(test) {
        Some(calls) => calls,
        None => return,
    };
    // The block beyond the window settles its allocation and its free.
    assert_eq!(
        calls.per_rep("books::settle"),
        2,
        "a scope's settles per repetition"
    );
}

/// `budget::poll` checks the process-wide figures once in 16 calls while nothing else tells it
/// to (the thread published, or has half a window unpublished).
#[test]
#[cfg_attr(
    not(debug_assertions),
    ignore = "an optimized build inlines the function counted"
)]
fn a_poll_checks_once_in_sixteen_calls() {
    let test = "a_poll_checks_once_in_sixteen_calls";
    if is_child() {
        budget::set_soft_limit(Some(usize::MAX / 2));
        tracking::publish();
        tracking::take_published();
        return repeat(|| {
            for _ in 0..16 {
                assert!(budget::poll().is_ok());
            }
        });
    }
    let calls = match calls_in_child(test) {
        Some(calls) => calls,
        None => return,
    };
    assert_eq!(calls.per_rep("budget::check"), 1, "checks per 16 polls");
}

/// The process-wide peak is raised when the live bytes pass it, and only then: an allocation
/// that brings the live bytes back to the peak leaves it alone (raising it is an atomic
/// read-modify-write of a shared counter).
#[test]
#[cfg_attr(
    not(debug_assertions),
    ignore = "an optimized build inlines the function counted"
)]
fn the_peak_is_raised_only_when_passed() {
    let test = "the_peak_is_raised_only_when_passed";
    if is_child() {
        // Every allocation settles, and so notes the peak, once the thread's window is closed.
        tracking::set_window(Some(0));
        tracking::flush();
        return repeat(|| {
            tracking::reset_peak();
            drop(keep(vec![0u8; 4096])); // raises the peak
            drop(keep(vec![0u8; 4096])); // reaches it again
        });
    }
    let calls = match calls_in_child(test) {
        Some(calls) => calls,
        None => return,
    };
    assert_eq!(
        // Newer `core`s name it as a method of the generic `Atomic<usize>`.
        calls.per_rep("AtomicUsize::fetch_max") + calls.per_rep("Atomic<usize>::fetch_max"),
        1,
        "raises of the peak per repetition"
    );
}

/// Once the heap is advised for huge pages, a large block carved from the policy's arenas has
/// the advice already: the policy looks at it (one call around the large path) and does not
/// advise it again (a system call per block). Blocks of more than 64 KiB meet the policy too,
/// which looks at the heap (`mi_process_info`) once every 4 MiB of them; a block of 64 KiB
/// (mimalloc's largest medium block) never meets it. Per repetition: the 8 MiB block's look,
/// and one for the four of 1 MiB.
#[test]
#[cfg_attr(
    not(mimalloc_adaptive_thp),
    ignore = "this build leaves huge pages to mimalloc (the policy decides them with mimalloc 3 on 64-bit Linux only)"
)]
fn the_policy_looks_at_large_blocks_without_advising_them_again() {
    let test = "the_policy_looks_at_large_blocks_without_advising_them_again";
    if is_child() {
        assert_eq!(
            mimalloc::policy::set_huge_pages_from(Some(0)),
            mimalloc::policy::HugePages::Huge
        );
        return repeat(|| {
            pair(layout(8 << 20, 8));
            for _ in 0..4 {
                pair(layout(1 << 20, 8));
            }
            pair(layout(64 << 10, 8));
        });
    }
    let calls = match calls_in_child(test) {
        Some(calls) => calls,
        None => return,
    };
    assert_eq!(
        calls.per_rep("policy::around_large"),
        5,
        "blocks that met the policy"
    );
    assert_eq!(calls.per_rep("mi_process_info"), 2, "looks at the heap");
    assert_eq!(calls.per_rep("huge::advise_block"), 0, "blocks advised");
}
