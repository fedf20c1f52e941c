//! `mimalloc::budget` with `Tracking<MiMalloc>` as the global allocator: what a scope is
//! charged (requested bytes, no credit for frees), that it is restored when its closure
//! unwinds, that two threads charge two scopes at once, that a `Usage` carries across threads,
//! that `Tracking`'s own figures stay exact while a scope is selected, and the soft limit.
//!
//! The soft-limit and window tests set process-wide values and assert process-wide figures,
//! so they run in a child process of their own (`child_` tests).

use mimalloc::budget::{self, OverLimit, Usage};
use mimalloc::{tracking, MiMalloc, Tracking};
use mimalloc_tests::{in_child, is_child, keep};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::thread;

#[global_allocator]
static GLOBAL: Tracking<MiMalloc> = Tracking::new(MiMalloc);

fn live() -> isize {
    tracking::thread_stats().live_bytes
}

#[test]
fn a_scope_charges_requested_bytes_and_gives_no_credit() {
    let before = vec![7u8; 4096];
    let mut usage = Usage::new();
    let kept = budget::scope(&mut usage, || {
        drop(before); // freeing what existed before earns nothing
        drop(keep(Vec::<u8>::with_capacity(1000)));
        let zeroed = vec![0u8; 500];
        let mut grown = Vec::<u8>::with_capacity(100);
        grown.reserve_exact(300); // a realloc from 100 to 300 bytes: 200 more
        grown.shrink_to(50); // a shrink gives nothing back
        assert_eq!(budget::current().map(Usage::bytes), Some(1800));
        (zeroed, grown)
    });
    assert_eq!(usage.bytes(), 1000 + 500 + 100 + 200);
    assert_eq!(budget::current(), None, "the scope ended with its closure");
    drop(kept);
    assert_eq!(
        usage.bytes(),
        1800,
        "frees outside the scope change nothing"
    );
}

#[test]
fn a_scope_adds_to_what_its_usage_held() {
    let mut usage = Usage::new();
    let a = budget::scope(&mut usage, || Box::new([1u8; 64]));
    let b = budget::scope(&mut usage, || Box::new([1u8; 36]));
    assert_eq!(usage.bytes(), 100);
    assert!(usage.exceeds(99) && !usage.exceeds(100));
    drop((a, b));
}

#[test]
fn a_scope_is_restored_when_its_closure_panics() {
    let mut outer = Usage::new();
    let mut inner = Usage::new();
    budget::scope(&mut outer, || {
        let before = keep(vec![0u8; 100]);
        let caught = panic::catch_unwind(AssertUnwindSafe(|| {
            budget::scope(&mut inner, || {
                let _doomed = keep(vec![0u8; 256]);
                // No panic hook, and a payload that allocates nothing: what the unwinder
                // itself allocates is all that comes on top of the 256 bytes.
                panic::resume_unwind(Box::new(()));
            })
        }));
        assert!(caught.is_err());
        assert_eq!(
            budget::current().map(Usage::bytes),
            Some(100),
            "the outer scope is selected again, without the inner one's charges"
        );
        let after = keep(vec![0u8; 50]);
        drop((before, after));
    });
    assert_eq!(outer.bytes(), 150);
    assert!(
        (256..256 + 1024).contains(&inner.bytes()),
        "the inner scope kept what it was charged before the panic: {}",
        inner.bytes()
    );
    assert_eq!(budget::current(), None);
}

#[test]
fn a_top_level_scope_is_unselected_when_its_closure_panics() {
    let mut usage = Usage::new();
    let caught = panic::catch_unwind(AssertUnwindSafe(|| {
        budget::scope(&mut usage, || {
            let _doomed = keep(vec![0u8; 4000]);
            panic::resume_unwind(Box::new(()));
        })
    }));
    assert!(caught.is_err());
    assert_eq!(budget::current(), None);
    assert!(usage.bytes() >= 4000, "{}", usage.bytes());
    // Allocations after the scope are charged to nothing.
    let charged = usage.bytes();
    drop(vec![0u8; 10_000]);
    assert_eq!(usage.bytes(), charged);
}

/// Two threads, each in its own scope, allocating in lockstep (each waits for the other
/// after every allocation, so the two scopes are selected at the same time throughout).
#[test]
fn two_threads_charge_two_scopes_at_once() {
    const ROUNDS: usize = 2000;
    static STEPS: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];
    let worker = |me: usize, size: usize| {
        move || {
            let mut blocks: Vec<Vec<u8>> = Vec::with_capacity(ROUNDS);
            let mut usage = Usage::new();
            budget::scope(&mut usage, || {
                for step in 1..=ROUNDS {
                    blocks.push(Vec::with_capacity(size));
                    STEPS[me].store(step, SeqCst);
                    while STEPS[1 - me].load(SeqCst) < step - 1 {
                        thread::yield_now();
                    }
                }
            });
            drop(blocks);
            usage.bytes()
        }
    };
    let a = thread::spawn(worker(0, 16));
    let b = thread::spawn(worker(1, 48));
    assert_eq!(a.join().unwrap(), (ROUNDS * 16) as u64);
    assert_eq!(b.join().unwrap(), (ROUNDS * 48) as u64);
    assert_eq!(
        budget::current(),
        None,
        "the spawning thread was charged nothing"
    );
}

