//! The memory policy: which of the heap's memory the kernel backs with transparent huge pages,
//! and when memory the program freed goes back to the OS. One static choice cannot be both fast
//! and lean (huge pages on every arena hold a small heap at 1.6x glibc's memory; none cost a
//! heap of hundreds of MiB up to 1.3x the time), and mimalloc alone never gives memory back
//! while a program is quiet; so the policy follows the program (BENCHMARKS.md#the-memory-policy
//! has the measurements behind each figure here):
//!
//! - **Huge pages once the heap has grown** (`cfg(mimalloc_adaptive_thp)`: mimalloc 3 on 64-bit
//!   Linux). A heap starts in 4 KiB pages and, once the program has committed
//!   [`HUGE_PAGES_FROM`] bytes (16 MiB), is advised for huge pages, so it grows 2 MiB at a time;
//!   a block of 2 MiB or more that takes it past the threshold is born in huge pages, header
//!   included. The policy reserves the heap's arenas itself to know where the heap is
//!   (`reserved.rs`); blocks of 2 MiB or more outside them are advised one by one (`huge.rs`).
//! - **Memory back when quiet** (`cfg(mimalloc_background_purge)`: mimalloc 3 on Linux,
//!   Android, FreeBSD, macOS and Windows). Once the program has committed 16 MiB, a thread runs mimalloc's due purges every
//!   quarter of its purge delay, so freed memory goes back within about the delay (4 s by
//!   default) whether or not the program allocates again (`purge.rs`). Under a container's
//!   memory limit (Linux and Android), it purges everything freed at once while the process
//!   holds more than half the limit ([`memory_limit`], `limit.rs`).
//!
//! Elsewhere (other systems, mimalloc 2, the `no_policy` feature, Miri) neither part exists, and
//! [`huge_pages`], [`background_purge`] and [`memory_limit`] say so. Where either does, `cfg(mimalloc_policy)` holds: the build plan
//! (`mimalloc-sys/build/plan.rs`) decides all three.
//!
//! Both are set when the program loads, from the environment (`settings.rs`), and can be
//! changed while it runs:
//!
//! | variable | effect | default |
//! |---|---|---|
//! | `MIMALLOC_HUGE_PAGES_FROM` | committed size from which the heap gets huge pages (`0`: from the start, `off`: never) | `16MiB` |
//! | `MIMALLOC_BACKGROUND_PURGE` | `0` turns the background purge off | `1` |
//!
//! mimalloc's own options keep their meaning: `MIMALLOC_ALLOW_THP=0` turns every huge page off,
//! `MIMALLOC_PURGE_DELAY` and `MIMALLOC_ARENA_PURGE_MULT` set the delay the background purge
//! waits for, and `MIMALLOC_RESERVE_OS_MEMORY` leaves the heap in the arena mimalloc reserves.
//!
//! ```
//! use mimalloc::policy::{self, BackgroundPurge, HugePages};
//!
//! // What this build and process do.
//! match policy::huge_pages() {
//!     HugePages::Small { from } => println!("4 KiB pages until {from} bytes are committed"),
//!     HugePages::Huge => println!("the heap is advised for huge pages"),
//!     HugePages::NotBuilt => println!("this build leaves huge pages to the kernel"),
//!     other => println!("{other:?}"),
//! }
//! // A service that measures its own memory can turn the thread off.
//! let now = policy::set_background_purge(false);
//! assert!(matches!(now, BackgroundPurge::Off | BackgroundPurge::NotBuilt));
//! ```

use core::ffi::c_void;

#[cfg(mimalloc_adaptive_thp)]
mod huge;
#[cfg(mimalloc_policy)]
mod io;
#[cfg(mimalloc_memory_limit)]
mod limit;
#[cfg(mimalloc_policy)]
mod load;
#[cfg(mimalloc_background_purge)]
mod purge;
#[cfg(mimalloc_adaptive_thp)]
mod reserved;
mod settings;
mod state;

#[cfg(mimalloc_policy)]
pub(crate) use load::load;

pub use settings::{HUGE_PAGES_FROM, PURGE_FROM};
pub use state::{BackgroundPurge, HugePages, MemoryLimit};

/// Where the heap's huge pages stand now.
pub fn huge_pages() -> HugePages {
    #[cfg(mimalloc_adaptive_thp)]
    return huge::stage();
    #[cfg(not(mimalloc_adaptive_thp))]
    HugePages::NotBuilt
}

