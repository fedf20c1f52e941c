//! Every decision the build script makes, as a pure function of the target and the features.
//!
//! Nothing in this file may look at the machine it runs on: a build script runs on the *host*,
//! so `cfg!(windows)` here would describe the machine doing the build, not the program being
//! built, and silently break every cross build (a recurring bug in allocator `-sys` crates).
//! The facts come in through [`Target`]; `tests/build_plan.rs` checks the plan for targets this
//! machine cannot run, and fails if this file or `build.rs` ever uses `cfg!`/`#[cfg]` on a target.
//!
//! The decisions Rust code depends on are published as cfgs ([`Published`], `Plan::published`),
//! each read off the plan's own defines (or the one decision a define function follows), never
//! recomputed from the features: the C code and the Rust code that relies on it see one answer.

/// What cargo tells the build script about the target (`TARGET`, `CARGO_CFG_TARGET_*`).
#[derive(Clone, Debug, Default)]
pub struct Target {
    /// The full triple, e.g. `x86_64-pc-windows-gnu`.
    pub triple: String,
    /// `target_arch`, e.g. `x86_64`, `aarch64`, `arm`, `wasm32`.
    pub arch: String,
    /// `target_os`, e.g. `linux`, `windows`, `macos`, `android`, `unknown`.
    pub os: String,
    /// `target_env`, e.g. `gnu`, `musl`, `msvc`, or empty.
    pub env: String,
    /// `target_vendor`, e.g. `apple`, `pc`, `unknown`.
    pub vendor: String,
    /// `target_family` (`unix`, `windows`, `wasm`).
    pub families: Vec<String>,
    /// `target_has_atomic` (`8`, `16`, `32`, `64`, `ptr`).
    pub has_atomic: Vec<String>,
    /// `target_feature` (`crt-static`, `sse2`, ...).
    pub features: Vec<String>,
    /// `target_pointer_width`: 16, 32 or 64.
    pub pointer_width: u32,
    /// `sanitize`: the sanitizers the Rust side is compiled with (nightly
    /// `-Zsanitizer=address`, ...); empty on stable.
    pub sanitizers: Vec<String>,
    /// `miri`: the Rust side runs in Miri's interpreter (`cargo miri`), which calls no C and
    /// allocates from its own heap.
    pub interpreted: bool,
}

impl Target {
    /// The facts of `triple` from its cfg values: `cfg("target_os")` is what cargo passes as
    /// `CARGO_CFG_TARGET_OS` (several values comma-separated, as cargo does), `None` if unset.
    /// The build script reads them from its environment; the benchmark's C floor from
    /// `rustc --print cfg`.
    pub fn from_cfg(triple: &str, cfg: impl Fn(&str) -> Option<String>) -> Result<Target, String> {
        let one = |key: &str| cfg(key).unwrap_or_default();
        let list = |key: &str| -> Vec<String> {
            cfg(key)
                .map(|v| {
                    v.split(',')
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        let width = one("target_pointer_width");
        Ok(Target {
            triple: triple.to_owned(),
            arch: one("target_arch"),
            os: one("target_os"),
            env: one("target_env"),
            vendor: one("target_vendor"),
            families: list("target_family"),
            has_atomic: list("target_has_atomic"),
            features: list("target_feature"),
            pointer_width: width.parse().map_err(|_| {
                format!("{triple}: target_pointer_width is {width:?}, not a number")
            })?,
            sanitizers: list("sanitize"),
            interpreted: cfg("miri").is_some(),
        })
    }

    fn is(&self, family: &str) -> bool {
        self.families.iter().any(|f| f == family)
    }
    pub fn is_windows(&self) -> bool {
        self.os == "windows"
    }
    pub fn is_msvc(&self) -> bool {
        self.env == "msvc"
    }
    fn is_apple(&self) -> bool {
        self.vendor == "apple"
    }
    /// Targets whose objects use ELF thread-local storage models (`-ftls-model`).
    fn is_elf_unix(&self) -> bool {
        self.is("unix") && !self.is_apple() && self.os != "haiku" && self.arch != "wasm32"
    }
    fn sanitized_with(&self, sanitizer: &str) -> bool {
        self.sanitizers.iter().any(|s| s == sanitizer)
    }
}

/// The cargo features of `mimalloc-sys` that change the C build.
#[derive(Clone, Copy, Debug, Default)]
pub struct Features {
    pub v2: bool,
    pub secure: bool,
    pub debug: bool,
    pub override_malloc: bool,
    pub local_dynamic_tls: bool,
    pub asan: bool,
    pub tsan: bool,
    pub valgrind: bool,
    pub guarded: bool,
    /// The safe crate's memory policy left out (`no_policy`).
    pub no_policy: bool,
    // The registry crates' names (`mimalloc` 0.1, `mimalloc-safe` 0.1), so that switching from
    // them is one changed dependency line.
    pub debug_in_debug: bool,
    pub no_thp: bool,
    pub win_direct_tls: bool,
    pub skip_collect_on_exit: bool,
    pub etw: bool,
    pub free_use_pagemap: bool,
}

/// Which mimalloc release to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V2,
    V3,
}

impl Version {
    /// The directory under `vendor/mimalloc/`.
    pub fn dir(self) -> &'static str {
        match self {
            Version::V2 => "v2",
            Version::V3 => "v3",
        }
    }
}

/// The language the single translation unit `src/static.c` is compiled as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    C,
    /// MSVC has no C11 atomics: mimalloc is compiled as C++17 and uses `<atomic>`.
    Cxx17,
}

/// A preprocessor definition, with the reason it is there (`cargo build -vv` prints both).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Define {
    pub name: &'static str,
    pub value: Option<&'static str>,
    pub why: &'static str,
}

