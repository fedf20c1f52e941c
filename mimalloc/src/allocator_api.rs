//! The `Allocator` traits (allocator-api2 0.2 on stable, `core::alloc` on nightly) for
//! `MiMalloc` and `&Heap`, so collections can allocate in mimalloc or in a chosen heap.
//!
//! Both traits have the same contract; one macro implements them by forwarding to `route`, as
//! `GlobalAlloc` and `Heap` do. Zero-sized layouts get a real minimal block from mimalloc (which
//! every method then treats like any other block), so no dangling-pointer special case is
//! needed.

use crate::route::{self, Entries};
use crate::{Heap, MiMalloc};
use core::alloc::Layout;
use core::ptr::NonNull;

/// The mimalloc entry points behind an allocator value: `MiMalloc` is the default heap, `&Heap`
/// the heap it borrows.
trait Backed {
    type Heap: Entries;
    fn entries(&self) -> &Self::Heap;
}

impl Backed for MiMalloc {
    type Heap = MiMalloc;
    #[inline(always)]
    fn entries(&self) -> &MiMalloc {
        self
    }
}

impl Backed for &Heap {
    type Heap = Heap;
    #[inline(always)]
    fn entries(&self) -> &Heap {
        self
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
                slice(route::alloc(self.entries(), layout), layout.size()).ok_or($alloc_error)
            }

            #[inline]
            fn allocate_zeroed(&self, layout: Layout) -> Result<NonNull<[u8]>, $alloc_error> {
                let p = route::alloc_zeroed(self.entries(), layout);
                slice(p, layout.size()).ok_or($alloc_error)
            }

            #[inline]
            unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
                // SAFETY: the trait's contract: `ptr` is a live block of this allocator,
                // allocated with `layout`.
                unsafe { route::free(ptr.as_ptr(), layout) }
            }

            #[inline]
            unsafe fn grow(
                &self,
                ptr: NonNull<u8>,
                old: Layout,
                new: Layout,
            ) -> Result<NonNull<[u8]>, $alloc_error> {
                debug_assert!(new.size() >= old.size(), "grow to a smaller size");
                // SAFETY: `ptr` is a live block of this allocator, allocated with `old` (trait
                // contract).
                let p = unsafe { route::realloc(self.entries(), ptr.as_ptr(), old, new) };
                slice(p, new.size()).ok_or($alloc_error)
            }

            #[inline]
            unsafe fn grow_zeroed(
                &self,
                ptr: NonNull<u8>,
                old: Layout,
                new: Layout,
            ) -> Result<NonNull<[u8]>, $alloc_error> {
                // SAFETY: forwarded trait contract.
                let block = unsafe { self.grow(ptr, old, new)? };
                // SAFETY: the new block holds `new.size() >= old.size()` bytes; those past the
                // old size are not initialised by a realloc, in place or not.
                unsafe {
                    block
                        .cast::<u8>()
                        .as_ptr()
                        .add(old.size())
                        .write_bytes(0, new.size() - old.size())
                };
                Ok(block)
            }

            #[inline]
            unsafe fn shrink(
                &self,
                ptr: NonNull<u8>,
                old: Layout,
                new: Layout,
            ) -> Result<NonNull<[u8]>, $alloc_error> {
                debug_assert!(new.size() <= old.size(), "shrink to a larger size");
                // SAFETY: as in `grow`; mimalloc keeps the block in place when it can.
                let p = unsafe { route::realloc(self.entries(), ptr.as_ptr(), old, new) };
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
