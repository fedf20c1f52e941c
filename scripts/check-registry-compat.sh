#!/usr/bin/env bash
# A product written for a registry mimalloc crate switches to ours by its dependency line alone:
#
#   scripts/check-registry-compat.sh
#
# tests/registry-compat/ holds two such products, one per registry crate (`mimalloc` 0.1.52 and
# `mimalloc-safe` 0.1.69), each using its crate's whole API. For every dependency line below,
# the product is copied, the line marked `# DEPENDENCY` in its manifest is replaced, and its
# tests run: on the registry crate (the tests hold there), then on ours under the registry
# crate's own name with every feature name it accepts. Nothing else of the product changes.
# mimalloc-safe builds its C with cmake: without cmake that one run says SKIPPED.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# One target directory for every run: the products' dependencies are built once.
export CARGO_TARGET_DIR="$root/target/registry-compat"

ours="path = \"$root/mimalloc\""

# run PRODUCT LABEL LINE: the product's tests with LINE as its dependency.
run() {
  local product=$1 label=$2 line=$3 copy
  copy="$work/$product-$(date +%s%N)"
  cp -r "tests/registry-compat/$product" "$copy"
  LINE=$line python3 - "$copy/Cargo.toml" <<'PY'
import os, sys
path = sys.argv[1]
lines = open(path).read().splitlines(keepends=True)
marked = [i for i, l in enumerate(lines) if l.rstrip().endswith("# DEPENDENCY")]
assert len(marked) == 1, f"{path}: one line must end with '# DEPENDENCY'"
lines[marked[0]] = os.environ["LINE"] + "\n"
open(path, "w").write("".join(lines))
PY
  echo "--- $product on $label: $line"
  (cd "$copy" && cargo test --quiet 2>&1) | grep -E "^test result|warning: mimalloc-sys|error|panicked|FAILED" || true
  (cd "$copy" && cargo test --quiet >/dev/null 2>&1) || {
    (cd "$copy" && cargo test 2>&1 | tail -40)
    echo "FAILED: $product on $label" >&2
    exit 1
  }
}

registry_names='"extended", "no_thp", "debug_in_debug", "win_direct_tls", "local_dynamic_tls"'
run mimalloc-user "the registry's mimalloc 0.1.52" \
  "mimalloc = { version = \"=0.1.52\", features = [$registry_names] }"
run mimalloc-user "ours, the same features" "mimalloc = { $ours, features = [$registry_names] }"
for features in '"extended"' '"extended", "secure"' '"extended", "v2"' '"extended", "override", "debug"'; do
  run mimalloc-user "ours" "mimalloc = { $ours, features = [$features] }"
done

safe_names='"v3", "extended", "no_thp", "skip_collect_on_exit", "no_opt_arch", "asm", "free_use_pagemap", "etw", "local_dynamic_tls"'
if command -v cmake >/dev/null && cmake --version >/dev/null 2>&1; then
  run mimalloc-safe-user "the registry's mimalloc-safe 0.1.69" \
    "mimalloc-safe = { version = \"=0.1.69\", features = [$safe_names] }"
else
  echo "SKIPPED mimalloc-safe-user on the registry's mimalloc-safe: its libmimalloc-sys2 builds with cmake, which is not installed"
fi
run mimalloc-safe-user "ours, the same features" \
  "mimalloc-safe = { package = \"mimalloc\", $ours, features = [$safe_names] }"
run mimalloc-safe-user "ours" "mimalloc-safe = { package = \"mimalloc\", $ours, features = [\"extended\", \"secure\", \"override\"] }"
echo "registry compatibility: every product passed its tests on ours with only its dependency line changed"
