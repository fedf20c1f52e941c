#!/usr/bin/env python3
"""Mutation testing of the core files with cargo-mutants, group by group, against a committed record.

  python3 scripts/mutants.py check            the `mutants` lane: runs every group whose inputs
                                              changed since its recorded run, else one recorded
                                              group as a spot check; fails on any missed mutant
  python3 scripts/mutants.py record [GROUP..]  runs the groups (all by default), writes the record
  python3 scripts/mutants.py docs [--check]    writes the record's figures into README.md and
                                              docs/reliability.md (--check: fails where they differ)
  python3 scripts/mutants.py --self-test

mutants/groups.toml says which tests judge which files (and in which build); mutants/record.json
holds each group's last run and the hash of what it read. The mutants no test can tell apart are
excluded in .cargo/mutants.toml, each with its reason: any other missed mutant fails.
"""
import datetime
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
GROUPS = ROOT / "mutants" / "groups.toml"
RECORD = ROOT / "mutants" / "record.json"
EXCLUSIONS = ROOT / ".cargo" / "mutants.toml"
# The version the record was made with: another version may make other mutants.
CARGO_MUTANTS = "27.1.0"
# The packages whose test targets a group names (`package`, mimalloc-tests unless it says), by
# directory; what every group's tests read besides their own files is the package's library,
# build script and manifest.
PACKAGES = {"mimalloc-tests": "tests", "mimalloc-prof": "prof"}
OUTCOMES = {"CaughtMutant": "caught", "MissedMutant": "missed", "Unviable": "unviable",
            "Timeout": "timeout"}
FIGURES = ("mutants", "caught", "unviable", "timeout", "missed", "excluded")


def load_groups():
    with open(GROUPS, "rb") as file:
        return {group["name"]: group for group in tomllib.load(file)["group"]}


def load_record():
    if not RECORD.exists():
        return {}
    return json.loads(RECORD.read_text())


def input_paths(group):
    """The files whose change can change the group's result (besides code the tests reach
    through other files: the spot check re-runs a recorded group for that; and the exclusions,
    which count through the mutants they leave, see `group_hash`)."""
    if "crate" in group:
        paths = list(group["files"]) + [group["crate"]["test"]]
    else:
        directory = PACKAGES[package(group)]
        paths = list(group["files"]) + [f"{directory}/{shared}" for shared in
                                        ("src", "build.rs", "Cargo.toml")]
        paths += [f"{directory}/tests/{test}.rs" for test in group["tests"]]
    files = []
    for path in paths:
        full = ROOT / path
        files += sorted(full.rglob("*.rs")) if full.is_dir() else [full]
    return files


def group_hash(group):
    digest = hashlib.sha256()
    # `pending` says whether the lane holds the group to its record, not what the run read:
    # a group recorded while pending is judged once the key is dropped, without a re-run.
    judged = {key: value for key, value in group.items() if key != "pending"}
    digest.update(json.dumps(judged, sort_keys=True).encode())
    digest.update(CARGO_MUTANTS.encode())
    # The mutants themselves, after .cargo/mutants.toml's exclusions (cargo-mutants' and the
    # script's own, see `exclusions`): an exclusion of another group's mutant leaves this
    # group's hash as it was.
    excluded = exclusions()
    kept = [name for name in listed(group, True)
            if not any(pattern.search(name) for pattern in excluded)]
    digest.update("\n".join(kept).encode())
    for path in input_paths(group):
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes() if path.exists() else b"(missing)")
    return digest.hexdigest()


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


def listed(group, use_config):
    """The mutants cargo-mutants makes of the group's files, with or without the exclusions,
    named by their paths in the repository."""
    cwd, _, _, files = place(group, builds(group)[0])
    command = ["cargo", "mutants", "--list"] + file_args(files)
    if not use_config:
        command.append("--no-config")
    result = subprocess.run(command, cwd=cwd, check=True, capture_output=True, text=True)
    return [in_repository(line, files) for line in result.stdout.splitlines() if line.strip()]


def in_repository(name, files):
    """A mutant's name (or file) with its file's path in the repository."""
    path, sep, rest = name.partition(":")
    return {local: repo for repo, local in files.items()}.get(path, path) + sep + rest


