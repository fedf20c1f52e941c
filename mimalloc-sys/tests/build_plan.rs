//! The build script's decisions for targets this machine cannot run (and some it can).
//!
//! `build/plan.rs` is a pure function of the target facts cargo passes in `CARGO_CFG_*`; these
//! tests feed it the facts of each target and check the recipe. If the plan consulted the host
//! (`cfg!(windows)` in a build script describes the machine doing the build), the Windows, macOS
//! and Android rows below would fail on this Linux machine.

#[path = "../build/plan.rs"]
#[allow(dead_code)]
mod plan;

#[path = "../build/baked.rs"]
mod baked;

use plan::{Decision, Features, Language, Plan, Target, Version};

/// Per target: `target_arch`, `_vendor`, `_os`, `_env`, `_family`, `_has_atomic`, `_feature`, as
/// `rustc --print cfg --target ...` gives them (the build plan reads nothing else).
#[rustfmt::skip]
const FACTS: &[(&str, [&str; 7])] = &[
    ("x86_64-unknown-linux-gnu", ["x86_64", "unknown", "linux", "gnu", "unix", "8,16,32,64,ptr", "fxsr,sse,sse2"]),
    ("i686-unknown-linux-gnu", ["x86", "unknown", "linux", "gnu", "unix", "8,16,32,64,ptr", "fxsr,sse,sse2"]),
    ("aarch64-unknown-linux-gnu", ["aarch64", "unknown", "linux", "gnu", "unix", "8,16,32,64,128,ptr", "neon"]),
    ("armv7-unknown-linux-gnueabihf", ["arm", "unknown", "linux", "gnu", "unix", "8,16,32,64,ptr", "v7,vfp3"]),
    ("mipsel-unknown-linux-gnu", ["mips", "unknown", "linux", "gnu", "unix", "8,16,32,ptr", ""]),
    ("x86_64-unknown-linux-musl", ["x86_64", "unknown", "linux", "musl", "unix", "8,16,32,64,ptr", "crt-static,sse2"]),
    ("aarch64-linux-android", ["aarch64", "unknown", "android", "", "unix", "8,16,32,64,128,ptr", "neon"]),
    ("x86_64-apple-darwin", ["x86_64", "apple", "macos", "", "unix", "8,16,32,64,128,ptr", "sse3"]),
    ("aarch64-apple-darwin", ["aarch64", "apple", "macos", "", "unix", "8,16,32,64,128,ptr", "neon"]),
    ("x86_64-pc-windows-msvc", ["x86_64", "pc", "windows", "msvc", "windows", "8,16,32,64,ptr", "sse2"]),
    ("aarch64-pc-windows-msvc", ["aarch64", "pc", "windows", "msvc", "windows", "8,16,32,64,128,ptr", "neon"]),
    ("x86_64-pc-windows-gnu", ["x86_64", "pc", "windows", "gnu", "windows", "8,16,32,64,ptr", "sse2"]),
    ("wasm32-unknown-unknown", ["wasm32", "unknown", "unknown", "", "wasm", "8,16,32,64,ptr", ""]),
    ("wasm32-wasip1", ["wasm32", "unknown", "wasi", "p1", "wasm", "8,16,32,64,ptr", ""]),
    ("thumbv7em-none-eabihf", ["arm", "unknown", "none", "", "", "8,16,32,ptr", ""]),
    ("x86_64-unknown-freebsd", ["x86_64", "unknown", "freebsd", "", "unix", "8,16,32,64,ptr", "sse2"]),
    ("x86_64-unknown-netbsd", ["x86_64", "unknown", "netbsd", "", "unix", "8,16,32,64,ptr", "fxsr,sse,sse2"]),
    ("x86_64-unknown-openbsd", ["x86_64", "unknown", "openbsd", "", "unix", "8,16,32,64,ptr", "fxsr,sse,sse2"]),
];

/// The facts cargo gives a build script for `triple`, through the function the build script
/// uses (cargo passes `CARGO_CFG_TARGET_OS=linux` and so on).
fn target(triple: &str) -> Target {
    let (_, facts) = FACTS
        .iter()
        .find(|(t, _)| *t == triple)
        .unwrap_or_else(|| panic!("no facts for {triple}"));
    let [arch, vendor, os, env, family, atomics, features] = *facts;
    let width = if matches!(arch, "x86_64" | "aarch64") {
        "64"
    } else {
        "32"
    };
    let cfg = |key: &str| {
        let value = match key {
            "target_arch" => arch,
            "target_vendor" => vendor,
            "target_os" => os,
            "target_env" => env,
            "target_family" => family,
            "target_has_atomic" => atomics,
            "target_feature" => features,
            "target_pointer_width" => width,
            _ => return None,
        };
        Some(value.to_owned())
    };
    Target::from_cfg(triple, cfg).unwrap()
}

/// The facts of `triple` compiled with nightly `-Zsanitizer=<sanitizer>` (`CARGO_CFG_SANITIZE`).
fn sanitized(triple: &str, sanitizer: &str) -> Target {
    let mut t = target(triple);
    t.sanitizers.push(sanitizer.to_owned());
    t
}

fn refusal(t: &Target, f: Features) -> String {
    match plan::decide(t, &f, true) {
        Decision::Refuse(why) => why,
        Decision::Build(_) => panic!("{}: {f:?} was built", t.triple),
        Decision::Skip(why) => panic!("{}: {f:?} skipped: {why}", t.triple),
    }
}

fn build(t: &Target, f: Features) -> Plan {
    match plan::decide(t, &f, true) {
        Decision::Build(plan) => plan,
        Decision::Skip(why) => panic!("{} skipped: {why}", t.triple),
        Decision::Refuse(why) => panic!("{} refused: {why}", t.triple),
    }
}

fn default_plan(triple: &str) -> Plan {
    build(&target(triple), Features::default())
}

fn value(plan: &Plan, name: &str) -> Option<Option<&'static str>> {
    plan.defines
        .iter()
        .find(|d| d.name == name)
        .map(|d| d.value)
}

/// Whether the plan publishes `cfg` ([`plan::Published`]).
fn publishes(plan: &Plan, cfg: &str) -> bool {
    plan.published.iter().any(|p| p.cfg == cfg)
}

fn has_flag(plan: &Plan, flag: &str) -> bool {
    plan.flags.contains(&flag) || plan.flags_if_supported.contains(&flag)
}

const WINDOWS_LIBS: [&str; 4] = ["advapi32", "psapi", "shell32", "user32"];

