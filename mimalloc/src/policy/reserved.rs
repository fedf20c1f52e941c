//! The policy's arenas: address space the policy reserves itself and hands to mimalloc as
//! ordinary arenas, so that it knows where the heap lives and can change how the kernel backs
//! it. mimalloc keeps no list of the arenas it reserves for itself that a program could read;
//! memory handed to it with `mi_manage_os_memory_ex` it uses like its own, searching the first
//! arena first, so the first policy arena, reserved when the program loads before anything is
//! allocated, holds the heap.
//!
//! Each arena is committed from the start, as mimalloc commits its own on Linux (where memory is
//! overcommitted and only touched pages count): mimalloc then counts each 64 KiB slice as
//! committed when it first uses it and purges with `MADV_DONTNEED`, exactly as for its own
//! arenas. Its statistics leave such memory out of `reserved` (it is the program's, not
//! mimalloc's), which [`reserved`] gives back to [`crate::stats::read`].
//!
//! The heap outgrows an arena: once three quarters of what the policy reserved are committed,
//! the next arena is reserved (as large as all before it together, so that a large heap takes a
//! few), before mimalloc would reserve one of its own that the policy would not know.

use super::io::say;
use core::ffi::c_void;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use mimalloc_sys as ffi;

/// At most this many policy arenas: with each as large as the ones before it together, the last
/// ones hit mimalloc's 16 GiB per arena long before this runs out.
const MAX_ARENAS: usize = 24;

/// mimalloc's largest arena (`MI_ARENA_MAX_SIZE`: 16 GiB of 64 KiB slices).
const LARGEST: usize = 16 << 30;

/// The size of a transparent huge page on x86_64 and arm64 with 4 KiB pages: arenas are
/// aligned to it, so that a huge page never straddles an arena's edge.
pub(crate) const HUGE_PAGE: usize = 2 << 20;

#[allow(clippy::declare_interior_mutable_const)] // only an array initializer
const EMPTY: AtomicUsize = AtomicUsize::new(0);
static STARTS: [AtomicUsize; MAX_ARENAS] = [EMPTY; MAX_ARENAS];
static ENDS: [AtomicUsize; MAX_ARENAS] = [EMPTY; MAX_ARENAS];
/// Arenas handed to mimalloc; slots below it are filled (written before it is raised).
static COUNT: AtomicUsize = AtomicUsize::new(0);
/// Bytes of address space in the policy's arenas.
static RESERVED: AtomicUsize = AtomicUsize::new(0);
/// Held while an arena is being added (by one thread; the others go on without waiting).
static ADDING: AtomicBool = AtomicBool::new(false);

/// How the kernel is asked to back a new arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Backing {
    /// `MADV_NOHUGEPAGE`: 4 KiB pages, even where the kernel's THP mode is `always`.
    Small,
    /// `MADV_HUGEPAGE`.
    Huge,
}

impl Backing {
    fn advice(self) -> i32 {
        match self {
            Backing::Small => libc::MADV_NOHUGEPAGE,
            Backing::Huge => libc::MADV_HUGEPAGE,
        }
    }
}

/// Reserves the first arena when the program loads, with mimalloc's own arena size
/// (`arena_reserve`), unless the program asked mimalloc to reserve memory itself first
/// (`reserve_os_memory`, `reserve_huge_os_pages`): that arena would then come first and hold the
/// heap, and the policy leaves it to mimalloc. Whether the heap is the policy's.
pub(crate) fn reserve_first(backing: Backing) -> bool {
    // SAFETY: reading options has no precondition.
    let reserved_by_mimalloc = unsafe {
        ffi::mi_option_is_enabled(ffi::mi_option_reserve_os_memory)
            || ffi::mi_option_is_enabled(ffi::mi_option_reserve_huge_os_pages)
            || ffi::mi_option_is_enabled(ffi::mi_option_disallow_os_alloc)
    };
    if reserved_by_mimalloc {
        say(
            false,
            format_args!("the heap is in the memory mimalloc reserved at start-up"),
        );
        return false;
    }
    add(arena_size(0), backing)
}