/// A decision of the plan that Rust code reads, as a cfg: `build.rs` passes `--cfg` for it to
/// this crate and lists it in `DEP_MIMALLOC_CFGS`, which the `mimalloc` crate's and the tests'
/// build scripts pass on as they find it; `cargo build -vv` prints it with its reason. Each is
/// read off the plan's defines where it is a consequence of them ([`published`]), so that a
/// define and what Rust believes of it cannot disagree. The workspace manifest's `check-cfg`
/// list must name every one (`tests/build_plan.rs` checks it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Published {
    /// The cfg, `mimalloc_<decision>`.
    pub cfg: &'static str,
    pub why: &'static str,
}

/// An option default the plan chooses where mimalloc has no define for it: compiled in the way
/// `MIMALLOC_SYS_DEFAULT_<NAME>` bakes one (set before mimalloc reads its options), so that
/// such a variable and the environment (`MIMALLOC_<NAME>`) still override it; `cargo build -vv`
/// prints it with its reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionChoice {
    /// The option's name in `mimalloc.h` without `mi_option_`.
    pub name: &'static str,
    pub value: i64,
    pub why: &'static str,
}

/// The complete recipe for compiling and linking mimalloc for one target.
#[derive(Clone, Debug)]
pub struct Plan {
    pub version: Version,
    pub language: Language,
    pub defines: Vec<Define>,
    /// Flags every supported compiler must accept (a failure is a build error).
    pub flags: Vec<&'static str>,
    /// Flags passed only if the compiler accepts them (old GCC, clang-cl, ...).
    pub flags_if_supported: Vec<&'static str>,
    /// System libraries the static library needs (`cargo:rustc-link-lib`).
    pub link_libs: Vec<&'static str>,
    /// The target's CRT choice (`crt-static`), followed rather than forced; `None` off Windows.
    pub static_crt: Option<bool>,
    /// Things the user asked for that this target cannot do, said out loud at build time.
    pub warnings: Vec<String>,
    /// The decisions Rust code reads, each published as a cfg with its reason ([`Published`]).
    pub published: Vec<Published>,
    /// Option defaults set when mimalloc starts, where no define sets them ([`OptionChoice`]).
    pub option_defaults: Vec<OptionChoice>,
}

/// What the build script will do.
#[derive(Clone, Debug)]
pub enum Decision {
    /// Compile and link mimalloc with this plan.
    Build(Plan),
    /// mimalloc cannot run on this target; compile nothing and say why.
    Skip(String),
    /// The features asked for cannot be built (for this target, or together): fail the build
    /// with this message rather than produce a library that does not do what was asked.
    Refuse(String),
}

/// Decides how to build mimalloc for `target` with `features` (`release`: `PROFILE=release`).
pub fn decide(target: &Target, features: &Features, release: bool) -> Decision {
    if let Some(why) = no_operating_system(target) {
        return Decision::Skip(why);
    }
    if let Some(why) = refusal(target, features) {
        return Decision::Refuse(why);
    }
    let version = if features.v2 {
        Version::V2
    } else {
        Version::V3
    };
    let advice = adaptive_thp(target, version, features);
    let purge = background_purge(target, version, features);
    let limit = memory_limit(target, version, features);
    let mut defines = Vec::new();
    debug_defines(&mut defines, features, release);
    tool_defines(&mut defines, features);
    etw_defines(&mut defines, target, features);
    override_defines(&mut defines, target, features);
    platform_defines(&mut defines, target);
    memory_defaults(&mut defines, target, version, features, advice);
    exit_defines(&mut defines, features);
    if version == Version::V3 {
        free_defines(&mut defines, target, features);
        valgrind_page_meta(&mut defines, features);
        tls_defines(&mut defines, target, features);
        guarded_sampling(&mut defines, features);
        profiler_defines(&mut defines, target);
    }
    let mut plan = Plan {
        version,
        language: if target.is_msvc() {
            Language::Cxx17
        } else {
            Language::C
        },
        published: published(target, version, &defines, advice, purge, limit),
        defines,
        flags: Vec::new(),
        flags_if_supported: Vec::new(),
        link_libs: link_libs(target, version),
        static_crt: static_crt(target),
        warnings: warnings(target, features),
        option_defaults: option_defaults(version),
    };
    sanitizer_flags(&mut plan, target, features);
    compiler_flags(&mut plan, target, features);
    Decision::Build(plan)
}

/// mimalloc needs an OS (or WASI) to get memory from; bare `wasm32-unknown-unknown` and `*-none`
/// targets have neither, so there is nothing to compile. The safe crate's `assign_global!`
/// expands to nothing there, keeping the product buildable.
fn no_operating_system(target: &Target) -> Option<String> {
    let bare = target.os == "none" || (target.os == "unknown" && target.arch.starts_with("wasm"));
    bare.then(|| {
        format!(
            "mimalloc cannot run on {} (no operating system to get memory from): no C code is built, \
             mimalloc::assign_global!() installs nothing, and the system allocator stays in charge",
            target.triple
        )
    })
}

fn define(
    defines: &mut Vec<Define>,
    name: &'static str,
    value: Option<&'static str>,
    why: &'static str,
) {
    defines.push(Define { name, value, why });
}

/// The decisions Rust code reads ([`Published`]), each from the plan's own decision: read off
/// the defines as the C preprocessor sees them where the fact is a consequence of the defines
/// (mirroring the vendored headers where they derive it, [`free_published`]), and
/// `adaptive_thp` from the decision [`memory_defaults`] follows, which no define tells
/// apart from `no_thp`, and `background_purge` and `memory_limit`, which no define tells at all.
fn published(
    target: &Target,
    version: Version,
    defines: &[Define],
    adaptive_thp: bool,
    background_purge: bool,
    memory_limit: bool,
) -> Vec<Published> {
    let c = Preprocessor(defines);
    let mut published = Vec::new();
    let p = &mut published;
    publish(
        p,
        true,
        "mimalloc_runs",
        "mimalloc is compiled for this target (`Decision::Skip` builds nothing where there is \
         no OS): the crates' items exist",
    );
    publish(
        p,
        c.on("MI_DEBUG"),
        "mimalloc_debug",
        "MI_DEBUG: mimalloc's internal checks are compiled in; mimalloc 2 counts blocks per size \
         only then",
    );
    publish(
        p,
        guarded(&c),
        "mimalloc_guarded",
        "MI_GUARDED: a sample of blocks sits right before a guard page, so the routing core \
         rounds plain sizes up to their alignment (a block placed precisely is aligned only to \
         what divides its size); mimalloc 2 deletes a heap it is asked to destroy",
    );
    free_published(p, &c, version);
    target_published(p, target, &c, version);
    policy_published(p, target, adaptive_thp, background_purge, memory_limit);
    published
}

