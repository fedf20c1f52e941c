//! The policy's settings: their defaults, and the environment variables that change them when
//! the program starts, read and checked in one place.
//!
//! | variable | value | default |
//! |---|---|---|
//! | `MIMALLOC_HUGE_PAGES_FROM` | a size (`16MiB`, `512k`, `0`: from the start) or `off` | [`HUGE_PAGES_FROM`] |
//! | `MIMALLOC_BACKGROUND_PURGE` | `1`/`0` (`on`/`off`, `yes`/`no`, `true`/`false`) | on |
//!
//! A value that does not parse is reported on stderr and the default kept: a misspelt setting
//! must not pass unnoticed.

// Builds without the policy read no environment, but keep the parsers' tests.
#![cfg_attr(not(mimalloc_policy), allow(dead_code))]

/// The committed memory from which the heap's memory gets transparent huge pages: below it a
/// heap faults in 4 KiB pages and stays as small as it needs to be; above it the faults it
/// saves pay for the memory a huge page may hold unused (BENCHMARKS.md#the-memory-policy).
pub const HUGE_PAGES_FROM: usize = 16 << 20;

/// The committed memory from which the background purge starts its thread: a program that never
/// holds more has little to give back, and is spared the thread.
pub const PURGE_FROM: usize = 16 << 20;

/// The settings the program started with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Settings {
    /// Committed bytes from which the heap gets huge pages; `None` for never.
    pub(crate) huge_pages_from: Option<usize>,
    /// Whether the background purge may run.
    pub(crate) background_purge: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            huge_pages_from: Some(HUGE_PAGES_FROM),
            background_purge: true,
        }
    }
}

impl Settings {
    /// The defaults, changed by the environment where it says so.
    #[cfg(mimalloc_policy)]
    pub(crate) fn from_environment() -> Settings {
        let mut settings = Settings::default();
        if let Some(text) = variable(b"MIMALLOC_HUGE_PAGES_FROM\0") {
            match parse_size(text) {
                Ok(from) => settings.huge_pages_from = from,
                Err(()) => reject("MIMALLOC_HUGE_PAGES_FROM", text, "a size or `off`"),
            }
        }
        if let Some(text) = variable(b"MIMALLOC_BACKGROUND_PURGE\0") {
            match parse_flag(text) {
                Ok(on) => settings.background_purge = on,
                Err(()) => reject("MIMALLOC_BACKGROUND_PURGE", text, "1 or 0"),
            }
        }
        settings
    }
}

/// The value of the environment variable `name` (NUL-terminated), if it is set.
#[cfg(mimalloc_policy)]
fn variable(name: &'static [u8]) -> Option<&'static [u8]> {
    debug_assert_eq!(name.last(), Some(&0));
    // SAFETY: `name` is NUL-terminated; `getenv` returns null or a NUL-terminated string that
    // stays valid while the environment is not changed, and this runs when the program loads,
    // before its code can change it.
    let value = unsafe { libc::getenv(name.as_ptr().cast()) };
    // SAFETY: a non-null result of `getenv` is such a string (above).
    (!value.is_null()).then(|| unsafe { crate::output::c_str_bytes(value) })
}

/// Says on stderr that `name=text` is ignored, and what it should have been.
#[cfg(mimalloc_policy)]
fn reject(name: &str, text: &[u8], wanted: &str) {
    let text = core::str::from_utf8(text).unwrap_or("(not UTF-8)");
    super::io::say(true, format_args!("ignoring {name}={text}: not {wanted}"));
}

/// A size as mimalloc's options write it: a number of bytes with an optional unit (`k`, `KiB`,
/// `m`, `MiB`, `g`, `GiB`, any case, `B` optional), or `off`/`never` for none.
pub(crate) fn parse_size(text: &[u8]) -> Result<Option<usize>, ()> {
    let text = trim(text);
    if text.eq_ignore_ascii_case(b"off") || text.eq_ignore_ascii_case(b"never") {
        return Ok(None);
    }
    let digits = text.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return Err(());
    }
    let mut number: usize = 0;
    for digit in &text[..digits] {
        number = number
            .checked_mul(10)
            .and_then(|n| n.checked_add(usize::from(digit - b'0')))
            .ok_or(())?;
    }
    let unit = trim(&text[digits..]);
    const UNITS: [(&[u8], u32); 11] = [
        (b"", 0),
        (b"b", 0),
        (b"k", 10),
        (b"kb", 10),
        (b"kib", 10),
        (b"m", 20),
        (b"mb", 20),
        (b"mib", 20),
        (b"g", 30),
        (b"gb", 30),
        (b"gib", 30),
    ];
    let (_, shift) = UNITS
        .iter()
        .find(|(name, _)| unit.eq_ignore_ascii_case(name))
        .ok_or(())?;
    let bytes = number.checked_mul(1 << shift).ok_or(())?;
    Ok(Some(bytes))
}

/// A flag as mimalloc's options write it: `1`, `on`, `yes`, `true` or `0`, `off`, `no`,
/// `false`, any case.
pub(crate) fn parse_flag(text: &[u8]) -> Result<bool, ()> {
    let text = trim(text);
    let any = |words: [&[u8]; 4]| words.iter().any(|w| text.eq_ignore_ascii_case(w));
    if any([b"1", b"on", b"yes", b"true"]) {
        Ok(true)
    } else if any([b"0", b"off", b"no", b"false"]) {
        Ok(false)
    } else {
        Err(())
    }
}

fn trim(text: &[u8]) -> &[u8] {
    let start = text.iter().take_while(|b| b.is_ascii_whitespace()).count();
    let end = text.len()
        - text
            .iter()
            .rev()
            .take_while(|b| b.is_ascii_whitespace())
            .count();
    &text[start..end.max(start)]
}

#[cfg(test)]
mod tests {
    use super::{parse_flag, parse_size};

    #[test]
    fn sizes_read_as_mimalloc_writes_them() {
        assert_eq!(parse_size(b"0"), Ok(Some(0)));
        assert_eq!(parse_size(b"4096"), Ok(Some(4096)));
        assert_eq!(parse_size(b"512k"), Ok(Some(512 << 10)));
        assert_eq!(parse_size(b"16MiB"), Ok(Some(16 << 20)));
        assert_eq!(parse_size(b" 16 mb "), Ok(Some(16 << 20)));
        assert_eq!(parse_size(b"2G"), Ok(Some(2 << 30)));
        assert_eq!(parse_size(b"2gib"), Ok(Some(2 << 30)));
        assert_eq!(parse_size(b"7B"), Ok(Some(7)));
        assert_eq!(parse_size(b"off"), Ok(None));
        assert_eq!(parse_size(b"Never"), Ok(None));
    }

    #[test]
    fn what_is_not_a_size_is_refused() {
        for text in [
            &b""[..],
            b"MiB",
            b"16 furlongs",
            b"16MiBs",
            b"16Bi",
            b"-1",
            b"1.5GiB",
            b"99999999999999999999999",
            b"99999999999999999G",
        ] {
            assert_eq!(
                parse_size(text),
                Err(()),
                "{:?}",
                core::str::from_utf8(text)
            );
        }
    }

    #[test]
    fn flags_read_both_ways_and_refuse_the_rest() {
        for on in [&b"1"[..], b"on", b"YES", b"true"] {
            assert_eq!(parse_flag(on), Ok(true));
        }
        for off in [&b"0"[..], b"Off", b"no", b"FALSE"] {
            assert_eq!(parse_flag(off), Ok(false));
        }
        for neither in [&b""[..], b"2", b"maybe"] {
            assert_eq!(parse_flag(neither), Err(()));
        }
    }
}
