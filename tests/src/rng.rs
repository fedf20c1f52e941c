//! The generator of the stress and model runs, replayed exactly from their seed on every target:
//! the one the benchmark's workloads use too (`tests/rng`, its own crate so that neither
//! depends on the other).

pub use seeded_rng::{mix, Rng};