#[test]
fn linux_gnu_default() {
    let plan = default_plan("x86_64-unknown-linux-gnu");
    assert_eq!(plan.version, Version::V3);
    assert_eq!(plan.language, Language::C);
    assert_eq!(value(&plan, "MI_DEBUG"), Some(Some("0")));
    assert_eq!(value(&plan, "NDEBUG"), Some(None));
    assert!(has_flag(&plan, "-ftls-model=initial-exec"));
    // Only an `override` build needs its calls kept from becoming `malloc`'s.
    assert!(!has_flag(&plan, "-fno-builtin-malloc"));
    // GCC 12's false report in 3.6.0's sample-guarded.c, which every build would print.
    assert!(has_flag(&plan, "-Wno-stringop-overflow"));
    assert!(plan.link_libs.is_empty(), "{:?}", plan.link_libs);
    assert_eq!(plan.static_crt, None);
    assert!(plan.warnings.is_empty());
    for windows_only in [
        "MI_WIN_INIT_USE_FLS",
        "MI_SECURE",
        "MI_MALLOC_OVERRIDE",
        "MI_LIBC_MUSL",
    ] {
        assert_eq!(value(&plan, windows_only), None, "{windows_only}");
    }
}

#[test]
fn debug_profile_keeps_c_asserts() {
    let plan = match plan::decide(
        &target("x86_64-unknown-linux-gnu"),
        &Features::default(),
        false,
    ) {
        Decision::Build(plan) => plan,
        Decision::Skip(why) | Decision::Refuse(why) => panic!("{why}"),
    };
    assert_eq!(value(&plan, "NDEBUG"), None);
    assert_eq!(value(&plan, "MI_DEBUG"), Some(Some("0")));
}

#[test]
fn msvc_compiles_as_cxx17_and_follows_the_crt_choice() {
    for triple in ["x86_64-pc-windows-msvc", "aarch64-pc-windows-msvc"] {
        let mut t = target(triple);
        let plan = build(&t, Features::default());
        assert_eq!(plan.language, Language::Cxx17, "{triple}");
        assert!(
            plan.flags.contains(&"/TP"),
            "{triple}: .c must be compiled as C++"
        );
        assert!(
            !plan.flags_if_supported.iter().any(|f| f.starts_with("-f")),
            "{triple}: GCC flags"
        );
        assert_eq!(plan.link_libs, WINDOWS_LIBS, "{triple}");
        assert_eq!(
            plan.static_crt,
            Some(false),
            "{triple}: dynamic CRT unless crt-static"
        );
        assert_eq!(
            value(&plan, "MI_WIN_INIT_USE_FLS"),
            None,
            "{triple}: MSVC's default start-up works"
        );

        t.features.push("crt-static".to_owned());
        assert_eq!(
            build(&t, Features::default()).static_crt,
            Some(true),
            "{triple}"
        );
    }
}

#[test]
fn windows_gnu_starts_mimalloc_with_a_constructor() {
    let plan = default_plan("x86_64-pc-windows-gnu");
    assert_eq!(plan.language, Language::C);
    assert_eq!(value(&plan, "MI_WIN_INIT_USE_FLS"), Some(Some("1")));
    assert_eq!(plan.link_libs, WINDOWS_LIBS);
    assert!(
        !has_flag(&plan, "-ftls-model=initial-exec"),
        "no ELF TLS models on PE"
    );
}

#[test]
fn apple_has_no_elf_tls_model_and_overrides_through_zones() {
    for triple in ["x86_64-apple-darwin", "aarch64-apple-darwin"] {
        let plan = default_plan(triple);
        assert_eq!(plan.language, Language::C);
        // Two static copies of mimalloc 3 in one process keep apart (mimalloc #1327).
        assert_eq!(
            value(&plan, "MI_TLS_MODEL_PTHREADS"),
            Some(Some("1")),
            "{triple}"
        );
        assert!(
            !plan
                .flags_if_supported
                .iter()
                .any(|f| f.starts_with("-ftls-model")),
            "{triple}"
        );
        assert!(plan.link_libs.is_empty(), "{triple}");

        let plan = build(
            &target(triple),
            Features {
                override_malloc: true,
                ..Features::default()
            },
        );
        assert_eq!(value(&plan, "MI_MALLOC_OVERRIDE"), Some(None), "{triple}");
        assert_eq!(value(&plan, "MI_OSX_ZONE"), Some(Some("1")), "{triple}");
        assert_eq!(
            value(&plan, "MI_OSX_INTERPOSE"),
            Some(Some("1")),
            "{triple}"
        );
    }
}

#[test]
fn override_is_refused_loudly_on_windows() {
    for triple in ["x86_64-pc-windows-msvc", "x86_64-pc-windows-gnu"] {
        let plan = build(
            &target(triple),
            Features {
                override_malloc: true,
                ..Features::default()
            },
        );
        assert_eq!(value(&plan, "MI_MALLOC_OVERRIDE"), None, "{triple}");
        assert!(!has_flag(&plan, "-fno-builtin-malloc"), "{triple}");
        assert!(
            plan.warnings.iter().any(|w| w.contains("override")),
            "{triple}: {:?}",
            plan.warnings
        );
    }
    let plan = build(
        &target("x86_64-unknown-linux-gnu"),
        Features {
            override_malloc: true,
            ..Features::default()
        },
    );
    assert_eq!(value(&plan, "MI_MALLOC_OVERRIDE"), Some(None));
    assert!(has_flag(&plan, "-fno-builtin-malloc"));
    assert!(plan.warnings.is_empty());
}

