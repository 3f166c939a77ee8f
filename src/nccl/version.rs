//! NCCL's version number, as `ncclGetVersion` encodes it, and the library family (NCCL or RCCL).

use core::fmt;

/// An NCCL version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Major.
    pub major: u32,
    /// Minor.
    pub minor: u32,
    /// Patch.
    pub patch: u32,
}

impl Version {
    /// A version from its parts.
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        Version { major, minor, patch }
    }

    /// Decodes `ncclGetVersion`'s code: `X*1000 + Y*100 + Z` up to 2.8, `X*10000 + Y*100 + Z`
    /// from 2.9 on (told apart by `code >= 10000`).
    pub fn from_code(code: i32) -> Option<Self> {
        let c = u32::try_from(code).ok()?;
        let (major, rest) = if c >= 10000 { (c / 10000, c % 10000) } else { (c / 1000, c % 1000) };
        (major > 0).then_some(Version { major, minor: rest / 100, patch: rest % 100 })
    }

    /// The `NCCL_VERSION_CODE` of this version, as the library's header would define it.
    pub fn code(self) -> i32 {
        let v = if self.major <= 2 && self.minor <= 8 {
            self.major * 1000 + self.minor * 100 + self.patch
        } else {
            self.major * 10000 + self.minor * 100 + self.patch
        };
        v as i32
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// Which library family is loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// NVIDIA NCCL.
    Nccl,
    /// AMD RCCL (same ABI; `hipStream_t` streams; spells `ncclAllToAll`).
    Rccl,
}

impl fmt::Display for Flavor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Flavor::Nccl => "NCCL",
            Flavor::Rccl => "RCCL",
        })
    }
}
