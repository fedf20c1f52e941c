//! `MIMALLOC_PROFILE=<base>`: the profile any program on this crate gets without a code change.
//! mimalloc starts that profiler itself, as its documentation says, and writes its snapshots:
//! along the way at the intervals of `MIMALLOC_PROFILE_ALLOC_INTERVAL` (and the in-use and time
//! intervals), and the last one when it shuts down. This module completes them as
//! [`Profiler`]'s are completed (and symbolized, see [`symbolizes`]), once mimalloc has written
//! the last: a finalizer of priority 100, which runs after mimalloc's own (101), at exit or when
//! the library that holds this crate is unloaded. `crate::startup` reads the variable at load,
//! after the memory policy.
//!
//! The files are found as mimalloc names them: the variable is read as mimalloc reads it (any
//! case, under 1024 bytes, ignored by setuid and setgid programs; an extension of the file name
//! is dropped, and `.heap` or `.text` picks the text format), and the snapshots are numbered
//! from 1. A file of that name older than the process is an earlier run's and is left alone.
//!
//! [`Profiler`]: super::Profiler

use super::{complete_file, snapshot_path, Format};
use std::boxed::Box;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::time::{Duration, SystemTime};

/// mimalloc's buffer for the variable's value (`_mi_pprof_profiler_init`): a longer value is
/// not read.
const VALUE_BUFFER: usize = 1024;

/// How much older than the process a snapshot's time may read and still be this run's: file
/// systems keep modification times coarser than the clock (FAT's 2 seconds at worst).
const CLOCK_SLACK: Duration = Duration::from_secs(2);

#[used]
#[link_section = ".fini_array.00100"]
static COMPLETE: extern "C" fn() = complete;

/// Where this run's snapshots are, if `MIMALLOC_PROFILE` asked for them; set once at load.
static SNAPSHOTS: AtomicPtr<Snapshots> = AtomicPtr::new(core::ptr::null_mut());

#[derive(Debug, PartialEq)]
struct Snapshots {
    base: PathBuf,
    format: Format,
    /// Whether the snapshots name their frames ([`symbolizes`]).
    symbolize: bool,
    /// When the process loaded this code, less [`CLOCK_SLACK`].
    since: SystemTime,
}

/// When the program loads, after the memory policy: reads `MIMALLOC_PROFILE`.
pub(crate) fn load() {
    if elevated() {
        return;
    }
    if let Some(mut snapshots) = variable("MIMALLOC_PROFILE").and_then(|v| requested(&v)) {
        let asked = variable("MIMALLOC_PROFILE_SYMBOLIZE");
        snapshots.symbolize = symbolizes(snapshots.format, asked.as_deref());
        SNAPSHOTS.store(Box::into_raw(Box::new(snapshots)), Ordering::Release);
    }
}

/// Completes this run's snapshots, `<base>.0001.pb` on, up to the first that does not exist.
extern "C" fn complete() {
    // SAFETY: `SNAPSHOTS` is null or a `Snapshots` leaked at load for the rest of the process.
    let snapshots = match unsafe { SNAPSHOTS.load(Ordering::Acquire).as_ref() } {
        Some(snapshots) => snapshots,
        None => return,
    };
    for sequence in 1.. {
        let path = snapshot_path(&snapshots.base, snapshots.format, sequence);
        let written = match std::fs::metadata(&path).and_then(|m| m.modified()) {
            Ok(written) => written,
            Err(_) => return,
        };
        if written >= snapshots.since {
            // Nothing to report to at exit: a snapshot that cannot be completed (a read-only
            // directory, a file mimalloc left half-written on a full disk) stays as written.
            let _ = complete_file(&path, snapshots.format, snapshots.symbolize);
        }
    }
}

/// Whether `MIMALLOC_PROFILE`'s snapshots are symbolized: `MIMALLOC_PROFILE_SYMBOLIZE=1` or `0`
/// says; unset, protobuf snapshots are (every protobuf reader takes the names, with or without
/// the binary) and text ones are not (gperftools' `pprof` refuses a symbolized profile given
/// with the binary, which is how it is mostly run).
fn symbolizes(format: Format, asked: Option<&OsStr>) -> bool {
    match asked {
        Some(value) => value != "0",
        None => format == Format::Pprof,
    }
}

/// Whether the process runs with more privileges than its user has (setuid or setgid), whose
/// environment must not choose files it writes: mimalloc's own start checks the same. Only a
/// setuid or setgid binary tells (`.cargo/mutants.toml` lists it); [`privileged`] is the rule.
fn elevated() -> bool {
    // SAFETY: these calls have no preconditions and cannot fail.
    let ids = unsafe {
        [
            libc::getuid(),
            libc::geteuid(),
            libc::getgid(),
            libc::getegid(),
        ]
    };
    privileged(ids)
}

/// Whether the real and effective user or group ids differ.
fn privileged([uid, euid, gid, egid]: [u32; 4]) -> bool {
    uid != euid || gid != egid
}

