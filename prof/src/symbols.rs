//! Turns the raw return addresses of a profile into function names, against the files the
//! profiled process had mapped (the profile's `Mapping`s name them).

use crate::proto::{Location, Mapping, Profile};
use object::{Object, ObjectSegment};
use std::collections::HashMap;
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
    pub fn new(profile: &'p Profile, binary: Option<PathBuf>) -> Symbolizer<'p> {
        Symbolizer {
            profile,
            binary,
            images: HashMap::new(),
            unreadable: Vec::new(),
        }
    }

    /// The frames at a location, innermost first: an address inside inlined code gives the
    /// inlined functions and then the one they were inlined into.
    pub fn frames(&mut self, location: &Location) -> Vec<String> {
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
                if let Some(name) = frame.function.as_ref().and_then(|f| f.demangle().ok()) {
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

    /// Where the process mapped the start of the file: the lowest mapping of that name (mimalloc
    /// lists each mapping of a file, without their file offsets; the first one maps offset 0).
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