def excluded_by_file(group):
    kept = set(listed(group, True))
    counts = {path: 0 for path in group["files"]}
    for mutant in listed(group, False):
        if mutant not in kept:
            counts[mutant.split(":", 1)[0]] += 1
    return counts


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
    return [(in_repository_mutant(o["scenario"]["Mutant"], files), OUTCOMES[o["summary"]])
            for o in outcomes["outcomes"]
            if isinstance(o["scenario"], dict) and "Mutant" in o["scenario"]]


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


def exclusions():
    """The `exclude_re` patterns of .cargo/mutants.toml, which cargo-mutants 27.1.0 does not
    apply to field deletions (sourcefrog/cargo-mutants#632): the script applies them to every
    outcome, so an excluded field deletion is counted excluded, not missed."""
    with open(EXCLUSIONS, "rb") as file:
        return [re.compile(pattern) for pattern in tomllib.load(file).get("exclude_re", [])]


def tally(group, outcomes, excluded=()):
    """Counts by file over every build's outcomes, and the names of those still missed; the
    mutants an `excluded` pattern matches are counted as excluded only."""
    counts = {path: dict.fromkeys(FIGURES, 0) for path in group["files"]}
    missed = []
    for number, build_outcomes in enumerate(outcomes):
        for mutant, outcome in build_outcomes:
            figures = counts[mutant["file"]]
            if any(pattern.search(mutant["name"]) for pattern in excluded):
                figures["excluded"] += number == 0
                continue
            if number == 0:
                figures["mutants"] += 1
            elif mutant["name"] not in missed:
                # cargo-mutants 27.1.0 runs field deletions whatever `--re` says
                # (sourcefrog/cargo-mutants#632): judged in the first build already.
                continue
            else:
                # Tried again in this build because no test of the builds before caught it.
                figures["missed"] -= 1
                missed.remove(mutant["name"])
            figures[outcome] += 1
            if outcome == "missed":
                missed.append(mutant["name"])
    return counts, missed


def run_group(group):
    """Runs one group; returns its counts by file, or None after naming the missed mutants."""
    print(f"mutants: group {group['name']}: {', '.join(group['files'])}", flush=True)
    outcomes, missed, excluded = [], None, exclusions()
    for build in builds(group):
        if missed == []:
            break
        print(f"  build: {build_name(build)}", flush=True)
        with tempfile.TemporaryDirectory(prefix="mutants-") as out:
            outcomes.append(run_cargo_mutants(group, build, missed, pathlib.Path(out)))
        missed = tally(group, outcomes, excluded)[1]
    counts, missed = tally(group, outcomes, excluded)
    for path, number in excluded_by_file(group).items():
        counts[path]["excluded"] += number
    for path, figures in counts.items():
        print(f"  {path}: " + ", ".join(f"{value} {key}" for key, value in figures.items()))
    if missed:
        print(f"FAILED: group {group['name']}: no test failed on these mutants (add a test that"
              " does, or list the mutant in .cargo/mutants.toml with the reason no test can tell"
              " it apart):")
        for name in missed:
            print(f"  MISSED {name}")
        return None
    return counts


def record_groups(names):
    groups, failed = load_groups(), []
    for name in names or groups:
        group = groups[name]
        # Hashed before the run: what the run copied, not what an edit meanwhile made of it.
        digest = group_hash(group)
        counts = run_group(group)
        if counts is None:
            failed.append(name)
            continue
        # Read again: another run of the script may have recorded a group meanwhile.
        record = load_record()
        record[name] = {"hash": digest, "date": datetime.date.today().isoformat(),
                        "cargo_mutants": CARGO_MUTANTS, "files": counts}
        # Each group as it passes: a later group's failure keeps the earlier ones' runs.
        RECORD.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
        print(f"recorded group {name} in {RECORD.relative_to(ROOT)}")
    docs(check_only=False)
    if failed:
        sys.exit(f"mutants: missed mutants in group(s) {', '.join(failed)} (above)")


