#!/usr/bin/env bash
# Published programs that ship on the registry's `mimalloc` behind a cargo feature, switched to
# this workspace's crate by the one line the README changes (the dependency's `version` line
# becomes a `path` line), then tested and measured:
#
#   scripts/published.sh setup [NAME...]    fetch each with cargo from crates.io and unpack two
#                                           copies under target/published/NAME/: own/ as
#                                           published, ours/ with that line changed (printed as
#                                           a diff)
#   scripts/published.sh test [NAME...]     its own test suite on ours, after checking that ours
#                                           links this workspace's mimalloc-sys (CI's lane
#                                           published; about 4 minutes of building here)
#   scripts/published.sh product NAME [ROUNDS]
#                                           `mimalloc-bench product` on the input it is made
#                                           for (scripts/published-input.py), ROUNDS rounds
#                                           (default 15)
#   scripts/published.sh own NAME [ROUNDS]  the program as published (its own registry
#                                           mimalloc) against ours (the product run's build),
#                                           alternating, on the same input (scripts/paired-runs.py,
#                                           default 15 rounds)
#
# NAME: jaq (jaq 3.1.2, a jq clone: JSON) or mq (mq-run 0.10.0, jq for Markdown); without
# NAMEs, both. Both turn mimalloc on in their default features, which `product` handles by
# building the system variant with the other defaults only.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
names=(jaq mq)

log() { printf '==> %s\n' "$*"; }

# The facts of one program: its crate, the dependency line the switch replaces, its binary,
# the feature that installs mimalloc, its tests' skips, and its measured command.
program() {
  skips=() allocators=()
  case "$1" in
    jaq)
      crate=jaq version=3.1.2 line='version = "0.1.29"' bin=jaq feature=mimalloc
      input=(events 100000) input_file=events.json
      query=(-c 'group_by(.service) | map({service: .[0].service, n: length, slow: (map(select(.latency_ms > 100)) | length), tags: (map(.tags[]) | unique)})' events.json)
      ;;
    mq)
      crate=mq-run version=0.10.0 line='version = "0.1.48"' bin=mq feature=use_mimalloc
      input=(markdown 20000) input_file=book.md
      query=(-U 'if (is_h2()): to_h(3) else: self' book.md)
      # Its manifest asks for the dependency's `v3`, which `product`'s ours-v2 build would
      # contradict (a compile error that says so): every other variant.
      allocators=(--allocators ours,ours-secure,ours-no-thp,ours-purge0)
      # It reads mq's documentation from its repository, which the published crate leaves out.
      skips+=("doc_examples_match_documented_output:reads docs/books/src, which the published crate does not ship")
      if [ "$(id -u)" = 0 ]; then
        skips+=("test_atomic_output_failure_leaves_existing_file_untouched:expects a write into a read-only directory to fail, which root's does not")
      fi
      ;;
    *) echo "no published program called $1 (${names[*]})" >&2; exit 2 ;;
  esac
  dir="$root/target/published/$1"
}

setup_one() {
  program "$1"
  local fetch="$dir/fetch" archive
  mkdir -p "$fetch/src"
  printf '[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n\n[dependencies]\n%s = { version = "=%s", default-features = false }\n\n[workspace]\n' \
    "$crate" "$version" >"$fetch/Cargo.toml"
  : >"$fetch/src/lib.rs"
  (cd "$fetch" && cargo fetch --quiet)
  archive=$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"$crate-$version.crate" | head -1)
  log "$1: unpacking $archive (sha256 $(sha256sum "$archive" | cut -d' ' -f1))"
  for copy in own ours; do
    rm -rf "${dir:?}/$copy"
    mkdir -p "$dir/$copy"
    tar -xzf "$archive" -C "$dir/$copy" --strip-components=1
  done
  python3 - "$dir/ours/Cargo.toml" "$line" "$root/mimalloc" <<'EOF'
import sys
path, line, ours = sys.argv[1:]
old = f"[dependencies.mimalloc]\n{line}\n"
text = open(path).read()
if text.count(old) != 1:
    sys.exit(f"published.sh: {path} no longer has exactly one {old!r}: update the line")
