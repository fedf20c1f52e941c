//! `MiMalloc`: mimalloc behind Rust's `GlobalAlloc`.

use core::alloc::{GlobalAlloc, Layout};
use core::ffi::c_void;
use mimalloc_sys as ffi;

/// The alignment every mimalloc block has without asking: `MI_MAX_ALIGN_SIZE` in mimalloc's
/// `types.h`, the alignment of C's `max_align_t`. mimalloc rounds every size class of at least
/// 16 bytes to a multiple of 16 and starts every page's blocks 16-aligned, and smaller blocks
/// are aligned to their size rounded up to a power of two, on 64- and 32-bit targets alike
/// (`page-queue.c`, `MI_ALIGN2W`/`MI_ALIGN4W`). So a block of `size` bytes is aligned to
/// `min(16, size)` at least, which is what [`is_natural`] relies on; the alignment sweep in
/// `tests/tests/alignment.rs` checks it on every target the suite runs on.
pub(crate) const MIN_ALIGN: usize = 16;

/// Whether a block from the plain `mi_malloc` family already satisfies `align`, so that the
/// common case never pays for alignment handling (the same rule as the standard library's
/// `System`, which cites rust-lang/rust#45955 and #30170 for it): the alignment is at most
/// mimalloc's natural one *and* at most the size (a 4-byte block is not 16-aligned).
#[inline(always)]
pub(crate) const fn is_natural(align: usize, size: usize) -> bool {
    align <= MIN_ALIGN && align <= size
}

/// The largest size `mi_malloc_small` and `mi_zalloc_small` serve: `MI_SMALL_SIZE_MAX` in
/// `mimalloc.h` (128 words; bindgen cannot evaluate the `sizeof` in its definition).
pub(crate) const SMALL_SIZE_MAX: usize =
    ffi::MI_SMALL_WSIZE_MAX as usize * core::mem::size_of::<usize>();

/// The size to ask the plain `mi_malloc` family for when `align <= MIN_ALIGN`: at least
/// `align`, because a block of at least `align` bytes is aligned to `align` (see [`MIN_ALIGN`]),
/// so that a hand-built layout with `size < align` (1 byte at alignment 8, say) also stays on
/// the plain path instead of paying for `mi_malloc_aligned`.
#[inline(always)]
const fn natural_size(size: usize, align: usize) -> usize {
    if size < align { align } else { size }
}

/// Zeroes `size` bytes at `p`, and not one more: `secure` and `debug` builds check that the
/// bytes between the requested size and the block's end are untouched. Up to 64 bytes with two
/// overlapping stores of the largest width that fits, inline, as `memset` implementations do
/// it; a call to `memset` costs more than the stores for the sizes most zeroed allocations
/// have (callgrind, per zeroed 32-byte allocate+free pair: 76.1 instructions with `memset`,
/// 72.1 with these stores, 71.1 for a C loop of `mi_zalloc` + `mi_free`; BENCHMARKS.md).
///
/// # Safety
///
/// `p` must be valid for writes of `size` bytes.
#[inline(always)]
unsafe fn zero(p: *mut u8, size: usize) {
    /// Two stores of `T` (zero), at `p` and ending at `p + size`; `size` is within
    /// `size_of::<T>()..=2 * size_of::<T>()`.
    ///
    /// # Safety
    ///
    /// `p` must be valid for writes of `size` bytes.
    #[inline(always)]
    unsafe fn two<T: Default>(p: *mut u8, size: usize) {
        let width = core::mem::size_of::<T>();
        debug_assert!(size >= width && size <= 2 * width);
        // SAFETY: both stores lie within `p..p + size` (the bounds above); unaligned stores
        // need no alignment.
        unsafe {
            p.cast::<T>().write_unaligned(T::default());
            p.add(size - width).cast::<T>().write_unaligned(T::default());
        }
    }
    // Largest first: the common sizes take the fewest tests.
    // SAFETY: each branch's stores cover exactly `0..size` (see `two`).
    unsafe {
        if size > 64 {
            core::ptr::write_bytes(p, 0, size)
        } else if size >= 32 {
            two::<[u128; 2]>(p, size)
        } else if size >= 16 {
            two::<u128>(p, size)
        } else if size >= 8 {
            two::<u64>(p, size)
        } else if size >= 4 {
            two::<u32>(p, size)
        } else if size >= 2 {
            two::<u16>(p, size)
        } else if size == 1 {
            p.write(0)
        }
    }
}

/// mimalloc as a Rust allocator.
///
/// Every allocation of a program that installs it (with [`assign_global!`](crate::assign_global)
/// or `#[global_allocator]`) is served by the vendored mimalloc. It is a zero-sized handle: all
/// state lives in mimalloc's thread-local heaps.
///
/// Each `GlobalAlloc` method is one call into mimalloc. When the layout's alignment is
/// naturally satisfied: `mi_malloc_small` for blocks of at most `MI_SMALL_SIZE_MAX` bytes (1 KiB
/// on 64-bit targets: mimalloc's inlined fast path, without the size test and call `mi_malloc`
/// makes; zeroed ones are cleared inline up to 64 bytes, with `memset` above), else
/// `mi_malloc`, `mi_zalloc`, `mi_realloc`;
/// otherwise their `_aligned` variants. Every valid [`Layout`] is accepted: a request mimalloc
/// cannot satisfy (a size near
/// `isize::MAX`, an alignment larger than the address space allows) returns null, which the
/// standard collections turn into `handle_alloc_error` or a `try_reserve` error.
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

