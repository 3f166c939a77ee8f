//! The callback record: what the assembly's common callback stub (`nt_cb_common`) saves of the
//! C caller's registers before it calls the dispatcher, and the result registers it loads back
//! after. One layout per architecture, from `build.rs` (`CB_*` in [`layout`]), asserted here
//! field by field with `offset_of!`, so the assembly and this struct cannot drift apart.
//!
//! Every record offers the same methods: the dispatcher's (`arg_location`, `clear_result`,
//! `result_register`, `first_int_result`, `indirect_result_register`) and the variadic view's
//! (`saved_int_regs`, `saved_vec_regs`, `stack_args`: where the saved integer and vector argument
//! registers and the caller's stack arguments start). Where the target has no callback entries,
//! [`Record`] is an empty enum, so the views built on it compile everywhere and no value of it
//! can exist.
//!
//! [`layout`]: crate::engine::layout

#[cfg(all(nccl_trampoline_callbacks, nccl_trampoline_asm = "x86_64_sysv"))]
pub(crate) use x86_64::Record;

#[cfg(all(nccl_trampoline_callbacks, nccl_trampoline_asm = "aarch64_aapcs64"))]
pub(crate) use aarch64::Record;

#[cfg(all(nccl_trampoline_callbacks, nccl_trampoline_asm = "riscv64_lp64d"))]
pub(crate) use riscv64::Record;

#[cfg(not(nccl_trampoline_callbacks))]
pub(crate) use none::Record;

#[cfg(all(nccl_trampoline_callbacks, nccl_trampoline_asm = "x86_64_sysv"))]
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
    // The variadic view points a `__va_list_tag`'s reg_save_area at the record: the six
    // integer registers, then the eight vector registers (psABI 3.5.7, figure 3.33).
    const_assert_eq!(CB_VEC, CB_INT + 48);
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

        /// The first saved integer argument register (rdi; then rsi, rdx, rcx, r8, r9: 8-byte
        /// words, contiguous). Derived from the whole record: with the vector registers that
        /// follow it is the psABI's register save area (3.5.7, figure 3.33).
        pub(crate) fn saved_int_regs(&self) -> *const u8 {
            (self as *const Self).cast::<u8>().wrapping_add(CB_INT as usize)
        }

        /// The first saved vector argument register (xmm0; then xmm1 to xmm7: 16-byte slots,
        /// contiguous), right after the six integer registers.
        pub(crate) fn saved_vec_regs(&self) -> *const u8 {
            (self as *const Self).cast::<u8>().wrapping_add(CB_VEC as usize)
        }

        /// The first stack argument: the caller's %rsp at its `call`.
        pub(crate) fn stack_args(&self) -> *const u8 {
            self.stack
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

        /// Before a result placed in its registers only: nothing to push on the x87 stack, the
        /// one result field the stub always acts on that such a result does not set.
        pub(crate) fn reset_other_results(&mut self) {
            self.x87 = 0;
        }
    }

    fn bytes_of_mut(word: &mut u64) -> &mut [u8] {
        // SAFETY: a u64 is 8 initialised bytes, any pattern of which is a valid u64; the slice
        // borrows it exclusively for its lifetime.
        unsafe { core::slice::from_raw_parts_mut((word as *mut u64).cast::<u8>(), 8) }
    }
}

#[cfg(all(nccl_trampoline_callbacks, nccl_trampoline_asm = "aarch64_aapcs64"))]
mod aarch64 {
    use core::mem::{offset_of, size_of};

    use static_assertions::const_assert_eq;

    use super::bytes_of_mut;
    use crate::abi::{Loc, RetReg};
    use crate::engine::layout::{CB_INDEX, CB_INT, CB_RET_INT, CB_RET_VEC, CB_SIZE, CB_STACK, CB_VEC, CB_X8};

