//! Call plans: a signature placed once, then called any number of times without touching the
//! heap.

use core::ffi::c_void;
use core::mem::{size_of, MaybeUninit};
use core::ptr;

use crate::abi::{Abi, Loc, Move, Placement, ResultPlace, RetReg};
use crate::engine::{self, CallFrame};
use crate::{Error, Signature};

/// Bytes of stack image plus private copies that a call keeps in the caller's own frame; larger
/// needs use a separate frame.
const SMALL_AREA: usize = 256;

/// One prepared step of a call. Every destination is a byte offset into the call's
/// workspace: the [`CallFrame`], then the stack-argument image, then the private copies, one
/// contiguous, 16-aligned block on the caller's stack. One dispatch per step, no allocation.
#[derive(Clone, Copy, Debug)]
struct Step {
    kind: StepKind,
    arg: u16,
    /// Source offset in the argument (Bytes), or workspace offset of a copy (CopyAddress).
    src: u32,
    len: u32,
    dst: u32,
}

/// What a step does; the integer width is chosen when the plan is made, not at each call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StepKind {
    /// `int8_t`, sign-extended to 64 bits.
    Sext8,
    /// `int16_t`, sign-extended to 64 bits.
    Sext16,
    /// `int32_t`, sign-extended to 64 bits.
    Sext32,
    /// `uint8_t`, zero-extended to 64 bits.
    Zext8,
    /// `uint16_t`, zero-extended to 64 bits.
    Zext16,
    /// `uint32_t`, zero-extended to 64 bits.
    Zext32,
    /// A 64-bit integer or pointer.
    Load64,
    /// `len` raw bytes from byte `src` of the argument.
    Bytes,
    /// The address of workspace byte `src`, as a pointer.
    CopyAddress,
    /// The caller's result buffer address, as a pointer.
    ResultAddress,
}

/// A signature prepared for calling through the assembly core.
///
/// Make it once with [`CallPlan::new`]; every layout or limit problem is reported then. A
/// [`call`](CallPlan::call) then allocates nothing: the frame, the stack-argument image and
/// the private aggregate copies live on the caller's stack.
///
/// ```
/// use core::ffi::c_void;
/// use nccl_trampoline::{arg, CallPlan, Signature, Type};
///
/// extern "C" fn add3(a: i32, b: i64, c: u8) -> i64 {
///     a as i64 + b + c as i64
/// }
///
/// let sig = Signature::new(vec![Type::I32, Type::I64, Type::U8], Some(Type::I64))?;
/// let plan = CallPlan::new(&sig)?;
/// let (a, b, c) = (1i32, 2i64, 3u8);
/// let mut out = 0i64;
/// # if nccl_trampoline::Abi::native().is_none() { return Ok(()); }
/// // SAFETY: `add3` has exactly the signature of the plan; the arguments and the result
/// // buffer match its types.
/// unsafe {
///     plan.call(add3 as *const c_void, &[arg(&a), arg(&b), arg(&c)], arg_mut(&mut out))?;
/// }
/// assert_eq!(out, 6);
/// # fn arg_mut<T>(v: &mut T) -> *mut c_void { v as *mut T as *mut c_void }
/// # Ok::<(), nccl_trampoline::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct CallPlan {
    abi: Abi,
    signature: Signature,
    steps: Vec<Step>,
    stack_len: u32,
    copy_len: u32,
    vector_count: u8,
    /// Result copies out of the frame: (frame offset, result offset, bytes); at most four
    /// pieces (an HFA of four members).
    ret_copies: [(u16, u16, u16); 4],
    ret_count: u8,
    returns_value: bool,
    indirect_result: bool,
}

impl CallPlan {
    /// Prepares `sig` for this target's ABI. Fails with [`Error::UnsupportedTarget`] where the
    /// crate has no trampoline, or with the error of the first layout or limit problem.
    pub fn new(sig: &Signature) -> Result<Self, Error> {
        let abi = Abi::native().ok_or(Error::UnsupportedTarget { target: engine::TARGET })?;
        Self::for_abi(abi, sig)
    }

