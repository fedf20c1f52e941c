//! Each allocator against the targets its defaults are chosen by: time against the faster of
//! the two peers, peak RSS against the leaner one and against the system allocator, and its
//! stall figure against the registry peer's. Shown when the registry peer and the system
//! allocator ran; without `peer-safe` (left out when cmake is missing) the registry peer is
//! both the faster and the leaner peer, and the section says so.
//!
//! And every allocator, the system one and the peers included, against the quiet target: the
//! resident memory a workload that goes quiet after its run reads at the end (at most
//! [`QUIET_LIMIT_MIB`]), with the moonshot of at most [`QUIET_MOONSHOT_MIB`] above the system
//! allocator's. Shown whenever some workload reported the figure: it needs no peer.

use super::markdown_table::{header, row};
use super::{Report, mib, ratio};
use crate::stats::geometric_mean;
use crate::variants::{PEER, PEER_SAFE, SYSTEM};
use std::fmt::Write;

/// A workload's time may be at most this much above the faster peer's.
pub const TIME_LIMIT: f64 = 1.02;
/// Resident memory after going quiet may be at most this much (MiB), on every allocator: a
/// service that has gone quiet should not hold on to its burst.
pub const QUIET_LIMIT_MIB: f64 = 32.0;
/// The moonshot: resident memory after going quiet at most this much (MiB) above the system
/// allocator's figure.
pub const QUIET_MOONSHOT_MIB: f64 = 8.0;

/// One allocator on one workload, against the targets.
#[derive(Clone, Copy, Debug, Default)]
pub struct Standing {
    /// Paired time ratio against the slower-to-beat peer: the larger of the two ratios.
    pub vs_faster_peer: Option<f64>,
    /// Paired peak-RSS ratio against the leaner peer: the larger of the two ratios.
    pub rss_vs_leaner_peer: Option<f64>,
    pub rss_vs_system: Option<f64>,
    /// Its stall figure over the registry peer's.
    pub stall_vs_peer: Option<f64>,
}

impl Standing {
    /// Which targets it misses, in words.
    pub fn misses(&self) -> Vec<&'static str> {
        let over = |value: Option<f64>, limit: f64| value.is_some_and(|v| v > limit);
        let mut misses = Vec::new();
        if over(self.vs_faster_peer, TIME_LIMIT) {
            misses.push("time");
        }
        if over(self.rss_vs_leaner_peer, 1.0) {
            misses.push("RSS");
        }
        if over(self.stall_vs_peer, 1.0) {
            misses.push("stall");
        }
        misses
    }
}

struct Peers {
    system: usize,
    peer: usize,
    /// Absent when its build tool was not installed (the default set leaves it out).
    peer_safe: Option<usize>,
}

fn peers(report: &Report) -> Option<Peers> {
    let index = |name| report.allocators.iter().position(|a| a.name == name);
    Some(Peers {
        system: index(SYSTEM)?,
        peer: index(PEER)?,
        peer_safe: index(PEER_SAFE),
    })
}

fn larger(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a?.max(b?))
}

/// Allocator `v` on workload `w`.
pub fn standing(report: &Report, w: usize, v: usize) -> Option<Standing> {
    let p = peers(report)?;
    let s = report.samples;
    Some(Standing {
        vs_faster_peer: larger(
            s.time_ratio(w, v, p.peer),
            p.peer_safe
                .map_or(s.time_ratio(w, v, p.peer), |ps| s.time_ratio(w, v, ps)),
        ),
        rss_vs_leaner_peer: larger(
            s.rss_ratio(w, v, p.peer),
            p.peer_safe
                .map_or(s.rss_ratio(w, v, p.peer), |ps| s.rss_ratio(w, v, ps)),
        ),
        rss_vs_system: s.rss_ratio(w, v, p.system),
        stall_vs_peer: Some(s.stall(w, v)? / s.stall(w, p.peer)?),
    })
}

