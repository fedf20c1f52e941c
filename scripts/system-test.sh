#!/usr/bin/env bash
# Run test binaries built for an ARM Linux target inside one boot of a full-system emulator
# (qemu-system, TCG), with the guest's console log split into one log per binary.
#
#   scripts/system-test.sh TARGET WS OUTDIR EXES_FILE [HARNESS_ARG ...]
#
#   TARGET     aarch64-unknown-linux-gnu or armv7-unknown-linux-gnueabihf
#   WS         the workspace the tests read files from (scripts/msrv-workspace.sh's copy); the
#              guest holds it, the binaries and MIMALLOC_TEST_PLUGIN at their host paths, so
#              paths baked in at build time, current_exe() and the plugin's path all hold
#   OUTDIR     gets NAME.log (the binary's output), NAME.status (its exit status, 124: timed
#              out) and NAME.retried (one line per retry) for each binary, and console.log
#   EXES_FILE  the test binaries, one path a line; NAME is the file name of each
#   HARNESS_ARG  passed to every binary (no spaces: the guest's shell splits them)
#
# Used by scripts/cross-test.sh, which counts the results like those of its native runs.
# qemu-user, the alternative, hangs on this machine at a guest's second thread; a real kernel
# in the guest runs threads, fork+exec and everything the tests ask of the OS.
# The binaries stay dynamically linked (the cross toolchain's glibc goes into the guest), so
# that tests/tests/plugin.rs can dlopen() its library as it does natively.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=${1:?usage: scripts/system-test.sh TARGET WS OUTDIR EXES_FILE [HARNESS_ARG ...]}
ws=${2:?} outdir=${3:?} exes_file=${4:?}
shift 4
harness_args=("$@")
cache="$root/target/cross/system"
binary_timeout=900 # seconds per test binary, as natively: the guest's watchdog kills it
boot_timeout=3000  # seconds for the whole boot: a guest that stops answering ends here

log() { printf '==> %s\n' "$*"; }

case "$target" in
  aarch64-unknown-linux-gnu)
    arch=arm64 triple=aarch64-linux-gnu kernel_package=linux-image-cloud-arm64
    # `max` ran this suite in half the time of cortex-a72 or neoverse-n1 here; without pointer
    # authentication, whose emulation costs every function call of the guest.
    qemu=(qemu-system-aarch64 -M virt -cpu max,pauth=off) ;;
  armv7-unknown-linux-gnueabihf)
    # LPAE: the guest gets more than the 768 MiB the plain armmp kernel can map.
    arch=armhf triple=arm-linux-gnueabihf kernel_package=linux-image-armmp-lpae
    qemu=(qemu-system-arm -M virt -cpu cortex-a15) ;;
  *) echo "system-test.sh: no full-system setup for $target" >&2; exit 2 ;;
esac
# Two virtual CPUs, each a host thread with multi-threaded TCG: the tests' threads run in
# parallel, and the harness runs two tests at once. No network: no device ROM to look for.
qemu+=(-smp 2 -accel tcg,thread=multi -m 3072 -nographic -nic none -no-reboot)

