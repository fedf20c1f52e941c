#!/usr/bin/env python3
"""Mutation testing of the core files with cargo-mutants: by the lines a change touches, and
by whole sweeps.

  python3 scripts/mutants.py diff [--base REV] [--most N]
      the check by diff (the `mutants` lane): the mutants on the lines of code the change touches
      since its base (scripts/changed_lines.py: which base, which lines), each tried in the
      builds of its group and judged by the group's tests; fails on any no test notices.
      --most N: a change with more mutants than N is not run here (SKIPPED, exit code 10)
  python3 scripts/mutants.py record [GROUP..]
      the whole sweep: runs the groups (all by default), writes mutants/record.json and the
      figures in README.md and docs/reliability.md; fails on any missed mutant
  python3 scripts/mutants.py docs [--check]
      writes the record's figures into the docs (--check: fails where they differ)
  python3 scripts/mutants.py --self-test [--quick]
      the script's own checks; without --quick also the check by diff, run in a scratch clone
      on a change that must fail it and one that must cost no run

mutants/groups.toml says which tests judge which files (and in which builds); mutants/record.json
documents the last sweep of each group. The mutants no test can tell apart are excluded in
.cargo/mutants.toml, each with its reason: any other missed mutant fails.
"""
import datetime
import functools
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib

import changed_lines

ROOT = pathlib.Path(__file__).resolve().parent.parent
GROUPS = ROOT / "mutants" / "groups.toml"
RECORD = ROOT / "mutants" / "record.json"
EXCLUSIONS = ROOT / ".cargo" / "mutants.toml"
# The version the record was made with: another version may make other mutants.
CARGO_MUTANTS = "27.1.0"
OUTCOMES = {"CaughtMutant": "caught", "MissedMutant": "missed", "Unviable": "unviable",
            "Timeout": "timeout"}
FIGURES = ("mutants", "caught", "unviable", "timeout", "missed", "excluded")
# `diff --most N`: the change has more mutants than this run takes on.
EXIT_TOO_MANY = 10


def load_groups(text=None):
    """The groups of mutants/groups.toml (or of `text`, the file as it was at a base)."""
    table = tomllib.loads(text) if text is not None else tomllib.loads(GROUPS.read_text())
    return {group["name"]: group for group in table["group"]}


def load_record():
    if not RECORD.exists():
        return {}
    return json.loads(RECORD.read_text())


def package(group):
    return group.get("package", "mimalloc-tests")


def feature_args(group, build):
    features = [f"{package(group)}/{feature}" for feature in build.get("features", [])]
    return ["--features", ",".join(features)] if features else []


def file_args(files):
    """cargo-mutants' arguments for the group's files (`place`'s map: repository -> here)."""
    return [arg for path in files.values() for arg in ("-f", path)]


def builds(group):
    """The builds a group's mutants are tried in: the default one first; each later one (the
    build that compiles code the default leaves out: `v2`, `guarded`, a 32-bit `target`) judges
    only the mutants no test caught before it, so a mutant is missed only if no build's tests
    notice it."""
    return [{"features": [], "env": {}, "target": None, **build}
            for build in [{}] + group.get("build", [])]


def build_name(build):
    return "+".join(build["features"] + ([build["target"]] if build["target"] else [])) or "default"


def place(group, build):
    """Where a build of the group runs: (directory, the environment it adds, the arguments every
    cargo command of it takes, the group's files as paths there). A `target` build runs where
    scripts/cross-test.sh runs that target (Debian's Rust 1.63, the one toolchain here with a
    32-bit standard library: its workspace of the MSRV crates, its linker, its cargo), which
    the script prepares and describes (`--env`). A group with `crate` runs in a crate of its
    own (`scratch_crate`)."""
    env = dict(build["env"])
    if "crate" in group:
        return scratch_crate(group) + ({v: k for k, v in crate_files(group).items()},)
    files = {path: path for path in group["files"]}
    if not build["target"]:
        return ROOT, env, [], files
    described = subprocess.run(["scripts/cross-test.sh", build["target"], "--env"], cwd=ROOT,
                               check=True, capture_output=True, text=True).stdout
    for line in described.splitlines():
        key, sep, value = line.partition("=")
        if sep and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            env[key] = value
    cargo_args = [f"--target={build['target']}", "--offline"]
    return pathlib.Path(env.pop("CROSS_WS")), env, cargo_args, files


