//! The background purge's thread itself (`mimalloc::policy`, `policy/purge.rs`): it wakes every
//! quarter of mimalloc's purge delay and sleeps in between (read from the kernel's accounting of
//! the thread), it is one thread on a small stack, it is woken at once to stop, and a thread the
//! OS refuses is reported. `policy.rs` tests what it is for: memory back while a program is
//! quiet.

use mimalloc::policy::{self, BackgroundPurge};
use mimalloc::MiMalloc;
use mimalloc_tests::{in_child, is_child, keep, kernel, policy_lines, reports_resident_set};
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

const MIB: usize = 1 << 20;

/// A heap past the purge's threshold. The policy looks before each large block is served: the
/// second one sees the heap the first one grew.
fn grown_heap() -> (Vec<u8>, Vec<u8>) {
    let heap = keep(vec![1u8; policy::PURGE_FROM + 4 * MIB]);
    (heap, keep(vec![1u8; 2 * MIB]))
}

/// The `/proc/self/task` directory of the thread named `mimalloc-purge`.
fn purge_task() -> std::path::PathBuf {
    std::fs::read_dir("/proc/self/task")
        .expect("Linux lists a process's threads")
        .map(|task| task.unwrap().path())
        .find(|task| {
            std::fs::read_to_string(task.join("comm"))
                .map_or(false, |c| c.trim_end() == "mimalloc-purge")
        })
        .expect("a thread named mimalloc-purge")
}

/// The thread's CPU time (user and system, in clock ticks) and its voluntary context switches
/// (each a sleep it went into).
fn accounting(task: &std::path::Path) -> (u64, u64) {
    let stat = std::fs::read_to_string(task.join("stat")).unwrap();
    // After the command name in parentheses: state is field 3, utime 14 and stime 15.
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<u64> = after_name
        .split(' ')
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    let ticks = fields[11] + fields[12];
    let status = std::fs::read_to_string(task.join("status")).unwrap();
    let switches = status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .expect("a voluntary_ctxt_switches line")
        .trim()
        .parse()
        .unwrap();
    (ticks, switches)
}

/// A field of `/proc/self/status`, in kB.
fn status_kb(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
        .trim()
        .trim_end_matches(" kB")
        .parse()
        .unwrap()
}

/// With a purge delay of 50 ms the thread wakes every 12 ms: about 80 times a second, each a
/// sleep of its own, and uses next to no CPU in between (not a loop that polls a clock). It is
/// one thread more, on a stack of 256 KiB, not the C library's default of megabytes.
#[test]
#[cfg_attr(
    not(mimalloc_background_purge),
    ignore = "this build has no background purge (mimalloc 3 on Linux, Android, FreeBSD, macOS and Windows)"
)]
fn child_the_thread_sleeps_a_quarter_of_the_delay() {
    const TEST: &str = "child_the_thread_sleeps_a_quarter_of_the_delay";
    if !is_child() {
        if kernel::shows_threads(TEST) {
            let env = [
                ("MIMALLOC_PURGE_DELAY", "50"),
                ("MIMALLOC_ARENA_PURGE_MULT", "1"),
                ("MIMALLOC_VERBOSE", "1"),
            ];
            let out = in_child(TEST, &env);
            let lines = policy_lines(&out.stderr);
            assert!(
                lines.contains(&"mimalloc: policy: background purge every 12 ms".to_owned()),
                "{lines:?}"
            );
        }
        return;
    }
    assert_eq!(policy::set_background_purge(false), BackgroundPurge::Off);
    let heap = grown_heap();
    let (before, size_before) = (kernel::threads(), status_kb("VmSize:"));
    assert_eq!(policy::set_background_purge(true), BackgroundPurge::Running);
    let grown_by = status_kb("VmSize:") - size_before;
    assert_eq!(kernel::threads(), before + 1, "one thread for the purge");
    assert!(
        grown_by < 1024,
        "the thread took {grown_by} kB of address space"
    );

    let task = purge_task();
    std::thread::sleep(Duration::from_millis(100));
    let (ticks, switches) = accounting(&task);
    std::thread::sleep(Duration::from_secs(1));
    let (ticks, switches) = (accounting(&task).0 - ticks, accounting(&task).1 - switches);
    println!("in 1 s: {switches} sleeps, {ticks} ticks of CPU");
    assert!((20..=200).contains(&switches), "{switches} sleeps in 1 s");
    assert!(ticks <= 20, "{ticks} ticks of CPU in 1 s");

    assert_eq!(policy::set_background_purge(false), BackgroundPurge::Off);
    assert_eq!(kernel::threads(), before, "the thread was joined");
    drop(heap);
}

