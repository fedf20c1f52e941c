//! The allocators compared, and how each one's driver binary is built.

/// Where a driver binary comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// `bench/driver` in this workspace, with these cargo features.
    Workspace { features: &'static str },
    /// A registry mimalloc crate in a workspace of its own under `bench/` (`dir`), built into
    /// the executable `exe`: two mimallocs cannot share one program, and the registry's
    /// `mimalloc` crate cannot even share a dependency graph with ours (`links = "mimalloc"`).
    Peer {
        dir: &'static str,
        exe: &'static str,
        /// Programs its build runs besides cargo and a C compiler, checked before building so
        /// that a missing one is named rather than buried in a build log.
        tools: &'static [&'static str],
    },
}

/// One column of the comparison: a driver binary, run with some environment.
#[derive(Clone, Debug)]
pub struct Variant {
    /// The name in reports and on the command line.
    pub name: String,
    /// The binary it runs: the name of a built-in variant.
    pub binary: &'static str,
    pub source: Source,
    /// `MIMALLOC_*` and similar variables set for its runs (all others of that kind are cleared).
    pub env: Vec<(String, String)>,
    pub about: String,
}

impl Variant {
    /// The first build tool its driver needs that does not run here (`TOOL --version`).
    pub fn missing_tool(&self) -> Option<&'static str> {
        let Source::Peer { tools, .. } = &self.source else {
            return None;
        };
        tools.iter().copied().find(|tool| {
            !std::process::Command::new(tool)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
    }

    /// Whether its binary is this workspace's mimalloc (in any build), the only driver that
    /// runs the loops through a `Heap` and the `Allocator` impls.
    pub fn is_ours(&self) -> bool {
        match self.source {
            Source::Workspace { features } => features.split(',').any(|f| f == "ours"),
            Source::Peer { .. } => false,
        }
    }
}

/// The allocator every ratio is also given against, besides the system one: the registry's
/// `mimalloc` crate, the usual way of getting mimalloc into Rust.
pub const PEER: &str = "peer";
/// The second peer, shown beside the first: the one published crate on mimalloc 3.6.
pub const PEER_SAFE: &str = "peer-safe";
pub const SYSTEM: &str = "system";

/// The built-in variants, in report order.
pub fn built_in() -> Vec<Variant> {
    let mut all = vec![
        workspace(SYSTEM, "system", "the platform's malloc (glibc on Linux)"),
        workspace(
            "ours",
            "ours",
            "this workspace's mimalloc, default features (v3)",
        ),
        workspace(
            "ours-v2",
            "ours,v2",
            "this workspace's mimalloc, `v2` (mimalloc 2.x)",
        ),
        workspace(
            "ours-secure",
            "ours,secure",
            "this workspace's mimalloc, `secure`",
        ),
        // Transparent huge pages are on by default in our build on Linux (chosen from this
        // benchmark); this column shows what turning them off does.
        Variant {
            name: "ours-no-thp".to_owned(),
            binary: "ours",
            source: Source::Workspace { features: "ours" },
            env: vec![("MIMALLOC_ALLOW_THP".to_owned(), "0".to_owned())],
            about:
                "this workspace's mimalloc with transparent huge pages off (MIMALLOC_ALLOW_THP=0)"
                    .to_owned(),
        },
    ];
    if cfg!(not(windows)) {
        all.push(workspace("jemalloc", "jemalloc", "tikv-jemallocator"));
    }
    all.push(peer(
        PEER,
        Source::Peer {
            dir: "bench/peer",
            exe: "bench-driver-peer",
            tools: &[],
        },
        "the registry's `mimalloc` 0.1.52 (mimalloc 3.3.2), default features: the peer of the \
         *vs peer* ratios",
    ));
    all.push(peer(
        PEER_SAFE,
        Source::Peer {
            dir: "bench/peer-safe",
            exe: "bench-driver-peer-safe",
            // Its `libmimalloc-sys2` builds mimalloc with cmake.
            tools: &["cmake"],
        },
        "the registry's `mimalloc-safe` 0.1.69 (mimalloc 3.6.0, v3 feature)",
    ));
    all
}

fn peer(name: &'static str, source: Source, about: &str) -> Variant {
    Variant {
        name: name.to_owned(),
        binary: name,
        source,
        env: Vec::new(),
        about: about.to_owned(),
    }
}

fn workspace(name: &'static str, features: &'static str, about: &str) -> Variant {
    Variant {
        name: name.to_owned(),
        binary: name,
        source: Source::Workspace { features },
        env: Vec::new(),
        about: about.to_owned(),
    }
}

/// An extra variant's environment: `(VAR, VALUE)` pairs.
pub type Settings = Vec<(String, String)>;

/// `VAR=VALUE VAR=VALUE`, for the reports.
pub fn describe(settings: &Settings) -> String {
    let each: Vec<String> = settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
    each.join(" ")
}

/// Splits `NAME=BASE:VAR=VALUE[:VAR=VALUE...]` (the `--variant` syntax of the workload run and
/// of `product`) into its name, its base's name and at least one setting.
pub fn split_extra(spec: &str) -> Result<(&str, &str, Settings), String> {
    let bad = || format!("--variant {spec}: expected NAME=BASE:VAR=VALUE[:VAR=VALUE...]");
    let (name, rest) = spec.split_once('=').ok_or_else(bad)?;
    let mut parts = rest.split(':');
    let base = parts.next().ok_or_else(bad)?;
    let env: Settings = parts
        .map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .ok_or_else(bad)
        })
        .collect::<Result<_, _>>()?;
    if name.is_empty() || env.is_empty() {
        return Err(bad());
    }
    Ok((name, base, env))
}

