#!/usr/bin/env python3
"""The modules of a crate import one another without a circle, and as its stated layers allow.

    python3 scripts/check-module-graph.py [SRC_DIR ...]  (default: mimalloc/src)
    python3 scripts/check-module-graph.py --layers ARCHITECTURE.md
    python3 scripts/check-module-graph.py --own-sources FILE.rs ...  (no `#[path]` into another crate)
    python3 scripts/check-module-graph.py --self-test   (it finds what it should)

Builds the graph "module A names module B" from every `use` and every `crate::`/`super::`/
`self::` path in code (comments and doc comments are not imports), with the crate root's
re-exports (`pub use crate::x::Name` in lib.rs) resolved to the module that defines the name,
and the root itself left out: it is the crate's facade and declares every module. A parent
that names its child and a child that names its parent (`super::Item` for an item defined
in the parent's own file) make a circle too. Prints every circle and the graph it is in, and
exits 1, if there is one.

With `--layers`, reads the layering that the document states in its ```layers block and checks
every crate named there against it: for each crate (a line naming its `src` directory), its
top-level modules in numbered layers, from the bottom up, and for a module with children, the
order of its files (`self` is the module's own file). A module may use only modules of lower
layers; within a module, a file may use only the files listed before it. Every top-level module
and every child must be placed, so a new one cannot slip past the rule.
"""

import re
import sys
from pathlib import Path

ROOT_FILES = ("lib.rs", "main.rs")


def strip_comments(text):
    """The code of a Rust file without comments and string contents (paths in strings and
    docs are not imports)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"'(?:\\.|[^'\\])'", "' '", text)  # char literals, such as '"'
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text, flags=re.S)


MOD_DECLARATION = r"(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;"


def module_files(src):
    """{module path: file}, following `mod` declarations and their `#[path]` attributes (of a
    module declared twice under different cfgs, the first file stands for it)."""
    modules = {}

    def visit(path, file, directory):
        modules[path] = file
        raw = file.read_text()
        for m in re.finditer(MOD_DECLARATION, strip_comments(raw)):
            name = m.group(1)
            if f"{path}::{name}" not in modules:
                target, subdir = child_file(raw, file, directory, name)
                visit(f"{path}::{name}", target, subdir)

    def child_file(raw, file, directory, name):
        attribute = re.search(
            r'#\[path\s*=\s*"([^"]+)"\]\s*' + MOD_DECLARATION.replace("(\\w+)", name), raw
        )
        if attribute:
            # Relative to the declaring file's own directory.
            target = (file.parent / attribute.group(1)).resolve()
            return target, target.parent if target.name == "mod.rs" else target.with_suffix("")
        if (directory / f"{name}.rs").exists():
            return directory / f"{name}.rs", directory / name
        return directory / name / "mod.rs", directory / name

    for root in ROOT_FILES:
        if (src / root).exists():
            visit("crate", src / root, src)
            return modules
    sys.exit(f"no lib.rs or main.rs in {src}")


def use_paths(code):
    """Every path of every `use` tree, expanded (`use a::{b, c::d as e}` -> a::b, a::c::d)."""
    paths = []
    for m in re.finditer(r"\buse\s+([^;]+);", code):
        paths.extend(expand(re.sub(r"\s+", " ", m.group(1)).strip()))
    return paths


def expand(tree):
    tree = tree.strip()
    if "{" not in tree:
        return [re.sub(r"\s+as\s+\w+$", "", tree).replace(" ", "")]
    head, rest = tree.split("{", 1)
    inner = rest[: rest.rfind("}")]
    parts, depth, current = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        current += ch
    parts.append(current)
    head = head.replace(" ", "")
    out = []
    for part in filter(str.strip, parts):
        for tail in expand(part):
            out.append(head.rstrip(":") if tail == "self" else head + tail)
    return out


def resolve(path, current, modules, children):
    """The module a path names from module `current`, or None if it is outside the crate."""
    segments = [s for s in path.split("::") if s]
    if not segments:
        return None
    if segments[0] == "crate":
        base, rest = "crate", segments[1:]
    elif segments[0] == "super":
        base, rest = current, segments
        while rest and rest[0] == "super":
            base, rest = base.rsplit("::", 1)[0], rest[1:]
    elif segments[0] == "self":
        base, rest = current, segments[1:]
    elif segments[0] in children.get(current, ()):
        base, rest = current, segments
    else:
        return None
    module = base
    for segment in rest:
        if f"{module}::{segment}" in modules:
            module = f"{module}::{segment}"
        else:
            break
    # An inline module (`mod tests { .. }`) is part of its file's module.
    while module not in modules and "::" in module:
        module = module.rsplit("::", 1)[0]
    return module


def root_reexports(modules, children):
    """{name: module} for the crate root's `pub use` items."""
    code = strip_comments(modules["crate"].read_text())
    names = {}
    for path in use_paths(code):
        module = resolve(path, "crate", modules, children)
        if module and module != "crate":
            names[path.split("::")[-1]] = module
    return names


