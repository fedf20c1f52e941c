//! Transparent huge pages once they pay. A heap starts in 4 KiB pages, so that a small program
//! is as small as it needs to be (a huge page mimalloc touched once holds 2 MiB, most of it
//! unused in a small heap); once the program has committed [`FROM`] bytes, every policy arena
//! is advised for huge pages (`MADV_HUGEPAGE`), so the heap grows in 2 MiB faults from then
//! on, each saving 511 of 4 KiB. What was touched before stays in 4 KiB pages until the kernel's
//! khugepaged collapses it. A request of 2 MiB or more that would take the heap past the
//! threshold switches before mimalloc is called, so that the block's first byte (where mimalloc
//! writes its page header) faults in a huge page too.
//!
//! Until the switch each arena is advised `MADV_NOHUGEPAGE`, so that a small heap stays in
//! 4 KiB pages where the kernel's THP mode is `always` (RHEL, Fedora, Amazon Linux), which
//! backs every aligned 2 MiB of a process otherwise.
//!
//! Blocks of 2 MiB or more that mimalloc serves outside the policy's arenas (blocks larger than
//! an arena, or all blocks where the policy has no arena) are advised one by one, as they are
//! allocated, over every huge page they overlap.
//!
//! `MIMALLOC_ALLOW_THP=0` (mimalloc disables huge pages for the process) turns all of it off.

use super::io::{committed, say};
use super::reserved::{self, Backing, HUGE_PAGE};
use super::state::states;
use super::state::HugePages;
use core::ffi::c_void;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use mimalloc_sys as ffi;

states! {
    /// Where the heap's huge pages stand.
    enum Stage in AtomicStage {
        /// 4 KiB pages until [`FROM`] bytes are committed.
        Small,
        /// Switched: the arenas are advised for huge pages.
        Huge,
        /// No huge pages for the heap (`MIMALLOC_HUGE_PAGES_FROM=off`, `MIMALLOC_ALLOW_THP=0`, or
        /// no policy arena); large blocks are still advised one by one unless `allow_thp` is off.
        Off,
    }
}

static STAGE: AtomicStage = AtomicStage::new(Stage::Off);
static FROM: AtomicUsize = AtomicUsize::new(usize::MAX);
/// Whether the heap can switch at all: the policy holds it and the process may have huge pages.
static CAPABLE: AtomicBool = AtomicBool::new(false);

/// Sets the stage when the program loads, and reserves the first arena accordingly.
pub(crate) fn load(from: Option<usize>) {
    if !thp_allowed() {
        return;
    }
    let backing = match from {
        Some(0) => Backing::Huge,
        _ => Backing::Small,
    };
    if !reserved::reserve_first(backing) {
        return;
    }
    CAPABLE.store(true, Ordering::Relaxed);
    FROM.store(from.unwrap_or(usize::MAX), Ordering::Relaxed);
    let stage = match from {
        Some(0) => Stage::Huge,
        Some(_) => Stage::Small,
        None => Stage::Off,
    };
    STAGE.store(stage, Ordering::Relaxed);
}

/// Where the heap stands now.
pub(crate) fn stage() -> HugePages {
    match STAGE.load(Ordering::Relaxed) {
        Stage::Small => HugePages::Small {
            from: FROM.load(Ordering::Relaxed),
        },
        Stage::Huge => HugePages::Huge,
        Stage::Off => HugePages::Off,
    }
}

/// Sets the threshold (`None`: never); a heap already past it switches at once. A heap that
/// has switched keeps its huge pages, and one without a policy arena never switches.
pub(crate) fn set_from(from: Option<usize>) {
    if !CAPABLE.load(Ordering::Relaxed) {
        return;
    }
    FROM.store(from.unwrap_or(usize::MAX), Ordering::Relaxed);
    let wanted = if from.is_some() {
        Stage::Small
    } else {
        Stage::Off
    };
    for unswitched in [Stage::Off, Stage::Small] {
        STAGE.move_from(unswitched, wanted, Ordering::Relaxed);
    }
    poll(committed());
}

/// Called as the heap grows, with the bytes committed: switches once they reach the threshold,
/// and reserves the next arena before the heap outgrows the ones it has.
pub(crate) fn poll(committed: usize) {
    grow_for(committed, 0);
}

/// [`poll`] for a heap about to take a block of `block` bytes.
fn grow_for(committed: usize, block: usize) {
    if STAGE.load(Ordering::Relaxed) == Stage::Small && committed >= FROM.load(Ordering::Relaxed) {
        switch();
    }
    reserved::grow(committed, block, backing());
}

