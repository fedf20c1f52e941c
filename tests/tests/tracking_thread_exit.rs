//! A thread's last frees are counted: blocks that a thread's own thread-local destructors free
//! while it exits, which may run after the thread's tracking state has been flushed and freed
//! (on Windows GNU targets, whose state lives behind Win32 TLS and FLS indexes, the FLS
//! callback can run first: later calls must then be settled one by one, not buffered in a
//! state nobody flushes again).

use mimalloc::{tracking, MiMalloc, Tracking};
use mimalloc_tests::{in_child, is_child, tracked_process_bytes};
use std::cell::RefCell;
use std::thread;

#[global_allocator]
static GLOBAL: Tracking<MiMalloc> = Tracking::new(MiMalloc);

/// Less than a window: a free of it is buffered by a thread whose state still buffers.
const HELD: usize = 3000;

thread_local! {
    /// Freed by its destructor when the thread exits.
    static BLOCK: RefCell<Option<Box<[u8; HELD]>>> = const { RefCell::new(None) };
}

/// The process-wide figure, exact (the child runs this one test on a thread of its own while
/// the harness's main thread waits): threads that leave a block to their thread-local
/// destructor to free leave the figure where it was.
#[test]
fn child_frees_by_exiting_threads_are_counted() {
    const THREADS: usize = 32;
    if !is_child() {
        in_child("child_frees_by_exiting_threads_are_counted", &[]);
        return;
    }
    // Whatever std sets up lazily on the first spawn, and on the first use of `BLOCK` (the
    // OS key of a `thread_local!` where std has no native thread-locals), is set up before the
    // baseline.
    thread::spawn(|| BLOCK.with(|block| block.borrow().is_none()))
        .join()
        .unwrap();
    let base = tracked_process_bytes();
    for _ in 0..THREADS {
        thread::spawn(|| {
            // The thread's tracking state first (its exit flush registered), then the block
            // whose destructor runs at exit.
            drop(vec![0u8; tracking::window() + 1]);
            BLOCK.with(|block| *block.borrow_mut() = Some(Box::new([1u8; HELD])));
        })
        .join()
        .unwrap();
    }
    assert_eq!(
        tracked_process_bytes() - base,
        0,
        "bytes left counted by {THREADS} threads"
    );
}