install_host_packages() {
  local missing=() p
  for p in qemu-system-arm cpio "binutils-$triple"; do
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" = installed ] || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  log "installing ${missing[*]}"
  apt-get update -qq || log "apt-get update reported errors; trying the install anyway"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The guest's kernel and busybox come from Debian's packages for the target, unpacked, not
# installed (a foreign kernel package would run the host's boot-loader hooks). The kernel
# package is whatever version the metapackage depends on today.
fetch_guest_parts() {
  local dir="$cache/$arch" kernel_version
  kernel_version=$(apt-cache depends "$kernel_package:$arch" | sed -n 's/^ *Depends: \(linux-image-[^:]*\).*/\1/p' | head -1)
  [ -n "$kernel_version" ] || { echo "no kernel behind $kernel_package:$arch" >&2; exit 1; }
  if [ ! -f "$dir/$kernel_version.done" ]; then
    log "fetching $kernel_version:$arch and busybox-static:$arch"
    rm -rf "$dir" && mkdir -p "$dir/debs" "$dir/unpacked"
    # apt-get download writes as the invoking user; the cache belongs to whoever runs this.
    (cd "$dir/debs" && apt-get download -qq "$kernel_version:$arch" "busybox-static:$arch" 2>&1 |
      grep -v 'unsandboxed' || true)
    local deb
    for deb in "$dir"/debs/*.deb; do dpkg-deb -x "$deb" "$dir/unpacked"; done
    touch "$dir/$kernel_version.done"
  fi
  kernel=$(ls "$dir"/unpacked/boot/vmlinuz-* | head -1)
  busybox="$dir/unpacked/bin/busybox"
}

# The guest's PID 1: mounts what the tests use and runs the binaries, two at a time (a binary
# whose last test runs alone would leave the second CPU idle), each under a watchdog with its
# output in a file; prints each binary's output between markers once it is done, one binary
# at a time, and powers off. libtest 1.63's channel race (see run_binary in cross-test.sh) is
# retried here, the same way, with one test thread.
write_init() {
  local file=$1
  cat >"$file" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
# No tmpfs on /tmp: the initramfs is writable already, and the binaries and workspace sit at
# their host paths, which are under /tmp when the checkout is (a mount there would hide them).
mount -t proc proc /proc && mount -t sysfs sysfs /sys && mount -t devtmpfs devtmpfs /dev
. /guest.conf
cd "$WS"

run_once() { # exe args...: the exit status in $status, 124 if the watchdog killed it
  rm -f "$flag"
  "$@" >"$out" 2>&1 </dev/null &
  pid=$!
  (sleep "$TIMEOUT"; touch "$flag"; kill -KILL "$pid") 2>/dev/null &
  watchdog=$!
  status=0
  wait "$pid" || status=$?
  kill "$watchdog" 2>/dev/null
  [ -e "$flag" ] && status=124
  return 0
}

channel_race() {
  [ "$status" -ne 0 ] && grep -q 'sync/mpsc/mpsc_queue.rs' "$out" && ! grep -qE '^test .* FAILED$' "$out"
}

run_binary() { # exe: prints its block to the console
  name=${1##*/} out=/tmp/out.${1##*/} flag=/tmp/timed-out.${1##*/} block=/tmp/block.${1##*/}
  : >"$block"
  run_once "$1" $ARGS
  for attempt in 1 2; do
    if channel_race; then
      echo "RETRIED $name $attempt" >>"$block"
      run_once "$1" $RETRY_ARGS
    fi
  done
  { echo "BEGIN $name"; cat "$out"; echo; echo "EXIT $name $status"; } >>"$block"
  # busybox-static has no flock; mkdir is atomic, and the lock is held for one cat.
  until mkdir /tmp/console.lock 2>/dev/null; do sleep 1; done
  cat "$block"
  rmdir /tmp/console.lock
}

worker() { # takes each binary no other worker took (mkdir is atomic)
  while read -r exe; do
    mkdir "/tmp/claim.${exe##*/}" 2>/dev/null && run_binary "$exe"
  done </binaries
}

# By process id: PID 1 inherits the watchdogs' orphaned sleeps, which a bare wait would await.
worker &
first=$!
worker &
second=$!
wait "$first" "$second"
echo "GUEST DONE"
poweroff -f
INIT
  chmod +x "$file"
}

