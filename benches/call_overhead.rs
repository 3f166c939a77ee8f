//! Cost of one call through the call core against a direct Rust `extern "C"` fn-pointer call
//! and against libffi's `ffi_call`, for five shapes:
//!
//! - `ints3`: `extern "C" fn(i32, i64, i32) -> i64`, everything in registers;
//! - `comm_init_rank`: the `ncclCommInitRank` shape, a 128-byte `UniqueId` by value (System V
//!   MEMORY class: copied to the outgoing stack area; AAPCS64: a private copy by address);
//! - `byval128`: `int f(struct { char b[128]; })`, the by-value copy alone;
//! - `reduce8`: the 8-argument `ncclReduce` shape (two arguments on the stack on x86-64);
//! - `mixed8`: `double f(int, double, int64_t, double, int, double, void *, double)`, integer
//!   and vector argument registers interleaved.
//!
//! Variants: `direct` (the compiler's own call through a `black_box`ed fn pointer; a by-value
//! aggregate is copied once, straight from its `black_box`ed address into the outgoing area), `typed` (a
//! [`TypedFn`] from `CallPlan::bind`: no per-call checks), `dynamic` (`CallPlan::call` with an
//! argument-pointer array built per call, its `Result` checked) and `libffi` (`Cif::call`,
//! x86-64 only). The callees do a little work depending on every argument; all inputs go
//! through `black_box`, so nothing can be folded away. Plans, bindings and `Cif`s are made
//! once, outside the timed loops, and reached through `black_box` in every iteration, as the
//! `direct` variant reaches its function pointer: each call loads what it needs from memory,
//! as a call site in a library does (nothing is hoisted out of the loop).
//!
//! Three ways to run it (results and goals: `docs/perf.md`):
//!
//! - `cargo bench --features bench --bench call_overhead -- --warm-up-time 1 --measurement-time 3`
//!   (criterion, x86-64 only; the `bench` feature brings criterion and libffi);
//! - `<bench binary> paired [ROUNDS] [MILLISECONDS]`: ROUNDS (default 7) rounds; in each round
//!   every variant of every shape runs for about MILLISECONDS (default 160) in 8 chunks that
//!   alternate with chunks of `direct` (the variants in an order that rotates from round to
//!   round), and its time is divided by the `direct` time of those same chunks. Prints every
//!   round and the median of the per-round ratios per variant: paired and interleaved, so
//!   drift in the machine's speed cancels out;
//! - `<bench binary> sweep [ITERATIONS] [REPS] [all]` (x86-64): the by-value call of `byval128`'s
//!   shape at every 16-byte stack offset over a page (the stack lowered before the calls) and at
//!   128 source offsets (64 inside a page, 64 across a page boundary), through `direct` and the
//!   typed and dynamic paths with every copy width this CPU has; per combination and path the
//!   fastest of REPS (default 3) interleaved chunks of ITERATIONS (default 300) calls. Prints
//!   the combinations where a path takes over 1.5 times its median (every one with `all`), then
//!   per path how many there are;
//! - `<bench binary> count SHAPE VARIANT ITERATIONS`: runs exactly ITERATIONS calls and exits,
//!   for instruction counters (callgrind, qemu's insn plugin): the difference between two
//!   ITERATIONS values, divided by their difference, is the cost of one iteration.

