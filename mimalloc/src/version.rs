//! The version of the mimalloc library the program runs on: [`Version::linked`].

use core::fmt;
use mimalloc_sys as ffi;

/// The version of the mimalloc library linked into the program.
///
/// ```
/// let v = mimalloc::Version::linked();
/// assert!(v.major == 2 || v.major == 3);
/// println!("running on mimalloc {v}"); // e.g. "3.6.0"
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// 2 or 3.
    pub major: u32,
    /// Minor release.
    pub minor: u32,
    /// Patch release.
    pub patch: u32,
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl Version {
    /// The runtime version of mimalloc (`mi_version`), e.g. 3.6.0.
    ///
    /// This is the library that was linked, which the build always takes from the same
    /// vendored tree as the headers; see [`Version`] for an example.
    pub fn linked() -> Version {
        // SAFETY: `mi_version` has no preconditions.
        let v = unsafe { ffi::mi_version() } as u32;
        Version {
            major: v / 10_000,
            minor: v / 100 % 100,
            patch: v % 100,
        }
    }
}