    /// The AArch64 record (asm/aarch64.S, `nt_cb_common`), at the bottom of the stub's frame,
    /// below its frame record. Built by the assembly only, never by Rust.
    #[allow(dead_code)]
    #[repr(C, align(16))]
    pub(crate) struct Record {
        /// x0 to x7 as the caller left them.
        int: [u64; 8],
        /// q0 to q7, whole (a long double is binary128, AAPCS64 C.1).
        vec: [[u8; 16]; 8],
        /// x8: the address of the caller's result memory for a composite result over 16 bytes.
        x8: u64,
        /// The first stack argument: the caller's sp at its `blr`.
        stack: *const u8,
        /// The pool index of the entry C called.
        pub(crate) index: u64,
        _pad: u64,
        /// Result: x0, x1.
        ret_int: [u64; 2],
        /// Result: q0 to q3 (an HFA of up to four members).
        ret_vec: [[u8; 16]; 4],
    }

    const_assert_eq!(offset_of!(Record, int), CB_INT as usize);
    const_assert_eq!(offset_of!(Record, vec), CB_VEC as usize);
    const_assert_eq!(offset_of!(Record, x8), CB_X8 as usize);
    const_assert_eq!(offset_of!(Record, stack), CB_STACK as usize);
    const_assert_eq!(offset_of!(Record, index), CB_INDEX as usize);
    const_assert_eq!(offset_of!(Record, ret_int), CB_RET_INT as usize);
    const_assert_eq!(offset_of!(Record, ret_vec), CB_RET_VEC as usize);
    const_assert_eq!(size_of::<Record>(), CB_SIZE as usize);
    // The variadic view's `va_list`: x0..x7 contiguous (`__gr_top` = their end), q0..q7
    // contiguous (`__vr_top` = their end).
    const_assert_eq!(CB_VEC - CB_INT, 64);
    // stp/ldp of q registers: the record is 16-aligned, so both areas must be too.
    const_assert_eq!(CB_VEC % 16, 0);
    const_assert_eq!(CB_RET_VEC % 16, 0);

    impl Record {
        /// The address of the bytes at `loc` as the C caller placed them.
        ///
        /// # Safety
        ///
        /// For [`Loc::Stack`], the record must be the live one of a call whose caller passed
        /// stack arguments up to that offset.
        pub(crate) unsafe fn arg_location(&self, loc: Loc) -> *const u8 {
            match loc {
                // Little-endian: a register's low bytes come first in its saved slot.
                Loc::Int(n) => (&self.int[usize::from(n)] as *const u64).cast::<u8>(),
                Loc::Vec(n) => self.vec[usize::from(n)].as_ptr(),
                // SAFETY: the caller's contract: the stack arguments reach past `off`.
                Loc::Stack(off) => unsafe { self.stack.add(off as usize) },
            }
        }

        /// Clears every result register.
        pub(crate) fn clear_result(&mut self) {
            self.ret_int = [0; 2];
            self.ret_vec = [[0; 16]; 4];
        }

        /// The result register `reg` as bytes, to be filled from its low end.
        pub(crate) fn result_register(&mut self, reg: RetReg) -> &mut [u8] {
            match reg {
                RetReg::Int(n) => bytes_of_mut(&mut self.ret_int[usize::from(n)]),
                RetReg::Vec(n) => &mut self.ret_vec[usize::from(n)],
                RetReg::X87(_) => unreachable!("AAPCS64 places no result on an x87 stack"),
            }
        }

        /// The first integer result register (x0), whole.
        pub(crate) fn first_int_result(&mut self) -> &mut u64 {
            &mut self.ret_int[0]
        }

        /// x8 as the caller left it: the result memory's address (AAPCS64 6.9).
        pub(crate) fn indirect_result_register(&self) -> Option<u64> {
            Some(self.x8)
        }

        /// The saved x0, then x1 to x7 (8 x 8 bytes); a `va_list`'s `__gr_top` is this + 64.
        pub(crate) fn saved_int_regs(&self) -> *const u8 {
            self.int.as_ptr().cast()
        }

        /// The saved q0, then q1 to q7 (8 x 16 bytes); a `va_list`'s `__vr_top` is this + 128.
        pub(crate) fn saved_vec_regs(&self) -> *const u8 {
            self.vec.as_ptr().cast()
        }

