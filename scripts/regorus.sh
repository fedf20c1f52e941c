#!/usr/bin/env bash
# regorus 0.14.1, the Rego policy engine, from its published crate, with this workspace's
# mimalloc in place of its own (`regorus-mimalloc`, renamed to `mimalloc` in its manifest):
#
#   scripts/regorus.sh setup     fetch the crate with cargo and unpack three copies under
#                                target/regorus/: own/ as published, ours/ with two manifest lines
#                                changed, adapter/ with its `mimalloc` dependency replaced by
#                                adapters/regorus (the changes printed as diffs)
#   scripts/regorus.sh test      its test suite with `--features mimalloc`, on ours and on own
#   scripts/regorus.sh limits [COPY...]
#                                its memory-limit tests (tests/memory_limits.rs and
#                                tests/execution_limits.rs) with `--features
#                                allocator-memory-limits`, on adapter and on own (or the copies
#                                named): about 70 s of building and testing each; lane bench
#                                runs it on adapter
#   scripts/regorus.sh bench     its criterion benchmarks aci_benchmark and
#                                engine_evaluation_benchmark (1 and 2 threads) and the wall time
#                                and peak RSS of two `regorus eval`s (the README's example,
#                                and its aci command that fails in 0.14), on system, own, ours
#                                and ours-v2, alternating (scripts/regorus-report.py): about
#                                35 min of building on 2 cores, then 5 min per round
#                                (REGORUS_ROUNDS, default 5; 0 builds and runs only the evals,
#                                about 18 min of building)
#   scripts/regorus.sh product   `mimalloc-bench product` on the README's example (ours only)
#
# Only `limits adapter` is part of .ci/run (the full run): building regorus four ways for the others takes
# longer than the CI budget has left.
# Its `opa` test clones OPA's repository from GitHub, which this machine cannot reach.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir="$root/target/regorus"
version=0.14.1
# The README's own whole-process example (regorus' README, "Performance"); its policies are
# Rego v0, which 0.14 parses only when asked.
eval_args=(eval --v0 -b tests/aci -d tests/aci/data.json -i tests/aci/input.json data.framework.mount_overlay=x)
# The README's other aci command, as written there (without --v0): 0.14 stops at a Rego v1
# parse error and reports it with a symbolized backtrace, about 70 ms and 90 MiB of allocations
# in a process past the memory policy's 16 MiB (issue 52's example). Exit status 1, the same on
# every allocator.
aci_args=(RUST_BACKTRACE=1 eval -b tests/aci -d tests/aci/data.json -i tests/aci/input.json data.policy.mount_overlay=x)

log() { printf '==> %s\n' "$*"; }

setup() {
  local fetch="$dir/fetch" crate
  mkdir -p "$fetch/src"
  printf '[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n\n[dependencies]\nregorus = { version = "=%s", default-features = false }\n\n[workspace]\n' \
    "$version" >"$fetch/Cargo.toml"
  : >"$fetch/src/lib.rs"
  (cd "$fetch" && cargo fetch --quiet)
  crate=$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"regorus-$version.crate" | head -1)
  log "unpacking $crate (sha256 $(sha256sum "$crate" | cut -d' ' -f1))"
  for copy in own ours adapter; do
    rm -rf "${dir:?}/$copy"
    mkdir -p "$dir/$copy"
    tar -xzf "$crate" -C "$dir/$copy" --strip-components=1
  done
  python3 - "$dir" "$root" <<'EOF'
import sys
dir, root = sys.argv[1], sys.argv[2]
dependency = '[dependencies.mimalloc]\nversion = "2.2.9"\noptional = true\npackage = "regorus-mimalloc"\n'
copies = {
    "ours": [
        # Its dependency, replaced by this workspace's crate under the same name.
        (dependency, f'[dependencies.mimalloc]\npath = "{root}/mimalloc"\noptional = true\n'),
        # A feature of regorus-mimalloc that this crate lacks: cargo refuses to resolve a
        # dependency feature that does not exist, even with regorus' own feature off.
        ('    "mimalloc/allocator-memory-limits",\n', ''),
    ],
    "adapter": [
        # Its dependency, replaced by the adapter, whose features have regorus-mimalloc's names.
        (dependency, f'[dependencies.mimalloc]\npath = "{root}/adapters/regorus"\noptional = true\n'
                     'package = "mimalloc-regorus"\n'),
    ],
}
for copy, changes in copies.items():
    path = f"{dir}/{copy}/Cargo.toml"
    text = open(path).read()
    for old, new in changes:
        if text.count(old) != 1:
            sys.exit(f"regorus.sh: {path} no longer has exactly one {old!r}: update the patch")
        text = text.replace(old, new)
    open(path, "w").write(text)
