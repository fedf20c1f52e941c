#!/usr/bin/env python3
"""Whole-process runs of a few executables on the same arguments, alternating, for the
comparisons `mimalloc-bench product` cannot build itself (a program as published, on its own
allocator crate):

    paired-runs.py ROUNDS NAME=EXECUTABLE... -- ARGS...

Every round runs each executable once with ARGS (output discarded, from the current
directory), starting the turn one executable later each round; prints the median wall time,
CPU time (user+system), peak RSS and minor page faults of each, and the paired ratios against
the first named: the median over rounds of the ratio within a round, with the rounds' range.
"""
import os
import statistics
import subprocess
import sys
import time


def run(executable, args):
    """Wall seconds, CPU seconds, peak RSS (MiB) and minor faults of one run; fails on a non-zero
    exit."""
    start = time.monotonic()
    with subprocess.Popen([executable, *args], stdout=subprocess.DEVNULL) as child:
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - start
    if child.returncode != 0:
        sys.exit(f"{executable} exited with {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, usage.ru_minflt


def main():
    if "--" not in sys.argv[2:] or len(sys.argv) < 4:
        sys.exit(__doc__)
    split = sys.argv.index("--")
    rounds = int(sys.argv[1])
    builds = [spec.split("=", 1) for spec in sys.argv[2:split]]
    args = sys.argv[split + 1:]
    samples = {name: [] for name, _ in builds}
    for r in range(rounds):
        for i in range(len(builds)):
            name, executable = builds[(i + r) % len(builds)]
            samples[name].append(run(executable, args))
    base = builds[0][0]
    print(f"{rounds} rounds, alternating; ratios paired against {base} (median, and the rounds' range)")
    print("| build | wall | vs base | CPU | vs base | peak RSS | vs base | minor faults | vs base |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, _ in builds:
        cells = []
        for k, shown in enumerate(["{:.3f} s", "{:.3f} s", "{:.1f} MiB", "{:.0f}"]):
            values = [s[k] for s in samples[name]]
            ratios = [a[k] / b[k] for a, b in zip(samples[name], samples[base])]
            cells.append(shown.format(statistics.median(values)))
            cells.append(f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})")
        print(f"| `{name}` | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
