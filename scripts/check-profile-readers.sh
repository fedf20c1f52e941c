#!/usr/bin/env bash
# The worked example's heap profiles, read by this workspace's reader and by pprof's own:
#
#   scripts/check-profile-readers.sh
#
# 1. `mimalloc-prof` on the protobuf snapshot names the two functions that keep memory as the
#    top in-use sites, the churning one as the top allocated site, and writes the flame graph.
# 2. Go's pprof (`go tool pprof`, Debian's golang-go) decodes the same file: the four sampled
#    totals it reads equal those mimalloc-prof reads.
# 3. gperftools' pprof (Debian's google-perftools) reads the text snapshot: its in-use total
#    equals the one in the file's header.
# Needs golang-go and google-perftools (.ci/run's lane installs them).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=target/known-profile
rm -rf "$out"
cargo build --release --quiet -p mimalloc-prof --example known_profile --bin mimalloc-prof
example=target/release/examples/known_profile
pb=$("$example" "$out/pb")
heap=$("$example" "$out/text" text)

report=$(target/release/mimalloc-prof "$pb" --top 3)
echo "$report"
top_inuse=$(echo "$report" | sed -n '/^top 3 by in-use/,/^$/p' | awk 'NR>2 {print $NF}' | head -2 | sort | tr '\n' ' ')
[ "$top_inuse" = "known_profile::keeps_48_mib known_profile::keeps_8_mib " ] ||
  { echo "mimalloc-prof: top in-use sites are '$top_inuse'" >&2; exit 1; }
top_alloc=$(echo "$report" | sed -n '/^top 3 by allocated/,/^$/p' | awk 'NR==3 {print $NF}')
[ "$top_alloc" = known_profile::churns_200_mib ] ||
  { echo "mimalloc-prof: top allocated site is '$top_alloc'" >&2; exit 1; }
grep -q keeps_48_mib "$pb.svg" || { echo "the flame graph does not name keeps_48_mib" >&2; exit 1; }

ours=$(echo "$report" | sed -n 's/^sampled.*: in use \([0-9]*\) bytes in \([0-9]*\) objects, allocated \([0-9]*\) bytes in \([0-9]*\) objects$/\4 \3 \2 \1/p')
# -raw prints each sample as "alloc_objects alloc_bytes inuse_objects inuse_bytes: locations".
go=$(HOME=${HOME:-/tmp} go tool pprof -raw -symbolize=none "$pb" |
  awk '/^Samples:/ {on=1; next} /^Locations/ {on=0} on && /:/ {sub(/:.*/, ""); a+=$1; b+=$2; c+=$3; d+=$4} END {print a, b, c, d}')
echo "sampled totals (alloc objects, alloc bytes, in-use objects, in-use bytes): mimalloc-prof $ours, go tool pprof $go"
[ -n "$ours" ] && [ "$ours" = "$go" ] || { echo "go tool pprof reads other figures than mimalloc-prof" >&2; exit 1; }

header=$(head -1 "$heap")
inuse_bytes=$(echo "$header" | sed -n 's/^heap profile: *[0-9]*: *\([0-9]*\) .*/\1/p')
total=$(google-pprof --text --inuse_space "$example" "$heap" 2>/dev/null | sed -n 's/^Total: \([0-9.]*\) MB$/\1/p')
expected=$(awk -v b="$inuse_bytes" 'BEGIN {printf "%.1f", b / 1048576}')
echo "text snapshot: header says $inuse_bytes bytes in use; google-pprof's total: $total MB"
[ "$total" = "$expected" ] || { echo "google-pprof reads $total MB, the header says $expected" >&2; exit 1; }

# Neither of pprof's own tools symbolizes these frames: mimalloc 3.6.0 writes no file offsets
# into its protobuf mappings, so Go's pprof cannot place a position-independent executable's
# frames in the file, and gperftools' pprof assumes each segment's file offset is its address.
echo "SKIPPED symbolization by go tool pprof and google-pprof: mimalloc 3.6.0's protobuf mappings have no file offsets, and google-pprof assumes segment addresses equal file offsets (mimalloc-prof symbolizes; see docs/profiling.md)"
