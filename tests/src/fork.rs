//! A check run in a child forked from the test process itself (Unix only), for what `fork`
//! must leave working: the memory policy's purge thread is not copied into the child, and a
//! fork waits for a purge in flight (`tests/policy.rs`, `tests/purge_thread.rs`). Unlike
//! [`crate::run_child`], the child is a copy of this very process, with its heap as it is.

use std::panic::UnwindSafe;

/// Forks, runs `check` in the child and waits for it: `Ok` if `check` returned true, else the
/// child's wait status (`waitpid`'s), which the caller's assertion prints. A panic in `check`
/// fails it, and ends the child too instead of unwinding into the copy of the test harness; the
/// child ends with `_exit`, so that it does not run the parent's exit handlers a second time.
///
/// # Safety
///
/// `check` runs in a copy of a process that has other threads (the harness's, mimalloc's), of
/// which only the forking one goes on in the child: it must not wait for anything those threads
/// may have held at the fork, such as a lock. Allocating through mimalloc is fine (it, and the
/// memory policy's purge, prepare for fork); so is printing, where no other thread of the
/// process prints (a `child_` test, which runs alone in its process).
pub unsafe fn in_a_fork<F: FnOnce() -> bool + UnwindSafe>(check: F) -> Result<(), i32> {
    // SAFETY: the child runs only `check`, which the caller vouches for, and ends with `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let passed = std::panic::catch_unwind(check);
        // SAFETY: ends the child without running the parent's exit handlers twice.
        unsafe { libc::_exit(if matches!(passed, Ok(true)) { 0 } else { 1 }) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked, writing its status to a live local.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else {
        Err(status)
    }
}
