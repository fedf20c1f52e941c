//! Turns `mimalloc-sys`'s decision whether mimalloc runs on the target (its build plan compiles
//! nothing for targets without an OS, and publishes `DEP_MIMALLOC_RUNS` where it compiles) into
//! `cfg(mimalloc_runs)`, so that the decision is made in one place for both crates; likewise
//! `DEP_MIMALLOC_PROFILER` (the heap profiler records call stacks) into `cfg(mimalloc_profiler)`,
//! and `DEP_MIMALLOC_HUGE_BLOCK_ADVICE` (mimalloc leaves huge pages to the routing core) into
//! `cfg(mimalloc_huge_block_advice)`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("DEP_MIMALLOC_RUNS").is_some() {
        println!("cargo:rustc-cfg=mimalloc_runs");
    }
    if std::env::var_os("DEP_MIMALLOC_PROFILER").is_some() {
        println!("cargo:rustc-cfg=mimalloc_profiler");
    }
    if std::env::var_os("DEP_MIMALLOC_HUGE_BLOCK_ADVICE").is_some() {
        println!("cargo:rustc-cfg=mimalloc_huge_block_advice");
    }
}
