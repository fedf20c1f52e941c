//! Builds the vendored mimalloc as a static library, in five steps: gather the target's facts,
//! decide (`build/plan.rs`, with baked option defaults from `build/baked.rs`), compile, link,
//! and publish metadata. With the `bindgen` feature it also regenerates the Rust bindings
//! (`build/bindings.rs`).

#[path = "build/plan.rs"]
mod plan;

#[path = "build/baked.rs"]
mod baked;

#[cfg(feature = "bindgen")]
#[path = "build/bindings.rs"]
mod bindings;

use baked::{OptionDefault, OPTION_DEFAULT_PREFIX};
use plan::{Decision, Features, Language, Plan, Target};
use std::path::{Path, PathBuf};

fn main() {
    let target = target_facts();
    let release = env("PROFILE").as_deref() == Some("release");
    let plan = match plan::decide(&target, &features(), release) {
        Decision::Build(plan) => plan,
        Decision::Skip(why) => {
            println!("cargo:warning={why}");
            return;
        }
        Decision::Refuse(why) => {
            eprintln!("error: {why}");
            std::process::exit(1);
        }
    };
    for warning in &plan.warnings {
        println!("cargo:warning={warning}");
    }

    let sources = vendored_sources(plan.version);
    let defaults = option_defaults(&plan, baked_option_defaults(&target, &sources));
    let compiled = compile(&target, &plan, &sources, &defaults);
    link(&plan);
    publish_metadata(&sources, &plan);
    publish_compilation(&compiled);

    #[cfg(feature = "bindgen")]
    bindings::generate(&sources, plan.version, &target, &out_dir());
}

/// Reads an environment variable and tells cargo to rerun the build script when it changes:
/// every input of the build is also a rebuild trigger (clippy bans `std::env::var` elsewhere).
#[allow(clippy::disallowed_methods)]
fn env(name: &str) -> Option<String> {
    println!("cargo:rerun-if-env-changed={name}");
    std::env::var(name).ok()
}

fn required(name: &str) -> String {
    env(name)
        .unwrap_or_else(|| panic!("cargo did not set {name}: run this build script through cargo"))
}

/// Step 1: the target, as cargo describes it (`CARGO_CFG_<KEY>`). Never `cfg!`: that is the
/// machine running the build.
fn target_facts() -> Target {
    let cfg = |key: &str| env(&format!("CARGO_CFG_{}", key.to_ascii_uppercase()));
    Target::from_cfg(&required("TARGET"), cfg).unwrap_or_else(|e| panic!("{e}"))
}

fn features() -> Features {
    let on = |name: &str| env(&format!("CARGO_FEATURE_{name}")).is_some();
    Features {
        v2: on("V2"),
        secure: on("SECURE"),
        debug: on("DEBUG"),
        override_malloc: on("OVERRIDE"),
        local_dynamic_tls: on("LOCAL_DYNAMIC_TLS"),
        asan: on("ASAN"),
        tsan: on("TSAN"),
        valgrind: on("VALGRIND"),
        guarded: on("GUARDED"),
        no_policy: on("NO_POLICY"),
        debug_in_debug: on("DEBUG_IN_DEBUG"),
        no_thp: on("NO_THP"),
        win_direct_tls: on("WIN_DIRECT_TLS"),
        skip_collect_on_exit: on("SKIP_COLLECT_ON_EXIT"),
        etw: on("ETW"),
        free_use_pagemap: on("FREE_USE_PAGEMAP"),
    }
}

fn out_dir() -> PathBuf {
    PathBuf::from(required("OUT_DIR"))
}

/// The vendored tree of one mimalloc version (`vendor/mimalloc/v3`, ...).
struct Sources {
    root: PathBuf,
}

impl Sources {
    fn include(&self) -> PathBuf {
        self.root.join("include")
    }
    fn src(&self) -> PathBuf {
        self.root.join("src")
    }
    fn header(&self) -> String {
        let path = self.include().join("mimalloc.h");
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
    }
}

/// `vendor` next to this manifest is a symlink to the repository's top-level `vendor/`; in a
/// packaged crate it is a real directory. A checkout made without symlink support (git on
/// Windows by default) has a small text file there instead, so look one level up as well.
fn vendored_sources(version: plan::Version) -> Sources {
    let manifest_dir = PathBuf::from(required("CARGO_MANIFEST_DIR"));
    let candidates = [
        manifest_dir
            .join("vendor")
            .join("mimalloc")
            .join(version.dir()),
        manifest_dir
            .join("..")
            .join("vendor")
            .join("mimalloc")
            .join(version.dir()),
    ];
    match candidates
        .iter()
        .find(|root| root.join("src").join("static.c").is_file())
    {
        Some(root) => Sources { root: root.clone() },
        None => panic!(
            "the vendored mimalloc sources are missing: looked for src/static.c under {} and {}; \
             a checkout of this repository must include the top-level vendor/ directory",
            candidates[0].display(),
            candidates[1].display()
        ),
    }
}

