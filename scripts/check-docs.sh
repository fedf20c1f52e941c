#!/usr/bin/env bash
# Cheap checks that the docs name only what exists, and name everything that must be named:
#
#   scripts/check-docs.sh
#
# - every feature of mimalloc-sys and mimalloc (but `default`) is a row of the README's feature
#   table and is named in its crate's `src/lib.rs` docs; every row of that table is a feature of
#   `mimalloc`; every build-time feature of mimalloc-sys is forwarded by `mimalloc`;
# - every file path in README.md, ARCHITECTURE.md, BENCHMARKS.md, bench/README.md, docs/*.md,
#   the crates' doc comments and CI files exists (relative to the repository, the document, or the
#   ARCHITECTURE.md section's directory);
# - the mimalloc versions the README gives, and mimalloc-sys's example of
#   DEP_MIMALLOC_VERSION, are those of the vendored headers;
# - docs/ci.md's tables are the lanes of `bash .ci/run lanes landing` and `bash .ci/run lanes`;
# - the mutation figures of README.md and docs/reliability.md are mutants/record.json's;
# - every citation of a section, `FILE.md#anchor` (in a Markdown link or in a comment), names a
#   heading of FILE.md as GitHub makes its anchor, and no section is cited by its quoted title
#   (which nothing checks: several such citations outlived their headings).
#
# Prints every problem, then fails if there was one. Needs python3 >= 3.11 (tomllib).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python3 scripts/mutants.py docs --check
exec python3 - <<'PY'
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

problems = []


def problem(text):
    problems.append(text)


def features(manifest):
    with open(manifest, "rb") as f:
        table = tomllib.load(f).get("features", {})
    return {name: deps for name, deps in table.items() if name != "default"}


def backticked(text):
    return set(re.findall(r"`([^`\n]+)`", text))


def section(markdown, heading):
    """The text under `heading` (a `## ` line) up to the next heading of that level."""
    m = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", markdown, re.M | re.S)
    return m.group(1) if m else ""


def crate_docs(path):
    return "\n".join(l[3:] for l in Path(path).read_text().splitlines() if l.startswith("//!"))


readme = Path("README.md").read_text()
architecture = Path("ARCHITECTURE.md").read_text()

# Features.
table = section(readme, "Cargo features")
if not table:
    problem("README.md: no '## Cargo features' section")
rows = set(re.findall(r"^\| `([^`]+)` \|", table, re.M))
sys_features = features("mimalloc-sys/Cargo.toml")
safe_features = features("mimalloc/Cargo.toml")
for crate, feats in [("mimalloc-sys", sys_features), ("mimalloc", safe_features)]:
    docs = backticked(crate_docs(f"{crate}/src/lib.rs"))
    for name in sorted(feats):
        if name not in rows:
            problem(f"README.md: the feature table has no row for `{name}` ({crate}/Cargo.toml)")
        if name not in docs:
            problem(f"{crate}/src/lib.rs: the crate docs do not name the feature `{name}`")
for name in sorted(rows - set(safe_features)):
    problem(f"README.md: the feature table has a row for `{name}`, which mimalloc/Cargo.toml does not define")
for name in sorted(sys_features):
    if f"mimalloc-sys/{name}" not in safe_features.get(name, []):
        problem(f"mimalloc/Cargo.toml: `{name}` does not forward mimalloc-sys/{name}")

# File paths.
tracked = subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split()
# Files and the directories that hold them.
tracked += sorted({str(d) for f in tracked for d in Path(f).parents if str(d) != "."})
EXTENSIONS = (".rs", ".sh", ".c", ".h", ".md", ".toml", ".yml", ".cjs", ".lock")
# Produced by a run (the benchmark's reports), or upstream's, not this repository's.
NOT_FILES_HERE = {"results.md", "results.svg", "samples.csv", "instructions.md", "limit.md", "test-stress.c",
                  ".cargo/config.toml"}


def looks_like_path(token):
    if token in NOT_FILES_HERE or token.startswith(("target/", "/", "http")):
        return False
    if not re.fullmatch(r"[A-Za-z0-9_.\-/]+", token) or "..." in token:
        return False
    return "/" in token or token.endswith(EXTENSIONS)


def exists(token, bases):
    path = token.rstrip("/")
    for base in bases:
        if Path(os.path.normpath(os.path.join(base, path))).exists():
            return True
    # A file named by its last components (`memory_tools.rs`, `tests/abi.rs`) under a base.
    for base in bases:
        prefix = f"{base}/" if base else ""
        if any(f.startswith(prefix) and (f == prefix + path or f.endswith("/" + path)) for f in tracked):
            return True
    return False


def check_paths(name, text, bases_for_line=None):
    for number, line in enumerate(text.splitlines(), 1):
        bases = bases_for_line(line) if bases_for_line else [""]
        for token in backticked(line):
            if looks_like_path(token) and not exists(token, bases):
                problem(f"{name}:{number}: `{token}` does not exist")


for doc in ["README.md", "BENCHMARKS.md", "bench/README.md", *sorted(map(str, Path("docs").glob("*.md")))]:
    here = str(Path(doc).parent) if "/" in doc else ""
    check_paths(doc, Path(doc).read_text(), lambda line, here=here: ["", here] if here else [""])