    /// Prepares `sig` for a given ABI, on any host. Such a plan can be inspected
    /// ([`placement`](CallPlan::placement)) everywhere but called only where `abi` is native.
    pub fn for_abi(abi: Abi, sig: &Signature) -> Result<Self, Error> {
        let placement = abi.place(sig)?;
        Ok(Self::from_placement(abi, sig.clone(), placement))
    }

    fn from_placement(abi: Abi, signature: Signature, p: Placement) -> Self {
        let frame = size_of::<CallFrame>();
        let copies = frame + p.stack_len;
        // Abi::place bounded every offset by the limits, far below u32::MAX.
        let dst = |loc: Loc| -> u32 {
            (match loc {
                Loc::Int(n) => engine::offsets::FRAME_INT_REGS + 8 * usize::from(n),
                Loc::Vec(n) => engine::offsets::FRAME_VEC_REGS + 16 * usize::from(n),
                Loc::Stack(off) => frame + off as usize,
            }) as u32
        };
        let steps = p
            .moves
            .iter()
            .map(|m| match *m {
                Move::Int { arg, len, signed, to } => {
                    let kind = match (len, signed) {
                        (1, true) => StepKind::Sext8,
                        (2, true) => StepKind::Sext16,
                        (4, true) => StepKind::Sext32,
                        (1, false) => StepKind::Zext8,
                        (2, false) => StepKind::Zext16,
                        (4, false) => StepKind::Zext32,
                        _ => StepKind::Load64,
                    };
                    Step { kind, arg, src: 0, len: u32::from(len), dst: dst(to) }
                }
                Move::Bytes { arg, src, len, to } => Step { kind: StepKind::Bytes, arg, src, len, dst: dst(to) },
                Move::Copy { arg, len, copy } => {
                    Step { kind: StepKind::Bytes, arg, src: 0, len, dst: (copies + copy as usize) as u32 }
                }
                Move::CopyAddress { copy, to } => Step {
                    kind: StepKind::CopyAddress,
                    arg: 0,
                    src: (copies + copy as usize) as u32,
                    len: 8,
                    dst: dst(to),
                },
                Move::ResultAddress { to } => {
                    Step { kind: StepKind::ResultAddress, arg: 0, src: 0, len: 8, dst: dst(to) }
                }
            })
            .collect();
        let indirect_result = matches!(p.result, ResultPlace::Indirect { via_x8: true });
        let mut ret_copies = [(0u16, 0u16, 0u16); 4];
        let mut ret_count = 0u8;
        if let ResultPlace::Regs(pieces) = &p.result {
            // Both ABIs return in at most 4 registers; offsets and lengths fit u16 (frame of
            // 320 bytes, pieces of at most 16).
            for (slot, piece) in ret_copies.iter_mut().zip(pieces) {
                let src = match piece.from {
                    RetReg::Int(n) => engine::offsets::FRAME_RET_INT + 8 * usize::from(n),
                    RetReg::Vec(n) => engine::offsets::FRAME_RET_VEC + 16 * usize::from(n),
                };
                *slot = (src as u16, piece.dst as u16, piece.len as u16);
                ret_count += 1;
            }
        }
        let returns_value = !matches!(p.result, ResultPlace::Void);
        CallPlan {
            abi,
            signature,
            steps,
            stack_len: p.stack_len as u32,
            copy_len: p.copy_len as u32,
            vector_count: p.vector_count,
            ret_copies,
            ret_count,
            returns_value,
            indirect_result,
        }
    }

    /// The ABI this plan was made for.
    pub fn abi(&self) -> Abi {
        self.abi
    }

    /// The signature this plan was made from.
    pub fn signature(&self) -> &Signature {
        &self.signature
    }

    /// Where every argument and the result go, as computed when the plan was made.
    pub fn placement(&self) -> Placement {
        // Recomputed on demand: the plan keeps only what a call needs. The signature was placed
        // successfully once, so placing it again cannot fail.
        self.abi.place(&self.signature).expect("a planned signature places again")
    }

