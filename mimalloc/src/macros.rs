//! `assign_global!`: the one line a product writes to run on mimalloc.

/// Installs [`MiMalloc`](crate::MiMalloc) as the program's global allocator.
///
/// A product needs nothing else (the macro uses `$crate` paths, so no `use` is required):
///
/// ```
/// mimalloc::assign_global!();
///
/// fn main() {
///     let v = vec![1u8, 2, 3]; // served by mimalloc
///     # #[cfg(not(miri))]
///     assert!(mimalloc::is_in_heap_region(v.as_ptr()));
/// }
/// ```
///
/// Behind an optional cargo feature, as the product example does:
///
/// ```
/// #[cfg(feature = "mimalloc")]
/// mimalloc::assign_global!();
/// # fn main() {}
/// ```
///
/// Name the static to refer to it later (any visibility):
///
/// ```
/// mimalloc::assign_global!(pub static GLOBAL);
///
/// fn main() {
///     let _: &mimalloc::MiMalloc = &GLOBAL;
/// }
/// ```
///
/// A program has one global allocator: a second `#[global_allocator]` anywhere in the crate
/// graph is a compile error.
///
/// # Where mimalloc cannot run
///
/// - On targets without an operating system to get memory from (`wasm32-unknown-unknown`,
///   `*-none-*`), the macro expands to nothing: the product still builds and keeps the target's
///   default allocator.
/// - Under Miri, which cannot call C, it installs `std::alloc::System`, so a product's Miri tests
///   keep working (they then test the product, not mimalloc).
#[cfg(all(not(miri), mimalloc_runs))]
#[macro_export]
macro_rules! assign_global {
    () => {
        const _: () = {
            #[global_allocator]
            static GLOBAL: $crate::MiMalloc = $crate::MiMalloc;
        };
    };
    ($vis:vis static $name:ident) => {
        #[global_allocator]
        $vis static $name: $crate::MiMalloc = $crate::MiMalloc;
    };
}

#[cfg(miri)]
#[macro_export]
#[doc(hidden)]
macro_rules! assign_global {
    () => {
        const _: () = {
            #[global_allocator]
            static GLOBAL: ::std::alloc::System = ::std::alloc::System;
        };
    };
    ($vis:vis static $name:ident) => {
        #[global_allocator]
        $vis static $name: ::std::alloc::System = ::std::alloc::System;
    };
}

#[cfg(all(not(miri), not(mimalloc_runs)))]
#[macro_export]
#[doc(hidden)]
macro_rules! assign_global {
    () => {};
    ($vis:vis static $name:ident) => {};
}
