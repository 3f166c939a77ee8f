//! `ncclUniqueId`: the 128 bytes every rank of a new communicator must share, a secret (it
//! begins with the root's bootstrap socket address), passed BY VALUE to `ncclCommInitRank`.

use core::fmt;

use static_assertions::{assert_eq_align, assert_eq_size, const_assert_eq};

use crate::nccl::types::error::Error;

/// Bytes in an `ncclUniqueId`.
pub const UNIQUE_ID_BYTES: usize = 128;

crate::c_struct! {
    /// `ncclUniqueId`: 128 opaque bytes that begin with the root's bootstrap socket address. A
    /// secret: `Debug` never prints it. A fresh id is needed for every communicator.
    ///
    /// `typedef struct { char internal[128]; } ncclUniqueId;`, passed by value
    /// ([`CArg`](crate::CArg)); never returned, nor `Copy` (a secret is not copied by accident),
    /// so neither `CRet` nor `CallbackValue`. `char` is `uint8_t` here: a `char` array is placed
    /// alike, signed or not (an aggregate of one-byte integers).
    #[derive(Clone, PartialEq, Eq)]
    pub struct UniqueId {
        internal: [u8; UNIQUE_ID_BYTES],
    }
    impl CArg;
}

assert_eq_size!(UniqueId, [u8; 128]);
assert_eq_align!(UniqueId, u8);
const_assert_eq!(UNIQUE_ID_BYTES, 128);

impl UniqueId {
    /// An id from its bytes (as exchanged between processes). Any length but 128 is an error.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let internal: [u8; UNIQUE_ID_BYTES] =
            bytes.try_into().map_err(|_| Error::InvalidUniqueId { len: bytes.len() })?;
        Ok(UniqueId { internal })
    }

    /// The 128 bytes, to send to the other ranks.
    pub fn as_bytes(&self) -> &[u8; UNIQUE_ID_BYTES] {
        &self.internal
    }

    /// A short digest to compare ids between processes without showing them: the first 8
    /// bytes of the id's SHA-256, in hex. Equal ids give equal digests; the digest reveals
    /// nothing usable about the id.
    pub fn fingerprint(&self) -> String {
        use sha2::Digest;
        let d = sha2::Sha256::digest(self.internal);
        d[..8].iter().map(|b| format!("{b:02x}")).collect()
    }

    pub(crate) fn zeroed() -> Self {
        UniqueId { internal: [0; UNIQUE_ID_BYTES] }
    }
}

impl fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("UniqueId(<128 bytes, redacted>)")
    }
}

/// The C type of `ncclUniqueId`.
#[cfg(test)]
pub(crate) fn unique_id_type() -> crate::Type {
    <UniqueId as crate::CArg>::c_type()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_id_checks_length_and_hides_bytes() {
        assert_eq!(UniqueId::from_bytes(&[1; 127]), Err(Error::InvalidUniqueId { len: 127 }));
        assert_eq!(UniqueId::from_bytes(&[]), Err(Error::InvalidUniqueId { len: 0 }));
        let id = UniqueId::from_bytes(&[0xAB; 128]).unwrap();
        assert_eq!(id.as_bytes(), &[0xAB; 128]);
        assert_eq!(id.fingerprint().len(), 16);
        assert_eq!(id.fingerprint(), UniqueId::from_bytes(&[0xAB; 128]).unwrap().fingerprint());
        assert_ne!(id.fingerprint(), UniqueId::from_bytes(&[0xAC; 128]).unwrap().fingerprint());
        let shown = format!("{id:?}");
        assert!(!shown.contains("171") && !shown.to_lowercase().contains("ab,"), "{shown}");
    }
}
