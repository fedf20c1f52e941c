//! The facts a result is meaningless without: where and when it was measured.

use std::process::Command;

#[derive(Clone, Debug)]
pub struct Machine {
    pub cores: usize,
    pub cpu: String,
    pub os: String,
    pub kernel: String,
    pub rustc: String,
    pub cc: String,
    pub transparent_huge_pages: String,
    pub date: String,
}

impl Machine {
    /// A machine of which nothing is known but its two cores: for tests of the reports.
    #[cfg(test)]
    pub fn unknown() -> Self {
        let unknown = || "unknown".to_owned();
        Machine {
            cores: 2,
            cpu: unknown(),
            os: unknown(),
            kernel: unknown(),
            rustc: unknown(),
            cc: unknown(),
            transparent_huge_pages: unknown(),
            date: unknown(),
        }
    }

    pub fn describe() -> Self {
        Machine {
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            cpu: file_line("/proc/cpuinfo", "model name")
                .map(|l| {
                    l.split_once(':')
                        .map_or(l.clone(), |(_, v)| v.trim().to_owned())
                })
                .unwrap_or_else(|| "unknown".into()),
            os: file_line("/etc/os-release", "PRETTY_NAME=")
                .map(|l| {
                    l.trim_start_matches("PRETTY_NAME=")
                        .trim_matches('"')
                        .to_owned()
                })
                .unwrap_or_else(|| std::env::consts::OS.into()),
            kernel: output("uname", &["-srm"]),
            rustc: output(
                &std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()),
                &["-V"],
            ),
            cc: output("cc", &["--version"]),
            transparent_huge_pages: std::fs::read_to_string(
                "/sys/kernel/mm/transparent_hugepage/enabled",
            )
            .map(|s| s.trim().to_owned())
            .unwrap_or_else(|_| "n/a".into()),
            date: output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        }
    }

    /// One line per fact, `key: value`.
    pub fn lines(&self) -> Vec<(&'static str, String)> {
        vec![
            ("date", self.date.clone()),
            ("cores", self.cores.to_string()),
            ("cpu", self.cpu.clone()),
            ("os", self.os.clone()),
            ("kernel", self.kernel.clone()),
            ("rustc", self.rustc.clone()),
            ("C compiler", self.cc.clone()),
            (
                "transparent huge pages",
                self.transparent_huge_pages.clone(),
            ),
        ]
    }
}

fn file_line(path: &str, prefix: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .find(|l| l.starts_with(prefix))
        .map(str::to_owned)
}

/// The first line a command prints, or `unknown`.
fn output(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_owned))
        .unwrap_or_else(|| "unknown".into())
}