# Everything at its host path, the binaries without debug info (a tenth of the size; the
# harness prints no backtraces here), the target's glibc and libgcc_s in /lib.
build_initramfs() {
  local dir="$cache/$arch/root" conf exe retry_args=("${harness_args[@]}") lib
  rm -rf "$dir" && mkdir -p "$dir"/{bin,lib,proc,sys,dev,tmp}
  cp "$busybox" "$dir/bin/busybox"
  for lib in "/usr/$triple/lib/"ld-linux-*.so.* "/usr/$triple/lib/"{libc.so.6,libm.so.6,libdl.so.2,libpthread.so.0,librt.so.1,libutil.so.1,libgcc_s.so.1}; do
    cp -L "$lib" "$dir/lib/"
  done
  mkdir -p "$dir$ws"
  (cd "$ws" && tar -cf - --exclude=./.cargo --exclude=./target .) | (cd "$dir$ws" && tar -xf -)
  while read -r exe; do
    mkdir -p "$dir$(dirname "$exe")"
    "$triple-strip" --strip-debug -o "$dir$exe" "$exe"
  done <"$exes_file"
  cp "$exes_file" "$dir/binaries"
  if [ -n "${MIMALLOC_TEST_PLUGIN:-}" ]; then
    mkdir -p "$dir$(dirname "$MIMALLOC_TEST_PLUGIN")"
    "$triple-strip" --strip-debug -o "$dir$MIMALLOC_TEST_PLUGIN" "$MIMALLOC_TEST_PLUGIN"
  fi
  [[ " ${harness_args[*]} " == *" --test-threads=1 "* ]] || retry_args+=(--test-threads=1)
  conf="$dir/guest.conf"
  {
    echo "WS='$ws' TIMEOUT=$binary_timeout"
    echo "ARGS='${harness_args[*]}' RETRY_ARGS='${retry_args[*]}'"
    echo "export PATH=/bin LD_LIBRARY_PATH=/lib HOME=/tmp RUST_BACKTRACE=0"
    echo "export MIMALLOC_TESTS_EMULATOR='${MIMALLOC_TESTS_EMULATOR:-qemu-system}'"
    [ -n "${MIMALLOC_TEST_PLUGIN:-}" ] && echo "export MIMALLOC_TEST_PLUGIN='$MIMALLOC_TEST_PLUGIN'"
    true
  } >"$conf"
  write_init "$dir/init"
  # Uncompressed: the emulated kernel would spend seconds inflating it.
  (cd "$dir" && find . | cpio -o -H newc --quiet) >"$cache/$arch/initramfs.cpio"
}

# One line per marker; the console ends its lines with CR LF.
split_console() {
  tr -d '\r' <"$outdir/console.log" | awk -v dir="$outdir" '
    /^RETRIED [^ ]+ [0-9]+$/ { print $3 >> (dir "/" $2 ".retried"); close(dir "/" $2 ".retried"); next }
    name == "" && /^BEGIN [^ ]+$/ { name = $2; file = dir "/" name ".log"; printf "" > file; next }
    name != "" && $0 == "EXIT " name " " $3 && $3 ~ /^[0-9]+$/ {
      close(file); print $3 > (dir "/" name ".status"); close(dir "/" name ".status"); name = ""; next }
    name != "" { print > file }'
}

main() {
  install_host_packages
  fetch_guest_parts
  mkdir -p "$outdir"
  rm -f "$outdir"/*.log "$outdir"/*.status "$outdir"/*.retried
  build_initramfs
  log "booting $(basename "$kernel") in ${qemu[0]} -smp 2 with $(wc -l <"$exes_file") test binaries"
  local status=0 started=$SECONDS
  timeout "$boot_timeout" "${qemu[@]}" -kernel "$kernel" -initrd "$cache/$arch/initramfs.cpio" \
    -append "console=ttyAMA0 quiet loglevel=1 panic=-1" </dev/null >"$outdir/console.log" 2>&1 || status=$?
  split_console
  if ! grep -q '^GUEST DONE' <(tr -d '\r' <"$outdir/console.log"); then
    echo "the guest did not finish (qemu's exit status $status after $((SECONDS - started)) s); the end of its console:"
    tr -d '\r' <"$outdir/console.log" | tail -25 | sed 's/^/    [console] /'
  fi
  log "the guest ran for $((SECONDS - started)) s"
}
main
