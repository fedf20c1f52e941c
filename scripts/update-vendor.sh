#!/usr/bin/env bash
# Refresh or verify the vendored mimalloc sources under vendor/mimalloc/.
#
#   scripts/update-vendor.sh v3=PACKAGE@VERSION:PATH v2=PACKAGE@VERSION:PATH
#        download each crates.io PACKAGE at exactly VERSION with cargo, copy the part of its
#        PATH that is mimalloc's source (see `parts` below) into vendor/mimalloc/v3 and v2
#        unmodified, check its version strings, and rewrite the provenance record in
#        vendor/README.md. Example (the current sources):
#        scripts/update-vendor.sh v3=libmimalloc-sys2@0.1.65:c_src/mimalloc3 \
#                                 v2=libmimalloc-sys2@0.1.65:c_src/mimalloc
#   scripts/update-vendor.sh --check
#        verify every vendored file against vendor/README.md (no missing, extra or changed
#        file); exit 1 otherwise
#
# The sources come from crates.io packages through cargo, the only channel this project trusts
# for third-party code: cargo checks each package against the registry's checksum, and we record
# that checksum next to a SHA-256 of every file we copied. Only the record between the markers
# in vendor/README.md is written here; the review notes around it are written by the person
# who reviewed the update.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
vendor="$root/vendor"
record="$vendor/README.md"

# What is copied from a package's mimalloc directory: the licence, upstream's readme (release
# notes), the CMake build (the reference for every option build/plan.rs decides) and the
# sources. Left out: prebuilt Windows binaries (bin/), tests, docs, IDE projects, CI files,
# which nothing here builds and which no reviewer should have to audit.
parts=(LICENSE readme.md CMakeLists.txt cmake include src)

begin='<!-- checksums:begin -->'
end='<!-- checksums:end -->'
prov_begin='<!-- provenance:begin -->'
prov_end='<!-- provenance:end -->'

list_files() { # every vendored file, relative to vendor/, sorted, as the record lists them
  (cd "$vendor" && find mimalloc -type f | LC_ALL=C sort)
}

recorded_sums() {
  sed -n "/^$begin\$/,/^$end\$/p" "$record" | grep -E '^[0-9a-f]{64}  ' || true
}

check() {
  [ -f "$record" ] || { echo "vendor check: $record is missing" >&2; exit 1; }
  local sums
  sums=$(recorded_sums)
  [ -n "$sums" ] || { echo "vendor check: no checksums recorded in $record" >&2; exit 1; }
  local status=0
  if ! (cd "$vendor" && printf '%s\n' "$sums" | sha256sum --check --quiet --strict -); then
    echo "vendor check: a vendored file differs from its recorded checksum (see above)" >&2
    status=1
  fi
  local extra
  extra=$(comm -13 <(printf '%s\n' "$sums" | cut -c67- | LC_ALL=C sort) <(list_files))
  if [ -n "$extra" ]; then
    printf 'vendor check: file not in the provenance record: %s\n' $extra >&2
    status=1
  fi
  if [ "$status" -eq 0 ]; then
    echo "vendor check: $(printf '%s\n' "$sums" | wc -l) files match vendor/README.md"
  fi
  exit "$status"
}

# fetch PACKAGE VERSION DEST: unpack the package into DEST/PACKAGE-VERSION and print the
# registry checksum of its .crate file.
fetch() {
  local package=$1 version=$2 dest=$3 work="$3/fetch-$1-$2"
  mkdir -p "$work/src"
  cat >"$work/Cargo.toml" <<EOF
[package]
name = "fetch-mimalloc-sources"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
$package = { version = "=$version", default-features = false }
EOF
  : >"$work/src/lib.rs"
  # `cargo vendor` downloads through the ordinary registry client and verifies the package.
  (cd "$work" && cargo generate-lockfile --quiet && cargo vendor --quiet --versioned-dirs "$dest/crates" >/dev/null)
  local sum
  sum=$(sed -n "/^name = \"$package\"\$/,/^checksum/p" "$work/Cargo.lock" | sed -n 's/^checksum = "\(.*\)"$/\1/p')
  [ -n "$sum" ] || { echo "no registry checksum for $package $version in the lockfile" >&2; exit 1; }
  echo "$sum"
}

dotted() { echo "$(($1 / 10000)).$(($1 / 100 % 100)).$(($1 % 100))"; }

