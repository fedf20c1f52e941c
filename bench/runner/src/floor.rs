//! The C floor program (`floor/floor.c`): mimalloc called from C, compiled from the vendored
//! sources with the defines and flags `mimalloc-sys` uses, read from its own build plan so that
//! the two cannot drift apart.

use std::path::{Path, PathBuf};
use std::process::Command;

// The build plan is a pure function of target facts; including it here (it has no
// dependencies) is how the floor gets exactly the defines `mimalloc-sys` compiles with.
#[allow(dead_code)]
#[path = "../../../mimalloc-sys/build/plan.rs"]
mod plan;

/// What `cc` (the crate) adds for a release build on Linux x86_64, besides the plan's choices.
const CC_RELEASE_FLAGS: [&str; 4] = ["-O3", "-ffunction-sections", "-fdata-sections", "-fPIC"];

/// The compiler arguments `mimalloc-sys` uses for `static.c` on this machine (release).
pub fn mimalloc_sys_arguments() -> Result<Vec<String>, String> {
    let target = host_target()?;
    let plan = match plan::decide(&target, &plan::Features::default(), true) {
        plan::Decision::Build(plan) => plan,
        other => {
            return Err(format!(
                "mimalloc-sys builds nothing for this machine: {other:?}"
            ));
        }
    };
    let mut args: Vec<String> = CC_RELEASE_FLAGS.iter().map(|s| s.to_string()).collect();
    for d in &plan.defines {
        args.push(match d.value {
            Some(v) => format!("-D{}={v}", d.name),
            None => format!("-D{}", d.name),
        });
    }
    args.extend(
        plan.flags
            .iter()
            .chain(&plan.flags_if_supported)
            .map(|s| s.to_string()),
    );
    Ok(args)
}

/// The facts of the machine the floor runs on, built by the function the build script uses,
/// from what rustc says of its host target (`rustc --print cfg`: the values cargo passes a
/// build script as `CARGO_CFG_*`).
fn host_target() -> Result<plan::Target, String> {
    let rustc = |args: &[&str]| -> Result<String, String> {
        let out = Command::new("rustc")
            .args(args)
            .output()
            .map_err(|e| format!("cannot run rustc: {e}"))?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let version = rustc(&["-vV"])?;
    let triple = version
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .ok_or("rustc -vV names no host")?;
    let cfg = rustc(&["--print", "cfg"])?;
    let values = |key: &str| {
        let prefix = format!("{key}=\"");
        let found: Vec<&str> = cfg
            .lines()
            .filter_map(|line| line.strip_prefix(&prefix)?.strip_suffix('"'))
            .collect();
        (!found.is_empty()).then(|| found.join(","))
    };
    plan::Target::from_cfg(triple, values)
}

/// Compiles mimalloc and the floor program into `dir`; returns the executable.
pub fn build(root: &Path, dir: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let v3 = root.join("vendor/mimalloc/v3");
    let includes = [
        format!("-I{}", v3.join("include").display()),
        format!("-I{}", v3.join("src").display()),
    ];
    let object = dir.join("mimalloc.o");
    let exe = dir.join("floor");
    let mut compile = Command::new("cc");
    compile
        .args(mimalloc_sys_arguments()?)
        .args(&includes)
        .arg("-c")
        .arg(v3.join("src/static.c"))
        .arg("-o")
        .arg(&object);
    run(compile)?;
    // A separate translation unit, linked like the Rust drivers link `libmimalloc.a`: the
    // compiler cannot inline mimalloc into the loop, as it cannot in Rust.
    let mut link = Command::new("cc");
    link.args(["-O3", "-fPIC"])
        .args(&includes)
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
    fn the_floor_uses_the_release_defines_of_mimalloc_sys() {
        let args = mimalloc_sys_arguments().unwrap();
        for expected in ["-O3", "-DMI_DEBUG=0", "-DNDEBUG"] {
            assert!(
                args.iter().any(|a| a == expected),
                "{expected} missing from {args:?}"
            );
        }
        if cfg!(all(target_os = "linux", target_env = "gnu")) {
            assert!(
                args.iter().any(|a| a == "-ftls-model=initial-exec"),
                "{args:?}"
            );
        }
    }
}
