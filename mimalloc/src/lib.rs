//! [mimalloc](https://github.com/microsoft/mimalloc) for Rust, built from C sources vendored in
//! this repository.
//!
//! - [`MiMalloc`] is a `GlobalAlloc`; [`assign_global!`] installs it in one line.
//! - [`Heap`]: an owned heap, an allocator for collections (`allocator-api2` feature), freed at
//!   once when dropped.
//! - [`Arena`]: reserved or caller-owned memory; an exclusive arena with a heap in it is a hard
//!   memory budget.
//! - [`stats`], [`stats_print`], [`stats_json`], [`process_info`]: what mimalloc and the OS say
//!   about memory use.
//! - [`MiOption`]: mimalloc's run-time options, typed per vendored version.
//! - [`policy`]: the memory policy (Linux, mimalloc 3): the heap gets transparent huge pages
//!   once it has grown, and memory freed goes back to the OS while the program is quiet.
//! - [`version`], [`usable_size`], [`good_size`], [`is_in_heap_region`], [`collect`].
//! - With the `tracking` feature, `Tracking` wraps an allocator to count live bytes and peaks,
//!   per thread and process-wide, and to enforce a memory limit (the books are read and set
//!   with `tracking::stats`, `tracking::set_limit`, ...); `budget` adds limits that end in an
//!   error value instead: a checked soft limit and per-execution budget scopes.
//! - With the `profile` feature, `profile::Profiler` samples allocations with their call
//!   stacks and writes pprof heap profiles, symbolized in the process if asked, and
//!   `MIMALLOC_PROFILE` profiles any program with no code (mimalloc 3 only).
//!
//! # Adopting it in a product
//!
//! ```toml
//! [dependencies]
//! mimalloc = { path = "../mimalloc-workspace/mimalloc", optional = true }
//!
//! [features]
//! mimalloc = ["dep:mimalloc"]
//! ```
//!
//! ```
//! #[cfg(feature = "mimalloc")]
//! mimalloc::assign_global!();
//! # fn main() {}
//! ```
//!
//! # Cargo features
//!
//! Build-time choices (`v2`, `secure`, `debug`, `override`, `local_dynamic_tls`, `asan`,
//! `tsan`, `valgrind`, `guarded`, `bindgen`) are forwarded to `mimalloc-sys`; the workspace
//! README has the table with the cost of each. The registry crates' names are accepted too, so
//! that switching from `mimalloc` 0.1 or `mimalloc-safe` 0.1 is one changed dependency line:
//! `debug_in_debug`, `no_thp`, `win_direct_tls`, `skip_collect_on_exit`, `etw` and
//! `free_use_pagemap` change the build as they do there; `extended` turns on `std` (for
//! [`MiMalloc::stats_json`]); `v3`, `no_opt_arch` and `asm` ask for what this crate always does.
//! API additions: `std` (`std::io` output,
//! `std::error::Error`), `allocator-api2`
//! (`allocator_api2::alloc::Allocator` for `MiMalloc` and `&Heap`), `nightly`
//! (`core::alloc::Allocator`; do not combine with allocator-api2's own `nightly` feature, which
//! makes the two traits one), `tracking` (`Tracking` and `budget`, with `std`), `profile`
//! (`profile::Profiler`, with `std`; not with `v2`).
//!
//! # Targets without an operating system
//!
//! On `wasm32-unknown-unknown` and `*-none-*` targets mimalloc has nowhere to get memory from:
//! [`assign_global!`] expands to nothing there and the rest of this API does not exist, so a
//! product that uses mimalloc only through the macro keeps building for those targets.

#![no_std]
#![cfg_attr(feature = "nightly", feature(allocator_api))]
#![deny(unsafe_op_in_unsafe_fn, missing_docs)]

// The `alloc` crate, renamed: `alloc` is the module of `MiMalloc`.
extern crate alloc as rust_alloc;
#[cfg(feature = "std")]
extern crate std;

mod macros;
#[cfg(all(miri, mimalloc_runs))]
#[doc(hidden)]
pub use crate::macros::MiriAllocator;

// Everything below exists only where mimalloc runs: `mimalloc-sys`'s build plan decides that
// (`build/plan.rs`, `Decision::Skip` for targets without an OS) and publishes it, and this
// crate's build script turns it into `cfg(mimalloc_runs)`. Plain `mod` items, so that rustfmt
// reaches every file.
#[cfg(mimalloc_runs)]
mod alloc;
#[cfg(all(mimalloc_runs, any(feature = "allocator-api2", feature = "nightly")))]
mod allocator_api;
#[cfg(mimalloc_runs)]
mod arena;
// The registry crates' `MiMalloc` methods (`version`, `usable_size`, `stats_json`).
#[cfg(mimalloc_runs)]
mod compat;
#[cfg(mimalloc_runs)]
mod error;
#[cfg(mimalloc_runs)]
mod heap;
#[cfg(mimalloc_runs)]
mod info;
#[cfg(mimalloc_runs)]
mod options;
#[cfg(mimalloc_runs)]
mod output;
#[cfg(mimalloc_runs)]
mod process;
// Heap profiling (the `profile` feature, mimalloc 3 only).
#[cfg(all(mimalloc_runs, feature = "profile", not(feature = "v2")))]
pub mod profile;
#[cfg(all(feature = "v2", feature = "v3"))]
compile_error!(
    "the features `v2` and `v3` are both on: `v3` (mimalloc-safe's name) is this crate's \
     default and may be left out; keep the one you mean"
);
#[cfg(all(feature = "profile", feature = "v2"))]
compile_error!(
    "the `profile` feature needs mimalloc 3: mimalloc 2 (the `v2` feature) has no heap profiler"
);
// The memory policy: huge pages once the heap has grown, and memory back when it is quiet.
#[cfg(mimalloc_runs)]
pub mod policy;
#[cfg(mimalloc_runs)]
mod route;
#[cfg(mimalloc_runs)]
mod stats;
// Allocation accounting and limits (the `tracking` feature, which turns on `std` for its
// thread-locals): `Tracking` and the books it keeps.
#[cfg(all(mimalloc_runs, feature = "tracking"))]
pub mod tracking;
// Memory budgets, the public face of the soft limit and budget scopes over `tracking`'s books.
#[cfg(all(mimalloc_runs, feature = "tracking"))]
pub mod budget;

#[cfg(all(mimalloc_runs, feature = "v2"))]
pub use crate::stats::stats_reset;
#[cfg(all(mimalloc_runs, not(feature = "v2")))]
pub use crate::stats::{size_bins, SizeBin, SizeBins};
#[cfg(all(mimalloc_runs, feature = "tracking"))]
pub use crate::tracking::Tracking;
#[cfg(mimalloc_runs)]
pub use crate::{
    alloc::MiMalloc,
    arena::{Arena, ArenaError, Sharing},
    error::AllocError,
    heap::Heap,
    info::{collect, good_size, is_in_heap_region, usable_size, version, Version},
    options::{MiOption, OptionKind, OptionValue},
    process::{process_info, ProcessInfo},
    stats::{stats, stats_json, stats_merge, stats_print, Count, Stats},
};
#[cfg(all(mimalloc_runs, feature = "std"))]
pub use crate::{compat::StatsJson, stats::stats_print_io};
