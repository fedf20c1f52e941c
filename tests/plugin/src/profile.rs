//! The worked heap profile of `prof/examples/known_profile.rs`, taken inside a shared library:
//! `scripts/check-profile-readers.sh` loads this library into Python (a host that is not on
//! mimalloc) and has pprof's readers symbolize the library's frames.

use mimalloc::profile::{Format, Profiler};
use std::ffi::CStr;
use std::os::raw::{c_char, c_int};
use std::path::Path;

const BLOCK: usize = 64 << 10;

#[inline(never)]
fn plugin_keeps_48_mib() -> Vec<Vec<u8>> {
    blocks(48 << 20)
}

#[inline(never)]
fn plugin_keeps_8_mib() -> Vec<Vec<u8>> {
    blocks(8 << 20)
}

/// `bytes` of blocks, allocated in the caller's frame. The check after `collect` is what keeps
/// that frame in the sampled stacks: with `collect` last, the compiler may make it a tail call
/// (a jump that leaves the caller's frame), and whether it does changes with the code around it.
#[inline(always)]
fn blocks(bytes: usize) -> Vec<Vec<u8>> {
    let blocks: Vec<Vec<u8>> = (0..bytes / BLOCK).map(|i| vec![i as u8; BLOCK]).collect();
    assert_eq!(blocks.len(), bytes / BLOCK);
    blocks
}

/// Profiles the two functions at mimalloc's default sample rate into `<dir>/heap.0001.pb`
/// (`.heap`, gperftools' text format, if `text` is not 0) and prints the snapshot's path.
/// Returns 0, or 1 after printing why it failed.
///
/// # Safety
///
/// `dir` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn plugin_profile(dir: *const c_char, text: c_int) -> c_int {
    // SAFETY: the caller passes a NUL-terminated string.
    let dir = unsafe { CStr::from_ptr(dir) }
        .to_string_lossy()
        .into_owned();
    let format = if text == 0 {
        Format::Pprof
    } else {
        Format::Text
    };
    crate::abort_on_panic(move || match profile_into(Path::new(&dir), format) {
        Ok(path) => {
            println!("{}", path.display());
            0
        }
        Err(e) => {
            eprintln!("plugin_profile: {e}");
            1
        }
    })
}

fn profile_into(
    dir: &Path,
    format: Format,
) -> Result<std::path::PathBuf, Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir)?;
    let profiler = Profiler::options().format(format).start(dir.join("heap"))?;
    let kept = (plugin_keeps_48_mib(), plugin_keeps_8_mib());
    let path = profiler.snapshot()?;
    drop(kept);
    Ok(path)
}
