//! Builds each allocator's driver binary (cargo makes a repeated build a no-op) and copies it to
//! `target/mimalloc-bench/bin/<name>`, so that a later build cannot replace it mid-run.

use crate::variants::{Source, Variant};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::thread;
use std::time::Instant;

/// Where the benchmark keeps its builds and writes its results.
#[derive(Clone, Debug)]
pub struct Places {
    /// The workspace root (holding `bench/`).
    pub root: PathBuf,
    /// Builds, binaries and logs: `target/mimalloc-bench`, whatever `--out` says, so that a
    /// test writing its results elsewhere still reuses the builds.
    pub builds: PathBuf,
    /// Results: `--out`, by default the same directory.
    pub out: PathBuf,
}

impl Places {
    pub fn new(out: Option<PathBuf>) -> Self {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .canonicalize()
            .expect("the runner runs from its source tree");
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("target"));
        let builds = target.join("mimalloc-bench");
        let out = out.unwrap_or_else(|| builds.clone());
        Places { root, builds, out }
    }
    /// Writes one of the results to the output directory and says where.
    pub fn write_result(&self, name: &str, text: &str) -> Result<(), String> {
        std::fs::create_dir_all(&self.out).map_err(|e| format!("{}: {e}", self.out.display()))?;
        let path = self.out.join(name);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("wrote {}", path.display());
        Ok(())
    }
    fn bin_dir(&self) -> PathBuf {
        self.builds.join("bin")
    }
    fn log(&self, name: &str) -> PathBuf {
        self.builds.join("logs").join(format!("build-{name}.log"))
    }
}

/// A built driver and how long its (possibly no-op) build took.
#[derive(Clone, Debug)]
pub struct Built {
    pub path: PathBuf,
    pub seconds: f64,
}

/// The built drivers, by binary name ([`Variant::binary`]).
pub type Binaries = BTreeMap<&'static str, Built>;

/// The target directory a binary is built in. Builds in one lane run one after another and
/// share compiled dependencies; lanes run at the same time. jemalloc has a lane of its own
/// because its C build (configure, then make) is long and mostly serial, and overlapping it
/// with the others nearly halves a clean build on two cores. The peers share a lane: their C
/// builds are short, and their Rust dependencies (the workloads') are the same.
fn lane(source: &Source) -> &'static str {
    match source {
        Source::Workspace { features } if features.contains("jemalloc") => "build-jemalloc",
        Source::Workspace { .. } => "build",
        Source::Peer { .. } => "peer-build",
    }
}

/// Fails, naming the program and who needs it, when a build tool of `variants` cannot run
/// (an allocator asked for by name; the default set leaves such peers out, `options.rs`).
fn check_tools(variants: &[Variant]) -> Result<(), String> {
    for v in variants {
        if let (Some(tool), Source::Peer { dir, .. }) = (v.missing_tool(), &v.source) {
            return Err(format!(
                "{tool} is not installed, and the {} driver ({dir}) needs it to build \
                 (apt-get install {tool}, or leave it out with --allocators)",
                v.name
            ));
        }
    }
    Ok(())
}

/// Builds every binary `variants` need; `on_built` hears of each as it is done.
pub fn build_all(
    variants: &[Variant],
    places: &Places,
    on_built: &(dyn Fn(&str, &Built) + Sync),
) -> Result<Binaries, String> {
    check_tools(variants)?;
    let mut lanes: BTreeMap<&'static str, Vec<(&'static str, &Source)>> = BTreeMap::new();
    for v in variants {
        let lane = lanes.entry(lane(&v.source)).or_default();
        if !lane.iter().any(|(b, _)| *b == v.binary) {
            lane.push((v.binary, &v.source));
        }
    }
    for dir in [places.bin_dir(), places.builds.join("logs")] {
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    thread::scope(|scope| {
        let handles: Vec<_> = lanes
            .into_iter()
            .map(|(lane, binaries)| {
                scope.spawn(move || {
                    binaries
                        .into_iter()
                        .map(|(name, source)| build_one(name, source, lane, places, on_built))
                        .collect::<Result<Vec<_>, _>>()
                })
            })
            .collect();
        let mut built = BTreeMap::new();
        for handle in handles {
            built.extend(handle.join().expect("a build thread")?);
        }
        Ok(built)
    })
}

fn build_one(
    name: &'static str,
    source: &Source,
    lane: &str,
    places: &Places,
    on_built: &(dyn Fn(&str, &Built) + Sync),
) -> Result<(&'static str, Built), String> {
    let target_dir = places.builds.join(lane);
    let (mut command, exe) = driver_build(source, &places.root);
    command.arg("--target-dir").arg(&target_dir);
    let start = Instant::now();
    let output = command
        .output()
        .map_err(|e| format!("cannot run cargo to build {name}: {e}"))?;
    let seconds = start.elapsed().as_secs_f64();
    keep_log(name, output, places)?;
    let exe = format!("{exe}{}", std::env::consts::EXE_SUFFIX);
    let from = target_dir.join("release").join(exe);
    let to = places
        .bin_dir()
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    std::fs::copy(&from, &to).map_err(|e| format!("copying {}: {e}", from.display()))?;
    let built = Built { path: to, seconds };
    on_built(name, &built);
    Ok((name, built))
}

/// The cargo command that builds `source`'s driver (its target directory still to add), and
/// the name of the executable it makes.
fn driver_build(source: &Source, root: &Path) -> (Command, &'static str) {
    let mut command = cargo(root);
    command.args(["build", "--release"]);
    let exe = match source {
        Source::Workspace { features } => {
            command.args(["-p", "bench-driver", "--features", features]);
            "bench-driver"
        }
        Source::Peer { dir, exe, .. } => {
            // A peer's lock file is committed: the measured peer is a known version.
            let manifest = format!("{dir}/Cargo.toml");
            command.args(["--locked", "--manifest-path", &manifest]);
            exe
        }
    };
    (command, exe)
}

/// Writes a build's output to its log; a failed build is an error showing the log's tail.
fn keep_log(name: &str, output: Output, places: &Places) -> Result<(), String> {
    let log = places.log(name);
    let mut text = output.stdout;
    text.extend_from_slice(&output.stderr);
    std::fs::write(&log, &text).map_err(|e| format!("{}: {e}", log.display()))?;
    if output.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(40)..].join("\n");
    Err(format!(
        "building the {name} driver failed (full log: {}):\n{tail}",
        log.display()
    ))
}

/// `cargo` (the one running the runner, when there is one) in the workspace root, without the
/// caller's target directory: every build here names its own, so that none replaces another's
/// binaries or shares its lock.
pub fn cargo(root: &Path) -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.current_dir(root).env_remove("CARGO_TARGET_DIR");
    command
}
