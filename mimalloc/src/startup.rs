//! What the crate runs when the program (or the library that holds this crate) is loaded, in
//! the one order it needs: the memory policy first, which reserves the heap's first arena before
//! anything allocates, then the heap profile's environment, whose reading allocates.
//!
//! An ELF initializer entry of priority 102: after mimalloc's own initializer (101), which reads
//! its options, and before any default-priority constructor of the program could allocate. On
//! Windows an entry of the CRT's initializer table (`.CRT$XCU`, where C++ constructors go), which
//! runs after mimalloc's start in the loader's thread-local-storage callback. On macOS an entry
//! of the image's initializers (`__mod_init_func`), which Mach-O runs in link order, not by
//! priority: before or after mimalloc's own, which nothing here needs (mimalloc reads its
//! options when first asked). Each part's shut-down is next to its code (`policy/load.rs`,
//! `policy/purge/unix.rs`, `profile/environment.rs`), ordered around mimalloc's there.

#[used]
#[cfg_attr(windows, link_section = ".CRT$XCU")]
#[cfg_attr(target_os = "macos", link_section = "__DATA,__mod_init_func")]
#[cfg_attr(
    not(any(windows, target_os = "macos")),
    link_section = ".init_array.00102"
)]
static LOAD: extern "C" fn() = load;

extern "C" fn load() {
    #[cfg(mimalloc_policy)]
    crate::policy::load();
    #[cfg(all(feature = "profile", not(feature = "v2"), target_os = "linux"))]
    crate::profile::environment::load();
}
