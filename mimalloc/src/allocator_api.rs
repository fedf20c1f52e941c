//! The `Allocator` traits (allocator-api2 0.2 on stable, `core::alloc` on nightly) for
//! `MiMalloc` and `&Heap`, so collections can allocate in mimalloc or in a chosen heap.
//!
//! Both traits have the same contract; one macro implements them from the three primitives of
//! `RawAllocator`. Zero-sized layouts get a real minimal block from mimalloc (which every
//! method then treats like any other block), so no dangling-pointer special case is needed.

use crate::alloc::{is_natural, realloc_by_copy, GUARDED};
use crate::{Heap, MiMalloc};
use core::alloc::Layout;
use core::ffi::c_void;
use core::ptr::NonNull;
use mimalloc_sys as ffi;

/// What an allocator needs from mimalloc.
pub(crate) trait RawAllocator {
    /// A block for `layout` (zeroed if asked), or null.
    fn raw_alloc(&self, layout: Layout, zeroed: bool) -> *mut u8;

    /// Resizes the block at `ptr`, of `old_size` bytes, to `new`; null on failure, with the
    /// old block untouched.
    ///
    /// # Safety
    ///
    /// `ptr` must be a live mimalloc block of at least `old_size` bytes; after success only the
    /// result may be used.
    unsafe fn raw_realloc(&self, ptr: *mut u8, old_size: usize, new: Layout) -> *mut u8;
}

impl RawAllocator for MiMalloc {
    #[inline]
    fn raw_alloc(&self, layout: Layout, zeroed: bool) -> *mut u8 {
        let (size, align) = (layout.size(), layout.align());
        // SAFETY: every mimalloc allocation function accepts any size and a power-of-two
        // alignment, and returns null on failure.
        let p = unsafe {
            match (is_natural(align, size), zeroed) {
                (true, false) => ffi::mi_malloc(size),
                (true, true) => ffi::mi_zalloc(size),
                (false, false) => ffi::mi_malloc_aligned(size, align),
                (false, true) => ffi::mi_zalloc_aligned(size, align),
            }
        };
        p.cast()
    }

    #[inline]
    unsafe fn raw_realloc(&self, ptr: *mut u8, old_size: usize, new: Layout) -> *mut u8 {
        if GUARDED {
            // SAFETY: forwarded contract; `raw_alloc` returns a block for `new` or null.
            return unsafe { realloc_by_copy(ptr, old_size, new, |layout| self.raw_alloc(layout, false)) };
        }
        let (p, size, align) = (ptr.cast::<c_void>(), new.size(), new.align());
        // SAFETY: `p` is a live mimalloc block (caller contract); plain blocks of `size` bytes
        // are naturally aligned to `align` when `is_natural` says so.
        let q = unsafe {
            if is_natural(align, size) {
                ffi::mi_realloc(p, size)
            } else {
                ffi::mi_realloc_aligned(p, size, align)
            }
        };
        q.cast()
    }
}

impl RawAllocator for Heap {
    #[inline]
    fn raw_alloc(&self, layout: Layout, zeroed: bool) -> *mut u8 {
        let result = if zeroed {
            self.allocate_zeroed(layout)
        } else {
            self.allocate(layout)
        };
        result.map_or(core::ptr::null_mut(), NonNull::as_ptr)
    }

    #[inline]
    unsafe fn raw_realloc(&self, ptr: *mut u8, old_size: usize, new: Layout) -> *mut u8 {
        if GUARDED {
            // SAFETY: forwarded contract; `raw_alloc` returns a block of this heap for `new` or
            // null.
            return unsafe { realloc_by_copy(ptr, old_size, new, |layout| self.raw_alloc(layout, false)) };
        }
        let (p, size, align) = (ptr.cast::<c_void>(), new.size(), new.align());
        // SAFETY: as for `MiMalloc`; the heap is live for `&self`, and a moved block lands in it.
        let q = unsafe {
            if is_natural(align, size) {
                ffi::mi_heap_realloc(self.as_ptr(), p, size)
            } else {
                ffi::mi_heap_realloc_aligned(self.as_ptr(), p, size, align)
            }
        };
        q.cast()
    }
}

