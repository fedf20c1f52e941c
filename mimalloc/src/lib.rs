//! [mimalloc](https://github.com/microsoft/mimalloc) for Rust, built from C sources vendored in
//! this repository.
//!
//! - [`MiMalloc`] is a `GlobalAlloc`; [`assign_global!`] installs it in one line.
//! - [`version`], [`usable_size`], [`is_in_heap_region`] ask mimalloc about itself and its blocks.
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
//! The cargo features of this crate choose how mimalloc is compiled (`v2`, `secure`, `debug`,
//! `override`, `no_thp`, `local_dynamic_tls`); the workspace README has the table with the cost
//! of each.
//!
//! # Targets without an operating system
//!
//! On `wasm32-unknown-unknown` and `*-none-*` targets mimalloc has nowhere to get memory from:
//! [`assign_global!`] expands to nothing there and the rest of this API does not exist, so a
//! product that uses mimalloc only through the macro keeps building for those targets.

#![no_std]
#![deny(unsafe_op_in_unsafe_fn, missing_docs)]

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
    mod info;

    pub use crate::alloc::MiMalloc;
    pub use crate::info::{is_in_heap_region, usable_size, version, Version};
}

// Allocation accounting and limits (the `tracking` feature): needs std's thread-locals.
where_mimalloc_runs! {
    #[cfg(feature = "tracking")]
    extern crate std;
    #[cfg(feature = "tracking")]
    mod tracking;
    #[cfg(feature = "tracking")]
    pub use crate::tracking::{ThreadStats, Tracking, TrackingStats};
}
