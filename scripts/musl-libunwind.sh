#!/usr/bin/env bash
# Builds LLVM's libunwind for x86_64-unknown-linux-musl from the copy in nightly's rust-src, the
# one Rust's own musl target ships prebuilt (its "self-contained" objects), which a std built by
# `-Zbuild-std` lacks: static musl programs link it for unwinding and backtraces. C and assembly
# with musl-gcc, the three C++ files with g++ against musl's headers only (no C++ library: the
# code uses none). Prints the directory that holds libunwind.a.
#
#   scripts/musl-libunwind.sh OUT_DIR
set -euo pipefail
out=${1:?usage: scripts/musl-libunwind.sh OUT_DIR}
src="$(rustc +nightly --print sysroot)/lib/rustlib/src/rust/src/llvm-project/libunwind"
[ -d "$src/src" ] || { echo "no libunwind sources in nightly's rust-src ($src)" >&2; exit 1; }
musl_include=/usr/include/x86_64-linux-musl
mkdir -p "$out/obj"
flags=(-O2 -fPIC -funwind-tables -fvisibility=hidden -D_LIBUNWIND_IS_NATIVE_ONLY -DNDEBUG -I "$src/include")
for file in UnwindLevel1.c UnwindLevel1-gcc-ext.c Unwind-sjlj.c; do
  musl-gcc "${flags[@]}" -std=c99 -c "$src/src/$file" -o "$out/obj/$file.o"
done
for file in UnwindRegistersRestore.S UnwindRegistersSave.S; do
  musl-gcc "${flags[@]}" -c "$src/src/$file" -o "$out/obj/$file.o"
done
for file in libunwind.cpp Unwind-EHABI.cpp Unwind-seh.cpp; do
  g++ "${flags[@]}" -std=c++17 -fno-exceptions -fno-rtti -nostdinc++ -nostdinc \
    -isystem "$musl_include" -isystem "$(gcc -print-file-name=include)" \
    -c "$src/src/$file" -o "$out/obj/$file.o"
done
rm -f "$out/libunwind.a"
ar rcs "$out/libunwind.a" "$out"/obj/*.o
echo "$out"
