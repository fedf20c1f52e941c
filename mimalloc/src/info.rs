//! Questions about mimalloc itself and about single blocks.

use core::ffi::c_void;
use core::fmt;
use mimalloc_sys as ffi;

/// The version of the mimalloc library linked into the program.
///
/// ```
/// let v = mimalloc::version();
/// assert!(v.major == 2 || v.major == 3);
/// println!("running on mimalloc {v}"); // e.g. "3.6.0"
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// 2 or 3.
    pub major: u32,
    /// Minor release.
    pub minor: u32,
    /// Patch release.
    pub patch: u32,
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The runtime version of mimalloc (`mi_version`), e.g. 3.6.0.
///
/// This is the library that was linked, which the build always takes from the same vendored
/// tree as the headers; see [`Version`] for an example.
pub fn version() -> Version {
    // SAFETY: `mi_version` has no preconditions.
    let v = unsafe { ffi::mi_version() } as u32;
    Version {
        major: v / 10_000,
        minor: v / 100 % 100,
        patch: v % 100,
    }
}

/// The number of bytes usable in the block at `ptr`, at least the size it was allocated with
/// (`mi_usable_size`). Returns 0 for a null pointer.
///
/// ```
/// use std::alloc::{GlobalAlloc, Layout};
/// let layout = Layout::from_size_align(100, 8).unwrap();
/// // SAFETY: the layout has a non-zero size; `p` is live until the dealloc.
/// unsafe {
///     let p = mimalloc::MiMalloc.alloc(layout);
///     assert!(mimalloc::usable_size(p) >= 100);
///     mimalloc::MiMalloc.dealloc(p, layout);
/// }
/// ```
///
/// # Safety
///
/// `ptr` must be null or point into a live block allocated by mimalloc (through [`MiMalloc`],
/// a heap of this crate, or the C API). mimalloc reads the block's page metadata; for a pointer
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
/// assert!(!mimalloc::is_in_heap_region(&on_the_stack));
/// ```
pub fn is_in_heap_region<T: ?Sized>(ptr: *const T) -> bool {
    // SAFETY: mimalloc only looks `ptr` up in its page (v3) or segment (v2) map.
    unsafe { ffi::mi_is_in_heap_region(ptr.cast::<c_void>()) }
}

/// The size mimalloc would actually give a request of `size` bytes: its size class
/// (`mi_good_size`). Asking for it up front wastes nothing.
///
/// ```
/// let good = mimalloc::good_size(100);
/// assert!(good >= 100);
/// ```
pub fn good_size(size: usize) -> usize {
    // SAFETY: `mi_good_size` has no preconditions.
    unsafe { ffi::mi_good_size(size) }
}

/// Returns memory that is no longer used to the OS where mimalloc can (`mi_collect`); `force`
/// also collects what other threads freed and what is only lazily reclaimed. Useful after a
/// phase that freed a large working set, or before measuring.
///
/// ```
/// drop(vec![0u8; 10 << 20]);
/// mimalloc::collect(true);
/// ```
pub fn collect(force: bool) {
    // SAFETY: `mi_collect` has no preconditions.
    unsafe { ffi::mi_collect(force) }
}
