# Helpers of .ci/run's lanes (sourced, not run). Every lane runs the same way here and in the
# hosted workflow, so nothing below may assume this machine: packages come through
# `need_packages`, toolchains are probed, and a lane that cannot run says SKIPPED and why.

run_start=${run_start:-$SECONDS}
# Every lane builds once per feature set and never edits code between builds, so incremental
# compilation only costs time and disk.
export CARGO_INCREMENTAL=0
step() {
  printf '\n=== %s (at %d s)\n' "$*" "$((SECONDS - run_start))"
}

checks_skipped=0
skipped() { # a check that cannot run here: say so, visibly, and carry on
  echo "SKIPPED $*"
  checks_skipped=$((checks_skipped + 1))
}

skip_lane() { # the whole lane cannot run here: say why; the set's last line counts it
  echo "SKIPPED lane: $*"
  lane_skipped="$*"
}

# Runs a `cargo test` command quietly. On success prints one line of totals and, under it, every
# test that skipped itself at run time (the `SKIPPED name: why` lines the suites write to stderr,
# which libtest does not capture) and every test ignored in this build (`IGNORED name: why`, from
# libtest's `test name ... ignored, why` lines: a skip known at build time is an `#[ignore]`);
# on failure the whole log, and the run stops.
suite() {
  local label=$1 log
  shift
  log=$(mktemp)
  if ! "$@" >"$log" 2>&1; then
    cat "$log"
    echo "FAILED: $label" >&2
    exit 1
  fi
  local skips ignored
  skips=$(grep -E '^SKIPPED ' "$log" | sort -u || true)
  ignored=$(ignored_tests "$log")
  awk -v label="$label" -v skips="$(grep -c . <<<"$skips" || true)" \
    '/^test result:/ { p += $4; f += $6; i += $8; s += $12 }
    END { printf "%-36s %4d passed, %d failed, %d ignored, %d filtered out, %d skipped at run time\n",
      label, p, f, i, s, skips }' "$log"
  [ -z "$skips" ] || sed 's/^/    /' <<<"$skips"
  [ -z "$ignored" ] || sed 's/^/    /' <<<"$ignored"
  rm -f "$log"
}

# The tests a libtest log reports ignored, one `IGNORED name: why` line each (`why` is the
# attribute's reason; a doc test's `ignore` block has none).
ignored_tests() {
  sed -n -E 's/^test (.*) \.\.\. ignored(, (.*))?$/IGNORED \1: \3/p' "$1" | sed 's/: $//' | sort -u
}

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# Installs the Debian packages a lane needs, if any is missing (quietly; apt-get only exists on
# the Linux machines, where these lanes run).
need_packages() {
  local missing=() package
  # Installed, not merely known: `dpkg -s` also succeeds for a removed package whose
  # configuration files remain (it once let a lane run without its cross compiler).
  for package in "$@"; do
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null)" = installed ] || missing+=("$package")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  as_root apt-get update -qq || echo "apt-get update reported errors; trying the install anyway"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}

# Nightly comes with this machine and is installed by the hosted jobs that need it (rustup
# cannot fetch toolchains here): without it the sanitizer and fuzzing lanes say SKIPPED.
have_nightly() {
  cargo +nightly --version >/dev/null 2>&1
}

# "v2,secure" -> "mimalloc-tests/v2,mimalloc-tests/secure": the tests crate forwards each
# feature to the crates below it.
test_features() {
  local features=$1
  [ -n "$features" ] && echo "mimalloc-tests/${features//,/,mimalloc-tests/}"
}
