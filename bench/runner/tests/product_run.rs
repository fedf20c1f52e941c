//! `product` on real products: the refusals of products that do not follow the README's
//! convention (each names what to add), a build that links mimalloc without installing it
//! (refused before anything is measured), and `examples/product` on every variant in quick
//! mode, with its three report files.
//!
//! The two that build products in release are ignored by default (about two minutes from
//! clean on two cores); `.ci/run` runs them:
//! `cargo test -p mimalloc-bench --test product_run -- --include-ignored`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const VARIANTS: [&str; 6] = [
    "system",
    "ours",
    "ours-v2",
    "ours-secure",
    "ours-no-thp",
    "ours-purge0",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn runner(args: &[&str], manifest: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mimalloc-bench"))
        .arg("product")
        .arg("--manifest-path")
        .arg(manifest)
        .args(args)
        .output()
        .expect("the runner starts")
}

/// A product under the test's scratch directory: `manifest` (its dependency lines, with
/// `MIMALLOC` standing for the path of this workspace's crate) and `src/main.rs`.
fn fixture(name: &str, manifest: &str, main: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("products")
        .join(name);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let ours = root().join("mimalloc");
    let manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n{}\n[workspace]\n",
        manifest.replace("MIMALLOC", &ours.display().to_string())
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(dir.join("src/main.rs"), main).unwrap();
    dir.join("Cargo.toml")
}

/// A crate called `mimalloc` that is not this workspace's.
fn other_mimalloc() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("products/other/mimalloc");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = "[package]\nname = \"mimalloc\"\nversion = \"9.0.0\"\nedition = \"2021\"\n";
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(dir.join("src/lib.rs"), "").unwrap();
    dir
}

fn refusal(output: &Output) -> String {
    assert!(
        !output.status.success(),
        "the runner measured it: {output:?}"
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_product_off_the_convention_is_told_what_to_add() {
    let main = "fn main() {}\n";
    let optional = "[dependencies]\nmimalloc = { path = \"MIMALLOC\", optional = true }\n";
    let cases = [
        (
            "no-dependency",
            String::new(),
            "does not depend on the `mimalloc` crate",
        ),
        (
            "not-optional",
            "[dependencies]\nmimalloc = { path = \"MIMALLOC\" }\n[features]\nmimalloc = []\n"
                .to_owned(),
            "is not optional",
        ),
        (
            "another-mimalloc",
            format!(
                "[dependencies]\nmimalloc = {{ path = \"{}\", optional = true }}\n",
                other_mimalloc().display()
            ),
            "not this workspace's",
        ),
        (
            "feature-without-dependency",
            format!("{optional}[features]\nmimalloc = []\nfast = [\"dep:mimalloc\"]\n"),
            "does not turn the mimalloc dependency on",
        ),
        (
            "another-feature-name",
            // `dep:` hides the implicit feature: the one that turns it on is `fast`.
            format!("{optional}[features]\nfast = [\"dep:mimalloc\"]\n"),
            "has no `mimalloc` feature to switch allocators with (name another with --feature NAME)",
        ),
    ];
    for (name, manifest, expected) in cases {
        let stderr = refusal(&runner(&[], &fixture(name, &manifest, main)));
        assert!(stderr.contains(expected), "{name}: {stderr}");
        if !name.starts_with("on-by") && !name.starts_with("another") {
            assert!(
                stderr.contains("mimalloc = [\"dep:mimalloc\"]"),
                "{name} quotes the convention: {stderr}"
            );
        }
    }
}

#[test]
fn a_product_with_several_binaries_is_asked_which() {
    let good = "[dependencies]\nmimalloc = { path = \"MIMALLOC\", optional = true }\n\
                [features]\nmimalloc = [\"dep:mimalloc\"]\n";
    let two_bins = fixture(
        "two-bins",
        &format!(
            "{good}[[bin]]\nname = \"a\"\npath = \"src/main.rs\"\n[[bin]]\nname = \"b\"\npath = \"src/main.rs\"\n"
        ),
        "fn main() {}\n",
    );
    assert!(
        refusal(&runner(&[], &two_bins))
            .contains("several binaries (a, b): name one with --bin NAME")
    );
    assert!(
        refusal(&runner(&["--bin", "c"], &two_bins)).contains("no bin called c (its bins: a, b)")
    );
}

#[test]
#[ignore = "builds a product twice in release; run by .ci/run"]
fn a_build_that_links_mimalloc_without_assign_global_is_refused() {
    let manifest = fixture(
        "no-assign",
        "[dependencies]\nmimalloc = { path = \"MIMALLOC\", optional = true }\n\
         [features]\nmimalloc = [\"dep:mimalloc\"]\n",
        "fn main() {\n    #[cfg(feature = \"mimalloc\")]\n    println!(\"{}\", mimalloc::Version::linked());\n    \
         let v = vec![7u8; 1 << 20];\n    assert_eq!(v.iter().map(|&b| b as usize).sum::<usize>(), 7 << 20);\n}\n",
    );
    let stderr = refusal(&runner(&["--quick", "--allocators", "ours"], &manifest));
    assert!(
        stderr.contains("served none of its allocations"),
        "{stderr}"
    );
    assert!(stderr.contains("mimalloc::assign_global!();"), "{stderr}");
}

#[test]
#[ignore = "builds examples/product four times in release; run by .ci/run"]
fn the_example_product_runs_on_every_variant_and_writes_its_reports() {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("product-run");
    let _ = std::fs::remove_dir_all(&out);
    let manifest = root().join("examples/product/Cargo.toml");
    let output = runner(&["--quick", "--out", out.to_str().unwrap()], &manifest);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );

    assert_each_build_proved_its_allocator(&stdout);
    assert_the_finding_ranks_every_variant(&stdout);
    assert_one_sample_row_per_variant(&out);
    assert_the_reports_name_every_variant(&out);
}

/// Each build proved its allocator before it was measured.
fn assert_each_build_proved_its_allocator(stdout: &str) {
    let checked: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("checked: "))
        .collect();
    assert_eq!(checked.len(), 4, "{stdout}");
    assert!(
        checked
            .iter()
            .any(|l| l.starts_with("checked: ours-v2 runs on mimalloc v2.")),
        "{stdout}"
    );
    assert!(
        checked.iter().any(
            |l| l.starts_with("checked: ours-secure runs on mimalloc v3.")
                && !l.contains("secure level 0")
        ),
        "{stdout}"
    );
}

