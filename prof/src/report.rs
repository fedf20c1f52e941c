//! From samples to what a person reads: estimated bytes per call stack, per allocation site,
//! and per function including its callees.

use crate::proto::Profile;
use crate::symbols::Symbolizer;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Frames that belong to the allocator or to std's allocation plumbing rather than to the
/// program: a stack's *site* is its innermost frame that is none of these (`Vec::push`'s
/// growth is charged to the caller of `push`).
const PLUMBING: &[&str] = &[
    "mi_",
    "_mi_",
    "__rust_",
    "__rustc::",
    "__rg_",
    "__rdl_",
    "alloc::",
    "<alloc::",
    "core::alloc::",
    "<core::alloc::",
    "mimalloc::",
    "<mimalloc::",
    "hashbrown::raw::",
    "<hashbrown::raw::",
    "std::alloc::",
    "<std::alloc::",
    "<T as alloc::",
    "<u8 as alloc::",
    "<T as core::convert::Into<U>>::into",
];

/// Whether a demangled function name is allocator or allocation plumbing (see [`PLUMBING`]).
fn is_plumbing(name: &str) -> bool {
    PLUMBING.iter().any(|prefix| name.starts_with(prefix))
}

/// Estimated totals: the sampled figures scaled by the chance of being sampled.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Estimate {
    pub bytes: f64,
    pub objects: f64,
}

/// The mean gap between samples, as a fraction of the period a profile states. mimalloc 3.6.0
/// draws each gap with the period as its mean, but after a sample the new gap is the shorter
/// of the previous draw and a fresh one (`_mi_theap_malloc_profiled` in
/// `profile/sample-profile.c` resets the countdown to the old rate, then clamps it to the
/// new): the minimum of two such draws has half their mean. Unsampling with the stated period
/// would double every estimate. (`tests/known_profile.rs` fails if a mimalloc update changes
/// this.)
const GAP_PER_PERIOD: f64 = 0.5;

impl Estimate {
    /// With gaps of mean `g`, an allocation of `n` bytes is sampled with probability
    /// `1 - exp(-n / g)`; dividing by it (for the stack's average size) estimates the totals,
    /// as pprof does for Go and gperftools heap profiles.
    fn unsample(objects: i64, bytes: i64, period: f64) -> Estimate {
        if objects <= 0 || bytes <= 0 {
            return Estimate::default();
        }
        let average = bytes as f64 / objects as f64;
        let gap = period * GAP_PER_PERIOD;
        let scale = if gap > 0.0 {
            1.0 / (1.0 - (-average / gap).exp())
        } else {
            1.0
        };
        Estimate {
            bytes: bytes as f64 * scale,
            objects: objects as f64 * scale,
        }
    }

    fn add(&mut self, other: Estimate) {
        self.bytes += other.bytes;
        self.objects += other.objects;
    }
}

/// The raw figures of one stack, as mimalloc counted its samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sampled {
    pub alloc_objects: i64,
    pub alloc_bytes: i64,
    pub inuse_objects: i64,
    pub inuse_bytes: i64,
}

/// One call stack of the profile, symbolized.
#[derive(Clone, Debug)]
pub struct Stack {
    /// Function names, innermost first (inlined frames each have their own name).
    pub frames: Vec<String>,
    /// Index in `frames` of the allocation site: its innermost frame that is not allocator
    /// plumbing.
    pub site: usize,
    pub sampled: Sampled,
    pub inuse: Estimate,
    pub allocated: Estimate,
}

impl Stack {
    pub fn site_name(&self) -> &str {
        &self.frames[self.site]
    }
}

/// The totals of one function: as the allocation site itself (exclusive) and anywhere on the
/// stack (inclusive, each stack counted once).
#[derive(Clone, Debug, Default)]
pub struct Function {
    pub name: String,
    pub exclusive_inuse: Estimate,
    pub inclusive_inuse: Estimate,
    pub exclusive_allocated: Estimate,
    pub inclusive_allocated: Estimate,
    /// Sampled allocations with this function as their site (the sampling error of its
    /// estimates is about `1 / sqrt(samples)`).
    pub samples: i64,
}

/// Which figure a table or flame graph shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    InUse,
    Allocated,
}

