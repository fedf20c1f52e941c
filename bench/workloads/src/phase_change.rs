//! A phase change under a memory limit: the burst of `idle` (about 300 MiB of small objects
//! built, read back and dropped), 1 s without an allocation, then 300 MiB that the program maps
//! itself and touches, as a C library, a child process or another runtime in the same container
//! would take it. Not one of the benchmark's workloads: the runner's `limit` command runs it in
//! a memory cgroup that holds one phase but not both (`bench/runner/src/limit.rs`), where an
//! allocator that still holds the burst's memory when the second phase comes is killed at the
//! limit for memory the program no longer uses.

use crate::{Outcome, Run, Scale, Timing, Workload, idle, mix};
use std::thread;
use std::time::Duration;

pub const WORKLOAD: Workload = Workload {
    name: "phase-change",
    summary: "300 MiB of small objects built and dropped; 1 s without an allocation; 300 MiB mapped by the program and touched",
    prepare,
    timing: Timing::Run,
    quiet: None,
};

const MIB: usize = 1 << 20;
/// The bytes the program maps itself in the second phase, at full scale.
const SECOND_PHASE: usize = 300 * MIB;
/// The quiet between the phases at full scale: shorter than mimalloc 3's purge delay (4 s by
/// default), so that what is purged by then went back because something made it go back.
const QUIET_MS: usize = 1_000;
const PAGE: usize = 4096;

fn prepare(scale: Scale) -> Run {
    let burst = idle::prepare(scale);
    let bytes = scale.of(SECOND_PHASE);
    let expected_pages = (0..bytes / PAGE).fold(0, |sum, page| mix(sum, page_byte(page)));
    Box::new(move || {
        let first = burst();
        thread::sleep(Duration::from_millis(scale.of(QUIET_MS) as u64));
        Outcome {
            checksum: mix(first.checksum, second_phase(bytes)),
            expected: mix(first.expected, expected_pages),
        }
    })
}

/// The byte written to page `page` of the second phase.
fn page_byte(page: usize) -> u64 {
    u64::from((page as u8) | 1)
}

/// Maps `bytes` outside the allocator, writes a byte into each page and reads them back.
#[cfg(unix)]
fn second_phase(bytes: usize) -> u64 {
    // SAFETY: an anonymous private mapping of `bytes`, unmapped below before returning; the
    // pointer is only used within it.
    unsafe {
        let none = -1;
        let memory = libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            none,
            0,
        );
        assert_ne!(memory, libc::MAP_FAILED, "mmap of the second phase");
        let pages = std::slice::from_raw_parts_mut(memory.cast::<u8>(), bytes);
        let sum = touch(pages);
        libc::munmap(memory, bytes);
        sum
    }
}

/// Elsewhere the second phase is the system allocator's, which is not the one measured.
#[cfg(not(unix))]
fn second_phase(bytes: usize) -> u64 {
    use std::alloc::{GlobalAlloc, Layout, System};
    let layout = Layout::from_size_align(bytes, PAGE).expect("a valid layout");
    // SAFETY: a non-zero size; the block is freed with the same layout before returning.
    unsafe {
        let memory = System.alloc(layout);
        assert!(!memory.is_null(), "the second phase's memory");
        let sum = touch(std::slice::from_raw_parts_mut(memory, bytes));
        System.dealloc(memory, layout);
        sum
    }
}

/// Writes each page's byte, then reads them all back.
fn touch(pages: &mut [u8]) -> u64 {
    for (page, chunk) in pages.chunks_mut(PAGE).enumerate() {
        chunk[0] = page_byte(page) as u8;
    }
    pages
        .chunks(PAGE)
        .fold(0, |sum, chunk| mix(sum, u64::from(chunk[0])))
}