/// Sets the committed size from which the heap gets huge pages (`None`: never), as
/// `MIMALLOC_HUGE_PAGES_FROM` does at start-up, and returns where the heap's huge pages stand
/// then: a heap already past the threshold switches at once, and one that has switched keeps
/// its huge pages. Where the policy is not built ([`HugePages::NotBuilt`]) or does not hold the
/// heap ([`HugePages::Off`] with `MIMALLOC_ALLOW_THP=0` or `MIMALLOC_RESERVE_OS_MEMORY`), nothing
/// changes, and the answer says so.
pub fn set_huge_pages_from(from: Option<usize>) -> HugePages {
    #[cfg(mimalloc_adaptive_thp)]
    huge::set_from(from);
    #[cfg(not(mimalloc_adaptive_thp))]
    let _ = from;
    huge_pages()
}

/// Where the background purge stands now.
pub fn background_purge() -> BackgroundPurge {
    #[cfg(mimalloc_background_purge)]
    return purge::state();
    #[cfg(not(mimalloc_background_purge))]
    BackgroundPurge::NotBuilt
}

/// Turns the background purge on (its thread starts once the heap is large enough, at once if
/// it is) or off (its thread is stopped and joined before this returns), as
/// `MIMALLOC_BACKGROUND_PURGE` does at start-up, and returns where it stands then
/// ([`BackgroundPurge::NotBuilt`] where it is not built: nothing changes there).
pub fn set_background_purge(on: bool) -> BackgroundPurge {
    #[cfg(mimalloc_background_purge)]
    purge::set(on);
    #[cfg(not(mimalloc_background_purge))]
    let _ = on;
    background_purge()
}

/// The memory limit the background purge works under, as its thread read it when it started:
/// under a limit, once the process's resident memory passes half of it, freed memory goes back
/// at once instead of after the purge delay, so that a program that frees memory and then
/// needs it in another form (a C library's, a child's, its own `mmap`) is not killed at the
/// limit for memory it no longer uses (docs/memory-policy.md#container-limits).
///
/// ```
/// use mimalloc::policy::{self, MemoryLimit};
///
/// match policy::memory_limit() {
///     MemoryLimit::Limited { bytes, purge_from, .. } => {
///         assert_eq!(purge_from, bytes / 2);
///         println!("limited to {} MiB", bytes >> 20);
///     }
///     other => println!("{other:?}"),
/// }
/// ```
pub fn memory_limit() -> MemoryLimit {
    #[cfg(mimalloc_memory_limit)]
    return limit::state();
    #[cfg(not(mimalloc_memory_limit))]
    MemoryLimit::NotBuilt
}

/// Whether this build has anything for the policy to do around a large block.
const AROUND_LARGE: bool = cfg!(mimalloc_policy);

/// The size above which a block meets the policy: 64 KiB, mimalloc 3's largest medium block
/// (as this crate builds it, `MI_ENABLE_LARGE_PAGES=0`). A larger block gets a page of its own,
/// carved from the arena on mimalloc's slow path (about 5,000 instructions a pair), beside
/// which the policy's few dozen are under 1%; a medium block shares a page with seven or more
/// and costs about 330, which the policy would raise by an eighth (measured:
/// BENCHMARKS.md#the-policys-looks). mimalloc's heartbeat (`load.rs`) comes every thousand
/// allocations of more than 1 KiB: 64 MiB of growth at most in medium blocks, hundreds of MiB
/// in blocks of their own, which the policy therefore counts itself.
const MEDIUM_MAX: usize = 64 << 10;

/// A block of `size` bytes served by `serve`, one of the routing core's paths for blocks above
/// mimalloc's small size. A block of more than 64 KiB meets the policy: before it is served the
/// policy looks at the heap once every few MiB of such blocks (`load::before_block`), and at
/// every block of 2 MiB or more, which may switch the heap to huge pages first (so that it is
/// born in them); after, a block of 2 MiB or more that lies outside the heap's advised memory
/// is advised for huge pages itself. That part is out of line, so a smaller block's path stays
/// one compare and mimalloc's call, and the small paths, which never come here, keep the
/// registers they had.
#[inline(always)]
pub(crate) fn large(size: usize, serve: impl FnOnce() -> *mut c_void) -> *mut c_void {
    if AROUND_LARGE && size > MEDIUM_MAX {
        around_large(size, serve)
    } else {
        serve()
    }
}

#[inline(never)]
fn around_large(size: usize, serve: impl FnOnce() -> *mut c_void) -> *mut c_void {
    #[cfg(mimalloc_policy)]
    load::before_block(size);
    let block = serve();
    #[cfg(mimalloc_adaptive_thp)]
    huge::after_large(block.cast(), size);
    let _ = size;
    block
}

/// Bytes of address space the policy reserved for the heap, which mimalloc's own `reserved`
/// statistic leaves out (it counts memory the program hands it as the program's).
pub(crate) fn reserved() -> usize {
    #[cfg(mimalloc_adaptive_thp)]
    return reserved::reserved();
    #[cfg(not(mimalloc_adaptive_thp))]
    0
}
