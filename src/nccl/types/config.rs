//! `ncclConfig_t`, written for the loaded library's version.
//!
//! NCCL versions the struct by `size`, `magic` and `version`: since 2.17 the library clamps
//! `size` to its own `sizeof`, rejects a bad magic, then resets every field newer than the
//! caller's `version`. Two fields landed in tail padding (the size did not change), so the
//! buffer is built for the loaded library: its size, its version code, and only fields it
//! knows. A field it does not know is refused, not silently dropped.

use core::ffi::c_void;
use std::ffi::CString;

use crate::nccl::types::error::Error;
use crate::nccl::types::version::Version;
#[cfg(test)]
use crate::nccl::types::versioned::UNDEF_INT;
use crate::nccl::types::versioned::{ctas_paired, field as f, set_int, FieldInfo, Image, Kind};
/// The header's magic.
pub const MAGIC: u32 = 0xcafe_beef;

/// Every field after the header, with its offset on 64-bit Linux and the version adding it.
pub(crate) const FIELDS: &[FieldInfo] = &[
    f("blocking", 16, Kind::Int, (2, 14, 0)),
    f("cgaClusterSize", 20, Kind::Int, (2, 17, 0)),
    f("minCTAs", 24, Kind::Int, (2, 17, 0)),
    f("maxCTAs", 28, Kind::Int, (2, 17, 0)),
    f("netName", 32, Kind::Ptr, (2, 17, 0)),
    f("splitShare", 40, Kind::Int, (2, 18, 0)),
    f("trafficClass", 44, Kind::Int, (2, 26, 0)),
    f("commName", 48, Kind::Ptr, (2, 27, 0)),
    f("collnetEnable", 56, Kind::Int, (2, 27, 0)),
    f("CTAPolicy", 60, Kind::Int, (2, 27, 0)),
    f("shrinkShare", 64, Kind::Int, (2, 27, 0)),
    f("nvlsCTAs", 68, Kind::Int, (2, 27, 0)),
    f("nChannelsPerNetPeer", 72, Kind::Int, (2, 28, 0)),
    f("nvlinkCentricSched", 76, Kind::Int, (2, 28, 0)),
    f("graphUsageMode", 80, Kind::Int, (2, 29, 0)),
    f("numRmaCtx", 84, Kind::Int, (2, 29, 0)),
    f("maxP2pPeers", 88, Kind::Int, (2, 30, 3)),
    f("graphStreamOrdering", 92, Kind::Int, (2, 30, 7)),
    f("launchOrderImplicit", 96, Kind::Int, (2, 31, 2)),
    f("numRmaSig", 100, Kind::Int, (2, 31, 2)),
    f("rmaEagerInit", 104, Kind::Int, (2, 31, 2)),
    f("hostCftMode", 108, Kind::Int, (2, 31, 2)),
    f("nvlsHostMode", 112, Kind::Int, (2, 32, 3)),
];

/// `ncclConfig_t` as the 2.32.3 header declares it (`struct ncclConfig_v23100`), kept only to
/// check [`FIELDS`] against the compiler's layout.
#[repr(C)]
#[allow(dead_code, non_snake_case)]
struct ConfigV23203 {
    size: usize,
    magic: u32,
    version: u32,
    blocking: i32,
    cgaClusterSize: i32,
    minCTAs: i32,
    maxCTAs: i32,
    netName: *const core::ffi::c_char,
    splitShare: i32,
    trafficClass: i32,
    commName: *const core::ffi::c_char,
    collnetEnable: i32,
    CTAPolicy: i32,
    shrinkShare: i32,
    nvlsCTAs: i32,
    nChannelsPerNetPeer: i32,
    nvlinkCentricSched: i32,
    graphUsageMode: i32,
    numRmaCtx: i32,
    maxP2pPeers: i32,
    graphStreamOrdering: i32,
    launchOrderImplicit: i32,
    numRmaSig: i32,
    rmaEagerInit: i32,
    hostCftMode: i32,
    nvlsHostMode: i32,
}

macro_rules! field_offsets_match {
    ($($i:literal => $f:ident),* $(,)?) => {$(
        static_assertions::const_assert_eq!(FIELDS[$i].offset, core::mem::offset_of!(ConfigV23203, $f));
    )*};
}
field_offsets_match!(
    0 => blocking, 1 => cgaClusterSize, 2 => minCTAs, 3 => maxCTAs, 4 => netName, 5 => splitShare,
    6 => trafficClass, 7 => commName, 8 => collnetEnable, 9 => CTAPolicy, 10 => shrinkShare, 11 => nvlsCTAs,
    12 => nChannelsPerNetPeer, 13 => nvlinkCentricSched, 14 => graphUsageMode, 15 => numRmaCtx,
    16 => maxP2pPeers, 17 => graphStreamOrdering, 18 => launchOrderImplicit, 19 => numRmaSig,
    20 => rmaEagerInit, 21 => hostCftMode, 22 => nvlsHostMode,
);
static_assertions::const_assert_eq!(core::mem::size_of::<ConfigV23203>(), 120);
static_assertions::const_assert_eq!(FIELDS.len(), 23);

