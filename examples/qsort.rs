//! Calls libc's `qsort` through the call core with a pointer to a Rust `extern "C"` comparator:
//! the callee calls back into Rust while the trampoline's frame is live.
//!
//! Run: `cargo run --example qsort`

use std::ffi::c_void;

use nccl_trampoline::{arg, CallPlan, Signature, Type};

/// `int (*)(const void *, const void *)` ordering `i32` values.
extern "C" fn compare_i32(a: *const c_void, b: *const c_void) -> i32 {
    // SAFETY: qsort passes pointers to two elements of the i32 array below.
    let (a, b) = unsafe { (*a.cast::<i32>(), *b.cast::<i32>()) };
    a.cmp(&b) as i32
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // void qsort(void *base, size_t nmemb, size_t size, int (*compar)(const void *, const void *));
    let sig = Signature::new(vec![Type::Pointer, Type::U64, Type::U64, Type::Pointer], None)?;
    let plan = CallPlan::new(&sig)?;

    // SAFETY: the C library is already loaded into this process.
    let libc = unsafe { libloading::Library::new("libc.so.6") }?;
    // SAFETY: only the address is taken; it is called through the plan with qsort's prototype.
    let qsort: *const c_void = unsafe { *libc.get::<*const c_void>(b"qsort\0")? };

    let mut values: Vec<i32> = vec![42, -7, 1000, 0, 3, 3, -2_000_000, 17];
    let base = values.as_mut_ptr().cast::<c_void>();
    let (len, size) = (values.len() as u64, std::mem::size_of::<i32>() as u64);
    let compar = compare_i32 as extern "C" fn(*const c_void, *const c_void) -> i32 as *const c_void;
    // SAFETY: qsort's prototype; `base` points to `len` elements of `size` bytes that stay
    // alive and unaliased during the call; the comparator matches qsort's contract.
    unsafe { plan.call(qsort, &[arg(&base), arg(&len), arg(&size), arg(&compar)], std::ptr::null_mut())? };

    let mut expected = vec![42, -7, 1000, 0, 3, 3, -2_000_000, 17];
    expected.sort();
    assert_eq!(values, expected);
    println!("qsort through the trampoline: {values:?}");
    Ok(())
}
