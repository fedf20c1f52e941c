#!/usr/bin/env bash
# Regenerate (or, with --check, verify) the committed bindings mimalloc-sys/src/bindings/v{3,2}.rs.
#
#   scripts/gen-bindings.sh           rewrite both files from the vendored headers
#   scripts/gen-bindings.sh --check   fail if a committed file differs from a fresh generation
#
# Both run mimalloc-sys's own build script with the `bindgen` feature (one generator, the one
# users get with that feature), for x86_64-unknown-linux-gnu, and take its output from OUT_DIR.
# Needs libclang (Debian: libclang-dev).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
mode=${1:-write}
target=x86_64-unknown-linux-gnu
status=0

for version in v3 v2; do
  features=bindgen
  [ "$version" = v2 ] && features=bindgen,v2
  out_dir=$(cargo build --quiet -p mimalloc-sys --features "$features" --target "$target" \
      --target-dir target/bindgen --message-format=json |
    python3 -c '
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("reason") == "build-script-executed" and msg["package_id"].find("mimalloc-sys") >= 0:
        print(msg["out_dir"])
')
  fresh="$out_dir/bindings.rs"
  # Every function the bindings declare must exist in the library, or using it fails to link.
  declared=$(grep -o 'pub fn mi_[a-z0-9_]*' "$fresh" | cut -d' ' -f3 | sort -u)
  defined=$(nm -g --defined-only "$out_dir/libmimalloc.a" | awk '{print $3}' | sort -u)
  missing=$(comm -23 <(echo "$declared") <(echo "$defined"))
  if [ -n "$missing" ]; then
    echo "bindings $version: declared but not defined by the library: $missing" >&2
    echo "add them to declared_but_undefined() in mimalloc-sys/build/bindings.rs" >&2
    status=1
  fi
  committed="mimalloc-sys/src/bindings/$version.rs"
  if [ "$mode" = --check ]; then
    if diff -u "$committed" "$fresh" >"target/bindgen/$version.diff"; then
      echo "bindings $version: up to date ($committed)"
    else
      echo "bindings $version: $committed differs from a fresh generation:" >&2
      head -40 "target/bindgen/$version.diff" >&2
      echo "run scripts/gen-bindings.sh and commit the result" >&2
      status=1
    fi
  else
    cp "$fresh" "$committed"
    echo "bindings $version: wrote $committed ($(wc -l <"$committed") lines)"
  fi
done
exit "$status"
