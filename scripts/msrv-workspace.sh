#!/usr/bin/env bash
# Prepare DIR/ws: a copy of the MSRV crates (mimalloc-sys, mimalloc, mimalloc-tests, and the
# crates nested in their directories: mimalloc-sys-cfgs, seeded-rng, ...) and of the product example, that
# an old cargo can build offline, with DIR/crates holding every dependency.
#
#   scripts/msrv-workspace.sh DIR
#
# The modern cargo resolves a lock file compatible with Rust 1.63 (it prefers crate versions
# whose rust-version the MSRV crates accept) and vendors the crates; the lock file is rewritten
# to version 3, which cargo 1.63-1.77 read. Then, in DIR/ws: `cargo +1.63 test --offline`.
# Used by scripts/cross-test.sh (Debian's Rust 1.63) and by the hosted CI's MSRV jobs (rustup's).
# Reuses DIR/ws while no source file is newer than it. Nothing here is committed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${1:?usage: scripts/msrv-workspace.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
ws="$dir/ws"

if [ -f "$dir/stamp" ] &&
  [ -z "$(cd "$root" && find Cargo.toml mimalloc-sys mimalloc tests vendor fuzz/corpus examples/product/src examples/product/Cargo.toml \
    "${BASH_SOURCE[0]}" -newer "$dir/stamp" -print -quit)" ]; then
  exit 0
fi
echo "==> preparing a Rust 1.63 workspace in $ws"
rm -rf "$ws" "$dir/crates" "$dir/stamp"
mkdir -p "$ws"
cp -R "$root/mimalloc-sys" "$root/mimalloc" "$root/tests" "$root/vendor" "$ws/"
# The fuzz target's seed corpus, which the model test replays (tests/tests/model.rs).
mkdir -p "$ws/fuzz"
cp -R "$root/fuzz/corpus" "$ws/fuzz/"
mkdir -p "$ws/product"
cp -R "$root/examples/product/src" "$ws/product/"
# The product as a member: its own `[workspace]` table dropped, its path dependency re-pointed.
sed -e '/^\[workspace\]/d' -e 's|path = "../../mimalloc"|path = "../mimalloc"|' \
  "$root/examples/product/Cargo.toml" >"$ws/product/Cargo.toml"
# The smallest product, for targets without an OS (scripts/cross-test.sh wasm32-unknown-unknown).
mkdir -p "$ws/no-os-product/src"
cat >"$ws/no-os-product/Cargo.toml" <<'MANIFEST'
[package]
name = "no-os-product"
version = "0.1.0"
edition = "2021"
[dependencies]
mimalloc = { path = "../mimalloc" }
MANIFEST
cat >"$ws/no-os-product/src/main.rs" <<'MAIN'
mimalloc::assign_global!();
fn main() {
    let v: Vec<u64> = (0..100).collect();
    assert_eq!(v.iter().sum::<u64>(), 4950);
}
MAIN
# Only the MSRV crates, and the real workspace's profiles. `tests/plugin` is the cdylib that
# tests/tests/plugin.rs loads (built for the target by scripts/cross-test.sh, since the test
# cannot run cargo where the cross binaries run). The `[workspace.*]` tables stay out: Cargo
# 1.63 cannot read them, and the MSRV crates do not inherit from them.
{
  printf '[workspace]\nmembers = ["mimalloc-sys", "mimalloc-sys/cfgs", "mimalloc", "tests", "tests/rng", "tests/plugin-recipe", "tests/plugin", "product", "no-os-product"]\n'
  printf 'resolver = "2"\n\n'
  sed -n '/^\[profile/,$p' "$root/Cargo.toml"
} >"$ws/Cargo.toml"
# The optional `bindgen` feature needs Rust 1.70, and its dependencies have manifests old cargo
# cannot parse; the MSRV promise is about the committed bindings, so the copy drops it.
sed -i.bak -e '/^bindgen = \["dep:bindgen"\]/d' -e '/^bindgen = { version/d' "$ws/mimalloc-sys/Cargo.toml"
sed -i.bak -e '/^bindgen = \["mimalloc-sys\/bindgen"\]/d' "$ws/mimalloc/Cargo.toml"
# `[lints] workspace = true` names the real root's `[workspace.lints]`, left out above; Cargo
# before 1.74 skips lint tables anyway.
for manifest in "$ws"/*/Cargo.toml "$ws"/*/*/Cargo.toml; do
  sed -i.bak -e '/^\[lints\]$/,/^workspace = true$/d' "$manifest"
done
rm -f "$ws"/*/Cargo.toml.bak "$ws"/*/*/Cargo.toml.bak
# backtrace releases after 0.3.68 state no rust-version but need addr2line 0.21 (Rust 1.65), which
# the fallback resolver takes for want of another: pinned to the last that builds with 1.63.
(cd "$ws" &&
  CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS=fallback cargo generate-lockfile --quiet &&
  CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS=fallback cargo update --quiet -p backtrace --precise 0.3.68 &&
  cargo vendor --quiet --locked "$dir/crates" >/dev/null)
sed -i.bak 's/^version = 4$/version = 3/' "$ws/Cargo.lock" && rm -f "$ws/Cargo.lock.bak"
crates="$dir/crates"
# Git Bash on Windows: cargo wants a Windows path.
if command -v cygpath >/dev/null 2>&1; then crates=$(cygpath -m "$crates"); fi
mkdir -p "$ws/.cargo"
cat >"$ws/.cargo/config.toml" <<CONFIG
[source.crates-io]
replace-with = "vendored"
[source.vendored]
directory = "$crates"
CONFIG
# Every manifest here is one that a real Cargo 1.63 must read (the hosted MSRV jobs use one).
# (Windows runners name their Python `python`.)
python=$(command -v python3 || command -v python)
(cd "$ws" && "$python" "$root/scripts/check-msrv-manifests.py" Cargo.toml */Cargo.toml */*/Cargo.toml >/dev/null)
touch "$dir/stamp"
