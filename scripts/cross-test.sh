#!/usr/bin/env bash
# Build the FFI tests of mimalloc-sys, mimalloc and mimalloc-tests with Debian's Rust 1.63 (the
# MSRV, and the only toolchain here with standard libraries for Windows and ARM) and run them.
#
#   scripts/cross-test.sh TARGET [FEATURES ...]
#
#   TARGET   x86_64-unknown-linux-gnu   the MSRV lane: native, including doc tests
#            i686-unknown-linux-gnu     32-bit x86, run natively
#            x86_64-pc-windows-gnu      run under Wine
#            aarch64-unknown-linux-gnu  run in one boot of qemu-system-aarch64 per feature set
#            armv7-unknown-linux-gnueabihf  the same with qemu-system-arm (scripts/system-test.sh)
#            wasm32-unknown-unknown     build only: a product that calls assign_global!() must
#                                       build, with no mimalloc in it (no OS to get memory from)
#   FEATURES one run per argument, each a comma-separated feature list of mimalloc-tests
#            ("" = default features); default: "" secure
#   --env    instead of FEATURES: prepare (packages, the workspace) and print the environment
#            the runs use, as KEY=VALUE lines, CROSS_WS the workspace (for scripts/mutants.py,
#            which runs cargo-mutants there for code compiled only for TARGET)
#
# Installs what it needs with apt-get, naming every package the build uses (the cross compilers
# only recommend their C libraries, and apt-get here installs no recommendations). Cargo 1.65
# cannot read the registry's sparse index, so the modern cargo resolves a Rust-1.63-compatible
# lock file and vendors the crates into a scratch copy of the workspace under target/cross/, and
# the old cargo builds it --offline.
# Exits non-zero if any test fails or any test binary crashes or times out.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=${1:?usage: scripts/cross-test.sh TARGET [FEATURES ...]}
shift
if [ "$#" -eq 0 ]; then set -- "" secure; fi
scratch="$root/target/cross"
old_cargo=/usr/bin/cargo
old_rustc=/usr/bin/rustc

log() { printf '==> %s\n' "$*"; }

# --- what each target needs ------------------------------------------------------------------
triple_env=$(echo "$target" | tr 'a-z-' 'A-Z_')
emulator=native
runner=()
packages=(rustc cargo)
# Skips name whole tests (--exact), so that a skip never drops another test sharing a word.
product_tests=(product_with_and_without_the_feature product_as_a_git_dependency)
harness_args=(--exact "${product_tests[@]/#/--skip=}")
skip_reasons=("${product_tests[*]}: they run cargo, which the test machine of a cross target does not have")
case "$target" in
  x86_64-unknown-linux-gnu) ;;
  i686-unknown-linux-gnu)
    arch=i386; packages+=(libstd-rust-dev:i386 gcc-i686-linux-gnu libc6-dev-i386-cross)
    linker=i686-linux-gnu-gcc ;;
  x86_64-pc-windows-gnu)
    packages+=(libstd-rust-dev-windows gcc-mingw-w64-x86-64 wine64)
    linker=x86_64-w64-mingw32-gcc
    emulator=wine; runner=(/usr/lib/wine/wine64) ;;
  wasm32-unknown-unknown)
    # Debian's rustc links wasm with /usr/bin/rust-lld, a symlink to lld-14 (only recommended).
    packages+=(libstd-rust-dev-wasm32 lld-14) ;;
  aarch64-unknown-linux-gnu)
    arch=arm64; packages+=(libstd-rust-dev:arm64 gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
    linker=aarch64-linux-gnu-gcc
    emulator=qemu-system ;;
  armv7-unknown-linux-gnueabihf)
    arch=armhf; packages+=(libstd-rust-dev:armhf gcc-arm-linux-gnueabihf libc6-dev-armhf-cross)
    linker=arm-linux-gnueabihf-gcc
    emulator=qemu-system ;;
  *) echo "unsupported target $target" >&2; exit 2 ;;
