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
