#!/usr/bin/env python3
"""regorus' own benchmarks on four builds, alternating (scripts/regorus.sh bench).

    scripts/regorus-report.py DIR [NAME=VALUE...] EVAL_ARGS... [-- [NAME=VALUE...] EVAL_ARGS...]...

DIR holds the two copies scripts/regorus.sh setup unpacks: own/ (regorus as published, on
its `regorus-mimalloc`) and ours/ (on this workspace's `mimalloc`). Four builds:

    system   ours/ without the `mimalloc` feature (the platform's malloc)
    own      own/  --features mimalloc            (regorus-mimalloc 2.2.9: mimalloc 2.2.6)
    ours     ours/ --features mimalloc            (this workspace: mimalloc 3.6.0)
    ours-v2  ours/ --features mimalloc,mimalloc/v2 (this workspace: mimalloc 2.5.2)

Builds the criterion benchmarks aci_benchmark and engine_evaluation_benchmark and the
`regorus` example of each, then runs them in rounds, each round starting the turn with the
next allocator: criterion's own estimate per benchmark (`--output-format bencher`), and the
wall time and peak RSS (GNU time's %M) of one `regorus EVAL_ARGS...` per round, for each
command the `--` separate. Prints Markdown tables of medians and paired ratios (the median over
rounds of the ratio within a round).
REGORUS_ROUNDS sets the criterion rounds (default 5; 0 builds and runs only the evals).
"""

import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROUNDS = int(os.environ.get("REGORUS_ROUNDS", "5"))
EVAL_ROUNDS = 31
BUILDS = [("system", "ours", ""), ("own", "own", "mimalloc"), ("ours", "ours", "mimalloc"),
          ("ours-v2", "ours", "mimalloc,mimalloc/v2")]
NAMES = [n for n, _, _ in BUILDS]
# (numerator, denominator) of the paired ratios the criterion table shows.
RATIOS = [("ours", "own"), ("ours-v2", "own"), ("ours", "system"), ("own", "system")]
# (benchmark, criterion filter): the engine benchmark's 1- and 2-thread cases only (the
# others are the same work on more threads than this machine has cores).
BENCHES = [("aci_benchmark", None), ("engine_evaluation_benchmark", "eval/ [12] threads")]
CRITERION = ["--sample-size", "10", "--warm-up-time", "1", "--measurement-time", "3",
             "--output-format", "bencher", "--noplot"]
GNU_TIME = "/usr/bin/time"
BENCHER_LINE = re.compile(r"^test (.+?) \.\.\. bench:\s+([\d,]+) ns/iter")