        /// The first stack argument: the caller's sp at its `blr`.
        pub(crate) fn stack_args(&self) -> *const u8 {
            self.stack
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

        /// The byte offset of the result register `reg` in the record.
        pub(crate) fn result_offset(reg: RetReg) -> Option<usize> {
            match reg {
                RetReg::Int(n) => Some(offset_of!(Record, ret_int) + 8 * usize::from(n)),
                RetReg::Vec(n) => Some(offset_of!(Record, ret_vec) + 16 * usize::from(n)),
                RetReg::X87(_) => None,
            }
        }

        /// Before a result placed in its registers only: nothing else to reset (the other
        /// result registers are scratch to the caller, AAPCS64 6.1.1).
        pub(crate) fn reset_other_results(&mut self) {}
    }
}

#[cfg(all(nccl_trampoline_callbacks, nccl_trampoline_asm = "riscv64_lp64d"))]
mod riscv64 {
    use core::mem::{offset_of, size_of};

    use static_assertions::const_assert_eq;

    use super::bytes_of_mut;
    use crate::abi::{Loc, RetReg};
    use crate::engine::layout::{CB_INDEX, CB_INT, CB_RA, CB_RET_INT, CB_RET_VEC, CB_SIZE, CB_STACK, CB_VEC};

    /// A float's NaN box in a 64-bit f register: bits 63..32 all ones (unprivileged spec, "NaN
    /// Boxing of Narrower Values"), the value in the low 4 bytes (zero here).
    const NAN_BOXED_ZERO: u64 = 0xffff_ffff_0000_0000;

    /// The riscv64 record (asm/riscv64.S, `nt_cb_common`): the stub's whole frame, ending at the
    /// caller's sp. Built by the assembly only, never by Rust.
    #[allow(dead_code)]
    #[repr(C, align(16))]
    pub(crate) struct Record {
        /// Result: a0, a1.
        ret_int: [u64; 2],
        /// Result: fa0, fa1.
        ret_vec: [u64; 2],
        /// fa0 to fa7 as the caller left them (a float NaN-boxed, its value in the low 4 bytes).
        vec: [u64; 8],
        /// The first stack argument: the caller's sp at its call.
        stack: *const u8,
        /// The pool index of the entry C called.
        pub(crate) index: u64,
        /// The stub's return address (the assembly's, not read here).
        ra: u64,
        _pad: u64,
        /// a0 to a7 as the caller left them: the last 64 bytes of the record, directly below
        /// the caller's stack arguments.
        int: [u64; 8],
    }

    const_assert_eq!(offset_of!(Record, ret_int), CB_RET_INT as usize);
    const_assert_eq!(offset_of!(Record, ret_vec), CB_RET_VEC as usize);
    const_assert_eq!(offset_of!(Record, vec), CB_VEC as usize);
    const_assert_eq!(offset_of!(Record, stack), CB_STACK as usize);
    const_assert_eq!(offset_of!(Record, index), CB_INDEX as usize);
    const_assert_eq!(offset_of!(Record, ra), CB_RA as usize);
    const_assert_eq!(offset_of!(Record, int), CB_INT as usize);
    const_assert_eq!(size_of::<Record>(), CB_SIZE as usize);
    // a0..a7 occupy exactly [caller's sp - 64, caller's sp): the variadic view walks from the
    // last register-passed argument straight into the stack ones.
    const_assert_eq!(CB_INT + 64, CB_SIZE);
    // The stack stays 16-aligned (LP64D) with the record as the whole frame.
    const_assert_eq!(CB_SIZE % 16, 0);

    impl Record {
        /// The address of the bytes at `loc` as the C caller placed them.
        ///
        /// # Safety
        ///
        /// For [`Loc::Stack`], the record must be the live one of a call whose caller passed
        /// stack arguments up to that offset.
        pub(crate) unsafe fn arg_location(&self, loc: Loc) -> *const u8 {
            match loc {
                // Little-endian: a register's low bytes come first in its saved word.
                Loc::Int(n) => (&self.int[usize::from(n)] as *const u64).cast::<u8>(),
                Loc::Vec(n) => (&self.vec[usize::from(n)] as *const u64).cast::<u8>(),
                // SAFETY: the caller's contract: the stack arguments reach past `off`.
                Loc::Stack(off) => unsafe { self.stack.add(off as usize) },
            }
        }

