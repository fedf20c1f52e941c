//! Differential fuzzing of `MiMalloc`: libFuzzer's input is a sequence of operations that the
//! model of `mimalloc_tests::model` runs against the allocator and checks against its shadow
//! of every live block (the same interpreter runs on stable in `tests/tests/model.rs`).

#![no_main]

use libfuzzer_sys::fuzz_target;
use mimalloc_tests::model::{Limits, Model};

fuzz_target!(|data: &[u8]| {
    Model::new(&mimalloc::MiMalloc, Limits::for_target()).run(data);
});