def crate_files(group):
    """A `crate` group's files (the modules of its crate): their path in its crate, and in the
    repository."""
    return {f"src/{pathlib.Path(module).name}": module for module in group["files"]}


def scratch_crate(group):
    """Writes the crate of a group whose files cargo-mutants cannot reach where they live:
    mimalloc-sys's build plan is a module of its build script (and, by `#[path]`, of its test),
    and cargo-mutants walks no build script. Under target/, a library of the modules (which
    cargo-mutants walks) and the test file, reading the modules from the library's `src/` and
    the repository's files where it read them relative to its manifest; the exclusions too.
    Returns the crate's directory, no environment and no cargo arguments."""
    spec, directory = group["crate"], ROOT / "target" / "mutants-crates" / group["name"]
    shutil.rmtree(directory, ignore_errors=True)
    for sub in ("src", "tests", ".cargo"):
        (directory / sub).mkdir(parents=True)
    shutil.copy(EXCLUSIONS, directory / ".cargo")
    test = ROOT / spec["test"]
    text = test.read_text()
    for local, module in crate_files(group).items():
        shutil.copy(ROOT / module, directory / local)
        attribute = f'#[path = "{os.path.relpath(ROOT / module, test.parent)}"]'
        if attribute not in text:
            sys.exit(f"{spec['test']} does not include {module} by {attribute}")
        text = text.replace(attribute, f'#[path = "../{local}"]')
    text = text.replace('env!("CARGO_MANIFEST_DIR")', json.dumps(str(test.parent.parent)))
    (directory / "tests" / test.name).write_text(text)
    (directory / "src" / "lib.rs").write_text("#![allow(dead_code)]\n" + "".join(
        f"mod {pathlib.Path(local).stem};\n" for local in crate_files(group)))
    (directory / "Cargo.toml").write_text(
        f'[package]\nname = "mutants-{group["name"]}"\nversion = "0.0.0"\nedition = "2021"\n'
        "publish = false\n\n[workspace]\n")
    return directory, {}, []


def in_repository(name, files):
    """A mutant's name (or file) with its file's path in the repository."""
    path, sep, rest = name.partition(":")
    return {local: repo for repo, local in files.items()}.get(path, path) + sep + rest


def test_args(group):
    """The packages and cargo arguments that pick the group's tests: its targets of its package
    and, with `lib = true`, the `mimalloc` crate's own unit tests (`--lib` also runs the
    package's own, if any)."""
    if "crate" in group:
        return [f"mutants-{group['name']}"], [f"--test={test}" for test in group["tests"]]
    packages = [package(group)] + (["mimalloc"] if group.get("lib") else [])
    targets = [f"--test={test}" for test in group["tests"]]
    return packages, targets + (["--lib"] if group.get("lib") else [])


def run_baseline(group, build, where):
    """The group's tests must pass unmutated, or every mutant would look caught. cargo-mutants'
    own baseline (27.1.0) runs the tests of the mutated package, not of `--test-package`."""
    cwd, env, cargo_args = where[:3]
    packages, targets = test_args(group)
    command = [env.get("CARGO", "cargo"), "test", "-q"] + [f"--package={p}" for p in packages]
    command += cargo_args + feature_args(group, build) + targets
    print("  $ " + " ".join(command), flush=True)
    if subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL).returncode != 0:
        sys.exit(f"the tests of group {group['name']} fail unmutated")


def in_repository_mutant(mutant, files):
    return dict(mutant, file=in_repository(mutant["file"], files),
                name=in_repository(mutant["name"], files))


def in_place(name, files):
    """A mutant's name with its file's path where the build runs (`place`)."""
    path, sep, rest = name.partition(":")
    return files.get(path, path) + sep + rest


