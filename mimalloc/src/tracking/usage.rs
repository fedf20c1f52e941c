//! What a budget scope has been charged: the value [`crate::budget`] hands its callers.

/// What a budget scope has been charged: the bytes requested while it was selected (see
/// [`crate::budget`] for what counts). `Copy`: the caller keeps it between the segments of
/// one piece of work, and compares it with its budget.
///
/// ```
/// use mimalloc::budget::Usage;
/// let usage = Usage::new();
/// assert_eq!(usage.bytes(), 0);
/// assert!(!usage.exceeds(0));
/// assert_eq!(usage, Usage::default());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    bytes: u64,
    /// The sum passed `u64::MAX`: over any budget, for good.
    overflowed: bool,
}

impl Usage {
    /// Nothing charged yet.
    pub const fn new() -> Self {
        Usage {
            bytes: 0,
            overflowed: false,
        }
    }

    /// The bytes charged, saturated at `u64::MAX`.
    pub const fn bytes(self) -> u64 {
        self.bytes
    }

    /// Whether the charged bytes are over `budget` (always, once their sum has overflowed).
    ///
    /// ```
    /// use mimalloc::budget::{self, Usage};
    /// use mimalloc::{MiMalloc, Tracking};
    ///
    /// #[global_allocator]
    /// static GLOBAL: Tracking<MiMalloc> = Tracking::new(MiMalloc);
    ///
    /// fn main() {
    ///     let mut usage = Usage::new();
    ///     let v = budget::scope(&mut usage, || vec![0u8; 1000]);
    ///     assert_eq!(usage.bytes(), 1000);
    ///     assert!(!usage.exceeds(1000));
    ///     assert!(usage.exceeds(999));
    ///     drop(v);
    /// }
    /// ```
    pub const fn exceeds(self, budget: u64) -> bool {
        self.overflowed || self.bytes > budget
    }

    /// `self` with `bytes` more charged.
    pub(super) fn charged(self, bytes: usize) -> Self {
        // `usize` is at most 64 bits on every target Rust supports.
        match self.bytes.checked_add(bytes as u64) {
            Some(sum) => Usage { bytes: sum, ..self },
            None => Usage {
                bytes: u64::MAX,
                overflowed: true,
            },
        }
    }

    /// `self` with `bytes` taken back that [`Usage::charged`] charged (an allocation that then
    /// failed). A sum that overflowed stays over every budget.
    pub(super) fn uncharged(self, bytes: usize) -> Self {
        if self.overflowed {
            return self;
        }
        debug_assert!(
            self.bytes >= bytes as u64,
            "taking back more than was charged"
        );
        Usage {
            bytes: self.bytes - bytes as u64,
            ..self
        }
    }
}
