//! Before anything is measured, each build runs once with `MIMALLOC_VERBOSE=1`, and what
//! mimalloc says at start-up proves which allocator it is: the system build prints nothing of
//! mimalloc's, a mimalloc build prints its version and secure level, and either reserving its
//! first arena (`mimalloc: reserved ... memory`) or the `allocated` line of the statistics it
//! prints at exit shows it served the program's allocations, which a product that links the
//! crate without `assign_global!()` never makes it do. (mimalloc 3 prints that line only when it
//! served something; on 64-bit Linux its first arena is the memory policy's, which mimalloc does
//! not announce as reserved.)

use super::build::Executables;
use super::variants::{Build, Variant};
use crate::measure::{self, Output};
use std::ffi::OsString;

/// What the start-up output says, for each build the variants use; an error for the first
/// build that is not what it claims.
pub fn all(
    variants: &[Variant],
    exes: &Executables,
    args: &[OsString],
) -> Result<Vec<String>, String> {
    let mut seen: Vec<&str> = Vec::new();
    let mut lines = Vec::new();
    for variant in variants {
        let build = variant.build;
        if seen.contains(&build.name) {
            continue;
        }
        seen.push(build.name);
        let stderr = verbose_run(&exes[build.name], args, build.name)?;
        lines.push(verdict(&build, &Startup::read(&stderr))?);
    }
    Ok(lines)
}

fn verbose_run(exe: &std::path::Path, args: &[OsString], name: &str) -> Result<String, String> {
    let env = [("MIMALLOC_VERBOSE".to_owned(), "1".to_owned())];
    let mut command = crate::env::command(exe, &env);
    command.args(args);
    let what = format!("the {name} build ({})", exe.display());
    let finished = measure::run_to_end(command, &what, Output::Discarded)?;
    if !finished.success {
        return Err(format!(
            "the {name} build's check run (MIMALLOC_VERBOSE=1) failed:\n{}",
            finished.stderr_tail(20)
        ));
    }
    Ok(finished.stderr)
}

/// What mimalloc printed at start-up, if anything.
#[derive(Debug, Default, PartialEq, Eq)]
struct Startup {
    /// Any line of mimalloc's (`mimalloc: ...`).
    started: bool,
    /// `vMAJOR.MINOR.PATCH`.
    version: Option<(u32, String)>,
    secure_level: Option<u32>,
    /// It reserved memory for the program's allocations, or counted some at exit.
    served: bool,
}

impl Startup {
    fn read(stderr: &str) -> Self {
        let mut startup = Startup::default();
        for line in stderr.lines() {
            let message = line.strip_prefix("mimalloc: ");
            startup.started |= message.is_some();
            let text = message.unwrap_or(line).trim();
            startup.served |= message.is_some_and(|m| m.starts_with("reserved "))
                || (startup.started && text.starts_with("allocated") && text.contains(':'));
            if let Some(level) = text.strip_prefix("secure level:") {
                startup.secure_level = level.trim().parse().ok();
            }
            // Only after mimalloc's first line: the program may print a version of its own.
            if startup.started && startup.version.is_none() {
                startup.version = version(text);
            }
        }
        startup
    }
}

/// `v3.6.0` (alone on its line, as mimalloc prints it after `process init`).
fn version(text: &str) -> Option<(u32, String)> {
    let parts: Option<Vec<u32>> = text
        .strip_prefix('v')?
        .split('.')
        .map(|p| p.parse().ok())
        .collect();
    match parts?.as_slice() {
        [major, _, _] => Some((*major, text.to_owned())),
        _ => None,
    }
}

const ASSIGN: &str = "`#[cfg(feature = \"mimalloc\")] mimalloc::assign_global!();` in the program";

