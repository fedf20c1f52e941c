//! `Arena`: a region of memory handed to mimalloc, shared by every heap or reserved for some.

use core::ffi::c_void;
use core::fmt;
use core::mem::MaybeUninit;
use mimalloc_sys as ffi;

/// Who may allocate in an arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sharing {
    /// Every heap, including the default one behind [`MiMalloc`](crate::MiMalloc), may use it.
    Shared,
    /// Only heaps created in it ([`Heap::try_new_in`](crate::Heap::try_new_in)); when it is
    /// full their allocations fail instead of taking more memory from the OS. This is a hard
    /// memory budget.
    Exclusive,
}

/// Why an arena could not be created.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArenaError {
    /// The OS refused the reservation; the value is mimalloc's `errno` code (e.g. `ENOMEM`).
    Os(i32),
    /// mimalloc refused the region: after aligning its start it is smaller than the arena
    /// alignment (see [`Arena::manage`]), or mimalloc has no room for another arena.
    Refused,
}

impl fmt::Display for ArenaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArenaError::Os(errno) => {
                write!(f, "the OS refused to reserve the arena (errno {errno})")
            }
            ArenaError::Refused => {
                f.write_str("mimalloc refused the arena (region too small or too many arenas)")
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for ArenaError {}

/// A memory arena of mimalloc: a large region that mimalloc allocates pages from.
///
/// Arenas live as long as the process (mimalloc cannot give one back), so an `Arena` is a
/// `Copy` handle. An [exclusive](Sharing::Exclusive) arena with a heap in it is a hard memory
/// budget: allocations beyond it fail with [`AllocError`](crate::AllocError) (or null, for
/// the allocator traits), and the program goes on.
///
/// ```
/// use core::alloc::Layout;
/// use mimalloc::{Arena, Heap, Sharing};
///
/// // 64 MiB that only `budget` may use.
/// let arena = Arena::reserve(64 << 20, Sharing::Exclusive).expect("address space");
/// let budget = Heap::try_new_in(&arena).expect("a heap");
/// let mut used = 0;
/// let chunk = Layout::from_size_align(1 << 20, 8).unwrap();
/// while let Ok(block) = budget.allocate(chunk) {
///     assert!(arena.contains(block.as_ptr()));
///     used += chunk.size();
/// }
/// assert!(used <= 64 << 20, "the budget held: {used} bytes");
/// drop(budget); // the memory goes back to the arena, for the next heap in it
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Arena {
    id: ffi::mi_arena_id_t,
}

// SAFETY: an arena id is an opaque handle to process-wide state that mimalloc synchronises; it
// is never freed, and every mimalloc function taking one may be called from any thread.
unsafe impl Send for Arena {}
// SAFETY: as for `Send`: `Arena` has no interior state of its own.
unsafe impl Sync for Arena {}

impl Arena {
    /// Reserves `size` bytes of address space from the OS as a new arena
    /// (`mi_reserve_os_memory_ex`). The memory is committed on demand, in regular pages. The
    /// size is rounded up to mimalloc's arena granularity.
    ///
    /// ```
    /// let arena = mimalloc::Arena::reserve(32 << 20, mimalloc::Sharing::Shared)?;
    /// assert!(arena.area().1 >= 32 << 20);
    /// # Ok::<(), mimalloc::ArenaError>(())
    /// ```
    pub fn reserve(size: usize, sharing: Sharing) -> Result<Arena, ArenaError> {
        // mimalloc 2.3.2 and 2.5.2 crash (64-bit Linux) when this is the first mimalloc call of
        // a thread: choosing an address hint, it writes the random state of the thread's heap,
        // which is still the read-only empty heap (`tests/tests/upstream_bugs.rs`). Initialising
        // the thread first is cheap and idempotent.
        // SAFETY: `mi_thread_init` has no preconditions.
        unsafe { ffi::mi_thread_init() };
        let mut id = MaybeUninit::<ffi::mi_arena_id_t>::uninit();
        let exclusive = sharing == Sharing::Exclusive;
        // SAFETY: `id` is a valid place for mimalloc to write the new arena's id into.
        let err =
            unsafe { ffi::mi_reserve_os_memory_ex(size, false, false, exclusive, id.as_mut_ptr()) };
        if err != 0 {
            return Err(ArenaError::Os(err));
        }
        // SAFETY: mimalloc wrote the id of the arena it created (it returned success).
        let id = unsafe { id.assume_init() };
        Ok(Arena { id })
    }

    /// Hands a caller-owned region to mimalloc as a new arena (`mi_manage_os_memory_ex`): for
    /// memory from a static buffer, a custom mapping, or memory outside the OS's allocator.
    ///
    /// mimalloc uses the region for the rest of the process, so it must be `'static`; its start
    /// is aligned up to mimalloc's arena alignment and the rest must still hold that much. On
    /// 64-bit targets mimalloc 3 aligns arenas to 256 MiB (its page metadata sits at such
    /// addresses; 64 KiB with `secure`), so a region of 512 MiB always suffices; mimalloc 2
    /// aligns to 32 MiB, so 64 MiB suffice. On 32-bit targets, 64 MiB and 8 MiB. Only the
    /// pages mimalloc uses are touched, so a large region costs address space, not memory.
    /// mimalloc 3 never decommits or resets caller memory; mimalloc 2 may, as it does its own,
    /// so with `v2` the region must be memory the OS manages in pages (a static buffer, a large
    /// leaked allocation, or a mapping).
    ///
    /// ```
    /// use core::mem::MaybeUninit;
    /// let size = if cfg!(target_pointer_width = "64") { 512 << 20 } else { 64 << 20 };
    /// // Untouched memory for the rest of the process: a leaked, never written allocation.
    /// let mut memory = Vec::<MaybeUninit<u8>>::with_capacity(size);
    /// // SAFETY: `MaybeUninit<u8>` needs no initialisation, and the capacity is `size`.
    /// unsafe { memory.set_len(size) };
    /// let region: &'static mut [MaybeUninit<u8>] = Box::leak(memory.into_boxed_slice());
    /// let arena = mimalloc::Arena::manage(region, mimalloc::Sharing::Exclusive)?;
    /// let heap = mimalloc::Heap::try_new_in(&arena).expect("a heap");
    /// let block = heap.allocate(core::alloc::Layout::new::<[u8; 4096]>()).expect("memory");
    /// assert!(arena.contains(block.as_ptr()));
    /// # Ok::<(), mimalloc::ArenaError>(())
    /// ```
    pub fn manage(
        region: &'static mut [MaybeUninit<u8>],
        sharing: Sharing,
    ) -> Result<Arena, ArenaError> {
        // The start aligned as mimalloc would align it (`region_align`).
        let align = region_align();
        let misalignment = region.as_ptr() as usize % align;
        let skip = if misalignment == 0 {
            0
        } else {
            align - misalignment
        };
        let region = region.get_mut(skip..).ok_or(ArenaError::Refused)?;
        let mut id = MaybeUninit::<ffi::mi_arena_id_t>::uninit();
        let exclusive = sharing == Sharing::Exclusive;
        // SAFETY: the region is valid for reads and writes for the rest of the process and
        // nothing else can reach it (`&'static mut`); it is accessible (committed), described
        // per version (`PINNED`), and its contents are unknown (not zero). `id` is a valid place
        // for the new id.
        let ok = unsafe {
            ffi::mi_manage_os_memory_ex(
                region.as_mut_ptr().cast::<c_void>(),
                region.len(),
                true,
                PINNED,
                false,
                -1,
                exclusive,
                id.as_mut_ptr(),
            )
        };
        if !ok {
            return Err(ArenaError::Refused);
        }
        // SAFETY: mimalloc wrote the id of the arena it created (it returned true).
        let id = unsafe { id.assume_init() };
        Ok(Arena { id })
    }

    pub(crate) fn id(&self) -> ffi::mi_arena_id_t {
        self.id
    }

    /// The start and size of the arena's memory (`mi_arena_area`).
    pub fn area(&self) -> (*mut u8, usize) {
        let mut size = 0;
        // SAFETY: the id is that of a live arena; `size` is a valid place to write to.
        let start = unsafe { ffi::mi_arena_area(self.id, &mut size) };
        (start.cast(), size)
    }

    /// Whether `ptr` points into this arena's memory. Any pointer may be asked about.
    pub fn contains<T: ?Sized>(&self, ptr: *const T) -> bool {
        let (start, size) = self.area();
        let (p, start) = (ptr.cast::<u8>() as usize, start as usize);
        p >= start && p - start < size
    }
}

/// Where mimalloc 3 wants a caller's region to start, which the region must still be able to
/// hold from there: `mi_arena_min_alignment()`, mimalloc's own `MI_ARENA_ALIGNMENT` for this
/// build (the page metadata's alignment where `free` masks the pointer, docs/known-issues.md;
/// one arena slice, 64 KiB or 32 KiB, where it reads the page map), so
/// nothing here restates the C constants. mimalloc 3.6.0 aligns the start itself too, and its
/// debug builds do not assert that the caller did (`tests/tests/arena.rs`'s misaligned region
/// passes a `debug` build without this step): aligning here first only refuses a region too
/// short for an aligned start without mimalloc's warning on stderr (shown with
/// `MIMALLOC_SHOW_ERRORS=1` or `MIMALLOC_VERBOSE=1`).
#[cfg(not(feature = "v2"))]
fn region_align() -> usize {
    // SAFETY: `mi_arena_min_alignment` has no preconditions; it returns a build constant.
    unsafe { ffi::mi_arena_min_alignment() }
}

/// mimalloc 2 exports no such alignment, and needs none from the caller: its
/// `mi_manage_os_memory_ex` aligns the start to a segment (`MI_SEGMENT_ALIGN`) itself, refuses a
/// region whose aligned rest is too small, and asserts nothing about the start in debug builds.
/// So the region goes to it as it is, rather than aligned to a copy of its constant that could
/// drift from it.
#[cfg(feature = "v2")]
fn region_align() -> usize {
    1
}

/// How the caller's region is described to mimalloc. mimalloc 3's parameter is `is_pinned`:
/// the memory must not be decommitted or reset, as befits memory mimalloc does not own.
/// mimalloc 2's parameter at that place is `is_large` (large OS pages, which implies pinned),
/// which regular memory is not; claiming it breaks the guard pages of `secure` builds. So with
/// mimalloc 2 the region may be reset (`madvise`) or decommitted in parts, like mimalloc's own.
const PINNED: bool = cfg!(not(feature = "v2"));

impl fmt::Debug for Arena {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (start, size) = self.area();
        f.debug_struct("Arena")
            .field("start", &start)
            .field("size", &size)
            .finish()
    }
}
