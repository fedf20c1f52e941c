//! Builds the product once per build its variants need, each in a target directory of its
//! own (so that no build's features leak into another's artifacts), and copies each
//! executable aside so that a later build cannot replace it mid-run.

use super::manifest::Product;
use super::variants::Variant;
use crate::binaries::{Places, cargo};
use crate::progress;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The built executables, by build name.
pub type Executables = BTreeMap<&'static str, PathBuf>;

pub fn build_all(
    product: &Product,
    variants: &[Variant],
    places: &Places,
) -> Result<Executables, String> {
    let dir = places.builds.join("product-builds");
    std::fs::create_dir_all(dir.join("bin")).map_err(|e| format!("{}: {e}", dir.display()))?;
    let spinner = progress::spinner("building the product once per allocator");
    let mut built = Executables::new();
    for variant in variants {
        let build = variant.build;
        if built.contains_key(build.name) {
            continue;
        }
        spinner.set_message(format!("building the product: {}", build.name));
        let start = Instant::now();
        let features = product.switch.cargo_args(build.features);
        let exe = build_one(product, &features, &dir.join(build.name), places)
            .map_err(|e| format!("building the {} variant: {e}", build.name))?;
        // Named after the product too: two products measured at once keep their own.
        let kept = dir.join("bin").join(format!(
            "{}-{}-{}{}",
            product.package,
            product.program,
            build.name,
            std::env::consts::EXE_SUFFIX
        ));
        std::fs::copy(&exe, &kept).map_err(|e| format!("copying {}: {e}", exe.display()))?;
        spinner.println(format!(
            "built {:<12} in {:6.1} s ({})",
            build.name,
            start.elapsed().as_secs_f64(),
            if features.is_empty() {
                "no features".to_owned()
            } else {
                features.join(" ")
            }
        ));
        built.insert(build.name, kept);
    }
    spinner.finish_and_clear();
    Ok(built)
}

/// One `cargo build --release` of the product; the executable it made, as cargo's own build
/// messages name it.
fn build_one(
    product: &Product,
    features: &[String],
    target_dir: &Path,
    places: &Places,
) -> Result<PathBuf, String> {
    let mut command = cargo(&places.root);
    command.args([
        "build",
        "--release",
        "--message-format",
        "json-render-diagnostics",
    ]);
    command.arg("--manifest-path").arg(&product.manifest);
    command.arg("--target-dir").arg(target_dir);
    command.args([format!("--{}", product.kind), product.program.clone()]);
    command.args(features);
    for config in &product.config {
        command.args(["--config", config]);
    }
    without_baked_defaults(&mut command);
    let output = command
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        return Err(format!(
            "cargo build failed:\n{}",
            lines[lines.len().saturating_sub(40)..].join("\n")
        ));
    }
    executable(&String::from_utf8_lossy(&output.stdout), product)
        .ok_or_else(|| format!("cargo built no executable called {}", product.program))
}

/// `MIMALLOC_SYS_*` in the caller's shell would bake option defaults or pick a compiler for
/// one build of the comparison (`mimalloc-sys/build.rs`): what is compared is the crate as it
/// ships, with only the variants' own settings, at run time.
fn without_baked_defaults(command: &mut Command) {
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("MIMALLOC_SYS_") {
            command.env_remove(key);
        }
    }
}

/// The executable of the product's program among cargo's JSON messages (a build of one
/// package's `--bin` or `--example` makes no other target of that name and kind).
fn executable(messages: &str, product: &Product) -> Option<PathBuf> {
    messages
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact")
        .filter(|m| m["target"]["name"] == product.program.as_str())
        .filter(|m| {
            m["target"]["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == product.kind))
        })
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
}