/// What the target adds to the plan's defines: a stack walker, a 32-bit address space.
fn target_published(p: &mut Vec<Published>, target: &Target, c: &Preprocessor, version: Version) {
    let v3 = version == Version::V3;
    publish(
        p,
        v3 && (target.is_windows() || c.on("MI_HAS_EXECINFOH")),
        "mimalloc_profiler",
        "mimalloc 3 with a stack walker (MI_HAS_EXECINFOH's `backtrace()`, or Windows' \
         `CaptureStackBackTrace`): without one every sampled allocation has an empty stack, so \
         the safe crate refuses to start a profiler",
    );
    publish(
        p,
        v3 && target.pointer_width == 32 && !c.on("MI_SECURE"),
        "mimalloc_large_request_cap",
        "mimalloc 3.6.0 on a 32-bit target without MI_SECURE faults on requests near 2 GiB \
         where it should return null (docs/known-issues.md has the bound; the canary in \
         tests/tests/upstream_bugs.rs): the routing core refuses such requests. MI_SECURE \
         builds serve them",
    );
}

/// Which parts of the safe crate's memory policy (`mimalloc/src/policy/`) are built, and whether
/// any is (`mimalloc_policy`, the one cfg the policy's shared code reads). None under Miri: the
/// policy is Rust code that calls mimalloc and the OS, which the interpreter does not run.
fn policy_published(
    p: &mut Vec<Published>,
    target: &Target,
    adaptive_thp: bool,
    background_purge: bool,
    memory_limit: bool,
) {
    let native = !target.interpreted;
    let huge_pages = native && adaptive_thp;
    let purge = native && background_purge;
    publish(
        p,
        huge_pages || purge,
        "mimalloc_policy",
        "at least one part of the safe crate's memory policy is built: its settings, its load \
         and unload hooks and its polls exist",
    );
    publish(
        p,
        huge_pages,
        "mimalloc_adaptive_thp",
        "MI_NO_THP so that the safe crate's memory policy decides which memory gets transparent \
         huge pages: a heap once it has grown, and large blocks (`adaptive_thp` in \
         build/plan.rs)",
    );
    publish(
        p,
        purge,
        "mimalloc_background_purge",
        "mimalloc 3 on Linux, Android or Windows: the safe crate's background purge hands freed \
         memory back once the purge delay has passed (`background_purge` in build/plan.rs)",
    );
    publish(
        p,
        purge && memory_limit,
        "mimalloc_memory_limit",
        "the background purge reads the process's memory limit from its cgroups and purges at \
         once past half of it (`memory_limit` in build/plan.rs)",
    );
}

fn publish(published: &mut Vec<Published>, holds: bool, cfg: &'static str, why: &'static str) {
    if holds {
        published.push(Published { cfg, why });
    }
}

/// How mimalloc 3's free finds a block's page, as [`free_defines`] and [`valgrind_page_meta`]
/// decided it, and whether it checks the pointer.
fn free_published(published: &mut Vec<Published>, c: &Preprocessor, version: Version) {
    publish(
        published,
        c.on("MI_FREE_IS_CHECKED"),
        "mimalloc_checked_free",
        "MI_FREE_IS_CHECKED: free validates every pointer through the page map and ignores one \
         mimalloc never returned",
    );
    publish(
        published,
        c.on("MI_FREE_IS_CHECKED") || c.on("MI_FREE_USE_PAGEMAP"),
        "mimalloc_page_map_free",
        "MI_FREE_IS_CHECKED or MI_FREE_USE_PAGEMAP: free finds a block's page in the page map, so \
         neither alignments nor arenas are bound to the page metadata's alignment \
         (docs/known-issues.md)",
    );
    publish(
        published,
        small_free(c, version),
        "mimalloc_small_free",
        "MI_PAGE_META_SMALL_IS_ALIGNED, and no MI_DEBUG: `mi_free_small_nonnull` takes a small \
         page's metadata from the block's address, skipping the page lookup; the routing core \
         frees blocks of small layouts with it",
    );
}

/// The plan's defines as the C preprocessor sees them. `cc` passes a define without a value as
/// `-DNAME`, which defines it as 1.
struct Preprocessor<'a>(&'a [Define]);

impl Preprocessor<'_> {
    /// `#if NAME`: false for an undefined name, as in C.
    fn on(&self, name: &str) -> bool {
        self.0
            .iter()
            .any(|d| d.name == name && d.value != Some("0"))
    }
    /// `defined(NAME) && NAME == 0`.
    fn zero(&self, name: &str) -> bool {
        self.0
            .iter()
            .any(|d| d.name == name && d.value == Some("0"))
    }
}

/// Whether guard pages are compiled in: `MI_GUARDED` as the plan defines it. [`tool_defines`]
/// always defines it (to 0 unless the `guarded` feature asks), because `include/mimalloc/types.h`
/// would otherwise turn it on in debug builds.
fn guarded(c: &Preprocessor) -> bool {
    c.on("MI_GUARDED")
}