// SAFETY: mimalloc returns blocks that are either null or valid for reads and writes of the
// requested size at the requested alignment (the `_aligned` variants are used whenever the
// natural alignment does not suffice, see `is_natural`), that do not overlap any other live
// block, and that stay valid until freed; `mi_free` and `mi_realloc` accept any pointer the
// functions above returned, from any thread. mimalloc never unwinds.
unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let (size, align) = (layout.size(), layout.align());
        let p = if align <= MIN_ALIGN {
            let size = natural_size(size, align);
            if size <= SMALL_SIZE_MAX {
                // SAFETY: `mi_malloc_small` accepts any size up to `MI_SMALL_SIZE_MAX`.
                unsafe { ffi::mi_malloc_small(size) }
            } else {
                // SAFETY: `mi_malloc` accepts any size; null is returned on failure.
                unsafe { ffi::mi_malloc(size) }
            }
        } else {
            // SAFETY: `align` is a power of two (a `Layout` invariant), as mimalloc requires.
            unsafe { ffi::mi_malloc_aligned(size, align) }
        };
        p.cast()
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let (size, align) = (layout.size(), layout.align());
        let p = if align <= MIN_ALIGN {
            let size = natural_size(size, align);
            if size <= SMALL_SIZE_MAX {
                // Not `mi_zalloc_small`: mimalloc zeroes with `rep stosb` on CPUs that report
                // fast short `rep movsb`, which took 26 ns for 32 bytes on an AMD EPYC here
                // against 1 ns for the platform's `memset` (32 vs 6 ns per zeroed pair).
                // SAFETY: as in `alloc`.
                let p = unsafe { ffi::mi_malloc_small(size) };
                if !p.is_null() {
                    // SAFETY: `p` is a fresh block of at least `size` writable bytes.
                    unsafe { zero(p.cast::<u8>(), size) };
                }
                p
            } else {
                // SAFETY: as in `alloc`.
                unsafe { ffi::mi_zalloc(size) }
            }
        } else {
            // SAFETY: as in `alloc`, `align` is a power of two.
            unsafe { ffi::mi_zalloc_aligned(size, align) }
        };
        p.cast()
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: the caller guarantees `ptr` is a live block from this allocator, i.e. from
        // mimalloc; `mi_free` finds its page (and the start of an over-aligned block) itself.
        unsafe { ffi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if GUARDED {
            // SAFETY: the trait's contract: `ptr` is a live block of `layout.size()` bytes, and
            // `new_size` rounded up to `layout.align()` does not overflow `isize`, so the new
            // layout is valid.
            return unsafe {
                let new = Layout::from_size_align_unchecked(new_size, layout.align());
                realloc_by_copy(ptr, layout.size(), new, |new| self.alloc(new))
            };
        }
        let align = layout.align();
        let p = if is_natural(align, new_size) {
            // SAFETY: `ptr` is a live mimalloc block (caller contract); a block of `new_size`
            // bytes from `mi_realloc` is naturally aligned to `align`. On failure null is
            // returned and the old block is left untouched.
            unsafe { ffi::mi_realloc(ptr.cast::<c_void>(), new_size) }
        } else {
            // SAFETY: as above; `mi_realloc_aligned` keeps `align` (a power of two) if it moves.
            unsafe { ffi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, align) }
        };
        p.cast()
    }
}

/// Whether mimalloc is built with guard pages (the `guarded` feature).
pub(crate) const GUARDED: bool = cfg!(feature = "guarded");

/// Resizes by allocating, copying and freeing, never through mimalloc's realloc. With guard
/// pages (`guarded`), mimalloc 3.3.2 and 2.3.2 copy the usable size of the block that holds a
/// guarded object, which runs past the object into its guard page and faults; here the
/// object's size is known, so only it is copied. Growth is never in place then, which a
/// hardening build can afford; a shrink by at most half keeps the block, as mimalloc does.
///
/// # Safety
///
/// `ptr` must be a live mimalloc block of at least `old_size` bytes, and `alloc` must return a
/// block for its layout or null. After success only the result may be used.
pub(crate) unsafe fn realloc_by_copy(
    ptr: *mut u8,
    old_size: usize,
    new: Layout,
    alloc: impl FnOnce(Layout) -> *mut u8,
) -> *mut u8 {
    if new.size() <= old_size && new.size() >= old_size / 2 && ptr as usize % new.align() == 0 {
        return ptr;
    }
    let q = alloc(new);
    if !q.is_null() {
        // SAFETY: `ptr` and `q` are distinct live blocks holding at least the bytes copied;
        // the old block is freed once, after the copy, and only on success.
        unsafe {
            core::ptr::copy_nonoverlapping(ptr, q, old_size.min(new.size()));
            ffi::mi_free(ptr.cast::<c_void>());
        }
    }
    q
}
