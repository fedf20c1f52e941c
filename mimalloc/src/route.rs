//! Which mimalloc function serves a request: every allocation decision of the crate, made once.
//!
//! `GlobalAlloc for MiMalloc`, [`Heap`](crate::Heap)'s methods and both `Allocator` impls
//! forward here. The decisions (size rounding for `size < align`, the `_small` fast paths,
//! inline zeroing, the `_aligned` variants) are written once, generic over [`Entries`]:
//! mimalloc's entry points for the calling thread's default heap (`mi_*`, implemented in
//! `alloc.rs` for [`MiMalloc`](crate::MiMalloc)) or for an owned heap (`mi_heap_*`, in
//! `heap.rs` for [`Heap`](crate::Heap)). This module names neither type: they depend on it,
//! not it on them. The paths are `#[inline(always)]`, so each caller compiles to the same few
//! instructions it would have if written by hand; only the rare move of a resized block into a
//! small page, off the hot path, is a function of its own. The paths for blocks above mimalloc's
//! small size go through the memory policy (`policy::large`): blocks of more than 64 KiB let it
//! look at the heap as it grows, a block of 2 MiB or more may switch the heap to huge pages
//! first, and is advised for them after if it lies outside the heap's advised memory; the small
//! paths never reach it.
//!
//! What the routing depends on in the C build is decided by mimalloc-sys's build plan and read
//! here as the cfgs it publishes, never re-derived from feature names or target facts: guard
//! pages (`cfg(mimalloc_guarded)`, [`GUARDED`]), the small free (`cfg(mimalloc_small_free)`,
//! `freed_small`) and the cap on requests near 2 GiB (`cfg(mimalloc_large_request_cap)`,
//! `beyond_largest`); the policy reads its own (`policy`). The one feature read here, `v2`,
//! picks the bindings' entry points.

use crate::policy;
use core::alloc::Layout;
use core::ffi::c_void;
use mimalloc_sys as ffi;

/// The alignment every mimalloc block has without asking: `MI_MAX_ALIGN_SIZE` in mimalloc's
/// `types.h`, the alignment of C's `max_align_t`. mimalloc rounds every size class of at least
/// 16 bytes to a multiple of 16 and starts every page's blocks 16-aligned, and smaller blocks
/// are aligned to their size rounded up to a power of two, on 64- and 32-bit targets alike
/// (`page-queue.c`, `MI_ALIGN2W`/`MI_ALIGN4W`). So a block of `size` bytes is aligned to
/// `min(16, size)` at least; the alignment sweep in `tests/tests/alignment.rs` checks it on
/// every target the suite runs on.
const MIN_ALIGN: usize = 16;

/// The largest size `mi_malloc_small` serves: `MI_SMALL_SIZE_MAX` in `mimalloc.h` (128 words;
/// bindgen cannot evaluate the `sizeof` in its definition).
const SMALL_SIZE_MAX: usize = ffi::MI_SMALL_WSIZE_MAX as usize * core::mem::size_of::<usize>();

/// Whether mimalloc is built with guard pages (`MI_GUARDED`): mimalloc-sys's build plan
/// decides it and publishes it as `cfg(mimalloc_guarded)`.
pub(crate) const GUARDED: bool = cfg!(mimalloc_guarded);

/// mimalloc's allocation entry points for one heap. Null means out of memory (or a request no
/// heap can satisfy); no function here unwinds.
pub(crate) trait Entries {
    /// `mi_malloc_small`.
    ///
    /// # Safety
    ///
    /// `size <= SMALL_SIZE_MAX`: mimalloc indexes its small-page table with it unchecked.
    unsafe fn malloc_small(&self, size: usize) -> *mut c_void;
    /// `mi_malloc`: any size.
    fn malloc(&self, size: usize) -> *mut c_void;
    /// `mi_zalloc`: any size.
    fn zalloc(&self, size: usize) -> *mut c_void;
    /// `mi_malloc_aligned`.
    ///
    /// # Safety
    ///
    /// `align` is a power of two.
    unsafe fn malloc_aligned(&self, size: usize, align: usize) -> *mut c_void;
    /// `mi_zalloc_aligned`.
    ///
    /// # Safety
    ///
    /// `align` is a power of two.
    unsafe fn zalloc_aligned(&self, size: usize, align: usize) -> *mut c_void;
    /// `mi_realloc`: on failure null, and the old block untouched.
    ///
    /// # Safety
    ///
    /// `p` is a live mimalloc block; after success only the result may be used.
    unsafe fn realloc(&self, p: *mut c_void, size: usize) -> *mut c_void;
    /// `mi_realloc_aligned`: as [`Entries::realloc`], keeping `align` if the block moves.
    ///
    /// # Safety
    ///
    /// As for [`Entries::realloc`], and `align` is a power of two.
    unsafe fn realloc_aligned(&self, p: *mut c_void, size: usize, align: usize) -> *mut c_void;
}