/// The allocators judged: every one but the system allocator and the two peers.
fn candidates(report: &Report) -> Vec<usize> {
    let Some(p) = peers(report) else {
        return Vec::new();
    };
    (0..report.allocators.len())
        .filter(|&v| v != p.system && v != p.peer && p.peer_safe != Some(v))
        .collect()
}

/// One line per allocator: how many workloads miss each target, and the geometric mean of its
/// peak RSS against the system allocator's.
pub fn summary(report: &Report) -> Vec<String> {
    candidates(report)
        .into_iter()
        .map(|v| {
            let all: Vec<Standing> = (0..report.tasks.len())
                .filter_map(|w| standing(report, w, v))
                .collect();
            let count = |what| all.iter().filter(|s| s.misses().contains(&what)).count();
            let rss: Vec<f64> = all.iter().filter_map(|s| s.rss_vs_system).collect();
            let worst = |pick: fn(&Standing) -> Option<f64>| {
                all.iter()
                    .filter_map(pick)
                    .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
            };
            format!(
                "{}: time over {TIME_LIMIT}x the faster peer on {} of {} (worst {}), RSS over the \
                 leaner peer on {} (worst {}), stall over the peer's on {} (worst {}); \
                 RSS vs system geomean {}",
                report.allocators[v].name,
                count("time"),
                all.len(),
                ratio(worst(|s| s.vs_faster_peer)),
                count("RSS"),
                ratio(worst(|s| s.rss_vs_leaner_peer)),
                count("stall"),
                ratio(worst(|s| s.stall_vs_peer)),
                ratio(geometric_mean(&rss)),
            )
        })
        .collect()
}

/// The Markdown section: the summary, then a table per allocator; then the quiet target.
pub fn markdown(report: &Report) -> String {
    let (lines, quiet) = (summary(report), quiet_lines(report));
    if lines.is_empty() && quiet.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n## Against the targets\n");
    if !lines.is_empty() {
        out.push_str(&standings(report, &lines));
    }
    if !quiet.is_empty() {
        let _ = write!(
            out,
            "\n### Quiet resident memory\n\nThe resident memory (`VmRSS`) a workload that goes \
             quiet after its run read at the end of its quiet phase, median over rounds: at most \
             {QUIET_LIMIT_MIB} MiB on every allocator (the target), and at most \
             {QUIET_MOONSHOT_MIB} MiB above the system allocator's (the moonshot).\n\n"
        );
        for line in &quiet {
            let _ = writeln!(out, "- {line}");
        }
    }
    out
}

/// The time, RSS and stall targets: the summary lines, then a table per allocator.
fn standings(report: &Report, lines: &[String]) -> String {
    let mut out = String::from("\n");
    let _ = writeln!(
        out,
        "Time at most {TIME_LIMIT}x the faster peer's, peak RSS at most the leaner peer's, stall \
         (slowest / median) at most the registry peer's; paired medians.{}\n",
        match peers(report) {
            Some(Peers {
                peer_safe: None, ..
            }) => " Only the registry peer ran (not `peer-safe`): it is both peers here.",
            _ => "",
        }
    );
    for line in lines {
        let _ = writeln!(out, "- {line}");
    }
    for v in candidates(report) {
        let _ = write!(out, "\n### `{}`\n\n", report.allocators[v].name);
        out.push_str(&header(
            &["workload"],
            &[
                "vs faster peer",
                "RSS vs leaner peer",
                "RSS vs system",
                "stall vs peer",
                "misses",
            ],
        ));
        for (w, task) in report.tasks.iter().enumerate() {
            let s = standing(report, w, v).unwrap_or_default();
            out.push_str(&row([
                task.name.clone(),
                ratio(s.vs_faster_peer),
                ratio(s.rss_vs_leaner_peer),
                ratio(s.rss_vs_system),
                ratio(s.stall_vs_peer),
                s.misses().join(", "),
            ]));
        }
    }
    out
}

