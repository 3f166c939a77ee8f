//! `UniqueId::from_bytes`: exactly 128 bytes make an id (the same bytes back), anything else
//! is `Error::InvalidUniqueId` with the length.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nccl_trampoline::nccl::{Error, UniqueId};

fuzz_target!(|bytes: &[u8]| {
    match UniqueId::from_bytes(bytes) {
        Ok(id) => assert_eq!(&id.as_bytes()[..], bytes),
        Err(Error::InvalidUniqueId { len }) => assert!(len == bytes.len() && len != 128),
        Err(other) => panic!("unexpected error {other}"),
    }
});
