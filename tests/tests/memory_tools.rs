//! The memory tools see mimalloc's blocks: a deliberate use-after-free and an overflow, each in
//! a child process, are reported by AddressSanitizer (`asan` feature) and by Valgrind
//! (`valgrind` feature), and an overflow past a guarded block faults at once (`guarded`).
//! In builds without the tool each test is ignored, with the reason libtest prints (the child
//! runs only in the builds where the test is not ignored).

use mimalloc::MiMalloc;
use mimalloc_tests::{
    assert_child_ran_the_test, child_harness_args, is_child, run_child_with_timeout, skip,
    ChildRun, EVERY_BLOCK_GUARDED,
};
use std::alloc::{GlobalAlloc, Layout};
use std::time::Duration;

const SIZE: usize = 64;

fn layout() -> Layout {
    Layout::from_size_align(SIZE, 8).unwrap()
}

/// Reads a byte of a freed block: what the tools must report.
fn use_after_free() {
    // SAFETY: none; the read after the free is the point, in a disposable child process.
    unsafe {
        let p = MiMalloc.alloc(layout());
        p.write_bytes(7, SIZE);
        MiMalloc.dealloc(p, layout());
        let byte = std::ptr::read_volatile(p.add(8));
        println!("SURVIVED read {byte}");
    }
}

/// Writes past the end of a block, beyond mimalloc's padding canary (the 8 bytes right after
/// a request, which mimalloc itself checks and the tools leave accessible): into the next,
/// free block.
fn overflow() {
    // SAFETY: none; the write out of bounds is the point, in a disposable child process.
    unsafe {
        let a = MiMalloc.alloc(layout());
        let b = MiMalloc.alloc(layout());
        MiMalloc.dealloc(b, layout());
        let (low, high) = if (a as usize) < (b as usize) {
            (a, b)
        } else {
            (b, a)
        };
        let reach = high as usize - low as usize + 8;
        if low == a {
            std::ptr::write_volatile(a.add(reach - 1), 0x41);
        } else {
            // `b` came first: overflow from a fresh block below `a` instead.
            std::ptr::write_volatile(a.add(SIZE + 24), 0x41);
        }
        println!("SURVIVED write");
    }
}

fn report(test: &str, run: &ChildRun) {
    println!(
        "{test}: status {:?}\n--- stdout\n{}--- stderr\n{}",
        run.status, run.stdout, run.stderr
    );
}

fn asan_child(test: &str) -> ChildRun {
    // The child must not stop at the first report (halt_on_error is the default): one report
    // and a non-zero exit are what is checked.
    let run = run_child_with_timeout(test, &[], Duration::from_secs(120));
    report(test, &run);
    run
}

/// Runs `test` in a child where every block is guarded and placed exactly before its guard
/// page ([`EVERY_BLOCK_GUARDED`]), and prints what it did.
fn guarded_child(test: &str) -> ChildRun {
    let run = run_child_with_timeout(test, &EVERY_BLOCK_GUARDED, Duration::from_secs(60));
    report(test, &run);
    run
}

#[test]
#[cfg_attr(
    not(feature = "asan"),
    ignore = "not an `asan` build: no AddressSanitizer to report the use after free"
)]
fn child_asan_reports_a_use_after_free() {
    if is_child() {
        return use_after_free();
    }
    let run = asan_child("child_asan_reports_a_use_after_free");
    assert!(!run.succeeded() && !run.stdout.contains("SURVIVED"));
    assert!(
        run.stderr.contains("ERROR: AddressSanitizer"),
        "ASan did not report the read of a freed block"
    );
}

#[test]
#[cfg_attr(
    not(feature = "asan"),
    ignore = "not an `asan` build: no AddressSanitizer to report the overflow"
)]
fn child_asan_reports_a_heap_overflow() {
    if is_child() {
        return overflow();
    }
    let run = asan_child("child_asan_reports_a_heap_overflow");
    assert!(!run.succeeded() && !run.stdout.contains("SURVIVED"));
    assert!(
        run.stderr.contains("ERROR: AddressSanitizer"),
        "ASan did not report the write past the block"
    );
}