/// The first variable named `name` in any case, as mimalloc reads its variables on Linux.
fn variable(name: &str) -> Option<OsString> {
    std::env::vars_os()
        .find(|(key, _)| key.as_bytes().eq_ignore_ascii_case(name.as_bytes()))
        .map(|(_, value)| value)
}

/// The snapshots `MIMALLOC_PROFILE=value` asks mimalloc for, if it starts its profiler for it.
fn requested(value: &OsStr) -> Option<Snapshots> {
    if value.is_empty() || value.len() >= VALUE_BUFFER {
        return None;
    }
    let (base, format) = base_and_format(value);
    let since = SystemTime::now()
        .checked_sub(CLOCK_SLACK)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    Some(Snapshots {
        base,
        format,
        symbolize: true,
        since,
    })
}

/// The snapshots' base and format, as `mi_pprof_profiler_new` reads the name: an extension
/// of the last path component is dropped, and `.heap` or `.text` picks the text format.
fn base_and_format(value: &OsStr) -> (PathBuf, Format) {
    let bytes = value.as_bytes();
    let name = bytes
        .rsplit(|&b| b == b'/' || b == b'\\')
        .next()
        .unwrap_or_default();
    let name_start = bytes.len() - name.len();
    let dot = match bytes[name_start..].iter().rposition(|&b| b == b'.') {
        Some(dot) => name_start + dot,
        None => return (PathBuf::from(value), Format::Pprof),
    };
    let format = match &bytes[dot + 1..] {
        b"heap" | b"text" => Format::Text,
        _ => Format::Pprof,
    };
    (PathBuf::from(OsStr::from_bytes(&bytes[..dot])), format)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(value: &str) -> (PathBuf, Format) {
        base_and_format(OsStr::new(value))
    }

    #[test]
    fn the_base_is_read_as_mimalloc_reads_it() {
        let pb = Format::Pprof;
        let text = Format::Text;
        assert_eq!(parsed("/tmp/heap"), (PathBuf::from("/tmp/heap"), pb));
        assert_eq!(parsed("/tmp/heap.pb"), (PathBuf::from("/tmp/heap"), pb));
        assert_eq!(parsed("/tmp/heap.out"), (PathBuf::from("/tmp/heap"), pb));
        assert_eq!(parsed("/tmp/heap.heap"), (PathBuf::from("/tmp/heap"), text));
        assert_eq!(parsed("run.text"), (PathBuf::from("run"), text));
        assert_eq!(parsed("a.b/heap"), (PathBuf::from("a.b/heap"), pb));
        assert_eq!(parsed("a.b\\heap"), (PathBuf::from("a.b\\heap"), pb));
        assert_eq!(parsed("a/b.c.heap"), (PathBuf::from("a/b.c"), text));
        assert_eq!(parsed("a/.heap"), (PathBuf::from("a/"), text));
        assert_eq!(parsed("a./heap"), (PathBuf::from("a./heap"), pb));
        assert_eq!(parsed(".heap"), (PathBuf::from(""), text));
    }

    #[test]
    fn a_setuid_or_setgid_process_is_privileged() {
        assert!(!privileged([1000, 1000, 100, 100]));
        assert!(privileged([1000, 0, 100, 100]));
        assert!(privileged([1000, 1000, 100, 0]));
        assert!(privileged([1000, 0, 100, 0]));
    }

    #[test]
    fn values_mimalloc_does_not_read_ask_for_nothing() {
        assert_eq!(requested(OsStr::new("")), None);
        let long = "x".repeat(VALUE_BUFFER);
        assert_eq!(requested(OsStr::new(&long)), None);
        let longest = requested(OsStr::new(&long[1..])).expect("1023 bytes are read");
        assert_eq!(longest.base, PathBuf::from(&long[1..]));
        let now = SystemTime::now();
        assert!(longest.since <= now - CLOCK_SLACK && longest.since > now - 2 * CLOCK_SLACK);
    }

    #[test]
    fn protobuf_snapshots_are_symbolized_unless_asked_otherwise() {
        let (pb, text) = (Format::Pprof, Format::Text);
        assert!(symbolizes(pb, None));
        assert!(!symbolizes(text, None));
        assert!(!symbolizes(pb, Some(OsStr::new("0"))));
        assert!(symbolizes(text, Some(OsStr::new("1"))));
        assert!(!symbolizes(text, Some(OsStr::new("0"))));
    }

    #[test]
    fn the_variable_is_found_in_any_case() {
        std::env::set_var("mImAlLoC_TeSt_VaRiAbLe", "value");
        assert_eq!(
            variable("MIMALLOC_TEST_VARIABLE"),
            Some(OsString::from("value"))
        );
        assert_eq!(variable("MIMALLOC_TEST_VARIABL"), None);
        std::env::remove_var("mImAlLoC_TeSt_VaRiAbLe");
    }
}
