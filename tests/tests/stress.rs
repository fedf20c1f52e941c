//! The multithreaded stress (`mimalloc_tests::stress`) through the global allocator that
//! `assign_global!` installs. `cargo test` runs a short version; `MIMALLOC_STRESS=threads=8,
//! seconds=40` runs a long one (the `stress` lane of `.ci/run full` does, per build). The only
//! test of this binary, so that mimalloc's process-wide statistics at its end are its own.

mimalloc::assign_global!();

use mimalloc_tests::stress::{self, Config, Global};

fn build_name() -> String {
    let features: Vec<&str> = [
        ("v2", cfg!(feature = "v2")),
        ("secure", cfg!(feature = "secure")),
        ("debug", cfg!(feature = "debug")),
        ("asan", cfg!(feature = "asan")),
        ("tsan", cfg!(feature = "tsan")),
        ("valgrind", cfg!(feature = "valgrind")),
        ("guarded", cfg!(feature = "guarded")),
    ]
    .iter()
    .filter(|f| f.1)
    .map(|f| f.0)
    .collect();
    if features.is_empty() {
        "default".to_string()
    } else {
        features.join(",")
    }
}

/// Whether the memory policy's background purge thread runs.
fn purge_thread_runs() -> bool {
    mimalloc::policy::background_purge() == mimalloc::policy::BackgroundPurge::Running
}

#[test]
fn stress_threads_through_the_global_allocator() {
    let config = Config::from_env().unwrap();
    let before = mimalloc::stats::read();
    let purging_before = purge_thread_runs();

    let report = stress::run(&Global, &config);
    stress::report_and_check(&build_name(), &config, &report);

    // The global allocator really is mimalloc: a block from `Global` is in mimalloc's memory.
    let probe = vec![0u8; 100];
    assert!(mimalloc::heap::is_in_heap_region(probe.as_ptr()));
    drop(probe);

    // Every thread and every block of the run was released: mimalloc's own accounts agree.
    mimalloc::heap::collect(true);
    let after = mimalloc::stats::read();
    // The memory policy's background purge thread, if the run's heap started it, is mimalloc's
    // thread too, and stays.
    let started = i64::from(purge_thread_runs() && !purging_before);
    assert!(
        after.threads.current <= before.threads.current + started,
        "threads still counted alive after the run: {} before, {} after ({started} started by \
         the memory policy)",
        before.threads.current,
        after.threads.current
    );
    // Live bytes are counted by mimalloc 3, and by mimalloc 2 with the `debug` feature only
    // (its MI_STAT); where they are, the stress left none behind.
    assert_eq!(
        after.allocated.is_some(),
        cfg!(any(not(feature = "v2"), feature = "debug")),
        "{after:?}"
    );
    if let (Some(before), Some(after)) = (before.allocated, after.allocated) {
        assert!(
            after.current <= before.current + (64 << 10),
            "bytes still live after the stress freed everything: {} before, {} after",
            before.current,
            after.current
        );
    }
}
