//! The results as an SVG chart: per task (workload or command), one bar per allocator for its wall time, CPU time
//! and peak RSS, all relative to the system allocator (the line at 1).
//!
//! Drawn by hand rather than with a plotting crate: `plotters` (SVG backend only) drew the same
//! chart in about a third fewer lines, but the layout arithmetic stayed, the figure-wide legend
//! and the clipped bars' labels were still drawn by hand, its decimal axis and font sizes needed
//! workarounds, and it has no way to give a bar its `<title>` (the exact value on hover).

use super::{Pick, Report, Row};
use std::fmt::Write;

const LABEL_WIDTH: f64 = 130.0;
const PANEL_WIDTH: f64 = 300.0;
const PANEL_GAP: f64 = 40.0;
const BAR: f64 = 9.0;
const BAR_GAP: f64 = 2.0;
const GROUP_GAP: f64 = 14.0;
const TOP: f64 = 56.0;
/// Ratios beyond this are drawn to the edge and labelled with their value.
const MAX_RATIO: f64 = 3.0;
/// Pixels per unit of ratio.
const SCALE: f64 = PANEL_WIDTH / MAX_RATIO;
const COLOURS: [&str; 10] = [
    "#7f7f7f", "#1f77b4", "#aec7e8", "#9467bd", "#17becf", "#d62728", "#ff7f0e", "#2ca02c",
    "#bcbd22", "#e377c2",
];

/// The charts: one panel each, side by side.
const PANELS: [(&str, Pick); 3] = [
    ("time vs system", |r| r.vs_system),
    ("CPU time vs system", |r| r.cpu_vs_system),
    ("peak RSS vs system", |r| r.rss_vs_system),
];

pub fn render(report: &Report) -> String {
    let layout = Layout::of(report);
    let mut svg = layout.frame();
    let rows: Vec<Vec<Row>> = (0..report.tasks.len()).map(|w| report.rows(w)).collect();
    for (p, (title, pick)) in PANELS.iter().enumerate() {
        let x0 = LABEL_WIDTH + p as f64 * (PANEL_WIDTH + PANEL_GAP);
        svg.push_str(&layout.axis(x0, title));
        for (w, workload_rows) in rows.iter().enumerate() {
            let y0 = TOP + w as f64 * layout.group;
            let name = report.tasks[w].name.as_str();
            if p == 0 {
                svg.push_str(&layout.label(y0, name));
            }
            svg.push_str(&bars(x0, y0, name, workload_rows, *pick));
        }
    }
    svg.push_str(&legend(report, layout.legend_top));
    svg.push_str("</svg>\n");
    svg
}

/// The sizes that depend on how many workloads and allocators there are.
struct Layout {
    /// The height of one workload's bars.
    group: f64,
    legend_top: f64,
    width: f64,
    height: f64,
}

impl Layout {
    fn of(report: &Report) -> Self {
        let variants = report.allocators.len();
        let group = variants as f64 * (BAR + BAR_GAP) + GROUP_GAP;
        let legend_top = TOP + group * report.tasks.len() as f64 + 10.0;
        let count = PANELS.len() as f64;
        Layout {
            group,
            legend_top,
            width: LABEL_WIDTH + count * PANEL_WIDTH + (count - 1.0) * PANEL_GAP + 50.0,
            height: legend_top + 20.0 * variants.div_ceil(4) as f64 + 20.0,
        }
    }

