//! `mimalloc-bench --list`: what a run can measure, and what the first look runs.

use std::process::Command;

#[test]
fn the_list_names_every_workload_every_allocator_and_the_first_look() {
    let output = Command::new(env!("CARGO_BIN_EXE_mimalloc-bench"))
        .arg("--list")
        .output()
        .expect("the runner runs");
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).expect("UTF-8");
    let first_look = stdout
        .lines()
        .find_map(|l| l.strip_prefix("the first look (without --workloads and --rounds): "))
        .expect("a line naming the first look");
    assert_eq!(first_look.split(", ").count(), 7, "{first_look}");
    for name in first_look.split(", ") {
        assert!(bench_workloads::find(name).is_some(), "{name}");
    }
    for workload in bench_workloads::ALL {
        assert!(
            stdout.contains(&format!("\n  {} ", workload.name)),
            "{}",
            workload.name
        );
    }
    for allocator in ["system", "ours", "ours-v2", "jemalloc", "peer"] {
        assert!(stdout.contains(&format!("\n  {allocator} ")), "{allocator}");
    }
}
