/* The C compiler's view of mimalloc's public types, for tests/tests/abi.rs to compare with the
   Rust bindings on whatever target the tests run (the committed bindings were generated for
   x86_64 Linux). Compiled by tests/build.rs against the headers mimalloc-sys built with
   (DEP_MIMALLOC_INCLUDE). Keep the order in sync with `rust_layout()` in tests/abi.rs. */
#include <stddef.h>
#include <mimalloc.h>
#include <mimalloc-stats.h>

/* Alignment without C11's _Alignof, which old MSVC lacks. */
#define ALIGN_OF(T) offsetof(struct { char c; T t; }, t)
#define TYPE(T) sizeof(T), ALIGN_OF(T)
#define FIELD(T, f) offsetof(T, f), sizeof(((T*)0)->f)

const size_t mimalloc_tests_abi[] = {
  MI_MALLOC_VERSION,
  MI_STAT_VERSION,
  sizeof(long),
  sizeof(mi_option_t),
  TYPE(mi_arena_id_t),
  TYPE(mi_subproc_id_t),
  TYPE(mi_heap_area_t),
  FIELD(mi_heap_area_t, blocks),
  FIELD(mi_heap_area_t, reserved),
  FIELD(mi_heap_area_t, committed),
  FIELD(mi_heap_area_t, used),
  FIELD(mi_heap_area_t, block_size),
  FIELD(mi_heap_area_t, full_block_size),
#if MI_MALLOC_VERSION >= 30000
  FIELD(mi_heap_area_t, reserved1),
#else
  FIELD(mi_heap_area_t, heap_tag),
#endif
  TYPE(mi_stat_count_t),
  FIELD(mi_stat_count_t, total),
  FIELD(mi_stat_count_t, peak),
  FIELD(mi_stat_count_t, current),
  TYPE(mi_stat_counter_t),
  TYPE(mi_stats_t),
  FIELD(mi_stats_t, size),
  FIELD(mi_stats_t, version),
  FIELD(mi_stats_t, pages),
  FIELD(mi_stats_t, reserved),
  FIELD(mi_stats_t, committed),
  FIELD(mi_stats_t, malloc_normal),
  FIELD(mi_stats_t, malloc_huge),
  FIELD(mi_stats_t, threads),
  FIELD(mi_stats_t, malloc_bins),
  FIELD(mi_stats_t, page_bins),
#if MI_MALLOC_VERSION >= 30000
  FIELD(mi_stats_t, heaps),
  FIELD(mi_stats_t, chunk_bins),
#endif
};

const size_t mimalloc_tests_abi_len = sizeof(mimalloc_tests_abi) / sizeof(mimalloc_tests_abi[0]);