def regex_escape(name):
    """A mutant's name as a regex that matches only it (cargo-mutants' regex syntax)."""
    return "".join("\\" + c if c in "\\.+*?()|[]{}^$" else c for c in name)


@functools.cache
def exclusions():
    """The `exclude_re` patterns of .cargo/mutants.toml, which cargo-mutants 27.1.0 does not
    apply to field deletions (sourcefrog/cargo-mutants#632): the script applies them to every
    outcome, so an excluded field deletion is counted excluded, not missed."""
    return [re.compile(pattern)
            for pattern in tomllib.loads(EXCLUSIONS.read_text()).get("exclude_re", [])]


def is_excluded(name, patterns=None):
    """Whether an exclusion (of .cargo/mutants.toml, or `patterns`) names the mutant."""
    return any(pattern.search(name) for pattern in (exclusions() if patterns is None else patterns))


def listed(group, use_config=True, diff=None):
    """The mutants cargo-mutants makes of the group's files (with the exclusions, unless
    `use_config` is false; only those on the lines a `diff` file adds, if given), named by their
    paths in the repository."""
    cwd, _, _, files = place(group, builds(group)[0])
    command = ["cargo", "mutants", "--list"] + file_args(files)
    if diff:
        command += ["--in-diff", diff]
    if not use_config:
        command.append("--no-config")
    result = subprocess.run(command, cwd=cwd, check=True, capture_output=True, text=True)
    names = [in_repository(line, files) for line in result.stdout.splitlines() if line.strip()]
    return [name for name in names if not use_config or not is_excluded(name)]


def excluded_by_file(group):
    """How many of each file's mutants an exclusion leaves out."""
    counts = {path: 0 for path in group["files"]}
    for mutant in listed(group, use_config=False):
        counts[mutant.split(":", 1)[0]] += is_excluded(mutant)
    return counts


def run_cargo_mutants(group, build, only, out_dir):
    """Outcomes of the group's mutants in `build` (only those named in `only`, if given)."""
    cwd, added, cargo_args, files = place(group, build)
    env = dict(os.environ, **added)
    run_baseline(group, build, (cwd, env, cargo_args))
    # Not `cargo mutants`: cargo would set CARGO to itself, and cargo-mutants runs $CARGO.
    packages, targets = test_args(group)
    command = ["cargo-mutants", "mutants"] + [f"--test-package={p}" for p in packages]
    command += ["--baseline=skip", "--no-shuffle", f"--timeout={group.get('timeout', 180)}",
                "-o", str(out_dir), f"--jobs={os.environ.get('MUTANTS_JOBS', '2')}"]
    command += [f"--cargo-arg={arg}" for arg in cargo_args]
    command += feature_args(group, build) + file_args(files)
    for name in only or []:
        command += ["--re", "^" + regex_escape(in_place(name, files)) + "$"]
    command += ["--"] + targets
    print("  $ " + " ".join(command), flush=True)
    # Exit codes 2 (missed) and 3 (timeouts) are judged from the outcomes; others fail.
    status = subprocess.run(command, cwd=cwd, env=env).returncode
    if status not in (0, 2, 3):
        sys.exit(f"cargo mutants failed with exit code {status}")
    outcomes = json.loads((out_dir / "mutants.out" / "outcomes.json").read_text())
    outcomes = [(in_repository_mutant(o["scenario"]["Mutant"], files), OUTCOMES[o["summary"]])
                for o in outcomes["outcomes"]
                if isinstance(o["scenario"], dict) and "Mutant" in o["scenario"]]
    # cargo-mutants 27.1.0 runs field deletions whatever `--re` says
    # (sourcefrog/cargo-mutants#632): only the mutants asked for are judged.
    return [(m, outcome) for m, outcome in outcomes if only is None or m["name"] in only]


