//! A Rust library on mimalloc, loaded into a program that is not: the `cdylib` of `tests/plugin`
//! (it calls `mimalloc::assign_global!()`), loaded with `dlopen` (`LoadLibraryW` on Windows) by
//! a host whose threads come and go, as Node loads an addon and Python an extension.
//!
//! mimalloc 3.3.x crashed here (upstream #1287, fixed in 3.4.1): once a thread that had called
//! into the library exited, the next thread to call in died of SIGSEGV on its first allocation.
//! The host's thread logic is C (`host/plugin_host.c`), so its threads are plain OS threads
//! with nothing of Rust's runtime on them. This binary installs no global allocator: the host
//! is on the system allocator and only the library is on (its own) mimalloc.
//!
//! Each scenario runs in a child process, so that a crash is this test's failure, with its
//! signal, rather than the harness's death. The library comes from `MIMALLOC_TEST_PLUGIN` when
//! that is set (`scripts/cross-test.sh` pre-builds it: no cargo where cross binaries run), and
//! is otherwise built with cargo, with this build's mimalloc features.

use mimalloc_tests::{emulator, is_child, run_child_with_timeout};
use plugin_recipe::{checksum, Block, KEPT, WORKERS};
use std::os::raw::{c_char, c_int};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// `HOST_CALLS` in `host/plugin_host.c`.
const CALLS: usize = 9;
/// Blocks per thread and call (the calling thread and each of the plugin's workers).
const BLOCKS: u32 = 12;
/// The environment variable that names the library, for the child and from cross-test.sh.
const PLUGIN_VAR: &str = "MIMALLOC_TEST_PLUGIN";

/// `struct host_run` in `host/plugin_host.c`.
#[repr(C)]
struct HostRun {
    sums: [u64; CALLS],
    kept_sums: [u64; CALLS],
    uses_mimalloc: c_int,
    owns_host_block: c_int,
    error: c_int,
    message: [c_char; 256],
}

#[cfg(windows)]
type HostChar = u16;
#[cfg(not(windows))]
type HostChar = c_char;

extern "C" {
    fn mimalloc_tests_plugin_host(
        path: *const HostChar,
        load_on_thread: c_int,
        seed: u64,
        blocks: u32,
        run: *mut HostRun,
    ) -> c_int;
}

/// The library path as the host's loader takes it: UTF-16 for `LoadLibraryW`, bytes for
/// `dlopen`; nul-terminated.
#[cfg(windows)]
fn host_path(path: &Path) -> Vec<HostChar> {
    use std::os::windows::ffi::OsStrExt;
    path.as_os_str().encode_wide().chain([0]).collect()
}

#[cfg(unix)]
fn host_path(path: &Path) -> Vec<HostChar> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    assert!(!bytes.contains(&0), "a library path with a nul byte");
    bytes.iter().map(|&b| b as c_char).chain([0]).collect()
}

/// The child's part: runs the host's calls and checks every answer against the same blocks
/// rebuilt here, in the system allocator's memory. Panics on the first wrong one.
fn host(load_on_thread: bool) {
    let path = PathBuf::from(std::env::var_os(PLUGIN_VAR).expect("the parent names the library"));
    let seed = 0x5eed_0000;
    let path_arg = host_path(&path);
    let mut run = HostRun {
        sums: [0; CALLS],
        kept_sums: [0; CALLS],
        uses_mimalloc: -1,
        owns_host_block: -1,
        error: -1,
        message: [0; 256],
    };
    // SAFETY: `path_arg` is nul-terminated and `run` is a `struct host_run`, both live for the
    // call; the host writes nothing else.
    let error = unsafe {
        mimalloc_tests_plugin_host(
            path_arg.as_ptr(),
            c_int::from(load_on_thread),
            seed,
            BLOCKS,
            &mut run,
        )
    };
    let message: Vec<u8> = run
        .message
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    assert_eq!(
        error,
        0,
        "the host failed on {}: {}",
        path.display(),
        String::from_utf8_lossy(&message)
    );
    for call in 0..CALLS {
        let call_seed = seed + call as u64;
        let blocks = (0..BLOCKS * (1 + WORKERS)).map(|i| Block::new(call_seed, i).hash());
        assert_eq!(
            run.sums[call],
            checksum(blocks),
            "call {call}: plugin_work's checksum"
        );
        let kept = Block::new(call_seed, KEPT).hash();
        assert_eq!(run.kept_sums[call], kept, "call {call}: the block it kept");
    }
    assert_eq!(
        run.uses_mimalloc, 1,
        "the plugin's Box is not in mimalloc's memory"
    );
    assert_eq!(
        run.owns_host_block, 0,
        "the host's malloc gave mimalloc's memory"
    );
    println!("PLUGIN OK: {CALLS} calls on {CALLS} host threads, every checksum right");
}

