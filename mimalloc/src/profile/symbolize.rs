//! Names, files and lines written into a snapshot by the process that took it, so that a reader
//! names its frames without the binaries (`ProfilerOptions::symbolize`, and `MIMALLOC_PROFILE`'s
//! profiles unless `MIMALLOC_PROFILE_SYMBOLIZE=0`):
//!
//! - protobuf: pprof's `Function` table and each `Location`'s `Line`s, inlined functions first
//!   and the function they were inlined into last, as `profile.proto` orders them; the mappings
//!   say they have functions (and file names, line numbers, inlined frames where they do), so
//!   readers take these instead of looking for the binaries.
//! - text: gperftools' symbol section (`--- symbol`, one `0x<address> <name>--<name>...` line per
//!   address, the function inlined into first, as gperftools orders them), which gperftools'
//!   `pprof` reads when given the profile alone. Go's readers do not read such a section: for
//!   them, symbolize protobuf snapshots.
//!
//! Addresses are resolved by the `backtrace` crate, std's own symbolizer: DWARF where the
//! program has it (inlined frames, files, lines), else the symbol table (names alone). Its cache
//! of the parsed files is emptied after each snapshot ([`release`]).

use super::wire::{self, Malformed, Strings, Value};
use std::collections::{BTreeSet, HashMap};
use std::format;
use std::string::{String, ToString};
use std::vec::Vec;

/// `perftools.profiles` field numbers (pprof's `profile.proto`).
const PROFILE_MAPPING: u64 = 3;
const PROFILE_LOCATION: u64 = 4;
const PROFILE_FUNCTION: u64 = 5;
const MAPPING_ID: u64 = 1;
const MAPPING_HAS_FUNCTIONS: u64 = 7;
const MAPPING_HAS_INLINE_FRAMES: u64 = 10;
const LOCATION_MAPPING_ID: u64 = 2;
const LOCATION_ADDRESS: u64 = 3;
const LOCATION_LINE: u64 = 4;
const LINE_FUNCTION_ID: u64 = 1;
const LINE_LINE: u64 = 2;
const FUNCTION_ID: u64 = 1;
const FUNCTION_NAME: u64 = 2;
const FUNCTION_SYSTEM_NAME: u64 = 3;
const FUNCTION_FILENAME: u64 = 4;

/// A function a return address lies in.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Frame {
    /// Demangled, without Rust's hash: `known_profile::keeps_48_mib`.
    pub name: String,
    /// As the symbol table spells it (mangled).
    pub system_name: String,
    /// Empty where the program has no line tables.
    pub file: String,
    /// 0 where the program has no line tables.
    pub line: u64,
}

/// The frames of the return address `address` of this process, inlined functions first; empty
/// if no symbol covers it.
pub(super) fn resolve(address: u64) -> Vec<Frame> {
    let mut frames = Vec::new();
    // `resolve` looks up the call before a return address, as a stack's frames need.
    backtrace::resolve(address as usize as *mut core::ffi::c_void, |symbol| {
        if let Some(name) = symbol.name() {
            frames.push(Frame {
                name: format!("{name:#}"),
                system_name: String::from_utf8_lossy(name.as_bytes()).into_owned(),
                file: symbol
                    .filename()
                    .map_or_else(String::new, |f| f.display().to_string()),
                line: symbol.lineno().map_or(0, u64::from),
            });
        }
    });
    frames
}

/// Lets go of the parsed debug information [`resolve`] keeps between calls. Only memory tells
/// (the `symbolize_cost` example measures it), so `.cargo/mutants.toml` lists it.
pub(super) fn release() {
    backtrace::clear_symbol_cache();
}

/// What the mappings' frames turned out to have, for their `has_*` flags.
#[derive(Clone, Copy, Debug, Default)]
struct Found {
    files: bool,
    lines: bool,
    inlined: bool,
}

/// The functions of a profile, each once.
#[derive(Default)]
struct Functions {
    ids: HashMap<(u64, u64, u64), u64>,
    encoded: Vec<Vec<u8>>,
}

impl Functions {
    fn id_of(&mut self, frame: &Frame, strings: &mut Strings) -> u64 {
        let key = (
            strings.index_of(frame.name.clone()),
            strings.index_of(frame.system_name.clone()),
            strings.index_of(frame.file.clone()),
        );
        let next = self.encoded.len() as u64 + 1;
        let encoded = &mut self.encoded;
        *self.ids.entry(key).or_insert_with(|| {
            let mut function = Vec::new();
            wire::put_varint_field(&mut function, FUNCTION_ID, next);
            wire::put_varint_field(&mut function, FUNCTION_NAME, key.0);
            wire::put_varint_field(&mut function, FUNCTION_SYSTEM_NAME, key.1);
            wire::put_varint_field(&mut function, FUNCTION_FILENAME, key.2);
            encoded.push(function);
            next
        })
    }
}