/// The size to ask the plain (unaligned) family for, or `None` when only the `_aligned` family
/// can satisfy `layout`. The rule is the standard library's `System` one (rust-lang/rust#45955,
/// #30170): plain blocks are aligned to `min(MIN_ALIGN, size)`, so a request of at least
/// `align` bytes is enough when `align <= MIN_ALIGN`; a hand-built `Layout(1, align 8)` is
/// served as 8 bytes instead of paying for `mi_malloc_aligned`.
///
/// With guard pages, mimalloc places a guarded block right before its guard page; with
/// `MIMALLOC_UNSAFE_GUARDED_PRECISE=1` (`MIMALLOC_GUARDED_PRECISE=1` with `v2`) at
/// `guard_page - size` exactly, which is aligned only to the largest power of two dividing
/// `size` (a 100-byte block ends up 4-aligned). So guarded builds round the size up to a
/// multiple of `align`, which is at most 15 bytes more.
#[inline(always)]
fn plain_size(layout: Layout) -> Option<usize> {
    let (size, align) = (layout.size(), layout.align());
    if align > MIN_ALIGN {
        None
    } else if GUARDED {
        // A `Layout`'s size rounded up to its alignment never overflows (a `Layout` invariant).
        Some((size + align - 1) & !(align - 1))
    } else if size < align {
        Some(align)
    } else {
        Some(size)
    }
}

/// Whether `layout` is beyond the largest block the vendored mimalloc can serve without
/// crashing: in the builds where mimalloc 3.6.0 faults on a request near 2 GiB where it should
/// return null (the bound and the fault: docs/known-issues.md; `tests/tests/upstream_bugs.rs`
/// keeps the canary). mimalloc-sys's
/// build plan says which builds those are, and why, and publishes it as
/// `cfg(mimalloc_large_request_cap)`: mimalloc 3 on 32-bit targets, but for `secure` builds
/// (`MI_SECURE`), which serve such a block, and it can be written through. There such requests
/// fail here instead, with the alignment's over-allocation counted in; elsewhere the test is
/// compiled out.
#[inline(always)]
fn beyond_largest(layout: Layout) -> bool {
    const LARGEST: usize = (1 << 31) - (4 << 20);
    cfg!(mimalloc_large_request_cap) && layout.size() > LARGEST.saturating_sub(layout.align())
}

/// A block for `layout` from `heap`, or null.
#[inline(always)]
pub(crate) fn alloc(heap: &impl Entries, layout: Layout) -> *mut u8 {
    let p = match plain_size(layout) {
        // SAFETY: the size is at most `SMALL_SIZE_MAX`.
        Some(size) if size <= SMALL_SIZE_MAX => unsafe { heap.malloc_small(size) },
        _ if beyond_largest(layout) => core::ptr::null_mut(),
        Some(size) => policy::large(size, || heap.malloc(size)),
        // SAFETY: `align` is a power of two (a `Layout` invariant).
        None => policy::large(layout.size(), || unsafe {
            heap.malloc_aligned(layout.size(), layout.align())
        }),
    };
    p.cast()
}

/// A zeroed block for `layout` from `heap`, or null. Small blocks are cleared inline rather than
/// by `mi_zalloc_small` (measured: BENCHMARKS.md#instructions-per-small-allocatefree-pair).
#[inline(always)]
pub(crate) fn alloc_zeroed(heap: &impl Entries, layout: Layout) -> *mut u8 {
    let p = match plain_size(layout) {
        Some(size) if size <= SMALL_SIZE_MAX => {
            // SAFETY: the size is at most `SMALL_SIZE_MAX`.
            let p = unsafe { heap.malloc_small(size) };
            if !p.is_null() {
                // SAFETY: `p` is a fresh block of at least `size` writable bytes.
                unsafe { zero(p.cast::<u8>(), size) };
            }
            p
        }
        _ if beyond_largest(layout) => core::ptr::null_mut(),
        Some(size) => policy::large(size, || heap.zalloc(size)),
        // SAFETY: `align` is a power of two (a `Layout` invariant).
        None => policy::large(layout.size(), || unsafe {
            heap.zalloc_aligned(layout.size(), layout.align())
        }),
    };
    p.cast()
}

/// Resizes the block at `ptr`, allocated with `old`, to `new` (moving it into `heap` if it
/// moves); null on failure, with the old block untouched.
///
/// # Safety
///
/// `ptr` is a live mimalloc block allocated with `old`; after success only the result may be
/// used.
#[inline(always)]
pub(crate) unsafe fn realloc(
    heap: &impl Entries,
    ptr: *mut u8,
    old: Layout,
    new: Layout,
) -> *mut u8 {
    // Into a layout that `free` hands to `mi_free_small_nonnull` from one it does not: mimalloc
    // could shrink in place a block of a larger page (an over-aligned one whose usable rest is
    // small), which must not reach the small free; so the block moves. Where the build has no
    // small free, `freed_small` is constant false and the move is compiled out.
    if freed_small(new) && !freed_small(old) {
        // SAFETY: forwarded contract.
        return unsafe { move_block(heap, ptr, old, new) };
    }
    if beyond_largest(new) {
        return core::ptr::null_mut();
    }
    let p = ptr.cast::<c_void>();
    let q = policy::large(new.size(), || match plain_size(new) {
        // SAFETY: `p` is live (caller contract); a plain block of `size` bytes is aligned to
        // `new.align()` (see `plain_size`), and so is the old block if it stays in place.
        Some(size) => unsafe { heap.realloc(p, size) },
        // SAFETY: as above; `align` is a power of two (a `Layout` invariant).
        None => unsafe { heap.realloc_aligned(p, new.size(), new.align()) },
    });
    q.cast()
}

