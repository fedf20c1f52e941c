#!/usr/bin/env python3
"""Expand the hosted workflows' job matrices the way GitHub does and check the job list.

    scripts/check-workflow.py [--self-test] [--print]

The hosted workflows (.github/workflows/ci.yml on every change, mutants-sweep.yml on a schedule)
cannot run here, so their job list is computed, not guessed:
  1. every job's matrix is expanded with GitHub's rules for `exclude` and `include` (below);
  2. every job runs on a runner label that exists today (.ci/hosted-runners.json);
  3. every line of `bash .ci/run lanes` (the full local run) is run by some job of ci.yml, and
     every lane a job names exists in .ci/lanes.sh: a lane is written once, in .ci/run;
  4. each lane of SCHEDULED is run by a workflow that GitHub starts on that schedule and on
     demand (`workflow_dispatch`);
  5. the jobs are exactly the rows of docs/ci.md's table "Hosted CI jobs".
`--print` lists the expanded jobs; `--self-test` first checks the expansion against GitHub's
documented example and against the matrix shape that once turned the MSVC jobs into GNU ones,
and the reading of schedules.
"""
import itertools
import json
import re
import shlex
import subprocess
import sys

import yaml

WORKFLOW = ".github/workflows/ci.yml"
# The workflows besides ci.yml, and the lanes each must run on a schedule.
SCHEDULED_WORKFLOWS = {".github/workflows/mutants-sweep.yml": {"mutants-sweep": "weekly"}}
DOC = "docs/ci.md"
TABLE_HEADING = "## Hosted CI jobs"


def expand(matrix):
    """GitHub's matrix expansion: the product of the list-valued keys, minus `exclude` entries
    (each matches the combinations agreeing with all its keys), then each `include` entry is
    merged into every original combination whose original values it does not change (values
    added by earlier entries may change), or becomes a combination of its own if it fits none."""
    matrix = dict(matrix or {})
    include = matrix.pop("include", [])
    exclude = matrix.pop("exclude", [])
    keys = list(matrix)
    combos = [dict(zip(keys, values)) for values in itertools.product(*matrix.values())] if keys else []
    combos = [c for c in combos if not any(all(c.get(k) == v for k, v in e.items()) for e in exclude)]
    original = [dict(c) for c in combos]
    extra = []
    for entry in include:
        fits = [i for i, o in enumerate(original) if all(o[k] == v for k, v in entry.items() if k in o)]
        for i in fits:
            combos[i].update(entry)
        if not fits:
            extra.append(dict(entry))
    return (combos + extra) or [{}]


EXPR = re.compile(r"\$\{\{\s*matrix\.(\w+)\s*\}\}")


def substitute(text, combo):
    def value(match):
        if match.group(1) not in combo:
            return ""
        return str(combo[match.group(1)])
    if "${{" in EXPR.sub("", text):
        raise SystemExit(f"{WORKFLOW}: an expression this check does not evaluate: {text!r}")
    return EXPR.sub(value, text)


def condition_holds(cond, combo):
    """The step conditions the workflow uses: none, or `matrix.KEY == 'VALUE'` / `!=`."""
    if cond is None:
        return True
    m = re.fullmatch(r"\s*matrix\.(\w+)\s*(==|!=)\s*'([^']*)'\s*", cond)
    if not m:
        raise SystemExit(f"{WORKFLOW}: a step condition this check does not evaluate: {cond!r}")
    equal = str(combo.get(m.group(1), "")) == m.group(3)
    return equal if m.group(2) == "==" else not equal


def lane_calls(script):
    """The `bash .ci/run lane NAME ARGS...` commands of a step's script, as argument lists."""
    calls = []
    for line in script.splitlines():
        line = line.strip()
        if line.startswith("bash .ci/run lane "):
            calls.append(shlex.split(line)[3:])
        elif ".ci/run" in line:
            raise SystemExit(f"{WORKFLOW}: .ci/run called other than as `bash .ci/run lane ...`: {line!r}")
    return calls


def triggers(workflow):
    """The workflow's `on:` (YAML 1.1 reads the bare key `on` as true)."""
    on = workflow.get("on", workflow.get(True))
    return {on: None} if isinstance(on, str) else dict.fromkeys(on) if isinstance(on, list) else on


