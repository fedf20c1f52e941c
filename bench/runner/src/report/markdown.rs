//! The results as Markdown: the file `BENCHMARKS.md` is one of these, committed.

use super::{Pick, Report, Row, mib, percent, ratio, seconds};

pub fn render(report: &Report) -> String {
    let mut out = String::from("# Allocator benchmark results\n\n");
    out.push_str(&format!("Command: `{}`\n\n", report.command));
    for (key, value) in report.machine.lines() {
        out.push_str(&format!("- {key}: {value}\n"));
    }
    out.push_str(&format!(
        "- rounds: {} (every workload runs on every allocator in turn, in a fresh process, \
         once per round)\n\n",
        report.samples.rounds
    ));
    out.push_str(
        "Ratios are medians over rounds of the ratio of two runs of the same round (paired), \
         so slow drifts of the machine cancel out; below 1 is faster (or smaller). \
         *Spread* is (slowest - fastest) / median over the rounds: the noise. *Time* is wall \
         time; *CPU time* is user+system time of all the run's threads, which other processes \
         on a busy machine change much less (but which counts a waiting thread's spinning and \
         not its sleeping).\n\n",
    );
    out.push_str("## Allocators\n\n| name | what |\n|---|---|\n");
    for v in report.variants {
        out.push_str(&format!("| `{}` | {} |\n", v.name, v.about));
    }
    for (title, pick) in [
        ("Time vs system", (|r: &Row| r.vs_system) as Pick),
        ("Time vs peer", |r: &Row| r.vs_peer),
        ("CPU time vs system", |r: &Row| r.cpu_vs_system),
        ("CPU time vs peer", |r: &Row| r.cpu_vs_peer),
        ("Peak RSS vs system", |r: &Row| r.rss_vs_system),
    ] {
        out.push_str(&format!("\n## {title}\n\n| allocator |"));
        for w in report.workloads {
            out.push_str(&format!(" {} |", w.name));
        }
        out.push_str(" geomean |\n|---|");
        out.push_str(&"---:|".repeat(report.workloads.len() + 1));
        out.push('\n');
        for (name, values, mean) in report.matrix(pick) {
            out.push_str(&format!("| `{name}` |"));
            for v in values {
                out.push_str(&format!(" {} |", ratio(v)));
            }
            out.push_str(&format!(" {} |\n", ratio(mean)));
        }
    }
    out.push_str("\n## Per workload\n");
    for (w, workload) in report.workloads.iter().enumerate() {
        out.push_str(&format!(
            "\n### {}\n\n{}\n\n",
            workload.name, workload.summary
        ));
        out.push_str(
            "| allocator | median time | spread | vs system | vs peer | CPU time | CPU vs system | CPU vs peer | peak RSS | RSS vs system |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for r in report.rows(w) {
            out.push_str(&format!(
                "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                r.allocator,
                seconds(r.median_seconds),
                percent(r.spread),
                ratio(r.vs_system),
                ratio(r.vs_peer),
                seconds(r.cpu_seconds),
                ratio(r.cpu_vs_system),
                ratio(r.cpu_vs_peer),
                mib(r.rss_mib),
                ratio(r.rss_vs_system)
            ));
        }
    }
    out
}
