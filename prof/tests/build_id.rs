//! The build id check: a profile whose mappings record build ids is read only against files of
//! those builds; a profile without build ids (mimalloc's own writer) is read unchecked. The
//! profiles are made here with prost and point at this test's own executable, a real ELF file
//! with a GNU build id, whose own function `marker` they sample.
//!
//! Linux only: the check reads ELF's GNU build id note, which the executables of other targets
//! do not carry (Mach-O has an LC_UUID, PE a CodeView GUID), and the load address of the
//! executable comes from /proc/self/maps.
#![cfg(target_os = "linux")]

use mimalloc_prof::proto::{Location, Mapping, Profile, Sample, ValueType};
use object::Object;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The sampled frame: a function of this executable, so the test can see it symbolized.
#[inline(never)]
fn marker() {
    std::hint::black_box(());
}

fn exe() -> PathBuf {
    std::env::current_exe().expect("the test's executable")
}

/// The GNU build id of the file at `path` in lowercase hex, if it has one.
fn build_id_of(path: &Path) -> Option<String> {
    let data = std::fs::read(path).expect("reading the file");
    let file = object::File::parse(&*data).expect("an object file");
    let id = file.build_id().expect("its notes parse")?;
    Some(id.iter().map(|b| format!("{b:02x}")).collect())
}

/// This executable's build id: the check cannot be tested without one, so its absence fails.
fn exe_build_id() -> String {
    build_id_of(&exe()).unwrap_or_else(|| {
        panic!(
            "{} has no GNU build id note (`readelf -n` shows none): the linker did not add one; \
             link the tests with `-C link-arg=-Wl,--build-id`",
            exe().display()
        )
    })
}

/// Where this process has its executable mapped (lowest start, highest end).
fn exe_mapped() -> (u64, u64) {
    let exe = exe();
    let suffix = format!(" {}", exe.display());
    let maps = std::fs::read_to_string("/proc/self/maps").expect("reading /proc/self/maps");
    let ranges = maps.lines().filter(|l| l.ends_with(&suffix)).map(|line| {
        let range = line.split(' ').next().unwrap_or_default();
        let (start, end) = range.split_once('-').expect("a maps address range");
        let hex = |s| u64::from_str_radix(s, 16).expect("a hex address");
        (hex(start), hex(end))
    });
    ranges
        .reduce(|(s, e), (s2, e2)| (s.min(s2), e.max(e2)))
        .unwrap_or_else(|| panic!("{} is not in /proc/self/maps", exe.display()))
}

/// A heap profile with one sample at `marker`, in a mapping that names `filename` and records
/// `build_id` (none if `None`, as mimalloc's own writer).
fn profile(filename: &Path, build_id: Option<&str>) -> Profile {
    let mut strings: Vec<String> = ["", "alloc_objects", "count", "alloc_bytes", "bytes"]
        .into_iter()
        .chain(["inuse_objects", "inuse_bytes"])
        .map(str::to_owned)
        .collect();
    strings.push(filename.to_string_lossy().into_owned());
    let filename = strings.len() as i64 - 1;
    let build_id = build_id.map_or(0, |id| {
        strings.push(id.to_owned());
        strings.len() as i64 - 1
    });
    let value_type = |r#type, unit| ValueType { r#type, unit };
    let (memory_start, memory_limit) = exe_mapped();
    Profile {
        sample_type: vec![
            value_type(1, 2),
            value_type(3, 4),
            value_type(5, 2),
            value_type(6, 4),
        ],
        sample: vec![Sample {
            location_id: vec![1],
            value: vec![1, 4096, 1, 4096],
        }],
        mapping: vec![Mapping {
            id: 1,
            memory_start,
            memory_limit,
            file_offset: 0,
            filename,
            build_id,
        }],
        // A return address: the symbolizer looks one byte before it.
        location: vec![Location {
            id: 1,
            mapping_id: 1,
            address: marker as *const () as u64 + 1,
            line: vec![],
        }],
        string_table: strings,
        period: 512 << 10,
        ..Profile::default()
    }
}

/// A scratch directory for one test (the tests run in parallel).
fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("build-id-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("creating the scratch directory");
    dir
}

/// Writes `profile` as a file and reads it back as the command does.
fn read(
    dir: &Path,
    profile: &Profile,
    binary: Option<PathBuf>,
) -> Result<mimalloc_prof::Report, String> {
    let path = dir.join("heap.pb");
    std::fs::write(&path, prost::Message::encode_to_vec(profile)).expect("writing the profile");
    mimalloc_prof::read(&path, binary)
}

/// The profile's one stack names `marker`: the file was read, and at the right addresses.
fn assert_symbolized(report: &mimalloc_prof::Report) {
    let frames = &report.stacks[0].frames;
    assert!(
        frames.iter().any(|f| f.ends_with("::marker")),
        "the sample is symbolized as marker: {frames:?} ({:?})",
        report.unreadable
    );
}

