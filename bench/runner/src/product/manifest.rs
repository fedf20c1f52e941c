//! Whether a product follows the README's convention (an optional dependency on this
//! workspace's `mimalloc`, switched on by a `mimalloc` feature that is off by default), read
//! from `cargo metadata` rather than from the TOML, so that workspace inheritance, renames
//! and target-specific tables are resolved the way cargo resolves them.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The README's lines a product adds, quoted in every refusal.
fn convention(root: &Path) -> String {
    format!(
        "the README's convention (\"Adopting it in a product\") is:\n\
         \n    [dependencies]\n    mimalloc = {{ path = \"{}\", optional = true }}\n\
         \n    [features]\n    mimalloc = [\"dep:mimalloc\"]\n\
         \nand `#[cfg(feature = \"mimalloc\")] mimalloc::assign_global!();` in the program",
        root.join("mimalloc").display()
    )
}

/// Which of the package's programs runs: `--bin NAME`, `--example NAME`, or the package's only
/// binary (or its `default-run`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Program {
    #[default]
    Default,
    Bin(String),
    Example(String),
}

/// A product that follows the convention, and the program of it that runs.
#[derive(Clone, Debug)]
pub struct Product {
    pub manifest: PathBuf,
    pub package: String,
    /// `bin` or `example`, and its name: what cargo's build messages call it.
    pub kind: &'static str,
    pub program: String,
    /// `--config` arguments that point a git dependency on this workspace at this checkout,
    /// so that what is measured is the code here.
    pub config: Vec<String>,
}

/// Reads `manifest` with `cargo metadata` and checks the convention; a product that does not
/// follow it is an error that says what to add.
pub fn read(manifest: &Path, program: &Program, root: &Path) -> Result<Product, String> {
    let manifest = manifest
        .canonicalize()
        .map_err(|e| format!("--manifest-path {}: {e}", manifest.display()))?;
    let metadata = metadata(&manifest, root)?;
    let package = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["manifest_path"].as_str().map(Path::new) == Some(manifest.as_path()))
        .ok_or_else(|| {
            format!(
                "{} is a virtual manifest: name the product's own Cargo.toml",
                manifest.display()
            )
        })?;
    let config = dependency(package, root)?;
    feature(package, root)?;
    let (kind, program) = target(package, program)?;
    Ok(Product {
        package: package["name"].as_str().unwrap_or_default().to_owned(),
        manifest,
        kind,
        program,
        config,
    })
}

fn metadata(manifest: &Path, root: &Path) -> Result<Value, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--manifest-path",
        ])
        .arg(manifest)
        .current_dir(root)
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo metadata --manifest-path {} failed:\n{}",
            manifest.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    serde_json::from_slice(&output.stdout).map_err(|e| format!("cargo metadata's output: {e}"))
}