/// A symbolized profile.
#[derive(Clone, Debug)]
pub struct Report {
    /// The mean bytes between samples.
    pub period: i64,
    pub stacks: Vec<Stack>,
    /// Files whose symbols could not be read, and why.
    pub unreadable: Vec<String>,
}

impl Report {
    /// Symbolizes `profile` (with `binary` in place of the executable it names, if given).
    /// Fails if a file to symbolize against has another build id than the profile records.
    pub fn new(profile: &Profile, binary: Option<PathBuf>) -> Result<Report, String> {
        let index = |name: &str| {
            profile
                .value_index(name)
                .ok_or_else(|| format!("not a mimalloc heap profile: no {name} values"))
        };
        let columns = [
            index("alloc_objects")?,
            index("alloc_bytes")?,
            index("inuse_objects")?,
            index("inuse_bytes")?,
        ];
        let locations: HashMap<u64, _> = profile.location.iter().map(|l| (l.id, l)).collect();
        let mut symbols = Symbolizer::new(profile, binary)?;
        let period = profile.period as f64;
        let mut stacks = Vec::with_capacity(profile.sample.len());
        for sample in &profile.sample {
            let value = |i: usize| sample.value.get(columns[i]).copied().unwrap_or(0);
            let sampled = Sampled {
                alloc_objects: value(0),
                alloc_bytes: value(1),
                inuse_objects: value(2),
                inuse_bytes: value(3),
            };
            let mut frames = Vec::new();
            for id in &sample.location_id {
                match locations.get(id) {
                    Some(location) => frames.extend(symbols.frames(location)),
                    None => frames.push(format!("location {id}")),
                }
            }
            if frames.is_empty() {
                frames.push("(no stack)".to_owned());
            }
            let site = frames.iter().position(|f| !is_plumbing(f)).unwrap_or(0);
            stacks.push(Stack {
                frames,
                site,
                sampled,
                inuse: Estimate::unsample(sampled.inuse_objects, sampled.inuse_bytes, period),
                allocated: Estimate::unsample(sampled.alloc_objects, sampled.alloc_bytes, period),
            });
        }
        Ok(Report {
            period: profile.period,
            stacks,
            unreadable: symbols.unreadable,
        })
    }

    /// The estimated totals of the whole profile: in use, and allocated since it started.
    pub fn totals(&self) -> (Estimate, Estimate) {
        let mut inuse = Estimate::default();
        let mut allocated = Estimate::default();
        for stack in &self.stacks {
            inuse.add(stack.inuse);
            allocated.add(stack.allocated);
        }
        (inuse, allocated)
    }

    /// The sums of the profile's own (sampled) figures over all stacks.
    pub fn sampled(&self) -> Sampled {
        let mut sum = Sampled::default();
        for s in &self.stacks {
            sum.alloc_objects += s.sampled.alloc_objects;
            sum.alloc_bytes += s.sampled.alloc_bytes;
            sum.inuse_objects += s.sampled.inuse_objects;
            sum.inuse_bytes += s.sampled.inuse_bytes;
        }
        sum
    }