    /// Calls `func` with `args` and writes its result to `ret`.
    ///
    /// `args[i]` points to the value of argument `i`, laid out as the C type of the signature
    /// (for an aggregate, its `size()` bytes). `ret` points to a buffer of the return type's
    /// size and alignment, and may be null for `void`. Aggregates passed by value are copied;
    /// the callee never sees the caller's own memory, and the values behind `args` are not
    /// changed whatever the callee does with its copies.
    ///
    /// Errors: [`Error::ArgumentCount`] and [`Error::NullPointer`] for bad inputs,
    /// [`Error::UnsupportedTarget`] / [`Error::AbiMismatch`] where the plan cannot run.
    ///
    /// # Safety
    ///
    /// `func` must be a function with exactly the C signature of the plan (a variadic one when
    /// the signature is variadic), safe to call with these argument values. Every `args[i]`
    /// must be valid for reads of that argument's size, and `ret` (when the signature returns
    /// a value) valid for writes of the result's size and aligned for it. The callee's own
    /// contract (threads, lifetimes of pointers it keeps) is the caller's to uphold.
    pub unsafe fn call(&self, func: *const c_void, args: &[*const c_void], ret: *mut c_void) -> Result<(), Error> {
        let expected = self.signature.args().len();
        if args.len() != expected {
            return Err(Error::ArgumentCount { expected, got: args.len() });
        }
        if func.is_null() {
            return Err(Error::NullPointer { what: "function" });
        }
        if args.iter().any(|a| a.is_null()) {
            return Err(Error::NullPointer { what: "argument" });
        }
        if ret.is_null() && self.returns_value {
            return Err(Error::NullPointer { what: "result" });
        }
        // A let-else, not `ok_or`: the error value is built only on the failure path.
        let Some(entry) = engine::entry() else {
            return Err(Error::UnsupportedTarget { target: engine::TARGET });
        };
        if Abi::native() != Some(self.abi) {
            return Err(Error::AbiMismatch { plan: self.abi.name(), native: Abi::native().map_or("none", Abi::name) });
        }
        let need = self.stack_len as usize + self.copy_len as usize;
        // SAFETY: the caller guarantees func/args/ret per this function's contract; the
        // buffer size covers stack_len + copy_len (checked by the tier choice).
        unsafe {
            if need <= SMALL_AREA {
                // Inline: the common case keeps a small stack frame (no stack probes).
                self.call_with::<SMALL_AREA>(entry, func, args, ret);
            } else {
                self.call_large(need, entry, func, args, ret);
            }
        }
        Ok(())
    }

    /// Calls needing more than [`SMALL_AREA`] bytes of images, in their own frames so that the
    /// common case does not pay for (and probe) a large stack frame.
    ///
    /// # Safety
    ///
    /// As [`call`](CallPlan::call), with `need = stack_len + copy_len`.
    #[inline(never)]
    #[cold]
    unsafe fn call_large(
        &self,
        need: usize,
        entry: unsafe extern "C" fn(*mut CallFrame),
        func: *const c_void,
        args: &[*const c_void],
        ret: *mut c_void,
    ) {
        const MEDIUM: usize = 2048;
        const LARGE: usize = crate::limits::MAX_STACK_BYTES + crate::limits::MAX_COPY_BYTES;
        #[inline(never)]
        unsafe fn tier<const N: usize>(
            plan: &CallPlan,
            entry: unsafe extern "C" fn(*mut CallFrame),
            func: *const c_void,
            args: &[*const c_void],
            ret: *mut c_void,
        ) {
            // SAFETY: forwarded contract; N >= need by the choice below.
            unsafe { plan.call_with::<N>(entry, func, args, ret) }
        }
        // SAFETY: forwarded contract; Abi::place bounds need by MAX_STACK_BYTES + MAX_COPY_BYTES.
        unsafe {
            if need <= MEDIUM {
                tier::<MEDIUM>(self, entry, func, args, ret);
            } else {
                tier::<LARGE>(self, entry, func, args, ret);
            }
        }
    }

