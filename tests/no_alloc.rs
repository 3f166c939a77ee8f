//! A prepared call allocates nothing: a counting global allocator sees no allocation during
//! calls through plans for every shape class (registers, stack image, private copies,
//! indirect results).
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use nccl_trampoline::{arg, Aggregate, CallPlan, Signature, Type};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
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

#[repr(C)]
struct Big([i64; 40]);

extern "C" fn by_value(comm: *mut c_void, n: i32, id: Id, rank: i32) -> i32 {
    let _ = comm;
    n + rank + i32::from(id.0[0]) + i32::from(id.0[127])
}

extern "C" fn big_result(a: i64, b: f64) -> Big {
    Big([a + b as i64; 40])
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

    let before = ALLOCATIONS.load(Ordering::SeqCst);
    for _ in 0..1000 {
        // SAFETY: both functions have exactly the planned signatures.
        unsafe {
            p1.call(f1, &args1, (&mut r as *mut i32).cast()).unwrap();
            p2.call(f2, &args2, (&mut big as *mut Big).cast()).unwrap();
        }
    }
    let after = ALLOCATIONS.load(Ordering::SeqCst);
    assert_eq!(after - before, 0, "allocations during 2000 calls");
    assert_eq!(r, 15);
    assert_eq!(big.0, [7; 40]);
}
