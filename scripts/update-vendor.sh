#!/usr/bin/env bash
# Refresh or verify the vendored mimalloc sources under vendor/mimalloc/.
#
#   scripts/update-vendor.sh 0.1.49    download libmimalloc-sys 0.1.49 with cargo, copy its
#                                      c_src/mimalloc/{v2,v3} into vendor/mimalloc/ unmodified,
#                                      and rewrite the provenance record in vendor/README.md
#   scripts/update-vendor.sh --check   verify every vendored file against vendor/README.md
#                                      (no missing, extra or changed file); exit 1 otherwise
#
# The sources come from the crates.io package through cargo, the only channel this project
# trusts for third-party code: cargo checks the package against the registry's checksum, and
# we record that checksum next to a SHA-256 of every file we copied.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
vendor="$root/vendor"
record="$vendor/README.md"
package=libmimalloc-sys

# The checksum list lives between these markers in vendor/README.md.
begin='<!-- checksums:begin -->'
end='<!-- checksums:end -->'

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

update() {
  local version=$1
  # global: the EXIT trap runs after this function returns
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT

  # A throw-away package that depends on exactly this version; `cargo vendor` downloads it
  # through the ordinary registry client, verifies it, and unpacks it.
  mkdir -p "$scratch/fetch/src"
  cat >"$scratch/fetch/Cargo.toml" <<EOF
[package]
name = "fetch-mimalloc-sources"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
$package = { version = "=$version", default-features = false }
EOF
  : >"$scratch/fetch/src/lib.rs"
  (cd "$scratch/fetch" && cargo generate-lockfile --quiet && cargo vendor --quiet --versioned-dirs "$scratch/crates" >/dev/null)

  local unpacked="$scratch/crates/$package-$version"
  local crate_sum
  crate_sum=$(sed -n "/^name = \"$package\"\$/,/^checksum/p" "$scratch/fetch/Cargo.lock" | sed -n 's/^checksum = "\(.*\)"$/\1/p')
  [ -n "$crate_sum" ] || { echo "no registry checksum for $package $version in the lockfile" >&2; exit 1; }

  local v3 v2
  v3=$(sed -n 's/^#define MI_MALLOC_VERSION \([0-9]*\).*/\1/p' "$unpacked/c_src/mimalloc/v3/include/mimalloc.h")
  v2=$(sed -n 's/^#define MI_MALLOC_VERSION \([0-9]*\).*/\1/p' "$unpacked/c_src/mimalloc/v2/include/mimalloc.h")
  dotted() { echo "$(($1 / 10000)).$(($1 / 100 % 100)).$(($1 % 100))"; }

  rm -rf "$vendor/mimalloc"
  mkdir -p "$vendor/mimalloc"
  cp -R "$unpacked/c_src/mimalloc/v3" "$unpacked/c_src/mimalloc/v2" "$vendor/mimalloc/"

  {
    cat <<EOF
# Vendored third-party sources

\`mimalloc/\` holds the C sources of [mimalloc](https://github.com/microsoft/mimalloc) (MIT licence, see
\`mimalloc/v3/LICENSE\` and \`mimalloc/v2/LICENSE\`), copied unmodified. Nothing in this directory is
written or edited by hand: \`scripts/update-vendor.sh\` writes it, and \`scripts/update-vendor.sh --check\`
(run by \`.ci/run\`) fails if any file differs from the record below, or if a file was added.

## Provenance

| directory       | mimalloc | obtained from |
|-----------------|----------|---------------|
| \`mimalloc/v3/\` | $(dotted "$v3") | crates.io package \`$package\` $version, \`c_src/mimalloc/v3/\` |
| \`mimalloc/v2/\` | $(dotted "$v2") | crates.io package \`$package\` $version, \`c_src/mimalloc/v2/\` |

- Downloaded with \`cargo vendor\` (cargo verifies the package against the registry index). \`cargo vendor\`
  leaves out the package's \`.gitignore\` and \`.gitattributes\` files, which would otherwise change how git
  treats this tree; the top-level \`.gitattributes\` keeps git from converting line endings here, so the
  checksums hold on every OS.
- SHA-256 of the package \`$package-$version.crate\`, as published in the crates.io index: \`$crate_sum\`
- Refreshed on $(date -u +%Y-%m-%d) by \`scripts/update-vendor.sh $version\`.

## Updating

\`\`\`sh
scripts/update-vendor.sh <libmimalloc-sys version>   # replaces mimalloc/ and this record
scripts/gen-bindings.sh                               # regenerates mimalloc-sys/src/bindings/
cargo test --workspace                                # and the rest of .ci/run
\`\`\`

Review the diff of \`mimalloc/\` like any other change: it is the code every allocation runs.

## Checksums (SHA-256 of every file, relative to this directory)

$begin
EOF
    (cd "$vendor" && list_files | xargs -d '\n' sha256sum)
    echo "$end"
  } >"$record"
  echo "vendored mimalloc $(dotted "$v3") and $(dotted "$v2") from $package $version ($(list_files | wc -l) files)"
}

case "${1:-}" in
  --check) check ;;
  "" | -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  *) update "$1" ;;
esac
