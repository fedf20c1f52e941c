//! Small helpers shared by the shapes: a deterministic PRNG, /proc readers that do not
//! allocate, and the one-line `key=value` report.

use std::fmt::Display;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// splitmix64: tiny, fast and good enough to drive workloads. Fixed seeds everywhere, so
/// every allocator is asked to do exactly the same work.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5851_F42D_4C95_7F2D)
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n (n > 0), by multiply-shift.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in lo..=hi.
    #[inline]
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Log-uniform in lo..=hi: as many values in 1..2 KiB as in 1..2 MiB.
    pub fn log_uniform(&mut self, lo: u64, hi: u64) -> u64 {
        let (l, h) = ((lo as f64).ln(), (hi as f64).ln());
        let v = (l + (h - l) * self.unit()).exp() as u64;
        v.clamp(lo, hi)
    }

    /// A Zipf-like rank in 0..n (probability about 1/(rank+1)).
    pub fn zipf(&mut self, n: u64) -> u64 {
        let r = ((n as f64 + 1.0).ln() * self.unit()).exp() as u64;
        r.saturating_sub(1).min(n - 1)
    }
}

/// Reads a small /proc file into a stack buffer: no heap allocation, so it can be called
/// at the end of the idle shapes without disturbing what it measures.
fn read_proc<'a>(path: &str, buf: &'a mut [u8]) -> &'a [u8] {
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(_) => return &buf[..0],
    };
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    &buf[..n]
}

fn parse_u64(s: &[u8]) -> u64 {
    let mut v = 0u64;
    for &c in s {
        if c.is_ascii_digit() {
            v = v * 10 + (c - b'0') as u64;
        } else {
            break;
        }
    }
    v
}

/// Resident set size now, KiB, from /proc/self/statm (second field, in pages; the
/// pages are 4 KiB on the x86_64 and aarch64 Linux this runs on by default).
pub fn resident_kib() -> u64 {
    let mut buf = [0u8; 256];
    let s = read_proc("/proc/self/statm", &mut buf);
    let mut fields = s.split(|&c| c == b' ');
    fields.next();
    match fields.next() {
        Some(f) => parse_u64(f) * (page_size() / 1024),
        None => 0,
    }
}

fn page_size() -> u64 {
    // /proc/self/smaps_rollup would tell, but the page size is 4 KiB on every target this
    // benchmark is meant for; keep it a constant rather than guessing from elsewhere.
    4096
}

/// A `Name:   123 kB` line of /proc/self/status, in KiB.
pub fn status_kib(key: &str) -> u64 {
    let mut buf = [0u8; 8192];
    let s = read_proc("/proc/self/status", &mut buf);
    for line in s.split(|&c| c == b'\n') {
        if line.starts_with(key.as_bytes()) && line.get(key.len()) == Some(&b':') {
            let rest = &line[key.len() + 1..];
            let start = rest
                .iter()
                .position(|c| c.is_ascii_digit())
                .unwrap_or(rest.len());
            return parse_u64(&rest[start..]);
        }
    }
    0
}

/// Minor page faults of this process so far (/proc/self/stat, field 10).
pub fn minor_faults() -> u64 {
    let mut buf = [0u8; 1024];
    let s = read_proc("/proc/self/stat", &mut buf);
    let close = match s.iter().rposition(|&c| c == b')') {
        Some(i) => i,
        None => return 0,
    };
    // After "(comm)": state ppid pgrp session tty_nr tpgid flags minflt ...
    s[close + 1..]
        .split(|&c| c == b' ')
        .filter(|f| !f.is_empty())
        .nth(7)
        .map(parse_u64)
        .unwrap_or(0)
}

/// The result line: `shape=NAME key=value ...`, printed once at the end.
pub struct Report {
    line: String,
}

impl Report {
    pub fn new(shape: &str) -> Report {
        Report {
            line: format!("shape={}", shape),
        }
    }

    pub fn kv(&mut self, key: &str, value: impl Display) -> &mut Report {
        use std::fmt::Write as _;
        let _ = write!(self.line, " {}={}", key, value);
        self
    }

    pub fn ms(&mut self, key: &str, d: Duration) -> &mut Report {
        self.kv(key, format!("{:.3}", d.as_secs_f64() * 1e3))
    }

    pub fn print(&self) {
        let out = std::io::stdout();
        let mut out = out.lock();
        let _ = writeln!(out, "{}", self.line);
        let _ = out.flush();
    }
}

/// Sleeps until `start + ms` (absolute deadlines, so per-tick overheads do not add up).
pub fn sleep_until(start: Instant, ms: u64) {
    let deadline = start + Duration::from_millis(ms);
    let now = Instant::now();
    if deadline > now {
        std::thread::sleep(deadline - now);
    }
}

/// Keeps the optimizer from discarding work whose result is otherwise unused.
#[inline]
pub fn keep<T>(v: T) -> T {
    std::hint::black_box(v)
}
