//! The results of a run, as the terminal table, Markdown, CSV and an SVG chart.

pub mod markdown;
pub mod markdown_table;
pub mod svg;
pub mod table;
pub mod targets;

use crate::machine::Machine;
use crate::stats::{Samples, geometric_mean};
use crate::variants::{PEER, SYSTEM, Variant};
use bench_workloads::Workload;

/// Everything a report shows.
#[derive(Debug)]
pub struct Report<'a> {
    /// The Markdown file's title.
    pub title: &'static str,
    /// What a task is called in the text: "workload", or "command" for `product`.
    pub noun: &'static str,
    /// What was measured, in the order of the samples' first index.
    pub tasks: Vec<Named>,
    /// What it ran on, in the order of the samples' second index.
    pub allocators: Vec<Named>,
    pub samples: &'a Samples,
    pub machine: Machine,
    /// The command that produced it, to repeat it.
    pub command: String,
    /// What the run found, in one line a person can act on (`product`).
    pub finding: Option<String>,
}

/// A task or an allocator: its name in the tables, and a sentence on what it is.
#[derive(Clone, Debug)]
pub struct Named {
    pub name: String,
    pub about: String,
}

impl Named {
    pub fn new(name: impl Into<String>, about: impl Into<String>) -> Self {
        Named {
            name: name.into(),
            about: about.into(),
        }
    }
}

/// The tasks of a workload run.
pub fn workloads(workloads: &[&Workload]) -> Vec<Named> {
    workloads
        .iter()
        .map(|w| Named::new(w.name, w.summary))
        .collect()
}

/// The allocators of a workload run.
pub fn variants(variants: &[Variant]) -> Vec<Named> {
    variants
        .iter()
        .map(|v| Named::new(v.name.clone(), v.about.clone()))
        .collect()
}

/// Which number of a [`Row`] a chart or matrix shows.
pub type Pick = fn(&Row) -> Option<f64>;

/// One allocator's line in a workload's table.
#[derive(Clone, Debug)]
pub struct Row {
    pub allocator: String,
    pub median_seconds: Option<f64>,
    pub spread: Option<f64>,
    pub stall: Option<f64>,
    pub vs_system: Option<f64>,
    pub vs_peer: Option<f64>,
    pub cpu_seconds: Option<f64>,
    pub cpu_vs_system: Option<f64>,
    pub cpu_vs_peer: Option<f64>,
    pub rss_mib: Option<f64>,
    pub rss_vs_system: Option<f64>,
    pub minor_faults: Option<f64>,
    /// Median resident memory after the quiet phase (MiB), for a workload that has one.
    pub quiet_mib: Option<f64>,
}

/// The columns of [`Row::cells`]: as the terminal names them (narrow), and as Markdown does.
/// [`Report::columns`] leaves out the *vs peer* ones when no allocator is the peer, and the
/// quiet one for a task no run of which reported it.
pub const COLUMNS: [(&str, &str); 13] = [
    ("allocator", "allocator"),
    ("median", "median time"),
    ("spread", "spread"),
    ("stall", "stall"),
    ("vs system", "vs system"),
    ("vs peer", "vs peer"),
    ("CPU", "CPU time"),
    ("CPU vs system", "CPU vs system"),
    ("CPU vs peer", "CPU vs peer"),
    ("peak RSS", "peak RSS"),
    ("RSS vs system", "RSS vs system"),
    ("faults", "minor faults"),
    ("quiet MiB", "quiet MiB"),
];

impl Row {
    /// The row as text, in the order of [`COLUMNS`].
    pub fn cells(&self) -> [String; COLUMNS.len()] {
        [
            self.allocator.clone(),
            seconds(self.median_seconds),
            percent(self.spread),
            ratio(self.stall),
            ratio(self.vs_system),
            ratio(self.vs_peer),
            seconds(self.cpu_seconds),
            ratio(self.cpu_vs_system),
            ratio(self.cpu_vs_peer),
            mib(self.rss_mib),
            ratio(self.rss_vs_system),
            count(self.minor_faults),
            number(self.quiet_mib),
        ]
    }
}

/// The indices into [`COLUMNS`] of the ratios against the peer.
const PEER_COLUMNS: [usize; 2] = [5, 8];
/// The index into [`COLUMNS`] of the resident memory after the quiet phase.
const QUIET_COLUMN: usize = 12;

