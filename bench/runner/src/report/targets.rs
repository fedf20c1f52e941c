//! Each allocator against the targets its defaults are chosen by: time against the faster of
//! the two peers, peak RSS against the leaner one and against the system allocator, and its
//! stall figure against the registry peer's. Shown when the registry peer and the system
//! allocator ran; without `peer-safe` (left out when cmake is missing) the registry peer is
//! both the faster and the leaner peer, and the section says so.

use super::{Report, markdown, ratio};
use crate::stats::geometric_mean;
use crate::variants::{PEER, PEER_SAFE, SYSTEM};
use std::fmt::Write;

/// A workload's time may be at most this much above the faster peer's.
pub const TIME_LIMIT: f64 = 1.02;

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

/// The Markdown section: the summary, then a table per allocator.
pub fn markdown(report: &Report) -> String {
    let lines = summary(report);
    if lines.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n## Against the targets\n\n");
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
    for line in &lines {
        let _ = writeln!(out, "- {line}");
    }
    for v in candidates(report) {
        let _ = write!(out, "\n### `{}`\n\n", report.allocators[v].name);
        out.push_str(&markdown::header(
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
            out.push_str(&markdown::row([
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

#[cfg(test)]
mod tests {
    use super::Standing;

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
