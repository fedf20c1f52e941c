//! Compiles `abi/probe.c` against the headers mimalloc-sys was built with, for `tests/abi.rs`.

#[allow(clippy::disallowed_methods)]
fn main() {
    println!("cargo:rerun-if-changed=abi/probe.c");
    println!("cargo:rerun-if-env-changed=DEP_MIMALLOC_INCLUDE");
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
}