/// Where a figure stands against a bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Met,
    Missed,
    /// No figure, or no bound (the moonshot without the system allocator's figure).
    Missing,
}

impl Verdict {
    pub fn of(value: Option<f64>, bound: Option<f64>) -> Self {
        match (value, bound) {
            (Some(v), Some(b)) if v <= b => Verdict::Met,
            (Some(_), Some(_)) => Verdict::Missed,
            _ => Verdict::Missing,
        }
    }
}

/// The quiet target's lines: one per workload that reported the figure, then which allocators
/// meet the target and the moonshot on all of them. Empty when none reported it.
pub fn quiet_lines(report: &Report) -> Vec<String> {
    let tasks: Vec<usize> = (0..report.tasks.len())
        .filter(|&w| report.samples.has_quiet(w))
        .collect();
    if tasks.is_empty() {
        return Vec::new();
    }
    let meeting = |bound: fn(&Report, usize) -> Option<f64>| {
        let names: Vec<&str> = (0..report.allocators.len())
            .filter(|&v| {
                let figure = |w| report.samples.median_quiet_mib(w, v);
                tasks
                    .iter()
                    .all(|&w| Verdict::of(figure(w), bound(report, w)) == Verdict::Met)
            })
            .map(|v| report.allocators[v].name.as_str())
            .collect();
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    };
    let mut lines: Vec<String> = tasks.iter().map(|&w| quiet_row(report, w)).collect();
    lines.push(format!(
        "on every workload that goes quiet, the target is met by {}; the moonshot by {}",
        meeting(|_, _| Some(QUIET_LIMIT_MIB)),
        meeting(moonshot)
    ));
    lines
}

/// The moonshot's bound on task `w`: the system allocator's figure plus the margin.
fn moonshot(report: &Report, w: usize) -> Option<f64> {
    let system = report.allocators.iter().position(|a| a.name == SYSTEM)?;
    Some(report.samples.median_quiet_mib(w, system)? + QUIET_MOONSHOT_MIB)
}

/// Every allocator's quiet figure on task `w`, against the target and the moonshot.
pub fn quiet_row(report: &Report, w: usize) -> String {
    let figures: Vec<(&str, Option<f64>)> = (0..report.allocators.len())
        .map(|v| {
            let name = report.allocators[v].name.as_str();
            (name, report.samples.median_quiet_mib(w, v))
        })
        .collect();
    let target = grouped(&figures, Some(QUIET_LIMIT_MIB), true);
    let bound = moonshot(report, w);
    let moonshot = match bound {
        Some(b) => format!(
            "moonshot (at most {}) {}",
            mib(Some(b)),
            grouped(&figures, bound, false)
        ),
        None => "moonshot: no figure from the system allocator".to_owned(),
    };
    format!(
        "{}: target (at most {}) {target}. The {moonshot}",
        report.tasks[w].name,
        mib(Some(QUIET_LIMIT_MIB))
    )
}

