#!/usr/bin/env python3
"""The modules of a crate import one another without a circle.

    python3 scripts/check-module-graph.py [SRC_DIR]      (default: mimalloc/src)

Builds the graph "module A names module B" from every `use` and every `crate::`/`super::`/
`self::` path in code (comments and doc comments are not imports), with the crate root's
re-exports (`pub use crate::x::Name` in lib.rs) resolved to the module that defines the name,
and the root itself left out: it is the crate's facade and declares every module. A parent
that names its child and a child that names its parent (`super::Item` for an item defined
in the parent's own file) make a circle too. Prints the graph, then every circle; exits 1 if
there is one.
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
                target, subdir = child_file(raw, directory, name)
                visit(f"{path}::{name}", target, subdir)

    def child_file(raw, directory, name):
        attribute = re.search(
            r'#\[path\s*=\s*"([^"]+)"\]\s*' + MOD_DECLARATION.replace("(\\w+)", name), raw
        )
        if attribute:
            target = directory / attribute.group(1)
            return target, target.parent
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
    it (a test module, say), whose `super` is the file's module: what such a block names of
    its own file is not an edge."""
    pieces, rest = [], code
    for m in reversed(list(re.finditer(r"\bmod\s+(\w+)\s*\{", code))):
        depth, end = 0, m.end() - 1
        for end in range(m.end() - 1, len(code)):
            depth += code[end] == "{"
            depth -= code[end] == "}"
            if depth == 0:
                break
        pieces.append((f"{path}::{m.group(1)}", code[m.end():end]))
        rest = rest[: m.start()] + rest[end + 1 :]
    return [(path, rest)] + pieces


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


def main():
    src = Path(sys.argv[1] if len(sys.argv) > 1 else "mimalloc/src")
    modules = module_files(src)
    edges = graph(modules)
    for node in sorted(edges):
        print(f"{node} -> {', '.join(sorted(edges[node])) or '(nothing)'}")
    found = circles(edges)
    for circle in found:
        print("circle: " + " -> ".join(circle), file=sys.stderr)
    if found:
        sys.exit(1)
    print(f"{len(modules) - 1} modules of {src}, no circle")


if __name__ == "__main__":
    main()
