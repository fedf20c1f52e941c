//! Turns `mimalloc-sys`'s decision whether mimalloc runs on the target (its build plan compiles
//! nothing for targets without an OS, and publishes `DEP_MIMALLOC_RUNS` where it compiles) into
//! `cfg(mimalloc_runs)`, so that the decision is made in one place for both crates; likewise
//! `DEP_MIMALLOC_PROFILER` (the heap profiler records call stacks) into `cfg(mimalloc_profiler)`,
//! `DEP_MIMALLOC_HUGE_BLOCK_ADVICE` (mimalloc leaves huge pages to the routing core) into
//! `cfg(mimalloc_huge_block_advice)`, `DEP_MIMALLOC_PAGE_MAP_FREE` (free reads the page map)
//! into `cfg(mimalloc_page_map_free)`, `DEP_MIMALLOC_SMALL_FREE` (`mi_free_small_nonnull`
//! takes the page from the address) into `cfg(mimalloc_small_free)`, and `DEP_MIMALLOC_DEBUG`
//! (mimalloc's internal checks) into `cfg(mimalloc_debug)`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    for decision in [
        "runs",
        "profiler",
        "huge_block_advice",
        "page_map_free",
        "small_free",
        "debug",
    ] {
        let key = format!("DEP_MIMALLOC_{}", decision.to_uppercase());
        println!("cargo:rerun-if-env-changed={key}");
        if std::env::var_os(&key).is_some() {
            println!("cargo:rustc-cfg=mimalloc_{decision}");
        }
    }
}
