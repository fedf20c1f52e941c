//! The product example (`examples/product`) builds and runs with and without its `mimalloc`
//! feature, and the repository works as a *git* dependency, as a product consumes it.
//!
//! These tests run cargo; `scripts/cross-test.sh` skips them (by name, `product_`) because the
//! cross targets have no cargo to run.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
}

/// Builds the product in `dir` (with `features`), runs it, and returns its output and the
/// bytes of its executable.
fn build_and_run(dir: &Path, target_dir: &Path, features: &[&str]) -> (String, Vec<u8>) {
    let mut build = cargo();
    build
        .current_dir(dir)
        .args(["build", "--quiet", "--target-dir"])
        .arg(target_dir)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS");
    if !features.is_empty() {
        build.args(["--features", &features.join(",")]);
    }
    let status = build.status().expect("cargo runs");
    assert!(
        status.success(),
        "building {} with {features:?} failed",
        dir.display()
    );
    let exe = target_dir
        .join("debug")
        .join(format!("product{}", std::env::consts::EXE_SUFFIX));
    let out = Command::new(&exe).output().expect("the product runs");
    assert!(
        out.status.success(),
        "the product failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    (stdout, std::fs::read(&exe).unwrap())
}

/// One target directory for every product build, so registry crates are compiled once. Both
/// products are called `product`, so their builds and runs must not overlap: each test holds
/// the lock for its whole run.
fn shared_target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("product")
}

static ONE_PRODUCT_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_product_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    // A failed test poisons the lock; the next one may still run.
    ONE_PRODUCT_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A string only mimalloc's C code contains (the prefix of its environment options).
fn links_mimalloc(exe: &[u8]) -> bool {
    exe.windows(b"mimalloc_".len()).any(|w| w == b"mimalloc_")
}

#[test]
fn product_with_and_without_the_feature() {
    let _serial = one_product_at_a_time();
    let dir = repo_root().join("examples/product");
    let target_dir = shared_target_dir();

    let (out, exe) = build_and_run(&dir, &target_dir, &[]);
    assert!(out.contains("allocator: system"), "{out}");
    assert!(
        !links_mimalloc(&exe),
        "mimalloc is linked into the product without the feature"
    );

    let (out, exe) = build_and_run(&dir, &target_dir, &["mimalloc"]);
    // The product builds the default mimalloc, whatever features this test crate has.
    assert!(out.contains("allocator: mimalloc 3."), "{out}");
    assert!(out.contains("in mimalloc's memory: true"), "{out}");
    assert!(
        links_mimalloc(&exe),
        "mimalloc is not linked into the product with the feature"
    );
}

/// Consumes a clone of the *committed* tree through a `file://` git URL: a file that is not
/// committed, or a path that only resolves inside this checkout, fails here, not for a user.
#[test]
fn product_as_a_git_dependency() {
    let _serial = one_product_at_a_time();
    let root = repo_root();
    if !root.join(".git").exists() {
        mimalloc_tests::skip(
            "product_as_a_git_dependency",
            "the tests do not run from a git checkout",
        );
        return;
    }
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("git-consumer");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();

    let clone = scratch.join("repo.git");
    let status = Command::new("git")
        .args(["clone", "--quiet", "--bare"])
        .arg(&root)
        .arg(&clone)
        .status()
        .expect("git runs");
    assert!(status.success(), "git clone failed");

    let product = scratch.join("product");
    std::fs::create_dir_all(product.join("src")).unwrap();
    std::fs::copy(
        root.join("examples/product/src/main.rs"),
        product.join("src/main.rs"),
    )
    .unwrap();
    let url = format!("file://{}", clone.display());
    std::fs::write(
        product.join("Cargo.toml"),
        format!(
            "[package]\nname = \"product\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [dependencies]\nmimalloc = {{ git = \"{url}\", optional = true }}\n\n\
             [features]\nmimalloc = [\"dep:mimalloc\"]\n\n[workspace]\n"
        ),
    )
    .unwrap();

    // The workspace's lock file pins the same registry crates, already downloaded.
    std::fs::copy(root.join("Cargo.lock"), product.join("Cargo.lock")).unwrap();
    let (out, exe) = build_and_run(&product, &shared_target_dir(), &["mimalloc"]);
    assert!(out.contains("allocator: mimalloc 3."), "{out}");
    assert!(links_mimalloc(&exe));
}
