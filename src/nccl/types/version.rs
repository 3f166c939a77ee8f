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
    /// from 2.9 on (`NCCL_VERSION` in `nccl.h`). Only codes an NCCL 2 can report decode: 2000
    /// to 2899 (2.0.0 to 2.8.99) and 20900 to 29999 (2.9.0 to 2.99.99); anything else (1000,
    /// 2950, 20803, 99999999, a negative code) is no NCCL version and gives `None`.
    pub fn from_code(code: i32) -> Option<Self> {
        let (minor, patch) = match code {
            2000..=2899 => ((code - 2000) / 100, code % 100),
            20900..=29999 => ((code - 20000) / 100, code % 100),
            _ => return None,
        };
        Some(Version { major: 2, minor: minor as u32, patch: patch as u32 })
    }

    /// The `NCCL_VERSION_CODE` of this version, as the library's header would define it:
    /// `NCCL_VERSION(X, Y, Z)`. A version whose code does not fit an `int` (no NCCL has one)
    /// gives `i32::MAX`, the code of a version newer than any: the versioned structs this
    /// crate writes carry the code as the newest fields their writer knows.
    pub fn code(self) -> i32 {
        let (major, minor, patch) = (u64::from(self.major), u64::from(self.minor), u64::from(self.patch));
        // u64 holds the formula for every u32 input: 4.3e9 * 10000 < 1.8e19.
        let v = if major <= 2 && minor <= 8 {
            major * 1000 + minor * 100 + patch
        } else {
            major * 10000 + minor * 100 + patch
        };
        i32::try_from(v).unwrap_or(i32::MAX)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_formulas_decode_and_every_nccl_2_code_round_trips() {
        assert_eq!(Version::from_code(2708), Some(Version::new(2, 7, 8)));
        assert_eq!(Version::from_code(21803), Some(Version::new(2, 18, 3)));
        assert_eq!(Version::from_code(23203), Some(Version::new(2, 32, 3)));
        for code in (2000..=2899).chain(20900..=29999) {
            let v = Version::from_code(code).unwrap();
            assert_eq!((v.major, v.code()), (2, code), "{v}");
        }
    }

    #[test]
    fn codes_no_nccl_reports_are_refused() {
        // 1.0.0, 9999.99.99, 2.9.50 in the old formula, 2.8.3 in the new one, 3.0.0.
        for code in [0, -5, 999, 1000, 1999, 2900, 2950, 9999, 20803, 30000, 99_999_999, i32::MIN, i32::MAX] {
            assert_eq!(Version::from_code(code), None, "{code}");
        }
    }

    #[test]
    fn a_code_too_large_for_an_int_saturates_instead_of_overflowing() {
        assert_eq!(Version::new(u32::MAX, u32::MAX, u32::MAX).code(), i32::MAX);
        assert_eq!(Version::new(214_749, 0, 0).code(), i32::MAX);
        assert_eq!(Version::new(214_748, 36, 47).code(), i32::MAX);
        assert_eq!(Version::new(3, 0, 0).code(), 30000);
        assert_eq!(Version::new(2, 99, 99).code(), 29999);
    }
}