#![cfg_attr(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))), allow(unused))]

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod shapes {
    use core::ffi::c_void;
    use std::hint::black_box;

    use nccl_trampoline::__private::CodePath;
    use nccl_trampoline::{arg, Aggregate, CArg, CallPlan, Signature, Type, TypedFn, ValueAt};

    /// `ncclUniqueId`: `typedef struct { char internal[128]; } ncclUniqueId;`.
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct UniqueId {
        internal: [i8; 128],
    }

    // SAFETY: `struct { char internal[128]; }`, exactly this layout.
    unsafe impl CArg for UniqueId {
        const AGGREGATE: bool = true;
        fn c_type() -> Type {
            unique_id_type()
        }
    }

    pub type Ints3Fn = extern "C" fn(i32, i64, i32) -> i64;
    pub type CommInitRankFn = extern "C" fn(*mut *mut c_void, i32, UniqueId, i32) -> i32;
    pub type Byval128Fn = extern "C" fn(Bytes128) -> i32;
    pub type Mixed8Fn = extern "C" fn(i32, f64, i64, f64, i32, f64, *mut c_void, f64) -> f64;
    pub type Reduce8Fn =
        extern "C" fn(*const c_void, *mut c_void, usize, i32, i32, i32, *mut c_void, *mut c_void) -> i32;
    type P = *mut c_void;
    /// The id by address: passed by value, copied once by the core (no copy into the tuple).
    type CommInitRankArgs = (*mut P, i32, ValueAt<UniqueId>, i32);
    type Reduce8Args = (*const c_void, P, usize, i32, i32, i32, P, P);
    type Mixed8Args = (i32, f64, i64, f64, i32, f64, P, f64);

    /// `struct { char b[128]; }`: the by-value copy alone.
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct Bytes128 {
        pub b: [u8; 128],
    }

    // SAFETY: `struct { char b[128]; }`, exactly this layout (`char` as `uint8_t`: same size,
    // alignment and class).
    unsafe impl CArg for Bytes128 {
        const AGGREGATE: bool = true;
        fn c_type() -> Type {
            bytes128_type()
        }
    }

    #[inline(never)]
    pub extern "C" fn ints3(a: i32, b: i64, c: i32) -> i64 {
        i64::from(a).wrapping_mul(3) ^ b.wrapping_add(i64::from(c))
    }

    /// Reads the rank, the rank count, the communicator slot's address and the first and last
    /// byte of the id: the 128 bytes must really arrive.
    #[inline(never)]
    pub extern "C" fn comm_init_rank(comm: *mut *mut c_void, nranks: i32, id: UniqueId, rank: i32) -> i32 {
        (comm as usize as i32)
            ^ nranks.wrapping_mul(31)
            ^ i32::from(id.internal[0])
            ^ (i32::from(id.internal[127]) << 8)
            ^ (rank << 16)
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    pub extern "C" fn reduce8(
        send: *const c_void,
        recv: *mut c_void,
        count: usize,
        datatype: i32,
        op: i32,
        root: i32,
        comm: *mut c_void,
        stream: *mut c_void,
    ) -> i32 {
        ((send as usize ^ (recv as usize).rotate_left(7) ^ count ^ (comm as usize).rotate_left(13) ^ stream as usize)
            as i32)
            ^ datatype
            ^ (op << 4)
            ^ (root << 8)
    }

    /// Reads the first, a middle and the last byte: the 128 bytes must really arrive.
    #[inline(never)]
    pub extern "C" fn byval128(s: Bytes128) -> i32 {
        i32::from(s.b[0]) ^ (i32::from(s.b[64]) << 8) ^ (i32::from(s.b[127]) << 16)
    }

    /// Every argument in the result, integers and doubles alike.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    pub extern "C" fn mixed8(a: i32, x: f64, b: i64, y: f64, c: i32, z: f64, p: *mut c_void, w: f64) -> f64 {
        let ints = i64::from(a).wrapping_mul(3) ^ b ^ (i64::from(c) << 7) ^ (p as usize as i64 >> 4);
        (x - y) * z + w + ints as f64
    }

    pub fn bytes128_type() -> Type {
        Type::Aggregate(Aggregate::builder().array(Type::U8, 128).build().expect("struct { char b[128]; } lays out"))
    }

    pub fn sample_bytes() -> Bytes128 {
        let mut b = [0u8; 128];
        for (k, v) in b.iter_mut().enumerate() {
            *v = (k as u8).wrapping_mul(13).wrapping_add(5);
        }
        Bytes128 { b }
    }

    pub fn unique_id_type() -> Type {
        Type::Aggregate(Aggregate::builder().array(Type::I8, 128).build().expect("ncclUniqueId lays out"))
    }

    fn sample_id() -> UniqueId {
        let mut internal = [0i8; 128];
        for (k, b) in internal.iter_mut().enumerate() {
            *b = (k as i8).wrapping_mul(7).wrapping_add(1);
        }
        UniqueId { internal }
    }

    /// A stand-in address for pointer arguments; never dereferenced by the callees.
    fn fake_ptr(v: usize) -> *mut c_void {
        v as *mut c_void
    }

    /// Calls through `CallPlan::call`, as a caller of the dynamic API does: a result buffer,
    /// the `Result` checked.
    ///
    /// # Safety
    ///
    /// `func` must have the C signature of `plan`, `args` must match it.
    #[inline(always)]
    unsafe fn dynamic<R: Default>(plan: &CallPlan, func: *const c_void, args: &[*const c_void]) -> R {
        let mut out = R::default();
        // SAFETY: forwarded from this function's contract; `out` is an R, the result type.
        unsafe { plan.call(func, args, (&mut out as *mut R).cast()) }.expect("the plan calls");
        out
    }

    pub struct Ints3 {
        plan: CallPlan,
        typed: TypedFn<(i32, i64, i32), i64>,
        args: (i32, i64, i32),
    }

    impl Ints3 {
        pub fn new() -> Self {
            let sig = Signature::new(vec![Type::I32, Type::I64, Type::I32], Some(Type::I64)).expect("signature");
            let plan = CallPlan::new(&sig).expect("plan");
            // SAFETY: ints3 has the plan's signature.
            let typed = unsafe { plan.bind(ints3 as *const c_void) }.expect("bind");
            let s = Ints3 { plan, typed, args: (-17, 0x1234_5678_9abc, 99) };
            let want = s.direct();
            assert_eq!((s.typed(), s.dynamic()), (want, want), "ints3: the paths disagree");
            s
        }
        #[inline(always)]
        pub fn direct(&self) -> i64 {
            let f = black_box(ints3 as Ints3Fn);
            let (a, b, c) = black_box(self.args);
            f(a, b, c)
        }
        #[inline(always)]
        pub fn typed(&self) -> i64 {
            let (a, b, c) = black_box(self.args);
            // SAFETY: ints3 takes any values.
            unsafe { black_box(&self.typed).call((a, b, c)) }
        }
        #[inline(always)]
        pub fn dynamic(&self) -> i64 {
            let f = black_box(ints3 as Ints3Fn) as *const c_void;
            let (a, b, c) = black_box(self.args);
            // SAFETY: ints3 has the planned signature; the arguments are its types.
            unsafe { dynamic::<i64>(black_box(&self.plan), f, &[arg(&a), arg(&b), arg(&c)]) }
        }
        pub fn code_paths(&self) -> (Vec<&'static str>, Vec<&'static str>) {
            (self.typed.code_path(), self.plan.code_path())
        }
    }

    pub struct CommInitRank {
        plan: CallPlan,
        typed: TypedFn<CommInitRankArgs, i32>,
        comm: *mut *mut c_void,
        nranks: i32,
        id: UniqueId,
        rank: i32,
    }

    impl CommInitRank {
        pub fn new() -> Self {
            let sig = Signature::new(vec![Type::Pointer, Type::I32, unique_id_type(), Type::I32], Some(Type::I32))
                .expect("signature");
            let plan = CallPlan::new(&sig).expect("plan");
            // SAFETY: comm_init_rank has the plan's signature.
            let typed = unsafe { plan.bind(comm_init_rank as *const c_void) }.expect("bind");
            let comm = fake_ptr(0x7f00_dead_b000).cast::<*mut c_void>();
            let s = CommInitRank { plan, typed, comm, nranks: 8, id: sample_id(), rank: 5 };
            let want = s.direct();
            assert_eq!((s.typed(), s.dynamic()), (want, want), "comm_init_rank: the paths disagree");
            s
        }
        /// Every input through `black_box` first, then the call: the compiler copies the id once,
        /// from its address straight into the outgoing area (no `black_box` between a copy into
        /// a temporary and the call, which would keep the temporary).
        #[inline(always)]
        pub fn direct(&self) -> i32 {
            let f = black_box(comm_init_rank as CommInitRankFn);
            let (comm, nranks, id, rank) =
                (black_box(self.comm), black_box(self.nranks), black_box(&self.id), black_box(self.rank));
            f(comm, nranks, *id, rank)
        }
        #[inline(always)]
        pub fn typed(&self) -> i32 {
            let (comm, nranks, rank) = (black_box(self.comm), black_box(self.nranks), black_box(self.rank));
            // SAFETY: comm_init_rank never dereferences anything; the id lives in `self`.
            unsafe { black_box(&self.typed).call((comm, nranks, ValueAt::new(black_box(&self.id)), rank)) }
        }
        #[inline(always)]
        pub fn dynamic(&self) -> i32 {
            let f = black_box(comm_init_rank as CommInitRankFn) as *const c_void;
            let (comm, nranks, id, rank) =
                (black_box(self.comm), black_box(self.nranks), black_box(&self.id), black_box(self.rank));
            // SAFETY: comm_init_rank has the planned signature; `id` is a 128-byte UniqueId.
            unsafe { dynamic::<i32>(black_box(&self.plan), f, &[arg(&comm), arg(&nranks), arg(id), arg(&rank)]) }
        }
        pub fn code_paths(&self) -> (Vec<&'static str>, Vec<&'static str>) {
            (self.typed.code_path(), self.plan.code_path())
        }
    }

    pub struct Byval128 {
        plan: CallPlan,
        typed: TypedFn<(ValueAt<Bytes128>,), i32>,
        bytes: Bytes128,
    }

    impl Byval128 {
        pub fn new() -> Self {
            let sig = Signature::new(vec![bytes128_type()], Some(Type::I32)).expect("signature");
            let plan = CallPlan::new(&sig).expect("plan");
            // SAFETY: byval128 has the plan's signature.
            let typed = unsafe { plan.bind(byval128 as *const c_void) }.expect("bind");
            let s = Byval128 { plan, typed, bytes: sample_bytes() };
            let want = s.direct();
            assert_eq!((s.typed(), s.dynamic()), (want, want), "byval128: the paths disagree");
            s
        }
        /// As `CommInitRank::direct`: one copy, from the `black_box`ed address.
        #[inline(always)]
        pub fn direct(&self) -> i32 {
            let (f, bytes) = (black_box(byval128 as Byval128Fn), black_box(&self.bytes));
            f(*bytes)
        }
        #[inline(always)]
        pub fn typed(&self) -> i32 {
            // SAFETY: byval128 reads its copy only; the bytes live in `self`.
            unsafe { black_box(&self.typed).call((ValueAt::new(black_box(&self.bytes)),)) }
        }
        #[inline(always)]
        pub fn dynamic(&self) -> i32 {
            let f = black_box(byval128 as Byval128Fn) as *const c_void;
            let bytes = black_box(&self.bytes);
            // SAFETY: byval128 has the planned signature; `bytes` is a Bytes128.
            unsafe { dynamic::<i32>(black_box(&self.plan), f, &[arg(bytes)]) }
        }
        pub fn bytes(&self) -> &Bytes128 {
            &self.bytes
        }
        pub fn code_paths(&self) -> (Vec<&'static str>, Vec<&'static str>) {
            (self.typed.code_path(), self.plan.code_path())
        }
    }

    pub struct Mixed8 {
        plan: CallPlan,
        typed: TypedFn<Mixed8Args, f64>,
        args: Mixed8Args,
    }

    impl Mixed8 {
        pub fn new() -> Self {
            let (i, d) = (Type::I32, Type::F64);
            let sig =
                Signature::new(vec![i, d, Type::I64, d, i, d, Type::Pointer, d], Some(Type::F64)).expect("signature");
            let plan = CallPlan::new(&sig).expect("plan");
            // SAFETY: mixed8 has the plan's signature.
            let typed = unsafe { plan.bind(mixed8 as *const c_void) }.expect("bind");
            let args = (-17, 1.5, 0x1234_5678_9abc, -0.25, 99, 3.0, fake_ptr(0x5555_0000_1230), 1e3);
            let s = Mixed8 { plan, typed, args };
            let want = s.direct();
            assert_eq!((s.typed().to_bits(), s.dynamic().to_bits()), (want.to_bits(), want.to_bits()), "mixed8");
            s
        }
        /// Every argument through its own `black_box` (in every variant): rustc lays the tuple
        /// out by size (doubles first), and a `black_box`ed copy of it, stored 16 bytes at a
        /// time, was read back 16 bytes at a time across two of those stores to build the
        /// typed call's words (a failed store forward per call, in the benchmark's own code).
        #[inline(always)]
        fn args(&self) -> Mixed8Args {
            let (a, x, b, y, c, z, p, w) = self.args;
            (
                black_box(a),
                black_box(x),
                black_box(b),
                black_box(y),
                black_box(c),
                black_box(z),
                black_box(p),
                black_box(w),
            )
        }
        #[inline(always)]
        pub fn direct(&self) -> f64 {
            let f = black_box(mixed8 as Mixed8Fn);
            let (a, x, b, y, c, z, p, w) = self.args();
            f(a, x, b, y, c, z, p, w)
        }
        #[inline(always)]
        pub fn typed(&self) -> f64 {
            let (a, x, b, y, c, z, p, w) = self.args();
            // SAFETY: mixed8 never dereferences its pointer.
            unsafe { black_box(&self.typed).call((a, x, b, y, c, z, p, w)) }
        }
        #[inline(always)]
        pub fn dynamic(&self) -> f64 {
            let f = black_box(mixed8 as Mixed8Fn) as *const c_void;
            let (a, x, b, y, c, z, p, w) = self.args();
            let args = [arg(&a), arg(&x), arg(&b), arg(&y), arg(&c), arg(&z), arg(&p), arg(&w)];
            // SAFETY: mixed8 has the planned signature; each argument has its planned type.
            unsafe { dynamic::<f64>(black_box(&self.plan), f, &args) }
        }
        pub fn code_paths(&self) -> (Vec<&'static str>, Vec<&'static str>) {
            (self.typed.code_path(), self.plan.code_path())
        }
    }

    pub struct Reduce8 {
        plan: CallPlan,
        typed: TypedFn<Reduce8Args, i32>,
        args: Reduce8Args,
    }

    impl Reduce8 {
        pub fn new() -> Self {
            let p = Type::Pointer;
            let sig = Signature::new(vec![p, p, Type::U64, Type::I32, Type::I32, Type::I32, p, p], Some(Type::I32))
                .expect("signature");
            let plan = CallPlan::new(&sig).expect("plan");
            // SAFETY: reduce8 has the plan's signature.
            let typed = unsafe { plan.bind(reduce8 as *const c_void) }.expect("bind");
            let args = (
                fake_ptr(0x7f00_1000_0000) as *const c_void,
                fake_ptr(0x7f00_2000_0000),
                1usize << 20,
                7,
                0,
                3,
                fake_ptr(0x5555_0000_1230),
                fake_ptr(0x5555_0000_4560),
            );
            let s = Reduce8 { plan, typed, args };
            let want = s.direct();
            assert_eq!((s.typed(), s.dynamic()), (want, want), "reduce8: the paths disagree");
            s
        }
        #[inline(always)]
        pub fn direct(&self) -> i32 {
            let f = black_box(reduce8 as Reduce8Fn);
            let (s, r, n, t, o, root, c, st) = black_box(self.args);
            f(s, r, n, t, o, root, c, st)
        }
        #[inline(always)]
        pub fn typed(&self) -> i32 {
            let args = black_box(self.args);
            // SAFETY: reduce8 never dereferences anything.
            unsafe { black_box(&self.typed).call(args) }
        }
        #[inline(always)]
        pub fn dynamic(&self) -> i32 {
            let f = black_box(reduce8 as Reduce8Fn) as *const c_void;
            let (s, r, n, t, o, root, c, st) = black_box(self.args);
            let args = [arg(&s), arg(&r), arg(&n), arg(&t), arg(&o), arg(&root), arg(&c), arg(&st)];
            // SAFETY: reduce8 has the planned signature; each argument has its planned type.
            unsafe { dynamic::<i32>(black_box(&self.plan), f, &args) }
        }
        pub fn code_paths(&self) -> (Vec<&'static str>, Vec<&'static str>) {
            (self.typed.code_path(), self.plan.code_path())
        }
    }
}