/// A copy of this executable whose build id note is no longer one (its note type changed), so
/// `object` finds no build id in it.
fn copy_without_build_id(dir: &Path, id: &str) -> PathBuf {
    let mut data = std::fs::read(exe()).expect("reading the executable");
    let bytes: Vec<u8> = (0..id.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&id[i..i + 2], 16).expect("hex"))
        .collect();
    // A note: name size, descriptor size, type (4 bytes each), the name "GNU\0", the id.
    let needle: Vec<u8> = b"GNU\0".iter().chain(&bytes).copied().collect();
    let at = data
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("the build id note in the executable");
    data[at - 4..at].copy_from_slice(&0x99u32.to_ne_bytes());
    let copy = dir.join("copy-without-build-id");
    std::fs::write(&copy, data).expect("writing the copy");
    assert_eq!(build_id_of(&copy), None, "the copy has no build id left");
    copy
}

#[test]
fn matching_build_id_is_read() {
    let dir = scratch("matching");
    let report = read(&dir, &profile(&exe(), Some(&exe_build_id())), None)
        .expect("the profile of this very build is read");
    assert_symbolized(&report);
    std::fs::remove_dir_all(dir).expect("removing the scratch directory");
}

#[test]
fn other_build_id_is_refused() {
    let dir = scratch("other");
    let actual = exe_build_id();
    // The same id but for its first digit.
    let first = if actual.starts_with('0') { "1" } else { "0" };
    let recorded = format!("{first}{}", &actual[1..]);
    let profile = profile(&exe(), Some(&recorded));
    let error = read(&dir, &profile, None).expect_err("another build's profile is refused");
    let expected = format!(
        "{}: build id {actual} differs from the profile's {recorded} (the file was rebuilt after \
         the profile was taken; pass the binary that ran with --binary)",
        exe().display()
    );
    assert_eq!(error, expected);

    // The command fails on it too, with that message, and writes no flame graph.
    let out = Command::new(env!("CARGO_BIN_EXE_mimalloc-prof"))
        .arg(dir.join("heap.pb"))
        .output()
        .expect("running mimalloc-prof");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "mimalloc-prof fails: {stderr}");
    assert!(
        stderr.contains(&expected),
        "mimalloc-prof says why: {stderr}"
    );
    assert!(
        !dir.join("heap.pb.svg").exists(),
        "no flame graph of a refused profile"
    );
    std::fs::remove_dir_all(dir).expect("removing the scratch directory");
}

#[test]
fn no_build_id_is_read() {
    let dir = scratch("none");
    let report = read(&dir, &profile(&exe(), None), None)
        .expect("a profile without build ids is read unchecked");
    assert_symbolized(&report);
    std::fs::remove_dir_all(dir).expect("removing the scratch directory");
}

#[test]
fn file_without_build_id_is_refused() {
    let dir = scratch("file-without");
    let id = exe_build_id();
    let copy = copy_without_build_id(&dir, &id);
    let error = read(&dir, &profile(&copy, Some(&id)), None)
        .expect_err("a file without a build id is not taken for the build that ran");
    assert!(
        error.starts_with(&format!(
            "{}: the file has no build id, but the profile's is {id} (",
            copy.display()
        )),
        "{error}"
    );
    std::fs::remove_dir_all(dir).expect("removing the scratch directory");
}

#[test]
fn binary_replacement_is_checked() {
    let dir = scratch("binary");
    let id = exe_build_id();
    // As when the profile was taken elsewhere: its path is not this machine's.
    let profile = profile(Path::new("/nonexistent/profiled-app"), Some(&id));
    let report = read(&dir, &profile, Some(exe())).expect("--binary with the build that ran");
    assert_symbolized(&report);
    let copy = copy_without_build_id(&dir, &id);
    let error = read(&dir, &profile, Some(copy.clone()))
        .expect_err("--binary with another build is refused");
    assert!(
        error.starts_with(&format!("{}: ", copy.display())),
        "{error}"
    );
    assert!(error.contains(&id), "{error}");
    std::fs::remove_dir_all(dir).expect("removing the scratch directory");
}

/// A profile the process symbolized itself needs no file: its names are read from it even where
/// the file at its path is another build (or gone).
#[test]
fn symbolized_profiles_are_read_whatever_the_file() {
    let dir = scratch("symbolized");
    let actual = exe_build_id();
    let first = if actual.starts_with('0') { "1" } else { "0" };
    let mut profile = profile(&exe(), Some(&format!("{first}{}", &actual[1..])));
    let name = profile.string_table.len() as i64;
    profile.string_table.push("recorded::site".to_owned());
    profile.function = vec![mimalloc_prof::proto::Function {
        id: 7,
        name,
        system_name: name,
        filename: 0,
    }];
    profile.location[0].line = vec![mimalloc_prof::proto::Line {
        function_id: 7,
        line: 0,
    }];
    let report = read(&dir, &profile, None).expect("a symbolized profile is read");
    assert_eq!(report.stacks[0].frames, ["recorded::site"]);
    std::fs::remove_dir_all(dir).expect("removing the scratch directory");
}

/// "No build id" is index 0 or an empty string, whatever else the string table holds: such a
/// mapping is read unchecked.
#[test]
fn no_build_id_is_not_checked() {
    let dir = scratch("empty-id");
    // An empty id at an index of its own.
    let report = read(&dir, &profile(&exe(), Some("")), None).expect("an empty build id");
    assert_symbolized(&report);
    // Index 0, though a malformed table holds an id-like string there.
    let mut profile = profile(&exe(), None);
    profile.string_table[0] = "00".repeat(20);
    let report = read(&dir, &profile, None).expect("build id index 0");
    assert_symbolized(&report);
    std::fs::remove_dir_all(dir).expect("removing the scratch directory");
}