    /// The document's opening, its background and its title.
    fn frame(&self) -> String {
        let (width, height) = (self.width, self.height);
        let mut svg = String::new();
        let _ = writeln!(
            svg,
            r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">"##
        );
        let _ = writeln!(svg, r##"<rect width="100%" height="100%" fill="white"/>"##);
        let _ = writeln!(
            svg,
            r##"<text x="10" y="20" font-size="14" font-weight="bold">Allocators relative to the system allocator (median of paired ratios; lower is better)</text>"##
        );
        svg
    }

    /// A panel's title and its vertical grid lines, the one at 1 (the system allocator) darker.
    fn axis(&self, x0: f64, title: &str) -> String {
        let mut svg = String::new();
        let _ = writeln!(
            svg,
            r##"<text x="{x0}" y="{}" font-weight="bold">{title}</text>"##,
            TOP - 18.0
        );
        for tick in [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0] {
            let x = x0 + tick * SCALE;
            let (colour, w) = if tick == 1.0 {
                ("#333", 1.5)
            } else {
                ("#ddd", 1.0)
            };
            let _ = writeln!(
                svg,
                r##"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="{colour}" stroke-width="{w}"/><text x="{x}" y="{}" text-anchor="middle" fill="#555">{tick}</text>"##,
                TOP - 6.0,
                self.legend_top - 8.0,
                TOP - 6.0 - 2.0
            );
        }
        svg
    }

    /// A workload's name, left of its bars in the first panel.
    fn label(&self, y0: f64, workload: &str) -> String {
        let mut svg = String::new();
        let _ = writeln!(
            svg,
            r##"<text x="{}" y="{}" text-anchor="end">{}</text>"##,
            LABEL_WIDTH - 8.0,
            y0 + (self.group - GROUP_GAP) / 2.0 + 4.0,
            escaped(workload),
        );
        svg
    }
}

/// One workload's bars in one panel, each labelled with its value.
fn bars(x0: f64, y0: f64, workload: &str, rows: &[Row], pick: Pick) -> String {
    let mut svg = String::new();
    for (v, row) in rows.iter().enumerate() {
        let Some(value) = pick(row) else { continue };
        let y = y0 + v as f64 * (BAR + BAR_GAP);
        let length = value.min(MAX_RATIO) * SCALE;
        let _ = writeln!(
            svg,
            r##"<rect x="{x0}" y="{y}" width="{length:.1}" height="{BAR}" fill="{}"><title>{} {}: {value:.3}</title></rect>"##,
            colour(v),
            escaped(workload),
            escaped(&row.allocator)
        );
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{}" font-size="8" fill="#333">{value:.2}</text>"##,
            x0 + length + 3.0,
            y + BAR - 1.0
        );
    }
    svg
}

/// Four allocators to a line, each with its colour.
fn legend(report: &Report, top: f64) -> String {
    let mut svg = String::new();
    for (v, variant) in report.allocators.iter().enumerate() {
        let x = LABEL_WIDTH + (v % 4) as f64 * 200.0;
        let y = top + (v / 4) as f64 * 20.0;
        let _ = writeln!(
            svg,
            r##"<rect x="{x}" y="{y}" width="12" height="12" fill="{}"/><text x="{}" y="{}">{}</text>"##,
            colour(v),
            x + 18.0,
            y + 10.0,
            escaped(&variant.name)
        );
    }
    svg
}

fn colour(v: usize) -> &'static str {
    COLOURS[v % COLOURS.len()]
}

/// A name as SVG text: a `--variant` name or a product's program may hold `&` or `<`, which
/// would end the document's well-formedness.
fn escaped(name: &str) -> String {
    name.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::render;
    use crate::machine::Machine;
    use crate::measure::Sample;
    use crate::report::{Named, Report};
    use crate::stats::Samples;

    /// Names reach the chart as text, whatever characters they hold.
    #[test]
    fn names_are_escaped_where_they_are_drawn() {
        let mut samples = Samples::new(1, 2, 1);
        for v in 0..2 {
            samples.grid[0][v][0] = Some(Sample {
                nanos: 1_000,
                cpu_nanos: Some(1_000),
                peak_rss_kib: Some(1024),
                minor_faults: None,
                quiet_rss_kib: None,
            });
        }
        let report = Report {
            title: "test",
            noun: "command",
            tasks: vec![Named::new("bin q<3&x>", "")],
            allocators: vec![Named::new("system", ""), Named::new("a<b&c", "")],
            samples: &samples,
            machine: Machine::unknown(),
            command: "test".to_owned(),
            finding: None,
        };
        let svg = render(&report);
        assert!(!svg.contains("a<b") && !svg.contains("q<3") && !svg.contains("&x"));
        assert!(svg.contains(">a&lt;b&amp;c</text>"), "the legend");
        assert!(svg.contains(">bin q&lt;3&amp;x&gt;</text>"), "the label");
        assert!(svg.contains("<title>bin q&lt;3&amp;x&gt; a&lt;b&amp;c: 1.000</title>"));
    }
}
