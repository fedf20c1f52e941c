//! Passes on the decisions of `mimalloc-sys`'s build plan that this crate reads
//! (`cfg(mimalloc_small_free)`, `cfg(mimalloc_guarded)`, ...), so that each is made once, in
//! `mimalloc-sys/build/plan.rs`: see the `mimalloc-sys-cfgs` crate.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    mimalloc_sys_cfgs::pass_on();
}
