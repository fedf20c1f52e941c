#!/usr/bin/env python3
"""Fail when a manifest that Rust 1.63 builds uses a key Cargo 1.63 cannot read.

    scripts/check-msrv-manifests.py [--self-test] [MANIFEST ...]

The MSRV promise covers rustc *and* cargo 1.63. This machine's rustc 1.63 comes with cargo 1.65,
which already reads workspace inheritance (`version.workspace = true`, `{ workspace = true }`),
so building here cannot catch a manifest that Cargo 1.63 rejects. This check holds every key of
the manifests against the manifest schema of Cargo 1.63 (its `util/toml` module): an inherited
key fails (Cargo 1.63 refuses the manifest), an unknown key fails too (Cargo 1.63 ignores it with
a warning every dependent sees), except the few listed in IGNORED with the reason that is fine.
With no arguments it checks the manifests the MSRV lanes build; `--self-test` shows first that
it rejects what Cargo 1.63 rejects.
"""
import sys
import tomllib

DEFAULT_MANIFESTS = [
    "mimalloc-sys/Cargo.toml",
    "mimalloc-sys/cfgs/Cargo.toml",
    "mimalloc/Cargo.toml",
    "tests/Cargo.toml",
    "tests/rng/Cargo.toml",
    "tests/plugin-recipe/Cargo.toml",
    "tests/plugin/Cargo.toml",
    "tests/no-std-product/Cargo.toml",
    "examples/product/Cargo.toml",
]

TOP = {"cargo-features", "package", "project", "profile", "lib", "bin", "example", "test",
       "bench", "dependencies", "dev-dependencies", "dev_dependencies", "build-dependencies",
       "build_dependencies", "features", "target", "replace", "patch", "workspace", "badges"}
PACKAGE = {"edition", "rust-version", "name", "version", "authors", "build", "metabuild",
           "default-target", "forced-target", "links", "exclude", "include", "publish",
           "workspace", "im-a-teapot", "autobins", "autoexamples", "autotests", "autobenches",
           "default-run", "description", "homepage", "documentation", "readme", "keywords",
           "categories", "license", "license-file", "repository", "resolver", "metadata"}
DEPENDENCY = {"version", "registry", "registry-index", "path", "git", "branch", "tag", "rev",
              "features", "optional", "default-features", "default_features", "package",
              "public", "artifact", "lib", "target"}
TARGET_TABLE = {"name", "crate-type", "crate_type", "path", "test", "doctest", "bench", "doc",
                "plugin", "proc-macro", "proc_macro", "harness", "required-features", "edition"}
WORKSPACE = {"members", "default-members", "exclude", "resolver", "metadata"}
DEP_TABLES = {"dependencies", "dev-dependencies", "dev_dependencies", "build-dependencies",
              "build_dependencies"}
# Keys Cargo 1.63 does not know and skips with a warning, and why that is harmless here.
IGNORED = {
    "lints": "Cargo 1.74's lint levels; they only matter to this workspace's own development "
             "builds (dependents cap lints), and older cargo skips the table",
}


def problems(manifest):
    """Yields (key path, why) for each key Cargo 1.63 cannot read."""
    for key, value in manifest.items():
        if key in IGNORED:
            continue
        if key not in TOP:
            yield key, "not a manifest key in Cargo 1.63"
        elif key in ("package", "project"):
            yield from keys_of(value, PACKAGE, key, inheritable=True)
        elif key in DEP_TABLES:
            yield from dependencies(value, key)
        elif key == "target":
            for cfg, tables in value.items():
                for table, deps in tables.items():
                    path = f"target.{cfg}.{table}"
                    if table in DEP_TABLES:
                        yield from dependencies(deps, path)
                    else:
                        yield path, "not a target table in Cargo 1.63"
        elif key in ("lib", "bin", "example", "test", "bench"):
            for entry in value if isinstance(value, list) else [value]:
                yield from keys_of(entry, TARGET_TABLE, key)
        elif key == "workspace":
            yield from keys_of(value, WORKSPACE, key)


def keys_of(table, known, path, inheritable=False):
    for key, value in table.items():
        if key not in known:
            yield f"{path}.{key}", "unknown to Cargo 1.63"
        elif inheritable and isinstance(value, dict) and key != "metadata":
            yield f"{path}.{key}", "inherited from the workspace (Cargo 1.64+)"


def dependencies(table, path):
    for name, spec in table.items():
        if isinstance(spec, dict):
            if "workspace" in spec:
                yield f"{path}.{name}", "inherited from the workspace (Cargo 1.64+)"
            yield from keys_of({k: v for k, v in spec.items() if k != "workspace"},
                               DEPENDENCY, f"{path}.{name}")


def check(paths):
    failed = 0
    for path in paths:
        with open(path, "rb") as f:
            found = list(problems(tomllib.load(f)))
        for key, why in found:
            print(f"{path}: `{key}`: {why}")
        failed += bool(found)
    return failed


def self_test():
    rejected = [
        '[package]\nname = "a"\nversion.workspace = true\n',
        '[package]\nname = "a"\nversion = "1.0.0"\n[dependencies]\nlibc = { workspace = true }\n',
        '[package]\nname = "a"\nversion = "1.0.0"\n[target."cfg(unix)".dependencies]\n'
        'libc = { workspace = true }\n',
        '[package]\nname = "a"\nversion = "1.0.0"\nbadge = "x"\n',
        '[package]\nname = "a"\nversion = "1.0.0"\n[lib]\ncrate_types = ["cdylib"]\n',
    ]
    accepted = ['[package]\nname = "a"\nversion = "1.0.0"\nrust-version = "1.63"\n'
                '[package.metadata.docs.rs]\nfeatures = ["x"]\n[lints]\nworkspace = true\n'
                '[dependencies]\nlibc = { version = "0.2", default-features = false }\n']
    for text in rejected:
        assert list(problems(tomllib.loads(text))), f"not rejected:\n{text}"
    for text in accepted:
        found = list(problems(tomllib.loads(text)))
        assert not found, f"rejected {found}:\n{text}"
    print(f"self-test: {len(rejected)} manifests rejected, {len(accepted)} accepted, as Cargo 1.63 would")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--self-test"]:
        self_test()
        args = args[1:]
    paths = args or DEFAULT_MANIFESTS
    if check(paths):
        sys.exit("these manifests cannot be read by Cargo 1.63 (the MSRV): write the keys out")
    print(f"{len(paths)} manifests readable by Cargo 1.63: {', '.join(paths)}")
