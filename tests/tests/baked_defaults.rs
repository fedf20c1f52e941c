//! Option defaults baked into mimalloc at build time with `MIMALLOC_SYS_DEFAULT_<NAME>`.
//! The `baked` lane of `.ci/run full` builds this file with some set (with GCC and with clang).
//! Nothing in this binary changes an option, so the values read are the defaults.

use mimalloc::options::{MiOption, OptionKind};
use mimalloc_tests::{is_child, run_child};

/// What the `baked` lane says it baked in (`MIMALLOC_TESTS_EXPECT_BAKED`, `name=value,...`): `None`
/// when the variable is absent. Set but empty or malformed is a broken CI step, not a build with
/// nothing baked in, and fails.
fn expected_from_ci() -> Option<Vec<(String, i64)>> {
    let text = std::env::var("MIMALLOC_TESTS_EXPECT_BAKED").ok()?;
    assert!(
        !text.trim().is_empty(),
        "MIMALLOC_TESTS_EXPECT_BAKED is set but empty"
    );
    let parsed = text
        .split(',')
        .map(|item| {
            let (name, value) = item.split_once('=').unwrap_or_else(|| {
                panic!("MIMALLOC_TESTS_EXPECT_BAKED: {item:?} is not name=value")
            });
            let value: i64 = value.trim().parse().unwrap_or_else(|e| {
                panic!("MIMALLOC_TESTS_EXPECT_BAKED: {item:?} has no integer value ({e})")
            });
            let name = name.trim();
            assert!(
                MiOption::from_name(name).is_some(),
                "MIMALLOC_TESTS_EXPECT_BAKED: {name:?} is no option of this mimalloc"
            );
            (name.to_string(), value)
        })
        .collect();
    Some(parsed)
}

/// Defaults baked in at build time (`MIMALLOC_SYS_DEFAULT_<NAME>`) are the values `get` returns
/// unless the environment says otherwise. The `baked` lane builds this test with some set and says
/// which, so that a build that lost the variables fails here.
#[test]
fn baked_defaults_are_the_defaults() {
    const TEST: &str = "baked_defaults_are_the_defaults";
    let baked = mimalloc_sys::BAKED_OPTION_DEFAULTS;
    match expected_from_ci() {
        Some(expected) => {
            let listed: Vec<(String, i64)> = baked
                .iter()
                .map(|&(name, value)| (name.to_string(), value))
                .collect();
            assert_eq!(listed, expected, "baked in, and what CI asked for");
        }
        None if baked.is_empty() => {
            return mimalloc_tests::skip(
                TEST,
                "no option default is baked into this build, and MIMALLOC_TESTS_EXPECT_BAKED \
                 (set by the `baked` lane of .ci/run full) is absent",
            );
        }
        // Baked in by hand, without the CI's list: the values are still checked below.
        None => {}
    }
    if let Some(value) = option_env!("MIMALLOC_SYS_DEFAULT_MAX_WARNINGS") {
        assert!(
            baked.contains(&("max_warnings", value.parse().unwrap())),
            "{baked:?}"
        );
    }
    let mut checked = 0;
    for (name, value) in baked {
        let option = MiOption::from_name(name).unwrap();
        if std::env::var_os(format!("MIMALLOC_{}", name.to_uppercase())).is_none() {
            #[allow(clippy::useless_conversion)] // `c_long` is `i32` on Windows
            let got = i64::from(option.get());
            assert_eq!(got, *value, "{name}");
            checked += 1;
        }
    }
    if checked == 0 {
        return mimalloc_tests::skip(
            TEST,
            "every baked option is overridden by a MIMALLOC_<NAME> variable in this environment",
        );
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
