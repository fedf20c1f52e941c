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
///     assert!(mimalloc::heap::is_in_heap_region(v.as_ptr()));
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
/// - Under Miri, which cannot call C, it installs an allocator that hands every request to
///   Miri's own (through Miri's `miri_alloc` and `miri_dealloc` functions), so a product's Miri
///   tests keep working, `#![no_std]` products included: they then test the product, not
///   mimalloc. The named form still declares its static, of type `MiMalloc`, so code that names
///   it compiles; but it is not the global allocator there, and calling it directly reaches
///   mimalloc's C, which Miri rejects.
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

// Not `std::alloc::System`: a `#![no_std]` product has no `std` to name, and its Miri tests
// (with the test harness's std linked in) or a no_std binary's run still need an allocator.
#[cfg(all(miri, mimalloc_runs))]
#[macro_export]
#[doc(hidden)]
macro_rules! assign_global {
    () => {
        const _: () = {
            #[global_allocator]
            static GLOBAL: $crate::MiriAllocator = $crate::MiriAllocator;
        };
    };
    ($vis:vis static $name:ident) => {
        const _: () = {
            #[global_allocator]
            static GLOBAL: $crate::MiriAllocator = $crate::MiriAllocator;
        };
        $vis static $name: $crate::MiMalloc = $crate::MiMalloc;
    };
}

#[cfg(not(mimalloc_runs))]
#[macro_export]
#[doc(hidden)]
macro_rules! assign_global {
    () => {};
    ($vis:vis static $name:ident) => {};
}

/// The global allocator `assign_global!` installs under Miri: Miri's own heap, reached through
/// the functions Miri provides to programs without `std` (`miri_alloc`, `miri_dealloc`), so
/// that it needs nothing but `core`.
#[cfg(all(miri, mimalloc_runs))]
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MiriAllocator;

#[cfg(all(miri, mimalloc_runs))]
extern "Rust" {
    fn miri_alloc(size: usize, align: usize) -> *mut u8;
    fn miri_dealloc(ptr: *mut u8, size: usize, align: usize);
}

// SAFETY: Miri's allocator returns blocks of the requested size and alignment, live until
// `miri_dealloc`, and checks every use of them.
#[cfg(all(miri, mimalloc_runs))]
unsafe impl core::alloc::GlobalAlloc for MiriAllocator {
    unsafe fn alloc(&self, layout: core::alloc::Layout) -> *mut u8 {
        // SAFETY: `layout` has a non-zero size (the `GlobalAlloc` contract) and a power-of-two
        // alignment (a `Layout` invariant), what `miri_alloc` requires.
        unsafe { miri_alloc(layout.size(), layout.align()) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: core::alloc::Layout) {
        // SAFETY: the caller passes a block from `alloc` above with its layout, which is what
        // `miri_dealloc` takes back.
        unsafe { miri_dealloc(ptr, layout.size(), layout.align()) }
    }
}
