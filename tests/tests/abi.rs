//! The Rust bindings agree with the C compiler on every target the suite runs on: sizes,
//! alignments and field offsets of mimalloc's public types, and the header constants.
//!
//! bindgen's own layout tests (in mimalloc-sys) only run where the pointer width matches the
//! x86_64 machine that generated the bindings; this test covers 32-bit x86 and ARM, Windows
//! (where `long` is 32 bits), and each feature set, against the real target compiler.

use core::mem::{align_of, size_of, MaybeUninit};
use mimalloc_sys::*;

macro_rules! type_layout {
    ($t:ty) => {
        [size_of::<$t>(), align_of::<$t>()]
    };
}

macro_rules! field {
    ($t:ty, $f:ident) => {{
        let value = MaybeUninit::<$t>::uninit();
        let base = value.as_ptr();
        // SAFETY: only the address of a field is computed; nothing is read.
        let field = unsafe { core::ptr::addr_of!((*base).$f) };
        fn size_of_pointee<T>(_: *const T) -> usize {
            size_of::<T>()
        }
        [field as usize - base as usize, size_of_pointee(field)]
    }};
}

/// The same list as `probe.c`, computed from the Rust declarations.
fn rust_layout() -> Vec<(&'static str, usize)> {
    let mut v: Vec<(&'static str, usize)> = Vec::new();
    let mut push = |name: &'static str, values: &[usize]| {
        for &x in values {
            v.push((name, x));
        }
    };
    push_scalars(&mut push);
    push_heap_area(&mut push);
    push_stats(&mut push);
    v
}

/// The header's version constants and the layouts of the scalar types: `long`, the option and
/// the ids.
fn push_scalars(push: &mut impl FnMut(&'static str, &[usize])) {
    push("MI_MALLOC_VERSION", &[MI_MALLOC_VERSION as usize]);
    push("MI_STAT_VERSION", &[MI_STAT_VERSION as usize]);
    push("long", &[size_of::<std::os::raw::c_long>()]);
    push("mi_option_t", &[size_of::<mi_option_t>()]);
    push("mi_arena_id_t", &type_layout!(mi_arena_id_t));
    push("mi_subproc_id_t", &type_layout!(mi_subproc_id_t));
}

/// The layout of `mi_heap_area_t` and of each of its fields (the last one differs in v2).
fn push_heap_area(push: &mut impl FnMut(&'static str, &[usize])) {
    push("mi_heap_area_t", &type_layout!(mi_heap_area_t));
    push("mi_heap_area_t.blocks", &field!(mi_heap_area_t, blocks));
    push("mi_heap_area_t.reserved", &field!(mi_heap_area_t, reserved));
    push(
        "mi_heap_area_t.committed",
        &field!(mi_heap_area_t, committed),
    );
    push("mi_heap_area_t.used", &field!(mi_heap_area_t, used));
    push(
        "mi_heap_area_t.block_size",
        &field!(mi_heap_area_t, block_size),
    );
    push(
        "mi_heap_area_t.full_block_size",
        &field!(mi_heap_area_t, full_block_size),
    );
    #[cfg(not(feature = "v2"))]
    push(
        "mi_heap_area_t.reserved1",
        &field!(mi_heap_area_t, reserved1),
    );
    #[cfg(feature = "v2")]
    push("mi_heap_area_t.heap_tag", &field!(mi_heap_area_t, heap_tag));
}

/// The layouts of the statistics types, `mi_stats_t`'s fields included (v2 has fewer).
fn push_stats(push: &mut impl FnMut(&'static str, &[usize])) {
    push("mi_stat_count_t", &type_layout!(mi_stat_count_t));
    push("mi_stat_count_t.total", &field!(mi_stat_count_t, total));
    push("mi_stat_count_t.peak", &field!(mi_stat_count_t, peak));
    push("mi_stat_count_t.current", &field!(mi_stat_count_t, current));
    push("mi_stat_counter_t", &type_layout!(mi_stat_counter_t));
    push("mi_stats_t", &type_layout!(mi_stats_t));
    push("mi_stats_t.size", &field!(mi_stats_t, size));
    push("mi_stats_t.version", &field!(mi_stats_t, version));
    push("mi_stats_t.pages", &field!(mi_stats_t, pages));
    push("mi_stats_t.reserved", &field!(mi_stats_t, reserved));
    push("mi_stats_t.committed", &field!(mi_stats_t, committed));
    push(
        "mi_stats_t.malloc_normal",
        &field!(mi_stats_t, malloc_normal),
    );
    push("mi_stats_t.malloc_huge", &field!(mi_stats_t, malloc_huge));
    push("mi_stats_t.threads", &field!(mi_stats_t, threads));
    push("mi_stats_t.malloc_bins", &field!(mi_stats_t, malloc_bins));
    push("mi_stats_t.page_bins", &field!(mi_stats_t, page_bins));
    #[cfg(not(feature = "v2"))]
    {
        push("mi_stats_t.heaps", &field!(mi_stats_t, heaps));
        push("mi_stats_t.chunk_bins", &field!(mi_stats_t, chunk_bins));
    }
}

#[test]
fn bindings_match_the_c_compiler() {
    let c = mimalloc_tests::c_abi_probe();
    let rust = rust_layout();
    assert_eq!(
        c.len(),
        rust.len(),
        "probe.c and abi.rs list different items"
    );
    let mismatches: Vec<String> = rust
        .iter()
        .zip(c)
        .filter(|((_, r), c)| r != *c)
        .map(|((name, r), c)| format!("{name}: Rust {r}, C {c}"))
        .collect();
    assert!(mismatches.is_empty(), "ABI mismatches: {mismatches:#?}");
}
