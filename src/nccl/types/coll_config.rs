//! `ncclCollConfig_t` (2.31.2), the per-collective config, written for the loaded library.
//!
//! Like `ncclConfig_t`, the struct is versioned by `size`, `magic` and `version` and only grows
//! at the end: 2.31.2 (`ncclCollConfig_v23100`) is 64 bytes, 2.32.3 (`ncclCollConfig_v23200`)
//! adds `launchCompletionEvent` at 64 (72 bytes). The buffer is written for the loaded
//! library: its size and version code, only fields it knows (a newer one is refused, not
//! dropped), every unset field at the header initializer's value (`NCCL_CONFIG_UNDEF_*`,
//! `forceAlgSelection` 1, `userProfilerTag` 0). The offsets are checked against the C compiler
//! reading both headers (tests/c/coll_config_layout.c).

use core::ffi::c_void;
use std::ffi::CString;

use crate::nccl::types::config::MAGIC;
use crate::nccl::types::error::Error;
use crate::nccl::types::version::Version;
#[cfg(test)]
use crate::nccl::types::versioned::UNDEF_INT;
use crate::nccl::types::versioned::{ctas_paired, field as f, set_int, FieldInfo, Image, Kind};

/// Every field after the header (`size`@0, `magic`@8, `version`@12), with its offset on 64-bit
/// Linux and the version that added it.
pub(crate) const FIELDS: &[FieldInfo] = &[
    f("ext", 16, Kind::Ptr, (2, 31, 2)),
    f("minCTAs", 24, Kind::Int, (2, 31, 2)),
    f("maxCTAs", 28, Kind::Int, (2, 31, 2)),
    f("nvlsCTAs", 32, Kind::Int, (2, 31, 2)),
    f("cgaClusterSize", 36, Kind::Int, (2, 31, 2)),
    f("algSelection", 40, Kind::Ptr, (2, 31, 2)),
    f("forceAlgSelection", 48, Kind::Int, (2, 31, 2)),
    f("CTAPolicy", 52, Kind::Int, (2, 31, 2)),
    f("userProfilerTag", 56, Kind::U64, (2, 31, 2)),
    f("launchCompletionEvent", 64, Kind::Ptr, (2, 32, 3)),
];

/// `ncclCollConfig_t` as the 2.32.3 header declares it, kept only to check [`FIELDS`] against
/// Rust's `#[repr(C)]` layout at compile time (the tests check it against the C compiler).
#[repr(C)]
#[allow(dead_code, non_snake_case)]
struct CollConfigV23200 {
    size: usize,
    magic: u32,
    version: u32,
    ext: *mut c_void,
    minCTAs: i32,
    maxCTAs: i32,
    nvlsCTAs: i32,
    cgaClusterSize: i32,
    algSelection: *const core::ffi::c_char,
    forceAlgSelection: i32,
    CTAPolicy: i32,
    userProfilerTag: u64,
    launchCompletionEvent: *mut c_void,
}

macro_rules! field_offsets_match {
    ($($i:literal => $f:ident),* $(,)?) => {$(
        static_assertions::const_assert_eq!(FIELDS[$i].offset, core::mem::offset_of!(CollConfigV23200, $f));
    )*};
}
field_offsets_match!(
    0 => ext, 1 => minCTAs, 2 => maxCTAs, 3 => nvlsCTAs, 4 => cgaClusterSize, 5 => algSelection,
    6 => forceAlgSelection, 7 => CTAPolicy, 8 => userProfilerTag, 9 => launchCompletionEvent,
);
static_assertions::const_assert_eq!(core::mem::size_of::<CollConfigV23200>(), 72);

/// `sizeof(ncclCollConfig_t)` in the header of `version` (`None` before 2.31.2: no such struct).
pub fn coll_config_size(version: Version) -> Option<usize> {
    match version {
        v if v >= Version::new(2, 32, 3) => Some(72),
        v if v >= Version::new(2, 31, 2) => Some(64),
        _ => None,
    }
}

