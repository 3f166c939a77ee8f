//! The versioned C structs NCCL reads by `size`, `magic` and `version` (`ncclConfig_t`,
//! `ncclCollConfig_t`): a table of each struct's fields with the version that added them, and
//! the image of the struct as written for the loaded library — its `sizeof`, its version code,
//! every field it knows at the header initializer's value, a field it does not know refused.

use core::ffi::c_void;
use std::ffi::CString;

use crate::nccl::types::error::Error;
use crate::nccl::types::version::Version;

/// `NCCL_CONFIG_UNDEF_INT`: a field left to NCCL's default.
pub const UNDEF_INT: i32 = i32::MIN;

/// A field's C type, as far as writing it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `int`.
    Int,
    /// `uint64_t`.
    U64,
    /// A pointer.
    Ptr,
}

impl Kind {
    pub(crate) const fn width(self) -> usize {
        match self {
            Kind::Int => 4,
            Kind::U64 | Kind::Ptr => 8,
        }
    }
}

/// One field after the header: C name, offset on 64-bit Linux, type, the version that added it.
#[derive(Debug)]
pub(crate) struct FieldInfo {
    pub(crate) name: &'static str,
    pub(crate) offset: usize,
    pub(crate) kind: Kind,
    pub(crate) since: Version,
}

/// A [`FieldInfo`] in a table.
pub(crate) const fn field(name: &'static str, offset: usize, kind: Kind, since: (u32, u32, u32)) -> FieldInfo {
    FieldInfo { name, offset, kind, since: Version::new(since.0, since.1, since.2) }
}

/// The largest struct written.
const MAX_IMAGE: usize = 128;

/// A struct's bytes as written for one library, with the strings its pointers point to.
#[derive(Debug)]
pub(crate) struct Image {
    words: [u64; MAX_IMAGE / 8],
    len: usize,
    strings: Vec<CString>,
    fields: &'static [FieldInfo],
    version: Version,
}

impl Image {
    /// The header (`size`@0, `magic`@8, `version`@12) and every field `version` has at its
    /// header-initializer value: `UNDEF_INT`, null or 0, or `initial`'s value by name.
    pub(crate) fn new(
        fields: &'static [FieldInfo],
        size: usize,
        magic: u32,
        version: Version,
        initial: &[(&str, i32)],
    ) -> Self {
        let mut image =
            Image { words: [0; MAX_IMAGE / 8], len: size.min(MAX_IMAGE), strings: Vec::new(), fields, version };
        image.put(0, &(size as u64).to_ne_bytes());
        image.put(8, &magic.to_ne_bytes());
        image.put(12, &(version.code() as u32).to_ne_bytes());
        for f in fields.iter().filter(|f| has(f, version, size)) {
            match (initial.iter().find(|(n, _)| *n == f.name), f.kind) {
                (Some((_, v)), _) => image.put(f.offset, &v.to_ne_bytes()),
                (None, Kind::Int) => image.put(f.offset, &UNDEF_INT.to_ne_bytes()),
                (None, Kind::U64 | Kind::Ptr) => image.put(f.offset, &0u64.to_ne_bytes()),
            }
        }
        image
    }

    /// `name`'s field; [`Error::Unsupported`] (naming the version that added it) if the
    /// library does not know it, `None` if the table has no such field.
    pub(crate) fn field(&self, name: &str) -> Option<Result<&'static FieldInfo, Error>> {
        let fields: &'static [FieldInfo] = self.fields;
        let f = fields.iter().find(|f| f.name == name)?;
        Some(if has(f, self.version, self.len) {
            Ok(f)
        } else {
            Err(Error::Unsupported { symbol: f.name, needs: f.since, loaded: self.version })
        })
    }

    /// Writes `bytes` at `offset`.
    pub(crate) fn put(&mut self, offset: usize, bytes: &[u8]) {
        // SAFETY: the words array is MAX_IMAGE plain bytes.
        let all = unsafe { core::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast::<u8>(), MAX_IMAGE) };
        all[offset..offset + bytes.len()].copy_from_slice(bytes);
    }

    /// Points the pointer at `offset` to `s`, kept with the image.
    pub(crate) fn put_string(&mut self, offset: usize, s: CString) {
        // Stored first, then pointed to: moving a CString (a Box) after taking its pointer
        // would invalidate the pointer (Miri's borrow model says so, and it checks this).
        self.strings.push(s);
        let stored = self.strings.last().map_or(core::ptr::null(), |c| c.as_ptr());
        self.put(offset, &(stored as u64).to_ne_bytes());
    }

    /// The bytes NCCL will read (`size` of them).
    pub(crate) fn as_bytes(&self) -> &[u8] {
        // SAFETY: as in `put`; len <= MAX_IMAGE.
        unsafe { core::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.len) }
    }

    /// The struct's address (8-aligned).
    pub(crate) fn as_ptr(&self) -> *const c_void {
        self.words.as_ptr().cast()
    }

    /// The struct's address, for an API that takes it as mutable (8-aligned).
    pub(crate) fn as_mut_ptr(&mut self) -> *mut c_void {
        self.words.as_mut_ptr().cast()
    }
}

/// Whether a library of `version`, whose struct has `size` bytes, knows `f`.
fn has(f: &FieldInfo, version: Version, size: usize) -> bool {
    f.since <= version && f.offset + f.kind.width() <= size
}

/// Sets an integer field in a list of settings, replacing an earlier value.
pub(crate) fn set_int(ints: &mut Vec<(&'static str, i32)>, name: &'static str, value: i32) {
    ints.retain(|(n, _)| *n != name);
    ints.push((name, value));
}

/// NCCL rejects `minCTAs` without `maxCTAs` and the other way round: both or neither.
pub(crate) fn ctas_paired(ints: &[(&'static str, i32)]) -> Result<(), Error> {
    let has = |n: &str| ints.iter().any(|(f, _)| *f == n);
    if has("minCTAs") != has("maxCTAs") {
        return Err(Error::InvalidArgument { what: "minCTAs and maxCTAs must be set together" });
    }
    Ok(())
}
