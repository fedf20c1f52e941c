//! Every decision the build script makes, as a pure function of the target and the features.
//!
//! Nothing in this file may look at the machine it runs on: a build script runs on the *host*,
//! so `cfg!(windows)` here would describe the machine doing the build, not the program being
//! built, and silently break every cross build (a recurring bug in allocator `-sys` crates).
//! The facts come in through [`Target`]; `tests/build_plan.rs` checks the plan for targets this
//! machine cannot run, and fails if this file or `build.rs` ever uses `cfg!`/`#[cfg]` on a target.

/// What cargo tells the build script about the target (`TARGET`, `CARGO_CFG_TARGET_*`).
#[derive(Clone, Debug, Default)]
pub struct Target {
    /// The full triple, e.g. `x86_64-pc-windows-gnu`.
    pub triple: String,
    /// `CARGO_CFG_TARGET_ARCH`, e.g. `x86_64`, `aarch64`, `arm`, `wasm32`.
    pub arch: String,
    /// `CARGO_CFG_TARGET_OS`, e.g. `linux`, `windows`, `macos`, `android`, `unknown`.
    pub os: String,
    /// `CARGO_CFG_TARGET_ENV`, e.g. `gnu`, `musl`, `msvc`, or empty.
    pub env: String,
    /// `CARGO_CFG_TARGET_VENDOR`, e.g. `apple`, `pc`, `unknown`.
    pub vendor: String,
    /// `CARGO_CFG_TARGET_FAMILY`, split on commas (`unix`, `windows`, `wasm`).
    pub families: Vec<String>,
    /// `CARGO_CFG_TARGET_HAS_ATOMIC`, split on commas (`8`, `16`, `32`, `64`, `ptr`).
    pub has_atomic: Vec<String>,
    /// `CARGO_CFG_TARGET_FEATURE`, split on commas (`crt-static`, `sse2`, ...).
    pub features: Vec<String>,
    /// `CARGO_CFG_TARGET_POINTER_WIDTH`: 16, 32 or 64.
    pub pointer_width: u32,
    /// `CARGO_CFG_SANITIZE`, split on commas: the sanitizers the Rust side is compiled with
    /// (nightly `-Zsanitizer=address`, ...); empty on stable.
    pub sanitizers: Vec<String>,
}