/// Huge pages for large blocks only with mimalloc 3 on 64-bit Linux (mimalloc's arena advice
/// compiled out, `allow_thp` 1, the routing core advising blocks of 2 MiB or more), mimalloc 2's
/// own advice on Linux, off on Android (mimalloc's own default) and for mimalloc 3 on 32-bit
/// Linux, unset where there are none; immediate purges from 256 MiB instead of 32 MiB on 64-bit
/// targets with mimalloc 3, whose blocks of 64-512 KiB get pages of their own everywhere
/// (BENCHMARKS.md#the-option-defaults).
#[test]
fn memory_defaults_follow_the_benchmark() {
    // (triple, allow_thp with v3, with v2, huge-block advice with v3)
    for (triple, v3, v2, advice) in [
        ("x86_64-unknown-linux-gnu", Some("1"), Some("1"), true),
        ("aarch64-unknown-linux-gnu", Some("1"), Some("1"), true),
        ("i686-unknown-linux-gnu", Some("0"), Some("1"), false),
        ("armv7-unknown-linux-gnueabihf", Some("0"), Some("1"), false),
        ("aarch64-linux-android", Some("0"), Some("0"), false),
        ("aarch64-apple-darwin", None, None, false),
        ("x86_64-pc-windows-msvc", None, None, false),
    ] {
        for (v2_feature, thp) in [(false, v3), (true, v2)] {
            let features = Features {
                v2: v2_feature,
                ..Features::default()
            };
            let t = target(triple);
            let plan = build(&t, features);
            assert_eq!(
                value(&plan, "MI_DEFAULT_ALLOW_THP"),
                thp.map(Some),
                "{triple}"
            );
            let advised = advice && !v2_feature;
            assert_eq!(
                publishes(&plan, "mimalloc_adaptive_thp"),
                advised,
                "{triple}"
            );
            assert_eq!(
                value(&plan, "MI_NO_THP").is_some(),
                advised,
                "{triple}: mimalloc's own advice goes exactly where the routing core's comes"
            );
            let immediate = (!v2_feature && t.pointer_width == 64).then_some(Some("262144"));
            assert_eq!(
                value(&plan, "MI_DEFAULT_ARENA_PURGE_IMMEDIATE_SIZE"),
                immediate,
                "{triple}"
            );
            assert_eq!(
                value(&plan, "MI_ENABLE_LARGE_PAGES"),
                (!v2_feature).then_some(Some("0")),
                "{triple}: blocks of 64-512 KiB in pages of their own with mimalloc 3"
            );
            assert!(plan.warnings.is_empty(), "{triple}");
        }
    }
    let plan = default_plan("aarch64-linux-android");
    assert!(
        plan.link_libs.is_empty(),
        "Android's toolchain has no libatomic to link"
    );
}

/// The option defaults the plan sets where mimalloc has no define for them: mimalloc 3 only
/// (mimalloc 2's `abandoned_reclaim_on_free` is 0 already), on every target.
#[test]
fn option_defaults_follow_the_benchmark() {
    for (triple, _) in FACTS {
        for v2_feature in [false, true] {
            let t = target(triple);
            let plan = match plan::decide(&t, &with_v2(v2_feature), true) {
                Decision::Build(plan) => plan,
                _ => continue,
            };
            let reclaim: Vec<(&str, i64)> = plan
                .option_defaults
                .iter()
                .map(|d| (d.name, d.value))
                .collect();
            let chosen: &[(&str, i64)] = if v2_feature {
                &[]
            } else {
                &[("page_reclaim_on_free", 0)]
            };
            assert_eq!(
                reclaim, chosen,
                "{triple}: mimalloc 2's own default is the chosen one"
            );
        }
    }
}

#[test]
fn musl_uses_local_dynamic_tls() {
    let plan = default_plan("x86_64-unknown-linux-musl");
    assert_eq!(value(&plan, "MI_LIBC_MUSL"), Some(Some("1")));
    assert!(has_flag(&plan, "-ftls-model=local-dynamic"));
    assert!(!has_flag(&plan, "-ftls-model=initial-exec"));
}

#[test]
fn local_dynamic_tls_feature() {
    let plan = build(
        &target("x86_64-unknown-linux-gnu"),
        Features {
            local_dynamic_tls: true,
            ..Features::default()
        },
    );
    assert!(has_flag(&plan, "-ftls-model=local-dynamic"));
    assert!(!has_flag(&plan, "-ftls-model=initial-exec"));
}

#[test]
fn libatomic_where_64_bit_atomics_are_not_native() {
    for triple in ["armv7-unknown-linux-gnueabihf", "mipsel-unknown-linux-gnu"] {
        assert!(
            default_plan(triple).link_libs.contains(&"atomic"),
            "{triple}"
        );
    }
    for triple in [
        "x86_64-unknown-linux-gnu",
        "i686-unknown-linux-gnu",
        "aarch64-unknown-linux-gnu",
    ] {
        assert!(
            !default_plan(triple).link_libs.contains(&"atomic"),
            "{triple}"
        );
    }
}

#[test]
fn targets_without_an_os_build_nothing_and_say_why() {
    for triple in ["wasm32-unknown-unknown", "thumbv7em-none-eabihf"] {
        match plan::decide(&target(triple), &Features::default(), true) {
            Decision::Skip(why) => assert!(why.contains(triple), "{why}"),
            Decision::Build(_) | Decision::Refuse(_) => panic!("{triple} has no OS for mimalloc"),
        }
    }
    let wasi = default_plan("wasm32-wasip1");
    assert!(!wasi
        .flags_if_supported
        .iter()
        .any(|f| f.starts_with("-ftls-model")));
}

#[test]
fn feature_defines() {
    let t = target("x86_64-unknown-linux-gnu");
    let plan = build(
        &t,
        Features {
            secure: true,
            ..Features::default()
        },
    );
    assert_eq!(value(&plan, "MI_SECURE"), Some(Some("4")));
    let plan = build(
        &t,
        Features {
            debug: true,
            ..Features::default()
        },
    );
    assert_eq!(value(&plan, "MI_DEBUG"), Some(Some("3")));
    assert_eq!(value(&plan, "MI_SHOW_ERRORS"), Some(Some("1")));
    let plan = build(
        &t,
        Features {
            v2: true,
            secure: true,
            ..Features::default()
        },
    );
    assert_eq!(plan.version, Version::V2);
    assert_eq!(plan.version.dir(), "v2");
    assert_eq!(value(&plan, "MI_SECURE"), Some(Some("4")));
}

#[test]
fn every_define_says_why() {
    let all = Features {
        secure: true,
        debug: true,
        override_malloc: true,
        no_thp: true,
        win_direct_tls: true,
        skip_collect_on_exit: true,
        free_use_pagemap: true,
        ..Features::default()
    };
    for triple in [
        "x86_64-unknown-linux-gnu",
        "x86_64-pc-windows-gnu",
        "aarch64-apple-darwin",
        "x86_64-unknown-linux-musl",
    ] {
        for define in build(&target(triple), all).defines {
            assert!(
                define.why.len() > 10,
                "{triple}: {} has no reason",
                define.name
            );
        }
    }
}

#[test]
fn asan_instruments_the_c_side_and_tracks_blocks() {
    let asan = Features {
        asan: true,
        ..Features::default()
    };
    let plan = build(&sanitized("x86_64-unknown-linux-gnu", "address"), asan);
    assert_eq!(value(&plan, "MI_TRACK_ASAN"), Some(Some("1")));
    assert!(plan.flags.contains(&"-fsanitize=address"));
    assert!(has_flag(&plan, "-fno-omit-frame-pointer"));
    let plan = build(&sanitized("x86_64-pc-windows-msvc", "address"), asan);
    assert!(plan.flags.contains(&"/fsanitize=address"));
    assert!(
        !plan.flags.iter().any(|f| f.starts_with('-')),
        "{:?}",
        plan.flags
    );
    // Without the Rust side instrumented nothing links the runtime: refused, saying how.
    let why = refusal(&target("x86_64-unknown-linux-gnu"), asan);
    assert!(why.contains("-Zsanitizer=address"), "{why}");
    assert_eq!(
        value(&default_plan("x86_64-unknown-linux-gnu"), "MI_TRACK_ASAN"),
        None
    );
}

