//! The main command in quick mode: every workload runs on every built-in allocator and passes
//! its result check, and the reports are written. Speed is not checked here (the benchmark
//! itself measures it).
//!
//! Ignored by default: it builds every allocator's driver in release, jemalloc from source
//! among them (about two minutes from clean on two cores). `.ci/run` runs it:
//! `cargo test -p mimalloc-bench --test quick_run -- --ignored`.

use std::path::Path;
use std::process::Command;

const ALLOCATORS: [&str; 8] = [
    "system",
    "ours",
    "ours-v2",
    "ours-secure",
    "ours-no-thp",
    "jemalloc",
    "peer",
    "peer-safe",
];

#[test]
#[ignore = "builds every allocator's driver (minutes from clean); run by .ci/run"]
fn quick_run_passes_every_result_check_on_every_allocator() {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("quick-run");
    let _ = std::fs::remove_dir_all(&out);
    let output = Command::new(env!("CARGO_BIN_EXE_mimalloc-bench"))
        .args(["--quick", "--out"])
        .arg(&out)
        .output()
        .expect("the runner starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the runner failed:\n{stdout}\n{stderr}"
    );

    let workloads: Vec<&str> = bench_workloads::ALL.iter().map(|w| w.name).collect();
    let checks = workloads.len() * ALLOCATORS.len();
    assert!(
        stdout.contains(&format!("result checks: {checks} passed, 0 failed")),
        "{stdout}"
    );
    // A sample is recorded only for a run whose checksum matched its expected value.
    let csv = std::fs::read_to_string(out.join("samples.csv")).expect("samples.csv");
    let columns: Vec<&str> = csv.lines().next().expect("a header").split(',').collect();
    let column = |name: &str| columns.iter().position(|c| *c == name).expect(name);
    let (rss, faults) = (column("peak_rss_kib"), column("minor_faults"));
    // The resident memory after going quiet is read on Linux only, and the column is there
    // when some run read it.
    let quiet = columns.iter().position(|c| *c == "quiet_rss_kib");
    assert_eq!(quiet.is_some(), cfg!(target_os = "linux"), "{columns:?}");
    for workload in bench_workloads::ALL {
        for allocator in ALLOCATORS {
            let prefix = format!("0,{},{allocator},", workload.name);
            let line = csv.lines().find(|l| l.starts_with(&prefix));
            let line = line.unwrap_or_else(|| panic!("no sample for {prefix}"));
            let cells: Vec<&str> = line.split(',').collect();
            // Every process maps some pages: zero or a missing number is a broken reading.
            for c in [rss, faults] {
                let value: u64 = cells[c].parse().expect("a number");
                assert!(value > 0, "{}: {line}", columns[c]);
            }
            // Read by the workloads that go quiet, by no other.
            match (quiet, workload.quiet) {
                (Some(c), Some(_)) => {
                    let value: u64 = cells[c].parse().expect("a number");
                    assert!(value > 0, "{}: {line}", columns[c]);
                }
                (Some(c), None) => assert_eq!(cells[c], "", "{line}"),
                (None, _) => {}
            }
        }
    }
    let markdown = std::fs::read_to_string(out.join("results.md")).expect("results.md");
    assert!(
        workloads
            .iter()
            .all(|w| markdown.contains(&format!("### {w}")))
    );
    let svg = std::fs::read_to_string(out.join("results.svg")).expect("results.svg");
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(
        ALLOCATORS
            .iter()
            .all(|a| svg.contains(&format!(">{a}</text>")))
    );
}