/// How a new arena is to be backed now.
fn backing() -> Backing {
    if STAGE.load(Ordering::Relaxed) == Stage::Huge {
        Backing::Huge
    } else {
        Backing::Small
    }
}

/// Before a request of `size` bytes (at least a huge page) is served: the heap switches first
/// if the block takes it past the threshold, so the block is born in huge pages. A block no
/// arena can hold is not born in the policy's memory (mimalloc maps it by itself, or refuses
/// it: an impossible request must not reserve an arena), so the policy looks at the heap as it
/// is then, and at the block once it is committed.
pub(crate) fn before_large(size: usize, committed: usize) {
    let block = if reserved::can_hold(size) { size } else { 0 };
    grow_for(committed + block, block);
}

/// Advises every policy arena for huge pages, once.
#[cold]
fn switch() {
    if !STAGE.move_from(Stage::Small, Stage::Huge, Ordering::Relaxed) {
        return;
    }
    reserved::for_each(|start, end| {
        // SAFETY: the range is a policy arena, mapped for the rest of the process; the advice
        // changes only how the kernel backs the pages it faults in from now on.
        unsafe { libc::madvise(start as *mut c_void, end - start, libc::MADV_HUGEPAGE) };
    });
    say(
        false,
        format_args!(
            "huge pages for the heap from now on ({} MiB committed)",
            committed() >> 20
        ),
    );
}

/// After a block of `size` bytes was served at `block`: a block of 2 MiB or more outside the
/// heap's advised arenas is advised itself, over every huge page it overlaps (mimalloc places
/// large blocks at 64 KiB granularity, and a block's partial huge pages at either end would
/// otherwise always fault in 4 KiB at a time; the ends may take in at most a huge page of a
/// neighbour's memory on each side). The huge page that holds mimalloc's page header, written
/// before this advice, is already mapped in 4 KiB pages and stays so.
#[inline(always)]
pub(crate) fn after_large(block: *mut u8, size: usize) {
    if size >= HUGE_PAGE && !block.is_null() {
        let address = block as usize;
        if !(STAGE.load(Ordering::Relaxed) == Stage::Huge && reserved::covers(address)) {
            advise_block(address, size);
        }
    }
}

/// Off the allocation path: not inlined into every large allocation's caller.
#[inline(never)]
fn advise_block(start: usize, size: usize) {
    if !thp_allowed() {
        return;
    }
    let (from, to) = huge_pages_of(start, size);
    // SAFETY: MADV_HUGEPAGE changes only how the kernel backs the pages of `from..to` (the
    // block's, and at the ends possibly a neighbour's), never their contents or their
    // protection. The result needs no answer: where an end falls outside any mapping (a block
    // at the edge of a mapping that is not 2 MiB-aligned) Linux advises the mapped part and
    // fails with ENOMEM, and a kernel without transparent huge pages refuses with EINVAL.
    unsafe { libc::madvise(from as *mut c_void, to - from, libc::MADV_HUGEPAGE) };
}

/// The huge pages a block of `size` bytes at `start` overlaps.
fn huge_pages_of(start: usize, size: usize) -> (usize, usize) {
    let down = |address: usize| address & !(HUGE_PAGE - 1);
    (down(start), down(start + size + HUGE_PAGE - 1))
}

/// Whether the process may have huge pages: mimalloc's `allow_thp` (`MIMALLOC_ALLOW_THP`),
/// which at 0 also disables them for the process with `prctl`.
fn thp_allowed() -> bool {
    // SAFETY: reading an option has no precondition.
    unsafe { ffi::mi_option_is_enabled(ffi::mi_option_allow_thp) }
}

#[cfg(test)]
mod tests {
    use super::{huge_pages_of, HUGE_PAGE};

    #[test]
    fn a_block_is_advised_over_the_huge_pages_it_overlaps() {
        const MIB: usize = 1 << 20;
        let base = 64 * HUGE_PAGE;
        let pages = |n: usize| (base, base + n * HUGE_PAGE);
        assert_eq!(huge_pages_of(base, 2 * HUGE_PAGE), pages(2));
        // Inside one huge page and the next.
        assert_eq!(huge_pages_of(base + MIB, 2 * MIB), pages(2));
        // 64 KiB past a boundary for 5 MiB: three huge pages.
        assert_eq!(huge_pages_of(base + (64 << 10), 5 * MIB), pages(3));
        // Ending one byte into a huge page: that one too.
        assert_eq!(huge_pages_of(base, HUGE_PAGE + 1), pages(2));
    }
}
