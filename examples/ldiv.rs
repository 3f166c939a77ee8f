//! Calls libc's `ldiv` through the call core: two `long` arguments, a 16-byte `ldiv_t` returned
//! by value in registers (rax:rdx on x86-64, x0:x1 on AArch64).
//!
//! Run: `cargo run --example ldiv`

use std::ffi::{c_long, c_void};

use nccl_trampoline::{arg, Aggregate, CallPlan, Signature, Type};

/// `ldiv_t` from `<stdlib.h>`.
#[repr(C)]
#[derive(Debug, Default, PartialEq, Eq)]
struct LDiv {
    quot: c_long,
    rem: c_long,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ldiv_t = Aggregate::builder().field(Type::I64).field(Type::I64).build()?;
    let sig = Signature::new(vec![Type::I64, Type::I64], Some(Type::Aggregate(ldiv_t)))?;
    let plan = CallPlan::new(&sig)?;

    // SAFETY: the C library's initialisers are already run (it is linked into this process).
    let libc = unsafe { libloading::Library::new("libc.so.6") }?;
    // SAFETY: only the address is taken; it is called through the plan with ldiv's prototype.
    let ldiv: *const c_void = unsafe { *libc.get::<*const c_void>(b"ldiv\0")? };

    for (n, d) in [(47 as c_long, 5 as c_long), (-47, 5), (c_long::MAX, 7)] {
        let mut out = LDiv::default();
        // SAFETY: `ldiv_t ldiv(long, long)`; `out` is an ldiv_t, the result type.
        unsafe { plan.call(ldiv, &[arg(&n), arg(&d)], (&mut out as *mut LDiv).cast())? };
        assert_eq!(out, LDiv { quot: n / d, rem: n % d }, "ldiv({n}, {d})");
        println!("ldiv({n}, {d}) = {{ quot: {}, rem: {} }}", out.quot, out.rem);
    }
    Ok(())
}