open(path, "w").write(text.replace(old, f'[dependencies.mimalloc]\npath = "{ours}"\n'))
EOF
  log "$1: the one line changed in ours/Cargo.toml:"
  diff -u "$dir/own/Cargo.toml" "$dir/ours/Cargo.toml" | sed -n '3,$p' || true
}

need_setup() {
  program "$1"
  [ -f "$dir/ours/Cargo.toml" ] || setup_one "$1"
  program "$1"
}

# The program's own tests on ours: libtest's totals, the tests skipped and why.
test_one() {
  need_setup "$1"
  local out skip args=() passed=0 failed=0 ignored=0 line
  (cd "$dir/ours" && cargo tree --quiet -i mimalloc-sys --depth 0) | grep -q "$root/mimalloc-sys" ||
    { echo "$1: ours does not build this workspace's mimalloc-sys" >&2; exit 1; }
  for skip in ${skips[@]+"${skips[@]}"}; do
    args+=(--skip "${skip%%:*}")
    echo "SKIPPED $1: ${skip%%:*}: ${skip#*:}"
  done
  out=$(mktemp)
  # Default features: the program as it ships, on mimalloc.
  (cd "$dir/ours" && cargo test --quiet --no-fail-fast -- ${args[@]+"${args[@]}"}) >"$out" 2>&1 ||
    { tail -60 "$out"; echo "FAILED: $1's own tests on ours" >&2; exit 1; }
  while read -r line; do
    passed=$((passed + $(sed -n 's/.* \([0-9]*\) passed.*/\1/p' <<<"$line")))
    failed=$((failed + $(sed -n 's/.* \([0-9]*\) failed.*/\1/p' <<<"$line")))
    ignored=$((ignored + $(sed -n 's/.* \([0-9]*\) ignored.*/\1/p' <<<"$line")))
  done < <(grep -E '^test result:' "$out")
  # libtest's own lines, which .ci/lib.sh's `suite` adds up.
  grep -E '^test result:' "$out"
  rm -f "$out"
  [ "$passed" -gt 0 ] || { echo "$1: no test ran" >&2; exit 1; }
  echo "$1 $version on ours: cargo test: $passed passed, $failed failed, $ignored ignored"
}

product_one() {
  need_setup "$1"
  local rounds=${2:-15} inputs="$dir/inputs"
  mkdir -p "$inputs"
  python3 "$root/scripts/published-input.py" "${input[@]}" >"$inputs/$input_file"
  log "$1: $input_file, $(du -h "$inputs/$input_file" | cut -f1), sha256 $(sha256sum "$inputs/$input_file" | cut -c1-16)"
  (cd "$inputs" && cargo run --release --quiet --manifest-path "$root/Cargo.toml" -p mimalloc-bench -- \
    product --manifest-path "$dir/ours/Cargo.toml" --bin "$bin" --feature "$feature" ${allocators[@]+"${allocators[@]}"} \
    --rounds "$rounds" --out "$dir/product" -- "${query[@]}")
}

# The program as it ships against the same program switched to ours, after `product`.
own_one() {
  need_setup "$1"
  local rounds=${2:-15} ours
  ours="$root/target/mimalloc-bench/product-builds/bin/$crate-$bin-ours"
  [ -x "$ours" ] || { echo "no $ours: run scripts/published.sh product $1 first" >&2; exit 1; }
  (cd "$dir/own" && cargo build --release --quiet --bin "$bin")
  (cd "$dir/inputs" && python3 "$root/scripts/paired-runs.py" "$rounds" \
    "own=$dir/own/target/release/$bin" "ours=$ours" -- "${query[@]}")
}

command=${1:-}
shift || true
if [ "$command" = setup ] || [ "$command" = test ]; then [ $# -gt 0 ] || set -- "${names[@]}"; fi
case "$command" in
  setup) for name in "$@"; do setup_one "$name"; done ;;
  test) for name in "$@"; do test_one "$name"; done ;;
  product | own)
    [ $# -ge 1 ] || { echo "usage: scripts/published.sh $command NAME [ROUNDS]" >&2; exit 2; }
    "${command}_one" "$@"
    ;;
  *) echo "usage: scripts/published.sh setup|test [NAME...] | product|own NAME [ROUNDS]" >&2; exit 2 ;;
esac
