//! Passes on the decisions of `mimalloc-sys`'s build plan that this crate reads, so that each is
//! made once, in `mimalloc-sys/build/plan.rs`, and never re-derived here from feature names or
//! target facts: `mimalloc-sys` publishes, as `DEP_MIMALLOC_CFGS`, the cfgs that hold for this
//! build (`mimalloc_runs` where mimalloc is compiled at all, `mimalloc_small_free`,
//! `mimalloc_guarded`, ...; each with its reason in `plan::published`), and this script passes
//! each one to rustc as it finds it, with no list of its own. Where mimalloc does not run the
//! list is absent and no cfg is set. The workspace manifest's `check-cfg` list names them all.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=DEP_MIMALLOC_CFGS");
    let cfgs = std::env::var("DEP_MIMALLOC_CFGS").unwrap_or_default();
    for cfg in cfgs.split(',').filter(|cfg| !cfg.is_empty()) {
        println!("cargo:rustc-cfg={cfg}");
    }
}
