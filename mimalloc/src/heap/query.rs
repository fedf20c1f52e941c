//! Questions about single blocks and the thread's heap, asked of mimalloc directly: they
//! work on any block mimalloc allocated, through [`MiMalloc`](crate::MiMalloc), a [`Heap`](super::Heap) or
//! the C API.

use core::ffi::c_void;
use mimalloc_sys as ffi;

/// The number of bytes usable in the block at `ptr`, at least the size it was allocated with
/// (`mi_usable_size`). Returns 0 for a null pointer.
///
/// ```
/// use std::alloc::{GlobalAlloc, Layout};
/// let layout = Layout::from_size_align(100, 8).unwrap();
/// // SAFETY: the layout has a non-zero size; `p` is live until the dealloc.
/// unsafe {
///     let p = mimalloc::MiMalloc.alloc(layout);
///     assert!(mimalloc::heap::usable_size(p) >= 100);
///     mimalloc::MiMalloc.dealloc(p, layout);
/// }
/// ```
///
/// # Safety
///
/// `ptr` must be null or point into a live block allocated by mimalloc (through [`MiMalloc`],
/// a [`Heap`](super::Heap), or the C API). mimalloc reads the block's page metadata; for a pointer
/// it does not own the result is meaningless and the read may fault.
///
/// [`MiMalloc`]: crate::MiMalloc
pub unsafe fn usable_size<T: ?Sized>(ptr: *const T) -> usize {
    // SAFETY: the caller guarantees `ptr` is null or inside a live mimalloc block.
    unsafe { ffi::mi_usable_size(ptr.cast::<c_void>()) }
}

/// Whether `ptr` points into memory that mimalloc manages (`mi_is_in_heap_region`).
///
/// It consults mimalloc's map of the address space and never dereferences `ptr`, so any pointer
/// may be asked about. A `true` says the address lies in mimalloc's memory, not that a live
/// block starts there.
///
/// ```
/// let on_the_stack = 0u8;
/// assert!(!mimalloc::heap::is_in_heap_region(&on_the_stack));
/// ```
pub fn is_in_heap_region<T: ?Sized>(ptr: *const T) -> bool {
    // SAFETY: mimalloc only looks `ptr` up in its page (v3) or segment (v2) map.
    unsafe { ffi::mi_is_in_heap_region(ptr.cast::<c_void>()) }
}

/// The size mimalloc would actually give a request of `size` bytes: its size class
/// (`mi_good_size`). Asking for it up front wastes nothing.
///
/// ```
/// let good = mimalloc::heap::good_size(100);
/// assert!(good >= 100);
/// ```
pub fn good_size(size: usize) -> usize {
    // SAFETY: `mi_good_size` has no preconditions.
    unsafe { ffi::mi_good_size(size) }
}

/// Returns memory that is no longer used to the OS where mimalloc can (`mi_collect`), from the
/// calling thread's default heap (a [`Heap`](super::Heap) has [`Heap::collect`](super::Heap::collect)); `force`
/// also collects what other threads freed and what is only lazily reclaimed. Useful after a
/// phase that freed a large working set, or before measuring.
///
/// ```
/// drop(vec![0u8; 10 << 20]);
/// mimalloc::heap::collect(true);
/// ```
pub fn collect(force: bool) {
    // SAFETY: `mi_collect` has no preconditions.
    unsafe { ffi::mi_collect(force) }
}