/// Step 2b: option defaults the user bakes in with `MIMALLOC_SYS_DEFAULT_<NAME>=<value>`. Every
/// such variable must name an option of the vendored version: a typo is a build error. The
/// list is also written to `OUT_DIR` for `BAKED_OPTION_DEFAULTS`.
fn baked_option_defaults(target: &Target, sources: &Sources) -> Vec<OptionDefault> {
    let known = baked::option_names(&sources.header()).unwrap_or_else(|e| panic!("{e}"));
    let mut requested: Vec<(String, String)> = Vec::new();
    for name in &known {
        let variable = baked::variable(name);
        if let Some(value) = env(&variable) {
            requested.push((variable, value));
        }
    }
    // A variable with the prefix that names no option is a typo: fail rather than ignore it,
    // and rerun when it changes or goes. (Cargo watches variables by name only: one that did
    // not exist when the script last ran cannot make it rerun; see docs/beyond-malloc.md#options.)
    for (variable, _) in prefixed_variables() {
        if !requested.iter().any(|(v, _)| *v == variable) {
            let value = env(&variable).unwrap_or_default();
            requested.push((variable, value));
        }
    }
    let defaults =
        baked::option_defaults(target, &known, &requested).unwrap_or_else(|e| panic!("{e}"));
    let listing: String = defaults
        .iter()
        .map(|d| format!("    (\"{}\", {}),\n", d.name, d.value))
        .collect();
    write_out(
        "baked_option_defaults.rs",
        &format!(
            "/// The option defaults baked into this build with `MIMALLOC_SYS_DEFAULT_<NAME>`: (name, value).\n\
             pub const BAKED_OPTION_DEFAULTS: &[(&str, i64)] = &[\n{listing}];\n"
        ),
    );
    defaults
}

/// Step 2c: the option defaults compiled in: the plan's, then the user's, which replace any of
/// the plan's they name (the later `mi_option_set_default` wins).
fn option_defaults(plan: &Plan, baked: Vec<OptionDefault>) -> Vec<OptionDefault> {
    let mut defaults = Vec::new();
    for choice in &plan.option_defaults {
        // Shown by `cargo build -vv`, as the defines are.
        println!(
            "option default {}={}: {}",
            choice.name, choice.value, choice.why
        );
        defaults.push(OptionDefault {
            name: choice.name.to_owned(),
            value: choice.value,
        });
    }
    defaults.extend(baked);
    defaults
}

/// Every variable of the environment that starts with `MIMALLOC_SYS_DEFAULT_`.
#[allow(clippy::disallowed_methods)]
fn prefixed_variables() -> Vec<(String, String)> {
    std::env::vars()
        .filter(|(variable, _)| variable.starts_with(OPTION_DEFAULT_PREFIX))
        .collect()
}

/// Writes a generated file into `OUT_DIR`; returns its path.
fn write_out(name: &str, contents: &str) -> PathBuf {
    let path = out_dir().join(name);
    std::fs::write(&path, contents)
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    path
}

/// What step 3 compiled, and with which command: published for dependants that compile the
/// same code themselves (the benchmark's C floor).
struct Compiled {
    compiler: cc::Tool,
    translation_unit: PathBuf,
}

/// Step 3: compile `src/static.c`, which includes every other source file: one translation
/// unit, so the compiler can inline across mimalloc's internal boundaries. With option defaults
/// (the plan's or baked ones), a generated file that sets them and then includes `static.c` is
/// compiled instead.
fn compile(
    target: &Target,
    plan: &Plan,
    sources: &Sources,
    defaults: &[OptionDefault],
) -> Compiled {
    rerun_if_changed(&sources.include());
    rerun_if_changed(&sources.src());
    let translation_unit = translation_unit(target, sources, defaults);
    let mut build = cc::Build::new();
    build
        .file(&translation_unit)
        .include(sources.include())
        .include(sources.src());
    if plan.language == Language::Cxx17 {
        // mimalloc compiled as C++ needs only <atomic>, which is header-only: link nothing.
        build.cpp(true).std("c++17").cpp_link_stdlib(None);
    }
    if let Some(static_crt) = plan.static_crt {
        build.static_crt(static_crt);
    }
    for define in &plan.defines {
        // Shown by `cargo build -vv`: what the C code is compiled with, and why.
        match define.value {
            Some(value) => println!("define {}={value}: {}", define.name, define.why),
            None => println!("define {}: {}", define.name, define.why),
        }
        build.define(define.name, define.value);
    }
    for flag in &plan.flags {
        build.flag(flag);
    }
    for flag in &plan.flags_if_supported {
        build.flag_if_supported(flag);
    }
    build.compile("mimalloc");
    Compiled {
        compiler: build.get_compiler(),
        translation_unit,
    }
}

