//! `Tracking` used directly, not as the global allocator: only the calls the tests make are
//! counted (the harness allocates from the default allocator), so the process-wide figures are
//! exact and the tests can assert them to the byte. The tests share the process-wide account,
//! so each one holds `SERIAL` and leaves the account as it found it: blocks freed, its
//! thread's buffer flushed, no limit.

use mimalloc::budget::{self, Usage};
use mimalloc::{tracking, MiMalloc, Tracking};
use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex, MutexGuard};
use std::thread;

static T: Tracking<MiMalloc> = Tracking::new(MiMalloc);
static SERIAL: Mutex<()> = Mutex::new(());

/// How far a thread's unpublished change may go (the default window).
const BUFFER: usize = tracking::DEFAULT_WINDOW;

/// Holds the account for one test; on drop, flushes and removes the limit.
struct Account {
    _serial: MutexGuard<'static, ()>,
    /// Process-wide live bytes at the start (after a flush).
    base: usize,
}

impl Account {
    fn take() -> Account {
        let serial = SERIAL
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        tracking::set_limit(None);
        tracking::flush();
        Account {
            _serial: serial,
            base: tracking::stats().live_bytes,
        }
    }

    /// Process-wide live bytes above the start, after flushing this thread.
    fn live(&self) -> isize {
        tracking::flush();
        tracking::stats().live_bytes as isize - self.base as isize
    }
}

impl Drop for Account {
    fn drop(&mut self) {
        tracking::flush();
        tracking::set_limit(None);
    }
}

fn layout(size: usize, align: usize) -> Layout {
    Layout::from_size_align(size, align).unwrap()
}

/// A block through `T`, freed on drop.
struct Block {
    ptr: *mut u8,
    layout: Layout,
}

impl Block {
    fn new(size: usize, align: usize) -> Option<Block> {
        let layout = layout(size, align);
        // SAFETY: `size > 0` in every test; the block is freed once, in `drop`.
        let ptr = unsafe { T.alloc(layout) };
        (!ptr.is_null()).then(|| Block { ptr, layout })
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: allocated by `T` with this layout, freed once.
        unsafe { T.dealloc(self.ptr, self.layout) }
    }
}

// Blocks move between threads in these tests; each is owned by one thread at a time.
// SAFETY: a `Block` is a unique owner of its memory, like a `Box<[u8]>`.
unsafe impl Send for Block {}

fn thread_live() -> isize {
    tracking::thread_stats().live_bytes
}

#[test]
fn counts_are_exact_on_one_thread() {
    let account = Account::take();
    let start = thread_live();
    let mut blocks = Vec::new();
    let mut sum = 0isize;
    for (i, &size) in [1, 8, 24, 100, 4096, 65_536, 100_000, 1 << 20, 3 << 20]
        .iter()
        .enumerate()
    {
        for &align in &[1, 8, 64, 4096] {
            let layout = layout(size, align);
            // SAFETY: non-zero size; freed below with the same layout.
            let p = unsafe {
                if i % 2 == 0 {
                    T.alloc(layout)
                } else {
                    T.alloc_zeroed(layout)
                }
            };
            assert!(!p.is_null());
            assert_eq!(p as usize % align, 0);
            sum += size as isize;
            blocks.push((p, layout));
            assert_eq!(
                thread_live() - start,
                sum,
                "after allocating {size} at {align}"
            );
        }
    }
    assert_eq!(account.live(), sum, "process-wide, after a flush");
    for (p, layout) in blocks {
        // SAFETY: allocated above with `layout`, freed once.
        unsafe { T.dealloc(p, layout) };
        sum -= layout.size() as isize;
        assert_eq!(thread_live() - start, sum);
    }
    assert_eq!(account.live(), 0);
}

#[test]
fn realloc_counts_the_difference() {
    let account = Account::take();
    let start = thread_live();
    let mut layout = layout(16, 8);
    // SAFETY: non-zero sizes; each realloc passes the block's current layout; freed once.
    unsafe {
        let mut p = T.alloc(layout);
        p.write(0xA5);
        for &size in &[64, 1000, 70_000, 1 << 20, 200, 8, 5 << 20, 1] {
            p = T.realloc(p, layout, size);
            assert!(!p.is_null());
            assert_eq!(*p, 0xA5, "the first byte survives every realloc");
            layout = Layout::from_size_align(size, 8).unwrap();
            assert_eq!(thread_live() - start, size as isize);
            assert_eq!(account.live(), size as isize);
        }
        T.dealloc(p, layout);
    }
    assert_eq!(account.live(), 0);
}