/// The optional dependency on this workspace's `mimalloc` (under any name): `--config`
/// arguments for a git one, none for a path one.
fn dependency(package: &Value, root: &Path) -> Result<Vec<String>, String> {
    let deps = package["dependencies"].as_array().into_iter().flatten();
    let normal = |d: &&Value| d["kind"].is_null() && d["name"] == "mimalloc";
    let Some(dep) = deps.clone().find(normal) else {
        return Err(format!(
            "the product does not depend on the `mimalloc` crate; {}",
            convention(root)
        ));
    };
    if dep["rename"].as_str().is_some_and(|r| r != "mimalloc") {
        return Err(format!(
            "the product renames its mimalloc dependency to `{}`: the `mimalloc/v2` and \
             `mimalloc/secure` builds need it under its own name; {}",
            dep["rename"].as_str().unwrap_or_default(),
            convention(root)
        ));
    }
    if dep["optional"] != true {
        return Err(format!(
            "the product's mimalloc dependency is not optional, so its system-allocator build \
             would still link mimalloc; {}",
            convention(root)
        ));
    }
    let ours = root.join("mimalloc");
    match (dep["path"].as_str(), dep["source"].as_str()) {
        (Some(path), _) if same_dir(Path::new(path), &ours) => Ok(Vec::new()),
        (Some(path), _) => Err(format!(
            "the product's mimalloc dependency is {path}, not this workspace's {} (which is \
             what this command measures): point it here, or run this checkout's runner",
            ours.display()
        )),
        (None, Some(source)) if source.starts_with("git+") => Ok(vec![git_patch(source, &ours)]),
        (None, source) => Err(format!(
            "the product's mimalloc dependency comes from {} (another crate of that name), not \
             from this workspace; {}",
            source.unwrap_or("a registry"),
            convention(root)
        )),
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// `patch.'<git url>'.mimalloc.path = '<this checkout>'`: the git dependency replaced by the
/// code being measured (a `[patch]` for a git source needs the URL without the query).
fn git_patch(source: &str, ours: &Path) -> String {
    let url = source.trim_start_matches("git+");
    let url = url.split(['?', '#']).next().unwrap_or(url);
    format!("patch.'{url}'.mimalloc.path='{}'", ours.display())
}

/// The `mimalloc` feature turns the dependency on, and the default features do not.
fn feature(package: &Value, root: &Path) -> Result<(), String> {
    let features = &package["features"];
    let Some(list) = features["mimalloc"].as_array() else {
        return Err(format!(
            "the product has no `mimalloc` feature to switch allocators with; {}",
            convention(root)
        ));
    };
    let enables = |f: &Value| {
        f == "dep:mimalloc"
            || f == "mimalloc"
            || f.as_str().is_some_and(|f| f.starts_with("mimalloc/"))
    };
    if !list.iter().any(enables) {
        return Err(format!(
            "the product's `mimalloc` feature does not turn the mimalloc dependency on; {}",
            convention(root)
        ));
    }
    if turns_on_mimalloc(features, "default", &mut Vec::new()) {
        return Err(
            "the product's default features turn `mimalloc` on, so its system-allocator build \
             cannot leave mimalloc out: take it out of `default` (products switch it on with \
             `--features mimalloc`)"
                .to_owned(),
        );
    }
    Ok(())
}

/// Whether `feature` turns the mimalloc dependency on, directly or through other features
/// (`dep:mimalloc`, `mimalloc/x` and `mimalloc?/x` name the dependency).
fn turns_on_mimalloc<'a>(features: &'a Value, feature: &'a str, seen: &mut Vec<&'a str>) -> bool {
    if feature == "mimalloc" {
        return true;
    }
    if seen.contains(&feature) {
        return false;
    }
    seen.push(feature);
    let enabled = features[feature].as_array().into_iter().flatten();
    enabled.filter_map(Value::as_str).any(|f| {
        let f = f.strip_prefix("dep:").unwrap_or(f);
        let weak = f.contains("?/");
        let f = f.split('/').next().unwrap_or(f).trim_end_matches('?');
        !weak && turns_on_mimalloc(features, f, seen)
    })
}

/// The program's target kind and name.
fn target(package: &Value, program: &Program) -> Result<(&'static str, String), String> {
    let targets = package["targets"].as_array().into_iter().flatten();
    let of_kind = |kind: &str| -> Vec<String> {
        let has = |t: &&Value| {
            t["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == kind))
        };
        targets
            .clone()
            .filter(has)
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    };
    let (kind, wanted) = match program {
        Program::Bin(name) => ("bin", name.clone()),
        Program::Example(name) => ("example", name.clone()),
        Program::Default => {
            let bins = of_kind("bin");
            let default_run = package["default_run"].as_str().map(str::to_owned);
            match (default_run, bins.as_slice()) {
                (Some(name), _) => ("bin", name),
                (None, [only]) => ("bin", only.clone()),
                (None, []) => {
                    return Err(
                        "the product has no binary: name an example with --example NAME".to_owned(),
                    );
                }
                (None, many) => {
                    return Err(format!(
                        "the product has several binaries ({}): name one with --bin NAME",
                        many.join(", ")
                    ));
                }
            }
        }
    };
    let present = of_kind(kind);
    if !present.contains(&wanted) {
        return Err(format!(
            "the product has no {kind} called {wanted} (its {kind}s: {})",
            if present.is_empty() {
                "none".to_owned()
            } else {
                present.join(", ")
            }
        ));
    }
    Ok((kind, wanted))
}

#[cfg(test)]
mod tests {
    use super::turns_on_mimalloc;

    #[test]
    fn the_default_features_are_followed_through_other_features_and_cycles() {
        let features = serde_json::json!({
            "default": ["a"],
            "a": ["b", "serde?/std"],
            "b": ["a", "mimalloc/secure"],
            "weak": ["mimalloc?/v2"],
            "mimalloc": ["dep:mimalloc"],
        });
        assert!(turns_on_mimalloc(&features, "default", &mut Vec::new()));
        assert!(!turns_on_mimalloc(&features, "weak", &mut Vec::new()));
        let off = serde_json::json!({ "default": ["x"], "x": ["x", "dep:serde"] });
        assert!(!turns_on_mimalloc(&off, "default", &mut Vec::new()));
    }
}
