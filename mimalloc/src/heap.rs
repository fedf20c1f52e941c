//! `Heap`: an owned mimalloc heap, usable as an allocator for collections; and the questions
//! any heap answers about its blocks (`usable_size`, `good_size`, `is_in_heap_region`), with
//! `collect` for the thread's default heap.
//!
//! ```
//! use mimalloc::Heap;
//!
//! let heap = Heap::new();
//! let block = heap.allocate(core::alloc::Layout::new::<[u8; 100]>()).unwrap();
//! assert!(heap.contains(block.as_ptr()));
//! assert!(mimalloc::heap::is_in_heap_region(block.as_ptr()));
//! // SAFETY: `block` is a live block of `heap`.
//! assert!(unsafe { mimalloc::heap::usable_size(block.as_ptr()) } >= 100);
//! assert!(mimalloc::heap::good_size(100) >= 100);
//! drop(heap); // frees `block` with the heap
//! mimalloc::heap::collect(false);
//! ```

mod query;

pub use self::query::{collect, good_size, is_in_heap_region, usable_size};

use crate::route::{self, Entries, GUARDED};
use crate::{AllocError, Arena};
use core::alloc::Layout;
use core::ffi::c_void;
use core::fmt;
use core::marker::PhantomData;
use core::ptr::NonNull;
use mimalloc_sys as ffi;

/// An owned mimalloc heap (`mi_heap_new`): a separate set of pages that allocations can be
/// directed to, and that can be freed all at once.
///
/// - Dropping a `Heap` destroys it (`mi_heap_destroy`): every block still allocated in it is
///   freed at once, which is why a collection that allocates in a heap borrows it and cannot
///   outlive it.
/// - [`Heap::delete`] instead moves the blocks still alive to the default heap
///   (`mi_heap_delete`), where they stay valid until freed.
/// - With the `guarded` and `v2` features together, mimalloc cannot destroy heaps: dropping one
///   deletes it, so blocks still allocated in it stay allocated (a leak, never a dangling
///   block). mimalloc 3 destroys guarded heaps like any other.
/// - With the `allocator-api2` feature, `&Heap` implements `allocator_api2::alloc::Allocator`,
///   so `allocator_api2::vec::Vec::new_in(&heap)` and `hashbrown::HashMap::new_in(&heap)` work
///   on stable Rust; with the `nightly` feature it implements `core::alloc::Allocator`.
///
/// # Threads
///
/// The rules are mimalloc's, enforced by the type system:
///
/// - mimalloc 3 (default): heaps are first-class. Any thread may allocate from and free to a
///   heap, so `Heap` is `Send + Sync`.
/// - mimalloc 2 (the `v2` feature): a heap allocates only on the thread that created it, so
///   `Heap` is neither `Send` nor `Sync`. Its blocks may still be freed on any thread.
///
#[cfg_attr(not(feature = "v2"), doc = "```")]
#[cfg_attr(feature = "v2", doc = "```compile_fail")]
/// // Compiles with mimalloc 3, is rejected with the `v2` feature.
/// fn shared_between_threads<T: Send + Sync>() {}
/// shared_between_threads::<mimalloc::Heap>();
/// ```
///
/// # Collections in a heap
///
/// With the `allocator-api2` feature, any collection generic over an allocator can live in a
/// heap, and it borrows the heap:
///
#[cfg_attr(feature = "allocator-api2", doc = "```")]
#[cfg_attr(not(feature = "allocator-api2"), doc = "```ignore")]
/// let heap = mimalloc::Heap::new();
/// let mut v = allocator_api2::vec::Vec::new_in(&heap);
/// v.extend_from_slice(&[1u32, 2, 3]);
/// assert!(heap.contains(v.as_ptr()));
/// ```
///
/// so it cannot outlive the heap, which would free its memory under it:
///
#[cfg_attr(feature = "allocator-api2", doc = "```compile_fail,E0597")]
#[cfg_attr(not(feature = "allocator-api2"), doc = "```ignore")]
/// let v;
/// {
///     let heap = mimalloc::Heap::new();
///     v = allocator_api2::vec::Vec::<u8, _>::new_in(&heap);
/// } // error[E0597]: `heap` does not live long enough
/// drop(v);
/// ```
///
/// nor can the heap be dropped (or deleted) while the collection is alive:
///
#[cfg_attr(feature = "allocator-api2", doc = "```compile_fail,E0505")]
#[cfg_attr(not(feature = "allocator-api2"), doc = "```ignore")]
/// let heap = mimalloc::Heap::new();
/// let v = allocator_api2::vec::Vec::<u8, _>::new_in(&heap);
/// drop(heap); // error[E0505]: cannot move out of `heap` because it is borrowed
/// drop(v);
/// ```
///
/// # Example
///
/// ```
/// use core::alloc::Layout;
/// use mimalloc::Heap;
///
/// let heap = Heap::new();
/// let layout = Layout::from_size_align(1000, 64).unwrap();
/// let block = heap.allocate(layout).expect("memory");
/// assert_eq!(block.as_ptr() as usize % 64, 0);
/// assert!(heap.contains(block.as_ptr()));
/// // SAFETY: `block` came from this heap with `layout` and is freed once.
/// unsafe { heap.deallocate(block, layout) };
/// drop(heap); // frees whatever the heap still holds
/// ```
pub struct Heap {
    raw: NonNull<ffi::mi_heap_t>,
    /// mimalloc 2 heaps belong to the thread that created them.
    #[cfg(feature = "v2")]
    _thread_bound: PhantomData<*mut ()>,
    #[cfg(not(feature = "v2"))]
    _owned: PhantomData<ffi::mi_heap_t>,
}