#[test]
fn process_figures_lag_by_at_most_the_buffer() {
    let account = Account::take();
    // 100 small blocks, 10,000 bytes: may all sit in this thread's buffer.
    let small: Vec<Block> = (0..100).map(|_| Block::new(100, 8).unwrap()).collect();
    let unflushed = tracking::stats().live_bytes as isize - account.base as isize;
    assert!(
        (0..=10_000).contains(&unflushed),
        "published {unflushed} of 10,000 bytes"
    );
    assert_eq!(account.live(), 10_000, "exact after a flush");
    // 300 KiB in 1 KiB blocks: the thread publishes whenever its buffer passes 64 KiB.
    let more: Vec<Block> = (0..300).map(|_| Block::new(1024, 8).unwrap()).collect();
    let published = tracking::stats().live_bytes as isize - account.base as isize;
    let truth = 10_000 + 300 * 1024;
    assert!(
        published <= truth && published >= truth - BUFFER as isize,
        "published {published}, live {truth}: more than a buffer apart"
    );
    drop((small, more));
    assert_eq!(account.live(), 0);
}

#[test]
fn peaks_follow_the_high_water_mark() {
    let account = Account::take();
    tracking::reset_peak();
    let thread_start = tracking::thread_stats();
    assert_eq!(tracking::stats().peak_bytes, account.base);
    assert_eq!(
        thread_start.peak_bytes as isize,
        thread_start.live_bytes.max(0)
    );
    {
        // Past the buffer: published at once, so the peaks are exact.
        let _big = Block::new(1 << 20, 8).unwrap();
        assert_eq!(tracking::stats().peak_bytes, account.base + (1 << 20));
        assert_eq!(
            tracking::thread_stats().peak_bytes as isize,
            thread_start.live_bytes.max(0) + (1 << 20)
        );
    }
    let thread_peak = thread_start.live_bytes.max(0) as usize + (1 << 20);
    assert_eq!(
        tracking::thread_stats().peak_bytes,
        thread_peak,
        "the thread's peak stays"
    );
    // Publishing a lower live figure (a flush with a small block held) leaves it.
    let held = Block::new(100, 8).unwrap();
    tracking::flush();
    assert_eq!(tracking::thread_stats().peak_bytes, thread_peak);
    drop(held);
    assert_eq!(account.live(), 0);
    let stats = tracking::stats();
    assert_eq!(stats.peak_bytes, account.base + (1 << 20), "the peak stays");
    // Small blocks: the process peak is recorded when the thread publishes, so it may lag
    // by up to a buffer; after a flush at the high point it is exact.
    tracking::reset_peak();
    assert_eq!(
        tracking::thread_stats().peak_bytes as isize,
        thread_start.live_bytes.max(0),
        "the thread's peak restarts at its live bytes"
    );
    let small: Vec<Block> = (0..100).map(|_| Block::new(300, 8).unwrap()).collect();
    let peak = tracking::stats().peak_bytes;
    assert!(peak >= account.base && peak <= account.base + 30_000);
    tracking::flush();
    assert_eq!(tracking::stats().peak_bytes, account.base + 30_000);
    drop(small);
    assert_eq!(account.live(), 0);
}

#[test]
fn a_thread_publishes_when_its_change_leaves_64_kib_either_way() {
    let account = Account::take();
    assert_eq!(tracking::window(), 64 << 10, "the default window");
    let unpublished = || tracking::thread_stats().unpublished_bytes;
    let published = || tracking::stats().live_bytes - account.base;
    // The flush closed the window: the first block settles, is published, and opens one.
    let first = Block::new(1000, 8).unwrap();
    assert_eq!((published(), unpublished()), (1000, 0));
    // 63,000 bytes more stay within +64 KiB: buffered, and so are frees within the window.
    let mut blocks: Vec<Block> = (0..63).map(|_| Block::new(1000, 8).unwrap()).collect();
    assert_eq!((published(), unpublished()), (1000, 63_000));
    blocks.truncate(60);
    assert_eq!((published(), unpublished()), (1000, 60_000));
    // 6,000 more would take it to 66,000, past 65,536: the thread publishes it all.
    let over = Block::new(6000, 8).unwrap();
    assert_eq!((published(), unpublished()), (67_000, 0));
    // The same on the way down: 60,000 freed stay within -64 KiB, 66,000 do not.
    drop(blocks);
    assert_eq!((published(), unpublished()), (67_000, -60_000));
    drop(over);
    assert_eq!((published(), unpublished()), (1000, 0));
    drop(first);
    assert_eq!(account.live(), 0);
}