def tally(group, outcomes, patterns=None):
    """Counts by file over every build's outcomes, and the names of those still missed. The
    mutants an exclusion names are left out (cargo-mutants runs excluded field deletions, see
    `exclusions`); `excluded_by_file` counts them."""
    counts = {path: dict.fromkeys(FIGURES, 0) for path in group["files"]}
    missed = []
    for number, build_outcomes in enumerate(outcomes):
        for mutant, outcome in build_outcomes:
            figures = counts[mutant["file"]]
            if is_excluded(mutant["name"], patterns):
                continue
            if number == 0:
                figures["mutants"] += 1
            else:
                # Tried again in this build because no test of the builds before caught it.
                figures["missed"] -= 1
                missed.remove(mutant["name"])
            figures[outcome] += 1
            if outcome == "missed":
                missed.append(mutant["name"])
    return counts, missed


def run_group(group, only=None):
    """Runs the group's mutants (those named in `only`, if given) in its builds in turn, each
    later build trying what no test of the builds before caught; returns the counts by file,
    or None after naming the missed mutants."""
    print(f"mutants: group {group['name']}: {', '.join(group['files'])}", flush=True)
    outcomes, missed = [], only
    for build in builds(group):
        if missed == []:
            break
        print(f"  build: {build_name(build)}", flush=True)
        with tempfile.TemporaryDirectory(prefix="mutants-") as out:
            outcomes.append(run_cargo_mutants(group, build, missed, pathlib.Path(out)))
        missed = tally(group, outcomes)[1]
    counts, missed = tally(group, outcomes)
    for path, figures in counts.items():
        if only is None or figures["mutants"]:
            print(f"  {path}: " + ", ".join(f"{value} {key}" for key, value in figures.items()))
    if missed:
        print(f"FAILED: group {group['name']}: no test failed on these mutants (add a test that"
              " does, or list the mutant in .cargo/mutants.toml with the reason no test can tell"
              " it apart):")
        for name in missed:
            print(f"  MISSED {name}")
        return None
    return counts


def require_cargo_mutants():
    """Stops with what to install when cargo-mutants is missing, rather than with a traceback
    from its first call."""
    if shutil.which("cargo-mutants") is None:
        sys.exit("mutants: cargo-mutants is not installed: `bash .ci/run lane mutants` installs"
                 " the version the lane uses (.ci/lanes.sh)")


def check_diff(given_base, most):
    """The check by diff: the mutants on the lines of code the change touches, in each group."""
    require_cargo_mutants()
    since, why = changed_lines.base(ROOT, given_base)
    changed = changed_lines.changed_files(ROOT, since)
    print(f"mutants: the change since {since[:12]} ({why}): {len(changed)} files changed")
    groups = load_groups()
    chosen = {name: on_changed_lines(group, changed, since) for name, group in groups.items()}
    chosen = {name: names for name, names in chosen.items() if names}
    total = sum(len(names) for names in chosen.values())
    if not total:
        print("mutants: no mutant on a line of code the change touches in a group's files:"
              " nothing to run")
        return
    for name, names in chosen.items():
        print(f"mutants: group {name}: {len(names)} mutants on the changed lines")
        print("".join(f"  {mutant}\n" for mutant in names), end="")
    if most is not None and total > most:
        print(f"SKIPPED mutants by diff: {total} mutants on the changed lines, more than the {most}"
              " this run takes on (docs/ci.md); `bash .ci/run full` runs them all")
        sys.exit(EXIT_TOO_MANY)
    failed = [name for name, names in chosen.items() if run_group(groups[name], names) is None]
    if failed:
        sys.exit(f"mutants: missed mutants on the changed lines of group(s) {', '.join(failed)}"
                 " (above)")
    print(f"mutants: no test missed any of the {total} mutants on the changed lines")