impl Target {
    fn is(&self, family: &str) -> bool {
        self.families.iter().any(|f| f == family)
    }
    fn is_windows(&self) -> bool {
        self.os == "windows"
    }
    fn is_msvc(&self) -> bool {
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
    pub no_thp: bool,
    pub local_dynamic_tls: bool,
    pub asan: bool,
    pub tsan: bool,
    pub valgrind: bool,
    pub guarded: bool,
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

/// A preprocessor definition, with the reason it is there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Define {
    pub name: &'static str,
    pub value: Option<&'static str>,
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
    // mimalloc needs an OS (or WASI) to get memory from; bare `wasm32-unknown-unknown` and
    // `*-none` targets have neither, so there is nothing to compile. The safe crate's
    // `assign_global!` expands to nothing there, keeping the product buildable.
    if target.os == "none" || (target.os == "unknown" && target.arch.starts_with("wasm")) {
        return Decision::Skip(format!(
            "mimalloc cannot run on {} (no operating system to get memory from): no C code is built, \
             mimalloc::assign_global!() installs nothing, and the system allocator stays in charge",
            target.triple
        ));
    }

    if let Some(why) = refusal(target, features) {
        return Decision::Refuse(why);
    }

    let version = if features.v2 {
        Version::V2
    } else {
        Version::V3
    };
    let mut plan = Plan {
        version,
        language: if target.is_msvc() {
            Language::Cxx17
        } else {
            Language::C
        },
        defines: Vec::new(),
        flags: Vec::new(),
        flags_if_supported: Vec::new(),
        link_libs: Vec::new(),
        static_crt: None,
        warnings: Vec::new(),
    };
    let mut define = |name, value, why| plan.defines.push(Define { name, value, why });

    if features.debug {
        define(
            "MI_DEBUG",
            Some("3"),
            "`debug` feature: full internal invariant checks",
        );
        define(
            "MI_SHOW_ERRORS",
            Some("1"),
            "`debug` feature: print heap corruption and misuse",
        );
    } else {
        define(
            "MI_DEBUG",
            Some("0"),
            "no internal assertions unless the `debug` feature asks",
        );
    }
    if release {
        define(
            "NDEBUG",
            None,
            "release profile: no C `assert`, as in every release build",
        );
    }
    if features.secure {
        define(
            "MI_SECURE",
            Some("4"),
            "`secure` feature: guard pages, encoded free lists, double-free checks",
        );
    }
    if features.asan {
        define(
            "MI_TRACK_ASAN",
            Some("1"),
            "`asan` feature: poison freed blocks and padding so ASan sees mimalloc's blocks",
        );
    }
    if features.tsan {
        define(
            "MI_TSAN",
            Some("1"),
            "`tsan` feature: mimalloc's own ThreadSanitizer adjustments (as its CMake option)",
        );
    }
    if features.valgrind {
        define(
            "MI_TRACK_VALGRIND",
            Some("1"),
            "`valgrind` feature: describe every block to memcheck with client requests",
        );
    }
    if features.guarded {
        define(
            "MI_GUARDED",
            Some("1"),
            "`guarded` feature: a sample of blocks is followed by a guard page",
        );
    } else {
        define(
            "MI_GUARDED",
            Some("0"),
            "mimalloc turns guard pages on in every debug build, where they make `mi_heap_destroy` \
             a `mi_heap_delete` (mimalloc 2: a dropped Heap leaks) and expose the realloc crash \
             that refuses the `guarded` feature",
        );
    }
    if features.override_malloc && !target.is_windows() {
        define(
            "MI_MALLOC_OVERRIDE",
            None,
            "`override` feature: export malloc/free/... from mimalloc",
        );
        if target.is_apple() {
            define(
                "MI_OSX_ZONE",
                Some("1"),
                "`override` on Apple: register mimalloc as the default malloc zone",
            );
            define(
                "MI_OSX_INTERPOSE",
                Some("1"),
                "`override` on Apple: interpose the system malloc functions",
            );
        }
    }
    if target.os == "linux" || target.os == "android" {
        // Chosen from the benchmark (BENCHMARKS.md): with transparent huge pages off, peak RSS
        // is 1.27x glibc's instead of 1.84x (geometric mean of the workloads) at the same or
        // better speed, without the huge-page stalls. The `no_thp` feature asked for this
        // before it became the default, and still names it.
        define(
            "MI_DEFAULT_ALLOW_THP",
            Some("0"),
            "transparent huge pages off by default (measured); MIMALLOC_ALLOW_THP=1 turns them on",
        );
    }
    if target.env == "musl" {
        define(
            "MI_LIBC_MUSL",
            Some("1"),
            "musl: no __builtin_thread_pointer, different TLS set-up",
        );
    }
    if target.is_windows() && !target.is_msvc() {
        // mimalloc's default start-up hook on Windows registers TLS and CRT callbacks with
        // MSVC-only `#pragma const_seg`, which GCC and clang ignore: mimalloc would never run
        // its process initialisation (no arenas, no purging, MIMALLOC_* ignored, no clean-up of
        // exited threads). The fiber-local-storage hook uses a constructor with GCC/clang.
        define(
            "MI_WIN_INIT_USE_FLS",
            Some("1"),
            "non-MSVC Windows: start mimalloc with a constructor and FLS",
        );
    }

    if features.override_malloc && target.is_windows() {
        plan.warnings.push(
            "the `override` feature has no effect on Windows: mimalloc is linked as a static library, \
             and replacing the CRT's malloc needs the mimalloc DLL with its redirection module; \
             Rust allocations are still served by mimalloc through MiMalloc"
                .to_string(),
        );
    }
    if features.no_thp && !(target.os == "linux" || target.os == "android") {
        plan.warnings.push(format!(
            "the `no_thp` feature has no effect on {}: transparent huge pages are a Linux feature",
            target.triple
        ));
    }

    if features.asan {
        // The runtime comes from rustc's `-Zsanitizer=address` (checked in `refusal`), which
        // links it into the final binary; the C side only needs the instrumentation.
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

    if target.is_msvc() {
        // cl.exe and clang-cl compile `.c` files as C unless told otherwise.
        plan.flags.push("/TP");
        // Without it MSVC reports `__cplusplus` as 199711L whatever the standard.
        plan.flags_if_supported.push("/Zc:__cplusplus");
    } else {
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
    }

    if target.is_windows() {
        // What mimalloc's own CMake build links on Windows: psapi (process info), shell32 and
        // user32 (environment, messages), advapi32 (large-page privileges), bcrypt (random).
        plan.link_libs
            .extend(["advapi32", "bcrypt", "psapi", "shell32", "user32"]);
        plan.static_crt = Some(target.features.iter().any(|f| f == "crt-static"));
    }
    let native_64bit_atomics = target.has_atomic.iter().any(|a| a == "64");
    if target.os == "linux" && (target.arch == "arm" || !native_64bit_atomics) {
        // GCC lowers some 64-bit atomics to calls into libatomic on 32-bit ARM and on targets
        // without native 64-bit atomics; without it the link fails with `__atomic_*_8`.
        plan.link_libs.push("atomic");
    }

    Decision::Build(plan)
}

/// An option default baked into the library at build time (`MIMALLOC_SYS_DEFAULT_<NAME>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionDefault {
    /// The option's name in `mimalloc.h` without `mi_option_`, e.g. `purge_delay`.
    pub name: String,
    pub value: i64,
}

/// The prefix of the environment variables that bake option defaults into the library.
pub const OPTION_DEFAULT_PREFIX: &str = "MIMALLOC_SYS_DEFAULT_";

/// Checks the requested option defaults (`(variable, value)` pairs) against the options the
/// vendored `mimalloc.h` declares (`known`), and against the range of C's `long` on the target.
/// An unknown option or a bad value is a build error, never ignored.
pub fn option_defaults(
    target: &Target,
    known: &[String],
    requested: &[(String, String)],
) -> Result<Vec<OptionDefault>, String> {
    // `long` is 32 bits on Windows (LLP64) and on 32-bit targets, 64 bits elsewhere.
    let long_is_32_bits = target.is_windows() || target.pointer_width < 64;
    let mut defaults = Vec::new();
    for (variable, text) in requested {
        let upper = variable
            .strip_prefix(OPTION_DEFAULT_PREFIX)
            .ok_or_else(|| format!("{variable} does not start with {OPTION_DEFAULT_PREFIX}"))?;
        let name = upper.to_ascii_lowercase();
        if !known.contains(&name) {
            return Err(format!(
                "{variable}: the vendored mimalloc has no option `{name}`; it has: {}",
                known.join(", ")
            ));
        }
        let value: i64 = text.trim().parse().map_err(|_| {
            format!("{variable}={text}: the value must be an integer (sizes are in KiB)")
        })?;
        let fits = if long_is_32_bits {
            i32::try_from(value).is_ok()
        } else {
            true
        };
        if !fits {
            return Err(format!(
                "{variable}={value} does not fit in C's 32-bit `long` on {}",
                target.triple
            ));
        }
        defaults.push(OptionDefault { name, value });
    }
    defaults.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(defaults)
}

/// The translation unit compiled when option defaults are baked in: it sets them with
/// `mi_option_set_default` before mimalloc initialises its options, then includes the vendored
/// `static.c` unchanged. (Without baked defaults `static.c` is compiled directly.)
///
/// The defaults must run before mimalloc's own start-up hook. With GCC and clang that hook is a
/// constructor (priority 101 with clang, the default priority with GCC), so ours is a
/// constructor of priority 101 defined first in the same translation unit. With MSVC mimalloc
/// starts from a TLS callback in section `.CRT$XLB`; ours goes in `.CRT$XLAB`, which the linker
/// orders before it.
pub fn baked_defaults_source(
    target: &Target,
    defaults: &[OptionDefault],
    static_c: &str,
) -> String {
    let mut calls = String::new();
    for d in defaults {
        calls.push_str(&format!(
            "  mi_option_set_default(mi_option_{}, {}L);\n",
            d.name, d.value
        ));
    }
    let hook = if target.is_msvc() {
        "#include <windows.h>\n\
         static void NTAPI mimalloc_sys_tls_callback(PVOID module, DWORD reason, PVOID reserved) {\n\
         \x20 (void)module; (void)reserved;\n\
         \x20 if (reason == DLL_PROCESS_ATTACH) mimalloc_sys_set_option_defaults();\n\
         }\n\
         #ifdef __cplusplus\nextern \"C\" {\n#endif\n\
         #pragma comment(linker, \"/INCLUDE:_tls_used\")\n\
         #if defined(_WIN64)\n#pragma comment(linker, \"/INCLUDE:mimalloc_sys_tls_defaults\")\n\
         #pragma const_seg(\".CRT$XLAB\")\n\
         extern const PIMAGE_TLS_CALLBACK mimalloc_sys_tls_defaults[];\n\
         const PIMAGE_TLS_CALLBACK mimalloc_sys_tls_defaults[] = { &mimalloc_sys_tls_callback };\n\
         #pragma const_seg()\n\
         #else\n#pragma comment(linker, \"/INCLUDE:_mimalloc_sys_tls_defaults\")\n\
         #pragma data_seg(\".CRT$XLAB\")\n\
         PIMAGE_TLS_CALLBACK mimalloc_sys_tls_defaults[] = { &mimalloc_sys_tls_callback };\n\
         #pragma data_seg()\n#endif\n\
         #ifdef __cplusplus\n}\n#endif\n"
            .to_string()
    } else {
        "__attribute__((constructor(101))) static void mimalloc_sys_defaults_first(void) {\n\
         \x20 mimalloc_sys_set_option_defaults();\n\
         }\n"
        .to_string()
    };
    format!(
        "/* Generated by mimalloc-sys/build.rs: option defaults baked in at build time\n   \
         (MIMALLOC_SYS_DEFAULT_*); the environment (MIMALLOC_*) still overrides them. */\n\
         #include \"mimalloc.h\"\n\
         static void mimalloc_sys_set_option_defaults(void) {{\n{calls}}}\n\
         {hook}\
         #include \"{static_c}\"\n"
    )
}

/// Why `features` cannot be built for `target`, if they cannot.
fn refusal(target: &Target, features: &Features) -> Option<String> {
    let tools = [
        ("asan", features.asan),
        ("tsan", features.tsan),
        ("valgrind", features.valgrind),
    ];
    let chosen: Vec<&str> = tools.iter().filter(|t| t.1).map(|t| t.0).collect();
    if chosen.len() > 1 {
        return Some(format!(
            "the features {} cannot be combined: each memory tool tracks mimalloc's blocks its own \
             way (and the sanitizers' runtimes exclude each other); pick one",
            chosen.join(" and ")
        ));
    }
    // Instrumented C code calls into the sanitizer runtime, which only rustc's `-Zsanitizer`
    // links in: without it the link fails with hundreds of undefined `__asan_*` symbols.
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
    if features.tsan && target.is_msvc() {
        return Some("the `tsan` feature: MSVC has no ThreadSanitizer".to_string());
    }
    if features.guarded && features.override_malloc {
        // Found by this workspace's model and ffi tests (MIMALLOC_GUARDED_SAMPLE_RATE=10 makes it
        // quick): `mi_realloc` of a guarded block copies the usable size of the block that
        // holds it, not the object's size, so the copy runs from the object into its guard
        // page and the program dies (3.3.2: `_mi_theap_realloc_zero`; 2.3.2:
        // `mi_heap_realloc_zero_aligned_at`). The Rust side resizes guarded builds by copy;
        // C code calling the overridden `realloc` cannot be protected.
        return Some(
            "`guarded` with `override` is refused: with mimalloc 3.3.2 and 2.3.2 a realloc of a \
             guarded block copies past the object into its guard page and crashes; the Rust \
             allocators avoid mimalloc's realloc in guarded builds, but C callers of the \
             overridden `realloc` would hit it"
                .to_string(),
        );
    }
    if features.valgrind && !(target.os == "linux" || target.is_apple() || target.os == "freebsd") {
        return Some(format!(
            "the `valgrind` feature needs Valgrind's headers and a Valgrind for {} (it runs on \
             Linux, macOS and FreeBSD)",
            target.triple
        ));
    }
    None
}