#[test]
fn a_usage_carries_from_one_thread_to_the_next() {
    let mut usage = Usage::new();
    let first = budget::scope(&mut usage, || vec![0u8; 1000]);
    let (usage, second) = thread::spawn(move || {
        let block = budget::scope(&mut usage, || vec![0u8; 2000]);
        (usage, block)
    })
    .join()
    .unwrap();
    assert_eq!(usage.bytes(), 3000);
    drop((first, second));
}

#[test]
fn only_the_innermost_scope_is_charged() {
    let (mut outer, mut inner) = (Usage::new(), Usage::new());
    let blocks = budget::scope(&mut outer, || {
        let a = vec![0u8; 10];
        let b = budget::scope(&mut inner, || vec![0u8; 20]);
        let c = budget::unowned(|| {
            assert_eq!(budget::current(), None);
            vec![0u8; 40]
        });
        let d = vec![0u8; 80];
        (a, b, c, d)
    });
    assert_eq!((outer.bytes(), inner.bytes()), (90, 20));
    drop(blocks);
}

/// 64-bit only: a 32-bit process may well get the 2 GiB this asks for.
#[cfg(target_pointer_width = "64")]
#[test]
fn a_failed_allocation_is_not_charged() {
    let mut usage = Usage::new();
    let refused = budget::scope(&mut usage, || {
        let mut v: Vec<u8> = Vec::new();
        // More than any address space: mimalloc returns null.
        v.try_reserve_exact(isize::MAX as usize - 4096).is_err()
    });
    assert!(refused);
    assert_eq!(usage.bytes(), 0);
}

/// `Tracking`'s figures are those of a thread without a scope: the scope moves the thread's
/// window aside, and every figure is read from the real one.
#[test]
fn tracking_stays_exact_while_a_scope_is_selected() {
    let start = live();
    let mut usage = Usage::new();
    budget::scope(&mut usage, || {
        let a = keep(vec![0u8; 3000]);
        assert_eq!(live() - start, 3000);
        let stats = tracking::thread_stats();
        assert!(stats.unpublished_bytes.unsigned_abs() <= tracking::window());
        // Churn across many windows: allocations, growth, shrinks and frees.
        let mut held: Vec<Vec<u8>> = Vec::new();
        for i in 0..20_000usize {
            let mut v = Vec::with_capacity(1 + i % 700);
            v.reserve_exact(i % 1300);
            v.shrink_to(i % 300);
            held.push(v);
            if i % 3 == 0 {
                held.swap_remove(i % held.len());
            }
        }
        drop(held);
        drop(a);
        assert_eq!(live(), start);
    });
    assert_eq!(live(), start);
    assert!(usage.bytes() > 20_000 * 300, "{}", usage.bytes());
}

#[test]
fn a_fresh_thread_can_select_a_scope_first() {
    let bytes = thread::spawn(|| {
        let mut usage = Usage::new();
        let live_before = live();
        let block = budget::scope(&mut usage, || vec![1u8; 777]);
        assert_eq!(live() - live_before, 777);
        drop(block);
        usage.bytes()
    })
    .join()
    .unwrap();
    assert_eq!(bytes, 777);
}

#[test]
fn child_soft_limit_check_and_poll() {
    if !is_child() {
        in_child("child_soft_limit_check_and_poll", &[]);
        return;
    }
    assert!(budget::check().is_ok(), "no soft limit: always Ok");
    assert_eq!(budget::soft_limit(), None);
    tracking::flush();
    let base = tracking::stats().live_bytes;
    budget::set_soft_limit(Some(base + (1 << 20)));
    assert_eq!(budget::soft_limit(), Some(base + (1 << 20)));
    assert!(budget::check().is_ok());
    // Nothing is refused, and the check sees the thread's change at once, even one that
    // is still within the window.
    let big = vec![0u8; (1 << 20) + 1];
    let err = budget::check().unwrap_err();
    assert_eq!(err.limit, base + (1 << 20));
    assert!(err.live_bytes > err.limit);
    drop(big);
    assert!(budget::check().is_ok());
    let small = vec![0u8; 1000];
    budget::set_soft_limit(Some(base + 500));
    assert!(
        budget::check().is_err(),
        "1000 buffered bytes are published"
    );
    drop(small);
    // poll: over the limit by a little, it answers within a window's worth of growth.
    budget::set_soft_limit(Some(base + (1 << 20)));
    let mut held: Vec<Vec<u8>> = Vec::with_capacity(2048);
    while budget::poll().is_ok() {
        held.push(vec![0u8; 1024]);
        assert!(held.len() < 2048, "poll never reported the limit");
    }
    let over = held.len() * 1024;
    assert!(
        over > (1 << 20) - 2 * tracking::window() && over <= (1 << 20) + 2 * tracking::window(),
        "caught after {over} bytes"
    );
    budget::set_soft_limit(None);
    assert_eq!(budget::soft_limit(), None);
    assert!(budget::poll().is_ok());
}