def on_changed_lines(group, changed, since):
    """The group's mutants on the lines of code the change touches, with those of a file the
    base's groups did not judge (all its lines are new to the check), and those an exclusion
    the change took away used to leave out."""
    text = changed_lines.old_text(ROOT, since, "mutants/groups.toml")
    judged = {path for old in load_groups(text).values() for path in old["files"]} if text else set()
    # A file moved from a judged one is judged on the lines the move changed.
    moves = changed_lines.renamed(ROOT, since)
    was = {path: moves.get(path, path) for path in group["files"]}
    paths = [path for path in group["files"] if path in changed or was[path] not in judged]
    names = []
    if paths:
        _, _, _, files = place(group, builds(group)[0])
        patch = ""
        for path in paths:
            new = (ROOT / path).read_text()
            old = changed_lines.old_text(ROOT, since, was[path]) if was[path] in judged else ""
            patch += changed_lines.as_diff(files[path], new, changed_lines.touched_lines(old, new))
        if patch:
            with tempfile.NamedTemporaryFile("w", suffix=".diff") as diff:
                diff.write(patch)
                diff.flush()
                names = listed(group, diff=diff.name)
    excluded = str(EXCLUSIONS.relative_to(ROOT))
    if excluded in changed:
        before = [re.compile(pattern) for pattern in tomllib.loads(
            changed_lines.old_text(ROOT, since, excluded)).get("exclude_re", [])]
        names += [name for name in listed(group, use_config=False) if not is_excluded(name)
                  and any(pattern.search(name) for pattern in before)]
    return sorted(set(names))


def record_groups(names):
    require_cargo_mutants()
    groups, failed = load_groups(), []
    # What the sweep ran on: the tree changes as it writes the record.
    commit = changed_lines.git(ROOT, "describe", "--always", "--dirty", "--abbrev=12")
    for name in names or groups:
        started = time.monotonic()
        counts = run_group(groups[name])
        if counts is None:
            failed.append(name)
            continue
        for path, number in excluded_by_file(groups[name]).items():
            counts[path]["excluded"] += number
        # Read again: another run of the script may have recorded a group meanwhile.
        record = load_record()
        record[name] = {"date": datetime.date.today().isoformat(), "commit": commit,
                        "cargo_mutants": CARGO_MUTANTS,
                        "minutes": round((time.monotonic() - started) / 60, 1), "files": counts}
        # Each group as it passes: a later group's failure keeps the earlier ones' runs.
        RECORD.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
        print(f"recorded group {name} in {RECORD.relative_to(ROOT)}")
    docs(check_only=False)
    if failed:
        sys.exit(f"mutants: missed mutants in group(s) {', '.join(failed)} (above)")


def table():
    record, groups = load_record(), load_groups()
    rows = ["| file | builds | mutants | caught | unviable | timeout | missed | excluded |",
            "|------|-------|---:|---:|---:|---:|---:|---:|"]
    for name in sorted(record):
        build = ", ".join(build_name(b) for b in builds(groups[name]))
        for path, figures in sorted(record[name]["files"].items()):
            rows.append(f"| `{path}` | {build} | " + " | ".join(
                str(figures[key]) for key in FIGURES) + " |")
    return "\n".join(rows)


def summary():
    record = load_record()
    files = [figures for entry in record.values() for figures in entry["files"].values()]
    total = {key: sum(figures[key] for figures in files) for key in FIGURES}
    dates = sorted({entry["date"] for entry in record.values()})
    when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    return (f"{total['mutants']} mutants of {len(files)} core files: {total['caught']} caught,"
            f" {total['unviable']} unviable (they do not build), {total['timeout']} timed out,"
            f" {total['missed']} missed, and {total['excluded']} more excluded with their reasons"
            f" (the whole sweep of {when}).")


# The generated parts of the docs: between a start marker and END in each file.
BLOCKS = {ROOT / "docs" / "reliability.md": table, ROOT / "README.md": summary}
START = "<!-- generated by python3 scripts/mutants.py docs -->"
END = "<!-- end of generated part -->"