/// Whether the routing core may free a block of a small layout with mimalloc 3's
/// `mi_free_small_nonnull`, which takes a small page's metadata from the block's address, so
/// that it skips the general page lookup (BENCHMARKS.md#instructions-per-small-allocatefree-pair).
///
/// The C side is `MI_PAGE_META_SMALL_IS_ALIGNED`, which the plan never defines: it is computed
/// here as `include/mimalloc/types.h` of 3.6.0 computes it from the defines ("Place page meta
/// info ..." to "Configuration checks", about lines 160-192). One condition is ours: not in a
/// debug build, whose `mi_free` reports a pointer mimalloc never returned where the small free
/// takes the page from the address unchecked and faults on it (`tests/tests/hostile.rs`).
fn small_free(c: &Preprocessor, version: Version) -> bool {
    if version == Version::V2 {
        // mimalloc 2's `mi_free_small` is `mi_free` under another name.
        return false;
    }
    // `#if !MI_FREE_IS_CHECKED && !MI_FREE_USE_PAGEMAP` / `#if MI_PAGE_META_IS_SEPARATED`:
    // page metadata is separated unless the page map is flat (`MI_PAGE_MAP_FLAT`), which
    // `bits.h` makes it only with `MI_FREE_USE_PAGEMAP`, so under this condition it always is.
    let meta_is_aligned = !c.on("MI_FREE_IS_CHECKED") && !c.on("MI_FREE_USE_PAGEMAP");
    // `#if defined(MI_OPT_FREE_SMALL) && MI_OPT_FREE_SMALL==0` → 0; `#elif (MI_OPT_FREE_SMALL
    // || MI_PAGE_META_IS_ALIGNED) && !MI_SECURE && !MI_GUARDED` → 1 (a guarded block of a
    // small size may sit in a medium page); `#else` → 0.
    let small_is_aligned = !c.zero("MI_OPT_FREE_SMALL")
        && (c.on("MI_OPT_FREE_SMALL") || meta_is_aligned)
        && !c.on("MI_SECURE")
        && !guarded(c);
    // Ours: debug builds free through `mi_free`, which reports a bad pointer.
    small_is_aligned && !c.on("MI_DEBUG")
}

/// Whether mimalloc is built with its internal checks: the `debug` feature, or the registry
/// crate's `debug_in_debug` outside the release profile.
fn debug_build(features: &Features, release: bool) -> bool {
    features.debug || (features.debug_in_debug && !release)
}

/// Internal checks and C assertions.
fn debug_defines(defines: &mut Vec<Define>, features: &Features, release: bool) {
    if debug_build(features, release) {
        define(
            defines,
            "MI_DEBUG",
            Some("3"),
            "`debug` feature (or `debug_in_debug` outside the release profile): full internal \
             invariant checks",
        );
        define(
            defines,
            "MI_SHOW_ERRORS",
            Some("1"),
            "`debug` feature (or `debug_in_debug` outside the release profile): print heap \
             corruption and misuse",
        );
    } else {
        define(
            defines,
            "MI_DEBUG",
            Some("0"),
            "no internal assertions unless the `debug` feature asks",
        );
    }
    if release {
        define(
            defines,
            "NDEBUG",
            None,
            "release profile: no C `assert`, as in every release build",
        );
    }
}

/// Hardening and the memory tools.
fn tool_defines(defines: &mut Vec<Define>, features: &Features) {
    if features.secure {
        define(
            defines,
            "MI_SECURE",
            Some("4"),
            "`secure` feature: guard pages, encoded free lists, double-free checks",
        );
    }
    if features.asan {
        define(
            defines,
            "MI_TRACK_ASAN",
            Some("1"),
            "`asan` feature: poison freed blocks and padding so ASan sees mimalloc's blocks",
        );
    }
    if features.tsan {
        define(
            defines,
            "MI_TSAN",
            Some("1"),
            "`tsan` feature: mimalloc's own ThreadSanitizer adjustments (as its CMake option)",
        );
    }
    if features.valgrind {
        define(
            defines,
            "MI_TRACK_VALGRIND",
            Some("1"),
            "`valgrind` feature: describe every block to memcheck with client requests",
        );
    }
    if features.guarded {
        define(
            defines,
            "MI_GUARDED",
            Some("1"),
            "`guarded` feature: a sample of blocks is followed by a guard page",
        );
    } else {
        define(
            defines,
            "MI_GUARDED",
            Some("0"),
            "mimalloc turns guard pages on in every debug build, where they make `mi_heap_destroy` \
             a `mi_heap_delete` (mimalloc 2: a dropped Heap leaks) and make mimalloc's realloc \
             fault on guarded blocks: only the `guarded` feature asks for them",
        );
    }
}

/// Windows event tracing of every allocation (`etw`, mimalloc-safe's name; mimalloc's
/// `MI_TRACK_ETW`). ETW exists only on Windows: elsewhere the build says the feature does
/// nothing there ([`warnings`]); its generated header needs MSVC ([`etw_refusal`]).
fn etw_defines(defines: &mut Vec<Define>, target: &Target, features: &Features) {
    if features.etw && target.is_msvc() {
        define(
            defines,
            "MI_TRACK_ETW",
            Some("1"),
            "`etw` feature: every allocation and free is an ETW event (provider in \
             src/prim/windows/etw.man), for Windows Performance Recorder",
        );
    }
}

/// What happens at process exit.
fn exit_defines(defines: &mut Vec<Define>, features: &Features) {
    if features.skip_collect_on_exit {
        define(
            defines,
            "MI_SKIP_COLLECT_ON_EXIT",
            Some("1"),
            "`skip_collect_on_exit` feature (mimalloc-safe's name): no heap collection at \
             process exit, where the OS takes the memory back anyway (a shorter exit; nothing \
             is freed for a host that unloads the library)",
        );
    }
}

/// Replacing the C allocator (`override`); Windows is refused in `warnings`.
fn override_defines(defines: &mut Vec<Define>, target: &Target, features: &Features) {
    if !features.override_malloc || target.is_windows() {
        return;
    }
    define(
        defines,
        "MI_MALLOC_OVERRIDE",
        None,
        "`override` feature: export malloc/free/... from mimalloc",
    );
    if target.is_apple() {
        define(
            defines,
            "MI_OSX_ZONE",
            Some("1"),
            "`override` on Apple: register mimalloc as the default malloc zone",
        );
        define(
            defines,
            "MI_OSX_INTERPOSE",
            Some("1"),
            "`override` on Apple: interpose the system malloc functions",
        );
    }
}