/// `sizeof(ncclConfig_t)` in the header of `version`, or `None` before 2.14 (no config).
pub fn config_size(version: Version) -> Option<usize> {
    let v = |a, b, c| Version::new(a, b, c);
    Some(match version {
        x if x >= v(2, 32, 3) => 120,
        x if x >= v(2, 31, 2) => 112,
        x if x >= v(2, 30, 3) => 96,
        x if x >= v(2, 29, 0) => 88,
        x if x >= v(2, 28, 0) => 80,
        x if x >= v(2, 27, 0) => 72,
        x if x >= v(2, 18, 0) => 48,
        x if x >= v(2, 17, 0) => 40,
        x if x >= v(2, 14, 0) => 24,
        _ => return None,
    })
}

/// Communicator options, built up in Rust and written as `ncclConfig_t` for the loaded
/// library by [`Communicator::init_rank_config`](crate::nccl::Communicator::init_rank_config)
/// and the split/shrink calls. Unset fields stay `NCCL_CONFIG_UNDEF_*` (NCCL's defaults).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    ints: Vec<(&'static str, i32)>,
    net_name: Option<String>,
    comm_name: Option<String>,
    /// Names given to [`field`](Self::field) that are not integer fields, refused by `encode`.
    unknown: Vec<String>,
}

impl Config {
    /// All fields at NCCL's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    fn int(mut self, name: &'static str, value: i32) -> Self {
        set_int(&mut self.ints, name, value);
        self
    }

    /// `blocking`: 0 makes init and collectives return `ncclInProgress` and run on; poll
    /// [`Communicator::async_error`](crate::nccl::Communicator::async_error).
    pub fn blocking(self, blocking: bool) -> Self {
        self.int("blocking", i32::from(blocking))
    }

    /// `cgaClusterSize` (2.17).
    pub fn cga_cluster_size(self, size: i32) -> Self {
        self.int("cgaClusterSize", size)
    }

    /// `minCTAs` and `maxCTAs` together (2.17; NCCL rejects one without the other).
    pub fn ctas(self, min: i32, max: i32) -> Self {
        self.int("minCTAs", min).int("maxCTAs", max)
    }

    /// `netName` (2.17): the network module to use.
    pub fn net_name(mut self, name: &str) -> Self {
        self.net_name = Some(name.to_string());
        self
    }

    /// `splitShare` (2.18): share resources with the parent on split.
    pub fn split_share(self, share: bool) -> Self {
        self.int("splitShare", i32::from(share))
    }

    /// `trafficClass` (2.26).
    pub fn traffic_class(self, class: i32) -> Self {
        self.int("trafficClass", class)
    }

    /// `commName` (2.27).
    pub fn comm_name(mut self, name: &str) -> Self {
        self.comm_name = Some(name.to_string());
        self
    }

    /// Any integer field by its C name (for example `"nvlsCTAs"`, `"maxP2pPeers"`); a name
    /// that is not one is refused, by that name, when the config is written.
    pub fn field(mut self, c_name: &str, value: i32) -> Self {
        match FIELDS.iter().find(|f| f.name == c_name && f.kind == Kind::Int) {
            Some(f) => self.int(f.name, value),
            None => {
                self.unknown.push(c_name.to_string());
                self
            }
        }
    }

    /// True when `blocking` is set to 0.
    pub fn is_nonblocking(&self) -> bool {
        self.blocking_setting() == Some(false)
    }

    /// `blocking` as set (`None`: left to NCCL, which means blocking unless
    /// `NCCL_COMM_BLOCKING=0`).
    pub fn blocking_setting(&self) -> Option<bool> {
        self.ints.iter().find(|(n, _)| *n == "blocking").map(|(_, v)| *v != 0)
    }

    /// Writes the config for a library of `version`. Errors: the library has no config
    /// (before 2.14), a field it does not know, a name with a NUL byte, an unknown field, or
    /// only one of minCTAs/maxCTAs.
    pub fn encode(&self, version: Version) -> Result<ConfigBuffer, Error> {
        let size = config_size(version).ok_or_else(|| Error::Unsupported {
            symbol: "ncclConfig_t",
            needs: Version::new(2, 14, 0),
            loaded: version,
        })?;
        if let Some(name) = self.unknown.first() {
            return Err(Error::UnknownConfigField { name: name.clone() });
        }
        let mut image = Image::new(FIELDS, size, MAGIC, version, &[]);
        ctas_paired(&self.ints)?;
        // Every name below is in FIELDS (the setters take them from it), so `field` finds it;
        // the `ok_or` keeps that an error rather than a panic should it ever not be.
        let known = |image: &Image, name: &str| {
            image.field(name).ok_or_else(|| Error::UnknownConfigField { name: name.to_string() })?
        };
        for (name, value) in &self.ints {
            let field = known(&image, name)?;
            image.put(field.offset, &value.to_ne_bytes());
        }
        for (name, value) in [("netName", &self.net_name), ("commName", &self.comm_name)] {
            if let Some(s) = value {
                let field = known(&image, name)?;
                let c = CString::new(s.as_str()).map_err(|_| Error::NulInConfigString { field: field.name })?;
                image.put_string(field.offset, c);
            }
        }
        Ok(ConfigBuffer(image))
    }
}