impl Report<'_> {
    fn index(&self, name: &str) -> Option<usize> {
        self.allocators.iter().position(|v| v.name == name)
    }

    /// Whether the peer ran, and so whether there are *vs peer* ratios to show.
    pub fn has_peer(&self) -> bool {
        self.index(PEER).is_some()
    }

    /// The indices into [`COLUMNS`] (and [`Row::cells`]) this report shows for task `w`: the
    /// quiet column only for a task that reported the figure, so that the others' tables read
    /// as they did before it.
    pub fn columns(&self, w: usize) -> Vec<usize> {
        let (peer, quiet) = (self.has_peer(), self.samples.has_quiet(w));
        (0..COLUMNS.len())
            .filter(|c| peer || !PEER_COLUMNS.contains(c))
            .filter(|&c| quiet || c != QUIET_COLUMN)
            .collect()
    }

    pub fn rows(&self, w: usize) -> Vec<Row> {
        let (system, peer) = (self.index(SYSTEM), self.index(PEER));
        let s = self.samples;
        (0..self.allocators.len())
            .map(|v| Row {
                allocator: self.allocators[v].name.clone(),
                median_seconds: s.median_seconds(w, v),
                spread: s.spread(w, v),
                stall: s.stall(w, v),
                vs_system: system.and_then(|b| s.time_ratio(w, v, b)),
                vs_peer: peer.and_then(|b| s.time_ratio(w, v, b)),
                cpu_seconds: s.median_cpu_seconds(w, v),
                cpu_vs_system: system.and_then(|b| s.cpu_ratio(w, v, b)),
                cpu_vs_peer: peer.and_then(|b| s.cpu_ratio(w, v, b)),
                rss_mib: s.median_rss_mib(w, v),
                rss_vs_system: system.and_then(|b| s.rss_ratio(w, v, b)),
                minor_faults: s.median_minor_faults(w, v),
                quiet_mib: s.median_quiet_mib(w, v),
            })
            .collect()
    }

    /// `ratio(w, v)` for every workload and allocator, plus each allocator's geometric mean.
    pub fn matrix(
        &self,
        ratio: impl Fn(&Row) -> Option<f64>,
    ) -> Vec<(String, Vec<Option<f64>>, Option<f64>)> {
        let rows: Vec<Vec<Row>> = (0..self.tasks.len()).map(|w| self.rows(w)).collect();
        (0..self.allocators.len())
            .map(|v| {
                let values: Vec<Option<f64>> = rows.iter().map(|r| ratio(&r[v])).collect();
                let present: Vec<f64> = values.iter().flatten().copied().collect();
                let mean = if present.len() == values.len() {
                    geometric_mean(&present)
                } else {
                    None
                };
                (self.allocators[v].name.clone(), values, mean)
            })
            .collect()
    }

    /// The columns of a [`Report::matrix`] after the allocator's name: the tasks and the
    /// geometric mean.
    pub fn matrix_columns(&self) -> Vec<&str> {
        let tasks = self.tasks.iter().map(|t| t.name.as_str());
        tasks.chain(["geomean"]).collect()
    }

    /// Whether the ratio matrices say more than the per-task tables: only with several tasks.
    pub fn has_matrices(&self) -> bool {
        self.tasks.len() > 1
    }

    /// Every sample, one line each: for spreadsheets and for re-analysis. The `quiet_rss_kib`
    /// column is there when some task reported the figure (empty for the others), so that a
    /// run without one (`product`) keeps the columns it had.
    pub fn csv(&self) -> String {
        let quiet = (0..self.tasks.len()).any(|w| self.samples.has_quiet(w));
        let mut out = format!(
            "round,{},allocator,nanos,cpu_nanos,peak_rss_kib,minor_faults{}\n",
            self.noun,
            if quiet { ",quiet_rss_kib" } else { "" }
        );
        let cell = |n: Option<u64>| n.map_or(String::new(), |n| n.to_string());
        for round in 0..self.samples.rounds {
            for (w, task) in self.tasks.iter().enumerate() {
                for (v, allocator) in self.allocators.iter().enumerate() {
                    let Some(s) = &self.samples.grid[w][v][round] else {
                        continue;
                    };
                    let (rss, faults) = (cell(s.peak_rss_kib), cell(s.minor_faults));
                    out.push_str(&format!(
                        "{round},{},{},{},{},{rss},{faults}",
                        task.name,
                        allocator.name,
                        s.nanos,
                        cell(s.cpu_nanos)
                    ));
                    if quiet {
                        out.push_str(&format!(",{}", cell(s.quiet_rss_kib)));
                    }
                    out.push('\n');
                }
            }
        }
        out
    }
}

pub fn seconds(s: Option<f64>) -> String {
    match s {
        None => "-".into(),
        Some(s) if s >= 1.0 => format!("{s:.3} s"),
        Some(s) if s >= 1e-3 => format!("{:.1} ms", s * 1e3),
        Some(s) => format!("{:.1} µs", s * 1e6),
    }
}

pub fn ratio(r: Option<f64>) -> String {
    r.map_or("-".into(), |r| format!("{r:.2}x"))
}

pub fn percent(p: Option<f64>) -> String {
    p.map_or("-".into(), |p| format!("{:.1}%", p * 100.0))
}

pub fn mib(m: Option<f64>) -> String {
    m.map_or("-".into(), |m| format!("{m:.1} MiB"))
}

/// A plain number with one decimal, for a column whose name carries the unit.
pub fn number(n: Option<f64>) -> String {
    n.map_or("-".into(), |n| format!("{n:.1}"))
}

/// A count, in thousands from 10 000 up: the digits that matter when counts range over
/// orders of magnitude.
pub fn count(n: Option<f64>) -> String {
    match n {
        None => "-".into(),
        Some(n) if n >= 1e4 => format!("{:.1}k", n / 1e3),
        Some(n) => format!("{n:.0}"),
    }
}
