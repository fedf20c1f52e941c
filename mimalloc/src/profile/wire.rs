//! The few pieces of protobuf's wire format that completing a snapshot needs: walking the
//! fields of a message, and writing varint and length-delimited fields. Fields are copied
//! byte for byte unless they are rewritten, so nothing this module does not know is lost.

use core::fmt;
use std::collections::HashMap;
use std::string::String;
use std::vec::Vec;

/// `perftools.profiles.Profile`'s string table (pprof's `profile.proto`).
pub(super) const PROFILE_STRING_TABLE: u64 = 6;

/// A message that does not follow protobuf's wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Malformed(pub &'static str);

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// The payload of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Value<'a> {
    Varint(u64),
    /// A length-delimited field: a string, bytes, a sub-message or a packed repeated field.
    Bytes(&'a [u8]),
    /// A 32- or 64-bit fixed-width field, which a profile has none of.
    Fixed,
}

/// One field of a message, with the bytes that encode it (key included).
#[derive(Debug, Clone, Copy)]
pub(super) struct Field<'a> {
    pub number: u64,
    pub value: Value<'a>,
    pub raw: &'a [u8],
}

/// The fields of a message, in the order they were written.
pub(super) fn fields(message: &[u8]) -> Fields<'_> {
    Fields { rest: message }
}

#[derive(Debug)]
pub(super) struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<Field<'a>, Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let field = next_field(self.rest);
        // A malformed field ends the walk: what follows it cannot be located.
        self.rest = match field {
            Ok(f) => &self.rest[f.raw.len()..],
            Err(_) => &[],
        };
        Some(field)
    }
}

fn next_field(message: &[u8]) -> Result<Field<'_>, Malformed> {
    let mut rest = message;
    let key = read_varint(&mut rest)?;
    let value = match key & 7 {
        0 => Value::Varint(read_varint(&mut rest)?),
        1 => {
            take(&mut rest, 8)?;
            Value::Fixed
        }
        2 => {
            let len = usize::try_from(read_varint(&mut rest)?).map_err(|_| TOO_LONG)?;
            Value::Bytes(take(&mut rest, len)?)
        }
        5 => {
            take(&mut rest, 4)?;
            Value::Fixed
        }
        _ => return Err(Malformed("a group or an unknown wire type")),
    };
    let used = message.len() - rest.len();
    Ok(Field {
        number: key >> 3,
        value,
        raw: &message[..used],
    })
}

const TOO_LONG: Malformed = Malformed("a field runs past the end of its message");

fn take<'a>(rest: &mut &'a [u8], len: usize) -> Result<&'a [u8], Malformed> {
    if rest.len() < len {
        return Err(TOO_LONG);
    }
    let (taken, after) = rest.split_at(len);
    *rest = after;
    Ok(taken)
}

fn read_varint(rest: &mut &[u8]) -> Result<u64, Malformed> {
    let mut value = 0u64;
    for (i, byte) in rest.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            *rest = &rest[i + 1..];
            return Ok(value);
        }
    }
    Err(Malformed("a varint longer than 10 bytes or cut off"))
}

/// Appends a varint-encoded value.
pub(super) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends a varint field (`uint64`, `int64` of a non-negative value).
pub(super) fn put_varint_field(out: &mut Vec<u8>, number: u64, value: u64) {
    put_varint(out, number << 3);
    put_varint(out, value);
}

/// Appends a length-delimited field (a string or a sub-message).
pub(super) fn put_bytes_field(out: &mut Vec<u8>, number: u64, bytes: &[u8]) {
    put_varint(out, (number << 3) | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// The strings added to a profile's string table, after the ones it has: existing indices
/// stay as they are.
#[derive(Debug)]
pub(super) struct Strings {
    /// How many strings the table had: the first added one gets this index.
    existing: u64,
    added: Vec<String>,
    index: HashMap<String, u64>,
}

impl Strings {
    /// No strings added yet to the table of `profile`.
    pub(super) fn after(profile: &[u8]) -> Result<Strings, Malformed> {
        let mut existing = 0;
        for field in fields(profile) {
            if field?.number == PROFILE_STRING_TABLE {
                existing += 1;
            }
        }
        Ok(Strings {
            existing,
            added: Vec::new(),
            index: HashMap::new(),
        })
    }

    /// The index of `string`, added if this table has not added it yet.
    pub(super) fn index_of(&mut self, string: String) -> u64 {
        if let Some(&at) = self.index.get(&string) {
            return at;
        }
        let at = self.existing + self.added.len() as u64;
        self.added.push(string.clone());
        self.index.insert(string, at);
        at
    }

    /// Writes the added strings, in order, as string-table fields at the end of a profile.
    pub(super) fn put(&self, out: &mut Vec<u8>) {
        for string in &self.added {
            put_bytes_field(out, PROFILE_STRING_TABLE, string.as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn every_wire_type_of_a_profile_is_walked() {
        let mut message = Vec::new();
        put_varint_field(&mut message, 1, 300);
        message.push((2 << 3) | 1); // fixed64
        message.extend_from_slice(&[8; 8]);
        put_bytes_field(&mut message, 3, b"abc");
        message.push((4 << 3) | 5); // fixed32
        message.extend_from_slice(&[4; 4]);
        put_varint_field(&mut message, 5, 1);
        let walked: Vec<(u64, Value<'_>, usize)> = fields(&message)
            .map(|f| f.map(|f| (f.number, f.value, f.raw.len())).unwrap())
            .collect();
        assert_eq!(
            walked,
            [
                (1, Value::Varint(300), 3),
                (2, Value::Fixed, 9),
                (3, Value::Bytes(b"abc"), 5),
                (4, Value::Fixed, 5),
                (5, Value::Varint(1), 2),
            ]
        );
    }

    #[test]
    fn a_malformed_message_says_why() {
        let mut cut = Vec::new();
        put_bytes_field(&mut cut, 1, b"abc");
        cut.pop();
        let error = fields(&cut).next().unwrap().unwrap_err();
        assert_eq!(
            error.to_string(),
            "a field runs past the end of its message"
        );
        let group = fields(&[(1 << 3) | 3]).next().unwrap().unwrap_err();
        assert_eq!(group.to_string(), "a group or an unknown wire type");
    }
}
