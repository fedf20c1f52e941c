//! A product that uses the registry `mimalloc` crate's whole API: the global allocator, and the
//! `extended` feature's `MiMalloc::version`, `usable_size` and `stats_json`.

use mimalloc::MiMalloc;

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

/// The mimalloc version this product runs on, as `major.minor.patch`.
pub fn allocator_version() -> String {
    let v = GLOBAL.version();
    format!("{}.{}.{}", v / 10_000, v / 100 % 100, v % 100)
}

/// The capacity the allocator really gave a vector of `n` bytes.
pub fn usable_bytes(n: usize) -> usize {
    let v: Vec<u8> = Vec::with_capacity(n);
    // SAFETY: the vector's buffer is a live block of the global allocator, which is mimalloc.
    unsafe { GLOBAL.usable_size(v.as_ptr()) }
}

/// The allocator's statistics, for a metrics endpoint.
pub fn stats_document() -> String {
    let json = MiMalloc::stats_json().expect("statistics");
    json.to_str().expect("UTF-8").to_owned()
}
