//! What a snapshot needs beyond what mimalloc 3.6.0's writer puts in it, for pprof's own
//! readers to symbolize it (docs/known-issues.md has the report for upstream):
//!
//! - protobuf: each `Mapping` of a loaded segment gets the file offset it was mapped from,
//!   its start where the segment starts, and its file's GNU build id. Without them pprof's
//!   readers cannot find where a position-independent executable or a shared library was
//!   loaded; with the build id a reader can refuse a rebuilt file instead of naming the wrong
//!   functions.
//! - text: the call stacks' addresses in lower case (gperftools' `pprof` compares addresses
//!   as lower-case hex strings, so mimalloc's upper-case ones fall outside every mapping),
//!   and the mapped libraries' starts and offsets as the protobuf's mappings get them.
//!
//! A mapping that has a file offset already is left as it is, so a writer that adds them wins.

use super::images::Images;
use super::wire::{self, Malformed, Strings, Value};
use std::format;
use std::string::String;
use std::vec::Vec;

/// `perftools.profiles.Profile` and `Mapping` field numbers (pprof's `profile.proto`).
const PROFILE_MAPPING: u64 = 3;
const MAPPING_MEMORY_START: u64 = 2;
const MAPPING_FILE_OFFSET: u64 = 4;
const MAPPING_BUILD_ID: u64 = 6;

/// A pprof `Profile` whose mappings have file offsets and build ids. New strings (the build
/// ids) go at the end of the string table, whose existing indices stay as they are.
pub(super) fn protobuf(profile: &[u8], images: &Images) -> Result<Vec<u8>, Malformed> {
    let mut strings = Strings::after(profile)?;
    let mut out = Vec::with_capacity(profile.len() + 1024);
    for field in wire::fields(profile) {
        let field = field?;
        match (field.number, field.value) {
            (PROFILE_MAPPING, Value::Bytes(mapping)) => {
                let mapping = complete_mapping(mapping, images, &mut strings)?;
                wire::put_bytes_field(&mut out, PROFILE_MAPPING, &mapping);
            }
            _ => out.extend_from_slice(field.raw),
        }
    }
    strings.put(&mut out);
    Ok(out)
}

/// A `Mapping` message with the start of its segment, its file offset and build id. Left
/// as it is when it has a file offset already (mimalloc's writer may add them one day) or is
/// not a loaded segment (a data file the program mapped).
fn complete_mapping(
    mapping: &[u8],
    images: &Images,
    strings: &mut Strings,
) -> Result<Vec<u8>, Malformed> {
    let (mut start, mut has_offset) = (None, false);
    for field in wire::fields(mapping) {
        let field = field?;
        match (field.number, field.value) {
            (MAPPING_MEMORY_START, Value::Varint(v)) => start = Some(v),
            (MAPPING_FILE_OFFSET, _) => has_offset = true,
            _ => {}
        }
    }
    let placement = match start.and_then(|s| images.place(s)) {
        Some(placement) if !has_offset => placement,
        _ => return Ok(mapping.to_vec()),
    };
    let mut out = Vec::with_capacity(mapping.len() + 16);
    for field in wire::fields(mapping) {
        let field = field?;
        if field.number != MAPPING_MEMORY_START && field.number != MAPPING_BUILD_ID {
            out.extend_from_slice(field.raw);
        }
    }
    wire::put_varint_field(&mut out, MAPPING_MEMORY_START, placement.start);
    wire::put_varint_field(&mut out, MAPPING_FILE_OFFSET, placement.file_offset);
    if let Some(id) = placement.build_id {
        wire::put_varint_field(&mut out, MAPPING_BUILD_ID, strings.index_of(hex(id)));
    }
    Ok(out)
}

/// A build id as pprof spells it: lower-case hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// gperftools' text profile with its addresses in lower case, and its mapped libraries
/// placed as the protobuf's mappings are (see [`Images::place`]). Everything before the
/// `MAPPED_LIBRARIES:` trailer is the header and the stacks (digits, punctuation, `0x`
/// addresses and the header's words, already lower case); the trailer is a copy of
/// `/proc/self/maps` on Linux.
pub(super) fn text(profile: &[u8], images: &Images) -> Vec<u8> {
    const TRAILER: &[u8] = b"\nMAPPED_LIBRARIES:";
    let split = profile
        .windows(TRAILER.len())
        .position(|w| w == TRAILER)
        .map_or(profile.len(), |at| at + 1);
    let (stacks, trailer) = profile.split_at(split);
    let mut out = stacks.to_ascii_lowercase();
    for line in trailer.split_inclusive(|&b| b == b'\n') {
        match placed_maps_line(line, images) {
            Some(placed) => out.extend_from_slice(&placed),
            None => out.extend_from_slice(line),
        }
    }
    out
}

