//! The messages of pprof's `profile.proto` (package `perftools.profiles`) that a heap profile
//! uses, with the field numbers of the published schema
//! (<https://github.com/google/pprof/blob/main/proto/profile.proto>); prost skips the fields
//! not declared here. mimalloc writes no `Function`s or `Line`s: its locations are raw
//! addresses, symbolized by [`crate::symbols`], unless the process symbolized the snapshot
//! itself (`ProfilerOptions::symbolize`, `MIMALLOC_PROFILE`), which writes them.

/// `perftools.profiles.Profile`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Profile {
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    #[prost(int64, tag = "12")]
    pub period: i64,
}

/// `perftools.profiles.ValueType`: indices into the string table.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct ValueType {
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// `perftools.profiles.Sample`: a call stack (leaf first) and its values.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
}

/// `perftools.profiles.Mapping`: where a file was mapped in the profiled process.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct Mapping {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    #[prost(int64, tag = "5")]
    pub filename: i64,
    /// The file's build id, as an index into the string table: the GNU build id in lowercase hex
    /// (e.g. `f6994e671daf6125b3942f983b0f26589b3e9ca9`). 0 (the empty string) when the writer
    /// recorded none, as mimalloc's own writer does; [`crate::symbols`] checks the file it
    /// symbolizes against when there is one.
    #[prost(int64, tag = "6")]
    pub build_id: i64,
}

/// `perftools.profiles.Location`: one frame's address in the profiled process.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct Location {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// The functions at the address, innermost first, where the profile was symbolized when it
    /// was taken (`ProfilerOptions::symbolize`); empty otherwise.
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
}

/// `perftools.profiles.Line`: one function at a location.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct Line {
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    #[prost(int64, tag = "2")]
    pub line: i64,
}

/// `perftools.profiles.Function`: names are indices into the string table.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct Function {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(int64, tag = "2")]
    pub name: i64,
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    #[prost(int64, tag = "4")]
    pub filename: i64,
}

impl Profile {
    /// Decodes a profile, gzip-compressed ones excepted (mimalloc writes them uncompressed).
    pub fn decode_bytes(bytes: &[u8]) -> Result<Profile, String> {
        if bytes.starts_with(&[0x1f, 0x8b]) {
            return Err("a gzip-compressed profile: gunzip it first".to_owned());
        }
        <Profile as prost::Message>::decode(bytes).map_err(|e| format!("not a pprof profile: {e}"))
    }

    /// The string-table entry `index` ("" if out of range, as pprof readers treat it).
    pub fn string(&self, index: i64) -> &str {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.string_table.get(i))
            .map_or("", String::as_str)
    }

    /// The position of the value named `name` (e.g. `inuse_space`) in each sample.
    pub fn value_index(&self, name: &str) -> Option<usize> {
        self.sample_type
            .iter()
            .position(|t| self.string(t.r#type) == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `build_id` is field 6 of pprof's `Mapping`: decoded from bytes written by hand, not by the
    /// declaration under test (key `6 << 3 | 0` = 0x30, then the varint 7).
    #[test]
    fn build_id_is_field_6() {
        let mapping = <Mapping as prost::Message>::decode(&[0x30, 0x07][..]).expect("decodes");
        assert_eq!(mapping.build_id, 7);
        assert_eq!(mapping.filename, 0);
    }
}
