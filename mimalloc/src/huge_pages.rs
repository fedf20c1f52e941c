//! Transparent huge pages for large blocks only.
//!
//! Where the build plan says so (`huge_block_advice` in `mimalloc-sys/build/plan.rs`: mimalloc 3
//! on 64-bit Linux), mimalloc is compiled without its own huge-page advice on arenas
//! (`MI_NO_THP`), so small blocks live in 4 KiB pages and a small heap is about as large as it
//! needs to be, and the routing core advises the kernel (`madvise(MADV_HUGEPAGE)`) to back every
//! block of 2 MiB or more with huge pages, so that a large block still faults in 2 MiB at a
//! time. One system call per large allocation, next to at least 512 page faults saved when the
//! block is touched. BENCHMARKS.md, "The option defaults", has the measurements.
//!
//! The advice covers every 2 MiB page the block overlaps, so at either end it may take in up to
//! 2 MiB of a neighbour's memory. It stays on the range after the block is freed, so small
//! blocks later carved from it may get huge pages too: memory that has held large blocks is
//! advised, other memory is not.
//! `MIMALLOC_ALLOW_THP=0` (mimalloc then disables huge pages for the process) turns the advice
//! off as well.

/// The size of a transparent huge page on x86_64 and on arm64 with 4 KiB pages. (On arm64
/// kernels with 64 KiB pages huge pages are 512 MiB, and advice on 2 MiB-aligned ranges, which
/// are page-aligned there too, is harmless.)
#[cfg_attr(not(all(mimalloc_huge_block_advice, not(miri))), allow(dead_code))]
pub(crate) const HUGE_PAGE: usize = 2 << 20;

/// Advises the kernel to back every huge page that the block `block..block + size` overlaps
/// with transparent huge pages. A no-op where the build does not ask for it, for a null block, and
/// once the kernel has refused the advice (no huge page support, or its limit of memory maps).
#[inline(always)]
pub(crate) fn advise_block(block: *mut u8, size: usize) {
    #[cfg(all(mimalloc_huge_block_advice, not(miri)))]
    if size >= HUGE_PAGE && !block.is_null() {
        linux::advise(block as usize, size);
    }
    #[cfg(not(all(mimalloc_huge_block_advice, not(miri))))]
    let _ = (block, size);
}

#[cfg(all(mimalloc_huge_block_advice, not(miri)))]
mod linux {
    use super::HUGE_PAGE;
    use core::sync::atomic::{AtomicBool, Ordering};
    use mimalloc_sys as ffi;

    /// Set once `madvise` has failed: it will fail again (`EINVAL` without huge page support,
    /// `ENOMEM` at the limit of memory maps), and each failure costs a system call.
    static REFUSED: AtomicBool = AtomicBool::new(false);

    /// Off the allocation path: not inlined into every large allocation's caller.
    #[inline(never)]
    pub(super) fn advise(start: usize, size: usize) {
        if REFUSED.load(Ordering::Relaxed) {
            return;
        }
        // SAFETY: reading an option has no precondition.
        if unsafe { !ffi::mi_option_is_enabled(ffi::mi_option_allow_thp) } {
            return;
        }
        // The huge pages the block overlaps, whole: mimalloc places large blocks at 64 KiB
        // granularity, and a block's partial huge pages at either end would otherwise always
        // fault in 4 KiB at a time. The ends may take in a neighbour's memory, at most a huge
        // page on each side. (The huge page holding mimalloc's page header, written before
        // this advice, is already mapped in 4 KiB pages and stays so.)
        let outer = (
            start & !(HUGE_PAGE - 1),
            (start + size + HUGE_PAGE - 1) & !(HUGE_PAGE - 1),
        );
        if hugepage(outer) {
            return;
        }
        // The ends fall outside mimalloc's mapping (a block at the edge of an arena that is not
        // 2 MiB-aligned): the block's whole huge pages alone.
        let inner = (
            (start + HUGE_PAGE - 1) & !(HUGE_PAGE - 1),
            (start + size) & !(HUGE_PAGE - 1),
        );
        if inner.1 > inner.0 && !hugepage(inner) {
            REFUSED.store(true, Ordering::Relaxed);
        }
    }

    /// `madvise(MADV_HUGEPAGE)` on `start..end`; whether the kernel took it.
    fn hugepage((start, end): (usize, usize)) -> bool {
        // SAFETY: MADV_HUGEPAGE changes only how the kernel backs the pages of `start..end`
        // (a block's, and at the ends possibly a neighbour's), never their contents or their
        // protection; a range with unmapped parts fails with ENOMEM.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) == 0 }
    }
}
