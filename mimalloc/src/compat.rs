//! The registry crates' `MiMalloc` methods (`mimalloc` 0.1's `extended` API, which
//! `mimalloc-safe` 0.1 shares), so that code written against them compiles here unchanged.
//! Their names and signatures are those crates', fixed: each is a thin front over this crate's
//! own function of the same meaning, which lives under its concept (`Version::linked`,
//! `heap::usable_size`, `stats::json`), so no other item reuses one of these names.

#[cfg(feature = "std")]
use crate::stats::{self, StatsJson};
use crate::{heap, MiMalloc, Version};

impl MiMalloc {
    /// mimalloc's version as one number, `major * 10000 + minor * 100 + patch` (`mi_version`):
    /// 30600 for 3.6.0. [`Version::linked`] gives the three parts.
    ///
    /// ```
    /// use mimalloc::{MiMalloc, Version};
    ///
    /// let v = Version::linked();
    /// assert_eq!(MiMalloc.version(), v.major * 10_000 + v.minor * 100 + v.patch);
    /// ```
    pub fn version(&self) -> u32 {
        let v = Version::linked();
        v.major * 10_000 + v.minor * 100 + v.patch
    }

    /// The number of bytes usable in the block at `ptr` (`mi_usable_size`), at least the size
    /// it was allocated with; 0 for a null pointer. The same as [`heap::usable_size`].
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
        unsafe { heap::usable_size(ptr) }
    }

    /// The process's statistics as a JSON document, as the registry crate returns it: a
    /// [`StatsJson`] that dereferences to a `CStr`. Never an error here (the `Result` is the
    /// registry crate's signature); [`stats::json`] returns a `String`.
    ///
    /// ```
    /// let json = mimalloc::MiMalloc::stats_json().unwrap();
    /// let text = json.to_str().unwrap();
    /// assert!(text.starts_with('{') && text.contains("\"reserved\""));
    /// ```
    #[cfg(feature = "std")]
    pub fn stats_json() -> Result<StatsJson, &'static str> {
        std::ffi::CString::new(stats::json())
            .map(|text| StatsJson { text })
            .map_err(|_| "mimalloc's statistics document contains a zero byte")
    }
}
