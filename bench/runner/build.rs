//! Hands the C floor (`src/floor.rs`) how `mimalloc-sys` compiled mimalloc in this build, as
//! `mimalloc-sys` publishes it to its direct dependants (`links` metadata: its build script's
//! `cargo:compiler_args=...` is `DEP_MIMALLOC_COMPILER_ARGS` here), so that the floor is
//! compiled exactly as the allocator it is the floor of, with no copy of the build plan or of
//! `cc`'s flags. Where `mimalloc-sys` compiled nothing the variables are absent, and the floor
//! says so when asked for.

/// `DEP_MIMALLOC_<KEY>` as `MIMALLOC_SYS_<KEY>`, for `env!`/`option_env!` in the floor.
const PASSED_ON: [&str; 4] = ["COMPILER", "COMPILER_ARGS", "TRANSLATION_UNIT", "INCLUDE"];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    for key in PASSED_ON {
        let variable = format!("DEP_MIMALLOC_{key}");
        println!("cargo:rerun-if-env-changed={variable}");
        if let Ok(value) = std::env::var(&variable) {
            println!("cargo:rustc-env=MIMALLOC_SYS_{key}={value}");
        }
    }
    // mimalloc-sys is built in this package's profile: the floor compares with the release
    // drivers only when that is release.
    let profile = std::env::var("PROFILE").unwrap_or_default();
    println!("cargo:rustc-env=MIMALLOC_SYS_PROFILE={profile}");
}