// SAFETY: mimalloc 3 heaps are first-class: `mi_heap_malloc` and friends may be called on the
// same heap from any number of threads at once (each thread allocates through its own
// thread-local part of the heap), and blocks may be freed from any thread.
#[cfg(not(feature = "v2"))]
unsafe impl Send for Heap {}
// SAFETY: as for `Send`; every method takes `&self` and mimalloc synchronises internally.
#[cfg(not(feature = "v2"))]
unsafe impl Sync for Heap {}

/// What `handle_alloc_error` reports when mimalloc cannot create a heap: the metadata of a heap
/// is about one OS page (its exact size is internal to mimalloc).
const HEAP_METADATA: Layout = Layout::new::<[u8; 4096]>();

impl Heap {
    /// Creates a heap; if mimalloc cannot, calls [`handle_alloc_error`] (like `Box::new`).
    ///
    /// [`handle_alloc_error`]: rust_alloc::alloc::handle_alloc_error
    ///
    /// ```
    /// let heap = mimalloc::Heap::new();
    /// # drop(heap);
    /// ```
    pub fn new() -> Heap {
        Heap::try_new().unwrap_or_else(|_| rust_alloc::alloc::handle_alloc_error(HEAP_METADATA))
    }

    /// Creates a heap, or returns an error if mimalloc cannot.
    ///
    /// ```
    /// let heap = mimalloc::Heap::try_new()?;
    /// # drop(heap);
    /// # Ok::<(), mimalloc::AllocError>(())
    /// ```
    pub fn try_new() -> Result<Heap, AllocError> {
        // SAFETY: `mi_heap_new` has no preconditions; it returns null when out of memory.
        Heap::from_raw(unsafe { ffi::mi_heap_new() })
    }

    /// Creates a heap that allocates only inside `arena` (`mi_heap_new_in_arena`). With an
    /// exclusive arena this is a hard memory budget: when the arena is full, allocations in
    /// this heap fail instead of asking the OS for more. See [`Arena`] for an example.
    pub fn try_new_in(arena: &Arena) -> Result<Heap, AllocError> {
        // SAFETY: the id comes from a successful reservation; arenas are never released.
        Heap::from_raw(unsafe { new_in_arena(arena) })
    }

    fn from_raw(raw: *mut ffi::mi_heap_t) -> Result<Heap, AllocError> {
        let raw = NonNull::new(raw).ok_or(AllocError)?;
        Ok(Heap {
            raw,
            #[cfg(feature = "v2")]
            _thread_bound: PhantomData,
            #[cfg(not(feature = "v2"))]
            _owned: PhantomData,
        })
    }

    /// The underlying `mi_heap_t`, for calling `mimalloc_sys` directly. It stays owned by this
    /// `Heap`: do not delete or destroy it.
    pub fn as_ptr(&self) -> *mut ffi::mi_heap_t {
        self.raw.as_ptr()
    }

    /// Allocates a block for `layout` in this heap. A zero-sized layout gets a real (minimal)
    /// block, which must be deallocated like any other.
    ///
    /// ```
    /// # use core::alloc::Layout;
    /// let heap = mimalloc::Heap::new();
    /// let layout = Layout::new::<[u64; 8]>();
    /// let p = heap.allocate(layout)?;
    /// // SAFETY: `p` is a live block from this heap, allocated with `layout`.
    /// unsafe { heap.deallocate(p, layout) };
    /// # Ok::<(), mimalloc::AllocError>(())
    /// ```
    #[inline]
    pub fn allocate(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        NonNull::new(route::alloc(self, layout)).ok_or(AllocError)
    }