/// Runs `test`'s child with the library and fails with how the child ended unless it printed
/// that every check passed.
fn run_scenario(test: &str, load_on_thread: bool) {
    if is_child() {
        host(load_on_thread);
        return;
    }
    let library = plugin_library();
    let library = library.to_str().expect("a UTF-8 library path");
    let child = run_child_with_timeout(test, &[(PLUGIN_VAR, library)], Duration::from_secs(600));
    assert!(
        child.succeeded() && child.stdout.contains("PLUGIN OK"),
        "{test}: the host process {} (library {library}).\nstdout:\n{}\nstderr:\n{}",
        ending(&child.status),
        child.stdout,
        child.stderr
    );
}

/// How a child process ended, in words: the signal that killed it, or its Windows exception.
fn ending(status: &Option<std::process::ExitStatus>) -> String {
    let status = match status {
        Some(status) => status,
        None => return "hung, and was killed at the deadline".to_owned(),
    };
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            let name = match signal {
                libc::SIGSEGV => "SIGSEGV",
                libc::SIGBUS => "SIGBUS",
                libc::SIGABRT => "SIGABRT",
                libc::SIGILL => "SIGILL",
                _ => "a signal",
            };
            return format!("was killed by signal {signal} ({name})");
        }
    }
    match status.code() {
        // NTSTATUS codes of a crash, as the exit code of a Windows process.
        Some(code) if code as u32 == 0xC000_0005 => "crashed (STATUS_ACCESS_VIOLATION)".to_owned(),
        Some(code) if code as u32 >= 0xC000_0000 => {
            format!("crashed (NTSTATUS {:#x})", code as u32)
        }
        Some(code) => format!("exited with status {code}"),
        None => format!("ended with {status}"),
    }
}

/// The scenario of the report: a worker thread of the host loads the library, calls in and
/// exits; later threads call in one at a time, then four at once.
#[test]
#[cfg_attr(
    all(target_env = "musl", target_feature = "crt-static"),
    ignore = "a static musl program loads no library (musl has no dlopen there, and Rust no cdylib for the target)"
)]
fn child_plugin_loaded_by_a_thread_that_exits() {
    run_scenario("child_plugin_loaded_by_a_thread_that_exits", true);
}

/// Loaded by the host's long-lived thread, but first used by one that then exits.
#[test]
#[cfg_attr(
    all(target_env = "musl", target_feature = "crt-static"),
    ignore = "a static musl program loads no library (musl has no dlopen there, and Rust no cdylib for the target)"
)]
fn child_plugin_first_used_by_a_thread_that_exits() {
    run_scenario("child_plugin_first_used_by_a_thread_that_exits", false);
}

/// A library whose heap has grown runs the memory policy's background purge thread, whose code
/// goes with the library. On Linux unloading the library stops that thread first, and loading
/// it again starts a new one: three rounds of `dlopen`, growth and `dlclose`, counting the
/// threads named `mimalloc-purge` after each step. On Windows the thread holds the library
/// loaded instead (a DLL cannot join a thread while it is unloaded): three rounds of
/// `LoadLibraryW`, growth and `FreeLibrary`, after which the library is still loaded, then
/// the purge turned off, after which `FreeLibrary` unloads it.
#[test]
#[cfg_attr(
    not(all(mimalloc_background_purge, any(target_os = "linux", windows))),
    ignore = "the unload rounds run on Linux (the thread count read from /proc) and Windows; not on macOS and FreeBSD, whose stop at unload is untested here"
)]
#[cfg_attr(
    all(target_env = "musl", target_feature = "crt-static"),
    ignore = "a static musl program loads no library (musl has no dlopen there, and Rust no cdylib for the target)"
)]
fn child_unloaded_plugin_stops_its_purge_thread() {
    const TEST: &str = "child_unloaded_plugin_stops_its_purge_thread";
    if !is_child() {
        let library = plugin_library();
        let library = library.to_str().expect("a UTF-8 library path");
        let child =
            run_child_with_timeout(TEST, &[(PLUGIN_VAR, library)], Duration::from_secs(600));
        assert!(
            child.succeeded() && child.stdout.contains("UNLOAD OK"),
            "the host process {}.\nstdout:\n{}\nstderr:\n{}",
            ending(&child.status),
            child.stdout,
            child.stderr
        );
        return;
    }
    unload_rounds();
}

