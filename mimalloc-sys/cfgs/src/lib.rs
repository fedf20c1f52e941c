//! The decisions of `mimalloc-sys`'s build plan, passed on to the crates built on it. Each is
//! made once, in `mimalloc-sys/build/plan.rs`, and never re-derived from feature names or target
//! facts elsewhere: `mimalloc-sys` publishes the cfgs that hold for a build as
//! `DEP_MIMALLOC_CFGS` (comma-separated: `mimalloc_runs,mimalloc_small_free,...`; absent where
//! mimalloc is not compiled), which cargo gives only to the build scripts of its direct
//! dependants. The build script of such a crate calls [`pass_on`], with no list of its own; the
//! workspace manifest's `check-cfg` list names every cfg the plan can publish.
//!
//! ```no_run
//! // In `fn main` of the build script of a crate with `mimalloc-sys` among its [dependencies]:
//! mimalloc_sys_cfgs::pass_on();
//! ```

/// The metadata key, as cargo names it for a dependant of the package with `links = "mimalloc"`.
const VARIABLE: &str = "DEP_MIMALLOC_CFGS";

/// Sets each cfg that `mimalloc-sys` published for this build on the crate whose build script
/// calls this (`cargo:rustc-cfg=`), and has the script rerun when the list changes.
pub fn pass_on() {
    println!("cargo:rerun-if-env-changed={VARIABLE}");
    for cfg in cfgs(&published()) {
        println!("cargo:rustc-cfg={cfg}");
    }
}

/// `DEP_MIMALLOC_CFGS`, empty where mimalloc-sys compiled nothing. The one read of the variable,
/// next to its `rerun-if-env-changed` in [`pass_on`] (which `mimalloc-sys/clippy.toml` asks of
/// every read).
#[allow(clippy::disallowed_methods)]
fn published() -> String {
    std::env::var(VARIABLE).unwrap_or_default()
}

/// The cfg names of a published list.
fn cfgs(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').filter(|cfg| !cfg.is_empty())
}

#[cfg(test)]
mod tests {
    use super::cfgs;

    #[test]
    fn a_list_gives_its_names_and_none_gives_nothing() {
        let names: Vec<&str> = cfgs("mimalloc_runs,mimalloc_small_free").collect();
        assert_eq!(names, ["mimalloc_runs", "mimalloc_small_free"]);
        assert_eq!(cfgs("").count(), 0);
    }
}