/// What the platform needs or was measured to want.
fn platform_defines(defines: &mut Vec<Define>, target: &Target) {
    if target.env == "musl" {
        define(
            defines,
            "MI_LIBC_MUSL",
            Some("1"),
            "musl: no __builtin_thread_pointer, different TLS set-up",
        );
    }
    if target.is_windows() && !target.is_msvc() {
        // mimalloc 3.3.2's default start-up hook (`MI_WIN_INIT_USE_CRT_TLS`) placed its TLS
        // callbacks with MSVC-only pragmas, so on MinGW it never ran. 3.6 and 2.5.2 place them
        // with GCC section attributes too, and with that default the Wine suite passes; it is
        // still not taken, because it starts mimalloc from a TLS callback, ahead of every
        // constructor, and the baked option defaults are a constructor. Under Wine they still
        // applied, for a reason not established here, and there is no real Windows here to
        // settle it. The FLS hook starts mimalloc from a constructor, which the baked defaults
        // precede in the same translation unit (`baked.rs`), and releases exited threads
        // through a fiber-local-storage callback (`stress.rs` checks under Wine).
        define(
            defines,
            "MI_WIN_INIT_USE_FLS",
            Some("1"),
            "non-MSVC Windows: start mimalloc with a constructor and FLS",
        );
    }
}

/// mimalloc 3 samples guarded blocks by requested bytes, and guards none unless told how many
/// (`MIMALLOC_GUARDED_SAMPLE_RATE` defaults to 0 even in guarded builds, where mimalloc 2
/// guards one block in 4000 outside debug builds): a `guarded` build that guards nothing would
/// be a silent no-op.
fn guarded_sampling(defines: &mut Vec<Define>, features: &Features) {
    if features.guarded {
        define(
            defines,
            "MI_DEFAULT_GUARDED_SAMPLE_RATE",
            Some("1048576"),
            "`guarded` feature: about one guarded block per MiB requested (the rate mimalloc's \
             source suggests); MIMALLOC_GUARDED_SAMPLE_RATE overrides it",
        );
    }
}

/// mimalloc 3's heap profiler (`profile/pprof.c`, compiled into every build, idle until started)
/// learns what the C library has from these, as mimalloc's CMake learns it by probing headers.
/// Without `MI_HAS_EXECINFOH` it records no call stack on Unix; Windows needs none
/// (`CaptureStackBackTrace`).
fn profiler_defines(defines: &mut Vec<Define>, target: &Target) {
    if target.is("unix") {
        define(
            defines,
            "MI_HAS_UNISTDH",
            Some("1"),
            "profiler: snapshot files are opened owner-only without following a symlink, and \
             setuid programs ignore MIMALLOC_PROFILE",
        );
    }
    if has_execinfo(target) {
        define(
            defines,
            "MI_HAS_EXECINFOH",
            Some("1"),
            "profiler: call stacks of sampled allocations through backtrace() (glibc, Apple, \
             the BSDs' libexecinfo); musl and Android have no execinfo.h",
        );
    }
}

/// Whether the target's C library has `backtrace()` (`<execinfo.h>`).
fn has_execinfo(target: &Target) -> bool {
    (target.os == "linux" && target.env == "gnu")
        || target.is_apple()
        || matches!(
            target.os.as_str(),
            "freebsd" | "netbsd" | "openbsd" | "dragonfly"
        )
}

/// How mimalloc 3's `free` finds the page of a block, and whether it checks the pointer.
fn free_defines(defines: &mut Vec<Define>, target: &Target, features: &Features) {
    if features.secure {
        define(
            defines,
            "MI_FREE_IS_CHECKED",
            Some("1"),
            "`secure` feature: free validates every pointer through the page map and reports a \
             bad one instead of corrupting a page (what mimalloc's CMake does for secure builds)",
        );
    } else {
        define(
            defines,
            "MI_FREE_IS_CHECKED",
            Some("0"),
            "free trusts its pointer, as Rust's dealloc contract allows (`secure` checks it)",
        );
    }
    if target.os == "wasi" {
        define(
            defines,
            "MI_FREE_USE_PAGEMAP",
            Some("1"),
            "WASI cannot map large aligned regions, which aligned page metadata needs (as \
             mimalloc's CMake decides for WASI)",
        );
    } else if features.free_use_pagemap {
        define(
            defines,
            "MI_FREE_USE_PAGEMAP",
            Some("1"),
            "`free_use_pagemap` feature (mimalloc-safe's name): free finds the page in the page \
             map, which costs instructions on every free \
             (BENCHMARKS.md#instructions-per-small-allocatefree-pair), and arenas need only slice \
             alignment",
        );
    } else {
        define(
            defines,
            "MI_FREE_USE_PAGEMAP",
            Some("0"),
            "page metadata at aligned addresses: free masks the pointer instead of reading the \
             page map, the shorter allocate+free pair \
             (BENCHMARKS.md#instructions-per-small-allocatefree-pair); the price is an alignment \
             limit and arenas aligned to the page metadata (docs/known-issues.md)",
        );
    }
}

/// mimalloc 3.6.0 release builds with `MI_TRACK_VALGRIND` put a small page's metadata at the
/// start of its slices, zero it, and then tell memcheck the whole slice range is undefined
/// (`mi_arenas_page_init_memory`): every later read of a zeroed field is a false "uninitialised
/// value" report (hundreds per test, in every thread but the first). Keeping small-page metadata
/// in the separate aligned area, as debug and guarded builds do, avoids the reordered annotation;
/// `mi_free_small_nonnull` then finds the page by the general lookup, still correct.
fn valgrind_page_meta(defines: &mut Vec<Define>, features: &Features) {
    if features.valgrind {
        define(
            defines,
            "MI_OPT_FREE_SMALL",
            Some("0"),
            "`valgrind` feature: small-page metadata stays out of the page itself, whose \
             annotation 3.6.0 gets wrong under memcheck (docs/known-issues.md)",
        );
    }
}