/// The fields of `ncclCollConfig_t` in the header of `version`, by C name and offset, in
/// declaration order (the header's three first): for checks against the C compiler.
pub fn coll_config_fields(version: Version) -> Vec<(&'static str, usize)> {
    let mut out = vec![("size", 0), ("magic", 8), ("version", 12)];
    out.extend(FIELDS.iter().filter(|f| f.since <= version).map(|f| (f.name, f.offset)));
    out
}

/// Options of one collective call, written as `ncclCollConfig_t` for the loaded library by the
/// `*_config_raw` calls. Unset fields keep the header initializer's values (NCCL picks).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CollConfig {
    ints: Vec<(&'static str, i32)>,
    alg_selection: Option<String>,
    profiler_tag: Option<u64>,
    launch_completion_event: Option<usize>,
}

impl CollConfig {
    /// Every field at NCCL's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    fn int(mut self, name: &'static str, value: i32) -> Self {
        set_int(&mut self.ints, name, value);
        self
    }

    /// `minCTAs` and `maxCTAs` (`maxCTAs` at most the communicator's).
    pub fn ctas(self, min: i32, max: i32) -> Self {
        self.int("minCTAs", min).int("maxCTAs", max)
    }

    /// `nvlsCTAs`: the NVLS channel cap.
    pub fn nvls_ctas(self, ctas: i32) -> Self {
        self.int("nvlsCTAs", ctas)
    }

    /// `cgaClusterSize` (the same for every collective of a group).
    pub fn cga_cluster_size(self, size: i32) -> Self {
        self.int("cgaClusterSize", size)
    }

    /// `algSelection`: which algorithms this call may use (NCCL's selection string).
    pub fn alg_selection(mut self, selection: &str) -> Self {
        self.alg_selection = Some(selection.to_string());
        self
    }

    /// `forceAlgSelection` (default true: an unsatisfiable selection is an error).
    pub fn force_alg_selection(self, force: bool) -> Self {
        self.int("forceAlgSelection", i32::from(force))
    }

    /// `CTAPolicy`: an `NCCL_CTA_POLICY_*` bitmask.
    pub fn cta_policy(self, policy: i32) -> Self {
        self.int("CTAPolicy", policy)
    }

    /// `userProfilerTag`: handed to profiler plugins verbatim (values with the top bit set are
    /// reserved by NCCL and refused).
    pub fn user_profiler_tag(mut self, tag: u64) -> Self {
        self.profiler_tag = Some(tag);
        self
    }

    /// `launchCompletionEvent` (2.32.3): a `cudaEvent_t` made with `cudaEventDisableTiming`,
    /// recorded when the collective's kernel launched. Every rank passes one, or none.
    pub fn launch_completion_event(mut self, event: *mut c_void) -> Self {
        self.launch_completion_event = Some(event as usize);
        self
    }

    /// True when the config carries a CUDA event (the raw calls' contract then covers it).
    pub fn has_event(&self) -> bool {
        self.launch_completion_event.is_some()
    }

    /// Writes the config for a library of `version`. Errors: the library has no per-collective
    /// config (before 2.31.2), a field it does not know, a selection string with a NUL byte, a
    /// reserved profiler tag, or only one of minCTAs/maxCTAs.
    pub fn encode(&self, version: Version) -> Result<CollConfigBuffer, Error> {
        let size = coll_config_size(version).ok_or_else(|| Error::Unsupported {
            symbol: "ncclCollConfig_t",
            needs: Version::new(2, 31, 2),
            loaded: version,
        })?;
        // The header initializer's values: `NCCL_CONFIG_UNDEF_*`, `forceAlgSelection` 1.
        let mut image = Image::new(FIELDS, size, MAGIC, version, &[("forceAlgSelection", 1)]);
        ctas_paired(&self.ints)?;
        let field = |image: &Image, name: &str| image.field(name).expect("the setters name known fields");
        for (name, value) in &self.ints {
            let offset = field(&image, name)?.offset;
            image.put(offset, &value.to_ne_bytes());
        }
        if let Some(tag) = self.profiler_tag {
            if tag >> 63 != 0 {
                return Err(Error::ReservedProfilerTag { tag });
            }
            let offset = field(&image, "userProfilerTag")?.offset;
            image.put(offset, &tag.to_ne_bytes());
        }
        if let Some(event) = self.launch_completion_event {
            let offset = field(&image, "launchCompletionEvent")?.offset;
            image.put(offset, &(event as u64).to_ne_bytes());
        }
        if let Some(s) = &self.alg_selection {
            let offset = field(&image, "algSelection")?.offset;
            let c = CString::new(s.as_str()).map_err(|_| Error::ContainsNul { what: "algSelection" })?;
            image.put_string(offset, c);
        }
        Ok(CollConfigBuffer(image))
    }
}

