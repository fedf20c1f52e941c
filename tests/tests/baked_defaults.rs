//! Option defaults baked into mimalloc at build time with `MIMALLOC_SYS_DEFAULT_<NAME>`.
//! `.ci/run` builds this file with some set (with GCC and with clang). Nothing in this binary
//! changes an option, so the values read are the defaults.

use mimalloc::{MiOption, OptionKind};
use mimalloc_tests::{is_child, run_child};

/// Defaults baked in at build time (`MIMALLOC_SYS_DEFAULT_<NAME>`) are the values `get` returns
/// unless the environment says otherwise. `.ci/run` builds this test with some set.
#[test]
fn baked_defaults_are_the_defaults() {
    let baked = mimalloc_sys::BAKED_OPTION_DEFAULTS;
    // `.ci/run` says what it baked in, so that a build that lost the variables fails here.
    if let Ok(expected) = std::env::var("MIMALLOC_TESTS_EXPECT_BAKED") {
        let listed: Vec<String> = baked
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect();
        assert_eq!(listed.join(","), expected);
    }
    if baked.is_empty() {
        mimalloc_tests::skip(
            "baked_defaults_are_the_defaults",
            "no option default is baked into this build",
        );
    }
    if let Some(value) = option_env!("MIMALLOC_SYS_DEFAULT_MAX_WARNINGS") {
        assert!(
            baked.contains(&("max_warnings", value.parse().unwrap())),
            "{baked:?}"
        );
    }
    for (name, value) in baked {
        let option = MiOption::from_name(name).unwrap();
        if std::env::var_os(format!("MIMALLOC_{}", name.to_uppercase())).is_none() {
            #[allow(clippy::useless_conversion)] // `c_long` is `i32` on Windows
            let got = i64::from(option.get());
            assert_eq!(got, *value, "{name}");
        }
    }
    println!("baked option defaults in this build: {baked:?}");
}

/// ...and the environment still overrides a baked default.
#[test]
fn child_environment_overrides_baked_defaults() {
    let baked = mimalloc_sys::BAKED_OPTION_DEFAULTS;
    let (name, value) = match baked
        .iter()
        .find(|(name, _)| MiOption::from_name(name).map(MiOption::kind) == Some(OptionKind::Number))
    {
        Some(&(name, value)) => (name, value),
        None => {
            mimalloc_tests::skip(
                "child_environment_overrides_baked_defaults",
                "no numeric option default is baked into this build",
            );
            return;
        }
    };
    if is_child() {
        println!("{name}={}", MiOption::from_name(name).unwrap().get());
        return;
    }
    let other = (value + 1).to_string();
    let variable = format!("MIMALLOC_{}", name.to_uppercase());
    let out = run_child(
        "child_environment_overrides_baked_defaults",
        &[(&variable, &other)],
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("{name}={other}")),
        "{out:?}"
    );
}
