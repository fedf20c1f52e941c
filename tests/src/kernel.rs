//! What the Linux kernel shows of this process, in `/proc` and `/sys`: the memory policy's
//! decisions (which memory is advised for huge pages, its purge thread) show only there, so its
//! tests read them there (`tests/policy.rs`, `tests/policy_arenas.rs`, `tests/huge_pages.rs`,
//! `tests/purge_thread.rs`, `tests/plugin.rs`).
//!
//! The readers build on every target, as the tests that call them do, and panic where there is
//! no `/proc`: those tests run only in builds with the policy (Linux), and are ignored in the
//! others. The `shows_*` checks come first in a test, and skip it where the kernel's view cannot
//! be read or would not be this process's own.

/// The `VmFlags` of the mapping of this process that contains `address`, from
/// `/proc/self/smaps`: how the kernel backs a block (`hg`: advised for transparent huge pages,
/// `nh`: kept in small pages), which is how the tests see the policy's advice.
pub fn vm_flags(address: usize) -> Vec<String> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("Linux has /proc/self/smaps");
    let mut inside = false;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((start, end)) = first.split_once('-') {
            if let (Ok(start), Ok(end)) = (
                usize::from_str_radix(start, 16),
                usize::from_str_radix(end, 16),
            ) {
                inside = (start..end).contains(&address);
                continue;
            }
        }
        if let (true, Some(flags)) = (inside, line.strip_prefix("VmFlags:")) {
            return flags.split_whitespace().map(str::to_owned).collect();
        }
    }
    panic!("no mapping of this process contains {address:#x}")
}

/// Whether `flags` (from [`vm_flags`]) hold `flag`: the tests' checks of a mapping's advice
/// read as `has_flag(&flags, "hg")`.
pub fn has_flag(flags: &[String], flag: &str) -> bool {
    flags.iter().any(|f| f == flag)
}

/// How many threads this process has (`/proc/self/task`; panics where there is none).
pub fn threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("Linux lists a process's threads")
        .count()
}

/// How many threads of this process are named `mimalloc-purge`: the memory policy's background
/// purge, which the tests count as it starts and stops (it reads `/proc/self/task`, and panics
/// where there is none).
pub fn purge_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("Linux lists a process's threads")
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim_end() == "mimalloc-purge")
        .count()
}

/// Whether the checks that read the kernel's view of this process's mappings can run: a real
/// Linux kernel with transparent huge pages (not an emulator standing in for it). Says why
/// `test` is skipped where they cannot.
pub fn shows_huge_pages(test: &str) -> bool {
    if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists() {
        // Without them `madvise(MADV_HUGEPAGE)` fails, and no mapping is ever `hg`.
        crate::skip(test, "the kernel has no transparent huge pages");
        return false;
    }
    not_emulated(test, "mappings")
}

/// As [`shows_huge_pages`], and no memory tool either, for the checks that also count the
/// process's mappings and memory (the policy's arenas), which a tool adds its own to.
pub fn shows_mappings(test: &str) -> bool {
    shows_huge_pages(test)
        && no_memory_tool(test, "adds mappings and memory of its own to the figures")
}

/// Whether the checks that read the kernel's view of this process's threads can run: not
/// under an emulator, which stands in for the kernel, nor under a memory tool, whose own
/// threads, mappings and instrumentation the figures would count.
pub fn shows_threads(test: &str) -> bool {
    lists_threads(test, "accounting")
        && no_memory_tool(
            test,
            "adds threads, mappings and time of its own to the figures",
        )
}

/// Whether this process's threads can be read from `/proc/self/task` (Linux and Android), from
/// a real kernel, not an emulator standing in for it ([`not_emulated`]); says why `test` is
/// skipped where they cannot (macOS, FreeBSD and Windows have no such directory).
pub fn lists_threads(test: &str, what: &str) -> bool {
    if !std::path::Path::new("/proc/self/task").is_dir() {
        crate::skip(
            test,
            "this OS has no /proc/self/task to read the threads from",
        );
        return false;
    }
    not_emulated(test, what)
}

/// Whether a real kernel answers (natively or in a `qemu-system` guest), not an emulator that
/// stands in for it (Wine, qemu-user) and whose `what` the test would read instead; says why
/// `test` is skipped where one does. For the checks that a memory tool does not disturb; the
/// `shows_*` checks above begin with it.
pub fn not_emulated(test: &str, what: &str) -> bool {
    match crate::os_emulator() {
        Some(emulator) => {
            let why = format!("{emulator} stands in for the kernel, whose {what} the test reads");
            crate::skip(test, &why);
            false
        }
        None => true,
    }
}

/// Whether this build runs under no memory tool; says why `test` is skipped where it does.
fn no_memory_tool(test: &str, what_it_does: &str) -> bool {
    match crate::memory_tool() {
        Some(tool) => {
            crate::skip(test, &format!("{tool} {what_it_does}"));
            false
        }
        None => true,
    }
}