    /// Builds the frame and the images in a stack buffer of `N` bytes, calls, reads back.
    ///
    /// # Safety
    ///
    /// As [`call`](CallPlan::call), plus `N >= stack_len + copy_len`.
    #[inline(always)]
    unsafe fn call_with<const N: usize>(
        &self,
        entry: unsafe extern "C" fn(*mut CallFrame),
        func: *const c_void,
        args: &[*const c_void],
        ret: *mut c_void,
    ) {
        /// The frame, then the stack image, then the private copies. CallFrame's size is a
        /// multiple of 16 and stack_len too, so the stack image and every copy (at offsets that
        /// are multiples of 16) are 16-aligned.
        #[repr(C, align(16))]
        struct Workspace<const N: usize> {
            frame: CallFrame,
            area: [MaybeUninit<u8>; N],
        }

        debug_assert!(N >= self.stack_len as usize + self.copy_len as usize);
        debug_assert_eq!(self.stack_len % 16, 0);
        let mut ws = MaybeUninit::<Workspace<N>>::uninit();
        let base = ws.as_mut_ptr().cast::<u8>();

        for step in &self.steps {
            // SAFETY: every source pointer is the caller's args[i], valid for the argument's
            // size (call's contract), and every step reads inside it; every destination lies
            // inside the workspace (frame offsets name one of 8 registers; stack and copy
            // offsets lie inside stack_len + copy_len <= N); sources never overlap it.
            unsafe {
                let dst = base.add(step.dst as usize);
                // `call` checked args.len() against the signature, and every step that reads
                // an argument names one of the signature's (steps that read none, such as
                // ResultAddress, never call this).
                let arg = || args.get_unchecked(usize::from(step.arg)).cast::<u8>();
                let word = |v: u64| dst.cast::<u64>().write_unaligned(v);
                match step.kind {
                    StepKind::Sext8 => word(i64::from(arg().cast::<i8>().read_unaligned()) as u64),
                    StepKind::Sext16 => word(i64::from(arg().cast::<i16>().read_unaligned()) as u64),
                    StepKind::Sext32 => word(i64::from(arg().cast::<i32>().read_unaligned()) as u64),
                    StepKind::Zext8 => word(u64::from(arg().read_unaligned())),
                    StepKind::Zext16 => word(u64::from(arg().cast::<u16>().read_unaligned())),
                    StepKind::Zext32 => word(u64::from(arg().cast::<u32>().read_unaligned())),
                    StepKind::Load64 => word(arg().cast::<u64>().read_unaligned()),
                    StepKind::Bytes => copy_bytes(arg().add(step.src as usize), dst, step.len as usize),
                    StepKind::CopyAddress => {
                        dst.cast::<usize>().write_unaligned(base.add(step.src as usize) as usize);
                    }
                    StepKind::ResultAddress => dst.cast::<usize>().write_unaligned(ret as usize),
                }
            }
        }

        let f = base.cast::<CallFrame>();
        // SAFETY: `f` points to the workspace's frame: aligned, and these are plain field
        // writes into it.
        unsafe {
            ptr::addr_of_mut!((*f).func).write(func);
            ptr::addr_of_mut!((*f).stack_args).write(base.add(size_of::<CallFrame>()));
            ptr::addr_of_mut!((*f).stack_len).write(self.stack_len as usize);
            let indirect = if self.indirect_result { ret } else { ptr::null_mut() };
            ptr::addr_of_mut!((*f).indirect_result).write(indirect);
            ptr::addr_of_mut!((*f).vector_count).write(u64::from(self.vector_count));
            // SAFETY (call): the frame describes a call that the placement made to match the
            // C signature; func's contract is the caller's (see `call`).
            entry(f);
        }
        let fp = base;

        for &(src, dst, len) in &self.ret_copies[..usize::from(self.ret_count)] {
            // SAFETY: the entry wrote every return slot; ret is valid for the result's size
            // (call's contract) and every piece lies inside it.
            unsafe { copy_bytes(fp.add(usize::from(src)), ret.cast::<u8>().add(usize::from(dst)), usize::from(len)) };
        }
    }
}

/// Copies `len` bytes; the register-sized cases (almost every move) without a call to `memcpy`.
///
/// # Safety
///
/// As [`ptr::copy_nonoverlapping`]; no alignment is required.
#[inline(always)]
unsafe fn copy_bytes(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: the caller guarantees `len` readable bytes at src and writable bytes at dst.
    unsafe {
        match len {
            8 => dst.cast::<u64>().write_unaligned(src.cast::<u64>().read_unaligned()),
            4 => dst.cast::<u32>().write_unaligned(src.cast::<u32>().read_unaligned()),
            16 => dst.cast::<u128>().write_unaligned(src.cast::<u128>().read_unaligned()),
            _ => ptr::copy_nonoverlapping(src, dst, len),
        }
    }
}

