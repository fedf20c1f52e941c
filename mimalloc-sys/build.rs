//! Builds the vendored mimalloc as a static library, in five steps:
//! gather the target's facts, decide (`build/plan.rs`), compile, link, and publish metadata.
//! With the `bindgen` feature it also regenerates the Rust bindings (`build/bindings.rs`).

#[path = "build/plan.rs"]
mod plan;

#[cfg(feature = "bindgen")]
#[path = "build/bindings.rs"]
mod bindings;

use plan::{Decision, Features, Language, OptionDefault, Plan, Target, OPTION_DEFAULT_PREFIX};
use std::path::{Path, PathBuf};

fn main() {
    let target = target_facts();
    let features = features();
    let release = env("PROFILE").as_deref() == Some("release");

    let plan = match plan::decide(&target, &features, release) {
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
    let defaults = baked_option_defaults(&target, &sources);
    compile(&target, &plan, &sources, &defaults);
    link(&plan);
    publish_metadata(&sources);

    #[cfg(feature = "bindgen")]
    bindings::generate(
        &sources,
        plan.version,
        &target.triple,
        &required("CARGO_CFG_TARGET_POINTER_WIDTH"),
        &out_dir(),
    );
}

/// Reads an environment variable and tells cargo to rerun the build script when it changes:
/// every input of the build is also a rebuild trigger (clippy bans `std::env::var` elsewhere).
#[allow(clippy::disallowed_methods)]
fn env(name: &str) -> Option<String> {
    println!("cargo:rerun-if-env-changed={name}");
    std::env::var(name).ok()
}

fn list(name: &str) -> Vec<String> {
    env(name)
        .map(|v| v.split(',').map(str::to_owned).collect())
        .unwrap_or_default()
}

fn required(name: &str) -> String {
    env(name)
        .unwrap_or_else(|| panic!("cargo did not set {name}: run this build script through cargo"))
}

/// Step 1: the target, as cargo describes it. Never `cfg!`: that is the machine running the build.
fn target_facts() -> Target {
    Target {
        triple: required("TARGET"),
        arch: required("CARGO_CFG_TARGET_ARCH"),
        os: required("CARGO_CFG_TARGET_OS"),
        env: env("CARGO_CFG_TARGET_ENV").unwrap_or_default(),
        vendor: env("CARGO_CFG_TARGET_VENDOR").unwrap_or_default(),
        families: list("CARGO_CFG_TARGET_FAMILY"),
        has_atomic: list("CARGO_CFG_TARGET_HAS_ATOMIC"),
        features: list("CARGO_CFG_TARGET_FEATURE"),
        pointer_width: required("CARGO_CFG_TARGET_POINTER_WIDTH")
            .parse()
            .expect("cargo sets a numeric pointer width"),
        sanitizers: list("CARGO_CFG_SANITIZE"),
    }
}

fn features() -> Features {
    let on = |name: &str| env(&format!("CARGO_FEATURE_{name}")).is_some();
    Features {
        v2: on("V2"),
        secure: on("SECURE"),
        debug: on("DEBUG"),
        override_malloc: on("OVERRIDE"),
        no_thp: on("NO_THP"),
        local_dynamic_tls: on("LOCAL_DYNAMIC_TLS"),
        asan: on("ASAN"),
        tsan: on("TSAN"),
        valgrind: on("VALGRIND"),
        guarded: on("GUARDED"),
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
}

/// `vendor` next to this manifest is a symlink to the repository's top-level `vendor/`; in a
/// packaged crate it is a real directory. A checkout made without symlink support (git on
/// Windows by default) has a small text file there instead, so look one level up as well.
fn vendored_sources(version: plan::Version) -> Sources {
    let manifest_dir = PathBuf::from(required("CARGO_MANIFEST_DIR"));
    let candidates = [
        manifest_dir.join("vendor").join("mimalloc"),
        manifest_dir.join("..").join("vendor").join("mimalloc"),
    ];
    let found = candidates
        .iter()
        .map(|dir| dir.join(version.dir()))
        .find(|root| root.join("src").join("static.c").is_file());
    match found {
        Some(root) => Sources { root },
        None => panic!(
            "the vendored mimalloc sources are missing: looked for src/static.c under {} and {}; \
             a checkout of this repository must include the top-level vendor/ directory",
            candidates[0].join(version.dir()).display(),
            candidates[1].join(version.dir()).display()
        ),
    }
}

/// The option names `mimalloc.h` declares (`mi_option_<name>` in `mi_option_e`), leaving out
/// the deprecated ones, the legacy aliases (`= ...`) and the end marker.
fn option_names(sources: &Sources) -> Vec<String> {
    let header = sources.include().join("mimalloc.h");
    let text = std::fs::read_to_string(&header)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", header.display()));
    let start = text
        .find("typedef enum mi_option_e")
        .expect("mimalloc.h declares mi_option_e");
    let body = &text[start..];
    let body = &body[..body.find("} mi_option_t;").expect("mi_option_e ends")];
    body.lines()
        .filter_map(|line| line.trim().strip_prefix("mi_option_"))
        .filter_map(|rest| rest.split(',').next())
        .map(str::trim)
        .filter(|name| !name.contains(['=', ' ']) && !name.starts_with("deprecated_"))
        .map(str::to_owned)
        .collect()
}

/// Step 2b: option defaults the user bakes in with `MIMALLOC_SYS_DEFAULT_<NAME>=<value>`. Every
/// such variable must name an option of the vendored version: a typo is a build error. The
/// list is also written to `OUT_DIR` for `BAKED_OPTION_DEFAULTS`.
fn baked_option_defaults(target: &Target, sources: &Sources) -> Vec<OptionDefault> {
    let known = option_names(sources);
    let mut requested = Vec::new();
    for name in &known {
        let variable = format!("{OPTION_DEFAULT_PREFIX}{}", name.to_ascii_uppercase());
        if let Some(value) = env(&variable) {
            requested.push((variable, value));
        }
    }
    // A variable with the prefix that names no option is a typo: say so rather than ignore it.
    for (variable, value) in std::env::vars() {
        if variable.starts_with(OPTION_DEFAULT_PREFIX)
            && !requested.iter().any(|(v, _)| *v == variable)
        {
            requested.push((variable, value));
        }
    }
    let defaults =
        plan::option_defaults(target, &known, &requested).unwrap_or_else(|e| panic!("{e}"));
    let listing: String = defaults
        .iter()
        .map(|d| format!("    (\"{}\", {}),\n", d.name, d.value))
        .collect();
    let rust = format!(
        "/// The option defaults baked into this build with `MIMALLOC_SYS_DEFAULT_<NAME>`: (name, value).\n\
         pub const BAKED_OPTION_DEFAULTS: &[(&str, i64)] = &[\n{listing}];\n"
    );
    let path = out_dir().join("baked_option_defaults.rs");
    std::fs::write(&path, rust).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    defaults
}

/// Step 3: compile `src/static.c`, which includes every other source file: one translation
/// unit, so the compiler can inline across mimalloc's internal boundaries. With baked option
/// defaults, a generated file that sets them and then includes `static.c` is compiled instead.
fn compile(target: &Target, plan: &Plan, sources: &Sources, defaults: &[OptionDefault]) {
    let static_c = sources.src().join("static.c");
    rerun_if_changed(&sources.include());
    rerun_if_changed(&sources.src());

    let unit = if defaults.is_empty() {
        static_c
    } else {
        // Forward slashes: every compiler accepts them in an #include, and they need no escaping.
        let path = static_c.display().to_string().replace('\\', "/");
        let generated = out_dir().join("mimalloc_with_defaults.c");
        std::fs::write(
            &generated,
            plan::baked_defaults_source(target, defaults, &path),
        )
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", generated.display()));
        generated
    };
    let mut build = cc::Build::new();
    build
        .file(&unit)
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
        build.define(define.name, define.value);
    }
    for flag in &plan.flags {
        build.flag(flag);
    }
    for flag in &plan.flags_if_supported {
        build.flag_if_supported(flag);
    }
    build.compile("mimalloc");
}

/// Step 4: the system libraries mimalloc calls into (`cc` already linked `libmimalloc.a`).
fn link(plan: &Plan) {
    for lib in &plan.link_libs {
        println!("cargo:rustc-link-lib={lib}");
    }
}

/// Step 5: dependants read these as `DEP_MIMALLOC_INCLUDE` (to compile C code against the same
/// headers) and `DEP_MIMALLOC_VERSION` (e.g. `30302` for 3.3.2, as `MI_MALLOC_VERSION`).
fn publish_metadata(sources: &Sources) {
    println!("cargo:include={}", sources.include().display());
    let header = sources.include().join("mimalloc.h");
    let text = std::fs::read_to_string(&header)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", header.display()));
    let version = text
        .lines()
        .find_map(|line| line.strip_prefix("#define MI_MALLOC_VERSION"))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no MI_MALLOC_VERSION in {}", header.display()));
    println!("cargo:version={version}");
}

fn rerun_if_changed(path: &Path) {
    println!("cargo:rerun-if-changed={}", path.display());
}