    /// Like [`Heap::allocate`], with the block's bytes set to zero.
    ///
    /// ```
    /// # use core::alloc::Layout;
    /// let heap = mimalloc::Heap::new();
    /// let layout = Layout::new::<[u8; 100]>();
    /// let p = heap.allocate_zeroed(layout)?;
    /// // SAFETY: the block is live and 100 bytes long.
    /// assert!(unsafe { core::slice::from_raw_parts(p.as_ptr(), 100) }.iter().all(|&b| b == 0));
    /// # unsafe { heap.deallocate(p, layout) };
    /// # Ok::<(), mimalloc::AllocError>(())
    /// ```
    #[inline]
    pub fn allocate_zeroed(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        NonNull::new(route::alloc_zeroed(self, layout)).ok_or(AllocError)
    }

    /// Frees a block. Any thread may free a block of any heap; this method exists for symmetry
    /// with [`Heap::allocate`] and checks the layout in debug builds.
    ///
    /// # Safety
    ///
    /// `ptr` must be a live block allocated by mimalloc (in this or any heap) with `layout`, and
    /// must not be used afterwards.
    #[inline]
    pub unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        debug_assert_eq!(
            ptr.as_ptr() as usize % layout.align(),
            0,
            "deallocate: layout mismatch"
        );
        // SAFETY: the caller guarantees a live mimalloc block allocated with `layout`, freed once.
        unsafe { route::free(ptr.as_ptr(), layout) }
    }

    /// Resizes a block to `new_size` bytes keeping `layout.align()`, in place when mimalloc can,
    /// otherwise by moving it into this heap. The first `min(layout.size(), new_size)` bytes are
    /// kept. On failure the old block is left untouched.
    ///
    /// # Safety
    ///
    /// `ptr` must be a live block allocated by mimalloc with `layout`; after success only the
    /// returned pointer may be used (with a layout of `new_size` and the same alignment).
    #[inline]
    pub unsafe fn reallocate(
        &self,
        ptr: NonNull<u8>,
        layout: Layout,
        new_size: usize,
    ) -> Result<NonNull<u8>, AllocError> {
        let new = Layout::from_size_align(new_size, layout.align()).map_err(|_| AllocError)?;
        // SAFETY: the caller passes a live block allocated with `layout`.
        NonNull::new(unsafe { route::realloc(self, ptr.as_ptr(), layout, new) }).ok_or(AllocError)
    }

    /// Whether `ptr` points into a block of this heap. Any pointer may be asked about.
    ///
    /// ```
    /// # use core::alloc::Layout;
    /// let (a, b) = (mimalloc::Heap::new(), mimalloc::Heap::new());
    /// let p = a.allocate(Layout::new::<u64>())?;
    /// assert!(a.contains(p.as_ptr()));
    /// assert!(!b.contains(p.as_ptr()));
    /// assert!(!a.contains(&0u8));
    /// # unsafe { a.deallocate(p, Layout::new::<u64>()) };
    /// # Ok::<(), mimalloc::AllocError>(())
    /// ```
    pub fn contains<T: ?Sized>(&self, ptr: *const T) -> bool {
        let p = ptr.cast::<c_void>();
        #[cfg(not(feature = "v2"))]
        {
            // SAFETY: mimalloc 3 looks `p` up in its page map; any address is fine.
            unsafe { ffi::mi_heap_contains(self.as_ptr(), p) }
        }
        #[cfg(feature = "v2")]
        {
            // SAFETY: `mi_heap_contains_block` reads the segment header of `p`, which exists
            // only for pointers into mimalloc's memory: ask the segment map first.
            unsafe { ffi::mi_is_in_heap_region(p) && ffi::mi_heap_contains_block(self.as_ptr(), p) }
        }
    }

    /// Returns unused memory of this heap to mimalloc and, where possible, to the OS
    /// (`mi_heap_collect`); `force` also frees what other threads freed into it.
    pub fn collect(&self, force: bool) {
        // SAFETY: the heap is live; collecting has no other precondition.
        unsafe { ffi::mi_heap_collect(self.as_ptr(), force) }
    }

    /// Deletes the heap but keeps its blocks: those still allocated move to the default heap
    /// and stay valid until freed (`mi_heap_delete`). Collections that allocate in the heap
    /// borrow it, so none is alive here; this is for raw blocks from [`Heap::allocate`].
    ///
    /// ```
    /// # use core::alloc::Layout;
    /// let heap = mimalloc::Heap::new();
    /// let layout = Layout::new::<[u8; 64]>();
    /// let p = heap.allocate(layout)?;
    /// heap.delete();
    /// // SAFETY: the block survived the heap and is freed once, with the global allocator.
    /// unsafe {
    ///     p.as_ptr().write_bytes(7, 64);
    ///     std::alloc::GlobalAlloc::dealloc(&mimalloc::MiMalloc, p.as_ptr(), layout);
    /// }
    /// # Ok::<(), mimalloc::AllocError>(())
    /// ```
    ///
    /// mimalloc 2.5.2 built with the `debug` feature aborts on an internal assertion freeing a
    /// block from a page that was full when its heap was deleted (a statistic is not moved
    /// along; release builds are unaffected); `tests/tests/upstream_bugs.rs` watches for it.
    pub fn delete(self) {
        let raw = self.as_ptr();
        core::mem::forget(self);
        // SAFETY: `self` is consumed, so nothing can use the heap after it is deleted.
        unsafe { ffi::mi_heap_delete(raw) }
    }
}

