//! Each allocator through `GlobalAlloc` directly, in one process: alloc+free pairs of fixed
//! sizes, zeroed allocation, realloc growth and over-aligned pairs. One macro generates the
//! same benchmark group for every allocator, so the code timed is identical.
//!
//! `cargo bench -p bench-global-alloc --features jemalloc` (without the feature, jemalloc is
//! left out). Timing, not instruction counts: on a noisy machine compare the runner's
//! `instructions` command too.

use bench_global_alloc::{alloc_free, alloc_zeroed_free, realloc_growth};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use std::alloc::Layout;
use std::hint::black_box;

/// Benchmarks `$allocator` under the group name `$name`.
macro_rules! allocator_benches {
    ($function:ident, $name:literal, $allocator:expr) => {
        fn $function(c: &mut Criterion) {
            let allocator = $allocator;
            let mut group = c.benchmark_group($name);
            for size in [8usize, 32, 128, 512, 4096, 65536] {
                let layout = Layout::from_size_align(size, 8).unwrap();
                group.bench_with_input(BenchmarkId::new("alloc+free", size), &layout, |b, &l| {
                    b.iter(|| alloc_free(&allocator, black_box(l)))
                });
            }
            for size in [32usize, 4096] {
                let layout = Layout::from_size_align(size, 8).unwrap();
                group.bench_with_input(
                    BenchmarkId::new("alloc_zeroed+free", size),
                    &layout,
                    |b, &l| b.iter(|| alloc_zeroed_free(&allocator, black_box(l))),
                );
            }
            group.bench_function("realloc growth 16 B to 1 MiB", |b| {
                b.iter(|| realloc_growth(&allocator, black_box(1 << 20)))
            });
            for (size, align) in [(64usize, 64usize), (256, 256), (4096, 4096)] {
                let layout = Layout::from_size_align(size, align).unwrap();
                group.bench_with_input(
                    BenchmarkId::new("aligned alloc+free", format!("{size}@{align}")),
                    &layout,
                    |b, &l| b.iter(|| alloc_free(&allocator, black_box(l))),
                );
            }
            group.finish();
        }
    };
}

allocator_benches!(system, "system", std::alloc::System);
allocator_benches!(ours, "ours", mimalloc::MiMalloc);
#[cfg(all(feature = "jemalloc", not(windows)))]
allocator_benches!(jemalloc, "jemalloc", tikv_jemallocator::Jemalloc);

#[cfg(all(feature = "jemalloc", not(windows)))]
criterion_group!(benches, system, ours, jemalloc);
#[cfg(not(all(feature = "jemalloc", not(windows))))]
criterion_group!(benches, system, ours);
criterion_main!(benches);
