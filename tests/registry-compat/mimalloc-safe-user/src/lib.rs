//! A product that uses the registry `mimalloc-safe` crate's API: the global allocator, and the
//! `extended` feature's `MiMalloc::version` and `usable_size`.

use mimalloc_safe::MiMalloc;

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

/// The mimalloc version this product runs on, as `major.minor.patch`.
pub fn allocator_version() -> String {
    let v = GLOBAL.version();
    format!("{}.{}.{}", v / 10_000, v / 100 % 100, v % 100)
}

/// The capacity the allocator really gave a string of `n` bytes.
pub fn usable_bytes(n: usize) -> usize {
    let s = String::with_capacity(n);
    // SAFETY: the string's buffer is a live block of the global allocator, which is mimalloc.
    unsafe { GLOBAL.usable_size(s.as_ptr()) }
}