/// mimalloc 2's `mi_heap_new_in_arena` makes a heap that `mi_heap_destroy` ignores (with a
/// warning; an assertion in `debug` builds), leaking its blocks and their arena memory. Dropping
/// a `Heap` destroys it, so mimalloc 2 heaps in an arena are created destroyable.
///
/// # Safety
///
/// `arena` holds the id of a live arena (every `Arena` does).
#[cfg(feature = "v2")]
unsafe fn new_in_arena(arena: &Arena) -> *mut ffi::mi_heap_t {
    // SAFETY: the caller passes a live arena; tag 0 is the default heap tag.
    unsafe { ffi::mi_heap_new_ex(0, true, arena.id()) }
}

/// mimalloc 3 heaps in an arena can always be destroyed.
///
/// # Safety
///
/// `arena` holds the id of a live arena (every `Arena` does).
#[cfg(not(feature = "v2"))]
unsafe fn new_in_arena(arena: &Arena) -> *mut ffi::mi_heap_t {
    // SAFETY: the caller passes a live arena.
    unsafe { ffi::mi_heap_new_in_arena(arena.id()) }
}

/// Whether dropping a heap deletes it instead of destroying it: mimalloc 2 cannot destroy heaps
/// in guarded builds (it deletes them itself, with a warning).
const DELETES_ON_DROP: bool = GUARDED && cfg!(feature = "v2");

impl Drop for Heap {
    /// Destroys the heap and frees every block still allocated in it (`mi_heap_destroy`); in
    /// `guarded` builds with `v2`, deletes it instead (see [`Heap`]).
    fn drop(&mut self) {
        if DELETES_ON_DROP {
            // mimalloc 2 replaces destroy by delete in guarded builds anyway.
            // SAFETY: dropping needs `&mut self`, so nothing uses the heap afterwards.
            unsafe { ffi::mi_heap_delete(self.as_ptr()) }
        } else {
            // SAFETY: dropping needs `&mut self`, so no `&Heap` is alive: no collection
            // allocating in this heap can still exist (they borrow it), and raw blocks from
            // `allocate` are documented to die with it.
            unsafe { ffi::mi_heap_destroy(self.as_ptr()) }
        }
    }
}

impl Default for Heap {
    fn default() -> Heap {
        Heap::new()
    }
}

impl fmt::Debug for Heap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Heap").field(&self.raw).finish()
    }
}

/// An owned heap, live for as long as the `&Heap` (a block that moves lands in it).
impl Entries for Heap {
    #[inline(always)]
    unsafe fn malloc_small(&self, size: usize) -> *mut c_void {
        // SAFETY: the heap is live; the caller keeps `size` within `SMALL_SIZE_MAX`.
        unsafe { ffi::mi_heap_malloc_small(self.as_ptr(), size) }
    }
    #[inline(always)]
    fn malloc(&self, size: usize) -> *mut c_void {
        // SAFETY: the heap is live; any size is accepted.
        unsafe { ffi::mi_heap_malloc(self.as_ptr(), size) }
    }
    #[inline(always)]
    fn zalloc(&self, size: usize) -> *mut c_void {
        // SAFETY: the heap is live; any size is accepted.
        unsafe { ffi::mi_heap_zalloc(self.as_ptr(), size) }
    }
    #[inline(always)]
    unsafe fn malloc_aligned(&self, size: usize, align: usize) -> *mut c_void {
        // SAFETY: the heap is live; the caller passes a power-of-two alignment.
        unsafe { ffi::mi_heap_malloc_aligned(self.as_ptr(), size, align) }
    }
    #[inline(always)]
    unsafe fn zalloc_aligned(&self, size: usize, align: usize) -> *mut c_void {
        // SAFETY: the heap is live; the caller passes a power-of-two alignment.
        unsafe { ffi::mi_heap_zalloc_aligned(self.as_ptr(), size, align) }
    }
    #[inline(always)]
    unsafe fn realloc(&self, p: *mut c_void, size: usize) -> *mut c_void {
        // SAFETY: the heap is live; the caller passes a live block.
        unsafe { ffi::mi_heap_realloc(self.as_ptr(), p, size) }
    }
    #[inline(always)]
    unsafe fn realloc_aligned(&self, p: *mut c_void, size: usize, align: usize) -> *mut c_void {
        // SAFETY: the heap is live; the caller passes a live block and a power-of-two alignment.
        unsafe { ffi::mi_heap_realloc_aligned(self.as_ptr(), p, size, align) }
    }
}