/// A `/proc/self/maps` line (`start-end perms offset dev inode path`) of a loaded segment,
/// with its start and offset as [`Images::place`] gives them; `None` for other lines.
fn placed_maps_line(line: &[u8], images: &Images) -> Option<Vec<u8>> {
    let mut fields = line.splitn(4, |&b| b == b' ');
    let (range, perms, offset, rest) = (
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
    );
    let hex = |field: &[u8]| u64::from_str_radix(core::str::from_utf8(field).ok()?, 16).ok();
    let dash = range.iter().position(|&b| b == b'-')?;
    let (start, end) = (hex(&range[..dash])?, &range[dash..]);
    // Only lines with a file (an absolute path): not anonymous ones (the zeroed tail of a
    // segment among them) or `[vdso]`-like ones.
    if hex(offset).is_none() || !rest.contains(&b'/') {
        return None;
    }
    let placement = images.place(start)?;
    let mut out = format!("{:x}", placement.start).into_bytes();
    out.extend_from_slice(end);
    out.push(b' ');
    out.extend_from_slice(perms);
    out.extend_from_slice(format!(" {:08x} ", placement.file_offset).as_bytes());
    out.extend_from_slice(rest);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::wire::PROFILE_STRING_TABLE;

    fn message(fields: &[(u64, u64)]) -> Vec<u8> {
        let mut out = Vec::new();
        for &(number, value) in fields {
            wire::put_varint_field(&mut out, number, value);
        }
        out
    }

    #[test]
    fn text_addresses_are_lowered_and_libraries_placed() {
        let mut images = Images::default();
        images.add(&[(0x5622_a600, 0x1e600, 0x2000)], None, 4096);
        let raw = b"heap profile: 1: 2 [ 3: 4] @ heapprofile\n1: 2 [ 1: 2] @ 0x5622AB 0xFF\n\
            MAPPED_LIBRARIES:\n\
            5622a000-5622c000 r-xp 0001e000 fe:00 42    /A/Bin\n\
            5622c000-5622d000 rw-p 00000000 00:00 0 \n\
            7000-8000 r--p 00000000 fe:00 43    /A/Other\n";
        let fixed = text(raw, &images);
        let fixed = core::str::from_utf8(&fixed).unwrap();
        let expected = "heap profile: 1: 2 [ 3: 4] @ heapprofile\n1: 2 [ 1: 2] @ 0x5622ab 0xff\n\
            MAPPED_LIBRARIES:\n\
            5622a600-5622c000 r-xp 0001e600 fe:00 42    /A/Bin\n\
            5622c000-5622d000 rw-p 00000000 00:00 0 \n\
            7000-8000 r--p 00000000 fe:00 43    /A/Other\n";
        assert_eq!(fixed, expected);
    }

    /// The mappings' fields and the string table of a completed profile.
    fn read_back(profile: &[u8]) -> (Vec<Vec<Value<'_>>>, Vec<&[u8]>) {
        let (mut mappings, mut strings) = (Vec::new(), Vec::new());
        for field in wire::fields(profile) {
            let field = field.unwrap();
            match (field.number, field.value) {
                (PROFILE_MAPPING, Value::Bytes(m)) => {
                    mappings.push(wire::fields(m).map(|f| f.unwrap().value).collect());
                }
                (PROFILE_STRING_TABLE, Value::Bytes(s)) => strings.push(s),
                _ => {}
            }
        }
        (mappings, strings)
    }

    /// Images with one segment, at 0x7200 from file offset 0x2200, of a file with a build id.
    fn one_image() -> Images {
        let mut images = Images::default();
        images.add(
            &[(0x7200, 0x2200, 0x2000)],
            Some(std::vec![0xab, 0x01]),
            4096,
        );
        images
    }

    #[test]
    fn mappings_get_offsets_and_interned_build_ids() {
        let mut profile = Vec::new();
        wire::put_bytes_field(&mut profile, PROFILE_STRING_TABLE, b"");
        for (id, start) in [(1, 0x7000), (2, 0x8000), (3, 0x100000)] {
            let mapping = message(&[(1, id), (MAPPING_MEMORY_START, start), (3, start + 0x1000)]);
            wire::put_bytes_field(&mut profile, PROFILE_MAPPING, &mapping);
        }
        wire::put_bytes_field(&mut profile, PROFILE_STRING_TABLE, b"name");
        let fixed = protobuf(&profile, &one_image()).unwrap();
        let (mappings, strings) = read_back(&fixed);
        assert_eq!(
            strings,
            [&b""[..], b"name", b"ab01"],
            "one added string, at the end"
        );
        let v = Value::Varint;
        // Fields 1 and 3 kept, then the start, the file offset, the build id's string.
        assert_eq!(mappings[0], [v(1), v(0x8000), v(0x7200), v(0x2200), v(2)]);
        assert_eq!(
            mappings[1],
            [v(2), v(0x9000), v(0x8000), v(0x3000), v(2)],
            "one build id"
        );
        assert_eq!(
            mappings[2].len(),
            3,
            "a mapping of no loaded image is left alone"
        );
    }

    #[test]
    fn a_mapping_with_a_file_offset_is_left_alone() {
        let placed = message(&[
            (1, 4),
            (MAPPING_MEMORY_START, 0x7000),
            (MAPPING_FILE_OFFSET, 0x1000),
        ]);
        let mut profile = Vec::new();
        wire::put_bytes_field(&mut profile, PROFILE_MAPPING, &placed);
        let fixed = protobuf(&profile, &one_image()).unwrap();
        assert_eq!(fixed, profile);
    }
}
