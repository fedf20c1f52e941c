//! The API works as the very first mimalloc call of a process. This binary does not install
//! mimalloc as the global allocator, and each test runs its body in a child process of its own,
//! so nothing has touched mimalloc before.

use core::alloc::Layout;
use mimalloc::{Arena, Heap, Sharing};
use mimalloc_tests::{is_child, run_child};

/// Runs `body` as the first mimalloc call of a child process; it must print `OK`.
fn first_call(test: &str, body: fn() -> bool) {
    if is_child() {
        if body() {
            println!("OK");
        }
        return;
    }
    let out = run_child(test, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("OK"),
        "{test}: {out:?}"
    );
}

/// mimalloc 2.3.2 crashed here (see `Arena::reserve`).
#[test]
fn child_reserve_an_arena() {
    first_call("child_reserve_an_arena", || {
        Arena::reserve(64 << 20, Sharing::Exclusive)
            .unwrap()
            .area()
            .1
            >= 64 << 20
    });
}

#[test]
fn child_create_a_heap() {
    first_call("child_create_a_heap", || {
        let heap = Heap::new();
        let p = heap.allocate(Layout::new::<[u8; 100]>()).unwrap();
        heap.contains(p.as_ptr())
    });
}

#[test]
fn child_read_statistics() {
    first_call("child_read_statistics", || {
        mimalloc::stats().reserved.current >= 0 && mimalloc::process_info().peak_rss > 0
    });
}

#[test]
fn child_set_an_option() {
    first_call("child_set_an_option", || {
        mimalloc::MiOption::PurgeDelay.set(0);
        mimalloc::MiOption::PurgeDelay.get() == 0
    });
}