#[test]
fn take_published_reports_each_publication_once() {
    let _account = Account::take();
    tracking::take_published();
    assert!(!tracking::take_published(), "nothing since the last look");
    tracking::flush();
    assert!(
        !tracking::take_published(),
        "a flush with nothing to publish publishes nothing"
    );
    let big = Block::new(1 << 20, 8).unwrap(); // past the window: published at once
    assert!(tracking::take_published());
    assert!(!tracking::take_published());
    drop(big); // so is its free
    assert!(tracking::take_published(), "a free past the window");
    let small = Block::new(100, 8).unwrap();
    assert!(!tracking::take_published(), "a block within the window");
    tracking::flush();
    assert!(tracking::take_published(), "a flush that had it to publish");
    drop(small);
}

#[test]
fn a_flush_gives_back_the_threads_grant_and_publish_keeps_it() {
    let account = Account::take();
    let stats = tracking::stats();
    assert_eq!(
        stats.charged_bytes, stats.live_bytes,
        "no grant after a flush"
    );
    let block = Block::new(1000, 8).unwrap();
    let stats = tracking::stats();
    assert_eq!(
        stats.charged_bytes,
        stats.live_bytes + tracking::window(),
        "the thread settled for the block, and was granted a window's worth"
    );
    tracking::publish();
    let stats = tracking::stats();
    assert_eq!(stats.charged_bytes, stats.live_bytes + tracking::window());
    tracking::flush();
    let stats = tracking::stats();
    assert_eq!(stats.charged_bytes, stats.live_bytes);
    drop(block);
    assert_eq!(account.live(), 0);
}

#[test]
fn the_limit_refuses_exactly_past_it_on_one_thread() {
    let account = Account::take();
    let limit = account.base + 100_000;
    tracking::set_limit(Some(limit));
    assert_eq!(tracking::limit(), Some(limit));
    let refused = tracking::stats().refused_allocations;
    let start = thread_live();

    let a = Block::new(60_000, 8).expect("within the limit");
    let b = Block::new(40_000, 8).expect("exactly up to the limit");
    assert!(Block::new(1, 1).is_none(), "one byte past the limit");
    let zeroed = layout(8, 8);
    // SAFETY: non-zero size; null expected, so nothing to free.
    assert!(unsafe { T.alloc_zeroed(zeroed) }.is_null());
    assert_eq!(tracking::stats().refused_allocations, refused + 2);
    assert_eq!(thread_live() - start, 100_000, "refusals are not counted");
    assert_eq!(account.live(), 100_000);
    assert!(tracking::stats().charged_bytes <= limit);

    // A refused realloc leaves the block as it was, and counted as it was.
    // SAFETY: `b` is live with its layout; on null it is untouched and still owned by `b`.
    unsafe {
        b.ptr.write(7);
        assert!(T.realloc(b.ptr, b.layout, 40_001).is_null());
        assert_eq!(*b.ptr, 7);
    }
    assert_eq!(tracking::stats().refused_allocations, refused + 3);
    assert_eq!(account.live(), 100_000);

    // Freeing makes room again, to the byte.
    drop(b);
    let c = Block::new(40_000, 8).expect("room again after a free");
    assert!(Block::new(1, 1).is_none());
    drop((a, c));
    assert_eq!(account.live(), 0);
    tracking::set_limit(None);
    assert!(Block::new(1 << 20, 8).is_some(), "no limit, no refusal");
}

#[test]
fn a_lowered_limit_refuses_new_allocations() {
    let account = Account::take();
    let held = Block::new(1 << 20, 8).unwrap();
    tracking::set_limit(Some(account.base + 1000));
    tracking::flush(); // give back this thread's grant, as if it had been a while
    assert!(Block::new(100, 8).is_none(), "above the lowered limit");
    drop(held);
    assert!(Block::new(100, 8).is_some(), "below it again");
    assert_eq!(account.live(), 0);
}

/// An inner allocator that counts its calls.
struct Counting {
    calls: AtomicUsize,
}

// SAFETY: forwards to `MiMalloc` unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.calls.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded contract.
        unsafe { MiMalloc.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { MiMalloc.dealloc(ptr, layout) }
    }
}