#[test]
fn tsan_needs_the_thread_sanitizer_and_a_compiler_that_has_it() {
    let tsan = Features {
        tsan: true,
        ..Features::default()
    };
    let plan = build(&sanitized("x86_64-unknown-linux-gnu", "thread"), tsan);
    assert_eq!(value(&plan, "MI_TSAN"), Some(Some("1")));
    assert!(plan.flags.contains(&"-fsanitize=thread"));
    let why = refusal(&sanitized("x86_64-unknown-linux-gnu", "address"), tsan);
    assert!(why.contains("-Zsanitizer=thread"), "{why}");
    let why = refusal(&sanitized("x86_64-pc-windows-msvc", "thread"), tsan);
    assert!(why.contains("MSVC"), "{why}");
}

#[test]
fn valgrind_tracking_where_valgrind_runs() {
    let valgrind = Features {
        valgrind: true,
        ..Features::default()
    };
    for triple in ["x86_64-unknown-linux-gnu", "aarch64-apple-darwin"] {
        let plan = build(&target(triple), valgrind);
        assert_eq!(
            value(&plan, "MI_TRACK_VALGRIND"),
            Some(Some("1")),
            "{triple}"
        );
        // 3.6.0 misannotates small-page metadata kept inside the page (see plan.rs).
        assert_eq!(
            value(&plan, "MI_OPT_FREE_SMALL"),
            Some(Some("0")),
            "{triple}"
        );
    }
    let default = default_plan("x86_64-unknown-linux-gnu");
    assert_eq!(value(&default, "MI_OPT_FREE_SMALL"), None);
    let v2 = Features {
        v2: true,
        ..valgrind
    };
    let v2_plan = build(&target("x86_64-unknown-linux-gnu"), v2);
    assert_eq!(value(&v2_plan, "MI_OPT_FREE_SMALL"), None, "mimalloc 3's");
    let why = refusal(&target("x86_64-pc-windows-gnu"), valgrind);
    assert!(why.contains("Valgrind"), "{why}");
}

#[test]
fn memory_tools_are_one_at_a_time() {
    let t = sanitized("x86_64-unknown-linux-gnu", "address");
    let why = refusal(
        &t,
        Features {
            asan: true,
            valgrind: true,
            ..Features::default()
        },
    );
    assert!(why.contains("asan and valgrind"), "{why}");
}

/// `guarded` builds with either version, and with `override` too: mimalloc 3.6.0 and 2.5.2
/// resize guarded blocks correctly (3.3.2 and 2.3.2 copied past them into the guard page, which
/// made the combination with C callers of `realloc` a crash; `tests/tests/memory_tools.rs`).
#[test]
fn guarded_pages_build_with_and_without_override() {
    for v2 in [false, true] {
        for override_malloc in [false, true] {
            let guarded = Features {
                guarded: true,
                v2,
                override_malloc,
                ..Features::default()
            };
            let plan = build(&target("x86_64-unknown-linux-gnu"), guarded);
            assert_eq!(value(&plan, "MI_GUARDED"), Some(Some("1")));
            // mimalloc 3 guards nothing by default, even built guarded; mimalloc 2 one in 4000.
            let rate = value(&plan, "MI_DEFAULT_GUARDED_SAMPLE_RATE");
            assert_eq!(rate, if v2 { None } else { Some(Some("1048576")) });
        }
    }
}

/// mimalloc's headers turn MI_GUARDED on whenever MI_DEBUG is set; the plan keeps it off in
/// every build, `debug` included, so that debug builds behave like release builds.
#[test]
fn guard_pages_stay_off_in_debug_builds() {
    for debug in [false, true] {
        let features = Features {
            debug,
            ..Features::default()
        };
        for release in [false, true] {
            let plan = match plan::decide(&target("x86_64-unknown-linux-gnu"), &features, release) {
                Decision::Build(plan) => plan,
                Decision::Skip(why) | Decision::Refuse(why) => panic!("{why}"),
            };
            assert_eq!(
                value(&plan, "MI_GUARDED"),
                Some(Some("0")),
                "debug {debug}, release {release}"
            );
        }
    }
}

/// The build script must never ask the host what the target is. Target facts come from cargo's
/// `CARGO_CFG_*` variables; `cfg!`/`#[cfg]` on a target property in build code is always a bug.
#[test]
fn build_code_never_uses_host_cfg() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = [
        "build.rs",
        "build/plan.rs",
        "build/baked.rs",
        "build/bindings.rs",
    ];
    for file in files {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap();
            for needle in ["cfg!(", "#[cfg(", "cfg_attr("] {
                if let Some(at) = code.find(needle) {
                    let in_string_literal = code[..at].matches('"').count() % 2 == 1;
                    if in_string_literal {
                        continue;
                    }
                    let rest = &code[at..];
                    assert!(
                        rest.starts_with(&format!("{needle}feature")),
                        "{file}:{}: `{}` looks at the host; use the target facts",
                        n + 1,
                        line.trim()
                    );
                }
            }
        }
    }
}

fn with_v2(v2: bool) -> Features {
    Features {
        v2,
        ..Features::default()
    }
}

