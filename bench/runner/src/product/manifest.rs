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

/// How a product turns its allocator on: a feature, `mimalloc` by the README's convention.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Switch {
    /// The feature that turns the `mimalloc` dependency on and installs it.
    pub feature: String,
    /// Where the default features turn the allocator on too (a published program that ships
    /// on mimalloc): the default features that do not, which the system build is given after
    /// `--no-default-features`.
    pub system_defaults: Option<Vec<String>>,
}

impl Switch {
    /// The cargo arguments of a build: the system build's (`features` `None`) leave the
    /// allocator off; the others turn it on with these features of the dependency.
    pub fn cargo_args(&self, features: Option<&str>) -> Vec<String> {
        let Some(features) = features else {
            return match &self.system_defaults {
                None => Vec::new(),
                Some(defaults) if defaults.is_empty() => vec!["--no-default-features".into()],
                Some(defaults) => vec![
                    "--no-default-features".into(),
                    "--features".into(),
                    defaults.join(","),
                ],
            };
        };
        let on =
            std::iter::once(self.feature.as_str()).chain(Some(features).filter(|f| !f.is_empty()));
        vec!["--features".into(), on.collect::<Vec<_>>().join(",")]
    }
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
    pub switch: Switch,
}

/// Reads `manifest` with `cargo metadata` and checks the convention (`feature` is the one that
/// turns the allocator on); a product that does not follow it is an error that says what to
/// add.
pub fn read(
    manifest: &Path,
    program: &Program,
    feature: &str,
    root: &Path,
) -> Result<Product, String> {
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
    let switch = switch(&package["features"], feature, root)?;
    let (kind, program) = target(package, program)?;
    Ok(Product {
        package: package["name"].as_str().unwrap_or_default().to_owned(),
        manifest,
        kind,
        program,
        config,
        switch,
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

/// `feature` turns the dependency on; where the default features do as well, the system build
/// is given the default features that do not.
fn switch(features: &Value, feature: &str, root: &Path) -> Result<Switch, String> {
    if !features[feature].is_array() {
        return Err(format!(
            "the product has no `{feature}` feature to switch allocators with (name another \
             with --feature NAME); {}",
            convention(root)
        ));
    }
    if !turns_on_mimalloc(features, feature, &mut Vec::new()) {
        return Err(format!(
            "the product's `{feature}` feature does not turn the mimalloc dependency on; {}",
            convention(root)
        ));
    }
    let defaults = features["default"].as_array().into_iter().flatten();
    let system_defaults = if turns_on_mimalloc(features, "default", &mut Vec::new()) {
        let keep = defaults.filter_map(Value::as_str);
        let keep = keep.filter(|f| !entry_turns_on_mimalloc(features, f, &mut Vec::new()));
        Some(keep.map(str::to_owned).collect())
    } else {
        None
    };
    Ok(Switch {
        feature: feature.to_owned(),
        system_defaults,
    })
}

/// Whether `feature` turns the mimalloc dependency on, directly or through other features. A
/// name the manifest does not declare is a dependency's implicit feature: `mimalloc`'s turns it
/// on; a declared `mimalloc` feature is whatever it lists (`dep:` syntax hides the implicit one).
fn turns_on_mimalloc<'a>(features: &'a Value, feature: &'a str, seen: &mut Vec<&'a str>) -> bool {
    if seen.contains(&feature) {
        return false;
    }
    seen.push(feature);
    let Some(list) = features[feature].as_array() else {
        return feature == "mimalloc";
    };
    list.iter()
        .filter_map(Value::as_str)
        .any(|entry| entry_turns_on_mimalloc(features, entry, seen))
}

/// Whether one entry of a feature's list turns the dependency on: `dep:mimalloc`, `mimalloc/x`
/// (which turns the dependency on as well as its feature), or a feature that does; never a weak
/// `x?/y`, which only adds to a dependency something else turned on.
fn entry_turns_on_mimalloc<'a>(
    features: &'a Value,
    entry: &'a str,
    seen: &mut Vec<&'a str>,
) -> bool {
    if entry.contains("?/") {
        return false;
    }
    if let Some(dependency) = entry.strip_prefix("dep:") {
        return dependency == "mimalloc";
    }
    match entry.split_once('/') {
        Some((dependency, _)) => {
            dependency == "mimalloc" || turns_on_mimalloc(features, dependency, seen)
        }
        None => turns_on_mimalloc(features, entry, seen),
    }
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
    use super::{Switch, switch, turns_on_mimalloc};
    use std::path::Path;

    /// A published program that ships on mimalloc: its system build keeps every default
    /// feature but those that turn the allocator on, through whatever feature they do.
    #[test]
    fn where_the_defaults_turn_mimalloc_on_the_system_build_keeps_the_rest() {
        let features = serde_json::json!({
            "default": ["use_mimalloc", "http", "fast", "tls?/x"],
            "use_mimalloc": ["mimalloc"],
            "mimalloc": ["dep:mimalloc"],
            "fast": ["mimalloc/secure"],
            "http": ["dep:ureq", "ureq/json"],
            "tls": [],
        });
        let on = switch(&features, "use_mimalloc", Path::new("/w")).unwrap();
        let expected = Switch {
            feature: "use_mimalloc".into(),
            system_defaults: Some(vec!["http".into(), "tls?/x".into()]),
        };
        assert_eq!(on, expected);
        let args = |features| on.cargo_args(features).join(" ");
        assert_eq!(args(None), "--no-default-features --features http,tls?/x");
        assert_eq!(args(Some("")), "--features use_mimalloc");
        assert_eq!(
            args(Some("mimalloc/v2")),
            "--features use_mimalloc,mimalloc/v2"
        );
        let only = serde_json::json!({ "default": ["mimalloc"], "mimalloc": ["dep:mimalloc"] });
        let only = switch(&only, "mimalloc", Path::new("/w")).unwrap();
        assert_eq!(only.system_defaults, Some(Vec::new()));
        assert_eq!(only.cargo_args(None), ["--no-default-features"]);
    }

    /// The README's convention: the defaults leave mimalloc off, so the system build is the
    /// product as it is; a feature that is not there, or does not turn the dependency on, is
    /// an error naming it.
    #[test]
    fn off_by_default_the_system_build_takes_no_arguments() {
        let features = serde_json::json!({
            "default": ["http"],
            "http": [],
            "mimalloc": ["dep:mimalloc"],
            "other": ["http"],
        });
        let off = switch(&features, "mimalloc", Path::new("/w")).unwrap();
        assert_eq!(off.system_defaults, None);
        assert!(off.cargo_args(None).is_empty());
        assert_eq!(
            off.cargo_args(Some("mimalloc/secure")),
            ["--features", "mimalloc,mimalloc/secure"]
        );
        let missing = switch(&features, "nosuch", Path::new("/w")).unwrap_err();
        assert!(
            missing.starts_with("the product has no `nosuch` feature"),
            "{missing}"
        );
        let hidden = serde_json::json!({ "mimalloc": [], "fast": ["dep:mimalloc"] });
        assert!(switch(&hidden, "mimalloc", Path::new("/w")).is_err());
        assert_eq!(
            switch(&hidden, "fast", Path::new("/w")).unwrap().feature,
            "fast"
        );
        // `mimalloc/x` turns the dependency on whatever a feature called `mimalloc` lists.
        let through = serde_json::json!({ "mimalloc": [], "fast": ["dep:serde", "mimalloc/v2"] });
        assert!(switch(&through, "fast", Path::new("/w")).is_ok());
        // A name no feature declares is a dependency's implicit feature.
        let implicit = serde_json::json!({ "fast": ["mimalloc"], "slow": ["serde", "other/x"] });
        assert!(switch(&implicit, "fast", Path::new("/w")).is_ok());
        assert!(switch(&implicit, "slow", Path::new("/w")).is_err());
        let idle = switch(&features, "other", Path::new("/w")).unwrap_err();
        assert!(
            idle.contains("`other` feature does not turn the mimalloc dependency on"),
            "{idle}"
        );
    }

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