impl RawAllocator for &Heap {
    #[inline]
    fn raw_alloc(&self, layout: Layout, zeroed: bool) -> *mut u8 {
        (**self).raw_alloc(layout, zeroed)
    }

    #[inline]
    unsafe fn raw_realloc(&self, ptr: *mut u8, old_size: usize, new: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { (**self).raw_realloc(ptr, old_size, new) }
    }
}

macro_rules! impl_allocator {
    ($allocator:path, $alloc_error:path, $ty:ty) => {
        // SAFETY: blocks are valid for their layout until deallocated, never overlap, and may
        // be used through any copy of the allocator (every mimalloc block can be freed or
        // resized through any heap); `grow`/`shrink` keep the common prefix and leave the old
        // block untouched on failure; `deallocate` accepts every block these methods returned.
        unsafe impl $allocator for $ty {
            #[inline]
            fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, $alloc_error> {
                let p = RawAllocator::raw_alloc(self, layout, false);
                slice(p, layout.size()).ok_or($alloc_error)
            }

            #[inline]
            fn allocate_zeroed(&self, layout: Layout) -> Result<NonNull<[u8]>, $alloc_error> {
                let p = RawAllocator::raw_alloc(self, layout, true);
                slice(p, layout.size()).ok_or($alloc_error)
            }

            #[inline]
            unsafe fn deallocate(&self, ptr: NonNull<u8>, _layout: Layout) {
                // SAFETY: the trait's contract: `ptr` is a live block of this allocator.
                unsafe { ffi::mi_free(ptr.as_ptr().cast::<c_void>()) }
            }

            #[inline]
            unsafe fn grow(&self, ptr: NonNull<u8>, old: Layout, new: Layout) -> Result<NonNull<[u8]>, $alloc_error> {
                debug_assert!(new.size() >= old.size(), "grow to a smaller size");
                // SAFETY: `ptr` is a live block of this allocator (trait contract).
                let p = unsafe { RawAllocator::raw_realloc(self, ptr.as_ptr(), old.size(), new) };
                slice(p, new.size()).ok_or($alloc_error)
            }

            #[inline]
            unsafe fn grow_zeroed(&self, ptr: NonNull<u8>, old: Layout, new: Layout) -> Result<NonNull<[u8]>, $alloc_error> {
                // SAFETY: forwarded trait contract.
                let block = unsafe { self.grow(ptr, old, new)? };
                // SAFETY: the new block holds `new.size() >= old.size()` bytes; those past the
                // old size are not initialised by a realloc, in place or not.
                unsafe { block.cast::<u8>().as_ptr().add(old.size()).write_bytes(0, new.size() - old.size()) };
                Ok(block)
            }

            #[inline]
            unsafe fn shrink(&self, ptr: NonNull<u8>, old: Layout, new: Layout) -> Result<NonNull<[u8]>, $alloc_error> {
                debug_assert!(new.size() <= old.size(), "shrink to a larger size");
                // SAFETY: as in `grow`; mimalloc keeps the block in place when it can.
                let p = unsafe { RawAllocator::raw_realloc(self, ptr.as_ptr(), old.size(), new) };
                slice(p, new.size()).ok_or($alloc_error)
            }
        }
    };
}

/// `p` as the block slice the traits return (`len` is the requested size), or `None` if null.
#[inline(always)]
fn slice(p: *mut u8, len: usize) -> Option<NonNull<[u8]>> {
    NonNull::new(core::ptr::slice_from_raw_parts_mut(p, len))
}

#[cfg(feature = "allocator-api2")]
mod api2 {
    use super::*;
    use allocator_api2::alloc::{AllocError, Allocator};

    impl_allocator!(Allocator, AllocError, MiMalloc);
    impl_allocator!(Allocator, AllocError, &Heap);
}

#[cfg(feature = "nightly")]
mod nightly {
    use super::*;
    use core::alloc::{AllocError, Allocator};

    impl_allocator!(Allocator, AllocError, MiMalloc);
    impl_allocator!(Allocator, AllocError, &Heap);
}
