//! The callback record: what the assembly's common callback stub (`nt_cb_common`) saves of the
//! C caller's registers before it calls the dispatcher, and the result registers it loads back
//! after. One layout per architecture, from `build.rs` (`CB_*` in [`layout`]), asserted here
//! field by field with `offset_of!`, so the assembly and this struct cannot drift apart.
//!
//! Only x86-64 has callback entries yet; elsewhere [`Record`] is an empty enum, so the views
//! built on it compile everywhere and no value of it can exist.

#[cfg(nccl_trampoline_asm = "x86_64_sysv")]
pub(crate) use x86_64::Record;

#[cfg(not(nccl_trampoline_asm = "x86_64_sysv"))]
pub(crate) use none::Record;

#[cfg(nccl_trampoline_asm = "x86_64_sysv")]
mod x86_64 {
    use core::mem::{offset_of, size_of};

    use static_assertions::const_assert_eq;

    use crate::abi::{Loc, RetReg};
    use crate::engine::layout::{
        CB_AL, CB_INDEX, CB_INT, CB_RET_INT, CB_RET_ST, CB_RET_VEC, CB_SIZE, CB_STACK, CB_VEC, CB_X87,
    };

    /// The x86-64 record (asm/x86_64.S, `nt_cb_common`), at the bottom of the stub's frame.
    /// Built by the assembly only, never by Rust.
    #[allow(dead_code)]
    #[repr(C, align(16))]
    pub(crate) struct Record {
        /// rdi, rsi, rdx, rcx, r8, r9 as the caller left them.
        int: [u64; 6],
        /// xmm0 to xmm7, whole.
        vec: [[u8; 16]; 8],
        /// The first stack argument: the caller's %rsp at its `call`.
        stack: *const u8,
        /// %al, zero-extended: the vector registers a variadic caller used (unused so far).
        _al: u64,
        /// The pool index of the entry C called.
        pub(crate) index: u64,
        /// Result: long doubles to push (0, 1 or 2).
        x87: u64,
        /// Result: %rax, %rdx.
        ret_int: [u64; 2],
        /// Result: %xmm0, %xmm1.
        ret_vec: [[u8; 16]; 2],
        /// Result: the images of st(0) and st(1), 10 value bytes each.
        ret_st: [[u8; 16]; 2],
    }

    const_assert_eq!(offset_of!(Record, int), CB_INT as usize);
    const_assert_eq!(offset_of!(Record, vec), CB_VEC as usize);
    const_assert_eq!(offset_of!(Record, stack), CB_STACK as usize);
    const_assert_eq!(offset_of!(Record, _al), CB_AL as usize);
    const_assert_eq!(offset_of!(Record, index), CB_INDEX as usize);
    const_assert_eq!(offset_of!(Record, x87), CB_X87 as usize);
    const_assert_eq!(offset_of!(Record, ret_int), CB_RET_INT as usize);
    const_assert_eq!(offset_of!(Record, ret_vec), CB_RET_VEC as usize);
    const_assert_eq!(offset_of!(Record, ret_st), CB_RET_ST as usize);
    const_assert_eq!(size_of::<Record>(), CB_SIZE as usize);
    // movaps needs both register areas 16-aligned.
    const_assert_eq!(CB_VEC % 16, 0);
    const_assert_eq!(CB_RET_VEC % 16, 0);

    impl Record {
        /// The address of the bytes at `loc` as the C caller placed them: the low byte of a
        /// saved register, or a byte of the caller's stack arguments.
        ///
        /// # Safety
        ///
        /// For [`Loc::Stack`], the record must be the live one of a call whose caller passed
        /// stack arguments up to that offset (the plan says so for the signature C called).
        pub(crate) unsafe fn arg_location(&self, loc: Loc) -> *const u8 {
            match loc {
                // Little-endian: a register's low bytes come first in its saved word.
                Loc::Int(n) => (&self.int[usize::from(n)] as *const u64).cast::<u8>(),
                Loc::Vec(n) => self.vec[usize::from(n)].as_ptr(),
                // SAFETY: the caller's contract: the stack arguments reach past `off`.
                Loc::Stack(off) => unsafe { self.stack.add(off as usize) },
            }
        }