/// The address of a value, as an argument pointer for [`CallPlan::call`].
pub fn arg<T>(value: &T) -> *const c_void {
    (value as *const T).cast()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Type;

    extern "C" fn add(a: i32, b: i32) -> i32 {
        a + b
    }

    fn plan() -> Option<CallPlan> {
        let sig = Signature::new(vec![Type::I32, Type::I32], Some(Type::I32)).unwrap();
        match CallPlan::new(&sig) {
            Ok(p) => Some(p),
            Err(Error::UnsupportedTarget { .. }) => None,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn bad_call_inputs_are_errors_not_undefined_behaviour() {
        let Some(plan) = plan() else { return };
        let (a, b, mut r) = (1i32, 2i32, 0i32);
        let f = add as *const c_void;
        let ret = (&mut r as *mut i32).cast();
        // SAFETY: every call below is refused before anything is called.
        unsafe {
            assert_eq!(plan.call(f, &[arg(&a)], ret), Err(Error::ArgumentCount { expected: 2, got: 1 }));
            assert_eq!(plan.call(ptr::null(), &[arg(&a), arg(&b)], ret), Err(Error::NullPointer { what: "function" }));
            assert_eq!(plan.call(f, &[arg(&a), ptr::null()], ret), Err(Error::NullPointer { what: "argument" }));
            assert_eq!(plan.call(f, &[arg(&a), arg(&b)], ptr::null_mut()), Err(Error::NullPointer { what: "result" }));
        }
        // SAFETY: `add` has the planned signature.
        unsafe { plan.call(f, &[arg(&a), arg(&b)], ret) }.unwrap();
        assert_eq!(r, 3);
    }

    #[repr(C)]
    #[derive(Debug, PartialEq)]
    struct Big([i64; 4]);

    extern "C" fn no_arguments_big_result() -> Big {
        Big([1, -2, 3, -4])
    }

    #[test]
    fn no_arguments_and_a_result_through_memory() {
        let big = Type::Aggregate(crate::Aggregate::builder().array(Type::I64, 4).build().unwrap());
        let Ok(plan) = CallPlan::new(&Signature::new(vec![], Some(big)).unwrap()) else { return };
        let mut out = Big([0; 4]);
        // SAFETY: the function has the planned signature; `out` is a Big.
        unsafe { plan.call(no_arguments_big_result as *const c_void, &[], (&mut out as *mut Big).cast()) }.unwrap();
        assert_eq!(out, Big([1, -2, 3, -4]));
    }

    #[test]
    fn plan_for_a_foreign_abi_cannot_be_called() {
        let sig = Signature::new(vec![Type::I32, Type::I32], Some(Type::I32)).unwrap();
        let foreign = match Abi::native() {
            Some(Abi::SysVX86_64) => Abi::Aapcs64,
            _ => Abi::SysVX86_64,
        };
        let plan = CallPlan::for_abi(foreign, &sig).unwrap();
        let (a, mut r) = (1i32, 0i32);
        // SAFETY: refused before anything is called.
        let err =
            unsafe { plan.call(add as *const c_void, &[arg(&a), arg(&a)], (&mut r as *mut i32).cast()) }.unwrap_err();
        assert!(matches!(err, Error::AbiMismatch { .. } | Error::UnsupportedTarget { .. }), "{err}");
    }

    #[test]
    fn limits_are_plan_time_errors() {
        let big = Type::Aggregate(crate::Aggregate::builder().array(Type::I64, 512).build().unwrap());
        let sig = Signature::new(vec![big; 3], None).unwrap();
        for abi in [Abi::SysVX86_64, Abi::Aapcs64] {
            let err = CallPlan::for_abi(abi, &sig).unwrap_err();
            assert!(matches!(err, Error::StackTooLarge { .. } | Error::CopiesTooLarge { .. }), "{abi:?}: {err}");
        }
        let too_many = Signature::new(vec![Type::I32; crate::limits::MAX_ARGS + 1], None);
        assert!(matches!(too_many, Err(Error::TooManyArguments { .. })));
    }
}
