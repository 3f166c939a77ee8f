//! NCCL's runtime parameters (`ncclParam*`, 2.30.4): the values NCCL resolved from its
//! environment variables and configuration file, read by key.
//!
//! Ownership, as NCCL defines it (v2.30.7-1 src/param/c_api.cc): a handle from `ncclParamBind`
//! points into NCCL's parameter registry and is never freed by the caller (:55-66); the
//! strings of `ncclParamGetStr` and `ncclParamGetParameter` and the key table of
//! `ncclParamGetAllParameterKeys` live in NCCL's thread-local buffers, valid until the next
//! such call on the same thread (:104-112, :123-153, :155-175). Every function here copies what
//! NCCL returned into Rust-owned memory before it returns, on the thread that made the call:
//! nothing is freed by us, nothing NCCL owns outlives the call.
//!
//! NCCL answers `ncclInvalidArgument` both for an unknown key (bind, get-parameter) and for a
//! typed read of another type (:72-82): the facade turns those into [`Error::ParamNotFound`]
//! and [`Error::ParamType`].

use core::ffi::{c_char, c_void, CStr};
use std::ffi::CString;

use crate::nccl::library::functions::{Function, Sym};
use crate::nccl::library::load::Nccl;
use crate::nccl::types::enums::NcclResult;
use crate::nccl::types::error::Error;

/// A runtime parameter, bound by key (`ncclParamHandle_t`). The handle is NCCL's (its
/// registry's entry) and lives as long as the library; the borrow of [`Nccl`] keeps it loaded.
#[derive(Debug)]
pub struct Param<'n> {
    nccl: &'n Nccl,
    handle: *mut c_void,
    key: String,
}

// SAFETY: the handle is an address in NCCL's registry, valid for the library's lifetime and
// read by NCCL under its own locks (ensureLoaded); nothing here is tied to a thread.
unsafe impl Send for Param<'_> {}
// SAFETY: as above; every read copies into the caller's memory.
unsafe impl Sync for Param<'_> {}

mod sealed {
    /// Reads a parameter with the getter of the implementing type.
    pub trait Sealed: Sized {
        fn read(p: &super::Param<'_>) -> Result<Self, crate::nccl::types::error::Error>;
    }
}

/// A type NCCL's typed getters read (`ncclParamGetI8` ... `ncclParamGetU64`).
pub trait ParamValue: sealed::Sealed + Copy + Default {
    /// The C type, for errors.
    const C_TYPE: &'static str;
}

macro_rules! param_values {
    ($($t:ty => $field:ident, $c:literal;)*) => {$(
        impl sealed::Sealed for $t {
            fn read(p: &Param<'_>) -> Result<Self, Error> {
                p.read_with(&p.nccl.functions().$field, $c)
            }
        }
        impl ParamValue for $t {
            const C_TYPE: &'static str = $c;
        }
    )*};
}
param_values! {
    i8 => param_get_i8, "int8_t";
    i16 => param_get_i16, "int16_t";
    i32 => param_get_i32, "int32_t";
    i64 => param_get_i64, "int64_t";
    u8 => param_get_u8, "uint8_t";
    u16 => param_get_u16, "uint16_t";
    u32 => param_get_u32, "uint32_t";
    u64 => param_get_u64, "uint64_t";
}

/// The largest raw value [`Param::raw`] reads (NCCL's values are scalars and strings).
const MAX_RAW: usize = 1 << 16;

fn key_cstring(key: &str) -> Result<CString, Error> {
    CString::new(key).map_err(|_| Error::ContainsNul { what: "a parameter key" })
}

impl Nccl {
    /// `ncclParamBind` (2.30.4): the runtime parameter `key` (e.g. `"NCCL_DEBUG_FILE"`);
    /// [`Error::ParamNotFound`] if NCCL has none of that name.
    pub fn param(&self, key: &str) -> Result<Param<'_>, Error> {
        let c = key_cstring(key)?;
        let mut handle: *mut c_void = core::ptr::null_mut();
        let out: *mut *mut c_void = &mut handle;
        // SAFETY: a valid out-pointer and a NUL-terminated key that outlives the call.
        let r = unsafe { self.functions().param_bind.call(self, (out, c.as_ptr())) }?;
        match r {
            r if r.is_success() && !handle.is_null() => Ok(Param { nccl: self, handle, key: key.to_string() }),
            NcclResult::INVALID_ARGUMENT => Err(Error::ParamNotFound { key: key.to_string() }),
            r => Err(self.failure(Sym::ParamBind, r, core::ptr::null_mut())),
        }
    }

    /// `ncclParamGetParameter` (2.30.4): the value of `key` as NCCL prints it (`"INFO"`,
    /// `"INIT,ENV"`, `"FALSE"`), copied; [`Error::ParamNotFound`] for an unknown key.
    pub fn param_string(&self, key: &str) -> Result<String, Error> {
        let c = key_cstring(key)?;
        let (mut value, mut len): (*const c_char, i32) = (core::ptr::null(), 0);
        let (vp, lp): (*mut *const c_char, *mut i32) = (&mut value, &mut len);
        // SAFETY: valid out-pointers and a NUL-terminated key that outlives the call.
        let r = unsafe { self.functions().param_get_parameter.call(self, (c.as_ptr(), vp, lp)) }?;
        match r {
            r if r.is_success() => {
                // SAFETY: on success NCCL points `value` at its thread-local string of `len`
                // bytes, valid until the next such call on this thread: copied at once.
                Ok(unsafe { copy_string(value, Some(len)) })
            }
            NcclResult::INVALID_ARGUMENT => Err(Error::ParamNotFound { key: key.to_string() }),
            r => Err(self.failure(Sym::ParamGetParameter, r, core::ptr::null_mut())),
        }
    }

