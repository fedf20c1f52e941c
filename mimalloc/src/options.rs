//! mimalloc's run-time options, as a typed enum per vendored version: [`MiOption`], read and
//! set by value; an option the vendored version lacks does not exist here.
//!
//! ```
//! use mimalloc::options::{MiOption, OptionKind};
//!
//! assert_eq!(MiOption::Verbose.kind(), OptionKind::Flag);
//! let delay = MiOption::PurgeDelay.get(); // milliseconds
//! assert_eq!(MiOption::from_name("purge_delay"), Some(MiOption::PurgeDelay));
//! # let _ = delay;
//! ```

use mimalloc_sys as ffi;

/// The value of an option: C's `long` (64 bits on Unix, 32 on Windows), as mimalloc stores it.
#[allow(clippy::incompatible_msrv)] // libc's own `c_long`, not the `core::ffi` one of Rust 1.64
pub type OptionValue = libc::c_long;

/// How an option's value reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OptionKind {
    /// On (non-zero) or off (0): use [`MiOption::is_enabled`], [`MiOption::enable`], ...
    Flag,
    /// A number: a count, milliseconds, a percentage, ...
    Number,
    /// A size, stored in KiB: [`MiOption::get_size`] reads it in bytes.
    SizeKiB,
    /// A size, stored in bytes (mimalloc 3's profiler and statistics options).
    SizeBytes,
}

