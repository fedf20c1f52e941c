//! `MiMalloc`: mimalloc behind Rust's `GlobalAlloc`.

use crate::route::{self, Entries};
use core::alloc::{GlobalAlloc, Layout};
use core::ffi::c_void;
use mimalloc_sys as ffi;

/// mimalloc as a Rust allocator.
///
/// Every allocation of a program that installs it (with [`assign_global!`](crate::assign_global)
/// or `#[global_allocator]`) is served by the vendored mimalloc. It is a zero-sized handle: all
/// state lives in mimalloc's thread-local heaps.
///
/// Each `GlobalAlloc` method goes through the routing core (`route.rs`), which picks one
/// mimalloc entry point. When the layout's alignment is naturally satisfied: `mi_malloc_small`
/// for blocks of at most `MI_SMALL_SIZE_MAX` bytes (1 KiB on 64-bit targets: mimalloc's inlined
/// fast path, without the size test and call `mi_malloc` makes; zeroed ones are cleared inline
/// up to 64 bytes, with `memset` above), else `mi_malloc`, `mi_zalloc`, `mi_realloc`; otherwise
/// their `_aligned` variants. Three cases do more or less than that one call: a block of 2 MiB
/// or more meets the memory policy ([`crate::policy`]; with mimalloc 3 on Linux it may switch
/// the heap to transparent huge pages first, or be advised for them itself with `madvise`, and
/// may start the background purge); where `dealloc` takes mimalloc 3's small-page path, a
/// `realloc` into a small layout from a block of a larger page moves the block (allocate, copy,
/// free); and on 32-bit targets a request beyond the largest block mimalloc 3.6.0 serves there
/// returns null without calling mimalloc (the bound: docs/known-issues.md). [`Heap`] and the `Allocator` impls take the same paths.
/// Every valid [`Layout`] is accepted: a request mimalloc cannot satisfy (a size near
/// `isize::MAX`, an alignment larger than the address space allows) returns null, which the
/// standard collections turn into `handle_alloc_error` or a `try_reserve` error.
///
/// [`Heap`]: crate::Heap
///
/// # Example
///
/// ```
/// use core::alloc::{GlobalAlloc, Layout};
/// use mimalloc::MiMalloc;
///
/// let layout = Layout::from_size_align(100, 64).unwrap();
/// // SAFETY: the layout has a non-zero size; the block is freed once, with the same layout.
/// unsafe {
///     let p = MiMalloc.alloc(layout);
///     assert!(!p.is_null());
///     assert_eq!(p as usize % 64, 0);
///     MiMalloc.dealloc(p, layout);
/// }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MiMalloc;

// SAFETY: `route` returns blocks that are either null or valid for reads and writes of the
// requested size at the requested alignment, that do not overlap any other live block, and
// that stay valid until freed; `route::free` and `route::realloc` accept any block it returned,
// from any thread. mimalloc never unwinds.
unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        route::alloc(self, layout)
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        route::alloc_zeroed(self, layout)
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller passes a live block of this allocator, allocated with `layout`.
        unsafe { route::free(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the trait's contract: `ptr` is a live block allocated with `layout`, and
        // `new_size` rounded up to `layout.align()` does not overflow `isize`, so the new
        // layout is valid.
        unsafe {
            let new = Layout::from_size_align_unchecked(new_size, layout.align());
            route::realloc(self, ptr, layout, new)
        }
    }
}

/// The calling thread's default heap.
impl Entries for MiMalloc {
    #[inline(always)]
    unsafe fn malloc_small(&self, size: usize) -> *mut c_void {
        // mimalloc 3 takes the size in words, which for a constant size costs nothing to
        // compute here and saves mimalloc the rounding.
        // SAFETY: the caller keeps `size` within `SMALL_SIZE_MAX`, so `words` is within
        // `MI_SMALL_WSIZE_MAX`.
        #[cfg(not(feature = "v2"))]
        unsafe {
            let words = (size + core::mem::size_of::<usize>() - 1) / core::mem::size_of::<usize>();
            ffi::mi_wmalloc_small(words)
        }
        // SAFETY: the caller keeps `size` within `SMALL_SIZE_MAX`.
        #[cfg(feature = "v2")]
        unsafe {
            ffi::mi_malloc_small(size)
        }
    }
    #[inline(always)]
    fn malloc(&self, size: usize) -> *mut c_void {
        // SAFETY: `mi_malloc` accepts any size.
        unsafe { ffi::mi_malloc(size) }
    }
    #[inline(always)]
    fn zalloc(&self, size: usize) -> *mut c_void {
        // SAFETY: `mi_zalloc` accepts any size.
        unsafe { ffi::mi_zalloc(size) }
    }
    #[inline(always)]
    unsafe fn malloc_aligned(&self, size: usize, align: usize) -> *mut c_void {
        // SAFETY: the caller passes a power-of-two alignment.
        unsafe { ffi::mi_malloc_aligned(size, align) }
    }
    #[inline(always)]
    unsafe fn zalloc_aligned(&self, size: usize, align: usize) -> *mut c_void {
        // SAFETY: the caller passes a power-of-two alignment.
        unsafe { ffi::mi_zalloc_aligned(size, align) }
    }
    #[inline(always)]
    unsafe fn realloc(&self, p: *mut c_void, size: usize) -> *mut c_void {
        // SAFETY: the caller passes a live block.
        unsafe { ffi::mi_realloc(p, size) }
    }
    #[inline(always)]
    unsafe fn realloc_aligned(&self, p: *mut c_void, size: usize, align: usize) -> *mut c_void {
        // SAFETY: the caller passes a live block and a power-of-two alignment.
        unsafe { ffi::mi_realloc_aligned(p, size, align) }
    }
}