def clean_env(extra=None):
    """The environment without mimalloc's options or Rust's backtrace switches, which change
    what a failing `regorus eval` does: a command sets those itself."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MIMALLOC_") and k not in ("RUST_BACKTRACE", "RUST_LIB_BACKTRACE")}
    env.update(extra or {})
    return env


def cargo_executables(copy_dir, target_dir, features, args):
    """The executables a cargo build makes, from its JSON messages."""
    command = ["cargo", *args, "--message-format", "json-render-diagnostics",
               "--target-dir", target_dir]
    if features:
        command += ["--features", features]
    done = subprocess.run(command, cwd=copy_dir, stdout=subprocess.PIPE, check=True, text=True)
    exes = {}
    for line in done.stdout.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("executable"):
            exes[msg["target"]["name"]] = msg["executable"]
    return exes


def build(base):
    built = {}
    for name, copy, features in BUILDS:
        copy_dir = os.path.join(base, copy)
        target = os.path.join(base, f"target-{name}")
        print(f"==> building {name} ({copy}/{', --features ' + features if features else ''})", flush=True)
        exes = {}
        if ROUNDS > 0:  # the criterion benchmarks only where they run
            exes = cargo_executables(copy_dir, target, features,
                                     ["bench", "--no-run"] + [a for b, _ in BENCHES for a in ("--bench", b)])
        # `cargo bench` builds in release and refuses `--release`; `cargo build` needs it.
        exes.update(cargo_executables(copy_dir, target, features,
                                      ["build", "--release", "--example", "regorus"]))
        built[name] = (copy_dir, exes)
    return built


def run_criterion(copy_dir, exe, flt):
    args = [exe, "--bench", *CRITERION] + ([flt] if flt else [])
    out = subprocess.run(args, cwd=copy_dir, env=clean_env(), stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, check=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        m = BENCHER_LINE.match(line)
        if m:
            found[m.group(1)] = int(m.group(2).replace(",", ""))
    if not found:
        sys.exit(f"{exe}: no benchmark results in its output")
    return found


def run_eval(copy_dir, exe, eval_args, env=None):
    """Wall time, peak RSS and exit status of one run. The RSS comes from GNU time, not from
    this process's wait4: Linux starts a spawned child's peak RSS at its parent's (Python's
    ~15 MiB, more than regorus eval's own on the system allocator), while GNU time's is a few
    hundred KiB."""
    with tempfile.NamedTemporaryFile("r") as report:
        command = [GNU_TIME, "-f", "%M", "-o", report.name, exe, *eval_args]
        start = time.monotonic()
        done = subprocess.run(command, cwd=copy_dir, env=clean_env(env), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        seconds = time.monotonic() - start
        # GNU time reports a failed command's status on a line of its own before the figure.
        rss = int(report.read().split()[-1]) / 1024.0  # KiB
        return seconds, rss, done.returncode


def paired(a, b):
    ratios = [x / y for x, y in zip(a, b)]
    return statistics.median(ratios)


def criterion_rounds(built):
    samples = {}  # (bench id, allocator) -> [ns per round]
    for r in range(ROUNDS):
        for i in range(len(NAMES)):
            name = NAMES[(i + r) % len(NAMES)]
            copy_dir, exes = built[name]
            for bench, flt in BENCHES:
                print(f"==> round {r + 1}/{ROUNDS}: {bench} on {name}", flush=True)
                for bid, ns in run_criterion(copy_dir, exes[bench], flt).items():
                    samples.setdefault((bid, name), [None] * ROUNDS)[r] = ns
    return samples


EVAL_COLUMNS = [(n, n, None) for n in NAMES] + [
    ("ours, MIMALLOC_ALLOW_THP=0", "ours", {"MIMALLOC_ALLOW_THP": "0"})]


def eval_rounds(built, command):
    """Each column's times and peak RSS, and the one exit status every run ended with: a
    command may fail (the README's aci example does, in 0.14), but only the same way on every
    allocator, or they did not do the same work."""
    command_env, eval_args = command
    results, statuses = {c[0]: ([], []) for c in EVAL_COLUMNS}, set()
    for r in range(EVAL_ROUNDS):
        for i in range(len(EVAL_COLUMNS)):
            label, name, env = EVAL_COLUMNS[(i + r) % len(EVAL_COLUMNS)]
            copy_dir, exes = built[name]
            seconds, rss, status = run_eval(copy_dir, exes["regorus"], eval_args,
                                            {**command_env, **(env or {})})
            results[label][0].append(seconds)
            results[label][1].append(rss)
            statuses.add(status)
    if len(statuses) > 1:
        sys.exit(f"regorus {' '.join(eval_args)}: exit statuses differ between runs: {sorted(statuses)}")
    return results, statuses.pop()


def report_criterion(samples):
    ids = sorted({bid for bid, _ in samples})
    heads = NAMES + [f"{a} / {b}" for a, b in RATIOS]
    print("\n| benchmark | " + " | ".join(heads) + " |")
    print("|---|" + "---:|" * len(heads))
    logs = {pair: [] for pair in RATIOS}
    for bid in ids:
        med = [statistics.median(samples[(bid, n)]) / 1e3 for n in NAMES]
        ratios = [paired(samples[(bid, a)], samples[(bid, b)]) for a, b in RATIOS]
        for pair, ratio in zip(RATIOS, ratios):
            logs[pair].append(math.log(ratio))
        print(f"| `{bid}` | " + " | ".join(f"{m:.1f} µs" for m in med) + " | "
              + " | ".join(f"{r:.3f}x" for r in ratios) + " |")
    print(f"\nGeometric means over {len(ids)} benchmarks, {ROUNDS} rounds: " + ", ".join(
        f"{a} / {b} {math.exp(sum(v) / len(v)):.3f}x" for (a, b), v in logs.items()))


def report_eval(results, status, command):
    """Medians, and each allocator's time and peak RSS against `own`'s in the same round."""
    command_env, eval_args = command
    words = [f"{k}={v}" for k, v in command_env.items()] + ["regorus", *eval_args]
    ended = f", every run exiting with status {status}" if status else ""
    print(f"\n`{' '.join(words)}`, {EVAL_ROUNDS} rounds{ended}:\n")
    print("| allocator | median wall time | median peak RSS | time vs own | peak RSS vs own |")
    print("|---|---:|---:|---:|---:|")
    own_times, own_rss = results["own"]
    for label, (times, rss) in results.items():
        print(f"| {label} | {statistics.median(times) * 1e3:.1f} ms | {statistics.median(rss):.1f} MiB"
              f" | {paired(times, own_times):.3f}x | {paired(rss, own_rss):.3f}x |")


def commands(args):
    """The eval commands of the command line, separated by `--`: each its environment (the
    leading NAME=VALUE words, as env(1) takes them) and its arguments."""
    groups = [[]]
    for arg in args:
        if arg == "--":
            groups.append([])
        else:
            groups[-1].append(arg)
    parsed = []
    for words in groups:
        env = {}
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
            name, value = words.pop(0).split("=", 1)
            env[name] = value
        if not words:
            sys.exit("an empty regorus command: give [NAME=VALUE...] EVAL_ARGS... [-- ...]...")
        parsed.append((env, words))
    return parsed


def main():
    base, examples = sys.argv[1], commands(sys.argv[2:])
    if not os.access(GNU_TIME, os.X_OK):
        sys.exit(f"{GNU_TIME} (GNU time) measures the peak RSS: apt-get install time")
    built = build(base)
    # Each report as soon as its runs are done: a later failure keeps the earlier figures.
    if ROUNDS > 0:
        report_criterion(criterion_rounds(built))
    else:
        print("criterion benchmarks skipped: REGORUS_ROUNDS=0", flush=True)
    for command in examples:
        report_eval(*eval_rounds(built, command), command)


if __name__ == "__main__":
    main()