def docs(check_only):
    """Writes the record's figures into the docs, or (check_only) fails where they differ."""
    for path, make in BLOCKS.items():
        text = path.read_text()
        start, end = text.find(START), text.find(END)
        if start < 0 or end < start:
            sys.exit(f"{path.relative_to(ROOT)} has no generated mutants part ({START})")
        updated = text[:start + len(START)] + "\n" + make() + "\n" + text[end:]
        if updated == text:
            print(f"{path.relative_to(ROOT)}: the mutation figures are the record's")
        elif check_only:
            sys.exit(f"{path.relative_to(ROOT)}: the mutation figures are not the record's:"
                     " run `python3 scripts/mutants.py docs`")
        else:
            path.write_text(updated)
            print(f"{path.relative_to(ROOT)}: mutation figures updated")


# An untested branch in a core file, which the check by diff must fail on.
UNTESTED = """
/// Added by scripts/mutants.py's self-test: a branch that no test reaches.
pub fn untested_branch(count: usize) -> usize {
    if count > 3 {
        count - 3
    } else {
        count
    }
}
"""


def self_test_diff():
    """The check by diff, run as the lane runs it in a scratch clone of this repository (with
    this script's working versions), on two changes, each landed as a merge: comments, a doc
    comment and a test only, which must pass without running a mutant; an untested branch in a
    core file, which must fail on it."""
    with tempfile.TemporaryDirectory(prefix="mutants-self-test-") as scratch:
        clone = pathlib.Path(scratch) / "repo"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        for path in ("scripts/mutants.py", "scripts/changed_lines.py", "mutants/groups.toml",
                     ".cargo/mutants.toml"):
            shutil.copy(ROOT / path, clone / path)
        land(clone, "the scripts as they are here", lambda: None)

        route = clone / "mimalloc" / "src" / "route.rs"
        land(clone, "comments and a test", lambda: (
            route.write_text(with_comments(route.read_text())),
            append(clone / "tests" / "tests" / "options.rs",
                   "\n#[test]\nfn added_by_the_self_test() {\n    assert_eq!(1 + 1, 2);\n}\n")))
        # cargo-mutants' own reading of the diff would run the function's mutants.
        raw = changed_lines.git(clone, "diff", "HEAD^1", "--", "mimalloc/src/route.rs")
        with tempfile.NamedTemporaryFile("w", suffix=".diff") as diff:
            diff.write(raw + "\n")
            diff.flush()
            assert subprocess.run(["cargo", "mutants", "--list", "--in-diff", diff.name, "-f",
                                   "mimalloc/src/route.rs"], cwd=clone, check=True,
                                  capture_output=True, text=True).stdout.strip(), raw
        out = run_check(clone)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "nothing to run" in out.stdout and "cargo-mutants" not in out.stdout, out.stdout

        plan = clone / "mimalloc-sys" / "build" / "plan.rs"
        land(clone, "an untested branch", lambda: append(plan, UNTESTED))
        out = run_check(clone)
        assert out.returncode not in (0, EXIT_TOO_MANY), out.stdout + out.stderr
        missed = re.findall(r"^  MISSED (mimalloc-sys/build/plan\.rs:\d+):", out.stdout, re.M)
        line = plan.read_text().split("\n").index("    if count > 3 {") + 1
        assert f"mimalloc-sys/build/plan.rs:{line}" in missed, out.stdout
    print("mutants.py self-test: the check by diff ran no mutant for comments and a test, and"
          f" failed on an untested branch ({len(missed)} missed mutants)")


def with_comments(text):
    """`text` with a comment added between two statements of a function and a doc comment
    reworded."""
    body = re.search(r"^( +)let .*;\n(?=\1\S)", text, re.M)
    text = f"{text[:body.end()]}{body.group(1)}// A comment inside a body.\n{text[body.end():]}"
    doc = re.search(r"^ */// .*$", text, re.M)
    return text[:doc.end()] + " Reworded." + text[doc.end():]


def append(path, text):
    path.write_text(path.read_text() + text)


def land(clone, message, change):
    """Makes `change` on a branch of the scratch clone and merges it, as a stop lands."""
    def git(*args):
        subprocess.run(["git", "-c", "user.name=self-test", "-c", "user.email=self-test@invalid",
                        *args], cwd=clone, check=True, capture_output=True)
    main = changed_lines.git(clone, "rev-parse", "--abbrev-ref", "HEAD")
    git("checkout", "-q", "-b", message.replace(" ", "-"))
    change()
    git("commit", "-q", "-a", "--allow-empty", "-m", message)
    git("checkout", "-q", main)
    git("merge", "-q", "--no-ff", "-m", f"land: {message}", message.replace(" ", "-"))