/// libffi, the point of comparison (x86-64 only, see Cargo.toml).
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod ffi {
    use core::ffi::c_void;
    use std::hint::black_box;

    use libffi::middle::{arg as ffi_arg, Cif, CodePtr, Type as FfiType};

    use crate::shapes::*;

    pub struct Ffi {
        ints3: Cif,
        comm_init_rank: Cif,
        reduce8: Cif,
        byval128: Cif,
        mixed8: Cif,
    }

    impl Ffi {
        pub fn new() -> Self {
            let fp = FfiType::pointer;
            let ffi = Ffi {
                ints3: Cif::new([FfiType::i32(), FfiType::i64(), FfiType::i32()], FfiType::i64()),
                comm_init_rank: Cif::new(
                    [fp(), FfiType::i32(), FfiType::structure(vec![FfiType::i8(); 128]), FfiType::i32()],
                    FfiType::i32(),
                ),
                reduce8: Cif::new(
                    [fp(), fp(), FfiType::usize(), FfiType::i32(), FfiType::i32(), FfiType::i32(), fp(), fp()],
                    FfiType::i32(),
                ),
                byval128: Cif::new([FfiType::structure(vec![FfiType::u8(); 128])], FfiType::i32()),
                mixed8: Cif::new(
                    [
                        FfiType::i32(),
                        FfiType::f64(),
                        FfiType::i64(),
                        FfiType::f64(),
                        FfiType::i32(),
                        FfiType::f64(),
                        fp(),
                        FfiType::f64(),
                    ],
                    FfiType::f64(),
                ),
            };
            assert_eq!(ffi.ints3(), ints3(-17, 0x1234_5678_9abc, 99), "libffi ints3");
            ffi
        }
        #[inline(always)]
        pub fn ints3(&self) -> i64 {
            let f = CodePtr::from_ptr(black_box(ints3 as Ints3Fn) as *const c_void);
            let (a, b, x) = (black_box(-17i32), black_box(0x1234_5678_9abci64), black_box(99i32));
            // SAFETY: the cif describes ints3; each Arg points to a value of its type.
            unsafe { black_box(&self.ints3).call::<i64>(f, &[ffi_arg(&a), ffi_arg(&b), ffi_arg(&x)]) }
        }
        /// libffi widens integer results narrower than a register to a whole `ffi_arg` and
        /// writes all 8 bytes: the result buffer must be an i64, then truncated.
        #[inline(always)]
        pub fn comm_init_rank(&self, s: &CommInitRank) -> i32 {
            let _ = s;
            let f = CodePtr::from_ptr(black_box(comm_init_rank as CommInitRankFn) as *const c_void);
            let id = black_box(&ID);
            let (comm, nranks, rank) =
                (black_box(0x7f00_dead_b000usize as *mut *mut c_void), black_box(8i32), black_box(5i32));
            // SAFETY: the cif describes comm_init_rank; each Arg points to a value of its type.
            let r: i64 = unsafe {
                black_box(&self.comm_init_rank)
                    .call(f, &[ffi_arg(&comm), ffi_arg(&nranks), ffi_arg(id), ffi_arg(&rank)])
            };
            r as i32
        }
        #[inline(always)]
        pub fn reduce8(&self) -> i32 {
            let f = CodePtr::from_ptr(black_box(reduce8 as Reduce8Fn) as *const c_void);
            let (send, recv, count) = (
                black_box(0x7f00_1000_0000usize as *const c_void),
                black_box(0x7f00_2000_0000usize as *mut c_void),
                black_box(1usize << 20),
            );
            let (datatype, op, root) = (black_box(7i32), black_box(0i32), black_box(3i32));
            let (comm, stream) =
                (black_box(0x5555_0000_1230usize as *mut c_void), black_box(0x5555_0000_4560usize as *mut c_void));
            let args = [
                ffi_arg(&send),
                ffi_arg(&recv),
                ffi_arg(&count),
                ffi_arg(&datatype),
                ffi_arg(&op),
                ffi_arg(&root),
                ffi_arg(&comm),
                ffi_arg(&stream),
            ];
            // SAFETY: the cif describes reduce8; each Arg points to a value of its type.
            let r: i64 = unsafe { black_box(&self.reduce8).call(f, &args) };
            r as i32
        }
    }

    impl Ffi {
        /// As `comm_init_rank`: an i64 result buffer, truncated.
        #[inline(always)]
        pub fn byval128(&self, s: &Bytes128) -> i32 {
            let f = CodePtr::from_ptr(black_box(byval128 as Byval128Fn) as *const c_void);
            let bytes = black_box(s);
            // SAFETY: the cif describes byval128; the Arg points to a Bytes128.
            let r: i64 = unsafe { black_box(&self.byval128).call(f, &[ffi_arg(bytes)]) };
            r as i32
        }
        #[inline(always)]
        pub fn mixed8(&self) -> f64 {
            let f = CodePtr::from_ptr(black_box(mixed8 as Mixed8Fn) as *const c_void);
            let (a, x, b, y) =
                (black_box(-17i32), black_box(1.5f64), black_box(0x1234_5678_9abci64), black_box(-0.25f64));
            let (c, z, p, w) = (
                black_box(99i32),
                black_box(3.0f64),
                black_box(0x5555_0000_1230usize as *mut c_void),
                black_box(1e3f64),
            );
            let args = [
                ffi_arg(&a),
                ffi_arg(&x),
                ffi_arg(&b),
                ffi_arg(&y),
                ffi_arg(&c),
                ffi_arg(&z),
                ffi_arg(&p),
                ffi_arg(&w),
            ];
            // SAFETY: the cif describes mixed8; each Arg points to a value of its type.
            unsafe { black_box(&self.mixed8).call(f, &args) }
        }
    }

    /// The same id bytes as the other variants' (`sample_id`).
    pub static ID: [i8; 128] = {
        let mut id = [0i8; 128];
        let mut k = 0;
        while k < 128 {
            id[k] = (k as i8).wrapping_mul(7).wrapping_add(1);
            k += 1;
        }
        id
    };
}

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod harness {
    use std::hint::black_box;
    use std::time::Instant;

    use crate::shapes::*;

    /// One timed variant: runs `n` iterations.
    pub type Run<'a> = Box<dyn Fn(u64) + 'a>;

    #[inline(never)]
    fn repeat<R>(n: u64, f: impl Fn() -> R) {
        for _ in 0..n {
            black_box(f());
        }
    }

    pub struct Shapes {
        pub ints3: Ints3,
        pub comm_init_rank: CommInitRank,
        pub reduce8: Reduce8,
        pub byval128: Byval128,
        pub mixed8: Mixed8,
        #[cfg(target_arch = "x86_64")]
        pub ffi: crate::ffi::Ffi,
    }

    impl Shapes {
        pub fn new() -> Self {
            let shapes = Shapes {
                ints3: Ints3::new(),
                comm_init_rank: CommInitRank::new(),
                reduce8: Reduce8::new(),
                byval128: Byval128::new(),
                mixed8: Mixed8::new(),
                #[cfg(target_arch = "x86_64")]
                ffi: crate::ffi::Ffi::new(),
            };
            #[cfg(target_arch = "x86_64")]
            {
                let ffi = &shapes.ffi;
                assert_eq!(ffi.byval128(shapes.byval128.bytes()), shapes.byval128.direct(), "libffi byval128");
                assert_eq!(ffi.mixed8().to_bits(), shapes.mixed8.direct().to_bits(), "libffi mixed8");
            }
            shapes
        }

        /// Every (shape, [(variant, run)]) in order; `direct` first.
        pub fn table(&self) -> Vec<(&'static str, Vec<(&'static str, Run<'_>)>)> {
            let mut ints3: Vec<(&str, Run)> = vec![
                ("direct", Box::new(|n| repeat(n, || self.ints3.direct()))),
                ("typed", Box::new(|n| repeat(n, || self.ints3.typed()))),
                ("dynamic", Box::new(|n| repeat(n, || self.ints3.dynamic()))),
            ];
            let mut comm: Vec<(&str, Run)> = vec![
                ("direct", Box::new(|n| repeat(n, || self.comm_init_rank.direct()))),
                ("typed", Box::new(|n| repeat(n, || self.comm_init_rank.typed()))),
                ("dynamic", Box::new(|n| repeat(n, || self.comm_init_rank.dynamic()))),
            ];
            let mut reduce: Vec<(&str, Run)> = vec![
                ("direct", Box::new(|n| repeat(n, || self.reduce8.direct()))),
                ("typed", Box::new(|n| repeat(n, || self.reduce8.typed()))),
                ("dynamic", Box::new(|n| repeat(n, || self.reduce8.dynamic()))),
            ];
            let mut byval: Vec<(&str, Run)> = vec![
                ("direct", Box::new(|n| repeat(n, || self.byval128.direct()))),
                ("typed", Box::new(|n| repeat(n, || self.byval128.typed()))),
                ("dynamic", Box::new(|n| repeat(n, || self.byval128.dynamic()))),
            ];
            let mut mixed: Vec<(&str, Run)> = vec![
                ("direct", Box::new(|n| repeat(n, || self.mixed8.direct()))),
                ("typed", Box::new(|n| repeat(n, || self.mixed8.typed()))),
                ("dynamic", Box::new(|n| repeat(n, || self.mixed8.dynamic()))),
            ];
            #[cfg(target_arch = "x86_64")]
            {
                byval.push(("libffi", Box::new(|n| repeat(n, || self.ffi.byval128(self.byval128.bytes())))));
                mixed.push(("libffi", Box::new(|n| repeat(n, || self.ffi.mixed8()))));
                ints3.push(("libffi", Box::new(|n| repeat(n, || self.ffi.ints3()))));
                comm.push(("libffi", Box::new(|n| repeat(n, || self.ffi.comm_init_rank(&self.comm_init_rank)))));
                reduce.push(("libffi", Box::new(|n| repeat(n, || self.ffi.reduce8()))));
            }
            vec![
                ("ints3", ints3),
                ("comm_init_rank", comm),
                ("byval128", byval),
                ("reduce8", reduce),
                ("mixed8", mixed),
            ]
        }
    }

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(|a, b| a.total_cmp(b));
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    }

    /// Iterations of `run` that take about `ms` milliseconds.
    fn calibrate(run: &Run<'_>, ms: u64) -> u64 {
        let mut n = 1000u64;
        loop {
            let t = Instant::now();
            run(n);
            let e = t.elapsed();
            if e.as_millis() >= 5 {
                return ((n as f64 * ms as f64 / e.as_secs_f64() / 1000.0) as u64).max(1);
            }
            n *= 4;
        }
    }

    fn ns(run: &Run<'_>, n: u64) -> f64 {
        let t = Instant::now();
        run(n);
        t.elapsed().as_secs_f64() * 1e9 / n as f64
    }

    /// Chunks per variant and round: the variant and `direct` alternate in chunks of about
    /// `ms / CHUNKS` milliseconds each, so both see the same machine.
    const CHUNKS: usize = 8;

    pub fn paired(rounds: usize, ms: u64) {
        let shapes = Shapes::new();
        println!("code paths (typed / dynamic):");
        println!("  ints3: {:?}", shapes.ints3.code_paths());
        println!("  comm_init_rank: {:?}", shapes.comm_init_rank.code_paths());
        println!("  byval128: {:?}", shapes.byval128.code_paths());
        println!("  reduce8: {:?}", shapes.reduce8.code_paths());
        println!("  mixed8: {:?}", shapes.mixed8.code_paths());
        println!(
            "{rounds} rounds; per round and variant {CHUNKS} chunks alternating with direct, about {ms} ms each side"
        );
        let table = shapes.table();
        let sizes: Vec<Vec<u64>> = table
            .iter()
            .map(|(_, v)| v.iter().map(|(_, run)| calibrate(run, (ms / CHUNKS as u64).max(1))).collect())
            .collect();
        let mut ratios: Vec<Vec<Vec<f64>>> = table.iter().map(|(_, v)| vec![Vec::new(); v.len()]).collect();
        let mut times: Vec<Vec<Vec<f64>>> = ratios.clone();
        for round in 0..rounds {
            for (s, (shape, variants)) in table.iter().enumerate() {
                let k = variants.len();
                let mut line = Vec::new();
                for j in 0..k - 1 {
                    // Every non-direct variant, in an order rotated by the round.
                    let v = 1 + (j + round) % (k - 1);
                    let (mut d, mut t) = (0.0, 0.0);
                    for c in 0..CHUNKS {
                        if c % 2 == 0 {
                            d += ns(&variants[0].1, sizes[s][0]);
                            t += ns(&variants[v].1, sizes[s][v]);
                        } else {
                            t += ns(&variants[v].1, sizes[s][v]);
                            d += ns(&variants[0].1, sizes[s][0]);
                        }
                    }
                    let (d, t) = (d / CHUNKS as f64, t / CHUNKS as f64);
                    ratios[s][v].push(t / d);
                    times[s][v].push(t);
                    times[s][0].push(d);
                    line.push((v, format!("{} {t:.2} ns ({:.2}x, direct {d:.2})", variants[v].0, t / d)));
                }
                line.sort_by_key(|(v, _)| *v);
                let line: Vec<String> = line.into_iter().map(|(_, l)| l).collect();
                println!("round {} {shape}: {}", round + 1, line.join(", "));
            }
        }
        println!("\nmedian over {rounds} rounds (ratio to direct, from the per-round paired ratios; [min-max]):");
        for (s, (shape, variants)) in table.iter().enumerate() {
            let mut line = vec![format!("direct {:.2} ns", median(times[s][0].clone()))];
            for (v, (name, _)) in variants.iter().enumerate().skip(1) {
                let r = &ratios[s][v];
                let (lo, hi) = (r.iter().cloned().fold(f64::MAX, f64::min), r.iter().cloned().fold(0.0, f64::max));
                line.push(format!(
                    "{name} {:.2} ns {:.2}x [{lo:.2}-{hi:.2}]",
                    median(times[s][v].clone()),
                    median(r.clone())
                ));
            }
            println!("{shape}: {}", line.join(", "));
            #[cfg(target_arch = "x86_64")]
            {
                let med = |v: usize| median(ratios[s][v].clone());
                let (typed, dynamic, ffi) = (med(1), med(2), med(3));
                println!("{shape}: libffi / typed {:.2}x, libffi / dynamic {:.2}x", ffi / typed, ffi / dynamic);
            }
        }
    }

    pub fn count(shape: &str, variant: &str, iterations: u64) {
        let shapes = Shapes::new();
        let table = shapes.table();
        let run = table
            .iter()
            .find(|(s, _)| *s == shape)
            .and_then(|(_, v)| v.iter().find(|(n, _)| *n == variant))
            .unwrap_or_else(|| panic!("no variant {variant} of shape {shape}"));
        (run.1)(iterations);
    }
}