/// A pprof `Profile` with its locations' functions and lines. One that has functions already
/// is returned as it is.
pub(super) fn protobuf(
    profile: &[u8],
    resolve: &mut dyn FnMut(u64) -> Vec<Frame>,
) -> Result<Vec<u8>, Malformed> {
    for field in wire::fields(profile) {
        if field?.number == PROFILE_FUNCTION {
            return Ok(profile.to_vec());
        }
    }
    let mut strings = Strings::after(profile)?;
    let mut functions = Functions::default();
    let mut found: HashMap<u64, Found> = HashMap::new();
    let mut out = Vec::with_capacity(profile.len() * 2);
    for field in wire::fields(profile) {
        let field = field?;
        match (field.number, field.value) {
            (PROFILE_LOCATION, Value::Bytes(location)) => {
                let location =
                    with_lines(location, resolve, &mut functions, &mut strings, &mut found)?;
                wire::put_bytes_field(&mut out, PROFILE_LOCATION, &location);
            }
            _ => out.extend_from_slice(field.raw),
        }
    }
    // The mappings are rewritten once every location has been resolved.
    let mut flagged = Vec::with_capacity(out.len() + 64 * found.len());
    for field in wire::fields(&out) {
        let field = field?;
        match (field.number, field.value) {
            (PROFILE_MAPPING, Value::Bytes(mapping)) => {
                let mapping = flag_mapping(mapping, &found)?;
                wire::put_bytes_field(&mut flagged, PROFILE_MAPPING, &mapping);
            }
            _ => flagged.extend_from_slice(field.raw),
        }
    }
    for function in &functions.encoded {
        wire::put_bytes_field(&mut flagged, PROFILE_FUNCTION, function);
    }
    strings.put(&mut flagged);
    Ok(flagged)
}

/// A `Location` with a `Line` per frame of its address, noting what its mapping's frames have.
fn with_lines(
    location: &[u8],
    resolve: &mut dyn FnMut(u64) -> Vec<Frame>,
    functions: &mut Functions,
    strings: &mut Strings,
    found: &mut HashMap<u64, Found>,
) -> Result<Vec<u8>, Malformed> {
    let (mut mapping, mut address) = (0, None);
    for field in wire::fields(location) {
        match field? {
            f if f.number == LOCATION_MAPPING_ID => mapping = varint(f.value)?,
            f if f.number == LOCATION_ADDRESS => address = Some(varint(f.value)?),
            _ => {}
        }
    }
    let frames = address.map(resolve).unwrap_or_default();
    let mut out = location.to_vec();
    if frames.is_empty() {
        return Ok(out);
    }
    let seen = found.entry(mapping).or_default();
    seen.inlined |= frames.len() > 1;
    for frame in &frames {
        seen.files |= !frame.file.is_empty();
        seen.lines |= frame.line > 0;
        let mut line = Vec::new();
        wire::put_varint_field(&mut line, LINE_FUNCTION_ID, functions.id_of(frame, strings));
        wire::put_varint_field(&mut line, LINE_LINE, frame.line);
        wire::put_bytes_field(&mut out, LOCATION_LINE, &line);
    }
    Ok(out)
}

/// A `Mapping` whose locations were resolved, saying so: `has_functions`, and `has_filenames`,
/// `has_line_numbers`, `has_inline_frames` where its frames have them.
fn flag_mapping(mapping: &[u8], found: &HashMap<u64, Found>) -> Result<Vec<u8>, Malformed> {
    let mut id = 0;
    for field in wire::fields(mapping) {
        let field = field?;
        if field.number == MAPPING_ID {
            id = varint(field.value)?;
        }
    }
    let seen = match found.get(&id) {
        Some(seen) => *seen,
        None => return Ok(mapping.to_vec()),
    };
    let mut out = Vec::with_capacity(mapping.len() + 8);
    for field in wire::fields(mapping) {
        let field = field?;
        if !(MAPPING_HAS_FUNCTIONS..=MAPPING_HAS_INLINE_FRAMES).contains(&field.number) {
            out.extend_from_slice(field.raw);
        }
    }
    let flags = [true, seen.files, seen.lines, seen.inlined];
    for (number, flag) in (MAPPING_HAS_FUNCTIONS..).zip(flags) {
        if flag {
            wire::put_varint_field(&mut out, number, 1);
        }
    }
    Ok(out)
}

fn varint(value: Value<'_>) -> Result<u64, Malformed> {
    match value {
        Value::Varint(v) => Ok(v),
        _ => Err(Malformed("a varint field holds something else")),
    }
}

