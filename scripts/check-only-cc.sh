#!/bin/sh
# The C compiler for `bash .ci/run lane compile-only`: the host's gcc, given the arguments cc-rs
# passes for a macOS or FreeBSD target without the flags only Apple's clang or a cross clang
# knows (-arch X, -mmacosx-version-min=, --target=). The objects it makes are the host's and are
# never linked: the lane checks the Rust side of targets nothing here runs, and the C sources
# are checked by the hosted jobs that build them.
set -eu
for arg in "$@"; do
  shift
  if [ "${drop_next:-}" = 1 ]; then drop_next=; continue; fi
  case "$arg" in
    -arch) drop_next=1 ;;
    -mmacosx-version-min=* | --target=*) ;;
    *) set -- "$@" "$arg" ;;
  esac
done
exec gcc "$@"