/// The size of a new arena: mimalloc's own (`arena_reserve`) for the first, and at least
/// `at_least` bytes for the next (as much as all arenas before it together, or what a block
/// needs), at most [`LARGEST`].
fn arena_size(at_least: usize) -> usize {
    // SAFETY: reading an option has no precondition.
    let unit = unsafe { ffi::mi_option_get_size(ffi::mi_option_arena_reserve) };
    whole_huge_pages(unit.max(at_least))
}

/// `size` in whole huge pages, from one to [`LARGEST`].
fn whole_huge_pages(size: usize) -> usize {
    size.clamp(HUGE_PAGE, LARGEST) & !(HUGE_PAGE - 1)
}

/// The room an arena leaves beside a large block: at least the chunk (32 MiB) that mimalloc's
/// own arena for one leaves for its metadata.
const ROOM: usize = 64 << 20;

/// Whether an arena can hold a block of `block` bytes: one larger is mimalloc's own (it maps
/// it by itself, or refuses it).
pub(crate) fn can_hold(block: usize) -> bool {
    block <= LARGEST - ROOM
}

/// Whether a heap that has committed `committed` bytes has outgrown the policy's arenas of
/// `reserved` bytes: three quarters of them (never, where the policy reserved none and the heap
/// is mimalloc's).
fn outgrown(committed: usize, reserved: usize) -> bool {
    reserved > 0 && committed >= reserved / 4 * 3
}

/// Reserves the next arena once the heap has [`outgrown`] the policy's arenas: at least large
/// enough for a block of `block` bytes (0 for none; one that [`can_hold`]) with mimalloc's
/// metadata.
pub(crate) fn grow(committed: usize, block: usize, backing: Backing) {
    let reserved = RESERVED.load(Ordering::Relaxed);
    if !outgrown(committed, reserved) || COUNT.load(Ordering::Relaxed) == MAX_ARENAS {
        return;
    }
    if ADDING.swap(true, Ordering::Acquire) {
        return;
    }
    if RESERVED.load(Ordering::Relaxed) == reserved {
        add(arena_size(reserved.max(block + ROOM)), backing);
    }
    ADDING.store(false, Ordering::Release);
}

/// Maps `size` bytes, advises them, and hands them to mimalloc; whether it took them.
fn add(size: usize, backing: Backing) -> bool {
    let index = COUNT.load(Ordering::Relaxed);
    if index == MAX_ARENAS {
        return false;
    }
    let start = match map_aligned(size) {
        Some(start) => start,
        None => {
            say(
                true,
                format_args!("cannot map {} MiB for the heap", size >> 20),
            );
            return false;
        }
    };
    // SAFETY: `start..start + size` is a private anonymous mapping of this module's, which
    // nothing uses yet; the advice changes only how the kernel backs it.
    unsafe { libc::madvise(start as *mut c_void, size, backing.advice()) };
    let mut id: ffi::mi_arena_id_t = core::ptr::null_mut();
    // SAFETY: the range is readable, writable, zeroed and unused, and stays mapped for the
    // rest of the process (this module never unmaps an arena it handed over). Not exclusive:
    // every heap allocates from it.
    let taken = unsafe {
        ffi::mi_manage_os_memory_ex(
            start as *mut c_void,
            size,
            true,
            false,
            true,
            -1,
            false,
            &mut id,
        )
    };
    if !taken {
        // SAFETY: the mapping is this module's and mimalloc refused it, so nothing uses it.
        unsafe { libc::munmap(start as *mut c_void, size) };
        say(
            true,
            format_args!("mimalloc refused {} MiB for the heap", size >> 20),
        );
        return false;
    }
    say(
        false,
        format_args!(
            "heap arena {} of {} MiB at {start:#x} ({backing:?} pages)",
            index + 1,
            size >> 20
        ),
    );
    STARTS[index].store(start, Ordering::Relaxed);
    ENDS[index].store(start + size, Ordering::Relaxed);
    COUNT.store(index + 1, Ordering::Release);
    RESERVED.fetch_add(size, Ordering::Relaxed);
    true
}