fn known_options() -> Vec<String> {
    ["purge_delay", "max_warnings", "arena_reserve"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

fn request(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn option_defaults_are_checked_and_sorted() {
    let linux = target("x86_64-unknown-linux-gnu");
    let defaults = baked::option_defaults(
        &linux,
        &known_options(),
        &request(&[
            ("MIMALLOC_SYS_DEFAULT_PURGE_DELAY", "0"),
            ("MIMALLOC_SYS_DEFAULT_ARENA_RESERVE", " 65536 "),
        ]),
    )
    .unwrap();
    let got: Vec<(&str, i64)> = defaults
        .iter()
        .map(|d| (d.name.as_str(), d.value))
        .collect();
    assert_eq!(got, [("arena_reserve", 65536), ("purge_delay", 0)]);

    let typo = baked::option_defaults(
        &linux,
        &known_options(),
        &request(&[("MIMALLOC_SYS_DEFAULT_PURGE_DELAX", "0")]),
    );
    assert!(typo.unwrap_err().contains("no option `purge_delax`"));
    let not_a_number = baked::option_defaults(
        &linux,
        &known_options(),
        &request(&[("MIMALLOC_SYS_DEFAULT_PURGE_DELAY", "1s")]),
    );
    assert!(not_a_number.unwrap_err().contains("must be an integer"));
}

#[test]
fn option_defaults_fit_cs_long_on_the_target() {
    let big = request(&[("MIMALLOC_SYS_DEFAULT_ARENA_RESERVE", "4294967296")]);
    assert!(
        baked::option_defaults(&target("x86_64-unknown-linux-gnu"), &known_options(), &big).is_ok()
    );
    for triple in [
        "x86_64-pc-windows-msvc",
        "x86_64-pc-windows-gnu",
        "i686-unknown-linux-gnu",
    ] {
        let err = baked::option_defaults(&target(triple), &known_options(), &big).unwrap_err();
        assert!(err.contains("32-bit `long`"), "{triple}: {err}");
    }
}

#[test]
fn baked_defaults_run_before_mimalloc_starts() {
    let defaults = [baked::OptionDefault {
        name: "purge_delay".into(),
        value: 0,
    }];
    let gnu = baked::baked_defaults_source(
        &target("x86_64-unknown-linux-gnu"),
        &defaults,
        "/v/src/static.c",
    );
    assert!(gnu.contains("mi_option_set_default(mi_option_purge_delay, 0L);"));
    assert!(gnu.contains("__attribute__((constructor(101)))"));
    // Ours is defined first, so it runs first among same-priority constructors.
    assert!(
        gnu.find("constructor(101)").unwrap() < gnu.find("#include \"/v/src/static.c\"").unwrap()
    );

    let msvc = baked::baked_defaults_source(
        &target("x86_64-pc-windows-msvc"),
        &defaults,
        "C:/v/src/static.c",
    );
    assert!(
        !msvc.contains("__attribute__"),
        "MSVC has no constructor attribute"
    );
    // TLS callbacks run in section order; mimalloc's is in .CRT$XLB.
    assert!(msvc.contains(".CRT$XLAB") && msvc.contains("/INCLUDE:_tls_used"));
    assert!(msvc.trim_end().ends_with("#include \"C:/v/src/static.c\""));
}

#[test]
fn option_names_come_from_the_vendored_header() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../vendor/mimalloc");
    for version in ["v3", "v2"] {
        let header = std::fs::read_to_string(dir.join(version).join("include/mimalloc.h")).unwrap();
        let names = baked::option_names(&header).unwrap();
        for expected in ["show_errors", "purge_delay", "arena_reserve", "allow_thp"] {
            assert!(
                names.iter().any(|n| n == expected),
                "{version}: {expected} in {names:?}"
            );
        }
        assert!(
            !names
                .iter()
                .any(|n| n.starts_with("deprecated_") || n.contains("last")),
            "{version}: {names:?}"
        );
    }
    assert_eq!(
        baked::variable("purge_delay"),
        "MIMALLOC_SYS_DEFAULT_PURGE_DELAY"
    );
    // The plan's own option defaults name options of the version they are set for.
    for (version, v2) in [("v3", false), ("v2", true)] {
        let header = std::fs::read_to_string(dir.join(version).join("include/mimalloc.h")).unwrap();
        let names = baked::option_names(&header).unwrap();
        let features = Features {
            v2,
            ..Features::default()
        };
        let plan = build(&target("x86_64-unknown-linux-gnu"), features);
        for choice in &plan.option_defaults {
            assert!(
                names.iter().any(|n| n == choice.name),
                "{version}: {}",
                choice.name
            );
            assert!(choice.why.len() > 10, "{}", choice.name);
        }
    }
    assert!(baked::option_names("no enum here").is_err());
}

/// mimalloc 3.6's free: the pointer is trusted (checked in `secure` builds, as mimalloc's CMake
/// does), and the page is found by masking the pointer, except on WASI, which cannot map the
/// aligned regions that needs. mimalloc 2 has neither define.
#[test]
fn free_finds_pages_by_alignment_and_checks_in_secure_builds() {
    let plan = default_plan("x86_64-unknown-linux-gnu");
    assert_eq!(value(&plan, "MI_FREE_IS_CHECKED"), Some(Some("0")));
    assert_eq!(value(&plan, "MI_FREE_USE_PAGEMAP"), Some(Some("0")));
    let secure = Features {
        secure: true,
        ..Features::default()
    };
    let plan = build(&target("x86_64-unknown-linux-gnu"), secure);
    assert_eq!(value(&plan, "MI_FREE_IS_CHECKED"), Some(Some("1")));
    let wasi = default_plan("wasm32-wasip1");
    assert_eq!(value(&wasi, "MI_FREE_USE_PAGEMAP"), Some(Some("1")));
    for (triple, _) in FACTS {
        let v2 = Features {
            v2: true,
            ..Features::default()
        };
        if let Decision::Build(plan) = plan::decide(&target(triple), &v2, true) {
            for name in [
                "MI_FREE_IS_CHECKED",
                "MI_FREE_USE_PAGEMAP",
                "MI_TLS_MODEL_PTHREADS",
            ] {
                assert_eq!(value(&plan, name), None, "{triple}: {name} is mimalloc 3's");
            }
        }
    }
}

/// No `-march` anywhere (mimalloc's CMake turns `MI_OPT_ARCH` on for arm64): the C code runs
/// on every CPU the Rust target runs on. And bcrypt only where mimalloc still calls it directly.
#[test]
fn no_cpu_beyond_the_targets_baseline_and_no_bcrypt_off_uwp() {
    for (triple, _) in FACTS {
        if let Decision::Build(plan) = plan::decide(&target(triple), &Features::default(), true) {
            let all = plan.flags.iter().chain(&plan.flags_if_supported);
            assert!(
                !all.clone()
                    .any(|f| f.starts_with("-march") || f.starts_with("/arch")),
                "{triple}: {:?}",
                plan.flags_if_supported
            );
            assert!(!plan.link_libs.contains(&"bcrypt"), "{triple}");
        }
    }
    let mut uwp = target("x86_64-pc-windows-msvc");
    uwp.vendor = "uwp".to_owned();
    assert!(build(&uwp, Features::default())
        .link_libs
        .contains(&"bcrypt"));
}

/// The heap profiler records call stacks where the C library has `backtrace()` (and on Windows,
/// with no define needed); elsewhere the plan says it cannot, and the safe crate refuses to start
/// a profiler. mimalloc 2 has none at all.
#[test]
fn the_profiler_records_stacks_where_the_c_library_can() {
    let with_execinfo = [
        "x86_64-unknown-linux-gnu",
        "i686-unknown-linux-gnu",
        "aarch64-unknown-linux-gnu",
        "armv7-unknown-linux-gnueabihf",
        "x86_64-apple-darwin",
        "aarch64-apple-darwin",
        "x86_64-unknown-freebsd",
    ];
    for triple in with_execinfo {
        let plan = default_plan(triple);
        assert_eq!(
            value(&plan, "MI_HAS_EXECINFOH"),
            Some(Some("1")),
            "{triple}"
        );
        assert_eq!(value(&plan, "MI_HAS_UNISTDH"), Some(Some("1")), "{triple}");
        assert!(publishes(&plan, "mimalloc_profiler"), "{triple}");
    }
    for triple in [
        "x86_64-unknown-linux-musl",
        "aarch64-linux-android",
        "wasm32-wasip1",
    ] {
        let plan = default_plan(triple);
        assert_eq!(value(&plan, "MI_HAS_EXECINFOH"), None, "{triple}");
        assert!(!publishes(&plan, "mimalloc_profiler"), "{triple}");
    }
    for triple in ["x86_64-pc-windows-msvc", "x86_64-pc-windows-gnu"] {
        let plan = default_plan(triple);
        assert_eq!(value(&plan, "MI_HAS_EXECINFOH"), None, "{triple}");
        assert_eq!(value(&plan, "MI_HAS_UNISTDH"), None, "{triple}");
        assert!(
            publishes(&plan, "mimalloc_profiler"),
            "{triple}: CaptureStackBackTrace"
        );
    }
    let v2 = Features {
        v2: true,
        ..Features::default()
    };
    let plan = build(&target("x86_64-unknown-linux-gnu"), v2);
    assert!(!publishes(&plan, "mimalloc_profiler"));
    assert_eq!(value(&plan, "MI_HAS_EXECINFOH"), None);
    // FreeBSD's backtrace() lives in libexecinfo, and the profiler lists mappings through libutil.
    let bsd = default_plan("x86_64-unknown-freebsd");
    assert_eq!(bsd.link_libs, ["execinfo", "util"]);
    assert!(build(&target("x86_64-unknown-freebsd"), v2)
        .link_libs
        .is_empty());
    // NetBSD's and OpenBSD's backtrace() too; they list mappings without libutil.
    for triple in ["x86_64-unknown-netbsd", "x86_64-unknown-openbsd"] {
        assert_eq!(default_plan(triple).link_libs, ["execinfo"], "{triple}");
        assert!(build(&target(triple), v2).link_libs.is_empty(), "{triple}");
    }
}

/// The default features with one or more changed by `set`.
fn with(set: fn(&mut Features)) -> Features {
    let mut features = Features::default();
    set(&mut features);
    features
}

// The registry crates' build-time names change the build as they do there, and only where
// their setting exists; each define is published or left out with its reason.

#[test]
fn registry_no_thp_defines_mi_no_thp_once_and_stops_the_policy() {
    let linux = target("x86_64-unknown-linux-gnu");
    let no_thp = with(|f| f.no_thp = true);
    let plan = build(&linux, no_thp);
    assert_eq!(value(&plan, "MI_NO_THP"), Some(None));
    assert_eq!(
        plan.defines
            .iter()
            .filter(|d| d.name == "MI_NO_THP")
            .count(),
        1
    );
    assert!(
        !publishes(&plan, "mimalloc_adaptive_thp"),
        "no_thp leaves large blocks unadvised too"
    );
    assert_eq!(value(&plan, "MI_DEFAULT_ALLOW_THP"), Some(Some("1")));
    let v2_no_thp = Features { v2: true, ..no_thp };
    assert_eq!(value(&build(&linux, v2_no_thp), "MI_NO_THP"), Some(None));
    let mac = target("aarch64-apple-darwin");
    assert_eq!(value(&build(&mac, no_thp), "MI_NO_THP"), None);
    assert!(publishes(
        &default_plan("x86_64-unknown-linux-gnu"),
        "mimalloc_adaptive_thp"
    ));
}

/// `no_policy`: none of the memory policy is built, and mimalloc advises its arenas for huge
/// pages itself, as it does without this crate; the option defaults chosen on the benchmark
/// stay, as they are not the policy's.
#[test]
fn no_policy_leaves_huge_pages_and_purging_to_mimalloc() {
    let no_policy = with(|f| f.no_policy = true);
    for triple in [
        "x86_64-unknown-linux-gnu",
        "aarch64-linux-android",
        "i686-unknown-linux-gnu",
        "x86_64-pc-windows-gnu",
    ] {
        let plan = build(&target(triple), no_policy);
        for cfg in [
            "mimalloc_policy",
            "mimalloc_adaptive_thp",
            "mimalloc_background_purge",
            "mimalloc_memory_limit",
        ] {
            assert!(!publishes(&plan, cfg), "{triple}: {cfg}");
        }
        assert_eq!(value(&plan, "MI_NO_THP"), None, "{triple}");
    }
    let linux = target("x86_64-unknown-linux-gnu");
    let plan = build(&linux, no_policy);
    assert_eq!(value(&plan, "MI_DEFAULT_ALLOW_THP"), Some(Some("1")));
    let default = default_plan("x86_64-unknown-linux-gnu");
    for name in [
        "MI_DEFAULT_ARENA_PURGE_IMMEDIATE_SIZE",
        "MI_ENABLE_LARGE_PAGES",
    ] {
        assert_eq!(value(&plan, name), value(&default, name), "{name}");
    }
    assert!(publishes(&default, "mimalloc_background_purge"));
}

#[test]
fn registry_win_direct_tls_only_on_windows_with_mimalloc_3() {
    let windows = target("x86_64-pc-windows-gnu");
    let direct = with(|f| f.win_direct_tls = true);
    assert_eq!(
        value(&build(&windows, direct), "MI_WIN_DIRECT_TLS"),
        Some(Some("1"))
    );
    let linux = target("x86_64-unknown-linux-gnu");
    assert_eq!(value(&build(&linux, direct), "MI_WIN_DIRECT_TLS"), None);
    let v2_direct = Features { v2: true, ..direct };
    assert_eq!(
        value(&build(&windows, v2_direct), "MI_WIN_DIRECT_TLS"),
        None
    );
}

#[test]
fn registry_skip_collect_on_exit_only_when_asked() {
    let skip = with(|f| f.skip_collect_on_exit = true);
    let linux = target("x86_64-unknown-linux-gnu");
    assert_eq!(
        value(&build(&linux, skip), "MI_SKIP_COLLECT_ON_EXIT"),
        Some(Some("1"))
    );
    assert_eq!(
        value(
            &default_plan("x86_64-unknown-linux-gnu"),
            "MI_SKIP_COLLECT_ON_EXIT"
        ),
        None
    );
}

#[test]
fn registry_etw_on_msvc_refused_on_mingw_warned_elsewhere() {
    let etw = with(|f| f.etw = true);
    let msvc = target("x86_64-pc-windows-msvc");
    assert_eq!(value(&build(&msvc, etw), "MI_TRACK_ETW"), Some(Some("1")));
    assert!(refusal(&target("x86_64-pc-windows-gnu"), etw).contains("MSVC"));
    let plan = build(&target("x86_64-unknown-linux-gnu"), etw);
    assert_eq!(value(&plan, "MI_TRACK_ETW"), None);
    assert!(
        plan.warnings.iter().any(|w| w.contains("`etw`")),
        "{:?}",
        plan.warnings
    );
    let etw_asan = Features { asan: true, ..etw };
    assert!(refusal(&sanitized("x86_64-pc-windows-msvc", "address"), etw_asan).contains("etw"));
}

#[test]
fn registry_free_use_pagemap_publishes_the_page_map_free() {
    let pagemap = with(|f| f.free_use_pagemap = true);
    let plan = build(&target("x86_64-unknown-linux-gnu"), pagemap);
    assert_eq!(value(&plan, "MI_FREE_USE_PAGEMAP"), Some(Some("1")));
    assert!(publishes(&plan, "mimalloc_page_map_free") && !publishes(&plan, "mimalloc_small_free"));
}

/// `debug_in_debug` is `debug` outside the release profile only; the plan publishes what the
/// Rust side depends on (debug checks, the small free) from the same decision.
#[test]
fn debug_in_debug_follows_the_profile() {
    let t = target("x86_64-unknown-linux-gnu");
    let features = Features {
        debug_in_debug: true,
        ..Features::default()
    };
    let dev = match plan::decide(&t, &features, false) {
        Decision::Build(plan) => plan,
        _ => panic!("the dev profile builds"),
    };
    assert_eq!(value(&dev, "MI_DEBUG"), Some(Some("3")));
    assert!(publishes(&dev, "mimalloc_debug") && !publishes(&dev, "mimalloc_small_free"));
    let release = build(&t, features);
    assert_eq!(value(&release, "MI_DEBUG"), Some(Some("0")));
    assert!(!publishes(&release, "mimalloc_debug") && publishes(&release, "mimalloc_small_free"));
}

/// `mi_free_small_nonnull` skips the lookup only in a mimalloc 3 build that keeps small pages'
/// metadata at aligned addresses and trusts its pointers.
#[test]
fn small_free_only_where_small_pages_are_aligned() {
    let t = target("x86_64-unknown-linux-gnu");
    assert!(publishes(
        &default_plan("x86_64-unknown-linux-gnu"),
        "mimalloc_small_free"
    ));
    assert!(!publishes(
        &default_plan("x86_64-unknown-linux-gnu"),
        "mimalloc_page_map_free"
    ));
    for (name, features) in [
        ("v2", with(|f| f.v2 = true)),
        ("secure", with(|f| f.secure = true)),
        ("debug", with(|f| f.debug = true)),
        ("guarded", with(|f| f.guarded = true)),
        ("valgrind", with(|f| f.valgrind = true)),
    ] {
        assert!(
            !publishes(&build(&t, features), "mimalloc_small_free"),
            "{name}"
        );
    }
    let secure = build(&t, with(|f| f.secure = true));
    assert!(publishes(&secure, "mimalloc_page_map_free"));
    assert!(publishes(
        &default_plan("wasm32-wasip1"),
        "mimalloc_page_map_free"
    ));
}

/// The feature sets the checks of the published decisions cover: none, each feature alone, and
/// every pair of features.
fn feature_sets() -> Vec<Features> {
    let setters: [fn(&mut Features); 16] = [
        |f| f.v2 = true,
        |f| f.secure = true,
        |f| f.debug = true,
        |f| f.override_malloc = true,
        |f| f.local_dynamic_tls = true,
        |f| f.asan = true,
        |f| f.tsan = true,
        |f| f.valgrind = true,
        |f| f.guarded = true,
        |f| f.debug_in_debug = true,
        |f| f.no_thp = true,
        |f| f.win_direct_tls = true,
        |f| f.skip_collect_on_exit = true,
        |f| f.etw = true,
        |f| f.free_use_pagemap = true,
        |f| f.no_policy = true,
    ];
    let mut sets = vec![Features::default()];
    for (i, first) in setters.iter().enumerate() {
        for second in &setters[i..] {
            let mut features = Features::default();
            first(&mut features);
            second(&mut features);
            sets.push(features);
        }
    }
    sets
}

/// Every plan the checks of the published decisions cover: each target of [`FACTS`] with each
/// of [`feature_sets`], in the release and the dev profile (the sanitizer features on a target
/// compiled with the sanitizers, as they need), with the features and the profile it was
/// decided for.
fn covered_plans() -> Vec<(Target, Features, bool, Plan)> {
    let mut plans = Vec::new();
    for (triple, _) in FACTS {
        for features in feature_sets() {
            let mut t = target(triple);
            if features.asan || features.tsan {
                t.sanitizers = vec!["address".to_owned(), "thread".to_owned()];
            }
            for release in [true, false] {
                if let Decision::Build(plan) = plan::decide(&t, &features, release) {
                    plans.push((t.clone(), features, release, plan));
                }
            }
            // `cargo miri` on the same target.
            let mut interpreted = t.clone();
            interpreted.interpreted = true;
            if let Decision::Build(plan) = plan::decide(&interpreted, &features, true) {
                plans.push((interpreted, features, true, plan));
            }
        }
    }
    plans
}

/// Each published decision says what the defines say (in this test's own reading of them), and
/// what the features asked for: a define and the cfg Rust reads cannot disagree.
#[test]
fn every_published_decision_follows_the_defines() {
    for (t, f, release, plan) in covered_plans() {
        let context = format!("{} {f:?} release {release}", t.triple);
        // `#if NAME`: `cc` defines a name without a value as 1.
        let on = |name: &str| matches!(value(&plan, name), Some(v) if v != Some("0"));
        let v3 = plan.version == Version::V3;
        let checked = on("MI_FREE_IS_CHECKED");
        let page_map = checked || on("MI_FREE_USE_PAGEMAP");
        // include/mimalloc/types.h: MI_PAGE_META_SMALL_IS_ALIGNED, with the page metadata
        // aligned where free neither checks nor reads the page map.
        let small_aligned = v3
            && value(&plan, "MI_OPT_FREE_SMALL") != Some(Some("0"))
            && !page_map
            && !on("MI_SECURE")
            && !on("MI_GUARDED");
        let advice = publishes(&plan, "mimalloc_adaptive_thp");
        let cgroups = t.os == "linux" || t.os == "android";
        let purge_os = cgroups || t.is_windows() || t.os == "macos" || t.os == "freebsd";
        let purge = v3 && purge_os && !t.interpreted && !f.no_policy;
        let expected = [
            ("mimalloc_runs", true),
            ("mimalloc_debug", on("MI_DEBUG")),
            ("mimalloc_guarded", on("MI_GUARDED")),
            ("mimalloc_checked_free", checked),
            ("mimalloc_page_map_free", page_map),
            ("mimalloc_small_free", small_aligned && !on("MI_DEBUG")),
            (
                "mimalloc_profiler",
                v3 && (t.is_windows() || on("MI_HAS_EXECINFOH")),
            ),
            (
                "mimalloc_adaptive_thp",
                advice && on("MI_NO_THP") && on("MI_DEFAULT_ALLOW_THP"),
            ),
            ("mimalloc_background_purge", purge),
            ("mimalloc_memory_limit", purge && cgroups),
            ("mimalloc_policy", advice || purge),
            (
                "mimalloc_large_request_cap",
                v3 && t.pointer_width == 32 && !on("MI_SECURE"),
            ),
        ];
        for (cfg, holds) in expected {
            assert_eq!(publishes(&plan, cfg), holds, "{context}: {cfg}");
        }
        for published in &plan.published {
            assert!(
                expected.iter().any(|(cfg, _)| *cfg == published.cfg),
                "{context}: {} is published but not checked here",
                published.cfg
            );
            assert!(published.why.len() > 10, "{context}: {}", published.cfg);
        }
        // And what the features asked for.
        let debug = f.debug || (f.debug_in_debug && !release);
        assert_eq!(publishes(&plan, "mimalloc_debug"), debug, "{context}");
        assert_eq!(publishes(&plan, "mimalloc_guarded"), f.guarded, "{context}");
        assert_eq!(checked, v3 && f.secure, "{context}");
        let page_map_asked = f.secure || f.free_use_pagemap || t.os == "wasi";
        assert_eq!(page_map, v3 && page_map_asked, "{context}");
    }
}

/// The policy's huge pages: mimalloc 3 on 64-bit Linux, natively, unless a feature turns them
/// off.
#[test]
fn the_policy_decides_huge_pages_only_on_64_bit_linux() {
    for (t, f, release, plan) in covered_plans() {
        let context = format!("{} {f:?} release {release}", t.triple);
        let linux_64 = t.os == "linux" && t.pointer_width == 64;
        let v3 = plan.version == Version::V3;
        let native = !t.interpreted;
        assert_eq!(
            publishes(&plan, "mimalloc_adaptive_thp"),
            v3 && linux_64 && !f.no_thp && !f.no_policy && native,
            "{context}"
        );
    }
}

/// The workspace manifest's `check-cfg` list (which must stay in the manifest: cargo before
/// 1.80 warns about `cargo:rustc-check-cfg`) names exactly the cfgs the plan publishes. The
/// copy of the workspace that `scripts/msrv-workspace.sh` makes for Cargo 1.63 has no lint
/// tables, and so nothing to check.
#[test]
fn the_check_cfg_list_names_exactly_the_published_decisions() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(dir.join("../Cargo.toml")).unwrap();
    if !manifest.contains("[workspace.lints.rust]") {
        eprintln!(
            "SKIPPED the_check_cfg_list_names_exactly_the_published_decisions: this workspace \
             manifest has no lint tables (the Cargo 1.63 copy of scripts/msrv-workspace.sh)"
        );
        return;
    }
    let line = manifest
        .lines()
        .find(|l| l.starts_with("unexpected_cfgs") && l.contains("check-cfg"))
        .expect("the workspace's unexpected_cfgs lint with its check-cfg list");
    let listed: std::collections::BTreeSet<&str> = line
        .split("\"cfg(")
        .skip(1)
        .map(|rest| rest.split(")\"").next().unwrap())
        .collect();
    let published: std::collections::BTreeSet<&str> = covered_plans()
        .iter()
        .flat_map(|(_, _, _, plan)| plan.published.iter().map(|p| p.cfg))
        .collect();
    assert_eq!(
        listed, published,
        "Cargo.toml's check-cfg list and the cfgs build/plan.rs publishes differ"
    );
}

/// The rules of the vendored headers that `build/plan.rs` mirrors to decide `small_free` and
/// `guarded` are still the ones it mirrors: an update of `vendor/` that changes one fails here
/// until the plan is read against it again.
#[test]
fn the_header_rules_the_plan_mirrors_are_unchanged() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../vendor/mimalloc");
    let read = |path: &str| std::fs::read_to_string(dir.join(path)).unwrap();
    for (path, line) in [
        (
            "v3/include/mimalloc/types.h",
            "#if !defined(MI_GUARDED) && MI_DEBUG && !defined(NDEBUG) && !MI_OPT_FREE_SMALL",
        ),
        (
            "v3/include/mimalloc/types.h",
            "#if !MI_FREE_IS_CHECKED && !MI_FREE_USE_PAGEMAP",
        ),
        (
            "v3/include/mimalloc/types.h",
            "#if defined(MI_OPT_FREE_SMALL) && MI_OPT_FREE_SMALL==0",
        ),
        (
            "v3/include/mimalloc/types.h",
            "#elif (MI_OPT_FREE_SMALL || MI_PAGE_META_IS_ALIGNED) && !MI_SECURE && !MI_GUARDED",
        ),
        (
            "v3/include/mimalloc/bits.h",
            "#if MI_MAX_VABITS <= 40 && !defined(__APPLE__) && !MI_SECURE && !MI_FREE_IS_CHECKED && MI_FREE_USE_PAGEMAP",
        ),
        (
            "v2/include/mimalloc/types.h",
            "#if !defined(MI_GUARDED) && MI_DEBUG",
        ),
    ] {
        assert!(
            read(path).lines().any(|l| l.trim_end() == line
                || l.starts_with(line) && l[line.len()..].trim_start().starts_with("//")),
            "{path} no longer has `{line}`: read build/plan.rs's `small_free` and `guarded` \
             against it again"
        );
    }
}
