//! A prepared call allocates nothing: a counting global allocator sees no allocation during
//! calls through plans for every shape class (registers, stack arguments, private copies,
//! indirect results), through every entry (the checked walk and line bodies of `CallPlan::call`,
//! the typed walks and word bodies of typed bindings and `call_words`). The call core's error is
//! `Copy` and a call that fails allocates nothing either. A callback call (dynamic, typed, direct)
//! allocates nothing in the entry, the dispatcher or the views, not even the first call on a new
//! thread (its mark record comes from a fixed array). Allocations are counted per thread, so
//! the tests of this file do not see each other's.
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ffi::c_void;

use nccl_trampoline::{arg, Aggregate, CArg, CallPlan, Error, Signature, Type, TypeDescription, TypedFn};
use nccl_trampoline::{Callback, CallbackValue, Complex, TypedCallback};

struct Counting;

thread_local! {
    /// Allocations made by this thread (a const-initialised cell: reading it never allocates).
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

/// Allocations made so far by the calling thread.
fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // `try_with`: a thread being torn down has no counter left; its allocations are not ours.
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[repr(C)]
#[derive(Clone, Copy)]
struct Id([u8; 128]);

// SAFETY: `struct { uint8_t bytes[128]; }`, exactly this layout.
unsafe impl CArg for Id {
    fn c_type() -> Type {
        Type::Aggregate(Aggregate::builder().array(Type::U8, 128).build().unwrap())
    }
}

#[repr(C)]
struct Big([i64; 40]);

extern "C" fn by_value(comm: *mut c_void, n: i32, id: Id, rank: i32) -> i32 {
    let _ = comm;
    n + rank + i32::from(id.0[0]) + i32::from(id.0[127])
}

extern "C" fn big_result(a: i64, b: f64) -> Big {
    Big([a + b as i64; 40])
}

extern "C" fn ints(a: i32, b: i64, c: *const u8) -> i64 {
    i64::from(a) + b + c as i64
}

#[test]
fn calls_do_not_allocate() {
    let id_t = Type::Aggregate(Aggregate::builder().array(Type::U8, 128).build().unwrap());
    let big_t = Type::Aggregate(Aggregate::builder().array(Type::I64, 40).build().unwrap());
    let p1 = CallPlan::new(&Signature::new(vec![Type::Pointer, Type::I32, id_t, Type::I32], Some(Type::I32)).unwrap())
        .unwrap();
    let p2 = CallPlan::new(&Signature::new(vec![Type::I64, Type::F64], Some(big_t)).unwrap()).unwrap();
    let (comm, n, rank) = (std::ptr::null_mut::<c_void>(), 2i32, 1i32);
    let mut id = Id([0; 128]);
    id.0[0] = 5;
    id.0[127] = 7;
    let (a, b) = (3i64, 4.0f64);
    let mut r = 0i32;
    let mut big = Big([0; 40]);
    let f1 = by_value as extern "C" fn(*mut c_void, i32, Id, i32) -> i32 as *const c_void;
    let f2 = big_result as extern "C" fn(i64, f64) -> Big as *const c_void;
    let args1 = [arg(&comm), arg(&n), arg(&id), arg(&rank)];
    let args2 = [arg(&a), arg(&b)];

    let p3 =
        CallPlan::new(&Signature::new(vec![Type::I32, Type::I64, Type::Pointer], Some(Type::I64)).unwrap()).unwrap();
    let f3 = ints as extern "C" fn(i32, i64, *const u8) -> i64 as *const c_void;
    // SAFETY: the functions have exactly the planned signatures.
    let t1: TypedFn<(*mut c_void, i32, Id, i32), i32> = unsafe { p1.bind(f1).unwrap() };
    // SAFETY: as above.
    let t3: TypedFn<(i32, i64, *const u8), i64> = unsafe { p3.bind(f3).unwrap() };
    let (x, y, z) = (1i32, 2i64, 3usize as *const u8);
    let args3 = [arg(&x), arg(&y), arg(&z)];
    let (mut r3, mut sum) = (0i64, 0i64);

    let before = allocations();
    for _ in 0..1000 {
        // SAFETY: the functions have exactly the planned signatures; every pointer is valid.
        unsafe {
            p1.call(f1, &args1, (&mut r as *mut i32).cast()).unwrap();
            p2.call(f2, &args2, (&mut big as *mut Big).cast()).unwrap();
            p3.call(f3, &args3, (&mut r3 as *mut i64).cast()).unwrap();
            p3.call_words(f3, &[x as i64 as u64, y as u64, z as u64], (&mut r3 as *mut i64).cast()).unwrap();
            sum += i64::from(t1.call((comm, n, id, rank))) + t3.call((x, y, z));
        }
    }
    let after = allocations();
    assert_eq!(after - before, 0, "allocations during 6000 calls");
    assert_eq!(r, 15);
    assert_eq!(big.0, [7; 40]);
    assert_eq!((r3, sum), (6, 1000 * (15 + 6)));
}

/// The call core's error is `Copy` (a compile-time check) and fits a cache line (56 bytes on
/// 64-bit targets: `ArgumentType`'s index and two descriptions).
#[test]
fn the_core_error_is_copy() {
    fn copy<T: Copy + Send + Sync + 'static>() {}
    copy::<Error>();
    copy::<TypeDescription>();
    assert!(std::mem::size_of::<Error>() <= 64, "{} bytes", std::mem::size_of::<Error>());
}

/// Failing a call, a binding's type check or a description of a type allocates nothing: the
/// errors carry numbers, static strings and `TypeDescription`s.
#[test]
fn core_errors_do_not_allocate() {
    let agg = Type::Aggregate(Aggregate::builder().array(Type::I64, 40).build().unwrap());
    let plan =
        CallPlan::new(&Signature::new(vec![Type::I32, Type::I64, Type::Pointer], Some(Type::I64)).unwrap()).unwrap();
    let f = ints as extern "C" fn(i32, i64, *const u8) -> i64 as *const c_void;
    let (x, y) = (1i32, 2i64);
    let short = [arg(&x), arg(&y)];
    let mut r = 0i64;

    let before = allocations();
    let mut seen = [None; 4];
    for _ in 0..100 {
        // SAFETY: refused before anything is called (too few arguments, a null function).
        unsafe {
            seen[0] = plan.call(f, &short, (&mut r as *mut i64).cast()).err();
            seen[1] = plan.call(std::ptr::null(), &short, (&mut r as *mut i64).cast()).err();
        }
        seen[2] = Some(Error::ArgumentType { index: 1, expected: Type::I64.description(), got: agg.description() });
        seen[3] = Some(Error::ResultType { expected: TypeDescription::Void, got: TypeDescription::TypedResult });
    }
    let copied = seen;
    let after = allocations();
    assert_eq!(after - before, 0, "allocations while making 400 core errors");
    assert_eq!(copied[0], Some(Error::ArgumentCount { expected: 3, got: 2 }));
    assert!(matches!(copied[1], Some(Error::NullPointer { .. } | Error::ArgumentCount { .. })), "{copied:?}");
    assert_eq!(
        copied[2].map(|e| e.to_string()).as_deref(),
        Some("argument 1 is int64_t in the signature but struct of 320 bytes, alignment 8 in the binding")
    );
}

// SAFETY: bytes only: every bit pattern is valid.
unsafe impl CallbackValue for Id {}

/// Callback calls through the result kinds (one register, two vector registers, memory through
/// the hidden address) and argument kinds (registers, a 128-byte struct on the stack), dynamic,
/// typed and typed on the direct path, on a thread that never called a callback before: no
/// allocation.
#[test]
fn callback_calls_do_not_allocate() {
    let id_t = Type::Aggregate(Aggregate::builder().array(Type::U8, 128).build().unwrap());
    let big_t = Type::Aggregate(Aggregate::builder().array(Type::I64, 40).build().unwrap());
    let dynamic = Callback::new(
        &Signature::new(vec![Type::Pointer, Type::I32, id_t, Type::I32], Some(Type::I32)).unwrap(),
        |a, r| {
            let mut id = [0u8; 128];
            a.read_bytes(2, &mut id).unwrap();
            r.set(a.get::<i32>(1).unwrap() + a.get::<i32>(3).unwrap() + i32::from(id[0]) + i32::from(id[127])).unwrap();
        },
    )
    .unwrap();
    let dynamic_big = Callback::new(&Signature::new(vec![Type::I64, Type::F64], Some(big_t)).unwrap(), |a, r| {
        let v = a.get::<i64>(0).unwrap() + a.get::<f64>(1).unwrap() as i64;
        let mut bytes = [0u8; 320];
        for chunk in bytes.chunks_mut(8) {
            chunk.copy_from_slice(&v.to_ne_bytes());
        }
        r.set_bytes(&bytes).unwrap();
    })
    .unwrap();
    let typed = TypedCallback::new(|comm: *mut c_void, n: i32, id: Id, rank: i32| -> i32 {
        let _ = comm;
        n + rank + i32::from(id.0[0]) + i32::from(id.0[127])
    })
    .unwrap();
    let typed_pair =
        TypedCallback::new(|a: i128, x: Complex<f64>| -> Complex<f64> { Complex { re: x.re + a as f64, im: x.im } })
            .unwrap();
    let direct = TypedCallback::direct(|comm: *mut c_void, n: i32, id: Id, rank: i32| -> i32 {
        let _ = comm;
        n + rank + i32::from(id.0[0]) + i32::from(id.0[127])
    })
    .unwrap();
    let direct_pair =
        TypedCallback::direct(|a: i128, x: Complex<f64>| -> Complex<f64> { Complex { re: x.re + a as f64, im: x.im } })
            .unwrap();
    // SAFETY: the entries have exactly these signatures.
    let (f1, f2) = unsafe {
        (
            std::mem::transmute::<*const c_void, extern "C" fn(*mut c_void, i32, Id, i32) -> i32>(dynamic.as_ptr()),
            std::mem::transmute::<*const c_void, extern "C" fn(i64, f64) -> Big>(dynamic_big.as_ptr()),
        )
    };
    let (t1, t2) = (typed.as_fn(), typed_pair.as_fn());
    let (d1, d2) = (direct.as_fn(), direct_pair.as_fn());
    let mut id = Id([0; 128]);
    id.0[0] = 5;
    id.0[127] = 7;
    let x = Complex { re: 2.5, im: -1.0 };
    std::thread::scope(|s| {
        s.spawn(|| {
            let before = allocations();
            let mut sum = 0i64;
            for _ in 0..1000 {
                sum += i64::from(f1(std::ptr::null_mut(), 2, id, 1));
                sum += f2(3, 4.0).0[39];
                // SAFETY: the callbacks live.
                unsafe {
                    sum += i64::from(t1(std::ptr::null_mut(), 2, id, 1));
                    sum += t2(1 << 70, x).im as i64;
                    sum += i64::from(d1(std::ptr::null_mut(), 2, id, 1));
                    sum += d2(1 << 70, x).im as i64;
                }
            }
            let after = allocations();
            assert_eq!(after - before, 0, "allocations during 6000 callback calls");
            assert_eq!(sum, 1000 * (15 + 7 + 15 - 1 + 15 - 1));
        });
    });
}