/// Runs this test binary's `test` under Valgrind as a child; `None` if there is no Valgrind.
/// Panics if the child did not run that one test.
fn under_valgrind(test: &str) -> Option<std::process::Output> {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new("valgrind")
        .args(["--error-exitcode=99", "--"])
        .arg(exe)
        .args(child_harness_args(test))
        .env("MIMALLOC_TESTS_CHILD", "1")
        .output()
        .ok()?;
    assert_child_ran_the_test(
        test,
        &String::from_utf8_lossy(&out.stdout),
        &String::from_utf8_lossy(&out.stderr),
    );
    Some(out)
}

#[test]
#[cfg_attr(
    not(feature = "valgrind"),
    ignore = "not a `valgrind` build: mimalloc does not tell Valgrind about its blocks"
)]
fn child_valgrind_reports_a_use_after_free() {
    if is_child() {
        return use_after_free();
    }
    let test = "child_valgrind_reports_a_use_after_free";
    let out = match under_valgrind(test) {
        Some(out) => out,
        None => return skip(test, "no `valgrind` on this machine"),
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{test}: {:?}\n{stderr}", out.status);
    assert_eq!(out.status.code(), Some(99), "Valgrind found no error");
    assert!(
        stderr.contains("Invalid read of size 1"),
        "Valgrind did not report the read of a freed block"
    );
}

#[test]
#[cfg_attr(
    not(feature = "guarded"),
    ignore = "not a `guarded` build: no block has a guard page"
)]
fn child_guarded_block_overflow_faults_at_once() {
    let test = "child_guarded_block_overflow_faults_at_once";
    if is_child() {
        // SAFETY: none past the write one byte beyond the block, which is the point.
        unsafe {
            let layout = Layout::from_size_align(4000, 8).unwrap();
            // A thread's first allocation initializes its heap, whose sampling starts after.
            MiMalloc.dealloc(MiMalloc.alloc(layout), layout);
            let p = MiMalloc.alloc(layout);
            p.write_bytes(1, 4000);
            println!("IN BOUNDS OK");
            std::ptr::write_volatile(p.add(4000), 0x41);
            println!("SURVIVED");
        }
        return;
    }
    let run = guarded_child(test);
    assert!(
        run.stdout.contains("IN BOUNDS OK"),
        "the block itself was not usable"
    );
    assert!(
        !run.succeeded() && !run.stdout.contains("SURVIVED"),
        "the write one byte past a guarded block did not fault"
    );
}

/// mimalloc 3.3.2 and 2.3.2 copied the usable size of the block that holds a guarded object in
/// `mi_realloc`, past the object into its guard page, and faulted; 3.6.0 and 2.5.2 copy the
/// object. `MiMalloc` resized by copy in guarded builds until then; now both go through
/// mimalloc's realloc, every block guarded, and keep the contents.
#[test]
#[cfg_attr(
    not(feature = "guarded"),
    ignore = "not a `guarded` build: no block has a guard page"
)]
fn child_guarded_realloc_keeps_the_contents() {
    let test = "child_guarded_realloc_keeps_the_contents";
    if is_child() {
        let layout = Layout::from_size_align(100, 8).unwrap();
        // SAFETY: every block is live, used within its size and freed once.
        unsafe {
            MiMalloc.dealloc(MiMalloc.alloc(layout), layout);
            let p = MiMalloc.alloc(layout);
            p.write_bytes(7, 100);
            let q = MiMalloc.realloc(p, layout, 10_000);
            assert!((0..100).all(|i| *q.add(i) == 7), "contents lost in realloc");
            let q = MiMalloc.realloc(q, Layout::from_size_align(10_000, 8).unwrap(), 50);
            assert!((0..50).all(|i| *q.add(i) == 7), "contents lost in a shrink");
            MiMalloc.dealloc(q, Layout::from_size_align(50, 8).unwrap());
            println!("OURS OK");
            let p = mimalloc_sys::mi_malloc(100).cast::<u8>();
            p.write_bytes(9, 100);
            let q = mimalloc_sys::mi_realloc(p.cast(), 10_000).cast::<u8>();
            assert!(
                (0..100).all(|i| *q.add(i) == 9),
                "mi_realloc lost the contents"
            );
            mimalloc_sys::mi_free(q.cast());
            println!("RAW OK");
        }
        return;
    }
    let run = guarded_child(test);
    assert!(
        run.succeeded() && run.stdout.contains("OURS OK") && run.stdout.contains("RAW OK"),
        "realloc of a guarded block failed"
    );
}
