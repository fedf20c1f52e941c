//! Statistics and process information: the typed snapshot, the printout, JSON, reset.

mimalloc::assign_global!();

use mimalloc::stats;

const MIB: i64 = 1 << 20;

/// The figures are process-wide, so this runs in a process of its own: with the other tests of
/// this binary running at the same moment, mimalloc 3.6's committed figure was seen below the
/// live 32 MiB block (i686 `secure`: 3 of 30 runs; never in 30 runs of this test alone).
#[test]
fn child_snapshot_follows_allocation() {
    const TEST: &str = "child_snapshot_follows_allocation";
    if !mimalloc_tests::is_child() {
        let out = mimalloc_tests::run_child(TEST, &[]);
        assert!(out.status.success(), "{out:?}");
        return;
    }
    // On a thread of its own, as under every libtest: libtest 1.63 runs a lone test on the main
    // thread, which mimalloc 2 leaves out of its thread count.
    std::thread::spawn(snapshot_follows_allocation)
        .join()
        .unwrap();
}

fn snapshot_follows_allocation() {
    let before = stats();
    let block = vec![1u8; 32 << 20];
    let during = stats();
    assert!(during.reserved.current >= during.committed.current);
    assert!(during.committed.current >= 32 * MIB, "{during:?}");
    assert!(during.committed.peak >= during.committed.current);
    assert!(during.mmap_calls >= before.mmap_calls);
    assert!(during.threads.current >= 1);
    // Heaps are counted by mimalloc 3 only; per-block counts only with the `debug` feature.
    assert_eq!(during.heaps.is_some(), cfg!(not(feature = "v2")));
    assert_eq!(during.allocated.is_some(), cfg!(feature = "debug"));
    if let Some(allocated) = during.allocated {
        assert!(allocated.current >= 32 * MIB, "{allocated:?}");
    }
    drop(block);
}

#[test]
fn printout_goes_to_the_writer() {
    let _data = vec![0u8; 4 << 20];
    let mut text = String::new();
    mimalloc::stats_print(&mut text).unwrap();
    assert!(
        text.contains("reserved") && text.contains("committed"),
        "{text}"
    );
    let mut bytes = Vec::new();
    mimalloc::stats_print_io(&mut bytes).unwrap();
    assert!(String::from_utf8(bytes).unwrap().contains("committed"));
}

#[test]
fn printout_reports_the_writers_error() {
    struct Full;
    impl std::fmt::Write for Full {
        fn write_str(&mut self, _: &str) -> std::fmt::Result {
            Err(std::fmt::Error)
        }
    }
    let _data = vec![0u8; 4 << 20];
    assert!(mimalloc::stats_print(&mut Full).is_err());
}

#[test]
fn json_is_a_document_with_the_counters() {
    let _data = vec![0u8; 4 << 20];
    let json = mimalloc::stats_json();
    assert!(
        json.trim_start().starts_with('{') && json.trim_end().ends_with('}'),
        "{json}"
    );
    assert_eq!(json.matches('{').count(), json.matches('}').count());
    for key in [
        "\"reserved\"",
        "\"committed\"",
        "\"page_faults\"",
        "\"mimalloc_version\"",
    ] {
        assert!(json.contains(key), "{key} missing from {json}");
    }
    let version = mimalloc::version();
    let expected = format!(
        "{}",
        version.major * 10_000 + version.minor * 100 + version.patch
    );
    assert!(
        json.contains(&expected),
        "the JSON names another mimalloc version: {json}"
    );
}

/// The calling thread's counters reach the process-wide ones.
#[test]
fn merge_publishes_this_threads_counters() {
    let block = vec![1u8; 2 << 20];
    mimalloc::stats_merge();
    let now = stats();
    if let Some(allocated) = now.allocated {
        assert!(allocated.current >= 2 * MIB, "{now:?}");
    }
    assert!(now.threads.current >= 1);
    drop(block);
}

#[test]
fn process_information() {
    let info = mimalloc::process_info();
    assert!(info.peak_rss > 0);
    assert!(info.peak_commit >= info.current_commit);
    assert!(
        info.user_time + info.system_time <= info.elapsed * 4 + std::time::Duration::from_secs(5)
    );
}