def graph(modules):
    children = {}
    for path in modules:
        if path != "crate":
            parent, name = path.rsplit("::", 1)
            children.setdefault(parent, set()).add(name)
    reexported = root_reexports(modules, children)
    edges = {path: set() for path in modules if path != "crate"}
    for path, file in modules.items():
        if path == "crate":
            continue
        for scope, code in inline_modules(path, strip_comments(file.read_text())):
            for p in named_paths(code):
                target = resolve(p, scope, modules, children)
                if target == "crate":
                    target = reexported.get(p.split("::")[1] if p.startswith("crate::") else "")
                if target and target != path and target != "crate":
                    edges[path].add(target)
    return edges


def named_paths(code):
    """The paths a piece of code names: its `use` trees, and paths in code (from `crate`,
    `super`, `self`, or a child module's name)."""
    return use_paths(code) + [m.group(0) for m in re.finditer(r"(?<!::)\b\w+(?:::\w+)+", code)]


def inline_modules(path, code):
    """(module path, code) for the file's own code and for each `mod name { ... }` block in
    it (a test module, say), named by the blocks around it, whose `super` is the module around
    it: what such a block names of its own file is not an edge."""
    blocks = []  # (start, body start, end, name), in the order they open
    for m in re.finditer(r"\bmod\s+(\w+)\s*\{", code):
        depth, end = 0, m.end() - 1
        for end in range(m.end() - 1, len(code)):
            depth += code[end] == "{"
            depth -= code[end] == "}"
            if depth == 0:
                break
        blocks.append((m.start(), m.end(), end, m.group(1)))

    def within(lo, hi):
        """code[lo:hi] without the blocks in it (theirs is their own module's code)."""
        out, at = [], lo
        for start, _, end, _ in blocks:
            if start >= at and end < hi:
                out.append(code[at:start])
                at = end + 1
        return "".join(out) + code[at:hi]

    pieces = [(path, within(0, len(code)))]
    for start, body, end, name in blocks:
        around = [n for s, _, e, n in blocks if s < start and end <= e]
        pieces.append(("::".join([path] + around + [name]), within(body, end)))
    return pieces


def circles(edges):
    found, state, stack = [], {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node)
    return found


def check(src, quiet=False):
    """The circles among the modules of the crate whose sources are in `src`."""
    modules = module_files(src)
    edges = graph(modules)
    if not quiet:
        for node in sorted(edges):
            print(f"{node} -> {', '.join(sorted(edges[node])) or '(nothing)'}")
    return len(modules) - 1, circles(edges)


def parse_layers(text):
    """{src: ([set of top-level modules per layer, bottom first], {module: [file order]})}
    from the document's ```layers block."""
    block = re.search(r"```layers\n(.*?)```", text, flags=re.S)
    if not block:
        sys.exit("the document has no ```layers block")
    crates, current = {}, None
    for line in block.group(1).splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.endswith("/src"):
            current = crates.setdefault(line, ([], {}))
        elif re.match(r"\d+\s", line):
            current[0].append(set(line.split(":", 1)[1].split()))
        else:
            module, order = line.split(":", 1)
            current[1][module.strip().rstrip("/").replace("/", "::")] = order.split()
    return crates