    /// `ncclParamGetAllParameterKeys` (2.30.4): every registered parameter's key, copied. By
    /// NCCL's rule only the documented ones, unless `NCCL_PARAM_DUMP_ALL=1` is set.
    pub fn param_keys(&self) -> Result<Vec<String>, Error> {
        let (mut table, mut len): (*mut *const c_char, i32) = (core::ptr::null_mut(), 0);
        let (tp, lp): (*mut *mut *const c_char, *mut i32) = (&mut table, &mut len);
        // SAFETY: valid out-pointers.
        unsafe { self.check(&self.functions().param_get_all_parameter_keys, (tp, lp), core::ptr::null_mut()) }?;
        let n = usize::try_from(len).unwrap_or(0);
        if n == 0 || table.is_null() {
            return Ok(Vec::new());
        }
        // SAFETY: on success `table` points at `len` NUL-terminated strings in NCCL's
        // thread-local storage, valid until the next such call on this thread: copied at once.
        let keys = unsafe { core::slice::from_raw_parts(table, n) };
        // SAFETY: each entry is a NUL-terminated string (above).
        Ok(keys.iter().filter(|p| !p.is_null()).map(|&p| unsafe { copy_string(p, None) }).collect())
    }

    /// `ncclParamDumpAll` (2.30.4): NCCL prints every parameter to the process's standard
    /// output (its own `printf`).
    pub fn dump_params(&self) -> Result<(), Error> {
        // SAFETY: `void ncclParamDumpAll(void)`.
        unsafe { self.functions().param_dump_all.call(self, ()) }
    }
}

impl Param<'_> {
    /// The key this parameter was bound by.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The value, read with the getter of `T` (`ncclParamGetI32` for `i32`, ...);
    /// [`Error::ParamType`] if the parameter is of another type.
    pub fn get<T: ParamValue>(&self) -> Result<T, Error> {
        T::read(self)
    }

    fn read_with<T: Copy + Default>(
        &self,
        f: &Function<(*mut c_void, *mut T), NcclResult>,
        requested: &'static str,
    ) -> Result<T, Error> {
        let mut v = T::default();
        let out: *mut T = &mut v;
        // SAFETY: a handle NCCL gave for this library, a valid `T*` of the getter's C type
        // (the table declares each getter with its own `T`).
        let r = unsafe { f.call(self.nccl, (self.handle, out)) }?;
        self.result(r, f.sym(), requested)?;
        Ok(v)
    }

    /// `ncclParamGetStr`: a string parameter's value, copied; [`Error::ParamType`] for a
    /// parameter that is not a string (read those with [`Nccl::param_string`]).
    pub fn get_str(&self) -> Result<String, Error> {
        let mut s: *const c_char = core::ptr::null();
        let out: *mut *const c_char = &mut s;
        // SAFETY: a handle of this library, a valid out-pointer.
        let r = unsafe { self.nccl.functions().param_get_str.call(self.nccl, (self.handle, out)) }?;
        self.result(r, Sym::ParamGetStr, "const char *")?;
        // SAFETY: on success NCCL points `s` at its thread-local copy, valid until the next
        // `ncclParamGetStr` on this thread: copied at once.
        Ok(unsafe { copy_string(s, None) })
    }

    /// `ncclParamGet`: the value's bytes as NCCL stores it (a scalar's native bytes, a
    /// string with its NUL).
    pub fn raw(&self) -> Result<Vec<u8>, Error> {
        // NCCL refuses a buffer smaller than the value with ncclInvalidArgument and len 0
        // (src/include/param/param.h:93-103, :207-218): grow until it fits.
        let mut cap = 16usize;
        loop {
            let mut buf = vec![0u8; cap];
            let mut len = 0i32;
            let (bp, lp): (*mut c_void, *mut i32) = (buf.as_mut_ptr().cast(), &mut len);
            let max = i32::try_from(cap).unwrap_or(i32::MAX);
            // SAFETY: `buf` holds `max` writable bytes; valid out-pointer; handle of this library.
            let r = unsafe { self.nccl.functions().param_get.call(self.nccl, (self.handle, bp, max, lp)) }?;
            if r.is_success() {
                buf.truncate(usize::try_from(len).unwrap_or(0).min(cap));
                return Ok(buf);
            }
            if r != NcclResult::INVALID_ARGUMENT || cap >= MAX_RAW {
                return Err(self.nccl.failure(Sym::ParamGet, r, core::ptr::null_mut()));
            }
            cap *= 16;
        }
    }

    fn result(&self, r: NcclResult, sym: Sym, requested: &'static str) -> Result<(), Error> {
        match r {
            r if r.is_success() => Ok(()),
            NcclResult::INVALID_ARGUMENT => Err(Error::ParamType { key: self.key.clone(), requested }),
            r => Err(self.nccl.failure(sym, r, core::ptr::null_mut())),
        }
    }
}

/// Copies a C string NCCL returned (`len` bytes if given, else up to its NUL); lossy UTF-8.
///
/// # Safety
///
/// `p` is null or points at a NUL-terminated string (at least `len` bytes if `len` is given)
/// that stays valid during this call.
unsafe fn copy_string(p: *const c_char, len: Option<i32>) -> String {
    if p.is_null() {
        return String::new();
    }
    match len.and_then(|l| usize::try_from(l).ok()) {
        // SAFETY: the caller's contract: `l` readable bytes.
        Some(l) => String::from_utf8_lossy(unsafe { core::slice::from_raw_parts(p.cast::<u8>(), l) }).into_owned(),
        // SAFETY: the caller's contract: NUL-terminated.
        None => unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned(),
    }
}