esac
if [ "$emulator" = wine ]; then
  # Alignments of 2^31..2^62 make mimalloc ask for that much address space, which Wine then
  # reserves for real until the kernel kills it. (The guest kernel of the ARM lanes refuses
  # such requests as a native one does.)
  harness_args+=(--skip=absurd_alignments_are_aligned_or_null)
  skip_reasons+=("absurd_alignments_are_aligned_or_null: $emulator does not model huge address-space reservations")
fi
if [ "$emulator" = qemu-system ]; then
  # The guest has two CPUs (scripts/system-test.sh); more test threads would only queue.
  harness_args+=(--test-threads=2)
fi

# --- install (idempotent and quiet) ----------------------------------------------------------
install_packages() {
  local missing=()
  # Installed, not merely known: `dpkg -s` also succeeds for a removed package whose
  # configuration files remain (it once let a lane run without its cross compiler).
  for p in "${packages[@]}"; do
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" = installed ] || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  log "installing ${missing[*]}"
  if [ -n "${arch:-}" ] && ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
    dpkg --add-architecture "$arch"
  fi
  # A mirror in the middle of a sync must not stop us: the packages come from the main archive.
  apt-get update -qq || log "apt-get update reported errors; trying the install anyway"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null && return 0
  # A foreign architecture's security index that failed to download (a stale mirror or proxy)
  # leaves its libraries at the main archive's versions while the native ones would be taken
  # from security, and multi-arch libraries must match: install this test toolchain from the
  # main archive alone, and say so.
  local codename prefs
  codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
  prefs=$(mktemp)
  printf 'Package: *\nPin: release n=%s-security\nPin-Priority: -1\n' "$codename" >"$prefs"
  log "the install failed; RETRIED without $codename-security (its index for a foreign architecture is unusable)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    -o Dir::Etc::Preferences="$prefs" "${missing[@]}" >/dev/null
  rm -f "$prefs"
}
install_packages

# --- the scratch workspace for the old cargo ---------------------------------------------------
mkdir -p "$scratch"
"$root/scripts/msrv-workspace.sh" "$scratch"
ws="$scratch/ws"

# --- build and run -----------------------------------------------------------------------------
export RUSTC="$old_rustc" RUSTDOC=/usr/bin/rustdoc
export CARGO_TARGET_DIR="$scratch/target"
export RUST_BACKTRACE=0 # rustc 1.63's windows-gnu std crashes under Wine while printing a backtrace
unset RUSTFLAGS CARGO_BUILD_TARGET
if [ -n "${linker:-}" ]; then
  export "CARGO_TARGET_${triple_env}_LINKER=$linker"
  export "CC_${target//-/_}=$linker"
fi
if [ "$emulator" = wine ]; then
  export WINEPREFIX="$scratch/wine" WINEDEBUG=-all
  if [ ! -d "$WINEPREFIX" ]; then
    log "creating a Wine prefix (first start takes a while)"
    timeout 300 "${runner[@]}" wineboot --init >/dev/null 2>&1 || true
  fi
fi
export MIMALLOC_TESTS_EMULATOR="$emulator"
if [ "${1:-}" = --env ]; then
  # Not CARGO_TARGET_DIR: each of cargo-mutants' copies builds in a target directory of its own.
  printf 'CROSS_WS=%s\nCARGO=%s\n' "$ws" "$old_cargo"
  # cargo runs the tests under the emulator itself (cargo-mutants runs `cargo test`).
  [ "${#runner[@]}" -eq 0 ] || printf 'CARGO_TARGET_%s_RUNNER=%s\n' "$triple_env" "${runner[*]}"
  env | grep -E '^(RUSTC|RUSTDOC|RUST_BACKTRACE|CARGO_TARGET_[A-Z0-9_]+_LINKER|CC_[a-z0-9_]+|MIMALLOC_TESTS_EMULATOR|WINEPREFIX|WINEDEBUG)=' || true
  exit 0