EOF
  for copy in ours adapter; do
    log "what had to change in $copy/Cargo.toml:"
    diff -u "$dir/own/Cargo.toml" "$dir/$copy/Cargo.toml" | sed -n '3,$p' || true
  done
}

need_setup() {
  [ -f "$dir/adapter/Cargo.toml" ] || setup
}

# The suite of one copy: libtest's totals, and the two harness-less suites' last lines.
suite() {
  local copy=$1 out passed=0 failed=0 ignored=0 line
  out=$(mktemp)
  (cd "$dir/$copy" && cargo test --quiet --features mimalloc) >"$out" 2>&1 || { tail -40 "$out"; exit 1; }
  while read -r line; do
    passed=$((passed + $(sed -n 's/.* \([0-9]*\) passed.*/\1/p' <<<"$line")))
    failed=$((failed + $(sed -n 's/.* \([0-9]*\) failed.*/\1/p' <<<"$line")))
    ignored=$((ignored + $(sed -n 's/.* \([0-9]*\) ignored.*/\1/p' <<<"$line")))
  done < <(grep -E '^test result:' "$out")
  echo "$copy: cargo test --features mimalloc: $passed passed, $failed failed, $ignored ignored"
  # The two harness-less suites (`test = false`): aci prints `NAME ok` per case, kata a summary.
  (cd "$dir/$copy" && cargo test --quiet --features mimalloc --test aci) >"$out" 2>&1 || { tail -40 "$out"; exit 1; }
  echo "$copy: --test aci: $(grep -cE '^aci/[a-z_]+ +ok$' "$out") cases ok"
  (cd "$dir/$copy" && cargo test --quiet --features mimalloc --test kata) >"$out" 2>&1 || { tail -40 "$out"; exit 1; }
  echo "$copy: --test kata: $(grep -E '^executed [0-9]+ queries' "$out"), $(grep -x 'kata tests passed' "$out")"
  rm -f "$out"
}

test_both() {
  need_setup
  # The tests of ours must run on this workspace's crate, and those of own on regorus-mimalloc.
  (cd "$dir/ours" && cargo tree --quiet --features mimalloc -i mimalloc-sys --depth 0) | grep -q "$root/mimalloc-sys" ||
    { echo "ours does not build this workspace's mimalloc-sys" >&2; exit 1; }
  (cd "$dir/own" && cargo tree --quiet --features mimalloc -i regorus-mimalloc --depth 0) >/dev/null
  suite ours
  suite own
  echo "SKIPPED opa: the test clones github.com/open-policy-agent/opa, and this machine has no network but the package registries"
}

# regorus' memory-limit tests, on the adapter and on its own crate (or the copies named):
# libtest's result line per file, which .ci/lib.sh's `suite` adds up.
limits() {
  need_setup
  [ $# -gt 0 ] || set -- adapter own
  (cd "$dir/adapter" && cargo tree --quiet --features allocator-memory-limits -i mimalloc-regorus --depth 0) |
    grep -q "$root/adapters/regorus" || { echo "adapter does not build adapters/regorus" >&2; exit 1; }
  local copy test out
  out=$(mktemp)
  for copy in "$@"; do
    for test in memory_limits execution_limits; do
      (cd "$dir/$copy" && cargo test --quiet --features allocator-memory-limits --test "$test") >"$out" 2>&1 ||
        { tail -60 "$out"; echo "FAILED: $copy --test $test" >&2; exit 1; }
      echo "$copy --test $test:"
      grep -E '^test result:' "$out"
    done
  done
  rm -f "$out"
}

bench() {
  need_setup
  command -v cmake >/dev/null || { echo "regorus-mimalloc builds with cmake: apt-get install cmake" >&2; exit 1; }
  python3 "$root/scripts/regorus-report.py" "$dir" "${eval_args[@]}" -- "${aci_args[@]}"
}

product() {
  need_setup
  (cd "$dir/ours" && cargo run --release --quiet --manifest-path "$root/Cargo.toml" -p mimalloc-bench -- \
    product --manifest-path "$dir/ours/Cargo.toml" --example regorus --out "$dir/product" -- "${eval_args[@]}")
}

case "${1:-}" in
  setup) setup ;;
  test) test_both ;;
  bench) bench ;;
  product) product ;;
  limits) shift; limits "$@" ;;
  *) echo "usage: scripts/regorus.sh setup|test|limits [COPY...]|bench|product" >&2; exit 2 ;;
esac