        /// Clears every result register. The f registers get a NaN-boxed zero: a float result
        /// then fills the low 4 bytes and keeps the box the caller's single-precision
        /// instructions require (an unboxed value reads as the canonical NaN); a double fills
        /// all 8.
        pub(crate) fn clear_result(&mut self) {
            self.ret_int = [0; 2];
            self.ret_vec = [NAN_BOXED_ZERO; 2];
        }

        /// The result register `reg` as bytes, to be filled from its low end.
        pub(crate) fn result_register(&mut self, reg: RetReg) -> &mut [u8] {
            match reg {
                RetReg::Int(n) => bytes_of_mut(&mut self.ret_int[usize::from(n)]),
                RetReg::Vec(n) => bytes_of_mut(&mut self.ret_vec[usize::from(n)]),
                RetReg::X87(_) => unreachable!("LP64D places no result on an x87 stack"),
            }
        }

        /// The first integer result register (a0), whole.
        pub(crate) fn first_int_result(&mut self) -> &mut u64 {
            &mut self.ret_int[0]
        }

        /// LP64D has no indirect-result register: the address is the hidden first argument in
        /// a0 (a [`Loc`]).
        pub(crate) fn indirect_result_register(&self) -> Option<u64> {
            None
        }

        /// The saved a0, then a1 to a7 (8 x 8 bytes), ending where [`Self::stack_args`] starts.
        pub(crate) fn saved_int_regs(&self) -> *const u8 {
            self.int.as_ptr().cast()
        }

        /// The saved fa0, then fa1 to fa7 (8 x 8 bytes).
        pub(crate) fn saved_vec_regs(&self) -> *const u8 {
            self.vec.as_ptr().cast()
        }

        /// The first stack argument: the caller's sp at its call, the end of the record.
        pub(crate) fn stack_args(&self) -> *const u8 {
            self.stack
        }

        /// Where the register at `loc` is saved: its byte offset in the record (`None` for a
        /// stack location), for readers that compute their places once (the typed form).
        pub(crate) fn register_offset(loc: Loc) -> Option<usize> {
            match loc {
                Loc::Int(n) => Some(offset_of!(Record, int) + 8 * usize::from(n)),
                Loc::Vec(n) => Some(offset_of!(Record, vec) + 8 * usize::from(n)),
                Loc::Stack(_) => None,
            }
        }

        /// The byte offset of the integer result register `reg` in the record. `None` for an
        /// f register: a float there must keep its NaN box, which the general placement
        /// ([`clear_result`](Record::clear_result), then the value's bytes) keeps and a whole
        /// word written at once would not.
        pub(crate) fn result_offset(reg: RetReg) -> Option<usize> {
            match reg {
                RetReg::Int(n) => Some(offset_of!(Record, ret_int) + 8 * usize::from(n)),
                RetReg::Vec(_) | RetReg::X87(_) => None,
            }
        }

        /// Before a result placed in its registers only: nothing else to reset (the other
        /// result registers are scratch to the caller).
        pub(crate) fn reset_other_results(&mut self) {}
    }
}

/// A u64 as its 8 bytes, for filling a result register from its low end.
#[cfg(all(nccl_trampoline_callbacks, not(nccl_trampoline_asm = "x86_64_sysv")))]
fn bytes_of_mut(word: &mut u64) -> &mut [u8] {
    // SAFETY: a u64 is 8 initialised bytes, any pattern of which is a valid u64; the slice
    // borrows it exclusively for its lifetime.
    unsafe { core::slice::from_raw_parts_mut((word as *mut u64).cast::<u8>(), 8) }
}

#[cfg(not(nccl_trampoline_callbacks))]
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
        pub(crate) fn saved_int_regs(&self) -> *const u8 {
            match *self {}
        }
        pub(crate) fn saved_vec_regs(&self) -> *const u8 {
            match *self {}
        }
        pub(crate) fn stack_args(&self) -> *const u8 {
            match *self {}
        }
        pub(crate) fn register_offset(_loc: Loc) -> Option<usize> {
            None
        }
        pub(crate) fn result_offset(_reg: RetReg) -> Option<usize> {
            None
        }
        pub(crate) fn reset_other_results(&mut self) {
            match *self {}
        }
    }
}