# ARCHITECTURE.md: paths from the repository, or named by their last components (`route.rs`).
check_paths("ARCHITECTURE.md", architecture)

for crate in ["mimalloc", "mimalloc-sys"]:
    for source in sorted(Path(crate).rglob("*.rs")):
        if "bindings" in source.parts:
            continue
        lines = source.read_text().splitlines()
        docs = "\n".join(l.strip()[3:] if l.strip().startswith(("///", "//!")) else "" for l in lines)
        check_paths(str(source), docs, lambda line, crate=crate: ["", crate])

for ci_file in (".ci/run", ".ci/lanes.sh", ".ci/lib.sh", ".github/workflows/ci.yml"):
    for number, line in enumerate(Path(ci_file).read_text().splitlines(), 1):
        for script in re.findall(r"\bscripts/[A-Za-z0-9_.\-]+", line):
            if not Path(script).exists():
                problem(f"{ci_file}:{number}: {script} does not exist")

# docs/ci.md: its landing table is exactly `bash .ci/run lanes landing`, in order, and its full
# table names every lane of `bash .ci/run lanes`.
ci_doc = Path("docs/ci.md").read_text()


def first_cells(heading):
    rows = [l for l in section(ci_doc, heading).splitlines() if l.startswith("| `")]
    return [re.findall(r"`([^`]+)`", row.split("|")[1]) for row in rows]


def lanes(*which):
    out = subprocess.run(["bash", ".ci/run", "lanes", *which], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


landing_rows = [cells[0] for cells in first_cells("The landing set")]
if landing_rows != lanes("landing"):
    problem(f"docs/ci.md: the landing table lists {landing_rows}, `bash .ci/run lanes landing` {lanes('landing')}")
full_rows = {name.split()[0] for cells in first_cells("The full run") for name in cells}
for lane in sorted({line.split()[0] for line in lanes()} - full_rows):
    problem(f"docs/ci.md: the full run's table has no row for lane `{lane}`")
for lane in sorted(full_rows - {line.split()[0] for line in lanes()}):
    problem(f"docs/ci.md: the full run's table names `{lane}`, which `bash .ci/run lanes` does not run")

# Versions.
def version(v):
    header = Path(f"vendor/mimalloc/{v}/include/mimalloc.h").read_text()
    number = int(re.search(r"#define MI_MALLOC_VERSION (\d+)", header).group(1))
    return number, f"{number // 10000}.{number % 10000 // 100}.{number % 100}"


(v3_number, v3), (v2_number, v2) = version("v3"), version("v2")
v2_row = re.search(r"^\| `v2` \|.*$", table, re.M)
if not v2_row or f"({v2})" not in v2_row.group(0) or f"({v3})" not in v2_row.group(0):
    problem(f"README.md: the `v2` row does not give the vendored versions ({v2}) and ({v3})")
for source in ["mimalloc-sys/src/lib.rs", "mimalloc-sys/build.rs"]:
    for number, line in enumerate(Path(source).read_text().splitlines(), 1):
        for example in re.findall(r"e\.g\. `(\d{5})`", line):
            if int(example) != v3_number:
                problem(f"{source}:{number}: the example version `{example}` is not the vendored {v3_number}")

# Anchors: a citation of a section names a heading that exists.
def slug(heading):
    """GitHub's anchor of a heading: lower case, code marks and punctuation dropped (not `-` or
    `_`), spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(markdown):
    found, seen, fenced = set(), {}, False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#{1,6} (.*)", line)):
            base = slug(m.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


CITABLE = (".rs", ".md", ".toml", ".py", ".sh", ".yml", ".cjs")
QUOTED = re.compile(r'\.md(\]\([^)]*\))?\)?,\s+\(?\\?"[A-Z]')
for name in tracked:
    if not name.endswith(CITABLE) or name.startswith("vendor/") or name == "scripts/check-docs.sh":
        continue
    path = Path(name)
    if not path.is_file():
        continue
    text = path.read_text()
    for number, line in enumerate(text.splitlines(), 1):
        if QUOTED.search(line):
            problem(f"{name}:{number}: a section cited by its title: cite it as FILE.md#anchor")
        targets = re.findall(r"([\w./-]*\.md)#([\w-]+)", line)
        if name.endswith(".md"):
            targets += [(name, a) for a in re.findall(r"\]\(#([\w-]+)\)", line)]
        for target, anchor in targets:
            here = [os.path.normpath(os.path.join(str(path.parent), target)), target]
            doc = next((Path(c) for c in here if Path(c).is_file()), None)
            if doc is None:
                problem(f"{name}:{number}: {target} (cited as {target}#{anchor}) does not exist")
            elif anchor not in anchors(doc.read_text()):
                problem(f"{name}:{number}: {target} has no heading whose anchor is #{anchor}")

for p in problems:
    print(f"check-docs: {p}", file=sys.stderr)
if problems:
    sys.exit(f"check-docs: {len(problems)} problem(s)")
print("check-docs: features, paths, anchors and versions in the docs match the code")
PY
