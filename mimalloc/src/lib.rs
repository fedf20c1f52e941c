//! [mimalloc](https://github.com/microsoft/mimalloc) for Rust, built from C sources vendored in
//! this repository.
//!
//! The crate root holds what a product names; everything else is grouped by concept:
//!
//! | item | what it is |
//! |---|---|
//! | [`MiMalloc`], [`assign_global!`] | the `GlobalAlloc`, installed in one line |
//! | [`Heap`] | an owned heap, an allocator for collections (`allocator-api2` feature), freed at once when dropped |
//! | [`Arena`], [`Sharing`] | reserved or caller-owned memory; an exclusive arena with a heap in it is a hard memory budget |
//! | `Tracking` | (`tracking` feature) wraps an allocator to count live bytes and peaks, per thread and process-wide, and to enforce a limit |
//! | [`AllocError`], [`ArenaError`] | why a heap or an arena could not be had |
//! | [`Version`] | the mimalloc the program runs on |
//! | [`heap`] | questions about blocks: [`heap::usable_size`], [`heap::good_size`], [`heap::is_in_heap_region`]; [`heap::collect`] |
//! | [`stats`] | what mimalloc counts: [`stats::read`], [`stats::print`], [`stats::json`], [`stats::merge`] |
//! | [`process`] | what the OS says about the process: [`process::info`] |
//! | [`options`] | mimalloc's run-time options, typed per vendored version: [`options::MiOption`] |
//! | [`policy`] | the memory policy (Linux, mimalloc 3): huge pages once the heap has grown, memory back to the OS while the program is quiet |
//! | `tracking`, `budget` | (`tracking` feature) the books `Tracking` keeps, and limits that end in an error value: a checked soft limit and per-execution budget scopes |
//! | `profile` | (`profile` feature) heap profiles pprof reads, from `profile::Profiler` or from `MIMALLOC_PROFILE` with no code (mimalloc 3) |
//!
//! ```
//! use mimalloc::{Heap, MiMalloc, Version};
//!
//! #[global_allocator]
//! static GLOBAL: MiMalloc = MiMalloc;
//!
//! fn main() {
//!     let heap = Heap::new();
//!     let block = heap.allocate(core::alloc::Layout::new::<[u64; 4]>()).unwrap();
//!     assert!(heap.contains(block.as_ptr()) && mimalloc::heap::is_in_heap_region(block.as_ptr()));
//!     assert!(mimalloc::heap::good_size(30) >= 30);
//!     let committed = mimalloc::stats::read().committed.current;
//!     println!("mimalloc {}: {committed} bytes committed", Version::linked());
//! }
//! ```
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
//! README has the table with the cost of each. `no_policy` leaves the [`policy`] out: no
//! thread, no arena mapped at start-up, mimalloc's own huge pages and purging. The registry
//! crates' names are accepted too, so that switching from `mimalloc` 0.1 or `mimalloc-safe` 0.1
//! is one changed dependency line: `debug_in_debug`, `no_thp`, `win_direct_tls`,
//! `skip_collect_on_exit`, `etw` and `free_use_pagemap` change the build as they do there;
//! `extended` turns on `std` (for `MiMalloc::stats_json`, whose name and signature are the
//! registry crates'); `v3`, `no_opt_arch` and `asm` ask for what this crate always does.
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
// `Heap`, and the questions any heap answers about its blocks.
#[cfg(mimalloc_runs)]
pub mod heap;
#[cfg(mimalloc_runs)]
pub mod options;
#[cfg(mimalloc_runs)]
mod output;
#[cfg(mimalloc_runs)]
pub mod process;
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
// What runs when the program loads, in order: the policy, then the heap profile's environment.
#[cfg(all(
    mimalloc_runs,
    any(
        target_os = "linux",
        target_os = "android",
        target_os = "freebsd",
        target_os = "macos",
        windows
    )
))]
mod startup;
#[cfg(mimalloc_runs)]
pub mod stats;
// Allocation accounting and limits (the `tracking` feature, which turns on `std` for its
// thread-locals): `Tracking` and the books it keeps.
#[cfg(all(mimalloc_runs, feature = "tracking"))]
pub mod tracking;
// Memory budgets, the public face of the soft limit and budget scopes over `tracking`'s books.
#[cfg(all(mimalloc_runs, feature = "tracking"))]
pub mod budget;
#[cfg(mimalloc_runs)]
mod version;

// The names a product writes; the rest is reached through its module.
#[cfg(all(mimalloc_runs, feature = "tracking"))]
pub use crate::tracking::Tracking;
#[cfg(mimalloc_runs)]
pub use crate::{
    alloc::MiMalloc,
    arena::{Arena, ArenaError, Sharing},
    error::AllocError,
    heap::Heap,
    version::Version,
};
