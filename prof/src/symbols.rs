//! Turns the raw return addresses of a profile into function names, against the files the
//! profiled process had mapped (the profile's `Mapping`s name them). Where the profile records
//! a file's build id, the file read must be the same build (see [`Symbolizer::new`]).

use crate::proto::{Location, Mapping, Profile};
use object::{Object, ObjectSegment};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One loaded file: its debug information and where the process had it.
struct Image {
    loader: addr2line::Loader,
    /// Added to a file address to get the process's address (0 for a non-PIE executable).
    load_bias: u64,
}

/// Symbolizes the locations of one profile. Files are opened once, on first use.
pub struct Symbolizer<'p> {
    profile: &'p Profile,
    /// Replaces the path of the main executable (the first mapping), e.g. with an unstripped copy.
    binary: Option<PathBuf>,
    images: HashMap<String, Option<Image>>,
    /// Files that could not be read, with why, for the report's footer.
    pub unreadable: Vec<String>,
}

impl std::fmt::Debug for Symbolizer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Symbolizer")
            .field("binary", &self.binary)
            .field("files", &self.images.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl<'p> Symbolizer<'p> {
    /// Fails if a file the profile's frames would be symbolized against is another build than
    /// the one that ran (its build id differs from the profile's): a rebuilt binary puts other code
    /// at the recorded addresses, and its names would be plausible and wrong.
    pub fn new(profile: &'p Profile, binary: Option<PathBuf>) -> Result<Symbolizer<'p>, String> {
        let symbolizer = Symbolizer {
            profile,
            binary,
            images: HashMap::new(),
            unreadable: Vec::new(),
        };
        symbolizer.check_build_ids()?;
        Ok(symbolizer)
    }

    /// Checks every mapping some location uses that records a build id against the file it is
    /// symbolized against (its own, or `binary` for the executable). Profiles without build ids
    /// (mimalloc's own writer records none) are read unchecked, as before build ids existed.
    fn check_build_ids(&self) -> Result<(), String> {
        let mut checked = HashSet::new();
        // Locations symbolized when the profile was taken need no file.
        for location in self.profile.location.iter().filter(|l| l.line.is_empty()) {
            let Some(mapping) = self.mapping(location.mapping_id) else {
                continue;
            };
            let expected = self.profile.string(mapping.build_id);
            // Index 0 is "no build id" whatever the string table holds there.
            if mapping.build_id == 0 || expected.is_empty() {
                continue;
            }
            let path = self.path_of(&mapping);
            if !checked.insert((path.clone(), expected)) {
                continue;
            }
            let executable = self.profile.mapping.first().map(|m| m.filename);
            let hint = if executable == Some(mapping.filename) {
                "the file was rebuilt after the profile was taken; pass the binary that ran with --binary"
            } else {
                "the file was replaced after the profile was taken, e.g. by an upgrade; read the profile where the files that ran are"
            };
            check_build_id(&path, expected, hint)?;
        }
        Ok(())
    }

    /// The frames at a location, innermost first: an address inside inlined code gives the
    /// inlined functions and then the one they were inlined into.
    pub fn frames(&mut self, location: &Location) -> Vec<String> {
        if !location.line.is_empty() {
            return self.recorded(location);
        }
        let Some(mapping) = self.mapping(location.mapping_id) else {
            return vec![format!("{:#x}", location.address)];
        };
        let path = self.path_of(&mapping);
        let unknown = || {
            let file = Path::new(&path)
                .file_name()
                .map_or(path.clone(), |f| f.to_string_lossy().into_owned());
            vec![format!("{:#x} in {file}", location.address)]
        };
        let Some(image) = self.image(&path, &mapping) else {
            return unknown();
        };
        // A return address points after the call: the call itself is one byte before.
        let probe = location
            .address
            .wrapping_sub(1)
            .wrapping_sub(image.load_bias);
        let mut names = Vec::new();
        if let Ok(mut frames) = image.loader.find_frames(probe) {
            while let Ok(Some(frame)) = frames.next() {
                let Some(function) = frame.function.as_ref() else {
                    continue;
                };
                if is_short_rust_name(function) {
                    // `debug = "line-tables-only"`: the inlined frames are named without their
                    // paths (`fold`, `malloc`), which cannot tell the allocator's own frames
                    // from the program's. The symbol table names the function in full.
                    names.clear();
                    break;
                }
                if let Ok(name) = function.demangle() {
                    names.push(name.into_owned());
                }
            }
        }
        if names.is_empty()
            && let Some(symbol) = image.loader.find_symbol(probe)
        {
            // `{:#}`: without the hash a mangled Rust symbol ends in.
            names.push(format!("{:#}", rustc_demangle::demangle(symbol)));
        }
        if names.is_empty() { unknown() } else { names }
    }

    /// The names the profiled process wrote at a location (innermost first, as here).
    fn recorded(&self, location: &Location) -> Vec<String> {
        let name = |line: &crate::proto::Line| {
            let function = self
                .profile
                .function
                .iter()
                .find(|f| f.id == line.function_id);
            function.map_or_else(
                || format!("{:#x}", location.address),
                |f| self.profile.string(f.name).to_owned(),
            )
        };
        location.line.iter().map(name).collect()
    }

    fn mapping(&self, id: u64) -> Option<Mapping> {
        self.profile.mapping.iter().find(|m| m.id == id).cloned()
    }

    fn path_of(&self, mapping: &Mapping) -> String {
        let first = self.profile.mapping.first().map(|m| m.filename);
        match &self.binary {
            Some(binary) if first == Some(mapping.filename) => {
                binary.to_string_lossy().into_owned()
            }
            _ => self.profile.string(mapping.filename).to_owned(),
        }
    }

    fn image(&mut self, path: &str, mapping: &Mapping) -> Option<&Image> {
        if !self.images.contains_key(path) {
            let loaded = self.load(path, mapping.filename);
            self.images.insert(path.to_owned(), loaded);
        }
        self.images.get(path).and_then(Option::as_ref)
    }

    fn load(&mut self, path: &str, filename: i64) -> Option<Image> {
        let result = addr2line::Loader::new(path)
            .map_err(|e| e.to_string())
            .and_then(|loader| {
                let lowest = lowest_file_address(Path::new(path))?;
                Ok(Image {
                    loader,
                    load_bias: self.lowest_mapped(filename).wrapping_sub(lowest),
                })
            });
        match result {
            Ok(image) => Some(image),
            Err(why) => {
                self.unreadable.push(format!("{path}: {why}"));
                None
            }
        }
    }

    /// Where the process mapped the start of the file: the lowest mapping of that name. It maps
    /// file offset 0, whether the profile records file offsets (`mimalloc::profile::Profiler`'s
    /// snapshots) or not (mimalloc's own writer, which lists every mapping of the file).
    fn lowest_mapped(&self, filename: i64) -> u64 {
        self.profile
            .mapping
            .iter()
            .filter(|m| m.filename == filename)
            .map(|m| m.memory_start)
            .min()
            .unwrap_or(0)
    }
}

/// Whether DWARF names a Rust function by its bare name: Rust's full debug information gives
/// each function its mangled name (`_ZN...`, `_R...`), its line tables alone do not.
fn is_short_rust_name<R: addr2line::gimli::Reader>(function: &addr2line::FunctionName<R>) -> bool {
    let rust = function.language == Some(addr2line::gimli::DW_LANG_Rust);
    let raw = function.raw_name();
    rust && raw.is_ok_and(|name| !name.starts_with("_ZN") && !name.starts_with("_R"))
}

/// Compares the GNU build id of the file at `path` with `expected`, the profile's (hex).
///
/// A file that cannot be opened or parsed is let through: it is not symbolized at all, and the
/// report's footer says why (as for profiles without build ids), so no name can be wrong.
/// A file without a build id note is refused: the binary that ran had one (the profile recorded
/// it), and notes survive `strip`, so this file is another build (e.g. linked without
/// `--build-id`), and nothing shows its addresses to be the ones that ran.
fn check_build_id(path: &str, expected: &str, hint: &str) -> Result<(), String> {
    let Ok(file) = std::fs::File::open(path) else {
        return Ok(());
    };
    // Reads the headers and notes only, not a whole (perhaps large, debug-laden) file.
    let cache = object::ReadCache::new(file);
    let Ok(object) = object::File::parse(&cache) else {
        return Ok(());
    };
    let actual = match object.build_id() {
        Ok(Some(id)) => id.iter().fold(String::new(), |mut hex, byte| {
            let _ = write!(hex, "{byte:02x}");
            hex
        }),
        Ok(None) => {
            return Err(format!(
                "{path}: the file has no build id, but the profile's is {expected} ({hint})"
            ));
        }
        // Unreadable notes in a file that parses: it would be symbolized, unchecked.
        Err(e) => return Err(format!("{path}: reading its build id: {e}")),
    };
    // The profile's should be lowercase, but case says nothing about which build it is.
    if actual.eq_ignore_ascii_case(expected) {
        Ok(())
    } else {
        Err(format!(
            "{path}: build id {actual} differs from the profile's {expected} ({hint})"
        ))
    }
}

/// The lowest address the file asks to be loaded at (page-aligned, as the loader maps it).
fn lowest_file_address(path: &Path) -> Result<u64, String> {
    let data = std::fs::read(path).map_err(|e| e.to_string())?;
    let file = object::File::parse(&*data).map_err(|e| e.to_string())?;
    file.segments()
        .filter(|s| s.file_range().1 > 0)
        .map(|s| s.address() & !0xfff)
        .min()
        .ok_or_else(|| "no loadable segment".to_owned())
}