fi

total_passed=0 total_failed=0 total_ignored=0 total_skipped=0 broken=0
broken_names=() retried_names=() runtime_skips=() ignored_tests=()
run_binary() { # run one test binary here (natively or under the runner), then count it
  local exe=$1 label=$2 log_file
  log_file=$(mktemp)
  local status=0
  (cd "$ws" && timeout 900 "${runner[@]}" "$exe" "${harness_args[@]}") >"$log_file" 2>&1 || status=$?
  # Rust 1.63's libtest collects results over the old `std::sync::mpsc`, whose `recv_timeout`
  # has known races (rust-lang/rust#94518, fixed by the channel rewrite in 1.67): the harness
  # itself panics in `mpsc_queue.rs` after the tests passed (the i686 v2 heap binary twice in a
  # row here). That one failure, with no test reported failed, is run again, up to twice, with
  # one test thread (fewer senders racing on the channel), and said so.
  local attempt retries=0 retry_args=("${harness_args[@]}")
  [[ " ${harness_args[*]} " == *" --test-threads=1 "* ]] || retry_args+=(--test-threads=1)
  for attempt in 1 2; do
    if [ "$status" -ne 0 ] && grep -q 'sync/mpsc/mpsc_queue.rs' "$log_file" &&
      ! grep -qE '^test .* FAILED$' "$log_file"; then
      retries=$attempt status=0
      (cd "$ws" && timeout 900 "${runner[@]}" "$exe" "${retry_args[@]}") >"$log_file" 2>&1 || status=$?
    fi
  done
  count_binary "$label" "$log_file" "$status" "$retries"
  rm -f "$log_file"
}

# Adds what one binary did to the totals: its `test result:` line, its `SKIPPED ` lines, the
# tests libtest reports ignored (`test NAME ... ignored, WHY`: skips known at build time) and
# its exit status (124: timed out; "none": it never finished). A binary that exits non-zero
# with no failed test (a crash at exit, an FLS teardown fault, a timeout after the last test)
# is broken even though it printed `test result: ok`.
count_binary() {
  local label=$1 log_file=$2 status=$3 retries=$4 result p=0 f=0 i=0 s=0 line attempt
  for ((attempt = 1; attempt <= retries; attempt++)); do
    echo "    [$label] RETRIED ($attempt): libtest 1.63's channel panicked in mpsc_queue.rs (rust-lang/rust#94518), no test had failed"
  done
  [ "$retries" -gt 0 ] && retried_names+=("$label")
  result=$(grep -E '^test result:' "$log_file" | tail -1 || true)
  if [ -n "$result" ]; then
    p=$(sed -n 's/.* \([0-9]*\) passed.*/\1/p' <<<"$result")
    f=$(sed -n 's/.* \([0-9]*\) failed.*/\1/p' <<<"$result")
    i=$(sed -n 's/.* \([0-9]*\) ignored.*/\1/p' <<<"$result")
    s=$(sed -n 's/.* \([0-9]*\) filtered out.*/\1/p' <<<"$result")
    total_passed=$((total_passed + p)) total_failed=$((total_failed + f))
    total_ignored=$((total_ignored + i)) total_skipped=$((total_skipped + s))
  fi
  while read -r line; do
    runtime_skips+=("[$label] ${line#SKIPPED }")
  done < <(grep -E '^SKIPPED ' "$log_file" || true)
  while read -r line; do
    ignored_tests+=("[$label] $line")
  done < <(sed -n -E 's/^test (.*) \.\.\. ignored(, (.*))?$/\1: \3/p' "$log_file" | sed 's/: $//')
  if [ "$status" != 0 ] || [ -z "$result" ]; then
    grep -E '^SKIPPED |^test .* FAILED$|panicked' "$log_file" | sed "s|^|    [$label] |" || true
    echo "    [$label] FAILED: exit status $status$([ "$status" = 124 ] && echo ' (timed out)'); the end of its output:"
    tail -25 "$log_file" | sed "s|^|    [$label] |"
    if [ -z "$result" ] || [ "${f:-0}" -eq 0 ]; then
      broken=$((broken + 1)) broken_names+=("$label")
    fi
  else
    grep -E '^SKIPPED |^test result' "$log_file" | sed "s|^|    [$label] |" || true
  fi
}

