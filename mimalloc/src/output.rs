//! Routes mimalloc's text output (statistics, options) into a Rust writer.

use core::ffi::c_void;
use core::fmt;
use mimalloc_sys as ffi;

/// What the C callback writes into.
struct Sink<'a> {
    out: &'a mut dyn fmt::Write,
    result: fmt::Result,
}

/// A panic must not unwind into mimalloc's C frames: if the writer panics, this guard, dropped
/// during the unwinding, panics again, which aborts the process.
struct AbortOnUnwind;

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        panic!("a panic in the writer given to mimalloc cannot unwind through mimalloc's C code");
    }
}

/// The `mi_output_fun` mimalloc calls with each piece of text.
///
/// # Safety
///
/// `msg` must be null or a NUL-terminated string, and `arg` the `Sink` given to mimalloc by
/// `with_output`, during that call.
unsafe extern "C" fn write_to_sink(msg: *const CChar, arg: *mut c_void) {
    let guard = AbortOnUnwind;
    // SAFETY: `arg` is the `&mut Sink` passed by `with_output`, alive and unaliased for the
    // duration of the mimalloc call that invokes this function.
    let sink = unsafe { &mut *arg.cast::<Sink<'_>>() };
    if sink.result.is_ok() && !msg.is_null() {
        // SAFETY: mimalloc passes a NUL-terminated string that lives during this call.
        let bytes = unsafe { c_str_bytes(msg) };
        sink.result = write_lossy(sink.out, bytes);
    }
    core::mem::forget(guard);
}

/// An `mi_output_fun` that drops its text.
///
/// # Safety
///
/// None: it reads neither argument. (`unsafe` only to have the type mimalloc expects.)
#[cfg(not(feature = "v2"))]
pub(crate) unsafe extern "C" fn discard(_msg: *const CChar, _arg: *mut c_void) {}

/// `core::ffi::c_char` needs Rust 1.64; libc's is the same type. (Clippy mistakes libc's type
/// for the re-export of `core::ffi`'s that libc uses on newer compilers.)
#[allow(clippy::incompatible_msrv)]
type CChar = libc::c_char;

/// The bytes of a NUL-terminated C string (`core::ffi::CStr` needs Rust 1.64).
///
/// # Safety
///
/// `s` must point to a NUL-terminated string that outlives the returned slice.
pub(crate) unsafe fn c_str_bytes<'a>(s: *const CChar) -> &'a [u8] {
    let mut len = 0;
    // SAFETY: every byte up to and including the terminating NUL is readable (caller contract).
    while unsafe { *s.add(len) } != 0 {
        len += 1;
    }
    // SAFETY: the `len` bytes before the NUL are readable and live as long as the string.
    unsafe { core::slice::from_raw_parts(s.cast::<u8>(), len) }
}

/// Writes `bytes` as UTF-8, replacing invalid sequences with U+FFFD (mimalloc writes ASCII,
/// but a path or a user message could be anything).
fn write_lossy(out: &mut dyn fmt::Write, mut bytes: &[u8]) -> fmt::Result {
    loop {
        match core::str::from_utf8(bytes) {
            Ok(text) => return out.write_str(text),
            Err(e) => {
                let (valid, rest) = bytes.split_at(e.valid_up_to());
                // SAFETY: `from_utf8` checked that the first `valid_up_to` bytes are UTF-8.
                out.write_str(unsafe { core::str::from_utf8_unchecked(valid) })?;
                out.write_char(char::REPLACEMENT_CHARACTER)?;
                let skip = e.error_len().unwrap_or(rest.len());
                bytes = &rest[skip..];
            }
        }
    }
}

/// Calls `print(callback, arg)`, a mimalloc printing function, with its output sent to `out`.
pub(crate) fn with_output(
    out: &mut dyn fmt::Write,
    print: impl FnOnce(ffi::mi_output_fun, *mut c_void),
) -> fmt::Result {
    let mut sink = Sink {
        out,
        result: Ok(()),
    };
    print(
        Some(write_to_sink),
        (&mut sink as *mut Sink<'_>).cast::<c_void>(),
    );
    sink.result
}

/// Adapts an `std::io::Write` to `fmt::Write`, keeping the I/O error.
#[cfg(feature = "std")]
pub(crate) struct IoWriter<'a, W: std::io::Write + ?Sized> {
    pub(crate) inner: &'a mut W,
    pub(crate) error: Option<std::io::Error>,
}

#[cfg(feature = "std")]
impl<W: std::io::Write + ?Sized> fmt::Write for IoWriter<'_, W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.inner.write_all(s.as_bytes()).map_err(|e| {
            self.error = Some(e);
            fmt::Error
        })
    }
}
