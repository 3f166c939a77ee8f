//! `ncclSetEncryption` (2.32.3): encryption of NCCL's TCP sockets with a pre-shared key.
//!
//! `ncclEncryptionConfig_t` (`ncclEncryptionConfig_v23200` in nccl.h) is versioned like
//! `ncclConfig_t`: `size` at 0, `magic` NCCL_API_MAGIC (0xcafebeef) at 8, `version` at 12, then
//! `mode` at 16 and the key `psk` (a `const char *`) at 24; 32 bytes on 64-bit Linux. NCCL
//! 2.32.3 refuses a wrong magic, an unknown mode and a key shorter than 32 bytes with
//! `ncclInvalidArgument` and a last-error text, and copies the key (its `ncclSetEncryption`
//! calls strlen, calloc and memcpy, and frees the copy it replaces): the facade's copy is
//! wiped and freed when the call returns.
//!
//! A build without TLS support accepts the key and fails later, when a connection is made
//! ("NCCL was built without TLS support but a pre-shared key was configured", in the 2.32.3
//! library's strings): nothing at this call can tell. Before 2.32.3 the call is the typed
//! [`Error::Unsupported`]: no key is silently ignored.

use std::ffi::CString;

use crate::nccl::library::functions::Sym;
use crate::nccl::library::load::Nccl;
use crate::nccl::types::error::Error;

/// NCCL_API_MAGIC.
const MAGIC: u32 = 0xcafe_beef;

/// What `ncclSetEncryption` is asked for.
pub enum Encryption {
    /// `NCCL_ENCRYPTION_MODE_NONE`: plaintext sockets.
    None,
    /// `NCCL_ENCRYPTION_MODE_PSK`: TLS with this pre-shared key (NCCL wants at least 32 bytes).
    PreSharedKey(PreSharedKey),
}

/// A pre-shared key: a secret, never printed, wiped when dropped.
pub struct PreSharedKey(Vec<u8>);

impl PreSharedKey {
    /// The key; [`Error::ContainsNul`] if it contains a NUL byte (NCCL reads it as a C
    /// string).
    pub fn new(key: impl Into<Vec<u8>>) -> Result<Self, Error> {
        let key = key.into();
        if key.contains(&0) {
            return Err(Error::ContainsNul { what: "a pre-shared key" });
        }
        Ok(PreSharedKey(key))
    }
}

impl core::fmt::Debug for PreSharedKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "PreSharedKey({} bytes)", self.0.len())
    }
}

impl core::fmt::Debug for Encryption {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Encryption::None => f.write_str("None"),
            Encryption::PreSharedKey(k) => f.debug_tuple("PreSharedKey").field(k).finish(),
        }
    }
}

/// Overwrites `bytes` in a way the optimiser keeps.
fn wipe(bytes: &mut [u8]) {
    for b in bytes.iter_mut() {
        // SAFETY: a valid, aligned `u8` of the slice.
        unsafe { core::ptr::write_volatile(b, 0) };
    }
    core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
}

impl Drop for PreSharedKey {
    fn drop(&mut self) {
        wipe(&mut self.0);
    }
}

/// `ncclEncryptionConfig_t` as nccl.h lays it out.
#[repr(C)]
struct RawEncryptionConfig {
    size: usize,
    magic: u32,
    version: u32,
    mode: i32,
    /// The padding before `psk`, zeroed (no uninitialised byte crosses).
    padding: u32,
    psk: *const core::ffi::c_char,
}

static_assertions::const_assert_eq!(core::mem::size_of::<RawEncryptionConfig>(), 32);
static_assertions::const_assert_eq!(core::mem::offset_of!(RawEncryptionConfig, psk), 24);

impl Nccl {
    /// `ncclSetEncryption` (2.32.3): process-wide encryption of NCCL's TCP sockets, for the
    /// communicators made after it.
    pub fn set_encryption(&self, encryption: &Encryption) -> Result<(), Error> {
        if !self.has_sym(Sym::SetEncryption) {
            return Err(self.unsupported(Sym::SetEncryption));
        }
        let key = match encryption {
            Encryption::None => None,
            // A NUL-terminated copy, wiped below.
            Encryption::PreSharedKey(k) => {
                Some(CString::new(k.0.clone()).map_err(|_| Error::ContainsNul { what: "a pre-shared key" })?)
            }
        };
        let config = RawEncryptionConfig {
            size: core::mem::size_of::<RawEncryptionConfig>(),
            magic: MAGIC,
            version: self.version().code() as u32,
            mode: i32::from(key.is_some()),
            padding: 0,
            psk: key.as_ref().map_or(core::ptr::null(), |k| k.as_ptr()),
        };
        let ptr: *const RawEncryptionConfig = &config;
        // SAFETY: a valid `const ncclEncryptionConfig_t*` of the header's layout; the key is a
        // NUL-terminated string alive for the call (NCCL copies it).
        let r = unsafe { self.functions().set_encryption.call(self, (ptr.cast(),)) };
        if let Some(k) = key {
            wipe(&mut k.into_bytes_with_nul());
        }
        let r = r?;
        if !r.is_success() {
            return Err(self.failure(Sym::SetEncryption, r, core::ptr::null_mut()));
        }
        Ok(())
    }
}
