#!/usr/bin/env bash
# The worked example's heap profiles, read by this workspace's reader and by pprof's own, from a
# position-independent executable and from a shared library loaded by a host not on mimalloc:
#
#   scripts/check-profile-readers.sh
#
# Readers, each of which must name the two functions that keep memory, 6:1 by construction
# (within the sampling error: 2.5 to 20 to 1), holding nearly all of the in-use bytes:
# - `mimalloc-prof` (this workspace), protobuf;
# - `go tool pprof` (the Go distribution's, Debian's golang-go), both formats: it takes names
#   from DWARF only, so it reads a build with `debug = "line-tables-only"`;
# - the standalone `pprof` (github.com/google/pprof, built from Debian's
#   golang-github-google-pprof-dev), both formats, from a release build without debug info;
# - gperftools' `pprof` (Debian's google-perftools), the text format.
# Plus: the sampled totals Go's pprof decodes equal mimalloc-prof's; gperftools' in-use total
# equals the text header's; mimalloc-prof writes the flame graph.
# Then the same two sites named in what a program gets with no profiler code, from
# `MIMALLOC_PROFILE` alone (completed, and symbolized unless MIMALLOC_PROFILE_SYMBOLIZE=0), in
# its final and its interval snapshots; symbolized snapshots read with the binary deleted; and
# examples/profile-server's `/debug/pprof/heap` read by `go tool pprof` over HTTP, with its
# flame graph drawn by the running process.
# Needs those packages and python3 (the library's host); `.ci/run lane profile` installs them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=target/known-profile
rm -rf "$out"
export HOME=${HOME:-/tmp}

# The readers' reports: `-top` (Go's) and `--text` (gperftools') print the same columns,
# "flat flat% sum% cum cum% name...".
go_pprof() { go tool pprof -top -unit=B "$@" 2>&1; }
pprof() { target/tools/pprof -top -unit=B "$@" 2>&1; }
gperftools_pprof() { google-pprof --text "$@" 2>/dev/null; }