def cadence(cron):
    """How often a POSIX cron line (GitHub's `schedule`) fires: "weekly" for a set minute and
    hour on one day of the week, "daily" for a set minute and hour every day, else "other"."""
    fields = cron.split()
    if len(fields) != 5 or not all(re.fullmatch(r"\d+", f) for f in fields[:2]):
        return "other"
    minute, hour, day, month, weekday = fields
    if int(minute) > 59 or int(hour) > 23 or (day, month) != ("*", "*"):
        return "other"
    if weekday == "*":
        return "daily"
    return "weekly" if re.fullmatch(r"[0-6]", weekday) else "other"


def check_schedule(path, workflow, lanes):
    """Errors of a scheduled workflow: each of `lanes` ({lane: cadence}) must be run by its jobs,
    and the workflow must be started on that cadence and on demand."""
    errors, on = [], triggers(workflow) or {}
    cadences = {cadence(entry.get("cron", "")) for entry in on.get("schedule") or []}
    jobs, _ = hosted_jobs(workflow)
    for lane, wanted in lanes.items():
        if wanted not in cadences:
            errors.append(f"{path}: lane {lane} is not run {wanted} (schedule: {on.get('schedule')})")
        if "workflow_dispatch" not in on:
            errors.append(f"{path}: lane {lane} cannot be run on demand (no workflow_dispatch)")
        if lane not in {job[3] for job in jobs}:
            errors.append(f"{path}: no job runs lane {lane}")
    return errors


def hosted_jobs(workflow):
    """One (job id, runner label, target, lane, first argument) per lane call of each expanded
    job, and the set of lane calls as `bash .ci/run lanes` writes them."""
    jobs, calls = [], set()
    for job_id, job in workflow["jobs"].items():
        for combo in expand(job.get("strategy", {}).get("matrix")):
            runner = substitute(job["runs-on"], combo)
            target = str(combo.get("target", "")) or "native"
            for step in job["steps"]:
                if "run" in step and condition_holds(step.get("if"), combo):
                    for call in lane_calls(substitute(step["run"], combo)):
                        calls.add(" ".join(call))
                        # The target is a column of its own (lanes take it as an argument).
                        args = [a for a in call[1:] if a != target]
                        jobs.append((job_id, runner, target, call[0], args[0] if args else ""))
    return jobs, calls


def documented_jobs():
    """docs/ci.md's table: | job | runners | target | lanes |, a lane cell being `NAME` or
    `NAME` with ARG, ARG, ... (`default` is the empty argument), lanes separated by `;`."""
    text = open(DOC, encoding="utf-8").read()
    if TABLE_HEADING not in text:
        raise SystemExit(f"{DOC} has no section {TABLE_HEADING!r}")
    rows = []
    for line in text.split(TABLE_HEADING, 1)[1].splitlines()[1:]:
        if line.startswith("## ") or line.startswith("### "):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("job", "") or set(cells[0]) <= set("-"):
            continue
        job, runners, target, lanes = cells
        targets = re.findall(r"`([^`]+)`", target) or ["native"]
        runners = re.sub(r"\([^)]*\)", "", runners)  # "(in a container ...)" names no runner
        for runner, tgt in itertools.product(re.findall(r"`([^`]+)`", runners), targets):
            for lane in lanes.split(";"):
                name, _, args = lane.partition(" with ")
                args = [a.strip() for a in args.split(", ")] if args else [""]
                for arg in args:
                    arg = "" if arg == "default" else arg.strip("`")
                    # The job's id is the cell's first code span; the rest says more of it.
                    job_id = (re.findall(r"`([^`]+)`", job) or [job])[0]
                    rows.append((job_id, runner, tgt, name.strip().strip("`"), arg))
    return rows


