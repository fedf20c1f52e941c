//! The one line a person can act on: the fastest variant, the leanest, and a run-time setting
//! worth baking into the build when it saves memory at no measurable cost.

use super::variants::Variant;
use crate::report::mib;
use crate::stats::Samples;

/// A run-time variant "saves memory" when its paired peak-RSS ratio to its build's plain
/// variant is at most this...
const LEANER: f64 = 0.95;
/// ...and costs nothing measurable when its paired time ratio is at most this (a smaller
/// difference than the rounds of a whole-process run usually disagree by).
const NO_COST: f64 = 1.02;

/// `floor_kib` is [`spawn_floor_kib`](crate::measure::spawn_floor_kib): a median at or under
/// it is an upper bound, not a figure to rank allocators by.
pub fn finding(variants: &[Variant], samples: &Samples, floor_kib: Option<u64>) -> String {
    let best = |value: &dyn Fn(usize) -> Option<f64>| {
        (0..variants.len())
            .filter_map(|v| Some((v, value(v)?)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    };
    let mut parts = Vec::new();
    if let Some((v, _)) = best(&|v| samples.median_seconds(0, v)) {
        let ratio = samples.time_ratio(0, v, 0).unwrap_or(1.0);
        parts.push(format!(
            "fastest: {} ({ratio:.2}x the system allocator's time)",
            variants[v].name
        ));
    }
    let floor = floor_kib.map(|kib| kib as f64 / 1024.0);
    let floored: Vec<&str> = (0..variants.len())
        .filter(|&v| matches!((samples.median_rss_mib(0, v), floor), (Some(r), Some(f)) if r <= f))
        .map(|v| variants[v].name.as_str())
        .collect();
    if !floored.is_empty() {
        parts.push(format!(
            "peak RSS not compared: {} peaked at or below {}, the least a process started \
             from here reports",
            floored.join(", "),
            mib(floor)
        ));
        return parts.join("; ");
    }
    match best(&|v| samples.median_rss_mib(0, v)) {
        Some((v, rss)) => parts.push(format!(
            "least memory: {} ({} peak RSS)",
            variants[v].name,
            mib(Some(rss))
        )),
        None => parts.push("peak RSS not measured on this platform".to_owned()),
    }
    parts.push(bake(variants, samples));
    parts.join("; ")
}

/// The run-time variant that saves the most memory at no cost, as the line that makes it the
/// build's default; or why there is none.
fn bake(variants: &[Variant], samples: &Samples) -> String {
    let candidates = variants.iter().enumerate().filter_map(|(v, variant)| {
        let plain = variants
            .iter()
            .position(|p| p.build == variant.build && p.env.is_empty())?;
        let bakeable =
            !variant.env.is_empty() && variant.env.iter().all(|(k, _)| k.starts_with("MIMALLOC_"));
        let rss = samples.rss_ratio(0, v, plain)?;
        let time = samples.time_ratio(0, v, plain)?;
        (bakeable && rss <= LEANER && time <= NO_COST).then_some((
            variant,
            &variants[plain],
            rss,
            time,
        ))
    });
    let Some((variant, plain, rss, time)) = candidates.min_by(|a, b| a.2.total_cmp(&b.2)) else {
        return format!(
            "no run-time setting saved {:.0}% of peak RSS within {:.0}% of the time",
            (1.0 - LEANER) * 100.0,
            (NO_COST - 1.0) * 100.0
        );
    };
    let defaults: Vec<String> = variant
        .env
        .iter()
        .map(|(k, v)| {
            format!(
                "{}={v}",
                k.replacen("MIMALLOC_", "MIMALLOC_SYS_DEFAULT_", 1)
            )
        })
        .collect();
    format!(
        "{} uses {rss:.2}x the peak RSS of {} at {time:.2}x its time: build with {} to make that \
         the default",
        variant.name,
        plain.name,
        defaults.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::finding;
    use crate::measure::Sample;
    use crate::product::variants::chosen;
    use crate::stats::Samples;

    fn samples(runs: &[(u64, u64)]) -> Samples {
        let mut s = Samples::new(1, runs.len(), 3);
        for (v, &(nanos, kib)) in runs.iter().enumerate() {
            for round in 0..3 {
                let sample = Sample {
                    nanos: nanos + round,
                    cpu_nanos: Some(nanos),
                    peak_rss_kib: Some(kib),
                    minor_faults: None,
                    quiet_rss_kib: None,
                };
                s.grid[0][v][round as usize] = Some(sample);
            }
        }
        s
    }

    #[test]
    fn a_setting_that_saves_memory_at_no_cost_is_the_line_to_bake_in() {
        let variants = chosen(Some("ours,ours-no-thp,ours-purge0"), &[]).unwrap();
        // system, ours, ours-no-thp (half the memory, same time), ours-purge0 (slower).
        let s = samples(&[(1000, 10_240), (900, 24_576), (905, 12_288), (1200, 11_264)]);
        let line = finding(&variants, &s, Some(4096));
        assert!(line.contains("fastest: ours (0.90x"), "{line}");
        assert!(line.contains("least memory: system (10.0 MiB"), "{line}");
        assert!(
            line.contains("ours-no-thp uses 0.50x the peak RSS of ours"),
            "{line}"
        );
        assert!(
            line.ends_with("build with MIMALLOC_SYS_DEFAULT_ALLOW_THP=0 to make that the default"),
            "{line}"
        );
    }

    #[test]
    fn without_such_a_setting_the_line_says_so() {
        let variants = chosen(Some("ours,ours-purge0"), &[]).unwrap();
        let s = samples(&[(1000, 10_240), (900, 24_576), (1200, 12_288)]);
        let line = finding(&variants, &s, None);
        assert!(
            line.ends_with("no run-time setting saved 5% of peak RSS within 2% of the time"),
            "{line}"
        );
    }

    #[test]
    fn figures_at_the_spawn_floor_are_not_ranked() {
        let variants = chosen(Some("ours,ours-no-thp"), &[]).unwrap();
        // The system build and ours-no-thp at the floor of 12 MiB: both may be less.
        let s = samples(&[(1000, 12_288), (900, 24_576), (905, 12_288)]);
        let line = finding(&variants, &s, Some(12_288));
        assert!(line.starts_with("fastest: ours (0.90x"), "{line}");
        assert!(
            line.ends_with(
                "peak RSS not compared: system, ours-no-thp peaked at or below 12.0 MiB, the \
                 least a process started from here reports"
            ),
            "{line}"
        );
    }
}