        /// Clears every result register (nothing pushed on the x87 stack).
        pub(crate) fn clear_result(&mut self) {
            self.x87 = 0;
            self.ret_int = [0; 2];
            self.ret_vec = [[0; 16]; 2];
            self.ret_st = [[0; 16]; 2];
        }

        /// The result register `reg` as bytes, to be filled from its low end; for an x87
        /// register, also makes the stub push it (and every one below it).
        pub(crate) fn result_register(&mut self, reg: RetReg) -> &mut [u8] {
            match reg {
                RetReg::Int(n) => bytes_of_mut(&mut self.ret_int[usize::from(n)]),
                RetReg::Vec(n) => &mut self.ret_vec[usize::from(n)],
                RetReg::X87(n) => {
                    self.x87 = self.x87.max(u64::from(n) + 1);
                    &mut self.ret_st[usize::from(n)]
                }
            }
        }

        /// The first integer result register, whole.
        pub(crate) fn first_int_result(&mut self) -> &mut u64 {
            &mut self.ret_int[0]
        }

        /// The indirect-result register: x86-64 has none (the address is the hidden first
        /// argument, a [`Loc`]).
        pub(crate) fn indirect_result_register(&self) -> Option<u64> {
            None
        }

        /// Where the register at `loc` is saved: its byte offset in the record (`None` for a
        /// stack location), for readers that compute their places once (the typed form).
        pub(crate) fn register_offset(loc: Loc) -> Option<usize> {
            match loc {
                Loc::Int(n) => Some(offset_of!(Record, int) + 8 * usize::from(n)),
                Loc::Vec(n) => Some(offset_of!(Record, vec) + 16 * usize::from(n)),
                Loc::Stack(_) => None,
            }
        }

        /// The caller's first stack argument.
        pub(crate) fn stack_arguments(&self) -> *const u8 {
            self.stack
        }

        /// The byte offset of the integer or vector result register `reg` in the record
        /// (`None` for an x87 register, which [`result_register`](Record::result_register)
        /// fills).
        pub(crate) fn result_offset(reg: RetReg) -> Option<usize> {
            match reg {
                RetReg::Int(n) => Some(offset_of!(Record, ret_int) + 8 * usize::from(n)),
                RetReg::Vec(n) => Some(offset_of!(Record, ret_vec) + 16 * usize::from(n)),
                RetReg::X87(_) => None,
            }
        }

        /// Nothing to push on the x87 stack: the one result field the stub always reads that
        /// a result in integer or vector registers does not set.
        pub(crate) fn no_x87_result(&mut self) {
            self.x87 = 0;
        }
    }

    fn bytes_of_mut(word: &mut u64) -> &mut [u8] {
        // SAFETY: a u64 is 8 initialised bytes, any pattern of which is a valid u64; the slice
        // borrows it exclusively for its lifetime.
        unsafe { core::slice::from_raw_parts_mut((word as *mut u64).cast::<u8>(), 8) }
    }
}

#[cfg(not(nccl_trampoline_asm = "x86_64_sysv"))]
mod none {
    use crate::abi::{Loc, RetReg};

    /// No callback entries on this target: no record can exist.
    pub(crate) enum Record {}

    // The dispatcher that uses most of these exists only where the entries do.
    #[allow(dead_code, clippy::missing_safety_doc)]
    impl Record {
        pub(crate) unsafe fn arg_location(&self, _loc: Loc) -> *const u8 {
            match *self {}
        }
        pub(crate) fn clear_result(&mut self) {
            match *self {}
        }
        pub(crate) fn result_register(&mut self, _reg: RetReg) -> &mut [u8] {
            match *self {}
        }
        pub(crate) fn first_int_result(&mut self) -> &mut u64 {
            match *self {}
        }
        pub(crate) fn indirect_result_register(&self) -> Option<u64> {
            match *self {}
        }
        pub(crate) fn register_offset(_loc: Loc) -> Option<usize> {
            None
        }
        pub(crate) fn stack_arguments(&self) -> *const u8 {
            match *self {}
        }
        pub(crate) fn result_offset(_reg: RetReg) -> Option<usize> {
            None
        }
        pub(crate) fn no_x87_result(&mut self) {
            match *self {}
        }
    }
}
