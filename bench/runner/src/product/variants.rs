//! The allocators a product is measured on: a build per set of the product's features, and
//! run-time variants of a build through mimalloc's environment variables.

use crate::variants::{describe, split_extra};

/// One build of the product: whether its allocator feature is on, and which features of the
/// `mimalloc` dependency it adds (`manifest::Switch::features` makes the cargo arguments).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Build {
    pub name: &'static str,
    /// The `mimalloc` dependency's features this build adds to the product's allocator
    /// feature; `None` for the system build, which leaves that feature off.
    pub features: Option<&'static str>,
    /// The major version of mimalloc it must report at start-up, `None` for the system build.
    pub major: Option<u32>,
    /// Whether mimalloc must report secure mode.
    pub secure: bool,
    pub about: &'static str,
}

/// The builds, in report order: the first is the system allocator, every ratio's base.
pub const BUILDS: [Build; 4] = [
    Build {
        name: "system",
        features: None,
        major: None,
        secure: false,
        about: "the product without its allocator feature: the platform's malloc",
    },
    Build {
        name: "ours",
        features: Some(""),
        major: Some(3),
        secure: false,
        about: "its allocator feature: this workspace's mimalloc 3, default features",
    },
    Build {
        name: "ours-v2",
        features: Some("mimalloc/v2"),
        major: Some(2),
        secure: false,
        about: "its allocator feature and `mimalloc/v2`: mimalloc 2",
    },
    Build {
        name: "ours-secure",
        features: Some("mimalloc/secure"),
        major: Some(3),
        secure: true,
        about: "its allocator feature and `mimalloc/secure`: guard pages, encoded free lists",
    },
];

/// One column of the report: a build, run with some environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variant {
    pub name: String,
    pub build: Build,
    /// `MIMALLOC_*` variables set for its runs (all others are cleared).
    pub env: Vec<(String, String)>,
    pub about: String,
}

impl Variant {
    fn of(build: Build) -> Self {
        Variant {
            name: build.name.to_owned(),
            build,
            env: Vec::new(),
            about: build.about.to_owned(),
        }
    }

    fn with(build: Build, name: &str, var: &str, value: &str, why: &str) -> Self {
        Variant {
            name: name.to_owned(),
            build,
            env: vec![(var.to_owned(), value.to_owned())],
            about: format!("`ours` run with {var}={value}: {why}"),
        }
    }
}

/// Every variant measured unless `--allocators` says otherwise: the builds, and the two
/// run-time settings that change memory most on the workload benchmark.
pub fn built_in() -> Vec<Variant> {
    let ours = BUILDS[1];
    let mut all: Vec<Variant> = BUILDS.into_iter().map(Variant::of).collect();
    // Transparent huge pages are on by default in our build on Linux; a short process can
    // pay for them in resident memory.
    all.push(Variant::with(
        ours,
        "ours-no-thp",
        "MIMALLOC_ALLOW_THP",
        "0",
        "transparent huge pages off",
    ));
    all.push(Variant::with(
        ours,
        "ours-purge0",
        "MIMALLOC_PURGE_DELAY",
        "0",
        "freed memory returned to the OS at once",
    ));
    all
}

/// `--allocators A,B` among the built-in variants (the system build always comes first: it is
/// every ratio's base), then the `--variant` specs.
pub fn chosen(names: Option<&str>, extra: &[String]) -> Result<Vec<Variant>, String> {
    let built_in = built_in();
    let mut chosen = match names {
        None => built_in.clone(),
        Some(names) => {
            let mut chosen = vec![built_in[0].clone()];
            for name in names.split(',') {
                let found = built_in.iter().find(|v| v.name == name);
                let found = found.ok_or(format!("no allocator called {name} (product)"))?;
                if !chosen.contains(found) {
                    chosen.push(found.clone());
                }
            }
            chosen
        }
    };
    for spec in extra {
        chosen.push(parse_extra(spec)?);
    }
    Ok(chosen)
}

/// `NAME=BUILD:VAR=VALUE[:VAR=VALUE...]`: one of the builds run with these variables.
fn parse_extra(spec: &str) -> Result<Variant, String> {
    let (name, base, env) = split_extra(spec)?;
    let build = BUILDS
        .into_iter()
        .find(|b| b.name == base)
        .ok_or_else(|| format!("--variant {spec}: no build called {base} (product)"))?;
    Ok(Variant {
        name: name.to_owned(),
        build,
        about: format!("`{base}` run with {}", describe(&env)),
        env,
    })
}

#[cfg(test)]
mod tests {
    use super::{BUILDS, chosen};

    #[test]
    fn every_build_and_run_time_variant_by_default_with_system_first() {
        let all = chosen(None, &[]).unwrap();
        let names: Vec<&str> = all.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "system",
                "ours",
                "ours-v2",
                "ours-secure",
                "ours-no-thp",
                "ours-purge0"
            ]
        );
        assert_eq!(all[4].build, BUILDS[1]);
        assert_eq!(all[4].env, [("MIMALLOC_ALLOW_THP".into(), "0".into())]);
        assert!(all[0].env.is_empty() && all[0].build.features.is_none());
    }

    #[test]
    fn a_choice_keeps_the_system_build_and_adds_extra_variants() {
        let some = chosen(
            Some("ours-secure,ours"),
            &["big=ours-v2:MIMALLOC_ARENA_EAGER_COMMIT=1".into()],
        )
        .unwrap();
        let names: Vec<&str> = some.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["system", "ours-secure", "ours", "big"]);
        assert_eq!(some[3].build.name, "ours-v2");
        assert_eq!(
            chosen(Some("nosuch"), &[]).unwrap_err(),
            "no allocator called nosuch (product)"
        );
        assert!(
            chosen(None, &["x=peer:A=1".into()])
                .unwrap_err()
                .contains("no build called peer")
        );
        assert!(chosen(None, &["x=ours".into()]).is_err());
    }
}