/// Where mimalloc 3 keeps its thread-local heap pointer. mimalloc's own choice (`prim-tls.h`)
/// is kept everywhere: Windows TLS slots, ELF `__thread` variables (with the model chosen in
/// `compiler_flags`), pthread keys on Android and OpenBSD. Apple is said explicitly, because
/// the choice there is contested: with `__thread` variables, two statically linked copies of
/// mimalloc in one process (two Rust libraries loaded into one host) corrupted each other
/// (mimalloc #1327, fixed in 3.4.4 by this default); a repackaging of 3.6 went back to
/// `__thread` for speed, which this crate does not.
fn tls_defines(defines: &mut Vec<Define>, target: &Target, features: &Features) {
    if features.win_direct_tls && target.is_windows() {
        define(
            defines,
            "MI_WIN_DIRECT_TLS",
            Some("1"),
            "`win_direct_tls` feature: the heap pointer only in one of Windows' 64 direct TLS \
             slots, which saves the expansion-slot test on the fast path and fails at start if \
             the program has used all 64 (as the registry crate's feature)",
        );
    }
    if target.is_apple() {
        define(
            defines,
            "MI_TLS_MODEL_PTHREADS",
            Some("1"),
            "Apple: the heap pointer in a pthread key, so two static copies of mimalloc in one \
             process keep apart (mimalloc #1327)",
        );
    }
}

/// Whether the safe crate's memory policy decides which memory gets transparent huge pages
/// (`cfg(mimalloc_adaptive_thp)`: `mimalloc/src/policy/`), mimalloc itself advising none of its
/// arenas (`MI_NO_THP`, see [`memory_defaults`]): mimalloc 3 on 64-bit Linux, where huge pages
/// pay for large heaps and large blocks and cost small heaps their size, so the policy gives
/// them to a heap once it has grown (BENCHMARKS.md#the-memory-policy). Android keeps huge
/// pages off, 32-bit Linux too (its address space is too tight for 2 MiB granules), and
/// mimalloc 2 keeps its own advice on segments. The `no_thp` feature turns it off with the rest
/// of mimalloc's huge-page advice; `no_policy` leaves the advice to mimalloc (every arena).
pub fn adaptive_thp(target: &Target, version: Version, features: &Features) -> bool {
    version == Version::V3
        && target.os == "linux"
        && target.pointer_width == 64
        && !features.no_thp
        && !features.no_policy
}

/// Whether the safe crate runs the background purge (`cfg(mimalloc_background_purge)`:
/// `mimalloc/src/policy/purge.rs`), a thread that hands freed memory back to the OS once the
/// purge delay has passed, which mimalloc 3 otherwise does only when the program allocates or
/// frees again: mimalloc 3 on Linux, Android and FreeBSD (an ELF loader runs the crate's load
/// and unload hooks, a futex or `_umtx_op` lets the thread sleep until it is woken or its delay
/// passes), on macOS (a Mach-O initializer and `atexit`, a condition variable) and on Windows
/// (the CRT's initializer table and `atexit`, an event). Elsewhere (the other BSDs, iOS, WASI),
/// with mimalloc 2 (whose `mi_collect` from another thread purges no segment it does not own:
/// docs/memory-policy.md#mimalloc-2), and with `no_policy` (a product that must not get a
/// thread), freed memory goes back when the program touches its heap again, as in mimalloc.
pub fn background_purge(target: &Target, version: Version, features: &Features) -> bool {
    let os = matches!(
        target.os.as_str(),
        "linux" | "android" | "freebsd" | "macos" | "windows"
    );
    version == Version::V3 && os && !features.no_policy
}

/// Whether the background purge reads the process's memory limit
/// (`cfg(mimalloc_memory_limit)`: `mimalloc/src/policy/limit.rs`): where it runs on Linux and
/// Android, whose cgroups hold a container's limit. A Windows job object's limit, a FreeBSD
/// jail's `rctl` limit and macOS's memory pressure are not read.
pub fn memory_limit(target: &Target, version: Version, features: &Features) -> bool {
    let cgroups = target.os == "linux" || target.os == "android";
    background_purge(target, version, features) && cgroups
}

/// The option defaults chosen on the benchmark (BENCHMARKS.md#the-memory-policy and
/// BENCHMARKS.md#the-option-defaults): the environment (`MIMALLOC_ALLOW_THP`, ...) and baked
/// defaults still override them, as they do [`option_defaults`]. The rest of mimalloc's defaults
/// (`purge_delay`, `arena_purge_mult`) measured best as they are.
fn memory_defaults(
    defines: &mut Vec<Define>,
    target: &Target,
    version: Version,
    features: &Features,
    adaptive_thp: bool,
) {
    thp_defaults(defines, target, version, features, adaptive_thp);
    page_layout(defines, version);
    purge_defaults(defines, target, version);
}

/// The option defaults chosen on the benchmark that mimalloc has no define for
/// (BENCHMARKS.md#the-option-defaults).
fn option_defaults(version: Version) -> Vec<OptionChoice> {
    match version {
        Version::V3 => vec![OptionChoice {
            name: "page_reclaim_on_free",
            value: 0,
            why: "a thread that frees into a page of another thread's, left full or abandoned, \
                  does not adopt it into its own heap (mimalloc 3.6.0's default, 1, does): a \
                  consumer thread that only frees would hold such pages while the producers \
                  take fresh ones (BENCHMARKS.md#the-option-defaults); the page goes back to \
                  its own thread or to the arena, as with mimalloc 2's default \
                  (`abandoned_reclaim_on_free` 0)",
        }],
        // mimalloc 2's own default is the one chosen here.
        Version::V2 => Vec::new(),
    }
}

/// How mimalloc 3 lays out blocks above its medium size, on every target (the layout is the
/// same problem everywhere; on 32-bit targets the sizes are smaller: 32-128 KiB).
fn page_layout(defines: &mut Vec<Define>, version: Version) {
    if version == Version::V3 {
        define(
            defines,
            "MI_ENABLE_LARGE_PAGES",
            Some("0"),
            "blocks of 64-512 KiB each get pages of their own size, as in mimalloc 2, rather \
             than sharing 4 MiB pages eight at a time: a vector that grows by doubling leaves \
             each size it outgrew in a page the next vector may never reuse, and a freed block \
             goes back to its arena to be reused or purged on its own \
             (BENCHMARKS.md#the-option-defaults)",
        );
    }
}