/// `size` bytes of fresh address space, aligned to mimalloc's arena alignment and to a huge
/// page, readable and writable without reserving swap (mimalloc's own arenas are mapped alike).
fn map_aligned(size: usize) -> Option<usize> {
    // SAFETY: a function of the build with no precondition.
    let align = unsafe { ffi::mi_arena_min_alignment() }.max(HUGE_PAGE);
    let span = size.checked_add(align)?;
    // SAFETY: a fresh private anonymous mapping; no existing memory is affected.
    let base = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            span,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return None;
    }
    let (head, start, tail) = carve(base as usize, span, align, size);
    // The unaligned head and the tail beyond `size`, unmapped so the arena is one mapping of
    // exactly its size. An empty one (a head where the kernel aligned the mapping, as Linux
    // 6.7 on does for large ones) is refused with `EINVAL` and changes nothing.
    // SAFETY: both ranges lie within the mapping just made, outside `start..start + size`.
    unsafe {
        libc::munmap(head.0 as *mut c_void, head.1);
        libc::munmap(tail.0 as *mut c_void, tail.1);
    }
    Some(start)
}

/// An arena of `size` bytes aligned to `align` (a power of two) in a mapping of `span` bytes
/// at `base`: the head before it (start, length), its start, and the tail after it.
fn carve(
    base: usize,
    span: usize,
    align: usize,
    size: usize,
) -> ((usize, usize), usize, (usize, usize)) {
    let start = (base + align - 1) & !(align - 1);
    let end = start + size;
    ((base, start - base), start, (end, base + span - end))
}

/// Calls `each` with every policy arena's range.
pub(crate) fn for_each(mut each: impl FnMut(usize, usize)) {
    for i in 0..COUNT.load(Ordering::Acquire) {
        each(
            STARTS[i].load(Ordering::Relaxed),
            ENDS[i].load(Ordering::Relaxed),
        );
    }
}

/// Whether `address` lies in one of the policy's arenas.
pub(crate) fn covers(address: usize) -> bool {
    let mut inside = false;
    for_each(|start, end| inside |= (start..end).contains(&address));
    inside
}

/// Bytes of address space the policy's arenas hold, which mimalloc's `reserved` statistic
/// leaves out.
pub(crate) fn reserved() -> usize {
    RESERVED.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    #[test]
    fn arenas_are_whole_huge_pages_up_to_mimallocs_largest() {
        assert_eq!(whole_huge_pages(33 * MIB), 32 * MIB);
        assert_eq!(whole_huge_pages(32 * MIB), 32 * MIB);
        assert_eq!(whole_huge_pages(MIB), HUGE_PAGE);
        assert_eq!(whole_huge_pages(0), HUGE_PAGE);
        assert_eq!(whole_huge_pages(LARGEST + HUGE_PAGE), LARGEST);
    }

    #[test]
    fn an_arena_holds_blocks_up_to_mimallocs_largest_less_its_metadata() {
        assert!(can_hold(8 * MIB));
        assert!(can_hold(16 * 1024 * MIB - 64 * MIB));
        assert!(!can_hold(16 * 1024 * MIB - 64 * MIB + 1));
        assert!(!can_hold(usize::MAX));
    }

    #[test]
    fn the_heap_outgrows_its_arenas_at_three_quarters() {
        assert!(!outgrown(24 * MIB - 1, 32 * MIB));
        assert!(outgrown(24 * MIB, 32 * MIB));
        assert!(outgrown(40 * MIB, 32 * MIB));
        assert!(
            !outgrown(40 * MIB, 0),
            "no arena of the policy's: the heap is mimalloc's"
        );
    }

    #[test]
    fn an_arena_is_carved_at_the_first_aligned_address() {
        let align = 2 * MIB;
        let base = 7 * align + 4096;
        let (size, span) = (32 * MIB, 32 * MIB + align);
        let (head, start, tail) = carve(base, span, align, size);
        assert_eq!(start, 8 * align);
        assert_eq!(head, (base, align - 4096));
        assert_eq!(tail, (start + size, 4096));
        // Aligned already: no head, the whole alignment is tail.
        let (head, start, tail) = carve(8 * align, span, align, size);
        assert_eq!(
            (head.1, start, tail),
            (0, 8 * align, (8 * align + size, align))
        );
    }
}
