//! Blocks allocated on one thread and freed on another (mimalloc's delayed, atomic free path),
//! with every block's contents checked by the thread that frees it.

use mimalloc::MiMalloc;
use mimalloc_tests::Pattern;
use std::alloc::{GlobalAlloc, Layout};
use std::sync::mpsc;
use std::thread;

/// A block in flight between threads (raw pointers are not `Send`).
struct Block {
    addr: usize,
    layout: Layout,
    seed: u8,
}

fn layout_for(i: usize) -> Layout {
    let size = match i % 7 {
        0 => 8,
        1 => 24 + i % 100,
        2 => 1000 + i % 3000,
        3 => 16_384,
        4 => 100_000 + i % 50_000,
        5 => 1 << 20,
        _ => 1 + i % 64,
    };
    let align = if i % 5 == 0 { 64 << (i % 4) } else { 8 };
    Layout::from_size_align(size, align).unwrap()
}

#[test]
fn blocks_freed_by_other_threads_keep_their_contents() {
    const THREADS: usize = 4;
    const PER_THREAD: usize = 2_000;
    let (senders, receivers): (Vec<_>, Vec<_>) =
        (0..THREADS).map(|_| mpsc::channel::<Block>()).unzip();
    let mut handles = Vec::new();
    for (t, rx) in receivers.into_iter().enumerate() {
        let tx = senders[(t + 1) % THREADS].clone();
        handles.push(thread::spawn(move || {
            for i in 0..PER_THREAD {
                let layout = layout_for(i + t);
                let seed = (i * 7 + t) as u8;
                // SAFETY: non-zero size; ownership of the block moves to the receiving thread.
                let p = unsafe { MiMalloc.alloc(layout) };
                assert!(!p.is_null());
                assert_eq!(p as usize % layout.align(), 0);
                // SAFETY: `p` is a live block of `layout.size()` bytes.
                unsafe { Pattern::new(seed).fill(p, layout.size()) };
                tx.send(Block {
                    addr: p as usize,
                    layout,
                    seed,
                })
                .unwrap();
            }
            drop(tx);
            let mut freed = 0;
            for block in rx {
                let p = block.addr as *mut u8;
                // SAFETY: the sender gave up the block; it is live, filled, and freed once here.
                unsafe {
                    Pattern::new(block.seed).assert_at(
                        p,
                        block.layout.size(),
                        "cross-thread block",
                    );
                    MiMalloc.dealloc(p, block.layout);
                }
                freed += 1;
            }
            freed
        }));
    }
    drop(senders);
    let freed: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(freed, THREADS * PER_THREAD);
}

/// Blocks that outlive the thread that allocated them are freed later by the main thread
/// (mimalloc must keep the exited thread's abandoned pages usable).
#[test]
fn blocks_outlive_their_thread() {
    let blocks: Vec<Block> = thread::spawn(|| {
        (0..5_000)
            .map(|i| {
                let layout = layout_for(i);
                // SAFETY: non-zero size; the block is handed to the main thread.
                let p = unsafe { MiMalloc.alloc(layout) };
                assert!(!p.is_null());
                // SAFETY: live block of `layout.size()` bytes.
                unsafe { Pattern::new(i as u8).fill(p, layout.size()) };
                Block {
                    addr: p as usize,
                    layout,
                    seed: i as u8,
                }
            })
            .collect()
    })
    .join()
    .unwrap();
    for block in blocks {
        // SAFETY: each block is live, owned here, and freed once.
        unsafe {
            Pattern::new(block.seed).assert_at(
                block.addr as *const u8,
                block.layout.size(),
                "orphaned block",
            );
            MiMalloc.dealloc(block.addr as *mut u8, block.layout);
        }
    }
}