/// The period follows mimalloc's options as the thread reads them: a quarter of `purge_delay`
/// x `arena_purge_mult`, at least 10 ms, and 1 s where purging is off (a negative delay).
#[test]
#[cfg_attr(
    not(mimalloc_background_purge),
    ignore = "this build has no background purge (mimalloc 3 on Linux, Android, FreeBSD, macOS and Windows)"
)]
fn child_the_period_follows_mimallocs_delay() {
    const TEST: &str = "child_the_period_follows_mimallocs_delay";
    if is_child() {
        let heap = grown_heap();
        assert_eq!(policy::background_purge(), BackgroundPurge::Running);
        drop(heap);
        return;
    }
    for (delay, mult, period) in [("200", "3", 150), ("20", "1", 10), ("-1", "1", 1000)] {
        let env = [
            ("MIMALLOC_PURGE_DELAY", delay),
            ("MIMALLOC_ARENA_PURGE_MULT", mult),
            ("MIMALLOC_VERBOSE", "1"),
        ];
        let out = in_child(TEST, &env);
        let said = format!("mimalloc: policy: background purge every {period} ms");
        let lines = policy_lines(&out.stderr);
        assert!(lines.contains(&said), "delay {delay} x {mult}: {lines:?}");
    }
}

/// Turned off, the thread is woken from its sleep and joined at once, not at the end of its
/// period (here 10 s).
#[test]
#[cfg_attr(
    not(mimalloc_background_purge),
    ignore = "this build has no background purge (mimalloc 3 on Linux, Android, FreeBSD, macOS and Windows)"
)]
fn child_turning_it_off_wakes_the_thread() {
    const TEST: &str = "child_turning_it_off_wakes_the_thread";
    if !is_child() {
        let env = [
            ("MIMALLOC_PURGE_DELAY", "40000"),
            ("MIMALLOC_ARENA_PURGE_MULT", "1"),
        ];
        in_child(TEST, &env);
        return;
    }
    let heap = grown_heap();
    assert_eq!(policy::background_purge(), BackgroundPurge::Running);
    // Asleep by now.
    std::thread::sleep(Duration::from_millis(200));
    let start = Instant::now();
    assert_eq!(policy::set_background_purge(false), BackgroundPurge::Off);
    let took = start.elapsed();
    assert!(took < Duration::from_secs(3), "stopping took {took:?}");
    drop(heap);
}

/// A thread the OS refuses (here: no address space left for its stack) is reported as such,
/// with a warning, and not tried again.
#[test]
#[cfg_attr(
    not(all(mimalloc_background_purge, mimalloc_adaptive_thp)),
    ignore = "needs the policy's arenas, where the heap grows without new mappings (mimalloc 3 on 64-bit Linux)"
)]
fn child_a_refused_thread_is_reported() {
    const TEST: &str = "child_a_refused_thread_is_reported";
    if !is_child() {
        if !kernel::shows_threads(TEST) {
            return;
        }
        let out = in_child(TEST, &[]);
        let lines = policy_lines(&out.stderr);
        assert!(
            lines.iter().any(|line| line.starts_with(
                "mimalloc: warning: policy: no thread for the background purge (pthread_create: error "
            )),
            "{lines:?}"
        );
        return;
    }
    #[cfg(unix)]
    refused_for_want_of_address_space();
}