# The version a source tree says it is, checked three ways: the header, the CMake package
# version and the readme's latest-release line must agree, and match the directory (v3 or v2).
tree_version() {
  local dir=$1 tree=$2 header cmake
  header=$(sed -n 's/^#define MI_MALLOC_VERSION \([0-9]*\).*/\1/p' "$tree/include/mimalloc.h")
  [ -n "$header" ] || { echo "$tree: no MI_MALLOC_VERSION in include/mimalloc.h" >&2; exit 1; }
  header=$(dotted "$header")
  cmake=$(sed -n 's/^set(mi_version_\(major\|minor\|patch\) \([0-9]*\))/\2/p' "$tree/cmake/mimalloc-config-version.cmake" | paste -sd.)
  if [ "$cmake" != "$header" ]; then
    echo "$tree: mimalloc.h says $header, cmake/mimalloc-config-version.cmake says $cmake" >&2
    exit 1
  fi
  if ! grep -q "\`v$header\`" "$tree/readme.md"; then
    echo "$tree: readme.md has no release note for v$header" >&2
    exit 1
  fi
  if [ "${header%%.*}" != "${dir#v}" ]; then
    echo "$tree is mimalloc $header, which does not belong in vendor/mimalloc/$dir" >&2
    exit 1
  fi
  echo "$header"
}

# Traces a repackager's edits tend to leave; upstream's sources contain none of these names.
no_packager_traces() {
  local tree=$1 hits part
  for part in "${parts[@]}"; do
    hits+=$(grep -rIl -E '\<(napi-rs|napi_|mimalloc-safe|mimalloc_safe|libmimalloc-sys2?|purpleprotocol)\>' "$tree/$part" || true)
  done
  if [ -n "$hits" ]; then
    echo "$tree: files mention a repackager, review them before vendoring:" >&2
    echo "$hits" >&2
    exit 1
  fi
}

rows=()
done_list=()
copy_one() { # DIR=PACKAGE@VERSION:PATH
  local spec=$1 dir package version path
  dir=${spec%%=*}; spec=${spec#*=}
  package=${spec%%@*}; spec=${spec#*@}
  version=${spec%%:*}; path=${spec#*:}
  case "$dir" in v2 | v3) ;; *) echo "unknown directory '$dir' (v3 or v2)" >&2; exit 2 ;; esac
  [ -n "$package" ] && [ -n "$version" ] && [ -n "$path" ] && [ "$path" != "$version" ] ||
    { echo "expected $dir=PACKAGE@VERSION:PATH, got '$1'" >&2; exit 2; }

  local sum tree="$scratch/crates/$package-$version/$path" mi
  sum=$(fetch "$package" "$version" "$scratch")
  [ -d "$tree" ] || { echo "$package $version has no directory $path" >&2; exit 1; }
  mi=$(tree_version "$dir" "$tree")
  no_packager_traces "$tree"

  rm -rf "${vendor:?}/mimalloc/$dir"
  mkdir -p "$vendor/mimalloc/$dir"
  local part
  for part in "${parts[@]}"; do
    [ -e "$tree/$part" ] || { echo "$package $version: $path/$part is missing" >&2; exit 1; }
    cp -R "$tree/$part" "$vendor/mimalloc/$dir/"
  done
  done_list+=("$dir: mimalloc $mi from $package $version")
  rows+=("| \`mimalloc/$dir/\` | $mi | \`$package\` $version | \`$path/\` | \`$sum\` |")
}

provenance() { # the machine-written record, between the provenance markers
  echo "$prov_begin"
  echo "| directory | mimalloc | crates.io package | path in the package | SHA-256 of the \`.crate\` (registry index) |"
  echo "|-----------|----------|-------------------|---------------------|---------------------------------------------|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Copied from each path: \`${parts[*]}\`. Refreshed on $(date -u +%Y-%m-%d) by"
  echo "\`scripts/update-vendor.sh $*\`."
  echo "$prov_end"
}

update() {
  [ $# -eq 2 ] || { echo "give both directories: v3=... v2=..." >&2; exit 2; }
  [ -f "$record" ] && grep -q "^$prov_begin\$" "$record" ||
    { echo "$record has no $prov_begin marker to write the record under" >&2; exit 1; }
  # global: the EXIT trap runs after this function returns
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  copy_one "$1"
  copy_one "$2"

  local prov sums
  prov=$(provenance "$@")
  sums=$(printf '%s\n' "$begin"; (cd "$vendor" && list_files | xargs -d '\n' sha256sum); echo "$end")
  # Replace the two machine-written blocks, keep every hand-written line around them.
  PROV="$prov" SUMS="$sums" python3 - "$record" <<'EOF'
import os, re, sys
path = sys.argv[1]
text = open(path).read()
for name, key in (("provenance", "PROV"), ("checksums", "SUMS")):
    pattern = re.compile(r"<!-- %s:begin -->.*?<!-- %s:end -->" % (name, name), re.S)
    text, n = pattern.subn(lambda _: os.environ[key], text)
    if n != 1:
        sys.exit("%s: expected one %s block, found %d" % (path, name, n))
open(path, "w").write(text)
EOF
  echo "vendored ${done_list[*]} ($(list_files | wc -l) files)"
}

case "${1:-}" in
  --check) check ;;
  "" | -h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  *) update "$@" ;;
esac