/// The offset sweep (x86-64): the by-value call (`byval128`'s shape) at every 16-byte stack
/// offset over a page and at 128 source placements, to find layouts in which a path is slow.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod sweep {
    use core::arch::asm;
    use core::ffi::c_void;
    use std::alloc::{alloc_zeroed, dealloc, Layout};
    use std::hint::black_box;
    use std::time::Instant;

    use nccl_trampoline::__private::{PlanCode, VectorCopy};
    use nccl_trampoline::{arg, CallPlan, Signature, Type, TypedFn, ValueAt};

    use crate::shapes::{bytes128_type, sample_bytes, Bytes128, Byval128Fn};

    const PAGE: usize = 4096;
    /// Stack offsets: 16-byte steps over a whole page.
    const SHIFTS: usize = PAGE / 16;

    /// As `byval128`, and where its copy arrived: the page offset of the argument's address in
    /// bits 0..11, the bytes read above them.
    #[inline(never)]
    extern "C" fn byval128_where(s: Bytes128) -> i32 {
        let at = (&s as *const Bytes128 as usize % PAGE) as i32;
        at | (i32::from(s.b[0] ^ s.b[64] ^ s.b[127]) << 12)
    }

    /// One way to make the call: the direct call, or the typed or dynamic path with one copy width.
    enum Path {
        Direct,
        Typed(TypedFn<(ValueAt<Bytes128>,), i32>),
        Dynamic(CallPlan),
    }

    /// `n` calls through `path` with the bytes at `at`; the last result.
    #[inline(never)]
    fn calls(path: &Path, at: &Bytes128, n: u64) -> i32 {
        let mut r = 0;
        for _ in 0..n {
            r = match black_box(path) {
                Path::Direct => {
                    let (f, bytes) = (black_box(byval128_where as Byval128Fn), black_box(at));
                    f(*bytes)
                }
                // SAFETY: byval128_where reads its copy only; `at` lives until the call returns.
                Path::Typed(typed) => unsafe { typed.call((ValueAt::new(black_box(at)),)) },
                Path::Dynamic(plan) => {
                    let f = black_box(byval128_where as Byval128Fn) as *const c_void;
                    let mut out = 0i32;
                    // SAFETY: byval128_where has the planned signature; `at` is a Bytes128.
                    unsafe { plan.call(f, &[arg(black_box(at))], (&mut out as *mut i32).cast()) }
                        .expect("the plan calls");
                    out
                }
            };
            black_box(r);
        }
        r
    }

    /// Runs `f` with the stack pointer `shift` bytes (a multiple of 16) below where it is here.
    fn shifted(shift: usize, f: &mut dyn FnMut()) {
        extern "C" fn run(ctx: *mut c_void) {
            // SAFETY: `ctx` is the `&mut &mut dyn FnMut()` of the asm block below, alive during it.
            let f = unsafe { &mut *ctx.cast::<&mut dyn FnMut()>() };
            f();
        }
        assert_eq!(shift % 16, 0, "a shift keeps %rsp 16-aligned");
        let mut f = f;
        let ctx = (&mut f as *mut &mut dyn FnMut()).cast::<c_void>();
        // SAFETY: %rsp is 16-aligned at the block's start for a call (an asm block without
        // `nostack` may use the stack below %rsp); it is lowered by a multiple of 16, `run` (an
        // extern "C" function: every register the C ABI lets it change is declared clobbered)
        // is called with `ctx`, and %rsp is restored from r12, which `run` preserves.
        unsafe {
            asm!(
                "sub rsp, r12",
                "call {run}",
                "add rsp, r12",
                run = sym run,
                in("r12") shift,
                in("rdi") ctx,
                clobber_abi("C"),
            );
        }
    }

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    }

    /// One combination: the stack shift, the source's page offset, then per path where the
    /// copy arrived (page offset) and the fastest of `reps` chunks, in ns per call.
    struct Row {
        shift: usize,
        src: usize,
        dst: Vec<usize>,
        ns: Vec<f64>,
    }

    /// For every stack shift (0 to 4080 by 16) and source page offset (1024 + 0..63: inside a
    /// page; 4032 + 0..63: across a page boundary, so that some 16- and 32-byte loads of the
    /// copy cross it), every path's time per call: the fastest of `reps` interleaved chunks of
    /// `iterations` calls. Prints the combinations where a path is over 1.5 times its median
    /// (every combination with `all`), then a summary.
    pub fn sweep(iterations: u64, reps: usize, all: bool) {
        let sig = Signature::new(vec![bytes128_type()], Some(Type::I32)).expect("signature");
        let mut paths: Vec<(String, Path)> = vec![("direct".into(), Path::Direct)];
        for copy in VectorCopy::ALL.into_iter().filter(|c| c.is_available()) {
            let plan = CallPlan::with_vector_copy(&sig, copy).expect("plan");
            // SAFETY: byval128_where has the plan's signature.
            let typed = unsafe { plan.bind(byval128_where as *const c_void) }.expect("bind");
            paths.push((format!("typed-{}", copy.name()), Path::Typed(typed)));
            paths.push((format!("dynamic-{}", copy.name()), Path::Dynamic(plan)));
        }
        let best = VectorCopy::best().expect("a copy width").name();
        let layout = Layout::from_size_align(3 * PAGE, PAGE).expect("layout");
        // SAFETY: a non-zero size.
        let buf = unsafe { alloc_zeroed(layout) };
        assert!(!buf.is_null(), "the source pages");
        let sources: Vec<usize> = (0..64).map(|a| 1024 + a).chain((0..64).map(|a| PAGE - 64 + a)).collect();
        println!(
            "offset sweep: byval128 (int f(struct {{ char b[128]; }})), {SHIFTS} stack shifts x {} source offsets, \
             per path the fastest of {reps} chunks of {iterations} calls; the plans' own width: {best}",
            sources.len()
        );
        let mut rows = Vec::with_capacity(SHIFTS * sources.len());
        for &src in &sources {
            // SAFETY: src + 128 <= 2 * PAGE: inside the buffer's second and third pages.
            let at = unsafe {
                let p = buf.add(PAGE + src).cast::<Bytes128>();
                p.write_unaligned(sample_bytes());
                &*p
            };
            let want = calls(&paths[0].1, at, 1) >> 12;
            for shift in (0..SHIFTS).map(|k| 16 * k) {
                let mut dst = vec![0; paths.len()];
                let mut ns = vec![f64::MAX; paths.len()];
                shifted(shift, &mut || {
                    for (p, (name, path)) in paths.iter().enumerate() {
                        let r = calls(path, at, 1);
                        assert_eq!(r >> 12, want, "{name}: the bytes arrived");
                        dst[p] = r as usize % PAGE;
                    }
                    for _ in 0..reps {
                        for (p, (_, path)) in paths.iter().enumerate() {
                            let t = Instant::now();
                            calls(path, at, iterations);
                            ns[p] = ns[p].min(t.elapsed().as_secs_f64() * 1e9 / iterations as f64);
                        }
                    }
                });
                rows.push(Row { shift, src, dst, ns });
            }
        }
        // SAFETY: allocated above with this layout; `at` is not used past here.
        unsafe { dealloc(buf, layout) };

        let names: Vec<&str> = paths.iter().map(|(n, _)| n.as_str()).collect();
        // A path is slow in a combination where its time, divided by direct's in the same
        // interleaved chunks, is over 1.5 times the median of that ratio (for direct itself:
        // its time over 1.5 times its median time). The ratio cancels the machine's load.
        let ratio = |r: &Row, p: usize| if p == 0 { r.ns[0] } else { r.ns[p] / r.ns[0] };
        let medians: Vec<f64> = (0..paths.len()).map(|p| median(rows.iter().map(|r| ratio(r, p)).collect())).collect();
        let slow = |r: &Row, p: usize| ratio(r, p) > 1.5 * medians[p];
        println!(
            "\ncolumns: stack shift (bytes), source page offset, then per path: destination page offset, ns per call, \
             ratio to direct; the paths slow in that combination"
        );
        println!("paths: {}", names.join(" "));
        for r in &rows {
            let flagged: Vec<&str> = (0..paths.len()).filter(|&p| slow(r, p)).map(|p| names[p]).collect();
            if all || !flagged.is_empty() {
                let cells: Vec<String> = (0..paths.len())
                    .map(|p| format!("{:4} {:6.2} {:5.2}x", r.dst[p], r.ns[p], r.ns[p] / r.ns[0]))
                    .collect();
                println!("row {:4} {:4} | {} | slow: {}", r.shift, r.src, cells.join(" | "), flagged.join(","));
            }
        }
        println!(
            "\nsummary over {} combinations (slow: ratio to direct over 1.5 times its median; direct: time over 1.5 \
             times its median):",
            rows.len()
        );
        for (p, name) in names.iter().enumerate() {
            let flagged: Vec<&Row> = rows.iter().filter(|r| slow(r, p)).collect();
            let crossing_src = flagged.iter().filter(|r| r.src + 128 > PAGE).count();
            let crossing_dst = flagged.iter().filter(|r| r.dst[p] + 128 > PAGE).count();
            // Direct's worst as a multiple of its median time, the others' as a ratio to direct.
            let worst = rows.iter().map(|r| ratio(r, p)).fold(0.0, f64::max) / if p == 0 { medians[0] } else { 1.0 };
            let ns = median(rows.iter().map(|r| r.ns[p]).collect());
            println!(
                "{name:>16}: median {ns:.2} ns, median ratio {:.2}x, worst {worst:.2}x; slow in {} of {} ({:.2}%; of \
                 them the source across a page in {crossing_src}, the destination across a page in {crossing_dst})",
                if p == 0 { 1.0 } else { medians[p] },
                flagged.len(),
                rows.len(),
                100.0 * flagged.len() as f64 / rows.len() as f64,
            );
        }
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod criterion_benches {
    use criterion::Criterion;

    use crate::harness::Shapes;

    pub fn run() {
        let shapes = Shapes::new();
        let mut c = Criterion::default().configure_from_args();
        for (shape, variants) in shapes.table() {
            let mut g = c.benchmark_group(format!("call/{shape}"));
            for (name, run) in &variants {
                g.bench_function(*name, |b| {
                    b.iter_custom(|n| {
                        let t = std::time::Instant::now();
                        run(n);
                        t.elapsed()
                    })
                });
            }
            g.finish();
        }
        c.final_summary();
    }
}

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("paired") => {
            let rounds = args.get(1).map_or(7, |r| r.parse().expect("ROUNDS"));
            let ms = args.get(2).map_or(160, |m| m.parse().expect("MILLISECONDS"));
            harness::paired(rounds, ms);
        }
        #[cfg(target_arch = "x86_64")]
        Some("sweep") => {
            let iterations = args.get(1).map_or(300, |n| n.parse().expect("ITERATIONS"));
            let reps = args.get(2).map_or(3, |n| n.parse().expect("REPS"));
            sweep::sweep(iterations, reps, args.get(3).is_some_and(|a| a == "all"));
        }
        Some("count") => {
            let [_, shape, variant, n] = &args[..] else {
                panic!("usage: count SHAPE VARIANT ITERATIONS");
            };
            harness::count(shape, variant, n.parse().expect("ITERATIONS"));
        }
        _ => {
            #[cfg(target_arch = "x86_64")]
            criterion_benches::run();
            #[cfg(not(target_arch = "x86_64"))]
            eprintln!("criterion runs on x86-64 only; use `paired` or `count`");
        }
    }
}

#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
fn main() {}