#[cfg(not(any(target_os = "linux", windows)))]
fn unload_rounds() {}

#[cfg(windows)]
fn unload_rounds() {
    let path = std::env::var_os(PLUGIN_VAR).expect("the parent names the library");
    let path = host_path(Path::new(&path));
    for round in 0..3 {
        assert!(
            !windows::loaded(&path),
            "round {round}: loaded before loading"
        );
        let grow: extern "C" fn(u32) -> c_int = windows::load(&path, "plugin_grow");
        assert_eq!(grow(64), 1, "round {round}: the purge thread did not start");
        windows::free(&path);
        assert!(
            windows::loaded(&path),
            "round {round}: a library whose purge thread runs was unloaded under it"
        );
        // The product's way out: hold the library, turn the purge off, free it.
        let off: extern "C" fn() -> c_int = windows::load(&path, "plugin_purge_off");
        assert_eq!(off(), 1, "round {round}: the purge is not off");
        windows::free(&path);
        assert!(
            !windows::loaded(&path),
            "round {round}: the library stayed loaded with its purge off"
        );
    }
    println!("UNLOAD OK: 3 rounds of load, growth and unload, each library held by its purge thread until it was off");
}

/// The loader calls of the Windows rounds, on the library's UTF-16 path.
#[cfg(windows)]
mod windows {
    use super::HostChar;
    use std::os::raw::{c_char, c_void};

    #[link(name = "kernel32")]
    extern "system" {
        fn LoadLibraryW(path: *const u16) -> *mut c_void;
        fn GetModuleHandleW(path: *const u16) -> *mut c_void;
        fn GetProcAddress(module: *mut c_void, name: *const c_char) -> *mut c_void;
        fn FreeLibrary(module: *mut c_void) -> i32;
    }

    /// Whether the library is loaded, without loading it.
    pub fn loaded(path: &[HostChar]) -> bool {
        // SAFETY: a nul-terminated path; no reference is taken.
        !unsafe { GetModuleHandleW(path.as_ptr()) }.is_null()
    }

    /// Loads the library (one reference more) and returns its export `name`, a function of
    /// type `F`.
    pub fn load<F: Copy>(path: &[HostChar], name: &str) -> F {
        assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
        let name = std::ffi::CString::new(name).unwrap();
        // SAFETY: a nul-terminated path and name; the library's initializers are the crate's.
        let function = unsafe {
            let module = LoadLibraryW(path.as_ptr());
            assert!(!module.is_null(), "LoadLibraryW failed");
            GetProcAddress(module, name.as_ptr())
        };
        assert!(!function.is_null(), "no export {name:?}");
        // SAFETY: the caller names an export of type `F` (tests/plugin/src/lib.rs), a function
        // pointer of the size checked above.
        unsafe { std::mem::transmute_copy(&function) }
    }

    /// Drops one reference to the library.
    pub fn free(path: &[HostChar]) {
        // SAFETY: a nul-terminated path; the reference dropped is one `load` took.
        let freed = unsafe {
            let module = GetModuleHandleW(path.as_ptr());
            assert!(!module.is_null(), "not loaded");
            FreeLibrary(module)
        };
        assert_ne!(freed, 0, "FreeLibrary failed");
    }
}

