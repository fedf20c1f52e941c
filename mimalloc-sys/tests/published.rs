//! The compiled C code says of itself what the build plan published about it: mimalloc 3
//! prints its build configuration (`mi_options_print_out`: the free mode, guard pages, the
//! debug and secure levels), and each cfg the Rust side reads (`Published` in
//! `build/plan.rs`, set for this crate by its build script) must agree with it. The plan
//! computes those cfgs from its defines as the headers would; this checks the headers' answer
//! itself, on every target and feature set the suite runs with. mimalloc 2 prints no such
//! configuration.
#![cfg(all(mimalloc_runs, not(feature = "v2")))]

use std::ffi::CStr;
use std::os::raw::{c_char, c_void};

/// Appends each message mimalloc writes to the `String` behind `arg`.
unsafe extern "C" fn collect(msg: *const c_char, arg: *mut c_void) {
    // SAFETY: mimalloc passes a NUL-terminated message, and `arg` is the `String` that
    // `configuration` handed it, borrowed mutably for the duration of the call that prints.
    let (msg, out) = unsafe { (CStr::from_ptr(msg), &mut *arg.cast::<String>()) };
    out.push_str(&msg.to_string_lossy());
}

/// What `mi_options_print_out` prints: the options, then the build configuration.
fn configuration() -> String {
    let mut out = String::new();
    // SAFETY: `collect` matches `mi_output_fun` and is given `out`, which outlives the call;
    // mimalloc calls it only during the call.
    unsafe {
        mimalloc_sys::mi_options_print_out(Some(collect), (&mut out as *mut String).cast());
    }
    out
}

/// The value after `label` (`free mode   : (small) aligned, page size: 96` gives
/// `(small) aligned, page size: 96`), if mimalloc printed that line.
fn line<'a>(configuration: &'a str, label: &str) -> Option<&'a str> {
    configuration
        .lines()
        .find_map(|l| l.strip_prefix(label))
        .map(|rest| rest.trim_start_matches([' ', ':']).trim())
}

fn level(configuration: &str, label: &str) -> i64 {
    let value = line(configuration, label).unwrap_or_else(|| panic!("no {label}"));
    value.parse().unwrap_or_else(|_| panic!("{label}: {value}"))
}

#[test]
fn the_published_cfgs_are_what_the_c_code_was_built_with() {
    let c = configuration();
    println!("{c}");
    let debug = level(&c, "debug level");
    let secure = level(&c, "secure level");
    assert_eq!(cfg!(mimalloc_debug), debug > 0, "MI_DEBUG {debug}");
    assert_eq!(
        cfg!(mimalloc_guarded),
        line(&c, "guarded mode").is_some(),
        "MI_GUARDED"
    );
    assert_eq!(
        cfg!(mimalloc_large_request_cap),
        cfg!(target_pointer_width = "32") && secure == 0,
        "MI_SECURE {secure}"
    );

    // `options.c`: "(small) aligned", "aligned", "small aligned + pagemap", "checked" or
    // "pagemap", from MI_PAGE_META_IS_ALIGNED, MI_PAGE_META_SMALL_IS_ALIGNED and
    // MI_FREE_IS_CHECKED.
    let free = line(&c, "free mode").expect("a free mode");
    let mode = free.split(',').next().unwrap();
    let meta_aligned = matches!(mode, "(small) aligned" | "aligned");
    let small_aligned = matches!(mode, "(small) aligned" | "small aligned + pagemap");
    assert_eq!(
        cfg!(mimalloc_page_map_free),
        !meta_aligned,
        "free mode {mode}"
    );
    assert_eq!(
        cfg!(mimalloc_checked_free),
        mode == "checked",
        "free mode {mode}"
    );
    // The plan's own condition on top of the header's: no small free in debug builds.
    assert_eq!(
        cfg!(mimalloc_small_free),
        small_aligned && debug == 0,
        "free mode {mode}, MI_DEBUG {debug}"
    );
}