# The system lanes: every binary of one feature set in one boot of the emulated machine
# (scripts/system-test.sh), then each counted from its part of the console log.
run_in_system() {
  local label=$1 exes=$2 dir="$scratch/system-run" exe name status retries
  printf '%s\n' "$exes" >"$scratch/system-exes"
  "$root/scripts/system-test.sh" "$target" "$ws" "$dir" "$scratch/system-exes" "${harness_args[@]}"
  while read -r exe; do
    name=$(basename "$exe")
    status=none retries=0
    [ -f "$dir/$name.status" ] && status=$(cat "$dir/$name.status")
    [ -f "$dir/$name.retried" ] && retries=$(wc -l <"$dir/$name.retried")
    [ -f "$dir/$name.log" ] || : >"$dir/$name.log"
    count_binary "$label $(sed 's/-[0-9a-f]*$//' <<<"$name")" "$dir/$name.log" "$status" "$retries"
  done <<<"$exes"
}

# A failed build's own errors: cargo's log also holds the C compiler's warnings, which can push
# the errors out of any fixed-size tail.
print_build_errors() {
  local log_file=$1
  if grep -qE '^error' "$log_file"; then
    grep -vE '^warning: ' "$log_file" | grep -E -A14 '^error' | head -150 >&2
  else
    tail -40 "$log_file" >&2
  fi
}