#[cfg(target_os = "linux")]
fn unload_rounds() {
    let path = std::env::var_os(PLUGIN_VAR).expect("the parent names the library");
    let path = std::ffi::CString::new(
        host_path(Path::new(&path))
            .iter()
            .map(|&c| c as u8)
            .take_while(|&c| c != 0)
            .collect::<Vec<u8>>(),
    )
    .expect("no nul byte in the path");
    for round in 0..3 {
        assert_eq!(
            mimalloc_tests::kernel::purge_threads(),
            0,
            "round {round}: a purge thread before loading"
        );
        // SAFETY: a nul-terminated path; the library's initializers are the crate's own.
        let library = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        assert!(!library.is_null(), "round {round}: dlopen failed");
        // SAFETY: the library is loaded; the name is nul-terminated.
        let grow = unsafe { libc::dlsym(library, b"plugin_grow\0".as_ptr().cast()) };
        assert!(!grow.is_null(), "round {round}: no plugin_grow");
        // SAFETY: `plugin_grow` has this signature (tests/plugin/src/lib.rs).
        let grow: extern "C" fn(u32) -> c_int = unsafe { std::mem::transmute(grow) };
        assert_eq!(grow(64), 1, "round {round}: the purge thread did not start");
        assert_eq!(
            mimalloc_tests::kernel::purge_threads(),
            1,
            "round {round}: purge threads while loaded"
        );
        // SAFETY: nothing of the library is used after this.
        let closed = unsafe { libc::dlclose(library) };
        assert_eq!(closed, 0, "round {round}: dlclose");
        // SAFETY: asks whether the library is still loaded, without loading it.
        let still = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
        assert!(
            still.is_null(),
            "round {round}: the library stayed loaded after dlclose"
        );
        assert_eq!(
            mimalloc_tests::kernel::purge_threads(),
            0,
            "round {round}: the purge thread outlived its library"
        );
    }
    println!("UNLOAD OK: 3 rounds of load, growth and unload, each purge thread stopped");
}

/// The library to load: `MIMALLOC_TEST_PLUGIN`, or a fresh build of `tests/plugin`.
fn plugin_library() -> PathBuf {
    if let Some(path) = std::env::var_os(PLUGIN_VAR) {
        return PathBuf::from(path);
    }
    if let Some(emulator) = emulator() {
        panic!(
            "under {emulator} there is no cargo to build the plugin: scripts/cross-test.sh \
             builds it and names it in {PLUGIN_VAR}"
        );
    }
    // Both tests ask at once; one cargo build at a time in a target directory anyway.
    static BUILT: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);
    let mut built = BUILT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    built.get_or_insert_with(build_plugin).clone()
}

/// The mimalloc features of this build, which the library is built with too: the product and
/// its plugin make the same choices. Not `asan` or `tsan`: a library built with a sanitizer
/// needs its runtime's symbols from the host, and a Rust test binary does not export them
/// (`dlopen` fails on `__asan_*`), so in those runs the plugin is an uninstrumented library in
/// an instrumented host, which the sanitizers allow.
fn features() -> Vec<&'static str> {
    let all = [
        ("v2", cfg!(feature = "v2")),
        ("secure", cfg!(feature = "secure")),
        ("debug", cfg!(feature = "debug")),
        ("local_dynamic_tls", cfg!(feature = "local_dynamic_tls")),
        ("guarded", cfg!(feature = "guarded")),
        ("valgrind", cfg!(feature = "valgrind")),
    ];
    all.iter().filter(|(_, on)| *on).map(|(f, _)| *f).collect()
}

fn build_plugin() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let target = env!("MIMALLOC_TESTS_TARGET");
    let features = features();
    let name = if features.is_empty() {
        "default".to_owned()
    } else {
        features.join("-")
    };
    // A directory per feature set: runs with other features, at the same time, do not meet.
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("plugin")
        .join(name);
    let mut build = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    build
        .current_dir(root)
        .args([
            "build",
            "--quiet",
            "-p",
            "mimalloc-test-plugin",
            "--target",
            target,
        ])
        .arg("--target-dir")
        .arg(&target_dir)
        // Built as a product builds it, without this run's flags (a sanitizer's, above all).
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS");
    if !features.is_empty() {
        let list: Vec<String> = features
            .iter()
            .map(|f| format!("mimalloc-test-plugin/{f}"))
            .collect();
        build.args(["--features", &list.join(",")]);
    }
    let status = build.status().expect("cargo runs");
    assert!(
        status.success(),
        "building the plugin with {features:?} failed"
    );
    let file = format!(
        "{}mimalloc_test_plugin{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    target_dir.join(target).join("debug").join(file)
}