fn verdict(build: &Build, startup: &Startup) -> Result<String, String> {
    let name = build.name;
    let Some(major) = build.major else {
        if startup.started {
            return Err(format!(
                "the {name} build (its allocator feature off) printed mimalloc's start-up lines: the product \
                 links mimalloc without its `mimalloc` feature, so this would compare mimalloc \
                 with itself (make the dependency optional and put {ASSIGN} behind the feature)"
            ));
        }
        return Ok(format!(
            "checked: {name} prints nothing of mimalloc's with MIMALLOC_VERBOSE=1"
        ));
    };
    let Some((found, version)) = &startup.version else {
        return Err(format!(
            "the {name} build never started mimalloc (no start-up lines with MIMALLOC_VERBOSE=1): \
             add {ASSIGN}"
        ));
    };
    if *found != major {
        return Err(format!(
            "the {name} build runs mimalloc {version}, not mimalloc {major}"
        ));
    }
    let level = startup.secure_level.unwrap_or(0);
    if build.secure != (level > 0) {
        return Err(format!(
            "the {name} build runs mimalloc at secure level {level}"
        ));
    }
    if !startup.served {
        return Err(format!(
            "the {name} build links mimalloc {version}, but mimalloc served none of its \
             allocations (it reserved no memory and counted none at exit): add {ASSIGN}, \
             or name the feature that installs it with --feature NAME"
        ));
    }
    Ok(format!(
        "checked: {name} runs on mimalloc {version}, secure level {level}, and mimalloc served \
         its allocations"
    ))
}

#[cfg(test)]
mod tests {
    use super::{Startup, verdict};
    use crate::product::variants::BUILDS;

    const V3: &str = "mimalloc: process init: 0x7FC027A887C0\nv3.6.0\noption 'verbose': 1 \n\
        secure level: 0\nmimalloc: reserved 1048576 KiB memory\n";

    #[test]
    fn a_mimalloc_build_is_told_by_its_version_secure_level_and_first_arena() {
        let startup = Startup::read(V3);
        assert_eq!(startup.version, Some((3, "v3.6.0".into())));
        assert_eq!(startup.secure_level, Some(0));
        assert!(startup.started && startup.served);
        assert!(
            verdict(&BUILDS[1], &startup)
                .unwrap()
                .contains("mimalloc v3.6.0")
        );
        assert!(
            verdict(&BUILDS[2], &startup)
                .unwrap_err()
                .contains("not mimalloc 2")
        );
        assert!(
            verdict(&BUILDS[3], &startup)
                .unwrap_err()
                .contains("secure level 0")
        );
        assert!(
            verdict(&BUILDS[0], &startup)
                .unwrap_err()
                .contains("without its `mimalloc` feature")
        );
    }

    #[test]
    fn a_build_whose_first_arena_is_the_policys_is_told_by_its_statistics_at_exit() {
        let policy = "mimalloc: process init: 0x1\nv3.6.0\nsecure level: 0\n\
            mimalloc: policy: heap arena 1 of 1024 MiB at 0x7f0000000000 (Small pages)\n";
        let unassigned = Startup::read(policy);
        assert!(!unassigned.served);
        let assigned = Startup::read(&format!(
            "{policy}subproc 0\n  allocated   :   640         784         640      \n"
        ));
        assert!(assigned.served);
        assert!(verdict(&BUILDS[1], &assigned).is_ok());
        // The program's own words before mimalloc's first line prove nothing.
        let early = Startup::read(&format!("allocated: 5\n{policy}"));
        assert!(!early.served);
    }

    #[test]
    fn linked_but_not_assigned_or_not_linked_is_refused() {
        let linked = Startup::read("mimalloc: process init: 0x1\nv3.6.0\nsecure level: 0\n");
        assert!(
            verdict(&BUILDS[1], &linked)
                .unwrap_err()
                .contains("served none")
        );
        let silent = Startup::read("the program's own output\nv1.2.3\n");
        assert!(!silent.started && silent.version.is_none());
        assert!(
            verdict(&BUILDS[1], &silent)
                .unwrap_err()
                .contains("never started mimalloc")
        );
        assert!(verdict(&BUILDS[0], &silent).is_ok());
    }
}
