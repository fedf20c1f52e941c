//! Generates the Rust bindings from the vendored public headers (the `bindgen` feature).
//!
//! The committed `src/bindings/v{2,3}.rs` are this function's output for
//! `x86_64-unknown-linux-gnu`, written by `scripts/gen-bindings.sh`; `.ci/run` regenerates them
//! and fails on any difference, so the committed files cannot drift from the headers.

use super::plan::{Target, Version};
use super::Sources;
use std::path::Path;

/// The oldest Rust the bindings must compile with: the crate's `rust-version`.
const MSRV_MINOR: u64 = 63;

/// Functions the vendored headers declare but the vendored sources never define: a binding to
/// one of them could only fail at link time, so none is made. `scripts/gen-bindings.sh --check`
/// verifies that every other binding links.
fn declared_but_undefined(version: Version) -> &'static [&'static str] {
    match version {
        // mimalloc 3.6.0
        Version::V3 => &["mi_collect_reduce", "mi_stats_merge"],
        // mimalloc 2.5.2: the two `malloc_size` spellings are defined in `alloc-override.c`,
        // which only the `override` build compiles.
        Version::V2 => &[
            "mi_malloc_size",
            "mi_malloc_usable_size",
            "mi_uzalloc_small",
        ],
    }
}

/// Writes `bindings.rs` for mimalloc `version` into `out_dir`, generated for `target`.
pub fn generate(sources: &Sources, version: Version, target: &Target, out_dir: &Path) {
    let include = sources.include();
    // Every public header of the release (3.6 adds the profiler's).
    let headers: &[&str] = match version {
        Version::V3 => &["mimalloc.h", "mimalloc-stats.h", "mimalloc-profile.h"],
        Version::V2 => &["mimalloc.h", "mimalloc-stats.h"],
    };
    let mut builder = bindgen::Builder::default()
        .clang_arg(format!("--target={}", target.triple))
        .clang_arg(format!("-I{}", include.display()))
        // mimalloc documents its API with plain `//` comments: keep them as doc comments.
        .clang_arg("-fparse-all-comments")
        .rust_target(bindgen::RustTarget::stable(MSRV_MINOR, 0).expect("bindgen knows Rust 1.63"))
        .use_core()
        .ctypes_prefix("libc")
        // The whole public API, and nothing the headers pull in from libc.
        .allowlist_function("mi_.*")
        .allowlist_type("mi_.*")
        .allowlist_var("MI_.*")
        .blocklist_function(declared_but_undefined(version).join("|"))
        // `wchar_t` is 16 bits on Windows and 32 elsewhere: take it from libc, per target.
        .blocklist_type("wchar_t")
        .raw_line("pub use libc::wchar_t;")
        .default_enum_style(bindgen::EnumVariation::Consts)
        .prepend_enum_name(false)
        .derive_default(true)
        .layout_tests(true)
        .generate_comments(true)
        .merge_extern_blocks(true)
        .sort_semantically(true)
        .formatter(bindgen::Formatter::Prettyplease)
        .parse_callbacks(Box::new(TargetIndependentLayout {
            stats_aligned_to_8: declares_stats_alignment(&include.join("mimalloc-stats.h")),
        }));
    for header in headers {
        let path = include.join(header);
        println!("cargo:rerun-if-changed={}", path.display());
        builder = builder.header(path.to_str().expect("the vendor path is UTF-8"));
    }
    let bindings = builder
        .generate()
        .unwrap_or_else(|e| panic!("bindgen failed on {}: {e}", include.display()));
    let text = gate_layout_tests(&bindings.to_string(), target.pointer_width);
    let out = out_dir.join("bindings.rs");
    std::fs::write(&out, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
}

/// `mimalloc-stats.h` aligns the counters of `mi_stats_t` to 8 bytes on every target
/// (`mi_decl_align(8)`), but bindgen only writes an alignment it sees change the layout of the
/// target it generates for: not on x86_64, where `i64` is 8-aligned anyway. On 32-bit x86 it
/// is 4-aligned, and the committed bindings would under-align the struct there (the ABI test
/// of `mimalloc-tests`, `tests/abi.rs`, checks it). Say it explicitly, so one file fits every
/// target.
/// (mimalloc 2.x declares no such alignment, and gets none.)
#[derive(Debug)]
struct TargetIndependentLayout {
    stats_aligned_to_8: bool,
}

fn declares_stats_alignment(header: &Path) -> bool {
    let text = std::fs::read_to_string(header)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", header.display()));
    text.contains("mi_decl_align(8)  MI_STAT_FIELDS()")
}

impl bindgen::callbacks::ParseCallbacks for TargetIndependentLayout {
    fn add_attributes(&self, info: &bindgen::callbacks::AttributeInfo<'_>) -> Vec<String> {
        if self.stats_aligned_to_8 && info.name == "mi_stats_s" {
            vec!["#[repr(align(8))]".to_owned()]
        } else {
            Vec::new()
        }
    }
}

/// bindgen's layout tests hold the sizes and offsets of the target the bindings were generated
/// for. The declarations themselves are portable (`usize`, pointers, `libc` types), so the
/// committed bindings serve every target, but the expected numbers only fit targets with the
/// same pointer width; the ABI test of `mimalloc-tests` checks the others against their C
/// compiler.
fn gate_layout_tests(text: &str, pointer_width: u32) -> String {
    let test = "#[test]\nfn bindgen_test_layout_";
    assert!(
        text.contains(test),
        "bindgen emitted no layout tests in the expected form"
    );
    text.replace(
        test,
        &format!(
            "#[test]\n#[cfg(target_pointer_width = \"{pointer_width}\")]\nfn bindgen_test_layout_"
        ),
    )
}
