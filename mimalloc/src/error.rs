//! The error of a fallible allocation.

use core::fmt;

/// An allocation (or the creation of a heap or an arena) that mimalloc could not satisfy: it is
/// out of memory, the request exceeds a memory budget, or the layout cannot be served at all.
///
/// ```
/// use core::alloc::Layout;
/// let heap = mimalloc::Heap::new();
/// let impossible = Layout::from_size_align(isize::MAX as usize - 4095, 4096).unwrap();
/// assert_eq!(heap.allocate(impossible), Err(mimalloc::AllocError));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AllocError;

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("mimalloc could not satisfy the allocation")
    }
}

#[cfg(feature = "std")]
impl std::error::Error for AllocError {}