/// Grows the heap past the purge's threshold with no address space left for a thread's stack;
/// the purge must then be refused, and stay so. Unix only: elsewhere there is no background
/// purge, and the test is ignored.
#[cfg(unix)]
fn refused_for_want_of_address_space() {
    assert_eq!(policy::background_purge(), BackgroundPurge::Waiting);
    let mut heap = Vec::with_capacity(policy::PURGE_FROM + 4 * MIB);
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: reads into a live local.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) }, 0);
    let was = limit.rlim_cur;
    // The address space the process has now, and not a page more: the heap goes on growing
    // in the arena the policy reserved at start-up; a thread's stack does not fit.
    limit.rlim_cur = (status_kb("VmSize:") * 1024) as libc::rlim_t;
    // SAFETY: lowers this process's own soft limit; restored below.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) }, 0);
    heap.resize(heap.capacity(), 1u8);
    let large = keep(vec![1u8; 2 * MIB]);
    let state = policy::background_purge();
    limit.rlim_cur = was;
    // SAFETY: as above.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) }, 0);
    assert_eq!(state, BackgroundPurge::Refused);
    // Not tried again, and not turned on again by the API.
    assert_eq!(policy::set_background_purge(true), BackgroundPurge::Refused);
    drop((heap, large));
}

/// A fork waits for a purge in flight: a child forked in the middle of one would inherit
/// mimalloc's purge guard held and never give memory back. The thread here purges a freed
/// 64 MiB block 20-30 ms after each free; in each of 20 rounds a child is forked the moment the
/// kernel shows the thread running (it is otherwise asleep between purges), and checks that its
/// own freed memory goes back when it collects.
#[test]
#[cfg_attr(
    not(mimalloc_background_purge),
    ignore = "this build has no background purge (mimalloc 3 on Linux, Android, FreeBSD, macOS and Windows)"
)]
#[cfg_attr(
    feature = "asan",
    ignore = "under AddressSanitizer the resident set holds the sanitizer's shadow and quarantine"
)]
fn child_forks_during_purges_leave_the_children_purging() {
    const TEST: &str = "child_forks_during_purges_leave_the_children_purging";
    if !is_child() {
        if !reports_resident_set(TEST) {
            return;
        }
        if kernel::shows_threads(TEST) {
            let env = [
                ("MIMALLOC_PURGE_DELAY", "20"),
                ("MIMALLOC_ARENA_PURGE_MULT", "1"),
            ];
            in_child(TEST, &env);
        }
        return;
    }
    #[cfg(unix)]
    fork_during_purges();
}

/// 20 rounds of a 64 MiB block freed, and a child forked the moment the purge thread runs.
/// Unix only: elsewhere there is no background purge, and the test is ignored.
#[cfg(unix)]
fn fork_during_purges() {
    let heap = grown_heap();
    assert_eq!(policy::background_purge(), BackgroundPurge::Running);
    let stat = purge_task().join("stat");
    let mut caught_running = 0;
    for round in 0..20 {
        drop(keep(vec![1u8; 64 * MIB]));
        let deadline = Instant::now() + Duration::from_millis(100);
        while Instant::now() < deadline {
            let line = std::fs::read_to_string(&stat).unwrap();
            if line[line.rfind(')').unwrap() + 2..].starts_with('R') {
                caught_running += 1;
                break;
            }
        }
        collect_in_a_fork(round);
    }
    println!("forked while the thread ran: {caught_running} of 20");
    drop(heap);
}

/// Forks a child that frees 4 MiB it touched and collects: they must have gone back. Unix
/// only: elsewhere there is no background purge, and the test is ignored.
#[cfg(unix)]
fn collect_in_a_fork(round: usize) {
    // SAFETY: the check allocates through mimalloc (fork-safe: it and the background purge
    // prepare for fork), and prints nothing.
    let child = unsafe {
        mimalloc_tests::fork::in_a_fork(|| {
            // The child's own purge thread would start with its first large block, and could
            // be purging when the child collects.
            policy::set_background_purge(false);
            let before = mimalloc_tests::resident_bytes().unwrap();
            drop(keep(vec![1u8; 4 * MIB]));
            mimalloc::heap::collect(true);
            let after = mimalloc_tests::resident_bytes().unwrap();
            after < before + 2 * MIB
        })
    };
    if let Err(status) = child {
        panic!("round {round}: the child kept what it freed ({status:#x})");
    }
}