#[test]
fn child_check_is_over_only_past_the_soft_limit() {
    if !is_child() {
        in_child("child_check_is_over_only_past_the_soft_limit", &[]);
        return;
    }
    tracking::flush();
    let base = tracking::stats().live_bytes;
    let block = keep(vec![0u8; 1000]); // within the window: check publishes it
    budget::set_soft_limit(Some(base + 1000));
    assert_eq!(budget::check(), Ok(()), "at the limit is not over it");
    budget::set_soft_limit(Some(base + 999));
    let err = budget::check().unwrap_err();
    assert_eq!(
        err,
        OverLimit {
            live_bytes: base + 1000,
            limit: base + 999
        }
    );
    assert_eq!(
        err.to_string(),
        format!(
            "{} live bytes, over the soft limit of {}",
            base + 1000,
            base + 999
        )
    );
    budget::set_soft_limit(None);
    drop(block);
}

#[test]
fn child_the_first_poll_after_a_publication_past_the_soft_limit_reports_it() {
    if !is_child() {
        in_child(
            "child_the_first_poll_after_a_publication_past_the_soft_limit_reports_it",
            &[],
        );
        return;
    }
    tracking::flush();
    budget::set_soft_limit(Some(tracking::stats().live_bytes + (1 << 20)));
    assert!(budget::poll().is_ok());
    let big = keep(vec![0u8; 2 << 20]); // past the window: published at once
    assert!(budget::poll().is_err());
    budget::set_soft_limit(None);
    drop(big);
}

/// `poll` checks for real on every 16th call, so that it notices other threads' growth, and
/// when the thread's own unpublished growth passes half a window.
#[test]
fn child_poll_notices_others_within_16_calls_and_its_own_past_half_a_window() {
    if !is_child() {
        in_child(
            "child_poll_notices_others_within_16_calls_and_its_own_past_half_a_window",
            &[],
        );
        return;
    }
    let mut held: Vec<Vec<u8>> = Vec::with_capacity(40);
    tracking::publish();
    tracking::take_published();
    assert_eq!(tracking::thread_stats().unpublished_bytes, 0);
    // Over the soft limit with nothing of this thread's own to publish, as when other threads
    // grew: one of 16 polls checks, and the count starts again there.
    budget::set_soft_limit(Some(tracking::stats().live_bytes - 1));
    assert!(
        (0..16).any(|_| budget::poll().is_err()),
        "16 polls that never checked"
    );
    // Under the limit, then over it by 40,000 bytes within the window, unpublished.
    budget::set_soft_limit(Some(tracking::stats().live_bytes + 10_000));
    for _ in 0..40 {
        held.push(vec![0u8; 1000]);
    }
    assert_eq!(tracking::thread_stats().unpublished_bytes, 40_000);
    assert!(
        budget::poll().is_err(),
        "40,000 unpublished bytes are over half a window"
    );
    budget::set_soft_limit(None);
}

#[test]
fn child_a_zero_window_publishes_every_call() {
    if !is_child() {
        in_child("child_a_zero_window_publishes_every_call", &[]);
        return;
    }
    tracking::set_window(Some(0));
    tracking::flush(); // the thread takes the new window when it next settles
    let base = tracking::stats().live_bytes;
    let a = Box::new([0u8; 100]);
    assert_eq!(tracking::stats().live_bytes, base + 100);
    assert_eq!(tracking::thread_stats().unpublished_bytes, 0);
    assert!(tracking::take_published());
    drop(a);
    assert_eq!(tracking::stats().live_bytes, base);
    tracking::set_window(Some(1 << 30));
    tracking::flush();
    // The first allocation after a flush settles (and is published); it takes the new window.
    let first = Box::new(1u8);
    assert_eq!(tracking::stats().live_bytes, base + 1);
    let b = vec![0u8; 1 << 20];
    assert_eq!(tracking::thread_stats().unpublished_bytes, 1 << 20);
    assert_eq!(
        tracking::stats().live_bytes,
        base + 1,
        "a wide window keeps it unpublished"
    );
    tracking::flush();
    assert_eq!(tracking::stats().live_bytes, base + 1 + (1 << 20));
    drop((first, b));
}

#[test]
fn child_a_refused_allocation_is_not_charged() {
    if !is_child() {
        in_child("child_a_refused_allocation_is_not_charged", &[]);
        return;
    }
    tracking::set_limit(Some(tracking::stats().charged_bytes + (1 << 20)));
    let mut usage = Usage::new();
    let refused = budget::scope(&mut usage, || {
        Vec::<u8>::new().try_reserve_exact(2 << 20).is_err()
    });
    assert!(refused);
    assert_eq!(usage.bytes(), 0);
    assert_eq!(tracking::stats().refused_allocations, 1);
}
