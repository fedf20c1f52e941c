//! Clean release builds of `mimalloc-sys` and of the peer's `libmimalloc-sys`, alternating,
//! each in a fresh target directory: the whole build (cc, libc, the crate) and its C part
//! (the build script's run, from cargo's `--timings` report).

use crate::binaries::{self, Places};
use crate::stats::median;
use std::path::Path;
use std::time::Instant;

struct Crate {
    label: &'static str,
    package: &'static str,
    /// Extra cargo arguments: the peer builds from its own workspace and lock file.
    args: &'static [&'static str],
}

const CRATES: [Crate; 2] = [
    Crate {
        label: "ours: mimalloc-sys",
        package: "mimalloc-sys",
        args: &[],
    },
    Crate {
        label: "peer: libmimalloc-sys",
        package: "libmimalloc-sys",
        args: &["--locked", "--manifest-path", "bench/peer/Cargo.toml"],
    },
];

pub fn run(rounds: usize, places: &Places) -> Result<(), String> {
    let scratch = places.builds.join("build-times");
    let mut totals = vec![Vec::new(); CRATES.len()];
    let mut c_parts = vec![Vec::new(); CRATES.len()];
    for round in 0..rounds {
        for (i, krate) in CRATES.iter().enumerate() {
            let target_dir = scratch.join(format!("{}-{round}", krate.package));
            let _ = std::fs::remove_dir_all(&target_dir);
            let (total, c_part) = clean_build(krate, &places.root, &target_dir)?;
            eprintln!(
                "round {}: {:<22} {total:6.2} s, C part {c_part:6.2} s",
                round + 1,
                krate.label
            );
            totals[i].push(total);
            c_parts[i].push(c_part);
            let _ = std::fs::remove_dir_all(&target_dir);
        }
    }
    println!("\nclean release build, median of {rounds} alternating rounds:");
    for (i, krate) in CRATES.iter().enumerate() {
        println!(
            "  {:<22} whole build {:6.2} s   C part (build script run) {:6.2} s",
            krate.label,
            median(totals[i].clone()).unwrap_or(f64::NAN),
            median(c_parts[i].clone()).unwrap_or(f64::NAN)
        );
    }
    Ok(())
}

/// Seconds for the whole build, and for the package's build-script run.
fn clean_build(krate: &Crate, root: &Path, target_dir: &Path) -> Result<(f64, f64), String> {
    let start = Instant::now();
    let output = binaries::cargo(root)
        .args(["build", "--release", "--timings", "-p", krate.package])
        .args(krate.args)
        .arg("--target-dir")
        .arg(target_dir)
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    let total = start.elapsed().as_secs_f64();
    if !output.status.success() {
        return Err(format!(
            "building {} failed:\n{}",
            krate.package,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let report = std::fs::read_to_string(target_dir.join("cargo-timings/cargo-timing.html"))
        .map_err(|e| format!("no cargo timing report: {e}"))?;
    let c_part = build_script_seconds(&report, krate.package).ok_or_else(|| {
        format!(
            "no build-script run of {} in the timing report",
            krate.package
        )
    })?;
    Ok((total, c_part))
}

/// The duration of `package`'s build-script run in a `cargo --timings` HTML report, whose
/// `UNIT_DATA` array holds one JSON object per unit.
fn build_script_seconds(report: &str, package: &str) -> Option<f64> {
    let start = report.find("UNIT_DATA = ")? + "UNIT_DATA = ".len();
    let json = &report[start..];
    let end = json.find("];")? + 1;
    let units: serde_json::Value = serde_json::from_str(&json[..end]).ok()?;
    units.as_array()?.iter().find_map(|unit| {
        let is_it = unit["name"] == package && unit["mode"] == "run-custom-build";
        if is_it {
            unit["duration"].as_f64()
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::build_script_seconds;

    #[test]
    fn finds_the_build_script_run_in_a_timing_report() {
        let report = r#"<script>
const UNIT_DATA = [{"i":0,"name":"cc","mode":"todo","duration":1.5},
{"i":1,"name":"mimalloc-sys","mode":"run-custom-build","duration":4.25},
{"i":2,"name":"mimalloc-sys","mode":"todo","duration":0.5}];
const CONCURRENCY_DATA = [];</script>"#;
        assert_eq!(build_script_seconds(report, "mimalloc-sys"), Some(4.25));
        assert_eq!(build_script_seconds(report, "libmimalloc-sys"), None);
    }
}