/// Who advises memory for transparent huge pages: mimalloc, the safe crate's policy, or nobody.
fn thp_defaults(
    defines: &mut Vec<Define>,
    target: &Target,
    version: Version,
    features: &Features,
    adaptive_thp: bool,
) {
    if features.no_thp && (target.os == "linux" || target.os == "android") {
        no_thp(defines);
    }
    if adaptive_thp {
        // `no_thp` turns the policy off, so MI_NO_THP is not defined twice.
        policy_decides_thp(defines);
    } else {
        allow_thp_default(defines, target, version);
    }
}

/// The registry crates' `no_thp`.
fn no_thp(defines: &mut Vec<Define>) {
    define(
        defines,
        "MI_NO_THP",
        None,
        "`no_thp` feature (the registry crates' name): mimalloc never advises its memory for \
         transparent huge pages, and the safe crate's memory policy advises none either; the \
         process's own setting (`MIMALLOC_ALLOW_THP`, the kernel's mode) is left alone, as \
         with the registry crates",
    );
}

/// Huge pages left to the safe crate's memory policy ([`adaptive_thp`]).
fn policy_decides_thp(defines: &mut Vec<Define>) {
    define(
        defines,
        "MI_NO_THP",
        None,
        "the memory policy decides huge pages: mimalloc no longer advises its arenas, so a \
         small heap faults in 4 KiB pages until the safe crate's policy advises it \
         (mimalloc/src/policy/; BENCHMARKS.md#the-memory-policy)",
    );
    define(
        defines,
        "MI_DEFAULT_ALLOW_THP",
        Some("1"),
        "huge pages allowed for the process (0 would disable them with prctl, and the \
         policy's advice with them), and purges in 64 KiB slices rather than whole 2 MiB \
         pages (mode 2), so a heap gives back what it frees",
    );
}

/// mimalloc's own huge-page mode where the safe crate's policy does not decide.
fn allow_thp_default(defines: &mut Vec<Define>, target: &Target, version: Version) {
    if target.os == "android" {
        define(
            defines,
            "MI_DEFAULT_ALLOW_THP",
            Some("0"),
            "Android: no transparent huge pages (mimalloc's own default there)",
        );
    } else if target.os == "linux" && target.pointer_width == 32 && version == Version::V3 {
        define(
            defines,
            "MI_DEFAULT_ALLOW_THP",
            Some("0"),
            "32-bit Linux: no transparent huge pages. With them a freed working set stayed \
             resident in partly freed huge pages (mode 2 purges only whole ones, mode 1 leaves \
             them to the kernel's deferred split), a large share of a 32-bit address space \
             (BENCHMARKS.md#the-option-defaults)",
        );
    } else if target.os == "linux" {
        define(
            defines,
            "MI_DEFAULT_ALLOW_THP",
            Some("1"),
            "Linux: transparent huge pages allowed (mimalloc's default); mimalloc 2 advises its \
             segments for them unless `no_thp` says otherwise",
        );
    }
}

/// How soon freed ranges go back to the OS.
fn purge_defaults(defines: &mut Vec<Define>, target: &Target, version: Version) {
    if version == Version::V3 && target.pointer_width == 64 {
        define(
            defines,
            "MI_DEFAULT_ARENA_PURGE_IMMEDIATE_SIZE",
            Some("262144"),
            "free ranges purged at once only from 256 MiB (in KiB; mimalloc's default is \
             32 MiB), so that a freed large buffer is reused rather than handed back and faulted \
             in again; smaller ranges wait for the purge delay, which raises the peak of a \
             program that frees such buffers (BENCHMARKS.md#the-option-defaults). From \
             256 MiB a freed block is still returned at once",
        );
    }
}

/// Requests this target cannot honour, said at build time rather than ignored.
fn warnings(target: &Target, features: &Features) -> Vec<String> {
    let mut warnings = Vec::new();
    if features.override_malloc && target.is_windows() {
        warnings.push(
            "the `override` feature has no effect on Windows: mimalloc is linked as a static library, \
             and replacing the CRT's malloc needs the mimalloc DLL with its redirection module; \
             Rust allocations are still served by mimalloc through MiMalloc"
                .to_string(),
        );
    }
    if features.etw && !target.is_windows() {
        warnings.push(format!(
            "the `etw` feature has no effect on {}: Event Tracing for Windows exists only on \
             Windows",
            target.triple
        ));
    }
    warnings
}

/// The sanitizer instrumentation of the C side. The runtime comes from rustc's `-Zsanitizer`
/// (checked in `refusal`), which links it into the final binary.
fn sanitizer_flags(plan: &mut Plan, target: &Target, features: &Features) {
    if features.asan {
        if target.is_msvc() {
            plan.flags.push("/fsanitize=address");
        } else {
            plan.flags.push("-fsanitize=address");
            plan.flags_if_supported.push("-fno-omit-frame-pointer");
        }
    }
    if features.tsan {
        plan.flags.push("-fsanitize=thread");
    }
}

