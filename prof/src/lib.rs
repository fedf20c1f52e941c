//! Reads the heap profiles of mimalloc's profiler (`mimalloc::profile`): symbolizes them
//! against the profiled binaries, estimates bytes per allocation site, and draws flame graphs.
//! The `mimalloc-prof` command is a thin layer over this library; the tests use it directly.

pub mod flame;
pub mod proto;
pub mod report;
pub mod symbols;

pub use proto::Profile;
pub use report::{Measure, Report};

/// Reads and symbolizes the profile at `path`; fails if a file it is symbolized against is
/// another build than the profile records (see [`symbols::Symbolizer::new`]).
pub fn read(path: &std::path::Path, binary: Option<std::path::PathBuf>) -> Result<Report, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let profile = Profile::decode_bytes(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    Report::new(&profile, binary)
}

/// A flame graph (SVG) of the in-use bytes of `snapshot`, a profile's bytes as
/// `mimalloc::profile::Profiler::snapshot_bytes` returns them, symbolized against the files the
/// profiled process had loaded: in that process itself, it draws its own heap without Go.
pub fn flame_graph(snapshot: &[u8], title: &str) -> Result<Vec<u8>, String> {
    let profile = Profile::decode_bytes(snapshot)?;
    let report = Report::new(&profile, None)?;
    flame::svg(&report, Measure::InUse, title)
}