/// `met by A (1.0 MiB), B (2.0 MiB); missed by C (40.0 MiB); no figure from D`: the
/// allocators by their verdict against `bound`, with their figures if `shown`.
fn grouped(figures: &[(&str, Option<f64>)], bound: Option<f64>, shown: bool) -> String {
    let groups = [
        ("met by", Verdict::Met),
        ("missed by", Verdict::Missed),
        ("no figure from", Verdict::Missing),
    ];
    let mut parts = Vec::new();
    for (label, verdict) in groups {
        let names: Vec<String> = figures
            .iter()
            .filter(|(_, figure)| Verdict::of(*figure, bound) == verdict)
            .map(|&(name, figure)| match figure {
                Some(_) if shown => format!("{name} ({})", mib(figure)),
                _ => name.to_owned(),
            })
            .collect();
        if !names.is_empty() {
            parts.push(format!("{label} {}", names.join(", ")));
        }
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::{Standing, Verdict, quiet_lines, quiet_row};
    use crate::machine::Machine;
    use crate::measure::Sample;
    use crate::report::{Named, Report};
    use crate::stats::Samples;

    /// One round of one task, `idle-still`, with these allocators' quiet figures (KiB); `None`
    /// is a run that did not report it.
    fn quiet_samples(figures: &[Option<u64>]) -> Samples {
        let mut samples = Samples::new(1, figures.len(), 1);
        for (v, &quiet_rss_kib) in figures.iter().enumerate() {
            samples.grid[0][v][0] = Some(Sample {
                nanos: 1_000,
                cpu_nanos: None,
                peak_rss_kib: Some(400 * 1024),
                minor_faults: None,
                quiet_rss_kib,
            });
        }
        samples
    }

    fn report<'a>(samples: &'a Samples, allocators: &[&str]) -> Report<'a> {
        Report {
            title: "test",
            noun: "workload",
            tasks: vec![Named::new("idle-still", "a burst, then quiet")],
            allocators: allocators.iter().map(|a| Named::new(*a, "")).collect(),
            samples,
            machine: Machine::unknown(),
            command: "test".to_owned(),
            finding: None,
        }
    }

    #[test]
    fn the_idle_row_says_who_met_missed_or_lacks_the_quiet_target() {
        // system 3 MiB, ours 20 MiB, ours-v2 40 MiB, jemalloc without a figure.
        let samples = quiet_samples(&[Some(3 * 1024), Some(20 * 1024), Some(40 * 1024), None]);
        let allocators = ["system", "ours", "ours-v2", "jemalloc"];
        let report = report(&samples, &allocators);
        assert_eq!(
            quiet_row(&report, 0),
            "idle-still: target (at most 32.0 MiB) met by system (3.0 MiB), ours (20.0 MiB); \
             missed by ours-v2 (40.0 MiB); no figure from jemalloc. The moonshot (at most 11.0 \
             MiB) met by system; missed by ours, ours-v2; no figure from jemalloc"
        );
        let lines = quiet_lines(&report);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(
            lines[1],
            "on every workload that goes quiet, the target is met by system, ours; the moonshot \
             by system"
        );
    }

    #[test]
    fn without_the_system_allocators_figure_the_moonshot_is_missing() {
        let samples = quiet_samples(&[None, Some(32 * 1024)]);
        let report = report(&samples, &["system", "ours"]);
        assert_eq!(
            quiet_row(&report, 0),
            "idle-still: target (at most 32.0 MiB) met by ours (32.0 MiB); no figure from \
             system. The moonshot: no figure from the system allocator"
        );
        assert!(quiet_lines(&report)[1].ends_with("the moonshot by none"));
        // No workload reported the figure: no lines at all.
        let none = quiet_samples(&[None, None]);
        assert!(quiet_lines(&self::report(&none, &["system", "ours"])).is_empty());
    }

    #[test]
    fn a_bound_is_met_up_to_and_including_itself() {
        assert_eq!(Verdict::of(Some(32.0), Some(32.0)), Verdict::Met);
        assert_eq!(Verdict::of(Some(32.1), Some(32.0)), Verdict::Missed);
        assert_eq!(Verdict::of(None, Some(32.0)), Verdict::Missing);
        assert_eq!(Verdict::of(Some(1.0), None), Verdict::Missing);
    }

    #[test]
    fn a_standing_misses_what_it_exceeds() {
        let s = Standing {
            vs_faster_peer: Some(1.03),
            rss_vs_leaner_peer: Some(1.0),
            rss_vs_system: Some(2.0),
            stall_vs_peer: Some(1.5),
        };
        assert_eq!(s.misses(), ["time", "stall"]);
        let tie = Standing {
            vs_faster_peer: Some(1.02),
            ..s
        };
        assert_eq!(tie.misses(), ["stall"]);
        assert!(Standing::default().misses().is_empty());
    }
}