def check(workflow, print_jobs=False):
    jobs, called = hosted_jobs(workflow)
    errors = []
    for path, lanes in SCHEDULED_WORKFLOWS.items():
        with open(path, encoding="utf-8") as f:
            scheduled = yaml.safe_load(f)
        errors += check_schedule(path, scheduled, lanes)
        jobs += hosted_jobs(scheduled)[0]
    if print_jobs:
        for job in sorted(jobs):
            print("  " + " | ".join(job))
    runners = json.load(open(".ci/hosted-runners.json", encoding="utf-8"))
    for runner in sorted({j[1] for j in jobs}):
        if runner not in runners["labels"]:
            errors.append(f"runner label {runner!r} is not a current GitHub-hosted label"
                          f" ({runners['retired'].get(runner, 'unknown')})")
    defined = set(re.findall(r"^lane_(\w+)\(\)", open(".ci/lanes.sh", encoding="utf-8").read(), re.M))
    for lane in sorted({j[3] for j in jobs}):
        if lane.replace("-", "_") not in defined:
            errors.append(f"a job calls lane {lane!r}, which .ci/lanes.sh does not define")
    full = subprocess.run(["bash", ".ci/run", "lanes"], capture_output=True, text=True, check=True).stdout
    for line in full.splitlines():
        if line not in called:
            errors.append(f"`bash .ci/run lanes` has `{line}`, which no hosted job runs")
    table = documented_jobs()
    for job in sorted(set(jobs) - set(table)):
        errors.append(f"hosted job {job} is missing from {DOC}'s table")
    for row in sorted(set(table) - set(jobs)):
        errors.append(f"{DOC}'s table names {row}, which the workflow does not run")
    return jobs, errors


def self_test():
    # GitHub's documented example ("Expanding or adding matrix configurations").
    got = expand({"fruit": ["apple", "pear"], "animal": ["cat", "dog"], "include": [
        {"color": "green"}, {"color": "pink", "animal": "cat"}, {"fruit": "apple", "shape": "circle"},
        {"fruit": "banana"}, {"fruit": "banana", "animal": "cat"}]})
    want = [{"fruit": "apple", "animal": "cat", "color": "pink", "shape": "circle"},
            {"fruit": "apple", "animal": "dog", "color": "green", "shape": "circle"},
            {"fruit": "pear", "animal": "cat", "color": "pink"},
            {"fruit": "pear", "animal": "dog", "color": "green"},
            {"fruit": "banana"}, {"fruit": "banana", "animal": "cat"}]
    assert got == want, got
    # The old shape: a GNU `include` with no key of its own turned the MSVC jobs into GNU ones.
    old = expand({"os": ["windows-latest"], "features": ["", "v2", "secure"], "include": [
        {"os": "windows-latest", "target": "x86_64-pc-windows-gnu", "features": ""}]})
    assert [c.get("target") for c in old] == ["x86_64-pc-windows-gnu", None, None], old
    exclude = expand({"a": [1, 2], "b": [3, 4], "exclude": [{"a": 1, "b": 4}]})
    assert exclude == [{"a": 1, "b": 3}, {"a": 2, "b": 3}, {"a": 2, "b": 4}], exclude
    assert [cadence(c) for c in ("17 3 * * 1", "17 3 * * *", "0 0 1 * *", "*/5 * * * *", "0 3 * * 1-5",
                                 "0 3 * * 7", "61 3 * * 1")] == \
        ["weekly", "daily", "other", "other", "other", "other", "other"]
    sweep = {True: {"schedule": [{"cron": "17 3 * * 1"}], "workflow_dispatch": None},
             "jobs": {"j": {"runs-on": "ubuntu-24.04", "steps": [{"run": "bash .ci/run lane s"}]}}}
    assert check_schedule("w", sweep, {"s": "weekly"}) == []
    daily = {True: {"schedule": [{"cron": "0 3 * * *"}]}, "jobs": sweep["jobs"]}
    assert check_schedule("w", daily, {"s": "weekly", "t": "weekly"}) == [
        "w: lane s is not run weekly (schedule: [{'cron': '0 3 * * *'}])",
        "w: lane s cannot be run on demand (no workflow_dispatch)",
        "w: lane t is not run weekly (schedule: [{'cron': '0 3 * * *'}])",
        "w: lane t cannot be run on demand (no workflow_dispatch)", "w: no job runs lane t"]
    print("self-test: GitHub's matrix example, the MSVC-to-GNU merge and exclude expand as GitHub"
          " does; schedules are read by their cadence")


if __name__ == "__main__":
    if "--self-test" in sys.argv:
        self_test()
    with open(WORKFLOW, encoding="utf-8") as f:
        jobs, errors = check(yaml.safe_load(f), "--print" in sys.argv)
    for error in errors:
        print(f"hosted workflows: {error}")
    if errors:
        sys.exit(1)
    print(f"{WORKFLOW}: {len(jobs)} lane runs in hosted jobs (with {', '.join(SCHEDULED_WORKFLOWS)}),"
          f" on current runner labels; every lane of `bash .ci/run lanes` among them; the lanes"
          f" run on a schedule are run on it and on demand; the table of hosted jobs in {DOC}"
          " matches")
