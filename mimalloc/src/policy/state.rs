//! The policy's states, each written once: the public answers ([`HugePages`],
//! [`BackgroundPurge`]), and `states!`, with which a part of the policy declares the states it
//! moves between as an enum that comes with its atomic cell, so that its code reads and changes
//! only the enum, never a number that stands for it.

/// Where the heap's huge pages stand ([`huge_pages`](super::huge_pages)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HugePages {
    /// The heap is in 4 KiB pages until the program has committed `from` bytes.
    Small {
        /// The threshold, in bytes.
        from: usize,
    },
    /// The heap's memory is advised for huge pages.
    Huge,
    /// The heap stays in 4 KiB pages: turned off (`MIMALLOC_HUGE_PAGES_FROM=off`,
    /// `MIMALLOC_ALLOW_THP=0`), or the heap is in an arena of mimalloc's own
    /// (`MIMALLOC_RESERVE_OS_MEMORY`). Blocks of 2 MiB or more are still advised one by one
    /// unless `allow_thp` is off.
    Off,
    /// This build leaves huge pages to mimalloc and the kernel: not 64-bit Linux, mimalloc 2,
    /// the `no_thp` or `no_policy` feature, or Miri.
    NotBuilt,
}

/// Where the background purge stands ([`background_purge`](super::background_purge)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BackgroundPurge {
    /// Starts its thread once the program has committed [`PURGE_FROM`](super::PURGE_FROM) bytes.
    Waiting,
    /// Its thread runs.
    Running,
    /// Turned off (`MIMALLOC_BACKGROUND_PURGE=0`,
    /// [`set_background_purge`](super::set_background_purge)).
    Off,
    /// The OS refused it a thread (out of threads, or a sandbox that forbids them).
    Refused,
    /// Not part of this build: other systems than Linux, Android, FreeBSD, macOS and Windows,
    /// mimalloc 2, the `no_policy` feature, or Miri.
    NotBuilt,
}

/// The memory limit the background purge works under ([`memory_limit`](super::memory_limit)):
/// the limit of the process's memory cgroup, which a container runtime sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MemoryLimit {
    /// Not read yet: the background purge reads it when its thread starts (once the program
    /// has committed [`PURGE_FROM`](super::PURGE_FROM) bytes).
    Unread,
    /// The process's cgroup and those above it set no memory limit, or there is no memory
    /// cgroup to read.
    Unlimited,
    /// The process may use `bytes` of memory: the lowest of `memory.max` and `memory.high`
    /// (cgroup v2) or of `memory.limit_in_bytes` (v1) over its cgroup and every cgroup above.
    Limited {
        /// The limit, in bytes.
        bytes: usize,
        /// The cgroup version it was read from: 1 or 2.
        cgroup: u8,
        /// The resident size from which freed memory goes back at once rather than after the
        /// purge delay: half the limit.
        purge_from: usize,
        /// How many of the background purge's looks found the process past `purge_from` and
        /// purged at once.
        prompt_purges: usize,
    },
    /// Not part of this build: where the background purge is not
    /// ([`BackgroundPurge::NotBuilt`]), and on Windows, macOS and FreeBSD, where it reads no
    /// limit (a job object's or a jail's is not read).
    NotBuilt,
}

/// Declares `enum $name { ... }` (`#[repr(u8)]`) and `$cell`, an atomic of it with the
/// operations of [`core::sync::atomic::AtomicU8`] the policy uses.
#[cfg(mimalloc_policy)]
macro_rules! states {
    (
        $(#[$doc:meta])*
        enum $name:ident in $cell:ident {
            $($(#[$variant_doc:meta])* $variant:ident,)+
        }
    ) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u8)]
        enum $name {
            $($(#[$variant_doc])* $variant,)+
        }

        impl $name {
            /// The state a byte of its cell holds (only ever written from a state).
            fn from_byte(byte: u8) -> Self {
                $(if byte == $name::$variant as u8 {
                    return $name::$variant;
                })+
                unreachable!("the cell of {} holds {byte}", stringify!($name))
            }
        }

        /// An atomic of the states of this module.
        struct $cell(core::sync::atomic::AtomicU8);

        #[allow(dead_code)] // each module uses the operations it needs
        impl $cell {
            const fn new(state: $name) -> Self {
                $cell(core::sync::atomic::AtomicU8::new(state as u8))
            }
            fn load(&self, order: core::sync::atomic::Ordering) -> $name {
                $name::from_byte(self.0.load(order))
            }
            fn store(&self, state: $name, order: core::sync::atomic::Ordering) {
                self.0.store(state as u8, order)
            }
            fn swap(&self, state: $name, order: core::sync::atomic::Ordering) -> $name {
                $name::from_byte(self.0.swap(state as u8, order))
            }
            /// Moves from `from` to `to` (with `order` if it does; a failed move reads nothing
            /// the caller relies on); whether it did.
            fn move_from(
                &self,
                from: $name,
                to: $name,
                order: core::sync::atomic::Ordering,
            ) -> bool {
                let relaxed = core::sync::atomic::Ordering::Relaxed;
                self.0
                    .compare_exchange(from as u8, to as u8, order, relaxed)
                    .is_ok()
            }
        }
    };
}

#[cfg(mimalloc_policy)]
pub(crate) use states;