    /// Every function on any stack from its site outwards, largest first by `measure`
    /// (exclusive, then inclusive).
    pub fn functions(&self, measure: Measure) -> Vec<Function> {
        let mut by_name: HashMap<&str, Function> = HashMap::new();
        for stack in &self.stacks {
            let mut seen: Vec<&str> = Vec::new();
            for (i, name) in stack.frames.iter().enumerate().skip(stack.site) {
                let f = by_name.entry(name).or_insert_with(|| Function {
                    name: name.clone(),
                    ..Function::default()
                });
                if i == stack.site {
                    f.exclusive_inuse.add(stack.inuse);
                    f.exclusive_allocated.add(stack.allocated);
                    f.samples += stack.sampled.alloc_objects;
                }
                if !seen.contains(&name.as_str()) {
                    seen.push(name);
                    f.inclusive_inuse.add(stack.inuse);
                    f.inclusive_allocated.add(stack.allocated);
                }
            }
        }
        let key = |f: &Function| match measure {
            Measure::InUse => (f.exclusive_inuse.bytes, f.inclusive_inuse.bytes),
            Measure::Allocated => (f.exclusive_allocated.bytes, f.inclusive_allocated.bytes),
        };
        let mut all: Vec<Function> = by_name.into_values().collect();
        all.sort_by(|a, b| {
            key(b)
                .partial_cmp(&key(a))
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| a.name.cmp(&b.name))
        });
        all
    }

    /// The function named exactly `name`, or ending in `::name`.
    pub fn function(&self, name: &str) -> Option<Function> {
        let suffix = format!("::{name}");
        self.functions(Measure::InUse)
            .into_iter()
            .find(|f| f.name == name || f.name.ends_with(&suffix))
    }

    /// The stacks in the folded format of flame-graph tools (`root;...;site bytes`), by `measure`.
    pub fn folded(&self, measure: Measure) -> Vec<String> {
        let mut lines: HashMap<String, f64> = HashMap::new();
        for stack in &self.stacks {
            let bytes = match measure {
                Measure::InUse => stack.inuse.bytes,
                Measure::Allocated => stack.allocated.bytes,
            };
            if bytes < 1.0 {
                continue;
            }
            let path: Vec<&str> = stack.frames[stack.site..]
                .iter()
                .rev()
                .map(String::as_str)
                .collect();
            *lines
                .entry(path.join(";").replace(' ', "\u{a0}"))
                .or_default() += bytes;
        }
        let mut folded: Vec<String> = lines
            .into_iter()
            .map(|(path, bytes)| format!("{path} {}", bytes.round() as u64))
            .collect();
        folded.sort();
        folded
    }

    /// The tables a person reads: totals, then the top `top` functions by in-use and by
    /// allocated bytes.
    pub fn text(&self, top: usize) -> String {
        let (inuse, allocated) = self.totals();
        let mut out = self.totals_text(inuse, allocated);
        for (measure, title, total) in [
            (Measure::InUse, "in-use bytes", inuse.bytes),
            (Measure::Allocated, "allocated bytes", allocated.bytes),
        ] {
            out.push_str(&self.top_functions(measure, title, total, top));
        }
        for why in &self.unreadable {
            let _ = writeln!(out, "\nnot symbolized: {why}");
        }
        out
    }

    /// The sample rate, the estimated totals and the profile's own sampled figures.
    fn totals_text(&self, inuse: Estimate, allocated: Estimate) -> String {
        let mut out = String::new();
        let samples: i64 = self.stacks.iter().map(|s| s.sampled.alloc_objects).sum();
        let _ = writeln!(
            out,
            "sample rate: one sample per {} allocated on average; {samples} samples in {} call stacks",
            bytes(self.period as f64),
            self.stacks.len()
        );
        let _ = writeln!(
            out,
            "estimated in use:  {} in {:.0} objects",
            bytes(inuse.bytes),
            inuse.objects
        );
        let _ = writeln!(
            out,
            "estimated allocated since the profiler started: {} in {:.0} objects",
            bytes(allocated.bytes),
            allocated.objects
        );
        let raw = self.sampled();
        let _ = writeln!(
            out,
            "sampled (the profile's own figures): in use {} bytes in {} objects, allocated {} bytes in {} objects",
            raw.inuse_bytes, raw.inuse_objects, raw.alloc_bytes, raw.alloc_objects
        );
        out
    }

    /// The table of the `top` functions by `measure`, with their shares of `total`.
    fn top_functions(&self, measure: Measure, title: &str, total: f64, top: usize) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "\ntop {top} by {title} (exclusive: as the allocation site; inclusive: with callees)"
        );
        let _ = writeln!(
            out,
            "{:>12} {:>6} {:>12} {:>6}  function",
            "exclusive", "%", "inclusive", "%"
        );
        for f in self.functions(measure).into_iter().take(top) {
            let (excl, incl) = match measure {
                Measure::InUse => (f.exclusive_inuse.bytes, f.inclusive_inuse.bytes),
                Measure::Allocated => (f.exclusive_allocated.bytes, f.inclusive_allocated.bytes),
            };
            let _ = writeln!(
                out,
                "{:>12} {:>5.1}% {:>12} {:>5.1}%  {}",
                bytes(excl),
                percent(excl, total),
                bytes(incl),
                percent(incl, total),
                f.name
            );
        }
        out
    }
}

fn percent(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        100.0 * part / whole
    } else {
        0.0
    }
}

/// Bytes in binary units with one decimal (`48.0 MiB`).
pub fn bytes(n: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n;
    let mut unit = 0;
    while value.abs() >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{value:.0} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}