/// An encoded `ncclConfig_t`, with the strings it points to. Keep it alive for the call.
#[derive(Debug)]
pub struct ConfigBuffer(Image);

impl ConfigBuffer {
    /// The bytes NCCL will read (`size` of them).
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }

    /// Pointer to pass as `ncclConfig_t *` (8-aligned).
    pub fn as_ptr(&mut self) -> *mut c_void {
        self.0.as_mut_ptr()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(b: &[u8], off: usize) -> u32 {
        u32::from_ne_bytes(b[off..off + 4].try_into().unwrap())
    }

    #[test]
    fn header_and_defaults_follow_the_loaded_version() {
        let c = Config::new().blocking(false).encode(Version::new(2, 18, 3)).unwrap();
        let b = c.as_bytes();
        assert_eq!(b.len(), 48);
        assert_eq!(u64::from_ne_bytes(b[0..8].try_into().unwrap()), 48);
        assert_eq!(word(b, 8), MAGIC);
        assert_eq!(word(b, 12), 21803);
        assert_eq!(word(b, 16), 0);
        assert_eq!(word(b, 20), UNDEF_INT as u32);
        assert_eq!(word(b, 40), UNDEF_INT as u32);
        // trafficClass (2.26) sits in 2.18's tail padding: left zero, not UNDEF.
        assert_eq!(word(b, 44), 0);
    }

    #[test]
    fn fields_the_library_does_not_know_are_refused() {
        let err = Config::new().comm_name("x").encode(Version::new(2, 18, 3)).unwrap_err();
        assert!(matches!(err, Error::Unsupported { symbol: "commName", .. }), "{err}");
        let err = Config::new().traffic_class(3).encode(Version::new(2, 19, 3)).unwrap_err();
        assert!(matches!(err, Error::Unsupported { symbol: "trafficClass", .. }), "{err}");
        assert!(Config::new().encode(Version::new(2, 13, 4)).is_err());
        let err = Config::new().field("minCTAs", 4).encode(Version::new(2, 20, 0)).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { .. }));
        assert!(Config::new().ctas(4, 8).encode(Version::new(2, 20, 0)).is_ok());
        // Refused by the name given ("<unknown>" before), also a field that is not an integer.
        for name in ["noSuchField", "netName", ""] {
            let err = Config::new().blocking(true).field(name, 1).encode(Version::new(2, 28, 3)).unwrap_err();
            assert_eq!(err, Error::UnknownConfigField { name: name.into() });
        }
        let c = Config::new().field("nvlsCTAs", 1).encode(Version::new(2, 28, 3)).unwrap();
        assert_eq!(word(c.as_bytes(), 68), 1);
        assert!(Config::new().net_name("a\0b").encode(Version::new(2, 28, 3)).is_err());
    }

    #[test]
    fn strings_point_into_the_buffer_owned_copies() {
        let c = Config::new().net_name("IB").comm_name("trainer").encode(Version::new(2, 28, 3)).unwrap();
        let b = c.as_bytes();
        assert_eq!(b.len(), 80);
        let p = u64::from_ne_bytes(b[32..40].try_into().unwrap()) as *const std::ffi::c_char;
        // SAFETY: points to a CString owned by `c`.
        assert_eq!(unsafe { std::ffi::CStr::from_ptr(p) }.to_str().unwrap(), "IB");
    }
}