def run_check(clone):
    env = {key: value for key, value in os.environ.items() if key != "MUTANTS_BASE"}
    return subprocess.run([sys.executable, "scripts/mutants.py", "diff"], cwd=clone, env=env,
                          capture_output=True, text=True)


def self_test(quick):
    changed_lines.self_test()
    group = {"name": "t", "files": ["mimalloc/src/arena.rs"], "tests": ["arena"]}
    mutant = {"file": "mimalloc/src/arena.rs"}
    default = [(dict(mutant, name="a"), "caught"), (dict(mutant, name="b"), "missed"),
               (dict(mutant, name="c"), "missed"), (dict(mutant, name="d"), "unviable")]
    counts, missed = tally(group, [default], [])
    assert counts["mimalloc/src/arena.rs"] == {
        "mutants": 4, "caught": 1, "unviable": 1, "timeout": 0, "missed": 2, "excluded": 0}, counts
    assert missed == ["b", "c"], missed
    # A mutant an exclusion names (a field deletion cargo-mutants ran anyway) is not judged
    # (`excluded_by_file` counts it, from the list of mutants).
    counts, missed = tally(group, [default], [re.compile(r"^c$")])
    assert counts["mimalloc/src/arena.rs"] == {
        "mutants": 3, "caught": 1, "unviable": 1, "timeout": 0, "missed": 1, "excluded": 0}, counts
    assert missed == ["b"], missed
    assert is_excluded("mimalloc/src/tracking/local.rs:107:13: delete field state from struct"
                       " Local expression in Local::unbuffered")
    # A later build judges what the earlier missed: caught there, no longer missed.
    counts, missed = tally(group, [default, [(dict(mutant, name="c"), "caught"),
                                             (dict(mutant, name="b"), "missed")]], [])
    assert counts["mimalloc/src/arena.rs"] == {
        "mutants": 4, "caught": 2, "unviable": 1, "timeout": 0, "missed": 1, "excluded": 0}, counts
    assert missed == ["b"], missed
    assert test_args(dict(group, lib=True)) == (
        ["mimalloc-tests", "mimalloc"], ["--test=arena", "--lib"])
    assert [build_name(b) for b in builds(dict(group, build=[
        {"features": ["v2", "debug"]}, {"target": "i686-unknown-linux-gnu"}]))] == \
        ["default", "v2+debug", "i686-unknown-linux-gnu"]
    assert regex_escape("a.rs:1:2: replace && with || in f -> (u8)") == \
        "a\\.rs:1:2: replace && with \\|\\| in f -> \\(u8\\)"
    without_tools = dict(os.environ, PATH=os.pathsep.join(["/usr/bin", "/bin"]))
    out = subprocess.run([sys.executable, __file__, "diff"], cwd=ROOT, env=without_tools,
                         capture_output=True, text=True)
    assert out.returncode == 1 and "cargo-mutants is not installed" in out.stderr, out
    print("mutants.py self-test: the counts, the builds, the names and a missing cargo-mutants"
          " passed")
    if not quick:
        self_test_diff()


def main(args):
    if args[:1] == ["--self-test"] and args[1:] in ([], ["--quick"]):
        self_test(quick=args[1:] == ["--quick"])
    elif args[:1] == ["diff"]:
        options = dict(zip(args[1::2], args[2::2]))
        if len(args) % 2 == 0 or set(options) - {"--base", "--most"}:
            sys.exit(__doc__)
        most = options.get("--most")
        check_diff(options.get("--base"), int(most) if most is not None else None)
    elif args[:1] == ["record"]:
        record_groups(args[1:])
    elif args[:1] == ["docs"] and args[1:] in ([], ["--check"]):
        docs(check_only=args[1:] == ["--check"])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
