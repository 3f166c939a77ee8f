//! glibc's loader cache reader: any bytes are a cache or none; every entry's strings come from
//! inside the input, and a lookup returns the path of an entry listed under that name.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Some(entries) = nccl_trampoline::fuzzing::ld_so_cache(bytes) else { return };
    assert!(entries.len() <= bytes.len() / 24, "more entries than the input holds");
    for (name, _, found) in &entries {
        assert!(!name.contains(&0));
        for path in found.iter().flatten() {
            let p = path.as_os_str().as_encoded_bytes();
            assert!(
                entries.iter().any(|(n, q, _)| n == name && q == p),
                "a lookup of {name:?} returned {path:?}, no entry of that name"
            );
        }
    }
});