/// An inner allocator that always fails.
struct Failing;

// SAFETY: never returns a block.
unsafe impl GlobalAlloc for Failing {
    unsafe fn alloc(&self, _: Layout) -> *mut u8 {
        std::ptr::null_mut()
    }
    unsafe fn dealloc(&self, _: *mut u8, _: Layout) {
        unreachable!("no block was ever handed out")
    }
}

#[test]
fn a_refused_allocation_never_reaches_the_inner_allocator() {
    let account = Account::take();
    let counting = Tracking::new(Counting {
        calls: AtomicUsize::new(0),
    });
    tracking::set_limit(Some(account.base + 4096));
    let big = layout(8192, 8);
    // SAFETY: non-zero size; null expected.
    assert!(unsafe { counting.alloc(big) }.is_null());
    assert_eq!(counting.inner().calls.load(Ordering::Relaxed), 0);
    let small = layout(1000, 8);
    // SAFETY: non-zero size; freed once with the same layout.
    unsafe {
        let p = counting.alloc(small);
        assert!(!p.is_null());
        assert_eq!(counting.inner().calls.load(Ordering::Relaxed), 1);
        counting.dealloc(p, small);
    }
    assert_eq!(account.live(), 0);
}

#[test]
fn inner_allocator_failures_are_not_counted() {
    let account = Account::take();
    let failing = Tracking::new(Failing);
    tracking::reset_peak();
    let start = thread_live();
    let refused = tracking::stats().refused_allocations;
    for &size in &[8, 1000, 1 << 20, isize::MAX as usize - 4096] {
        // SAFETY: non-zero sizes; nothing to free.
        unsafe {
            assert!(failing.alloc(layout(size, 8)).is_null());
            assert!(failing.alloc_zeroed(layout(size, 8)).is_null());
        }
        assert_eq!(thread_live(), start, "a failed {size}-byte allocation");
    }
    assert_eq!(account.live(), 0);
    assert_eq!(
        tracking::stats().peak_bytes,
        account.base,
        "failures leave no peak"
    );
    assert_eq!(
        tracking::stats().refused_allocations,
        refused,
        "not refusals either"
    );
    let stats = tracking::stats();
    assert_eq!(
        stats.charged_bytes, stats.live_bytes,
        "nor left charged against the limit"
    );
}

#[test]
fn a_scope_is_not_charged_for_an_allocation_the_inner_allocator_fails() {
    let account = Account::take();
    let failing = Tracking::new(Failing);
    // A first block opens this thread's window, which the scope then keeps aside: the failed
    // allocations below fit in it, as most allocations in a scope do.
    let held = Block::new(100, 8).unwrap();
    let start = thread_live();
    let mut usage = Usage::new();
    budget::scope(&mut usage, || {
        let kept = Block::new(300, 8).unwrap();
        // SAFETY: non-zero sizes; null expected, so nothing to free.
        unsafe {
            assert!(failing.alloc(layout(200, 8)).is_null());
            assert!(failing.alloc_zeroed(layout(200, 8)).is_null());
        }
        assert_eq!(budget::current().map(Usage::bytes), Some(300));
        assert_eq!(thread_live() - start, 300);
        drop(kept);
    });
    assert_eq!(usage.bytes(), 300);
    assert_eq!(thread_live(), start);
    drop(held);
    assert_eq!(account.live(), 0);
}

#[test]
fn blocks_freed_on_another_thread_keep_the_total() {
    let account = Account::take();
    let (tx, rx) = mpsc::channel::<Block>();
    let producer = thread::spawn(move || {
        assert_eq!(
            tracking::thread_stats().live_bytes,
            0,
            "a new thread starts at zero"
        );
        let mut bytes = 0;
        for i in 0..2_000 {
            let size = 1 + i * 37 % 3000;
            bytes += size as isize;
            tx.send(Block::new(size, 8).unwrap()).unwrap();
        }
        assert_eq!(tracking::thread_stats().live_bytes, bytes);
        bytes
    });
    let consumer = thread::spawn(move || {
        let mut freed = 0;
        for block in rx {
            freed += block.layout.size() as isize;
        }
        assert_eq!(tracking::thread_stats().live_bytes, -freed);
        tracking::flush();
        assert_eq!(
            tracking::thread_stats().peak_bytes,
            0,
            "a thread that only freed has no peak"
        );
        freed
    });
    let allocated = producer.join().unwrap();
    let freed = consumer.join().unwrap();
    assert_eq!(allocated, freed);
    assert_eq!(account.live(), 0, "both threads published at exit");
}