/// Whether a block allocated (or resized) with `layout` lies in one of mimalloc 3's small pages
/// (blocks up to 10 KiB), where `mi_free_small_nonnull` finds its page without the general
/// lookup: a plain layout of at most `SMALL_SIZE_MAX` bytes, served by `mi_malloc_small`. (An
/// aligned layout of that size would qualify too while its alignment is at most its size, but
/// the extra test costs more on every free than it saves on the rare aligned one.) [`realloc`]
/// never leaves a block of another page under such a layout where [`freed_small`] holds.
#[inline(always)]
fn in_small_page(layout: Layout) -> bool {
    layout.size() <= SMALL_SIZE_MAX && layout.align() <= MIN_ALIGN
}

/// Whether [`free`] hands a block of `layout` to mimalloc 3's `mi_free_small_nonnull`, which
/// skips the general page lookup (BENCHMARKS.md#instructions-per-small-allocatefree-pair): the one
/// decision both [`free`] and [`realloc`] follow. Only for layouts [`in_small_page`], and only
/// where mimalloc-sys's build plan publishes `cfg(mimalloc_small_free)`: where mimalloc 3 keeps
/// small pages' metadata at aligned addresses (`MI_PAGE_META_SMALL_IS_ALIGNED`: not with
/// page-map free, `secure`, `guarded` or `valgrind`), and not in a debug build, whose `mi_free`
/// reports a pointer mimalloc never returned, where the small variant takes the page from the
/// address unchecked and faults on it (`tests/tests/hostile.rs`). Never with mimalloc 2, whose
/// `mi_free_small` is `mi_free` under another name. Where it never holds, [`realloc`] moves no
/// block either.
#[inline(always)]
fn freed_small(layout: Layout) -> bool {
    cfg!(mimalloc_small_free) && in_small_page(layout)
}

/// Frees a block of any heap, from any thread.
///
/// # Safety
///
/// `ptr` is a live mimalloc block allocated with `layout`, not used afterwards.
#[inline(always)]
pub(crate) unsafe fn free(ptr: *mut u8, layout: Layout) {
    let p = ptr.cast::<c_void>();
    if freed_small(layout) {
        // SAFETY: a live (so non-null) block in a small page (`in_small_page`) of a build whose
        // small pages keep their metadata at aligned addresses (`freed_small`).
        return unsafe { free_small(p) };
    }
    // SAFETY: the caller passes a live mimalloc block; `mi_free` finds its page (and the start
    // of an over-aligned block) itself.
    unsafe { ffi::mi_free(p) }
}

/// `mi_free_small_nonnull`, which takes the page from the block's address: the free of the
/// blocks [`freed_small`] selects. The bindings of mimalloc 2 have none, and never need it
/// (their build never publishes `cfg(mimalloc_small_free)`): there it is `mi_free`.
///
/// # Safety
///
/// `p` is a live block in a small page of a build where [`freed_small`] can hold.
#[inline(always)]
unsafe fn free_small(p: *mut c_void) {
    // SAFETY: forwarded contract, which is what `mi_free_small_nonnull` requires.
    #[cfg(not(feature = "v2"))]
    unsafe {
        ffi::mi_free_small_nonnull(p)
    }
    // SAFETY: a live block, which `mi_free` accepts from any page.
    #[cfg(feature = "v2")]
    unsafe {
        ffi::mi_free(p)
    }
}

/// Moves the block at `ptr` into a fresh block for `new`: allocates, copies, frees. Off the hot
/// path, so not inlined.
///
/// # Safety
///
/// `ptr` is a live mimalloc block allocated with `old`. After success only the result may be
/// used.
#[inline(never)]
unsafe fn move_block(heap: &impl Entries, ptr: *mut u8, old: Layout, new: Layout) -> *mut u8 {
    let q = alloc(heap, new);
    if !q.is_null() {
        // SAFETY: `ptr` and `q` are distinct live blocks holding at least the bytes copied;
        // the old block is freed once, after the copy, and only on success.
        unsafe {
            core::ptr::copy_nonoverlapping(ptr, q, old.size().min(new.size()));
            free(ptr, old);
        }
    }
    q
}

/// Zeroes `size` bytes at `p`, and not one more: `secure` and `debug` builds check that the
/// bytes between the requested size and the block's end are untouched. Up to 64 bytes with two
/// overlapping stores of the largest width that fits, inline, as `memset` implementations do
/// it: for the sizes most zeroed allocations have, that costs fewer instructions than a call to
/// `memset` or mimalloc's own zeroing (BENCHMARKS.md#instructions-per-small-allocatefree-pair).
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
            p.add(size - width)
                .cast::<T>()
                .write_unaligned(T::default());
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