# check_sites WHO BIG SMALL REPORT: the inclusive in-use of the functions named BIG and SMALL
# (by any of the readers' spellings: bare, with their path, with a symbol hash, "(inline)").
check_sites() {
  local who=$1 big=$2 small=$3 report=$4 verdict
  verdict=$(echo "$report" | awk -v big="$big" -v small="$small" '
    function bytes(s) { sub(/[A-Za-z]+$/, "", s); return s + 0 }
    function site(name, f) { return name ~ ("(^|::)" f "(::h[0-9a-f]+)?$") }
    NF >= 6 && $5 ~ /%$/ {
      if (site($6, big) && bytes($4) > b) { b = bytes($4); bp = $5 + 0 }
      if (site($6, small) && bytes($4) > s) { s = bytes($4); sp = $5 + 0 }
    }
    END {
      if (b == 0 || s == 0) { print "does not name both"; exit }
      r = b / s
      if (r < 2.5 || r > 20) { printf "gives them %.1f : 1\n", r; exit }
      if (bp + sp < 95) { printf "gives them only %.1f%% of the in-use bytes\n", bp + sp; exit }
      printf "ok %.1f : 1, %.1f%% of the in-use bytes\n", r, bp + sp
    }')
  echo "$who: $big and $small: $verdict"
  [ "${verdict%% *}" = ok ] || { echo "$report" | head -20 >&2; exit 1; }
}

[ -x target/tools/pprof ] || {
  # Debian ships the standalone pprof's source only; GOPATH mode builds it offline.
  mkdir -p target/tools
  GO111MODULE=off GOPATH=/usr/share/gocode go build -o "$PWD/target/tools/pprof" github.com/google/pprof
}

cargo build --release --quiet -p mimalloc-prof --example known_profile --bin mimalloc-prof
example=target/release/examples/known_profile
pb=$("$example" "$out/pb")
heap=$("$example" "$out/text" text)

# mimalloc_prof_sites PROFILE: mimalloc-prof's top sites, by their full names (the allocator's
# own frames left out), and its flame graph.
mimalloc_prof_sites() {
  local top_inuse top_alloc
  report=$(target/release/mimalloc-prof "$1" --top 3)
  echo "$report"
  top_inuse=$(echo "$report" | sed -n '/^top 3 by in-use/,/^$/p' | awk 'NR>2 {print $NF}' | head -2 | sort | tr '\n' ' ')
  [ "$top_inuse" = "known_profile::keeps_48_mib known_profile::keeps_8_mib " ] ||
    { echo "mimalloc-prof: top in-use sites are '$top_inuse'" >&2; exit 1; }
  top_alloc=$(echo "$report" | sed -n '/^top 3 by allocated/,/^$/p' | awk 'NR==3 {print $NF}')
  [ "$top_alloc" = known_profile::churns_200_mib ] ||
    { echo "mimalloc-prof: top allocated site is '$top_alloc'" >&2; exit 1; }
  grep -q keeps_48_mib "$1.svg" || { echo "the flame graph does not name keeps_48_mib" >&2; exit 1; }
}
mimalloc_prof_sites "$pb"

ours=$(echo "$report" | sed -n 's/^sampled.*: in use \([0-9]*\) bytes in \([0-9]*\) objects, allocated \([0-9]*\) bytes in \([0-9]*\) objects$/\4 \3 \2 \1/p')
# -raw prints each sample as "alloc_objects alloc_bytes inuse_objects inuse_bytes: locations".
go=$(go tool pprof -raw -symbolize=none "$pb" |
  awk '/^Samples:/ {on=1; next} /^Locations/ {on=0} on && /:/ {sub(/:.*/, ""); a+=$1; b+=$2; c+=$3; d+=$4} END {print a, b, c, d}')
echo "sampled totals (alloc objects, alloc bytes, in-use objects, in-use bytes): mimalloc-prof $ours, go tool pprof $go"
[ -n "$ours" ] && [ "$ours" = "$go" ] || { echo "go tool pprof reads other figures than mimalloc-prof" >&2; exit 1; }

header=$(head -1 "$heap")
inuse_bytes=$(echo "$header" | sed -n 's/^heap profile: *[0-9]*: *\([0-9]*\) .*/\1/p')
total=$(gperftools_pprof --inuse_space "$example" "$heap" | sed -n 's/^Total: \([0-9.]*\) MB$/\1/p')
expected=$(awk -v b="$inuse_bytes" 'BEGIN {printf "%.1f", b / 1048576}')
echo "text snapshot: header says $inuse_bytes bytes in use; google-pprof's total: $total MB"
[ "$total" = "$expected" ] || { echo "google-pprof reads $total MB, the header says $expected" >&2; exit 1; }

# A release build as `cargo build --release` makes it (no debug information).
check_sites "pprof, protobuf" keeps_48_mib keeps_8_mib "$(pprof "$pb")"
check_sites "pprof, text" keeps_48_mib keeps_8_mib "$(pprof "$example" "$heap")"
check_sites "google-pprof, text" keeps_48_mib keeps_8_mib "$(gperftools_pprof "$example" "$heap")"

# --- MIMALLOC_PROFILE: no profiler code in the program ----------------------------------------
zero=$out/zero-code
mkdir -p "$zero"
cp "$example" "$zero/program"
MIMALLOC_PROFILE=$zero/plain MIMALLOC_PROFILE_SYMBOLIZE=0 "$zero/program" --no-profiler
MIMALLOC_PROFILE=$zero/plain.heap "$zero/program" --no-profiler # text: unsymbolized unless asked
check_sites "pprof, MIMALLOC_PROFILE, protobuf" keeps_48_mib keeps_8_mib "$(pprof "$zero/plain.0001.pb")"
check_sites "google-pprof, MIMALLOC_PROFILE, text" keeps_48_mib keeps_8_mib \
  "$(gperftools_pprof "$zero/program" "$zero/plain.0001.heap")"
MIMALLOC_PROFILE=$zero/heap "$zero/program" --no-profiler
MIMALLOC_PROFILE=$zero/heap.heap MIMALLOC_PROFILE_SYMBOLIZE=1 "$zero/program" --no-profiler
# Interval snapshots (about every 64 MiB allocated, so several during the 256 MiB run).
MIMALLOC_PROFILE=$zero/steps MIMALLOC_PROFILE_ALLOC_INTERVAL=64m "$zero/program" --no-profiler
check_sites "go tool pprof, MIMALLOC_PROFILE, with the binary" keeps_48_mib keeps_8_mib \
  "$(go_pprof "$zero/program" "$zero/heap.0001.pb")"
rm "$zero/program"
check_sites "go tool pprof, MIMALLOC_PROFILE, no binary" keeps_48_mib keeps_8_mib \
  "$(go_pprof "$zero/heap.0001.pb")"
check_sites "pprof, MIMALLOC_PROFILE, no binary" keeps_48_mib keeps_8_mib "$(pprof "$zero/heap.0001.pb")"
check_sites "google-pprof, MIMALLOC_PROFILE, text, no binary" keeps_48_mib keeps_8_mib \
  "$(gperftools_pprof "$zero/heap.0001.heap")"
mimalloc_prof_sites "$zero/heap.0001.pb" >/dev/null
echo "mimalloc-prof, MIMALLOC_PROFILE, no binary: keeps_48_mib and keeps_8_mib: ok"
steps=$(ls "$zero"/steps.*.pb | wc -l)
[ "$steps" -ge 3 ] || { echo "MIMALLOC_PROFILE_ALLOC_INTERVAL=64m wrote $steps snapshots" >&2; exit 1; }
check_sites "go tool pprof, MIMALLOC_PROFILE interval snapshot 2 of $steps, no binary" \
  keeps_48_mib keeps_8_mib "$(go_pprof "$zero/steps.0002.pb")"

# --- examples/profile-server: /debug/pprof/heap over HTTP --------------------------------------
cargo build --release --quiet -p profile-server
cp target/release/profile-server "$zero/server"
"$zero/server" 127.0.0.1:0 >"$zero/server.url" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$zero/server.url" ] && break; sleep 0.1; done
url=$(head -1 "$zero/server.url")
# Out of the readers' reach (the profile names the path it was started from), still the running
# process's own file, which it symbolizes against.
mv "$zero/server" "$zero/server-moved"
check_sites "go tool pprof, $url, no binary" keeps_48_mib keeps_8_mib \
  "$(PPROF_TMPDIR=$zero go_pprof "$url")"
python3 -c 'import sys, urllib.request; sys.stdout.buffer.write(urllib.request.urlopen(sys.argv[1]).read())' \
  "$url.svg" >"$zero/served.svg"
grep -q keeps_48_mib "$zero/served.svg" || { echo "the served flame graph does not name keeps_48_mib" >&2; exit 1; }
echo "flame graph from the running server: names keeps_48_mib: ok"
kill $server
trap - EXIT

# Go's own pprof names functions from DWARF only; the shared library is checked from this
# build too. Its own target directory: the two builds' settings differ in every crate.
lines=target/line-tables
export CARGO_PROFILE_RELEASE_DEBUG=line-tables-only CARGO_TARGET_DIR=$lines
cargo build --release --quiet -p mimalloc-prof --example known_profile
cargo build --release --quiet -p mimalloc-test-plugin --features profile
unset CARGO_PROFILE_RELEASE_DEBUG CARGO_TARGET_DIR
example=$lines/release/examples/known_profile
pb=$("$example" "$out/lines-pb")
heap=$("$example" "$out/lines-text" text)
check_sites "go tool pprof, protobuf" keeps_48_mib keeps_8_mib "$(go_pprof "$pb")"
# Line tables name inlined frames without their paths (`malloc`): mimalloc-prof must still tell
# the allocator's frames from the program's.
mimalloc_prof_sites "$pb" >/dev/null
echo "mimalloc-prof, line tables: keeps_48_mib and keeps_8_mib: ok"
check_sites "go tool pprof, text" keeps_48_mib keeps_8_mib "$(go_pprof "$example" "$heap")"

# The library, loaded by Python (whose allocations are glibc's); its profile names Python's
# executable first.
library=$PWD/$lines/release/libmimalloc_test_plugin.so
host=$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')
in_host() {
  python3 -c 'import ctypes, sys; sys.exit(ctypes.CDLL(sys.argv[1]).plugin_profile(sys.argv[2].encode(), int(sys.argv[3])))' \
    "$library" "$1" "$2"
}
pb=$(in_host "$out/library-pb" 0)
heap=$(in_host "$out/library-text" 1)
for reader in go_pprof pprof; do
  check_sites "${reader/_/ tool }, library, protobuf" plugin_keeps_48_mib plugin_keeps_8_mib "$($reader "$pb")"
done
check_sites "google-pprof, library, text" plugin_keeps_48_mib plugin_keeps_8_mib "$(gperftools_pprof "$host" "$heap")"
report=$(target/release/mimalloc-prof "$pb" --top 100)
check_sites "mimalloc-prof, library" plugin_keeps_48_mib plugin_keeps_8_mib \
  "$(echo "$report" | sed -n '/^top 100 by in-use/,/^$/p' | awk '
    BEGIN { unit["B"] = 1; unit["KiB"] = 1024; unit["MiB"] = 1048576; unit["GiB"] = 1073741824 }
    NR > 2 && NF >= 7 { printf "- - - %d %s %s\n", $4 * unit[$5], $6, $NF }')"