macro_rules! options {
    ($(
        $(#[doc = $doc:literal])+
        $(#[cfg($cfg:meta)])?
        $variant:ident = $raw:ident, $name:literal, $kind:ident;
    )*) => {
        /// mimalloc's options (`mi_option_t`), for the vendored version: a variant exists only
        /// if the version has the option, so setting one it lacks is a compile error.
        ///
        /// Each option can also be set at start-up with the environment variable
        /// `MIMALLOC_<NAME>` (the upper-cased [`MiOption::name`], e.g.
        /// `MIMALLOC_PURGE_DELAY=0`), which is read the first time mimalloc reads the option;
        /// a value set through this API later wins. Build-time defaults can be baked into the
        /// library with `MIMALLOC_SYS_DEFAULT_<NAME>` (see `docs/beyond-malloc.md`, "Options").
        ///
        /// ```
        /// use mimalloc::options::MiOption;
        /// let before = MiOption::MaxWarnings.get();
        /// MiOption::MaxWarnings.set(before + 1);
        /// assert_eq!(MiOption::MaxWarnings.get(), before + 1);
        /// MiOption::MaxWarnings.set(before);
        /// assert_eq!(MiOption::PurgeDelay.name(), "purge_delay");
        /// ```
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum MiOption {
            $(
                $(#[doc = $doc])+
                $(#[cfg($cfg)])?
                $variant,
            )*
        }

        impl MiOption {
            /// Every option of the vendored version.
            pub const ALL: &'static [MiOption] = &[$($(#[cfg($cfg)])? MiOption::$variant,)*];

            /// The option's name, as in `mimalloc.h` without `mi_option_` and in the
            /// environment variable `MIMALLOC_<NAME>`.
            pub fn name(self) -> &'static str {
                match self {
                    $($(#[cfg($cfg)])? MiOption::$variant => $name,)*
                }
            }

            /// How the value reads: a flag, a number, or a size in KiB.
            pub fn kind(self) -> OptionKind {
                match self {
                    $($(#[cfg($cfg)])? MiOption::$variant => OptionKind::$kind,)*
                }
            }

            /// The `mi_option_t` value, for `mimalloc_sys`.
            pub fn as_raw(self) -> ffi::mi_option_t {
                match self {
                    $($(#[cfg($cfg)])? MiOption::$variant => ffi::$raw,)*
                }
            }
        }
    };
}

options! {
    /// Print error messages to stderr (default: on in `debug` builds, off otherwise).
    ShowErrors = mi_option_show_errors, "show_errors", Flag;
    /// Print statistics to stderr when the process exits.
    ShowStats = mi_option_show_stats, "show_stats", Flag;
    /// Print verbose messages (options, arenas, OS calls).
    Verbose = mi_option_verbose, "verbose", Flag;
    /// Commit arenas eagerly: 0 no, 1 yes, 2 only on systems that overcommit (Linux; default).
    ArenaEagerCommit = mi_option_arena_eager_commit, "arena_eager_commit", Number;
    /// Purge memory by decommitting it (default) rather than resetting it.
    PurgeDecommits = mi_option_purge_decommits, "purge_decommits", Flag;
    /// Use large (2 or 4 MiB) OS pages where the OS allows; implies eager commit.
    AllowLargeOsPages = mi_option_allow_large_os_pages, "allow_large_os_pages", Flag;
    /// Reserve this many huge (1 GiB) OS pages at start-up.
    ReserveHugeOsPages = mi_option_reserve_huge_os_pages, "reserve_huge_os_pages", Number;
    /// Reserve the huge OS pages on this NUMA node (-1: interleave).
    ReserveHugeOsPagesAt = mi_option_reserve_huge_os_pages_at, "reserve_huge_os_pages_at", Number;
    /// Reserve this much OS memory as an arena at start-up.
    ReserveOsMemory = mi_option_reserve_os_memory, "reserve_os_memory", SizeKiB;
    /// Milliseconds before freed memory is returned to the OS (0: at once, -1: never).
    PurgeDelay = mi_option_purge_delay, "purge_delay", Number;
    /// Use at most this many NUMA nodes (0: all).
    UseNumaNodes = mi_option_use_numa_nodes, "use_numa_nodes", Number;
    /// Take no memory from the OS beyond the arenas reserved so far: a process-wide limit.
    DisallowOsAlloc = mi_option_disallow_os_alloc, "disallow_os_alloc", Flag;
    /// A tag for the OS's memory accounting (macOS).
    OsTag = mi_option_os_tag, "os_tag", Number;
    /// Print at most this many error messages.
    MaxErrors = mi_option_max_errors, "max_errors", Number;
    /// Print at most this many warnings.
    MaxWarnings = mi_option_max_warnings, "max_warnings", Number;
    /// Release all memory at exit (for dynamically unloaded code; unsafe if blocks are used later).
    DestroyOnExit = mi_option_destroy_on_exit, "destroy_on_exit", Flag;
    /// The size of the arenas mimalloc reserves when it needs memory (1 GiB on 64-bit).
    ArenaReserve = mi_option_arena_reserve, "arena_reserve", SizeKiB;
    /// Multiplier of `purge_delay` for purging arenas.
    ArenaPurgeMult = mi_option_arena_purge_mult, "arena_purge_mult", Number;
    /// Allocate only from arenas given an explicit id (heaps in an arena), not the shared ones.
    DisallowArenaAlloc = mi_option_disallow_arena_alloc, "disallow_arena_alloc", Flag;
    /// Retry for this many milliseconds when the OS is out of memory (Windows).
    RetryOnOom = mi_option_retry_on_oom, "retry_on_oom", Number;
    /// Smallest size of guarded blocks (builds with guard pages only).
    GuardedMin = mi_option_guarded_min, "guarded_min", Number;
    /// Largest size of guarded blocks (builds with guard pages only).
    GuardedMax = mi_option_guarded_max, "guarded_max", Number;
    /// Guard one block in about this many requested bytes (mimalloc 3) or one in this many
    /// blocks (mimalloc 2); builds with guard pages only. Default in `guarded` builds: 1 MiB
    /// with mimalloc 3 (set by this crate's build; mimalloc's own is 0, nothing), 4000 with
    /// mimalloc 2 (0 in `debug` builds). mimalloc 3 samples only on its generic allocation
    /// path: a small request (up to 1 KiB, 512 bytes on 32-bit targets) served from a page's
    /// free list is never guarded and is counted only later, page by page, so the rate is
    /// approximate, and even 1 guards only the blocks that take the generic path.
    ///
    /// A heap reads the option when it is set up on a thread, and the main thread's default
    /// heap is set up before `main` (mimalloc starts from a constructor, or a TLS callback
    /// with MSVC). So [`set`](MiOption::set) reaches the threads and [`Heap`](crate::Heap)s
    /// set up after it, never the main thread's own allocations; `MIMALLOC_GUARDED_SAMPLE_RATE`
    /// or a baked `MIMALLOC_SYS_DEFAULT_GUARDED_SAMPLE_RATE` reach every thread.
    GuardedSampleRate = mi_option_guarded_sample_rate, "guarded_sample_rate", Number;
    /// Seed of the guarded-block sampling (0: random).
    GuardedSampleSeed = mi_option_guarded_sample_seed, "guarded_sample_seed", Number;
    /// Collect heaps every this many calls of the generic allocation path.
    GenericCollect = mi_option_generic_collect, "generic_collect", Number;
    /// Allow transparent huge pages (Linux and Android): 0 no (mimalloc disables them for the
    /// process), 1 yes, 2 (mimalloc 3) yes and purge in whole 2 MiB pages. Default, as this
    /// crate's build sets it: mimalloc 3: 1 on 64-bit Linux, where mimalloc's own advice on its
    /// arenas is compiled out and this crate advises only blocks of 2 MiB or more for huge
    /// pages (`docs/beyond-malloc.md`, "Option defaults"), 0 on 32-bit Linux and Android;
    /// mimalloc 2: 1 on Linux (mimalloc advises its segments), 0 on Android. Elsewhere
    /// mimalloc's own (2 with mimalloc 3, 1 with mimalloc 2), which does nothing there.
    /// `MIMALLOC_SYS_DEFAULT_ALLOW_THP` (baked) and `MIMALLOC_ALLOW_THP` override it; with 2 on
    /// 64-bit Linux only the large blocks are advised still, and purges go in 2 MiB pages.
    ///
    /// ```
    /// use mimalloc::options::MiOption;
    /// // What a default build reads, unless the environment or a baked default says otherwise.
    /// let build = if cfg!(target_os = "android") {
    ///     Some(0)
    /// } else if !cfg!(target_os = "linux") {
    ///     None
    /// } else if cfg!(all(target_pointer_width = "32", not(feature = "v2"))) {
    ///     Some(0)
    /// } else {
    ///     Some(1)
    /// };
    /// let overridden = std::env::var_os("MIMALLOC_ALLOW_THP").is_some()
    ///     || mimalloc_sys::BAKED_OPTION_DEFAULTS.iter().any(|(name, _)| *name == "allow_thp");
    /// if let (Some(default), false) = (build, overridden) {
    ///     assert_eq!(MiOption::AllowThp.get(), default);
    /// }
    /// ```
    AllowThp = mi_option_allow_thp, "allow_thp", Number;

    /// Allow visiting the blocks of exited threads' heaps (mimalloc 2).
    #[cfg(feature = "v2")]
    VisitAbandoned = mi_option_visit_abandoned, "visit_abandoned", Flag;
    /// Place guarded blocks right before the guard page, ignoring their alignment (mimalloc 2;
    /// mimalloc 3 calls it [`UnsafeGuardedPrecise`](MiOption::UnsafeGuardedPrecise)).
    #[cfg(feature = "v2")]
    GuardedPrecise = mi_option_guarded_precise, "guarded_precise", Flag;
    /// Commit segments eagerly (mimalloc 2).
    #[cfg(feature = "v2")]
    EagerCommit = mi_option_eager_commit, "eager_commit", Flag;
    /// Purge delayed purges when a thread ends (mimalloc 2).
    #[cfg(feature = "v2")]
    AbandonedPagePurge = mi_option_abandoned_page_purge, "abandoned_page_purge", Flag;
    /// The first this many segments of a thread are committed on demand (mimalloc 2).
    #[cfg(feature = "v2")]
    EagerCommitDelay = mi_option_eager_commit_delay, "eager_commit_delay", Number;
    /// Percentage of abandoned segments reclaimed per try (mimalloc 2).
    #[cfg(feature = "v2")]
    MaxSegmentReclaim = mi_option_max_segment_reclaim, "max_segment_reclaim", Number;
    /// Extend the purge delay on further frees (mimalloc 2).
    #[cfg(feature = "v2")]
    PurgeExtendDelay = mi_option_purge_extend_delay, "purge_extend_delay", Flag;
    /// Reclaim an abandoned segment when freeing into it (mimalloc 2).
    #[cfg(feature = "v2")]
    AbandonedReclaimOnFree = mi_option_abandoned_reclaim_on_free, "abandoned_reclaim_on_free", Flag;
    /// Target number of segments per thread (mimalloc 2, experimental).
    #[cfg(feature = "v2")]
    TargetSegmentsPerThread = mi_option_target_segments_per_thread, "target_segments_per_thread", Number;

    /// Reclaim abandoned pages on free: -1 never, 0 into their own heap, 1 always (mimalloc 3).
    /// This crate's build sets 0 (mimalloc's own default: 1): a thread that only frees what
    /// other threads allocated does not adopt their pages (BENCHMARKS.md#the-option-defaults).
    ///
    /// ```
    /// use mimalloc::options::MiOption;
    /// let overridden = std::env::var_os("MIMALLOC_PAGE_RECLAIM_ON_FREE").is_some()
    ///     || std::env::var_os("MIMALLOC_ABANDONED_RECLAIM_ON_FREE").is_some()
    ///     || mimalloc_sys::BAKED_OPTION_DEFAULTS
    ///         .iter()
    ///         .any(|(name, _)| *name == "page_reclaim_on_free");
    /// if !overridden {
    ///     assert_eq!(MiOption::PageReclaimOnFree.get(), 0);
    /// }
    /// ```
    #[cfg(not(feature = "v2"))]
    PageReclaimOnFree = mi_option_page_reclaim_on_free, "page_reclaim_on_free", Number;
    /// Keep this many full small pages per size class (mimalloc 3).
    #[cfg(not(feature = "v2"))]
    PageFullRetain = mi_option_page_full_retain, "page_full_retain", Number;
    /// Pages considered when looking for room (mimalloc 3).
    #[cfg(not(feature = "v2"))]
    PageMaxCandidates = mi_option_page_max_candidates, "page_max_candidates", Number;
    /// Virtual address bits to assume (mimalloc 3; 0: detect).
    #[cfg(not(feature = "v2"))]
    MaxVabits = mi_option_max_vabits, "max_vabits", Number;
    /// Commit the whole page map up front, to catch every invalid pointer (mimalloc 3).
    #[cfg(not(feature = "v2"))]
    PagemapCommit = mi_option_pagemap_commit, "pagemap_commit", Flag;
    /// Commit page memory on demand (mimalloc 3; 2: except on overcommitting systems).
    #[cfg(not(feature = "v2"))]
    PageCommitOnDemand = mi_option_page_commit_on_demand, "page_commit_on_demand", Number;
    /// Reclaim no more pages of the same heap when owning this many (mimalloc 3; -1: no limit).
    #[cfg(not(feature = "v2"))]
    PageMaxReclaim = mi_option_page_max_reclaim, "page_max_reclaim", Number;
    /// Reclaim pages across threads only while owning fewer than this many (mimalloc 3).
    #[cfg(not(feature = "v2"))]
    PageCrossThreadMaxReclaim = mi_option_page_cross_thread_max_reclaim, "page_cross_thread_max_reclaim", Number;
    /// The smallest purge (mimalloc 3; 0, the default: one arena slice, 64 KiB (32 KiB on
    /// 32-bit targets), or the huge page size (2 MiB) where `allow_thp` is 2 and the OS has
    /// transparent huge pages).
    #[cfg(not(feature = "v2"))]
    ArenaPurgeMinSize = mi_option_arena_purge_min_size, "arena_purge_min_size", SizeKiB;
    /// Free ranges at least this large are purged at once instead of after the purge delay
    /// (mimalloc 3). This crate's build sets 256 MiB on 64-bit targets (mimalloc's own: 32 MiB,
    /// 16 MiB on 32-bit targets, which this build keeps): freed buffers up to that size are
    /// kept for reuse until the purge delay has passed (BENCHMARKS.md#the-option-defaults).
    ///
    /// ```
    /// use mimalloc::options::MiOption;
    /// let overridden = std::env::var_os("MIMALLOC_ARENA_PURGE_IMMEDIATE_SIZE").is_some()
    ///     || mimalloc_sys::BAKED_OPTION_DEFAULTS
    ///         .iter()
    ///         .any(|(name, _)| *name == "arena_purge_immediate_size");
    /// if cfg!(target_pointer_width = "64") && !overridden {
    ///     assert_eq!(MiOption::ArenaPurgeImmediateSize.get_size(), 256 << 20);
    /// }
    /// ```
    #[cfg(not(feature = "v2"))]
    ArenaPurgeImmediateSize = mi_option_arena_purge_immediate_size, "arena_purge_immediate_size", SizeKiB;
    /// Larger objects come straight from the OS instead of an arena (mimalloc 3).
    #[cfg(not(feature = "v2"))]
    ArenaMaxObjectSize = mi_option_arena_max_object_size, "arena_max_object_size", SizeKiB;
    /// Associate the first arena with the local NUMA node (mimalloc 3, experimental).
    #[cfg(not(feature = "v2"))]
    ArenaIsNumaLocal = mi_option_arena_is_numa_local, "arena_is_numa_local", Flag;
    /// Place guarded blocks right before the guard page, ignoring their alignment (mimalloc 3;
    /// a block can then be misaligned, which Rust's allocators never hand out: they round the
    /// size up to the alignment first).
    #[cfg(not(feature = "v2"))]
    UnsafeGuardedPrecise = mi_option_unsafe_guarded_precise, "unsafe_guarded_precise", Flag;
    /// Merge a thread's statistics into its heap's on every collection (mimalloc 3).
    #[cfg(not(feature = "v2"))]
    StatsMergeOnCollect = mi_option_stats_merge_on_collect, "stats_merge_on_collect", Flag;
    /// Merge a thread's statistics into its heap's once this many bytes were allocated or
    /// freed (mimalloc 3; 0: never).
    #[cfg(not(feature = "v2"))]
    StatsMergeThreshold = mi_option_stats_merge_threshold, "stats_merge_threshold", SizeBytes;
    /// Bytes allocated between automatic heap-profile snapshots (mimalloc 3).
    #[cfg(not(feature = "v2"))]
    ProfileAllocInterval = mi_option_profile_alloc_interval, "profile_alloc_interval", SizeBytes;
    /// Growth of in-use bytes between automatic heap-profile snapshots (mimalloc 3; 0: off).
    #[cfg(not(feature = "v2"))]
    ProfileInuseInterval = mi_option_profile_inuse_interval, "profile_inuse_interval", SizeBytes;
    /// Seconds between automatic heap-profile snapshots (mimalloc 3; 0: off).
    #[cfg(not(feature = "v2"))]
    ProfileTimeInterval = mi_option_profile_time_interval, "profile_time_interval", Number;
    /// Mean bytes between sampled allocations of the heap profiler (mimalloc 3).
    #[cfg(not(feature = "v2"))]
    ProfileSampleRate = mi_option_profile_sample_rate, "profile_sample_rate", SizeBytes;
}

impl MiOption {
    /// The option whose [`name`](MiOption::name) is `name`, if the vendored version has it.
    ///
    /// ```
    /// use mimalloc::options::MiOption;
    /// assert_eq!(MiOption::from_name("purge_delay"), Some(MiOption::PurgeDelay));
    /// assert_eq!(MiOption::from_name("no_such_option"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<MiOption> {
        MiOption::ALL.iter().copied().find(|o| o.name() == name)
    }

    /// The current value (`mi_option_get`).
    pub fn get(self) -> OptionValue {
        // SAFETY: `as_raw` is a valid option of the linked version.
        unsafe { ffi::mi_option_get(self.as_raw()) }
    }

    /// The current value of a [`SizeKiB`](OptionKind::SizeKiB) option in bytes
    /// (`mi_option_get_size`); for other options, the value as a size.
    ///
    /// ```
    /// assert!(mimalloc::options::MiOption::ArenaReserve.get_size() >= 1 << 20);
    /// ```
    pub fn get_size(self) -> usize {
        // SAFETY: as in `get`.
        unsafe { ffi::mi_option_get_size(self.as_raw()) }
    }

    /// Sets the value (`mi_option_set`); it wins over the environment. Options read only at
    /// start-up (arena and huge-page reservations) take effect if set before the first
    /// allocation that needs them.
    pub fn set(self, value: OptionValue) {
        // SAFETY: as in `get`; mimalloc stores the value atomically.
        unsafe { ffi::mi_option_set(self.as_raw(), value) }
    }

    /// Sets the value only if it has not been set yet, by the environment or [`MiOption::set`]
    /// (`mi_option_set_default`).
    pub fn set_default(self, value: OptionValue) {
        // SAFETY: as in `get`.
        unsafe { ffi::mi_option_set_default(self.as_raw(), value) }
    }

    /// Whether the option is on (non-zero).
    pub fn is_enabled(self) -> bool {
        // SAFETY: as in `get`.
        unsafe { ffi::mi_option_is_enabled(self.as_raw()) }
    }

    /// Turns the option on (`mi_option_enable`).
    ///
    /// ```
    /// use mimalloc::options::MiOption;
    /// MiOption::ShowErrors.enable();
    /// assert!(MiOption::ShowErrors.is_enabled());
    /// MiOption::ShowErrors.disable();
    /// assert!(!MiOption::ShowErrors.is_enabled());
    /// ```
    pub fn enable(self) {
        // SAFETY: as in `get`.
        unsafe { ffi::mi_option_enable(self.as_raw()) }
    }

    /// Turns the option off (`mi_option_disable`).
    pub fn disable(self) {
        // SAFETY: as in `get`.
        unsafe { ffi::mi_option_disable(self.as_raw()) }
    }

    /// Turns the option on or off.
    pub fn set_enabled(self, on: bool) {
        // SAFETY: as in `get`.
        unsafe { ffi::mi_option_set_enabled(self.as_raw(), on) }
    }
}