/// An encoded `ncclCollConfig_t`, with the selection string it points to. Keep it alive for
/// the call.
#[derive(Debug)]
pub struct CollConfigBuffer(Image);

impl CollConfigBuffer {
    /// The bytes NCCL will read (`size` of them).
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }

    /// Pointer to pass as `const ncclCollConfig_t *` (8-aligned).
    pub fn as_ptr(&self) -> *const c_void {
        self.0.as_ptr()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i32_at(b: &[u8], off: usize) -> i32 {
        i32::from_ne_bytes(b[off..off + 4].try_into().unwrap())
    }
    fn u64_at(b: &[u8], off: usize) -> u64 {
        u64::from_ne_bytes(b[off..off + 8].try_into().unwrap())
    }

    #[test]
    fn written_for_the_loaded_version_with_the_initializer_defaults() {
        for (v, size) in [(Version::new(2, 31, 2), 64), (Version::new(2, 32, 3), 72)] {
            let c = CollConfig::new().encode(v).unwrap();
            let b = c.as_bytes();
            assert_eq!((b.len(), u64_at(b, 0)), (size, size as u64));
            assert_eq!(i32_at(b, 8) as u32, MAGIC);
            assert_eq!(i32_at(b, 12), v.code());
            assert_eq!(u64_at(b, 16), 0, "ext");
            for off in [24, 28, 32, 36, 52] {
                assert_eq!(i32_at(b, off), UNDEF_INT, "{off}");
            }
            assert_eq!((u64_at(b, 40), i32_at(b, 48), u64_at(b, 56)), (0, 1, 0));
        }
    }

    #[test]
    fn newer_fields_and_older_libraries_are_refused() {
        let err =
            CollConfig::new().launch_completion_event(8 as *mut c_void).encode(Version::new(2, 31, 2)).unwrap_err();
        assert!(matches!(err, Error::Unsupported { symbol: "launchCompletionEvent", .. }), "{err}");
        let err = CollConfig::new().encode(Version::new(2, 30, 7)).unwrap_err();
        assert!(matches!(err, Error::Unsupported { symbol: "ncclCollConfig_t", .. }), "{err}");
        assert!(CollConfig::new().int("minCTAs", 2).encode(Version::new(2, 32, 3)).is_err());
        assert!(CollConfig::new().user_profiler_tag(1 << 63).encode(Version::new(2, 32, 3)).is_err());
        assert!(CollConfig::new().alg_selection("ring\0").encode(Version::new(2, 32, 3)).is_err());
    }

    #[test]
    fn set_fields_land_at_their_offsets() {
        let c = CollConfig::new()
            .ctas(2, 16)
            .nvls_ctas(4)
            .cga_cluster_size(2)
            .alg_selection("allreduce:ring")
            .force_alg_selection(false)
            .cta_policy(1)
            .user_profiler_tag(0x1234_5678_9abc)
            .launch_completion_event(0x4556 as *mut c_void)
            .encode(Version::new(2, 32, 3))
            .unwrap();
        let b = c.as_bytes();
        assert_eq!([i32_at(b, 24), i32_at(b, 28), i32_at(b, 32), i32_at(b, 36)], [2, 16, 4, 2]);
        assert_eq!((i32_at(b, 48), i32_at(b, 52), u64_at(b, 56), u64_at(b, 64)), (0, 1, 0x1234_5678_9abc, 0x4556));
        // SAFETY: points to the CString the buffer owns.
        let s = unsafe { std::ffi::CStr::from_ptr(u64_at(b, 40) as usize as *const core::ffi::c_char) };
        assert_eq!(s.to_str().unwrap(), "allreduce:ring");
    }
}
