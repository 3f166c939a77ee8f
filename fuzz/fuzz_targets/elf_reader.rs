//! The ELF reader that checks a library before the system loader maps it: any bytes give the
//! functions a valid file exports, or a one-line reason; never a panic, an allocation beyond
//! the input's size, a loop or a read outside the input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    match nccl_trampoline::fuzzing::elf_image(bytes) {
        Ok(functions) => {
            for f in &functions {
                assert!(!f.is_empty() && !f.contains('\0'), "{f:?}");
            }
            assert!(functions.windows(2).all(|w| w[0] < w[1]), "sorted, without duplicates");
        }
        Err(reason) => {
            assert!(!reason.is_empty() && !reason.contains('\n'), "one line: {reason:?}");
            assert!(!reason.starts_with(char::is_uppercase), "lowercase: {reason:?}");
        }
    }
});
