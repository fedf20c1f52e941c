//! The tables printed on the terminal at the end of a run.

use super::{Report, Row, mib, percent, ratio, seconds};

const HEADER: [&str; 7] = [
    "allocator",
    "median",
    "spread",
    "vs system",
    "vs peer",
    "peak RSS",
    "RSS vs system",
];

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    for (w, workload) in report.workloads.iter().enumerate() {
        out.push_str(&format!("\n{}: {}\n", workload.name, workload.summary));
        let cells: Vec<[String; 7]> = report.rows(w).iter().map(cells).collect();
        out.push_str(&grid(&cells));
    }
    out.push_str("\ntime vs system, per workload (lower is faster; geometric mean last)\n");
    let mut header = vec!["allocator".to_owned()];
    header.extend(report.workloads.iter().map(|w| w.name.to_owned()));
    header.push("geomean".into());
    let mut lines = vec![header];
    for (name, values, mean) in report.matrix(|r| r.vs_system) {
        let mut line = vec![name];
        line.extend(values.into_iter().map(ratio));
        line.push(ratio(mean));
        lines.push(line);
    }
    out.push_str(&aligned(&lines));
    out
}

fn cells(row: &Row) -> [String; 7] {
    [
        row.allocator.clone(),
        seconds(row.median_seconds),
        percent(row.spread),
        ratio(row.vs_system),
        ratio(row.vs_peer),
        mib(row.rss_mib),
        ratio(row.rss_vs_system),
    ]
}

fn grid(rows: &[[String; 7]]) -> String {
    let mut lines = vec![HEADER.map(str::to_owned).to_vec()];
    lines.extend(rows.iter().map(|r| r.to_vec()));
    aligned(&lines)
}

/// Columns padded to their widest cell; the first left-aligned, the rest right-aligned.
fn aligned(lines: &[Vec<String>]) -> String {
    let columns = lines.iter().map(Vec::len).max().unwrap_or(0);
    let width = |c: usize| {
        lines
            .iter()
            .filter_map(|l| l.get(c))
            .map(|s| s.chars().count())
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..columns).map(width).collect();
    let mut out = String::new();
    for line in lines {
        for (c, cell) in line.iter().enumerate() {
            let pad = widths[c] - cell.chars().count();
            if c == 0 {
                out.push_str(&format!("  {cell}{}", " ".repeat(pad)));
            } else {
                out.push_str(&format!("  {}{cell}", " ".repeat(pad)));
            }
        }
        out.push('\n');
    }
    out
}
