//! A shared library whose Rust code runs on mimalloc: how Rust ships as a Node addon, a Python
//! extension or a JNI/C# binding. A host program loads it (`dlopen`, `LoadLibraryW`) on one of
//! its own threads, which the library knows nothing of, and calls in from others that come and
//! go. `tests/tests/plugin.rs` is the host; mimalloc 3.3.x crashed there (upstream #1287).
//!
//! Every export catches a panic and aborts: unwinding into a C caller is undefined behaviour.

#[cfg(feature = "profile")]
mod profile;

use plugin_recipe::{checksum, Block, KEPT, WORKERS};
use std::os::raw::{c_int, c_void};
use std::thread;

mimalloc::assign_global!();

/// Allocates `blocks` blocks on the calling thread and `blocks` on each of `WORKERS` threads
/// it starts; each worker hashes and frees a share of the caller's blocks, and the caller hashes
/// and frees the workers' after they have exited. Returns the checksum of every block (see
/// `plugin-recipe`), for the host to compare.
#[no_mangle]
pub extern "C" fn plugin_work(seed: u64, blocks: u32) -> u64 {
    abort_on_panic(|| work(seed, blocks))
}

/// A block for the host to hold and hand to [`plugin_release`] later, from any thread: how an
/// addon's objects outlive the call that made them. It is block `KEPT` of the call with `seed`.
#[no_mangle]
pub extern "C" fn plugin_keep(seed: u64) -> *mut c_void {
    abort_on_panic(|| Box::into_raw(Box::new(Block::new(seed, KEPT))).cast::<c_void>())
}

/// Frees a block of [`plugin_keep`] and returns its hash, read before it was freed.
///
/// # Safety
///
/// `block` came from [`plugin_keep`] and is released once.
#[no_mangle]
pub unsafe extern "C" fn plugin_release(block: *mut c_void) -> u64 {
    // SAFETY: the caller passes a pointer of `plugin_keep`, which is a `Box<Block>`, once.
    let block = unsafe { Box::from_raw(block.cast::<Block>()) };
    abort_on_panic(move || block.hash())
}

/// 1 if a fresh `Box` of this library is in mimalloc's memory with its size usable, else 0.
#[no_mangle]
pub extern "C" fn plugin_uses_mimalloc() -> c_int {
    abort_on_panic(|| {
        let b = Box::new([7u8; 100]);
        let ptr: *const [u8; 100] = &*b;
        // SAFETY: asked only once mimalloc says `ptr` is in its memory, and `b` is live.
        let ours = mimalloc::heap::is_in_heap_region(ptr)
            && unsafe { mimalloc::heap::usable_size(ptr) } >= 100;
        c_int::from(ours)
    })
}

/// 1 if `ptr` lies in the memory of this library's mimalloc, else 0: the host asks about its
/// own blocks, which must not be.
#[no_mangle]
pub extern "C" fn plugin_owns(ptr: *const c_void) -> c_int {
    c_int::from(mimalloc::heap::is_in_heap_region(ptr))
}

/// Builds and frees about `mebibytes` MiB of small blocks, so that the library's heap has grown
/// as a working plugin's does: the memory policy's background purge starts its thread at
/// 16 MiB. Returns 1 if that thread runs afterwards, else 0.
#[no_mangle]
pub extern "C" fn plugin_grow(mebibytes: u32) -> c_int {
    abort_on_panic(|| {
        let blocks: Vec<Box<[u8]>> = (0..mebibytes as usize * 4096)
            .map(|i| vec![i as u8; 256].into_boxed_slice())
            .collect();
        drop(blocks);
        let running =
            mimalloc::policy::background_purge() == mimalloc::policy::BackgroundPurge::Running;
        c_int::from(running)
    })
}

/// Turns the memory policy's background purge off, as a product does before it unloads the
/// library on Windows (where a running purge thread holds the library loaded). Returns 1 if it
/// is off afterwards, else 0.
#[no_mangle]
pub extern "C" fn plugin_purge_off() -> c_int {
    abort_on_panic(|| {
        let now = mimalloc::policy::set_background_purge(false);
        c_int::from(now == mimalloc::policy::BackgroundPurge::Off)
    })
}

fn work(seed: u64, blocks: u32) -> u64 {
    let mut shares: Vec<Vec<Block>> = (0..WORKERS).map(|_| Vec::new()).collect();
    for i in 0..blocks {
        shares[(i % WORKERS) as usize].push(Block::new(seed, i));
    }
    let workers: Vec<_> = (1..)
        .zip(shares)
        .map(|(w, share)| {
            thread::spawn(move || {
                let first = blocks * w;
                let theirs: Vec<Block> = (first..first + blocks)
                    .map(|i| Block::new(seed, i))
                    .collect();
                // The caller's blocks are freed here, by a thread that did not allocate them.
                let sum = checksum(share.iter().map(Block::hash));
                drop(share);
                (sum, theirs)
            })
        })
        .collect();
    let mut sum = 0u64;
    for worker in workers {
        let (shared, theirs) = worker.join().expect("a worker of the plugin panicked");
        // Freed after their thread has exited: its pages were abandoned to whoever frees next.
        sum = sum
            .wrapping_add(shared)
            .wrapping_add(checksum(theirs.iter().map(Block::hash)));
    }
    sum
}

fn abort_on_panic<T>(f: impl FnOnce() -> T + std::panic::UnwindSafe) -> T {
    std::panic::catch_unwind(f).unwrap_or_else(|_| std::process::abort())
}
