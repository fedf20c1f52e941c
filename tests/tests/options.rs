//! `MiOption`: complete for the vendored version, typed, and read from the environment and
//! from the build.

use mimalloc::options::{MiOption, OptionKind};
use mimalloc_tests::{in_child, is_child, run_child};

/// The `mi_option_*` names of the vendored header, in enum order, without deprecated ones and
/// legacy aliases.
fn header_options() -> Vec<(String, usize)> {
    let header = std::path::Path::new(env!("MIMALLOC_TESTS_INCLUDE_DIR")).join("mimalloc.h");
    let text = std::fs::read_to_string(header).unwrap();
    let body = &text[text.find("typedef enum mi_option_e").unwrap()..];
    let body = &body[..body.find("} mi_option_t;").unwrap()];
    body.lines()
        .filter_map(|l| l.trim().strip_prefix("mi_option_"))
        .filter_map(|rest| rest.split(',').next())
        .map(str::trim)
        .enumerate()
        .filter(|(_, name)| !name.contains(['=', ' ']) && !name.starts_with("deprecated_"))
        .map(|(index, name)| (name.to_owned(), index))
        .collect()
}

#[test]
fn every_option_of_the_header_and_only_those() {
    let header = header_options();
    assert!(header.len() > 25, "parsed only {} options", header.len());
    for (name, index) in &header {
        let option = MiOption::from_name(name).unwrap_or_else(|| panic!("MiOption lacks `{name}`"));
        assert_eq!(
            option.as_raw() as usize,
            *index,
            "{name} has the wrong mi_option_t value"
        );
    }
    for option in MiOption::ALL {
        assert!(
            header.iter().any(|(name, _)| name == option.name()),
            "{option:?} is not in the header"
        );
    }
    assert_eq!(MiOption::ALL.len(), header.len());
}

#[test]
fn numbers_round_trip() {
    let option = MiOption::MaxErrors;
    assert_eq!(option.kind(), OptionKind::Number);
    let before = option.get();
    for value in [0, 1, 1000, before] {
        option.set(value);
        assert_eq!(option.get(), value);
    }
}

#[test]
fn flags_turn_on_and_off() {
    let option = MiOption::ShowStats;
    assert_eq!(option.kind(), OptionKind::Flag);
    option.enable();
    assert!(option.is_enabled() && option.get() == 1);
    option.set_enabled(false);
    assert!(!option.is_enabled() && option.get() == 0);
    option.set_enabled(true);
    option.disable();
    assert!(!option.is_enabled() && option.get() == 0);
}

/// A size option is set in KiB and read in bytes, also where the environment set it to 0
/// (then `get_size() == get() * 1024` would hold for any factor).
#[test]
fn sizes_read_in_bytes() {
    let option = MiOption::ArenaReserve;
    assert_eq!(option.kind(), OptionKind::SizeKiB);
    let before = option.get();
    option.set(4096);
    assert_eq!(option.get_size(), 4 << 20, "4096 KiB");
    option.set(before);
    assert_eq!(option.get_size(), before as usize * 1024);
}

#[test]
fn set_default_does_not_override_a_set_value() {
    let option = MiOption::MaxWarnings;
    option.set(21);
    option.set_default(99);
    assert_eq!(option.get(), 21);
}

/// An option neither the environment nor the program set takes the value `set_default` gives.
/// In a child process, which no other test's settings reach.
#[test]
fn child_set_default_sets_an_option_nobody_set() {
    if is_child() {
        let option = MiOption::MaxWarnings;
        option.set_default(77);
        assert_eq!(option.get(), 77);
        return;
    }
    in_child("child_set_default_sets_an_option_nobody_set", &[]);
}

/// `MIMALLOC_<NAME>` sets an option at start-up, in the child's fresh process.
#[test]
fn child_environment_sets_options() {
    if is_child() {
        println!(
            "max_warnings={} verbose={}",
            MiOption::MaxWarnings.get(),
            MiOption::Verbose.is_enabled()
        );
        return;
    }
    let out = run_child(
        "child_environment_sets_options",
        &[("MIMALLOC_MAX_WARNINGS", "17"), ("MIMALLOC_VERBOSE", "0")],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("max_warnings=17 verbose=false"), "{out:?}");
}

/// mimalloc's process initialisation runs (it reserves `MIMALLOC_RESERVE_OS_MEMORY` as an
/// arena). On Windows with GCC it only runs thanks to the start-up define of the build plan.
#[test]
fn child_process_initialisation_runs() {
    if is_child() {
        let stats = mimalloc::stats::read();
        println!(
            "reserved={} arenas={}",
            stats.reserved.current, stats.arenas
        );
        return;
    }
    let out = run_child(
        "child_process_initialisation_runs",
        &[("MIMALLOC_RESERVE_OS_MEMORY", "256MiB")],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let reserved: i64 = stdout
        .split("reserved=")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{out:?}"));
    assert!(
        reserved >= 256 << 20,
        "the start-up reservation did not happen: {stdout}"
    );
}