def layering_problems(src, layers, orders):
    """How the crate in `src` breaks the stated layers (empty when it keeps them)."""
    edges = graph(module_files(src))
    level = {m: i for i, group in enumerate(layers) for m in group}
    problems = []
    for node, targets in sorted(edges.items()):
        top = node.split("::")[1]
        if top not in level:
            problems.append(f"{node} is in no layer")
            continue
        for target in sorted(targets):
            problems.extend(edge_problem(node, target, level, orders))
    for parent in {n.rsplit("::", 1)[0] for n in edges if n.count("::") > 1}:
        placed = set(orders.get(parent[len("crate::"):], ()))
        for child in sorted(n for n in edges if n.rsplit("::", 1)[0] == parent):
            if child.rsplit("::", 1)[1] not in placed:
                problems.append(f"{child} is not in the order of {parent}'s files")
    return problems


def edge_problem(node, target, level, orders):
    a, b = node.split("::")[1:], target.split("::")[1:]
    if a[0] != b[0]:
        if level.get(b[0], len(level)) < level[a[0]]:
            return []
        return [f"{node} uses {target}, which is not in a lower layer"]
    common = 0
    while common < min(len(a), len(b)) and a[common] == b[common]:
        common += 1
    parent = "::".join(a[:common])
    order = orders.get(parent)
    if order is None:
        return [f"{node} uses {target}, but the files of crate::{parent} have no stated order"]
    rank = lambda path: order.index(path[common]) if len(path) > common else order.index("self")
    try:
        if rank(b) < rank(a):
            return []
    except ValueError:
        return []  # reported as unplaced
    return [f"{node} uses {target}, which is not listed before it in crate::{parent}'s order"]


def check_layers(document):
    failed = False
    for src, (layers, orders) in parse_layers(Path(document).read_text()).items():
        problems = layering_problems(Path(src), layers, orders)
        for problem in problems:
            print(f"layering: {src}: {problem}", file=sys.stderr)
        failed |= bool(problems)
        if not problems:
            print(f"{src} keeps the layers {document} states ({len(layers)} layers)")
    sys.exit(1 if failed else 0)


def crate_of(path):
    """The directory of the manifest that owns `path`."""
    for directory in Path(path).resolve().parents:
        if (directory / "Cargo.toml").exists():
            return directory
    return None


def foreign_paths(files):
    """`#[path]` attributes that reach into another crate's sources: `(file, target)`."""
    found = []
    for file in map(Path, files):
        for target in re.findall(r'#\[path\s*=\s*"([^"]+)"\]', strip_comments_keep_strings(file)):
            if crate_of(file.parent / target) != crate_of(file):
                found.append((str(file), target))
    return found


def strip_comments_keep_strings(file):
    text = file.read_text()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def check_own_sources(files):
    found = foreign_paths(files)
    for file, target in found:
        print(f"{file}: #[path = \"{target}\"] includes another crate's source", file=sys.stderr)
    if not found:
        print(f"{len(files)} files: no #[path] into another crate")
    sys.exit(1 if found else 0)


SELF_TEST_CRATES = {
    "siblings": (
        {"lib.rs": "mod a;\nmod b;\n", "a.rs": "use crate::b::B;\npub struct A;\n",
         "b.rs": "pub struct B;\nfn f() -> super::a::A { todo!() }\n"},
        ["crate::a -> crate::b -> crate::a"],
    ),
    "parent and child": (
        {"lib.rs": "mod p;\n", "p/mod.rs": "mod c;\npub struct P;\nfn f() { c::g() }\n",
         "p/c.rs": "use super::P;\npub fn g() {}\n"},
        ["crate::p -> crate::p::c -> crate::p"],
    ),
    "through the root's re-export": (
        {"lib.rs": "mod a;\nmod b;\npub use crate::a::A;\n",
         "a.rs": "use crate::b;\npub struct A;\nfn f() { b::g() }\n",
         "b.rs": "use crate::A;\npub fn g() {}\n"},
        ["crate::a -> crate::b -> crate::a"],
    ),
    "none: a test module inside an inline module": (
        {"lib.rs": "mod p;\n", "p/mod.rs": "mod c;\nfn h() { c::g() }\n",
         "p/c.rs": "pub fn g() {}\nmod inner {\n    fn i() { super::g() }\n"
                   "    mod tests {\n        use super::*;\n        use super::super::g;\n"
                   "    }\n}\n"},
        [],
    ),
    "none: a test module, a doc link, a string, a path file": (
        {"lib.rs": "mod a;\nmod b;\n",
         "a.rs": "/// [`crate::b::B`]\npub struct A;\nconst S: &str = \"crate::b::B\";\n"
                 "#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
         "b.rs": "use crate::a::A;\n#[path = \"b_impl.rs\"]\nmod imp;\npub struct B;\n",
         "b_impl.rs": "use super::B;\n"},
        [],
    ),
}


