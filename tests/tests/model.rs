//! The differential model (`mimalloc_tests::model`) on seeded random inputs and on the fuzz
//! target's seed corpus, on every target the suite runs on (the fuzzer itself needs nightly).

use mimalloc::MiMalloc;
use mimalloc_tests::model::{Counts, Limits, Model};
use mimalloc_tests::rng::Rng;
use std::path::Path;

/// Whether this is a memory-tool build (`asan`, `tsan`, `valgrind`): their runtimes reserve the
/// address space of a request for an alignment of 2^57 and up for real, and run for minutes or
/// get killed.
const MEMORY_TOOL: bool = cfg!(any(
    feature = "asan",
    feature = "tsan",
    feature = "valgrind"
));

/// The target's limits, less the requests for alignments of 2^57 and up where they must not be
/// made: in memory-tool builds (a build-time choice: `absurd_alignments_in_random_sequences`,
/// which makes only those requests, is ignored there), and under Wine or qemu-user (told at run
/// time: `test` then says that this part of it did not run).
fn limits(test: &str) -> Limits {
    let mut limits = Limits::for_target();
    if MEMORY_TOOL {
        limits.absurd_alignments = false;
    }
    if limits.absurd_alignments {
        if let Some(emulator) = mimalloc_tests::os_emulator() {
            limits.absurd_alignments = false;
            mimalloc_tests::skip(
                &format!("{test} (alignments of 2^57 and up)"),
                &format!("{emulator} does not model huge address-space reservations"),
            );
        }
    }
    limits
}

fn add(total: &mut Counts, c: Counts) {
    total.ops += c.ops;
    total.allocs += c.allocs;
    total.zeroed += c.zeroed;
    total.grows += c.grows;
    total.shrinks += c.shrinks;
    total.deallocs += c.deallocs;
    total.refused += c.refused;
    total.large_served += c.large_served;
    total.checked_bytes += c.checked_bytes;
}

#[test]
fn seeded_random_operation_sequences() {
    let limits = limits("seeded_random_operation_sequences");
    let mut total = Counts::default();
    for seed in 0..120u64 {
        let bytes = Rng::new(seed).bytes(600);
        add(&mut total, Model::new(&MiMalloc, limits).run(&bytes));
    }
    println!("{total:?}");
    // The inputs reached every kind of operation, so the checks above were exercised.
    assert!(total.allocs > 1_000 && total.zeroed > 300, "{total:?}");
    assert!(total.grows > 200 && total.shrinks > 200, "{total:?}");
    assert!(total.large_served > 10, "{total:?}");
    assert_eq!(total.allocs, total.deallocs, "{total:?}");
    if cfg!(target_pointer_width = "64") {
        assert!(total.refused > 1_000, "{total:?}");
    }
}

/// The requests for alignments of 2^57 and up that the other tests leave out in memory-tool
/// builds, on a few of the same inputs: each must fail (the model checks every refusal).
#[cfg(target_pointer_width = "64")]
#[test]
#[cfg_attr(
    any(feature = "asan", feature = "tsan", feature = "valgrind"),
    ignore = "the memory tools do not model huge address-space reservations (the other model \
              tests run without these requests)"
)]
fn absurd_alignments_in_random_sequences() {
    if let Some(emulator) = mimalloc_tests::os_emulator() {
        return mimalloc_tests::skip(
            "absurd_alignments_in_random_sequences",
            &format!("{emulator} does not model huge address-space reservations"),
        );
    }
    let limits = Limits::for_target();
    assert!(limits.absurd_alignments, "{limits:?}");
    let mut total = Counts::default();
    for seed in 0..30u64 {
        let bytes = Rng::new(seed).bytes(600);
        add(&mut total, Model::new(&MiMalloc, limits).run(&bytes));
    }
    println!("{total:?}");
    assert!(total.refused > 200, "{total:?}");
    assert_eq!(total.allocs, total.deallocs, "{total:?}");
}

/// The committed seed corpus of the fuzz target, which every copy of the workspace the suite
/// runs in carries (`scripts/msrv-workspace.sh` copies `fuzz/corpus` into the cross and MSRV
/// workspaces): missing, it is a broken checkout or copy, not a reason to pass.
#[test]
fn fuzz_seed_corpus_replays_clean() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/model");
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("no seed corpus at {}: {e}", dir.display()));
    let limits = limits("fuzz_seed_corpus_replays_clean");
    let mut files = 0;
    for entry in entries {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        Model::new(&MiMalloc, limits).run(&bytes);
        files += 1;
    }
    assert!(files >= 10, "only {files} seed inputs in {}", dir.display());
}
