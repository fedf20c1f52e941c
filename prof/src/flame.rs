//! Flame graphs of a report, drawn by inferno.

use crate::report::{Measure, Report};

/// An SVG flame graph of `report` by `measure`: one box per function, as wide as its bytes.
pub fn svg(report: &Report, measure: Measure, title: &str) -> Result<Vec<u8>, String> {
    let folded = report.folded(measure);
    if folded.is_empty() {
        return Err(format!(
            "{title}: nothing to draw (no {} bytes were sampled)",
            match measure {
                Measure::InUse => "in-use",
                Measure::Allocated => "allocated",
            }
        ));
    }
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_owned();
    options.count_name = "bytes".to_owned();
    options.colors =
        inferno::flamegraph::color::Palette::Basic(inferno::flamegraph::color::BasicPalette::Mem);
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut options, folded.iter().map(String::as_str), &mut svg)
        .map_err(|e| format!("{title}: {e}"))?;
    Ok(svg)
}