/// `static.c`, or the generated file that sets option defaults before including it.
fn translation_unit(target: &Target, sources: &Sources, defaults: &[OptionDefault]) -> PathBuf {
    let static_c = sources.src().join("static.c");
    if defaults.is_empty() {
        return static_c;
    }
    // Forward slashes: every compiler accepts them in an #include, and they need no escaping.
    let include = static_c.display().to_string().replace('\\', "/");
    write_out(
        "mimalloc_with_defaults.c",
        &baked::baked_defaults_source(target, defaults, &include),
    )
}

/// Step 4: the system libraries mimalloc calls into (`cc` already linked `libmimalloc.a`).
fn link(plan: &Plan) {
    for lib in &plan.link_libs {
        println!("cargo:rustc-link-lib={lib}");
    }
}

/// Step 5: the decisions of the plan that Rust code reads ([`plan::Published`], made once in
/// `build/plan.rs`) as cfgs of this crate, and as `DEP_MIMALLOC_CFGS` for direct dependants'
/// build scripts: the cfgs that hold, comma-separated (`mimalloc_runs,mimalloc_small_free,...`),
/// which the `mimalloc` crate's and the tests' build scripts pass on as they find them, with no
/// list of their own (the `mimalloc-sys-cfgs` crate, `cfgs/` here, reads this format). Where
/// mimalloc does not run nothing is published, not even `mimalloc_runs`. Dependants also read `DEP_MIMALLOC_INCLUDE` (to compile C code against the
/// same headers) and `DEP_MIMALLOC_VERSION` (e.g. `30600` for 3.6.0, as `MI_MALLOC_VERSION`).
fn publish_metadata(sources: &Sources, plan: &Plan) {
    for published in &plan.published {
        // Shown by `cargo build -vv`, as the defines are.
        println!("cfg {}: {}", published.cfg, published.why);
        println!("cargo:rustc-cfg={}", published.cfg);
    }
    let cfgs: Vec<&str> = plan.published.iter().map(|p| p.cfg).collect();
    println!("cargo:cfgs={}", cfgs.join(","));
    println!("cargo:include={}", sources.include().display());
    let version = sources
        .header()
        .lines()
        .find_map(|line| line.strip_prefix("#define MI_MALLOC_VERSION"))
        .and_then(|rest| rest.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| panic!("no MI_MALLOC_VERSION in {}", sources.include().display()));
    println!("cargo:version={version}");
}

/// Separates the arguments in `DEP_MIMALLOC_COMPILER_ARGS`: the ASCII unit separator, which no
/// compiler argument contains (cargo separates `CARGO_ENCODED_RUSTFLAGS` with it for the same
/// reason), unlike a space or a comma (`-DNAME=a,b`, a path with a space).
const ARGUMENT_SEPARATOR: char = '\x1f';

/// Step 5b: how step 3 compiled mimalloc, for dependants that compile it again on their own
/// (the benchmark's C floor, `bench/runner/src/floor.rs`), so that they take nothing from a
/// list of their own: `DEP_MIMALLOC_COMPILER` (the compiler `cc` chose, after `CC` and the
/// target), `DEP_MIMALLOC_COMPILER_ARGS` (every argument `cc` passed it but the source and
/// output files: its own flags, the plan's defines and flags, the include directories, `CFLAGS`;
/// separated by [`ARGUMENT_SEPARATOR`]) and `DEP_MIMALLOC_TRANSLATION_UNIT` (the file compiled).
fn publish_compilation(compiled: &Compiled) {
    let args: Vec<String> = compiled
        .compiler
        .args()
        .iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    if let Some(arg) = args.iter().find(|a| a.contains(ARGUMENT_SEPARATOR)) {
        panic!("a compiler argument contains the separator of DEP_MIMALLOC_COMPILER_ARGS: {arg:?}");
    }
    let separator = ARGUMENT_SEPARATOR.to_string();
    println!("cargo:compiler={}", compiled.compiler.path().display());
    println!("cargo:compiler_args={}", args.join(&separator));
    println!(
        "cargo:translation_unit={}",
        compiled.translation_unit.display()
    );
}

fn rerun_if_changed(path: &Path) {
    println!("cargo:rerun-if-changed={}", path.display());
}