/// gperftools' text profile preceded by its symbol section. One that has a symbol section
/// already is returned as it is.
pub(super) fn text(profile: &[u8], resolve: &mut dyn FnMut(u64) -> Vec<Frame>) -> Vec<u8> {
    const SECTION: &[u8] = b"--- symbol\n";
    if profile.starts_with(SECTION) {
        return profile.to_vec();
    }
    let mut out = SECTION.to_vec();
    for address in stack_addresses(profile) {
        // gperftools' `pprof` lists the function inlined into first, the innermost last, and
        // splits the names at `--`, which cannot occur in one.
        let names: Vec<String> = resolve(address).into_iter().rev().map(|f| f.name).collect();
        if !names.is_empty() {
            out.extend_from_slice(format!("0x{address:x} {}\n", names.join("--")).as_bytes());
        }
    }
    out.extend_from_slice(b"---\n");
    out.extend_from_slice(profile);
    out
}

/// The addresses of the stacks (`... @ 0x55d0a1 0x55d0b2`), up to the mapped libraries: the
/// only `0x` words of the counts, the stacks and the header.
fn stack_addresses(profile: &[u8]) -> BTreeSet<u64> {
    let mut addresses = BTreeSet::new();
    for line in profile.split(|&b| b == b'\n') {
        if line.starts_with(b"MAPPED_LIBRARIES:") {
            break;
        }
        for word in line.split(|b| b.is_ascii_whitespace()) {
            let hex = word
                .strip_prefix(b"0x")
                .and_then(|h| core::str::from_utf8(h).ok());
            if let Some(address) = hex.and_then(|h| u64::from_str_radix(h, 16).ok()) {
                addresses.insert(address);
            }
        }
    }
    addresses
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::wire::PROFILE_STRING_TABLE;
    use std::vec;

    fn frame(name: &str, file: &str, line: u64) -> Frame {
        Frame {
            name: name.to_string(),
            system_name: format!("_ZN{name}E"),
            file: file.to_string(),
            line,
        }
    }

    /// 0x10: `inner` inlined into `outer`, with lines; 0x20: `outer` again, another line;
    /// 0x30: a name alone (no line tables); anything else: no symbol.
    fn fake(address: u64) -> Vec<Frame> {
        match address {
            0x10 => vec![frame("inner", "a.rs", 3), frame("outer", "a.rs", 9)],
            0x20 => vec![frame("outer", "a.rs", 12)],
            0x30 => vec![frame("bare", "", 0)],
            _ => vec![],
        }
    }

    fn message(fields: &[(u64, u64)]) -> Vec<u8> {
        let mut out = Vec::new();
        for &(number, value) in fields {
            wire::put_varint_field(&mut out, number, value);
        }
        out
    }

    fn sub_messages(bytes: &[u8], number: u64) -> Vec<Vec<u8>> {
        let fields = wire::fields(bytes).map(Result::unwrap);
        let wanted = fields.filter(|f| f.number == number);
        wanted
            .map(|f| match f.value {
                Value::Bytes(b) => b.to_vec(),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    fn varints(bytes: &[u8]) -> Vec<(u64, u64)> {
        let fields = wire::fields(bytes).map(Result::unwrap);
        fields
            .filter_map(|f| varint(f.value).ok().map(|v| (f.number, v)))
            .collect()
    }

    fn example() -> Vec<u8> {
        let mut profile = Vec::new();
        wire::put_bytes_field(&mut profile, PROFILE_STRING_TABLE, b"");
        for (id, start) in [(1, 0), (2, 0x1000)] {
            let mapping = message(&[(MAPPING_ID, id), (2, start), (MAPPING_HAS_FUNCTIONS, 0)]);
            wire::put_bytes_field(&mut profile, PROFILE_MAPPING, &mapping);
        }
        for (id, address) in [(1, 0x10), (2, 0x20), (3, 0x30), (4, 0x1040)] {
            let mapping = if address < 0x1000 { 1 } else { 2 };
            // The fields in any order: the address first here.
            let location = message(&[
                (LOCATION_ADDRESS, address),
                (1, id),
                (LOCATION_MAPPING_ID, mapping),
            ]);
            wire::put_bytes_field(&mut profile, PROFILE_LOCATION, &location);
        }
        profile
    }

    /// The example, symbolized, and its string table.
    fn symbolized_example() -> (Vec<u8>, Vec<String>) {
        let profile = protobuf(&example(), &mut fake).unwrap();
        let strings = sub_messages(&profile, PROFILE_STRING_TABLE)
            .into_iter()
            .map(|s| String::from_utf8(s).unwrap())
            .collect();
        (profile, strings)
    }

    /// The value of field `number` of a message's varint fields.
    fn field(fields: &[(u64, u64)], number: u64) -> u64 {
        let found = fields.iter().find(|(n, _)| *n == number);
        found.expect("the field is written").1
    }

    #[test]
    fn locations_get_lines_inlined_first() {
        let (profile, strings) = symbolized_example();
        let functions = sub_messages(&profile, PROFILE_FUNCTION);
        let name_of = |id: u64| {
            let function = functions
                .iter()
                .map(|f| varints(f))
                .find(|f| f[0] == (FUNCTION_ID, id));
            let function = function.expect("the line's function");
            strings[field(&function, FUNCTION_NAME) as usize].clone()
        };
        let locations = sub_messages(&profile, PROFILE_LOCATION);
        let lines = |i: usize| -> Vec<(String, u64)> {
            let lines = sub_messages(&locations[i], LOCATION_LINE);
            let pairs = lines.iter().map(|l| varints(l));
            pairs.map(|l| (name_of(l[0].1), l[1].1)).collect()
        };
        let owned = |v: &[(&str, u64)]| {
            let pairs = v.iter().map(|(n, l)| (n.to_string(), *l));
            pairs.collect::<Vec<_>>()
        };
        assert_eq!(lines(0), owned(&[("inner", 3), ("outer", 9)]));
        assert_eq!(lines(1), owned(&[("outer", 12)]));
        assert_eq!(lines(2), owned(&[("bare", 0)]));
        assert_eq!(lines(3), owned(&[]));
    }

    #[test]
    fn functions_are_written_once_with_their_names() {
        let (profile, strings) = symbolized_example();
        let functions = sub_messages(&profile, PROFILE_FUNCTION);
        assert_eq!(functions.len(), 3, "inner, outer, bare: each once");
        let ids: Vec<u64> = functions.iter().map(|f| varints(f)[0].1).collect();
        assert_eq!(ids, [1, 2, 3], "pprof reserves id 0");
        let function = varints(&functions[0]);
        let system_name = field(&function, FUNCTION_SYSTEM_NAME);
        assert_eq!(strings[system_name as usize], "_ZNinnerE");
        assert_eq!(
            strings[field(&function, FUNCTION_FILENAME) as usize],
            "a.rs"
        );
    }

    #[test]
    fn mappings_say_what_was_resolved() {
        let (profile, _) = symbolized_example();
        let mappings = sub_messages(&profile, PROFILE_MAPPING);
        let flags = |i: usize| {
            let fields = varints(&mappings[i]);
            let values = |n: u64| {
                let of_n = fields.iter().filter(|(f, _)| *f == n);
                of_n.map(|(_, v)| *v).collect::<Vec<_>>()
            };
            (MAPPING_HAS_FUNCTIONS..=MAPPING_HAS_INLINE_FRAMES)
                .map(values)
                .collect::<Vec<_>>()
        };
        assert_eq!(flags(0), vec![vec![1], vec![1], vec![1], vec![1]]);
        assert_eq!(
            flags(1),
            vec![vec![0], vec![], vec![], vec![]],
            "nothing resolved: as it was"
        );
        assert_eq!(
            protobuf(&profile, &mut fake).unwrap(),
            profile,
            "symbolized already"
        );
    }

    #[test]
    fn a_mapping_of_names_alone_says_so() {
        let mut profile = Vec::new();
        let mapping = message(&[(MAPPING_ID, 1)]);
        wire::put_bytes_field(&mut profile, PROFILE_MAPPING, &mapping);
        let location = message(&[(1, 1), (LOCATION_MAPPING_ID, 1), (LOCATION_ADDRESS, 0x30)]);
        wire::put_bytes_field(&mut profile, PROFILE_LOCATION, &location);
        let profile = protobuf(&profile, &mut fake).unwrap();
        let mapping = varints(&sub_messages(&profile, PROFILE_MAPPING)[0]);
        assert_eq!(mapping, vec![(MAPPING_ID, 1), (MAPPING_HAS_FUNCTIONS, 1)]);
    }

    #[test]
    fn text_profiles_get_a_symbol_section() {
        let raw = b"heap profile: 1: 2 [ 3: 4] @ heapprofile\n\
            1: 2 [ 1: 2] @ 0x10 0x30 0x99\n\
            1: 2 [ 1: 2] @ 0x20 0x10\n\
            MAPPED_LIBRARIES:\n\
            00000040-00000050 r-xp 00000000 fe:00 42    /a/bin\n";
        let symbolized = text(raw, &mut fake);
        let expected = b"--- symbol\n0x10 outer--inner\n0x20 outer\n0x30 bare\n---\n";
        assert_eq!(&symbolized[..expected.len()], expected);
        assert_eq!(&symbolized[expected.len()..], raw);
        assert_eq!(
            text(&symbolized, &mut fake),
            symbolized,
            "symbolized already"
        );
    }
}
