//! The tables printed on the terminal at the end of a run.

use super::{Report, Row, mib, percent, ratio, seconds};

const COLUMNS: usize = 10;
const HEADER: [&str; COLUMNS] = [
    "allocator",
    "median",
    "spread",
    "vs system",
    "vs peer",
    "CPU",
    "CPU vs system",
    "CPU vs peer",
    "peak RSS",
    "RSS vs system",
];

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    for (w, workload) in report.workloads.iter().enumerate() {
        out.push_str(&format!("\n{}: {}\n", workload.name, workload.summary));
        let cells: Vec<[String; COLUMNS]> = report.rows(w).iter().map(cells).collect();
        out.push_str(&grid(&cells));
    }
    let matrices: [(&str, super::Pick); 3] = [
        ("time vs system", |r| r.vs_system),
        ("time vs peer", |r| r.vs_peer),
        ("peak RSS vs system", |r| r.rss_vs_system),
    ];
    for (title, pick) in matrices {
        out.push_str(&format!(
            "\n{title}, per workload (lower is better; geometric mean last)\n"
        ));
        let mut header = vec!["allocator".to_owned()];
        header.extend(report.workloads.iter().map(|w| w.name.to_owned()));
        header.push("geomean".into());
        let mut lines = vec![header];
        for (name, values, mean) in report.matrix(pick) {
            let mut line = vec![name];
            line.extend(values.into_iter().map(ratio));
            line.push(ratio(mean));
            lines.push(line);
        }
        out.push_str(&aligned(&lines));
    }
    out
}

fn cells(row: &Row) -> [String; COLUMNS] {
    [
        row.allocator.clone(),
        seconds(row.median_seconds),
        percent(row.spread),
        ratio(row.vs_system),
        ratio(row.vs_peer),
        seconds(row.cpu_seconds),
        ratio(row.cpu_vs_system),
        ratio(row.cpu_vs_peer),
        mib(row.rss_mib),
        ratio(row.rss_vs_system),
    ]
}

fn grid(rows: &[[String; COLUMNS]]) -> String {
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