/// Parses `NAME=BASE:VAR=VALUE[:VAR=VALUE...]`: a built-in variant's binary run with extra
/// environment variables.
pub fn parse_extra(spec: &str) -> Result<Variant, String> {
    let (name, base_name, env) = split_extra(spec)?;
    let base = built_in()
        .into_iter()
        .find(|v| v.name == base_name)
        .ok_or_else(|| format!("--variant {spec}: no built-in allocator called {base_name}"))?;
    Ok(Variant {
        name: name.to_owned(),
        about: format!("{} with {}", base.name, describe(&env)),
        env,
        ..base
    })
}

#[cfg(test)]
mod tests {
    use super::{Source, Variant, built_in, parse_extra};

    /// A peer needing a tool that does not run is reported with that tool; the workspace's
    /// drivers need none (cargo and a C compiler are a given).
    #[test]
    fn a_missing_build_tool_is_named() {
        let needs = |tools: &'static [&'static str]| Variant {
            name: "p".into(),
            binary: "p",
            source: Source::Peer {
                dir: "bench/p",
                exe: "p",
                tools,
            },
            env: Vec::new(),
            about: String::new(),
        };
        assert_eq!(
            needs(&["cargo", "no-such-build-tool-here"]).missing_tool(),
            Some("no-such-build-tool-here")
        );
        assert_eq!(needs(&["cargo"]).missing_tool(), None);
        assert!(
            built_in()
                .iter()
                .filter(|v| v.is_ours())
                .all(|v| v.missing_tool().is_none())
        );
    }

    #[test]
    fn an_extra_variant_runs_its_base_binary_with_its_environment() {
        let v =
            parse_extra("ours-purge0=ours:MIMALLOC_PURGE_DELAY=0:MIMALLOC_ALLOW_THP=0").unwrap();
        assert_eq!(v.name, "ours-purge0");
        assert_eq!(v.binary, "ours");
        assert_eq!(v.source, Source::Workspace { features: "ours" });
        assert_eq!(v.env.len(), 2);
        assert_eq!(v.env[1], ("MIMALLOC_ALLOW_THP".into(), "0".into()));
        assert!(parse_extra("x=nosuch:A=1").is_err());
        assert!(
            parse_extra("x=ours").is_err(),
            "an extra variant sets something"
        );
        assert!(parse_extra("x=ours:A").is_err());
    }

    #[test]
    fn the_workspace_mimalloc_variants_are_ours() {
        let ours: Vec<String> = built_in()
            .into_iter()
            .filter(|v| v.is_ours())
            .map(|v| v.name)
            .collect();
        assert_eq!(ours, ["ours", "ours-v2", "ours-secure", "ours-no-thp"]);
        assert!(parse_extra("x=ours-v2:A=1").unwrap().is_ours());
        assert!(!parse_extra("x=peer:A=1").unwrap().is_ours());
        assert!(!parse_extra("x=peer-safe:A=1").unwrap().is_ours());
    }
}
