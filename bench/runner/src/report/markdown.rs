//! The results as Markdown: the file `BENCHMARKS.md` is one of these, committed.

use super::markdown_table::{header, row};
use super::{COLUMNS, Pick, Report, Row, ratio};
use std::fmt::Write;

pub fn render(report: &Report) -> String {
    let mut out = preamble(report);
    out.push_str(&allocators(report));
    out.push_str(&super::targets::markdown(report));
    let matrices: [(&str, Pick); 5] = [
        ("Time vs system", (|r: &Row| r.vs_system) as Pick),
        ("Time vs peer", |r: &Row| r.vs_peer),
        ("CPU time vs system", |r: &Row| r.cpu_vs_system),
        ("CPU time vs peer", |r: &Row| r.cpu_vs_peer),
        ("Peak RSS vs system", |r: &Row| r.rss_vs_system),
    ];
    for (title, pick) in matrices {
        let shown = report.has_matrices() && (report.has_peer() || !title.contains("peer"));
        if shown {
            out.push_str(&matrix(report, title, pick));
        }
    }
    let _ = write!(out, "\n## Per {}\n", report.noun);
    for w in 0..report.tasks.len() {
        out.push_str(&task(report, w));
    }
    out
}

/// The title, the command, the machine and how to read the numbers.
fn preamble(report: &Report) -> String {
    let mut out = format!("# {}\n\n", report.title);
    if let Some(finding) = &report.finding {
        let _ = write!(out, "**Finding:** {finding}\n\n");
    }
    let _ = write!(out, "Command: `{}`\n\n", report.command);
    for (key, value) in report.machine.lines() {
        let _ = writeln!(out, "- {key}: {value}");
    }
    let _ = write!(
        out,
        "- rounds: {} (every {} runs on every allocator in turn, in a fresh process, \
         once per round)\n\n",
        report.samples.rounds, report.noun
    );
    out.push_str(
        "Ratios are medians over rounds of the ratio of two runs of the same round (paired), \
         so slow drifts of the machine cancel out; below 1 is faster (or smaller). \
         *Spread* is (slowest - fastest) / median over the rounds: the noise. *Stall* is \
         slowest / median: how much longer the worst round took than a typical one. *Time* is wall \
         time; *CPU time* is user+system time of all the run's threads, which other processes \
         on a busy machine change much less (but which counts a waiting thread's spinning and \
         not its sleeping).\n\n",
    );
    out
}

fn allocators(report: &Report) -> String {
    let mut out = String::from("## Allocators\n\n");
    out.push_str(&header(&["name", "what"], &[]));
    for v in &report.allocators {
        out.push_str(&row([format!("`{}`", v.name), v.about.clone()]));
    }
    out
}

/// One number for every allocator on every workload, and its geometric mean.
fn matrix(report: &Report, title: &str, pick: Pick) -> String {
    let mut out = format!("\n## {title}\n\n");
    out.push_str(&header(&["allocator"], &report.matrix_columns()));
    for (name, values, mean) in report.matrix(pick) {
        let cells = values.into_iter().chain([mean]).map(ratio);
        out.push_str(&row([format!("`{name}`")].into_iter().chain(cells)));
    }
    out
}

fn task(report: &Report, w: usize) -> String {
    let task = &report.tasks[w];
    let mut out = format!("\n### {}\n\n{}\n\n", task.name, task.about);
    let columns = report.columns(w);
    let names: Vec<&str> = columns.iter().map(|&c| COLUMNS[c].1).collect();
    out.push_str(&header(&names[..1], &names[1..]));
    for r in report.rows(w) {
        let cells = r.cells();
        let shown = columns.iter().map(|&c| match c {
            0 => format!("`{}`", cells[0]),
            c => cells[c].clone(),
        });
        out.push_str(&row(shown));
    }
    out
}