fn assert_the_finding_ranks_every_variant(stdout: &str) {
    let finding = stdout
        .lines()
        .find(|l| l.starts_with("finding: fastest: "))
        .expect("a finding line");
    // Every variant peaked above the runner's own RSS (the floor Linux puts under a child's
    // figure), or the finding would not rank them.
    assert!(finding.contains("least memory: "), "{finding}");
    if cfg!(target_os = "linux") {
        assert!(
            stdout.lines().any(|l| l.starts_with("peak RSS floor: ")),
            "{stdout}"
        );
    }
}

fn assert_one_sample_row_per_variant(out: &Path) {
    let csv = std::fs::read_to_string(out.join("samples.csv")).expect("samples.csv");
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("round,command,allocator,nanos,cpu_nanos,peak_rss_kib,minor_faults")
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), VARIANTS.len(), "{csv}");
    for (variant, row) in VARIANTS.iter().zip(&rows) {
        assert_eq!(&row[..3], ["0", "bin product", variant], "{csv}");
        // The program generates 2 million words: no run takes under a millisecond or fits
        // in a megabyte, and a zero is a broken reading.
        let numbers: Vec<u64> = row[3..]
            .iter()
            .map(|c| c.parse().expect("a number"))
            .collect();
        assert!(numbers[0] > 1_000_000 && numbers[1] > 0, "{row:?}");
        assert!(numbers[2] > 1024 && numbers[3] > 0, "{row:?}");
    }
}

fn assert_the_reports_name_every_variant(out: &Path) {
    let markdown = std::fs::read_to_string(out.join("results.md")).expect("results.md");
    assert!(
        markdown.starts_with("# Product benchmark results\n\n**Finding:** fastest: "),
        "{markdown}"
    );
    let svg = std::fs::read_to_string(out.join("results.svg")).expect("results.svg");
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    for variant in VARIANTS {
        assert!(
            markdown.contains(&format!("| `{variant}` |")),
            "{variant} in results.md"
        );
        assert!(
            svg.contains(&format!(">{variant}</text>")),
            "{variant} in results.svg"
        );
    }
}
