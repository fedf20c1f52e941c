//! Allocate+free loops through this workspace's allocator other than as the global allocator,
//! for the runner's instruction counts: the same pair as `pairs box32`, in an owned heap and
//! through the `Allocator` impls.

use allocator_api2::alloc::Allocator;
use allocator_api2::boxed::Box;
use mimalloc::{Heap, MiMalloc};
use std::alloc::Layout;
use std::hint::black_box;
use std::process::ExitCode;

/// The loops: `Heap::allocate`/`deallocate` of 32 bytes, and an allocator-api2 `Box` of
/// `[u8; 32]` in `&Heap` and in `MiMalloc` (the `Allocator` impls).
pub const KINDS: [&str; 3] = ["heap32", "heap-box32", "api2-box32"];

/// Runs `pairs <kind> <count>` if `kind` is one of [`KINDS`]; `None` otherwise.
pub fn run(args: &[String]) -> Option<ExitCode> {
    let [command, kind, count] = args else {
        return None;
    };
    if command != "pairs" || !KINDS.contains(&kind.as_str()) {
        return None;
    }
    let Ok(count) = count.parse::<u64>() else {
        eprintln!("the count must be a number");
        return Some(ExitCode::from(2));
    };
    let heap = Heap::new();
    let byte = black_box(count as u8);
    match kind.as_str() {
        "heap32" => heap_pairs(&heap, count, byte),
        "heap-box32" => box_pairs(&heap, count, byte),
        _ => box_pairs(MiMalloc, count, byte),
    }
    Some(ExitCode::SUCCESS)
}

#[inline(never)]
fn heap_pairs(heap: &Heap, count: u64, byte: u8) {
    let layout = Layout::new::<[u8; 32]>();
    for _ in 0..count {
        let block = heap.allocate(layout).expect("memory");
        // SAFETY: a fresh 32-byte block, written once and freed once with its layout.
        unsafe {
            block.as_ptr().write(byte);
            black_box(block);
            heap.deallocate(block, layout);
        }
    }
}

#[inline(never)]
fn box_pairs(allocator: impl Allocator, count: u64, byte: u8) {
    for _ in 0..count {
        let boxed = Box::new_in(black_box([byte; 32]), &allocator);
        black_box(&boxed);
    }
}