# Builds the plugin of tests/tests/plugin.rs for the target, with those of FEATURES (of
# mimalloc-tests) that it has, and names it in MIMALLOC_TEST_PLUGIN for the test.
build_plugin() {
  local features=$1 wanted=() f path
  local own
  own=$(sed -n '/^\[features\]/,/^\[/s/^\([a-z0-9_]*\) = .*/\1/p' "$ws/tests/plugin/Cargo.toml")
  for f in ${features//,/ }; do
    grep -qx "$f" <<<"$own" && wanted+=("mimalloc-test-plugin/$f")
  done
  path=$(cd "$ws" && "$old_cargo" build --offline --target "$target" -p mimalloc-test-plugin \
      ${wanted[0]:+--features "$(IFS=,; echo "${wanted[*]}")"} --message-format=json 2>"$scratch/build-errors.log" |
    python3 -c '
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("reason") == "compiler-artifact" and "cdylib" in msg["target"]["kind"]:
        print(next(f for f in msg["filenames"] if f.endswith((".so", ".dll", ".dylib"))))
') || path=""
  if [ -z "$path" ]; then
    print_build_errors "$scratch/build-errors.log"
    echo "FAILED: the plugin of tests/tests/plugin.rs did not build for $target" >&2
    exit 1
  fi
  export MIMALLOC_TEST_PLUGIN="$path"
}

start=$SECONDS
if [ "$target" = wasm32-unknown-unknown ]; then
  log "$target: building a product that calls mimalloc::assign_global!() ($($old_rustc --version))"
  (cd "$ws" && "$old_cargo" build --offline --quiet --target "$target" -p no-os-product)
  wasm="$CARGO_TARGET_DIR/$target/debug/no-os-product.wasm"
  if grep -q mimalloc_ "$wasm"; then
    echo "FAILED: $wasm contains mimalloc's C code" >&2; exit 1
  fi
  echo "SUMMARY $target: the product builds, and assign_global!() installed nothing ($wasm)"
  exit 0
fi
# The promise is Rust 1.63 for every stable feature of the safe crate, `profile`'s backtrace
# dependency included (scripts/msrv-workspace.sh pins its last 1.63 release).
log "$target: the safe crate with std, allocator-api2, tracking and profile ($($old_rustc --version))"
(cd "$ws" && "$old_cargo" build --offline --quiet --target "$target" -p mimalloc \
  --features std,allocator-api2,tracking,profile)
for features in "$@"; do
  label="$target${features:+ [$features]}"
  log "$label: building the tests with $($old_rustc --version)"
  feature_args=()
  [ -n "$features" ] && feature_args=(--features "$features")
  built=1
  exes=$(cd "$ws" && "$old_cargo" test --offline --target "$target" -p mimalloc-sys -p mimalloc -p mimalloc-tests \
      ${features:+--features "mimalloc-tests/$(sed 's/,/,mimalloc-tests\//g' <<<"$features")"} \
      --no-run --message-format=json 2>"$scratch/build-errors.log" |
    python3 -c '
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("reason") == "compiler-artifact" and msg.get("executable") and msg["profile"]["test"]:
        print(msg["executable"])
') || built=0
  if [ "$built" = 0 ] || [ -z "$exes" ]; then
    print_build_errors "$scratch/build-errors.log"
    echo "FAILED: the tests of $label did not build (the compiler's last words above)" >&2
    exit 1
  fi
  build_plugin "$features"
  if [ "$emulator" = qemu-system ]; then
    run_in_system "$label" "$exes"
  else
    while read -r exe; do
      run_binary "$exe" "$label $(basename "$exe" | sed 's/-[0-9a-f]*\(\.exe\)\{0,1\}$//')"
    done <<<"$exes"
  fi
  if [ "$target" = x86_64-unknown-linux-gnu ]; then
    for product_features in "" mimalloc; do
      out=$(cd "$ws" && "$old_cargo" run --offline --quiet -p product ${product_features:+--features mimalloc})
      echo "    [$label product${product_features:+ --features mimalloc}] $(grep allocator: <<<"$out")"
      expected=system
      [ -n "$product_features" ] && expected="mimalloc"
      grep -q "allocator: $expected" <<<"$out" || { echo "product: expected the $expected allocator" >&2; broken=$((broken + 1)); }
    done
    doc_log=$(mktemp)
    if (cd "$ws" && "$old_cargo" test --offline --doc -p mimalloc-sys -p mimalloc \
        ${features:+--features "mimalloc/$(sed 's/,/,mimalloc\//g' <<<"$features")"}) >"$doc_log" 2>&1; then
      grep -E '^test result' "$doc_log" | sed "s|^|    [$label doc] |"
      while read -r result; do
        total_passed=$((total_passed + $(sed -n 's/.* \([0-9]*\) passed.*/\1/p' <<<"$result")))
      done < <(grep -E '^test result' "$doc_log")
    else
      tail -40 "$doc_log"; broken=$((broken + 1))
    fi
    rm -f "$doc_log"
  fi
done

names() { # " (a; b)", or nothing for no names (labels hold commas: "v2,secure")
  [ "$#" -eq 0 ] && return 0
  local out=$1 name
  shift
  for name in "$@"; do out+="; $name"; done
  echo " ($out)"
}
echo "SUMMARY $target ($emulator, $($old_rustc --version | cut -d' ' -f2)): $total_passed passed, $total_failed failed," \
  "$total_ignored ignored by the tests, $total_skipped skipped by name, ${#runtime_skips[@]} skipped at run time," \
  "$broken broken binaries$(names "${broken_names[@]}"), ${#retried_names[@]} retried$(names "${retried_names[@]}")," \
  "$((SECONDS - start)) s"
for reason in "${skip_reasons[@]}"; do echo "  skipped by name: $reason"; done
for skipped in "${runtime_skips[@]}"; do echo "  skipped at run time: $skipped"; done
for ignored in "${ignored_tests[@]}"; do echo "  ignored: $ignored"; done
[ "$total_failed" -eq 0 ] && [ "$broken" -eq 0 ]
