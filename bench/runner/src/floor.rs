//! The C floor program (`floor/floor.c`): mimalloc called from C, compiled from the vendored
//! sources with the compiler and arguments `mimalloc-sys` used in this build (its `links`
//! metadata, which `build.rs` hands on), so that the two cannot drift apart.

use std::path::{Path, PathBuf};
use std::process::Command;

/// How `mimalloc-sys` compiled mimalloc in this build: `None` where it compiled nothing.
struct Compilation {
    compiler: &'static str,
    /// Separated by the ASCII unit separator (`publish_compilation` in mimalloc-sys's build.rs).
    args: &'static str,
    translation_unit: &'static str,
    include: &'static str,
}

const COMPILATION: Option<Compilation> = match (
    option_env!("MIMALLOC_SYS_COMPILER"),
    option_env!("MIMALLOC_SYS_COMPILER_ARGS"),
    option_env!("MIMALLOC_SYS_TRANSLATION_UNIT"),
    option_env!("MIMALLOC_SYS_INCLUDE"),
) {
    (Some(compiler), Some(args), Some(translation_unit), Some(include)) => Some(Compilation {
        compiler,
        args,
        translation_unit,
        include,
    }),
    _ => None,
};

fn compilation() -> Result<&'static Compilation, String> {
    COMPILATION
        .as_ref()
        .ok_or_else(|| "mimalloc-sys compiled nothing for this machine".to_owned())
}

/// The compiler arguments `mimalloc-sys` compiled its translation unit with in this build.
fn mimalloc_sys_arguments() -> Result<Vec<&'static str>, String> {
    Ok(compilation()?.args.split('\x1f').collect())
}

/// Compiles mimalloc and the floor program into `dir`; returns the executable. Only in a
/// release build of the runner: `mimalloc-sys` is built in the runner's profile, and the floor
/// is compared with drivers built in release.
pub fn build(root: &Path, dir: &Path) -> Result<PathBuf, String> {
    if env!("MIMALLOC_SYS_PROFILE") != "release" {
        return Err(
            "the C floor is compiled as mimalloc-sys is in the runner's own build, \
                    which must be a release build: cargo run --release -p mimalloc-bench"
                .into(),
        );
    }
    let compilation = compilation()?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let object = dir.join("mimalloc.o");
    let exe = dir.join("floor");
    let mut compile = Command::new(compilation.compiler);
    compile
        .args(mimalloc_sys_arguments()?)
        .arg("-c")
        .arg(compilation.translation_unit)
        .arg("-o")
        .arg(&object);
    run(compile)?;
    // A separate translation unit, linked like the Rust drivers link `libmimalloc.a`: the
    // compiler cannot inline mimalloc into the loop, as it cannot in Rust.
    let mut link = Command::new(compilation.compiler);
    link.args(["-O3", "-fPIC"])
        .arg(format!("-I{}", compilation.include))
        .arg(root.join("bench/runner/floor/floor.c"))
        .arg(&object)
        .args(["-lpthread", "-o"])
        .arg(&exe);
    run(link)?;
    Ok(exe)
}

fn run(mut command: Command) -> Result<(), String> {
    let output = command
        .output()
        .map_err(|e| format!("cannot run cc: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{command:?} failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::mimalloc_sys_arguments;

    #[test]
    fn the_floor_uses_the_arguments_of_mimalloc_sys() {
        let args = mimalloc_sys_arguments().unwrap();
        let include = super::compilation().unwrap().include;
        for expected in ["-DMI_DEBUG=0", "-I", include] {
            assert!(args.contains(&expected), "{expected} missing from {args:?}");
        }
        if env!("MIMALLOC_SYS_PROFILE") == "release" {
            assert!(args.contains(&"-DNDEBUG"), "{args:?}");
        }
        if cfg!(all(target_os = "linux", target_env = "gnu")) {
            assert!(args.contains(&"-ftls-model=initial-exec"), "{args:?}");
        }
    }
}
