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
//! - [`version`], [`usable_size`], [`good_size`], [`is_in_heap_region`], [`collect`].
//! - With the `tracking` feature, `Tracking` wraps an allocator to count live bytes and peaks,
//!   per thread and process-wide, and to enforce a memory limit.
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
//! Build-time choices (`v2`, `secure`, `debug`, `override`, `no_thp`, `local_dynamic_tls`,
//! `bindgen`) are forwarded to `mimalloc-sys`; the workspace README has the table with the cost
//! of each. API additions: `std` (`std::io` output, `std::error::Error`), `allocator-api2`
//! (`allocator_api2::alloc::Allocator` for `MiMalloc` and `&Heap`), `nightly`
//! (`core::alloc::Allocator`; do not combine with allocator-api2's own `nightly` feature, which
//! makes the two traits one).
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

/// Declares items that exist only where mimalloc can run (see the crate docs).
macro_rules! where_mimalloc_runs {
    ($($item:item)*) => {
        $(
            #[cfg(not(any(target_os = "none", all(target_family = "wasm", target_os = "unknown"))))]
            $item
        )*
    };
}

where_mimalloc_runs! {
    mod alloc;
    #[cfg(any(feature = "allocator-api2", feature = "nightly"))]
    mod allocator_api;
    mod arena;
    mod error;
    mod heap;
    mod info;
    mod options;
    mod output;
    mod process;
    mod stats;

    pub use crate::alloc::MiMalloc;
    pub use crate::arena::{Arena, ArenaError, Sharing};
    pub use crate::error::AllocError;
    pub use crate::heap::Heap;
    pub use crate::info::{collect, good_size, is_in_heap_region, usable_size, version, Version};
    pub use crate::options::{MiOption, OptionKind, OptionValue};
    pub use crate::process::{process_info, ProcessInfo};
    pub use crate::stats::{stats, stats_json, stats_merge, stats_print, Count, Stats};
    #[cfg(feature = "v2")]
    pub use crate::stats::stats_reset;
    #[cfg(feature = "std")]
    pub use crate::stats::stats_print_io;
}

// Allocation accounting and limits (the `tracking` feature, which turns on `std` for its
// thread-locals).
where_mimalloc_runs! {
    #[cfg(feature = "tracking")]
    mod tracking;
    #[cfg(feature = "tracking")]
    pub use crate::tracking::{ThreadStats, Tracking, TrackingStats};
}
