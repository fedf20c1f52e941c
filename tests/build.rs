//! Compiles `abi/probe.c` against the headers mimalloc-sys was built with, for `tests/abi.rs`,
//! and `host/plugin_host.c`, the C half of the host program of `tests/plugin.rs`; passes on the
//! cfgs of mimalloc-sys's build plan (`mimalloc-sys-cfgs`), as the `mimalloc` crate's build
//! script does.

#[allow(clippy::disallowed_methods)]
fn main() {
    println!("cargo:rerun-if-changed=abi/probe.c");
    println!("cargo:rerun-if-changed=host/plugin_host.c");
    println!("cargo:rerun-if-env-changed=DEP_MIMALLOC_INCLUDE");
    // The decisions of mimalloc-sys's plan, as the library crates see them: where the routing
    // core advises large blocks for huge pages (`tests/huge_pages.rs`), where free reads the
    // page map, which lifts mimalloc 3's alignment limit (`tests/alignment.rs`), and so on.
    mimalloc_sys_cfgs::pass_on();
    // mimalloc-sys publishes its include directory through `links = "mimalloc"` metadata. On
    // targets where it builds nothing (no OS), there is nothing to probe.
    let include = match std::env::var("DEP_MIMALLOC_INCLUDE") {
        Ok(dir) => dir,
        Err(_) => return,
    };
    // The headers, for tests that compare the API with them (`tests/options.rs`).
    println!("cargo:rustc-env=MIMALLOC_TESTS_INCLUDE_DIR={include}");
    cc::Build::new()
        .file("abi/probe.c")
        .include(&include)
        .compile("mimalloc_tests_abi");

    // The plugin test builds its library for the target this suite is built for.
    let target = std::env::var("TARGET").expect("cargo sets TARGET for build scripts");
    println!("cargo:rustc-env=MIMALLOC_TESTS_TARGET={target}");
    cc::Build::new()
        .file("host/plugin_host.c")
        .compile("mimalloc_tests_plugin_host");
    // dlopen lives in libdl with glibc before 2.34 (musl ships an empty one).
    if std::env::var("CARGO_CFG_TARGET_OS").map_or(false, |os| os == "linux") {
        println!("cargo:rustc-link-lib=dl");
    }
}
