//! The registry crates' `MiMalloc` methods (`mimalloc` 0.1's `extended` API, which
//! `mimalloc-safe` 0.1 shares), so that code written against them compiles here unchanged. Each
//! is a thin front over this crate's own function of the same meaning.

use crate::MiMalloc;

impl MiMalloc {
    /// mimalloc's version as one number, `major * 10000 + minor * 100 + patch` (`mi_version`):
    /// 30600 for 3.6.0. [`version`](crate::version) gives the three parts.
    ///
    /// ```
    /// use mimalloc::MiMalloc;
    ///
    /// let v = mimalloc::version();
    /// assert_eq!(MiMalloc.version(), v.major * 10_000 + v.minor * 100 + v.patch);
    /// ```
    pub fn version(&self) -> u32 {
        let v = crate::version();
        v.major * 10_000 + v.minor * 100 + v.patch
    }

    /// The number of bytes usable in the block at `ptr` (`mi_usable_size`), at least the size
    /// it was allocated with; 0 for a null pointer. The same as [`usable_size`](crate::usable_size).
    ///
    /// # Safety
    ///
    /// `ptr` is null or points into a live block allocated by mimalloc.
    ///
    /// ```
    /// use core::alloc::{GlobalAlloc, Layout};
    /// use mimalloc::MiMalloc;
    ///
    /// let layout = Layout::from_size_align(100, 8).unwrap();
    /// // SAFETY: a non-zero size; the block is live while its size is read, and freed once.
    /// unsafe {
    ///     let p = MiMalloc.alloc(layout);
    ///     assert!(MiMalloc.usable_size(p) >= 100);
    ///     MiMalloc.dealloc(p, layout);
    /// }
    /// ```
    pub unsafe fn usable_size(&self, ptr: *const u8) -> usize {
        // SAFETY: forwarded contract: `ptr` is null or inside a live mimalloc block.
        unsafe { crate::usable_size(ptr) }
    }

    /// The process's statistics as a JSON document, as the registry crate returns it: a
    /// [`StatsJson`] that dereferences to a `CStr`. Never an error here (the `Result` is the
    /// registry crate's signature); [`stats_json`](crate::stats_json) returns a `String`.
    ///
    /// ```
    /// let json = mimalloc::MiMalloc::stats_json().unwrap();
    /// let text = json.to_str().unwrap();
    /// assert!(text.starts_with('{') && text.contains("\"reserved\""));
    /// ```
    #[cfg(feature = "std")]
    pub fn stats_json() -> Result<StatsJson, &'static str> {
        std::ffi::CString::new(crate::stats_json())
            .map(|text| StatsJson { text })
            .map_err(|_| "mimalloc's statistics document contains a zero byte")
    }
}

/// mimalloc's statistics as a JSON document ([`MiMalloc::stats_json`]); dereferences to a
/// `CStr`. (`CStr` outside `std` needs Rust 1.64, hence the `std` feature, which `extended`
/// turns on.)
#[cfg(feature = "std")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatsJson {
    text: std::ffi::CString,
}

#[cfg(feature = "std")]
impl core::ops::Deref for StatsJson {
    type Target = std::ffi::CStr;

    fn deref(&self) -> &std::ffi::CStr {
        &self.text
    }
}