/// The compiler's dialect and the thread-local storage model.
fn compiler_flags(plan: &mut Plan, target: &Target, features: &Features) {
    if target.is_msvc() {
        // cl.exe and clang-cl compile `.c` files as C unless told otherwise.
        plan.flags.push("/TP");
        // Without it MSVC reports `__cplusplus` as 199711L whatever the standard.
        plan.flags_if_supported.push("/Zc:__cplusplus");
        return;
    }
    // No `-march` (mimalloc's `MI_OPT_ARCH`, on by default for arm64 in its CMake): the C code
    // must run on every CPU the Rust target does. GCC's default for aarch64 already picks LSE
    // atomics at run time (`-moutline-atomics`), and Apple's clang targets the M1's baseline.
    if target.is_elf_unix() {
        // mimalloc's thread-local heap pointer is on every allocation's path: initial-exec
        // makes it one instruction. A shared object loaded with dlopen needs local-dynamic,
        // and so does musl's static linking (mimalloc issue #644).
        if features.local_dynamic_tls || target.env == "musl" {
            plan.flags_if_supported.push("-ftls-model=local-dynamic");
        } else {
            plan.flags_if_supported.push("-ftls-model=initial-exec");
        }
    }
    if features.override_malloc && !target.is_windows() {
        // Keep the compiler from turning mimalloc's own calls into calls to `malloc`.
        plan.flags_if_supported.push("-fno-builtin-malloc");
    }
    // mimalloc uses MSVC pragmas guarded by `#if`, but GCC still warns about some of them.
    plan.flags_if_supported.push("-Wno-unknown-pragmas");
    // GCC 12 reports a write "into a region of size 0" where 3.6.0 sets a page flag through a
    // pointer it derives from a block's address (`profile/sample-guarded.c`, compiled in every
    // build): it cannot see the page, the write is sound, and every user build would print it.
    plan.flags_if_supported.push("-Wno-stringop-overflow");
}

/// The system libraries mimalloc calls into.
fn link_libs(target: &Target, version: Version) -> Vec<&'static str> {
    let mut libs = Vec::new();
    if version == Version::V3 && matches!(target.os.as_str(), "freebsd" | "dragonfly") {
        // The profiler's `backtrace()` is in libexecinfo there, and it lists the process's
        // mappings with `kinfo_getvmmap` from libutil.
        libs.extend(["execinfo", "util"]);
    } else if version == Version::V3 && matches!(target.os.as_str(), "netbsd" | "openbsd") {
        libs.push("execinfo");
    }
    if target.is_windows() {
        // What mimalloc's own CMake build links on Windows: psapi (process info), shell32 and
        // user32 (environment, messages), advapi32 (large-page privileges, `RtlGenRandom`).
        libs.extend(["advapi32", "psapi", "shell32", "user32"]);
        // Random numbers come from `ProcessPrng`, loaded at run time, since 3.6 (calling
        // BCryptGenRandom under the loader lock could deadlock, mimalloc #1395); only UWP,
        // which cannot load system libraries, still calls bcrypt directly.
        if target.vendor == "uwp" {
            libs.push("bcrypt");
        }
    }
    let native_64bit_atomics = target.has_atomic.iter().any(|a| a == "64");
    if target.os == "linux" && (target.arch == "arm" || !native_64bit_atomics) {
        // GCC lowers some 64-bit atomics to calls into libatomic on 32-bit ARM and on targets
        // without native 64-bit atomics; without it the link fails with `__atomic_*_8`.
        libs.push("atomic");
    }
    libs
}

/// The CRT mimalloc is compiled against follows the target's `crt-static` choice on Windows.
fn static_crt(target: &Target) -> Option<bool> {
    target
        .is_windows()
        .then(|| target.features.iter().any(|f| f == "crt-static"))
}

/// Why `features` cannot be built for `target`, if they cannot.
fn refusal(target: &Target, features: &Features) -> Option<String> {
    memory_tools_refusal(features)
        .or_else(|| sanitizer_refusal(target, features))
        .or_else(|| valgrind_refusal(target, features))
        .or_else(|| etw_refusal(target, features))
}

/// mimalloc's `etw.h` is generated by Microsoft's message compiler and annotated with MSVC's
/// SAL macros (`_Pre_cap_`, ...), which MinGW's GCC does not define: the C build would fail.
fn etw_refusal(target: &Target, features: &Features) -> Option<String> {
    (features.etw && target.is_windows() && !target.is_msvc()).then(|| {
        format!(
            "the `etw` feature needs the MSVC toolchain: mimalloc's ETW header uses MSVC's SAL \
             annotations, which {}'s compiler does not know; build for the -msvc target, or \
             leave `etw` off",
            target.triple
        )
    })
}

/// Each memory tool tracks mimalloc's blocks its own way.
fn memory_tools_refusal(features: &Features) -> Option<String> {
    let tools = [
        ("asan", features.asan),
        ("tsan", features.tsan),
        ("valgrind", features.valgrind),
        ("etw", features.etw),
    ];
    let chosen: Vec<&str> = tools.iter().filter(|t| t.1).map(|t| t.0).collect();
    (chosen.len() > 1).then(|| {
        format!(
            "the features {} cannot be combined: each memory tool tracks mimalloc's blocks its own \
             way (and the sanitizers' runtimes exclude each other); pick one",
            chosen.join(" and ")
        )
    })
}

/// Instrumented C code calls into the sanitizer runtime, which only rustc's `-Zsanitizer` links
/// in: without it the link fails with hundreds of undefined `__asan_*` symbols.
fn sanitizer_refusal(target: &Target, features: &Features) -> Option<String> {
    for (feature, on, sanitizer) in [
        ("asan", features.asan, "address"),
        ("tsan", features.tsan, "thread"),
    ] {
        if on && !target.sanitized_with(sanitizer) {
            return Some(format!(
                "the `{feature}` feature instruments mimalloc's C code for the {sanitizer} \
                 sanitizer, so the Rust side must be instrumented too (which also links the \
                 runtime): build with a nightly toolchain, RUSTFLAGS=\"-Zsanitizer={sanitizer}\" \
                 and an explicit --target {}",
                target.triple
            ));
        }
    }
    (features.tsan && target.is_msvc())
        .then(|| "the `tsan` feature: MSVC has no ThreadSanitizer".to_string())
}

fn valgrind_refusal(target: &Target, features: &Features) -> Option<String> {
    let has_valgrind = target.os == "linux" || target.is_apple() || target.os == "freebsd";
    (features.valgrind && !has_valgrind).then(|| {
        format!(
            "the `valgrind` feature needs Valgrind's headers and a Valgrind for {} (it runs on \
             Linux, macOS and FreeBSD)",
            target.triple
        )
    })
}