#[test]
fn exiting_threads_publish_what_they_buffered() {
    let account = Account::take();
    // Each thread leaves 3,000 bytes allocated: well inside its buffer, so only the flush at
    // thread exit publishes them.
    let handles: Vec<_> = (0..64)
        .map(|_| thread::spawn(|| (0..3).map(|_| Block::new(1000, 8).unwrap()).collect()))
        .collect();
    let blocks: Vec<Vec<Block>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(account.live(), 64 * 3000);
    drop(blocks);
    assert_eq!(account.live(), 0);
}

#[test]
fn the_limit_holds_with_threads_racing() {
    let account = Account::take();
    let limit = account.base + racing::ROOM;
    tracking::set_limit(Some(limit));
    tracking::reset_peak();
    let (blocks, max_held) = racing::race();
    racing::check_the_limit_held(&account, limit, max_held, &blocks);
    drop(blocks);
    assert_eq!(account.live(), 0);
}

/// The threads of `the_limit_holds_with_threads_racing`, and what it checks of their run.
mod racing {
    use super::{tracking, Account, Block};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Barrier};
    use std::thread;

    /// The threads that race for the room.
    const THREADS: usize = 8;
    /// The bytes above the account's start that the limit allows.
    pub(super) const ROOM: usize = 4 << 20;
    /// The largest request a thread makes.
    const MAX_REQUEST: usize = 4096;

    /// Runs the threads from a common start; returns the blocks each still holds when it
    /// stops, and the most bytes they held at once.
    pub(super) fn race() -> (Vec<Vec<Block>>, usize) {
        // Bytes the threads hold: raised after an allocation succeeds and lowered before a
        // free, so it is never above the true live bytes.
        let held = Arc::new(AtomicUsize::new(0));
        let max_held = Arc::new(AtomicUsize::new(0));
        let start = Arc::new(Barrier::new(THREADS));
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (held, max_held, start) = (held.clone(), max_held.clone(), start.clone());
                thread::spawn(move || racer(t, &held, &max_held, &start))
            })
            .collect();
        let blocks = handles.into_iter().map(|h| h.join().unwrap()).collect();
        (blocks, max_held.load(Ordering::SeqCst))
    }

    /// One thread: allocates and frees at random until refused 200 times; the last thing it
    /// does is a refused request, which gives back its buffer's grant.
    fn racer(t: usize, held: &AtomicUsize, max_held: &AtomicUsize, start: &Barrier) -> Vec<Block> {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ t as u64;
        let mut blocks = Vec::new();
        let mut refusals = 0;
        start.wait();
        while refusals < 200 {
            xorshift(&mut rng);
            if rng % 10 == 0 && !blocks.is_empty() {
                let block: Block = blocks.swap_remove(rng as usize % blocks.len());
                held.fetch_sub(block.layout.size(), Ordering::SeqCst);
                drop(block);
                continue;
            }
            let size = 1 + (rng >> 20) as usize % MAX_REQUEST;
            match Block::new(size, 8) {
                Some(block) => {
                    let now = held.fetch_add(size, Ordering::SeqCst) + size;
                    max_held.fetch_max(now, Ordering::SeqCst);
                    blocks.push(block);
                }
                None => refusals += 1,
            }
        }
        blocks
    }

    /// Advances a thread's xorshift random state.
    fn xorshift(rng: &mut u64) {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
    }

    /// No thread got past the limit, each stopped on refusals, and the account holds exactly
    /// what the threads still hold.
    pub(super) fn check_the_limit_held(
        account: &Account,
        limit: usize,
        max_held: usize,
        blocks: &[Vec<Block>],
    ) {
        let total: usize = blocks.iter().flatten().map(|b| b.layout.size()).sum();
        let stats = tracking::stats();
        assert!(max_held <= ROOM, "the limit was exceeded");
        assert!(
            stats.peak_bytes <= limit,
            "peak {} > limit {limit}",
            stats.peak_bytes
        );
        assert!(stats.refused_allocations >= THREADS * 200);
        assert_eq!(
            account.live(),
            total as isize,
            "every thread published at exit"
        );
        // Every thread stopped on a refusal, holding no grant: the last refusal had at most one
        // request's worth of room left.
        assert!(
            total + MAX_REQUEST > ROOM,
            "refused with {} bytes of room",
            ROOM - total
        );
    }
}
