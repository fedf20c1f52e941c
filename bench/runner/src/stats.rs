//! Medians and paired ratios over the rounds of a run.

use crate::measure::Sample;

/// Every sample of a run: `samples[workload][variant][round]`, `None` where a run failed.
#[derive(Debug)]
pub struct Samples {
    pub rounds: usize,
    pub grid: Vec<Vec<Vec<Option<Sample>>>>,
}

impl Samples {
    pub fn new(workloads: usize, variants: usize, rounds: usize) -> Self {
        Samples {
            rounds,
            grid: vec![vec![vec![None; rounds]; variants]; workloads],
        }
    }

    fn times(&self, w: usize, v: usize) -> impl Iterator<Item = f64> + '_ {
        self.grid[w][v].iter().flatten().map(|s| s.nanos as f64)
    }

    /// Median run time in seconds.
    pub fn median_seconds(&self, w: usize, v: usize) -> Option<f64> {
        median(self.times(w, v).collect()).map(|n| n / 1e9)
    }

    /// `(max - min) / median` of the run times: how much the rounds disagree.
    pub fn spread(&self, w: usize, v: usize) -> Option<f64> {
        let times: Vec<f64> = self.times(w, v).collect();
        let min = times.iter().copied().fold(f64::INFINITY, f64::min);
        let max = times.iter().copied().fold(0.0, f64::max);
        median(times).map(|m| (max - min) / m)
    }

    /// The slowest run against the median: how long the worst round made its user wait,
    /// in medians (a service sees it as a latency spike).
    pub fn stall(&self, w: usize, v: usize) -> Option<f64> {
        let times: Vec<f64> = self.times(w, v).collect();
        let max = times.iter().copied().fold(0.0, f64::max);
        median(times).map(|m| max / m)
    }

    /// Median over rounds of `time(v) / time(base)` in the same round: each ratio compares
    /// two runs made moments apart, so slow drifts of the machine cancel out.
    pub fn time_ratio(&self, w: usize, v: usize, base: usize) -> Option<f64> {
        self.paired(w, v, base, |s| s.nanos as f64)
    }

    /// Median CPU time in seconds.
    pub fn median_cpu_seconds(&self, w: usize, v: usize) -> Option<f64> {
        let cpu = self.grid[w][v].iter().flatten().filter_map(|s| s.cpu_nanos);
        median(cpu.map(|n| n as f64 / 1e9).collect())
    }

    /// Median over rounds of `CPU time(v) / CPU time(base)`.
    pub fn cpu_ratio(&self, w: usize, v: usize, base: usize) -> Option<f64> {
        self.paired(w, v, base, |s| s.cpu_nanos.map_or(f64::NAN, |n| n as f64))
    }

    /// Median over rounds of `peak RSS(v) / peak RSS(base)`.
    pub fn rss_ratio(&self, w: usize, v: usize, base: usize) -> Option<f64> {
        self.paired(w, v, base, |s| {
            s.peak_rss_kib.map_or(f64::NAN, |k| k as f64)
        })
    }

    /// Median peak RSS in MiB.
    pub fn median_rss_mib(&self, w: usize, v: usize) -> Option<f64> {
        let rss = self.grid[w][v]
            .iter()
            .flatten()
            .filter_map(|s| s.peak_rss_kib);
        median(rss.map(|k| k as f64 / 1024.0).collect())
    }

    /// Median resident memory after the quiet phase, in MiB; `None` for a workload without one.
    pub fn median_quiet_mib(&self, w: usize, v: usize) -> Option<f64> {
        let quiet = self.grid[w][v]
            .iter()
            .flatten()
            .filter_map(|s| s.quiet_rss_kib);
        median(quiet.map(|k| k as f64 / 1024.0).collect())
    }

    /// Whether any run of workload `w` reported its resident memory after going quiet.
    pub fn has_quiet(&self, w: usize) -> bool {
        self.grid[w]
            .iter()
            .flatten()
            .flatten()
            .any(|s| s.quiet_rss_kib.is_some())
    }

    /// Median minor page faults.
    pub fn median_minor_faults(&self, w: usize, v: usize) -> Option<f64> {
        let faults = self.grid[w][v]
            .iter()
            .flatten()
            .filter_map(|s| s.minor_faults);
        median(faults.map(|n| n as f64).collect())
    }

    fn paired(
        &self,
        w: usize,
        v: usize,
        base: usize,
        value: impl Fn(&Sample) -> f64,
    ) -> Option<f64> {
        let ratios = self.grid[w][v]
            .iter()
            .zip(&self.grid[w][base])
            .filter_map(|(a, b)| Some(value(a.as_ref()?) / value(b.as_ref()?)))
            .filter(|r| r.is_finite())
            .collect();
        median(ratios)
    }
}

/// The median (the mean of the middle two for an even count); `None` for no values.
pub fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    })
}

/// The geometric mean: the average of ratios that treats 2x and 0.5x as opposites.
pub fn geometric_mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let log_sum: f64 = values.iter().map(|v| v.ln()).sum();
    Some((log_sum / values.len() as f64).exp())
}

#[cfg(test)]
mod tests {
    use super::{Samples, geometric_mean, median};
    use crate::measure::Sample;

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
        let g = geometric_mean(&[2.0, 0.5]).unwrap();
        assert!((g - 1.0).abs() < 1e-12);
    }

    #[test]
    fn ratios_pair_runs_of_the_same_round() {
        let mut s = Samples::new(1, 2, 3);
        let sample = |nanos, kib| {
            Some(Sample {
                nanos,
                cpu_nanos: Some(nanos * 2),
                peak_rss_kib: Some(kib),
                minor_faults: Some(kib / 4),
                quiet_rss_kib: Some(kib / 2),
            })
        };
        // The machine slows down over the rounds; the paired ratio stays 0.5 throughout,
        // while a ratio of medians would say 0.5 too only by luck of the middle round.
        for (round, base) in [100u64, 200, 400].into_iter().enumerate() {
            s.grid[0][0][round] = sample(base, 1000);
            s.grid[0][1][round] = sample(base / 2, 3000);
        }
        assert_eq!(s.time_ratio(0, 1, 0), Some(0.5));
        assert_eq!(s.rss_ratio(0, 1, 0), Some(3.0));
        assert_eq!(s.cpu_ratio(0, 1, 0), Some(0.5));
        assert_eq!(s.median_cpu_seconds(0, 0), Some(400e-9));
        assert_eq!(s.median_seconds(0, 0), Some(200e-9));
        assert_eq!(s.spread(0, 0), Some(1.5));
        assert_eq!(s.stall(0, 0), Some(2.0));
        assert_eq!(s.median_minor_faults(0, 1), Some(750.0));
        assert_eq!(s.median_quiet_mib(0, 1), Some(1500.0 / 1024.0));
        assert!(s.has_quiet(0));
        assert!(!Samples::new(1, 2, 3).has_quiet(0), "no run, no figure");
        // A failed run leaves its round out of the pairs.
        s.grid[0][1][2] = None;
        assert_eq!(s.time_ratio(0, 1, 0), Some(0.5));
    }
}