def check():
    groups, record = judged_groups(), load_record()
    stale = [name for name, group in groups.items()
             if record.get(name, {}).get("hash") != group_hash(group)]
    for name in groups:
        if name not in stale:
            print(f"mutants: group {name}: unchanged since its recorded run of"
                  f" {record[name]['date']}, not re-run")
    if not stale and groups:
        # Code that the group's tests reach through files outside its inputs may have
        # changed: one recorded group, chosen by the commit, is run again.
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
        names = sorted(groups)
        stale = [names[int(head, 16) % len(names)]]
        print(f"mutants: spot check of group {stale[0]} (chosen by commit {head[:12]})")
    failed = [name for name in stale if run_group(groups[name]) is None]
    for name in (name for name in stale if name not in failed):
        if record.get(name, {}).get("hash") != group_hash(groups[name]):
            print(f"mutants: group {name} passed but its record is stale:"
                  f" `python3 scripts/mutants.py record {name}` would spare later runs")
    for paths, why in pending():
        print(f"mutants: PENDING {', '.join(paths)}: {why}")
    if failed:
        sys.exit(f"mutants: missed mutants in group(s) {', '.join(failed)} (above)")


def judged_groups():
    """The groups the lane holds to their record: all but those marked `pending`."""
    return {name: group for name, group in load_groups().items() if "pending" not in group}


def pending():
    """The core files no recorded group judges yet, with what stands in the way: mutants/
    groups.toml's `pending` table, and its groups marked `pending` (defined, so that `record`
    can run them, but not yet held to a record)."""
    with open(GROUPS, "rb") as file:
        table = tomllib.load(file).get("pending", {})
    lines = [([path], why) for path, why in sorted(table.items())]
    lines += [(group["files"], f"group {name}: {group['pending']}")
              for name, group in sorted(load_groups().items()) if "pending" in group]
    return lines


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
    files = [figures for entry in load_record().values() for figures in entry["files"].values()]
    total = {key: sum(figures[key] for figures in files) for key in FIGURES}
    waiting = sum(len(paths) for paths, _ in pending())
    return (f"{total['mutants']} mutants of {len(files)} core files: {total['caught']} caught,"
            f" {total['unviable']} unviable (they do not build), {total['timeout']} timed out,"
            f" {total['missed']} missed, and {total['excluded']} more excluded with their reasons"
            + (f"; {waiting} more core files and directories not yet judged (`pending` in"
               " mutants/groups.toml, with why)." if waiting else "."))


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


def self_test():
    group = {"name": "t", "files": ["mimalloc/src/arena.rs"], "tests": ["arena"]}
    mutant = {"file": "mimalloc/src/arena.rs"}
    default = [(dict(mutant, name="a"), "caught"), (dict(mutant, name="b"), "missed"),
               (dict(mutant, name="c"), "missed"), (dict(mutant, name="d"), "unviable")]
    counts, missed = tally(group, [default])
    assert counts["mimalloc/src/arena.rs"] == {
        "mutants": 4, "caught": 1, "unviable": 1, "timeout": 0, "missed": 2, "excluded": 0}, counts
    assert missed == ["b", "c"], missed
    # A mutant an exclusion names (a field deletion cargo-mutants ran anyway) is excluded.
    counts, missed = tally(group, [default], [re.compile(r"^c$")])
    assert counts["mimalloc/src/arena.rs"] == {
        "mutants": 3, "caught": 1, "unviable": 1, "timeout": 0, "missed": 1, "excluded": 1}, counts
    assert missed == ["b"], missed
    assert any(p.search("mimalloc/src/tracking/local.rs:107:13: delete field state from struct"
                        " Local expression in Local::unbuffered") for p in exclusions())
    # A later build judges what the earlier missed: caught there, no longer missed.
    counts, missed = tally(group, [default, [(dict(mutant, name="c"), "caught"),
                                             (dict(mutant, name="b"), "missed"),
                                             (dict(mutant, name="a"), "missed")]])
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
    # A group's hash follows its test files: deleting a test re-runs its groups.
    before = group_hash(group)
    assert before == group_hash(dict(group))
    assert before != group_hash(dict(group, tests=["arena", "first_call"]))
    # ... but not whether it is pending: dropping the key judges the run recorded while pending.
    assert before == group_hash(dict(group, pending="not yet run"))
    print("mutants.py self-test passed")


def main(args):
    if args[:1] == ["--self-test"]:
        self_test()
    elif args[:1] == ["check"]:
        check()
    elif args[:1] == ["record"]:
        record_groups(args[1:])
    elif args[:1] == ["docs"] and args[1:] in ([], ["--check"]):
        docs(check_only=args[1:] == ["--check"])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
