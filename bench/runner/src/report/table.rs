//! The tables printed on the terminal at the end of a run.

use super::{COLUMNS, Report, ratio};

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    for (w, task) in report.tasks.iter().enumerate() {
        let columns = report.columns(w);
        out.push_str(&format!("\n{}: {}\n", task.name, task.about));
        let mut lines = vec![columns.iter().map(|&c| COLUMNS[c].0.to_owned()).collect()];
        for row in report.rows(w) {
            let cells = row.cells();
            lines.push(columns.iter().map(|&c| cells[c].clone()).collect());
        }
        out.push_str(&aligned(&lines));
    }
    out.push_str(&targets(report));
    if !report.has_matrices() {
        return out;
    }
    let matrices: [(&str, super::Pick); 3] = [
        ("time vs system", |r| r.vs_system),
        ("time vs peer", |r| r.vs_peer),
        ("peak RSS vs system", |r| r.rss_vs_system),
    ];
    for (title, pick) in matrices {
        if title.contains("peer") && !report.has_peer() {
            continue;
        }
        out.push_str(&format!(
            "\n{title}, per workload (lower is better; geometric mean last)\n"
        ));
        let header = std::iter::once("allocator").chain(report.matrix_columns());
        let mut lines = vec![header.map(str::to_owned).collect()];
        for (name, values, mean) in report.matrix(pick) {
            let cells = values.into_iter().chain([mean]).map(ratio);
            lines.push(std::iter::once(name).chain(cells).collect());
        }
        out.push_str(&aligned(&lines));
    }
    out
}

/// The lines against the targets: time, RSS and stall (with the peers), and quiet resident
/// memory (for the workloads that go quiet).
fn targets(report: &Report) -> String {
    use super::targets::{QUIET_LIMIT_MIB, QUIET_MOONSHOT_MIB, quiet_lines, summary};
    let mut out = String::new();
    let targets = summary(report);
    if !targets.is_empty() {
        out.push_str("\nagainst the targets (time vs the faster peer, RSS vs the leaner peer, stall vs the peer's):\n");
        for line in targets {
            out.push_str(&format!("  {line}\n"));
        }
    }
    let quiet = quiet_lines(report);
    if !quiet.is_empty() {
        out.push_str(&format!(
            "\nagainst the quiet target (resident memory after going quiet at most \
             {QUIET_LIMIT_MIB} MiB; moonshot: at most {QUIET_MOONSHOT_MIB} MiB above the system \
             allocator's):\n"
        ));
        for line in quiet {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out
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
