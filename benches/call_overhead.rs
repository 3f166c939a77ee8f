//! Cost of one call through the trampoline ([`CallPlan::call`]) against a direct Rust
//! `extern "C"` fn-pointer call and against libffi's `ffi_call`, for three shapes:
//!
//! - `call/ints3`: `extern "C" fn(i32, i64, i32) -> i64`, everything in registers;
//! - `call/comm_init_rank`: the `ncclCommInitRank` shape, a 128-byte `UniqueId` by value
//!   (System V MEMORY class: copied to the outgoing stack area);
//! - `call/reduce8`: the 8-argument `ncclReduce` shape, two arguments on the stack.
//!
//! The callees are Rust `extern "C"` functions that do a little work depending on every
//! argument; they and all inputs go through `black_box`, so no variant can be folded away. The
//! `CallPlan` and the libffi `Cif` are both prepared once, outside the timed loop; the
//! argument-pointer arrays are built inside it, as a caller has to for every call.
//!
//! libffi is only built for x86-64 Linux (see `Cargo.toml`); elsewhere this is an empty main.
//!
//! Run: `cargo bench --bench call_overhead -- --warm-up-time 1 --measurement-time 3`.
//! Results and the goals they are judged against: `docs/perf.md`.

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod x86_64_linux {
    use core::ffi::c_void;
    use std::hint::black_box;

    use criterion::{criterion_group, Criterion};
    use libffi::middle::{arg as ffi_arg, Cif, CodePtr, Type as FfiType};
    use nccl_trampoline::{arg, Aggregate, CallPlan, Signature, Type};

    /// `ncclUniqueId`: `typedef struct { char internal[128]; } ncclUniqueId;`.
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct UniqueId {
        internal: [i8; 128],
    }

    type Ints3Fn = extern "C" fn(i32, i64, i32) -> i64;
    type CommInitRankFn = extern "C" fn(*mut *mut c_void, i32, UniqueId, i32) -> i32;
    type Reduce8Fn = extern "C" fn(*const c_void, *mut c_void, usize, i32, i32, i32, *mut c_void, *mut c_void) -> i32;

    #[inline(never)]
    extern "C" fn ints3(a: i32, b: i64, c: i32) -> i64 {
        i64::from(a).wrapping_mul(3) ^ b.wrapping_add(i64::from(c))
    }

    /// Reads the rank, the rank count, the communicator slot's address and the first and last
    /// byte of the id: the 128 bytes must really arrive.
    #[inline(never)]
    extern "C" fn comm_init_rank(comm: *mut *mut c_void, nranks: i32, id: UniqueId, rank: i32) -> i32 {
        (comm as usize as i32)
            ^ nranks.wrapping_mul(31)
            ^ i32::from(id.internal[0])
            ^ (i32::from(id.internal[127]) << 8)
            ^ (rank << 16)
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    extern "C" fn reduce8(
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

    fn unique_id_type() -> Type {
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

    /// Calls through the trampoline; used both for the correctness check and the timed loop.
    ///
    /// # Safety
    ///
    /// `func` must have the C signature of `plan`, `args` and `ret` must match it (as for
    /// [`CallPlan::call`]).
    #[inline(always)]
    unsafe fn through_plan<R: Default>(plan: &CallPlan, func: *const c_void, args: &[*const c_void]) -> R {
        let mut out = R::default();
        // SAFETY: forwarded from this function's contract; `out` is an R, the result type.
        unsafe { plan.call(func, args, (&mut out as *mut R).cast()) }.expect("the plan calls");
        out
    }

    fn bench_ints3(c: &mut Criterion) {
        let sig = Signature::new(vec![Type::I32, Type::I64, Type::I32], Some(Type::I64)).expect("signature");
        let plan = CallPlan::new(&sig).expect("plan");
        let cif = Cif::new([FfiType::i32(), FfiType::i64(), FfiType::i32()], FfiType::i64());
        let (a, b, x) = (-17i32, 0x1234_5678_9abc_i64, 99i32);

        // The three paths must agree before any of them is timed.
        let want = ints3(a, b, x);
        // SAFETY: ints3 has the planned signature; the arguments are an i32, an i64, an i32.
        let got = unsafe { through_plan::<i64>(&plan, ints3 as *const c_void, &[arg(&a), arg(&b), arg(&x)]) };
        // SAFETY: the cif describes ints3; each Arg points to a value of its type.
        let ffi: i64 =
            unsafe { cif.call(CodePtr::from_ptr(ints3 as *const c_void), &[ffi_arg(&a), ffi_arg(&b), ffi_arg(&x)]) };
        assert_eq!((got, ffi), (want, want));

        let mut g = c.benchmark_group("call/ints3");
        g.bench_function("direct", |bench| {
            bench.iter(|| {
                let f = black_box(ints3 as Ints3Fn);
                f(black_box(a), black_box(b), black_box(x))
            })
        });
        g.bench_function("trampoline", |bench| {
            bench.iter(|| {
                let f = black_box(ints3 as Ints3Fn) as *const c_void;
                let (a, b, x) = (black_box(a), black_box(b), black_box(x));
                // SAFETY: as in the check above.
                unsafe { through_plan::<i64>(&plan, f, &[arg(&a), arg(&b), arg(&x)]) }
            })
        });
        g.bench_function("libffi", |bench| {
            bench.iter(|| {
                let f = CodePtr::from_ptr(black_box(ints3 as Ints3Fn) as *const c_void);
                let (a, b, x) = (black_box(a), black_box(b), black_box(x));
                // SAFETY: as in the check above.
                unsafe { cif.call::<i64>(f, &[ffi_arg(&a), ffi_arg(&b), ffi_arg(&x)]) }
            })
        });
        g.finish();
    }

    fn bench_comm_init_rank(c: &mut Criterion) {
        let sig = Signature::new(vec![Type::Pointer, Type::I32, unique_id_type(), Type::I32], Some(Type::I32))
            .expect("signature");
        let plan = CallPlan::new(&sig).expect("plan");
        let cif = Cif::new(
            [FfiType::pointer(), FfiType::i32(), FfiType::structure(vec![FfiType::i8(); 128]), FfiType::i32()],
            FfiType::i32(),
        );
        let comm = fake_ptr(0x7f00_dead_b000).cast::<*mut c_void>();
        let (nranks, id, rank) = (8i32, sample_id(), 5i32);

        let want = comm_init_rank(comm, nranks, id, rank);
        // SAFETY: comm_init_rank has the planned signature; `id` is a 128-byte UniqueId.
        let got = unsafe {
            through_plan::<i32>(
                &plan,
                comm_init_rank as *const c_void,
                &[arg(&comm), arg(&nranks), arg(&id), arg(&rank)],
            )
        };
        // libffi widens integer results narrower than a register to a whole `ffi_arg` and
        // writes all 8 bytes: the result buffer must be a u64/i64, then truncated.
        // SAFETY: the cif describes comm_init_rank; each Arg points to a value of its type.
        let ffi = unsafe {
            cif.call::<i64>(
                CodePtr::from_ptr(comm_init_rank as *const c_void),
                &[ffi_arg(&comm), ffi_arg(&nranks), ffi_arg(&id), ffi_arg(&rank)],
            )
        } as i32;
        assert_eq!((got, ffi), (want, want));

        let mut g = c.benchmark_group("call/comm_init_rank");
        g.bench_function("direct", |bench| {
            bench.iter(|| {
                let f = black_box(comm_init_rank as CommInitRankFn);
                f(black_box(comm), black_box(nranks), black_box(id), black_box(rank))
            })
        });
        g.bench_function("trampoline", |bench| {
            bench.iter(|| {
                let f = black_box(comm_init_rank as CommInitRankFn) as *const c_void;
                let (comm, nranks, id, rank) = (black_box(comm), black_box(nranks), black_box(&id), black_box(rank));
                // SAFETY: as in the check above.
                unsafe { through_plan::<i32>(&plan, f, &[arg(&comm), arg(&nranks), arg(id), arg(&rank)]) }
            })
        });
        g.bench_function("libffi", |bench| {
            bench.iter(|| {
                let f = CodePtr::from_ptr(black_box(comm_init_rank as CommInitRankFn) as *const c_void);
                let (comm, nranks, id, rank) = (black_box(comm), black_box(nranks), black_box(&id), black_box(rank));
                // SAFETY: as in the check above (i64 result buffer: see there).
                let r: i64 = unsafe { cif.call(f, &[ffi_arg(&comm), ffi_arg(&nranks), ffi_arg(id), ffi_arg(&rank)]) };
                r as i32
            })
        });
        g.finish();
    }

    fn bench_reduce8(c: &mut Criterion) {
        let p = Type::Pointer;
        let sig = Signature::new(
            vec![p.clone(), p.clone(), Type::U64, Type::I32, Type::I32, Type::I32, p.clone(), p],
            Some(Type::I32),
        )
        .expect("signature");
        let plan = CallPlan::new(&sig).expect("plan");
        let fp = FfiType::pointer;
        let cif = Cif::new(
            [fp(), fp(), FfiType::usize(), FfiType::i32(), FfiType::i32(), FfiType::i32(), fp(), fp()],
            FfiType::i32(),
        );
        let send = fake_ptr(0x7f00_1000_0000) as *const c_void;
        let recv = fake_ptr(0x7f00_2000_0000);
        let (count, datatype, op, root) = (1usize << 20, 7i32, 0i32, 3i32);
        let comm = fake_ptr(0x5555_0000_1230);
        let stream = fake_ptr(0x5555_0000_4560);

        let want = reduce8(send, recv, count, datatype, op, root, comm, stream);
        let args =
            [arg(&send), arg(&recv), arg(&count), arg(&datatype), arg(&op), arg(&root), arg(&comm), arg(&stream)];
        // SAFETY: reduce8 has the planned signature; each argument has its planned type.
        let got = unsafe { through_plan::<i32>(&plan, reduce8 as *const c_void, &args) };
        // SAFETY: the cif describes reduce8; i64 result buffer as for comm_init_rank.
        let ffi = unsafe {
            cif.call::<i64>(
                CodePtr::from_ptr(reduce8 as *const c_void),
                &[
                    ffi_arg(&send),
                    ffi_arg(&recv),
                    ffi_arg(&count),
                    ffi_arg(&datatype),
                    ffi_arg(&op),
                    ffi_arg(&root),
                    ffi_arg(&comm),
                    ffi_arg(&stream),
                ],
            )
        } as i32;
        assert_eq!((got, ffi), (want, want));

        let mut g = c.benchmark_group("call/reduce8");
        g.bench_function("direct", |bench| {
            bench.iter(|| {
                let f = black_box(reduce8 as Reduce8Fn);
                f(
                    black_box(send),
                    black_box(recv),
                    black_box(count),
                    black_box(datatype),
                    black_box(op),
                    black_box(root),
                    black_box(comm),
                    black_box(stream),
                )
            })
        });
        g.bench_function("trampoline", |bench| {
            bench.iter(|| {
                let f = black_box(reduce8 as Reduce8Fn) as *const c_void;
                let (send, recv, count) = (black_box(send), black_box(recv), black_box(count));
                let (datatype, op, root) = (black_box(datatype), black_box(op), black_box(root));
                let (comm, stream) = (black_box(comm), black_box(stream));
                let args = [
                    arg(&send),
                    arg(&recv),
                    arg(&count),
                    arg(&datatype),
                    arg(&op),
                    arg(&root),
                    arg(&comm),
                    arg(&stream),
                ];
                // SAFETY: as in the check above.
                unsafe { through_plan::<i32>(&plan, f, &args) }
            })
        });
        g.bench_function("libffi", |bench| {
            bench.iter(|| {
                let f = CodePtr::from_ptr(black_box(reduce8 as Reduce8Fn) as *const c_void);
                let (send, recv, count) = (black_box(send), black_box(recv), black_box(count));
                let (datatype, op, root) = (black_box(datatype), black_box(op), black_box(root));
                let (comm, stream) = (black_box(comm), black_box(stream));
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
                // SAFETY: as in the check above.
                let r: i64 = unsafe { cif.call(f, &args) };
                r as i32
            })
        });
        g.finish();
    }

    criterion_group!(benches, bench_ints3, bench_comm_init_rank, bench_reduce8);
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
criterion::criterion_main!(x86_64_linux::benches);

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn main() {}
