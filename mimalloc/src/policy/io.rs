//! What the policy reads of the process, and what it tells it: the memory mimalloc has
//! committed, which every decision of the policy follows, and the lines it writes to stderr.

/// Writes one line to stderr, as mimalloc writes its messages: a warning always, a note only
/// while mimalloc's `verbose` option is on (`MIMALLOC_VERBOSE=1`). No allocation: the line is
/// formatted on the stack (and cut at 200 bytes).
pub(crate) fn say(warning: bool, args: core::fmt::Arguments<'_>) {
    use core::fmt::Write;
    /// A line on the stack.
    struct Line {
        bytes: [u8; 200],
        len: usize,
    }
    impl Write for Line {
        fn write_str(&mut self, text: &str) -> core::fmt::Result {
            let room = self.bytes.len() - self.len;
            let take = text.len().min(room);
            self.bytes[self.len..self.len + take].copy_from_slice(&text.as_bytes()[..take]);
            self.len += take;
            Ok(())
        }
    }
    // SAFETY: reading an option has no precondition.
    if !warning && !unsafe { mimalloc_sys::mi_option_is_enabled(mimalloc_sys::mi_option_verbose) } {
        return;
    }
    let mut line = Line {
        bytes: [0; 200],
        len: 0,
    };
    let kind = if warning { "warning: " } else { "" };
    let _ = write!(line, "mimalloc: {kind}policy: {args}");
    line.len = line.len.min(line.bytes.len() - 1);
    line.bytes[line.len] = b'\n';
    // SAFETY: writes `len + 1` initialized bytes of a live buffer; a failed write to stderr has
    // no better place to be reported.
    unsafe { libc::write(2, line.bytes.as_ptr().cast(), (line.len + 1) as _) };
}

/// The memory mimalloc has committed, as its statistics count it (`mi_process_info`).
pub(crate) fn committed() -> usize {
    let mut committed = 0;
    let none = core::ptr::null_mut();
    // SAFETY: every pointer is null (not wanted) or a live, writable `usize`.
    unsafe {
        mimalloc_sys::mi_process_info(none, none, none, none, none, &mut committed, none, none)
    };
    committed
}
