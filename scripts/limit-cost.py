#!/usr/bin/env python3
"""What the background purge's container-limit handling costs a program that churns memory
while it holds more than half its limit (docs/memory-policy.md#container-limits).

Runs the independent benchmark's `ours` binary (build it first:
`python3 independent/run.py --build --rounds 0 --allocators ours`) on each shape, in turn, in a
memory cgroup limited to 1.5x the shape's peak (past half: prompt purges) and in one limited to
3x (below half: the same cgroup accounting, no prompt purge), alternating, and prints medians
and the paired ratio. Needs root and cgroup v1's memory hierarchy (this machine's) or v2's.

    python3 scripts/limit-cost.py [ROUNDS] [SHAPE,...]
"""
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target/independent/bin/ours")
# Each shape's peak RSS with ours, MiB (BENCHMARKS.md#a-second-look-15-rounds-the-hosts-reclaim-kept-out).
PEAKS = {"growth": 98, "regrow": 65, "hashmap": 390, "buffers": 229, "postings": 32}
LIMITS = {"past half": 1.5, "below half": 3.0}


def hierarchy():
    if os.path.exists("/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        return "/sys/fs/cgroup/memory", "memory.limit_in_bytes"
    return "/sys/fs/cgroup", "memory.max"


def cgroup(name, mib):
    parent, limit_file = hierarchy()
    path = os.path.join(parent, f"limit-cost-{name}")
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, limit_file), "w") as f:
        f.write(str(mib << 20))
    return path


def run(shape, path):
    script = f'echo $$ > {path}/cgroup.procs && exec "$0" "$1"'
    start = time.monotonic()
    child = subprocess.Popen(["sh", "-c", script, BIN, shape],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    return {"wall": time.monotonic() - start, "rss": usage.ru_maxrss / 1024,
            "faults": usage.ru_minflt, "killed": status != 0}


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    shapes = sys.argv[2].split(",") if len(sys.argv) > 2 else list(PEAKS)
    runs = {}
    made = []
    try:
        for _ in range(rounds):
            for shape in shapes:
                for kind, factor in LIMITS.items():
                    path = cgroup(f"{shape}-{factor}", int(PEAKS[shape] * factor))
                    made.append(path)
                    runs.setdefault((shape, kind), []).append(run(shape, path))
    finally:
        for path in set(made):
            os.rmdir(path)
    print("| shape | time, past half / below half (ms) | paired ratio | minor faults | peak RSS (MiB) | killed |")
    print("|---|---|---:|---|---|---|")
    for shape in shapes:
        past, below = runs[(shape, "past half")], runs[(shape, "below half")]
        med = lambda rs, key: statistics.median(r[key] for r in rs)
        ratio = statistics.median(p["wall"] / b["wall"] for p, b in zip(past, below))
        print(f"| {shape} | {med(past, 'wall') * 1000:.0f} / {med(below, 'wall') * 1000:.0f} | {ratio:.2f}x "
              f"| {med(past, 'faults'):,.0f} / {med(below, 'faults'):,.0f} "
              f"| {med(past, 'rss'):.1f} / {med(below, 'rss'):.1f} "
              f"| {sum(r['killed'] for r in past)} / {sum(r['killed'] for r in below)} |")


if __name__ == "__main__":
    main()
