//! `limit` at full scale, one round: in a 480 MiB memory cgroup the phase change outlives the
//! limit on ours, and is killed on ours with the background purge off, which keeps the freed
//! burst until the second phase asks for memory. Making a cgroup
//! takes root and a writable memory controller: elsewhere the test says it skipped, and why.
//!
//! Ignored by default: it builds release drivers. `.ci/run` runs it (lane bench):
//! `cargo test -p mimalloc-bench --test limit_run -- --ignored`.

use std::path::Path;
use std::process::Command;

const TEST: &str = "the_phase_change_outlives_its_limit_on_ours_and_not_without_the_purge";

#[test]
#[ignore = "builds release drivers and runs them in memory cgroups (root); run by .ci/run"]
fn the_phase_change_outlives_its_limit_on_ours_and_not_without_the_purge() {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("limit-run");
    let output = Command::new(env!("CARGO_BIN_EXE_mimalloc-bench"))
        .args(["limit", "--rounds", "1", "--allocators", "ours"])
        .args([
            "--variant",
            "ours-no-purge=ours:MIMALLOC_BACKGROUND_PURGE=0",
            "--out",
        ])
        .arg(&out)
        .output()
        .expect("the runner starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if let Some(why) = stderr.lines().find_map(|l| l.strip_prefix("error: limit ")) {
        eprintln!("SKIPPED {TEST}: {why}");
        return;
    }
    assert!(
        output.status.success(),
        "the runner failed:\n{stdout}\n{stderr}"
    );
    let row = |allocator: &str| {
        let prefix = format!("| {allocator} | ");
        let line = stdout.lines().find(|l| l.starts_with(&prefix));
        let line = line.unwrap_or_else(|| panic!("no row for {allocator}:\n{stdout}"));
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        (cells[2].to_owned(), cells[3].to_owned())
    };
    assert_eq!(row("ours"), ("1".to_owned(), "0".to_owned()), "{stdout}");
    assert_eq!(
        row("ours-no-purge"),
        ("0".to_owned(), "1".to_owned()),
        "{stdout}"
    );
    let written = std::fs::read_to_string(out.join("limit.md")).expect("limit.md");
    assert!(written.contains("| ours-no-purge | 0 | 1 |"), "{written}");
}