def self_test():
    import tempfile
    failures = 0
    for name, (files, expected) in SELF_TEST_CRATES.items():
        with tempfile.TemporaryDirectory() as tmp:
            for path, text in files.items():
                (Path(tmp) / path).parent.mkdir(parents=True, exist_ok=True)
                (Path(tmp) / path).write_text(text)
            _, found = check(Path(tmp), quiet=True)
        got = [" -> ".join(c) for c in found]
        ok = got == expected
        failures += not ok
        print(f"{'ok' if ok else 'FAILED'}: {name}: {got or 'no circle'}")
    failures += layering_self_test()
    failures += own_sources_self_test()
    sys.exit(1 if failures else 0)


LAYERED_CRATE = {
    "lib.rs": "mod low;\nmod high;\nmod tree;\n",
    "low.rs": "pub fn f() {}\n",
    "high.rs": "use crate::low;\n",
    "tree/mod.rs": "mod first;\nmod second;\nfn g() { second::h() }\n",
    "tree/first.rs": "pub fn f() {}\n",
    "tree/second.rs": "use super::first;\npub fn h() {}\n",
}

LAYER_SELF_TESTS = {
    "kept": ("1 a: low\n2 b: high tree\ntree/: first second self\n", []),
    "a lower layer uses a higher one": (
        "1 a: high\n2 b: low tree\ntree/: first second self\n",
        ["crate::high uses crate::low, which is not in a lower layer"],
    ),
    "a file uses one listed after it": (
        "1 a: low\n2 b: high tree\ntree/: second first self\n",
        ["crate::tree::second uses crate::tree::first, which is not listed before it in "
         "crate::tree's order"],
    ),
    "a module left out": ("1 a: low\n2 b: tree\ntree/: first second self\n",
                          ["crate::high is in no layer"]),
}


def layering_self_test():
    import tempfile
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for path, text in LAYERED_CRATE.items():
            (Path(tmp) / path).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / path).write_text(text)
        for name, (stated, expected) in LAYER_SELF_TESTS.items():
            layers, orders = parse_layers(f"```layers\n{tmp}/src\n{stated}```")[f"{tmp}/src"]
            got = layering_problems(Path(tmp), layers, orders)
            ok = got == expected
            failures += not ok
            print(f"{'ok' if ok else 'FAILED'}: layers {name}: {got or 'kept'}")
    return failures


def own_sources_self_test():
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        files = {"a/Cargo.toml": "", "a/src/lib.rs": '#[path = "../../b/src/x.rs"]\nmod x;\n',
                 "a/tests/t.rs": '#[path = "../src/y.rs"]\nmod y;\n',
                 "b/Cargo.toml": "", "b/src/x.rs": "", "a/src/y.rs": ""}
        for path, text in files.items():
            (Path(tmp) / path).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / path).write_text(text)
        got = foreign_paths([Path(tmp) / "a/src/lib.rs", Path(tmp) / "a/tests/t.rs"])
    ok = [target for _, target in got] == ["../../b/src/x.rs"]
    print(f"{'ok' if ok else 'FAILED'}: #[path] into another crate: {got}")
    return not ok


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if sys.argv[1:2] == ["--layers"]:
        return check_layers(sys.argv[2])
    if sys.argv[1:2] == ["--own-sources"]:
        return check_own_sources(sys.argv[2:])
    failed = False
    for src in map(Path, sys.argv[1:] or ["mimalloc/src"]):
        count, found = check(src, quiet=True)
        if found:
            check(src)
        for circle in found:
            print("circle: " + " -> ".join(circle), file=sys.stderr)
        failed |= bool(found)
        if not found:
            print(f"{count} modules of {src}, no circle")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
