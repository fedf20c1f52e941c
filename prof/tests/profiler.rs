//! `mimalloc::profile::Profiler`: what it writes, and each error it returns as a value.

use mimalloc::profile::{Format, ProfileError, Profiler};
use std::path::Path;
use std::process::Command;

mimalloc::assign_global!();

const CHILD: &str = "MIMALLOC_PROF_TEST_CHILD";

/// A named check, run on a directory of its own.
type Check = (&'static str, fn(&Path));

fn main() {
    if std::env::var_os(CHILD).is_some() {
        // MIMALLOC_PROFILE started mimalloc's own profiler before `main`.
        let dir = std::env::temp_dir();
        match Profiler::start(dir.join("never")) {
            Err(ProfileError::AlreadyRunning) => println!("refused"),
            other => panic!("started beside MIMALLOC_PROFILE: {other:?}"),
        }
        return;
    }
    let dir = std::env::temp_dir().join(format!("mimalloc-prof-api-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // One process-wide profiler at a time, so the checks run in order, not on libtest's threads;
    // the line libtest would print lets `.ci/run` count them.
    let checks: [Check; 8] = [
        ("refuses_bad_requests", refuses_bad_requests),
        ("takes_a_relative_base", takes_a_relative_base),
        (
            "refuses_a_directory_in_the_snapshots_place",
            refuses_a_directory_in_the_snapshots_place,
        ),
        ("writes_numbered_snapshots", writes_numbered_snapshots),
        (
            "says_when_nothing_was_written",
            says_when_nothing_was_written,
        ),
        ("writes_the_text_format", writes_the_text_format),
        ("symbolizes_in_the_process", symbolizes_in_the_process),
        (
            "refuses_beside_the_environments_profiler",
            refuses_beside_the_environments_profiler,
        ),
    ];
    for (name, check) in checks {
        check(&dir);
        println!("test {name} ... ok");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    println!(
        "test result: ok. {} passed; 0 failed; 0 ignored; 0 measured; 0 filtered out",
        checks.len()
    );
}

fn refuses_bad_requests(dir: &Path) {
    let zero = Profiler::options().sample_rate(0).start(dir.join("zero"));
    assert!(
        matches!(zero, Err(ProfileError::ZeroSampleRate)),
        "{zero:?}"
    );
    let nul = Profiler::start(dir.join("a\0b"));
    assert!(matches!(nul, Err(ProfileError::BadBaseName(_))), "{nul:?}");
    let long = Profiler::start(dir.join("x".repeat(1001)));
    assert!(
        matches!(long, Err(ProfileError::BadBaseName(_))),
        "{long:?}"
    );
    let missing = Profiler::start(dir.join("no-such-dir").join("heap"));
    assert!(
        matches!(missing, Err(ProfileError::Io(ref p, _)) if p.ends_with("no-such-dir")),
        "{missing:?}"
    );
    let file = dir.join("a-file");
    std::fs::write(&file, b"").unwrap();
    let under_file = Profiler::start(file.join("heap"));
    assert!(
        matches!(under_file, Err(ProfileError::Io(ref p, _)) if *p == file),
        "{under_file:?}"
    );
    assert!(matches!(
        Profiler::start(""),
        Err(ProfileError::BadBaseName(_))
    ));
    says_why(zero, nul, missing);
    // mimalloc's file-name buffer takes a base of 1000 bytes, not one more.
    let mut longest = dir.join("").into_os_string().into_string().unwrap();
    longest.push_str(&"y".repeat(1000 - longest.len()));
    Profiler::start(&longest).unwrap().stop();
    longest.push('y');
    let too_long = Profiler::start(&longest);
    assert!(
        matches!(too_long, Err(ProfileError::BadBaseName(_))),
        "{too_long:?}"
    );
    println!("bad requests: refused");
}

/// Each error says what went wrong, and an I/O error gives its cause as its `source`.
fn says_why(
    zero: Result<Profiler, ProfileError>,
    nul: Result<Profiler, ProfileError>,
    missing: Result<Profiler, ProfileError>,
) {
    use std::error::Error;
    let zero = zero.unwrap_err();
    assert_eq!(zero.to_string(), "the sample rate must be at least 1 byte");
    assert!(zero.source().is_none());
    let nul = nul.unwrap_err().to_string();
    assert!(
        nul.ends_with(": a profile base name must be UTF-8 without NUL bytes, at most 1000 bytes"),
        "{nul}"
    );
    let missing = missing.unwrap_err();
    assert!(missing.to_string().contains("no-such-dir: "), "{missing}");
    let cause = missing
        .source()
        .and_then(|e| e.downcast_ref::<std::io::Error>());
    assert_eq!(
        cause.map(std::io::Error::kind),
        Some(std::io::ErrorKind::NotFound),
        "{missing:?}"
    );
}

/// A relative base is taken from the current directory, as a file name is.
fn takes_a_relative_base(dir: &Path) {
    let before = std::env::current_dir().unwrap();
    std::env::set_current_dir(dir).unwrap();
    let profiler = Profiler::options()
        .sample_rate(4096)
        .start("relative")
        .unwrap();
    let path = profiler.snapshot().unwrap();
    std::env::set_current_dir(before).unwrap();
    assert_eq!(path, Path::new("relative.0001.pb"));
    assert!(dir.join(&path).is_file());
    println!("relative base: written in the current directory");
}

/// A directory where a snapshot goes is not the snapshot: it is reported, not written into,
/// and the numbering stays mimalloc's.
fn refuses_a_directory_in_the_snapshots_place(dir: &Path) {
    let base = dir.join("occupied");
    let profiler = Profiler::start(&base).unwrap();
    let place = dir.join("occupied.0001.pb");
    std::fs::create_dir(&place).unwrap();
    let result = profiler.snapshot();
    assert!(
        matches!(result, Err(ProfileError::Io(ref p, _)) if *p == place),
        "{result:?}"
    );
    std::fs::remove_dir(&place).unwrap();
    assert_eq!(profiler.snapshot().unwrap(), place);
    println!(
        "a directory in the snapshot's place: {}",
        result.unwrap_err()
    );
}

fn writes_numbered_snapshots(dir: &Path) {
    let profiler = Profiler::options()
        .sample_rate(4096)
        .start(dir.join("heap.v1"))
        .unwrap();
    let second = Profiler::start(dir.join("second"));
    assert!(
        matches!(second, Err(ProfileError::AlreadyRunning)),
        "{second:?}"
    );
    assert_eq!(
        second.unwrap_err().to_string(),
        "a heap profiler is already attached (another Profiler, or MIMALLOC_PROFILE)"
    );
    assert_eq!(
        format!("{profiler:?}"),
        format!(
            "Profiler {{ base: {:?}, format: Pprof, .. }}",
            dir.join("heap.v1")
        )
    );
    let kept: Vec<Vec<u8>> = (0..256).map(|i| vec![i as u8; 16 << 10]).collect();
    // The base name is kept whole (mimalloc would strip ".v1"), numbered from 1.
    let first = profiler.snapshot().unwrap();
    assert_eq!(first, dir.join("heap.v1.0001.pb"));
    let bytes = profiler.snapshot_bytes().unwrap();
    assert!(
        !dir.join("heap.v1.0002.pb").exists(),
        "snapshot_bytes leaves no file"
    );
    let third = profiler.snapshot().unwrap();
    assert_eq!(third, dir.join("heap.v1.0003.pb"));
    // Both snapshots are profiles with the kept blocks in them.
    for profile in [std::fs::read(&first).unwrap(), bytes] {
        let report = mimalloc_prof::Report::new(
            &mimalloc_prof::Profile::decode_bytes(&profile).unwrap(),
            None,
        )
        .unwrap();
        let (inuse, _) = report.totals();
        assert!(inuse.bytes > (1 << 20) as f64, "{}", report.text(5));
    }
    drop(profiler);
    // Another one may start once the first is gone.
    Profiler::start(dir.join("again")).unwrap().stop();
    drop(kept);
    println!("snapshots: numbered, readable");
}

fn says_when_nothing_was_written(dir: &Path) {
    let gone = dir.join("gone");
    std::fs::create_dir_all(&gone).unwrap();
    let profiler = Profiler::start(gone.join("heap")).unwrap();
    std::fs::remove_dir(&gone).unwrap();
    let result = profiler.snapshot();
    assert!(
        matches!(result, Err(ProfileError::NotWritten(ref p)) if p.ends_with("heap.0001.pb")),
        "{result:?}"
    );
    let why = result.unwrap_err().to_string();
    assert!(why.contains(": mimalloc wrote no snapshot ("), "{why}");
    println!("unwritable snapshot: {why}");
}

fn writes_the_text_format(dir: &Path) {
    let profiler = Profiler::options()
        .format(Format::Text)
        .sample_rate(4096)
        .start(dir.join("text"))
        .unwrap();
    let kept = vec![1u8; 1 << 20];
    let path = profiler.snapshot().unwrap();
    assert_eq!(path, dir.join("text.0001.heap"));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("heap profile:"), "{text}");
    assert!(
        text.contains("MAPPED_LIBRARIES") || cfg!(not(target_os = "linux")),
        "{text}"
    );
    drop((profiler, kept));
    println!("text format: {} lines", text.lines().count());
}

/// Keeps 4 MiB, allocated in its own frame (a loop, not a tail call).
#[inline(never)]
fn symbolized_site() -> Vec<Vec<u8>> {
    let mut kept = Vec::with_capacity(64);
    for i in 0..kept.capacity() {
        kept.push(vec![i as u8; 64 << 10]);
    }
    kept
}

fn symbolizes_in_the_process(dir: &Path) {
    for format in [Format::Pprof, Format::Text] {
        let profiler = Profiler::options()
            .format(format)
            .sample_rate(4096)
            .symbolize(true)
            .start(dir.join("symbolized"))
            .unwrap();
        let kept = symbolized_site();
        let bytes = profiler.snapshot_bytes().unwrap();
        drop((profiler, kept));
        if format == Format::Text {
            let text = String::from_utf8(bytes).unwrap();
            let (symbols, profile) = text.split_once("\n---\n").expect("a symbol section");
            assert!(symbols.starts_with("--- symbol\n"), "{symbols}");
            assert!(symbols.contains("profiler::symbolized_site"), "{symbols}");
            assert!(profile.starts_with("heap profile:"), "{profile}");
            continue;
        }
        let profile = mimalloc_prof::Profile::decode_bytes(&bytes).unwrap();
        let names: Vec<&str> = profile
            .function
            .iter()
            .map(|f| profile.string(f.name))
            .collect();
        assert!(names.contains(&"profiler::symbolized_site"), "{names:?}");
        assert!(profile.location.iter().all(|l| l.address != 0));
        assert!(
            profile
                .location
                .iter()
                .filter(|l| !l.line.is_empty())
                .count()
                * 2
                > profile.location.len(),
            "most locations resolved"
        );
        // The report names the site from the profile alone, as a reader without the binary does.
        let report = mimalloc_prof::Report::new(&profile, None).unwrap();
        let site = report
            .function("profiler::symbolized_site")
            .expect("the site");
        assert!(
            site.inclusive_inuse.bytes > (1 << 20) as f64,
            "{}",
            report.text(5)
        );
    }
    println!("symbolized snapshots: names in both formats");
}

fn refuses_beside_the_environments_profiler(dir: &Path) {
    // An earlier run's snapshot, where this run writes none, must be left as it is (no bytes:
    // an empty profile, which completing would rewrite).
    let stale = dir.join("env.0002.pb");
    std::fs::write(&stale, b"").unwrap();
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let file = std::fs::File::options().write(true).open(&stale).unwrap();
    file.set_modified(hour_ago).unwrap();
    drop(file);
    let out = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, "1")
        .env("MIMALLOC_PROFILE", dir.join("env"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "refused");
    // mimalloc's own profiler wrote its final snapshot at exit, and the crate completed it.
    let bytes = std::fs::read(dir.join("env.0001.pb")).expect("MIMALLOC_PROFILE wrote nothing");
    let profile = mimalloc_prof::Profile::decode_bytes(&bytes).unwrap();
    let exe = std::env::current_exe().unwrap();
    let own: Vec<_> = (profile.mapping.iter())
        .filter(|m| Path::new(profile.string(m.filename)) == exe)
        .collect();
    assert!(!own.is_empty(), "no mapping of the test binary");
    if cfg!(target_os = "linux") {
        // Its code is mapped from past the start of the file (the read-only headers come first).
        assert!(
            own.iter().any(|m| m.file_offset > 0),
            "no file offsets: {own:?}"
        );
        for m in &own {
            assert_eq!(profile.string(m.build_id).len(), 40, "no build id: {m:?}");
        }
    }
    let modified = std::fs::metadata(&stale).unwrap().modified().unwrap();
    assert_eq!(
        modified, hour_ago,
        "an earlier run's snapshot was rewritten"
    );
    println!("MIMALLOC_PROFILE: its profiler runs and its snapshot is completed, ours is refused");
}
