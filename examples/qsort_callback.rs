//! libc's `qsort` with comparators made at run time: C calling Rust through callbacks
//! (docs/adr/0025-callbacks.md). No C compiler needed: `qsort` is the C library's.
//!
//! - the dynamic form: a [`Callback`] made from a [`Signature`] known only at run time (here
//!   `int (const void *, const void *)`), whose handler reads its arguments through checked
//!   views; it sorts records by a key chosen at run time, an offset and a type;
//! - the typed form: a [`TypedCallback`] of a closure `|*const i64, *const i64| -> i32`, its
//!   signature made from the closure's types, called with no per-call checks; it captures the
//!   sort direction.
//!
//! `qsort` itself is called through the call core, as examples/qsort.rs does.
//!
//! Run: `cargo run --example qsort_callback` (x86-64, AArch64 and riscv64 Linux; elsewhere it
//! says that the target has no callbacks).

use std::ffi::c_void;

use nccl_trampoline::{arg, CallPlan, Callback, Error, Signature, Type, TypedCallback};

/// A record of the array the dynamic comparator sorts: the key is chosen at run time.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
struct Reading {
    sensor: u32,
    celsius: f64,
}

/// Sorts `len` elements of `size` bytes at `base` with `compar`, through libc's `qsort`.
///
/// # Safety
///
/// `base` points to `len` elements of `size` bytes, alive and unaliased during the call;
/// `compar` is a live `int (*)(const void *, const void *)` ordering them.
unsafe fn qsort(
    base: *mut c_void,
    len: usize,
    size: usize,
    compar: *const c_void,
) -> Result<(), Box<dyn std::error::Error>> {
    // void qsort(void *base, size_t nmemb, size_t size, int (*compar)(const void *, const void *));
    let plan = CallPlan::new(&Signature::new(vec![Type::Pointer, Type::U64, Type::U64, Type::Pointer], None)?)?;
    // SAFETY: the C library is already loaded into this process.
    let libc = unsafe { libloading::Library::new("libc.so.6") }?;
    // SAFETY: only the address is taken; it is called through the plan with qsort's prototype.
    let qsort: *const c_void = unsafe { *libc.get::<*const c_void>(b"qsort\0")? };
    let (len, size) = (len as u64, size as u64);
    // SAFETY: qsort's prototype; the rest is this function's contract.
    unsafe { plan.call(qsort, &[arg(&base), arg(&len), arg(&size), arg(&compar)], std::ptr::null_mut())? };
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The comparator's signature, as a program reading a plugin description would build it.
    let comparator = Signature::new(vec![Type::Pointer, Type::Pointer], Some(Type::I32))?;

    // Dynamic: sort by the field named at run time (here from the command line: "sensor" or
    // "celsius", default "celsius").
    let key = std::env::args().nth(1).unwrap_or_else(|| "celsius".into());
    let (offset, is_float) = match key.as_str() {
        "sensor" => (std::mem::offset_of!(Reading, sensor), false),
        _ => (std::mem::offset_of!(Reading, celsius), true),
    };
    let by_key = match Callback::new(&comparator, move |args, result| {
        let (a, b) = (args.get::<*const u8>(0).unwrap(), args.get::<*const u8>(1).unwrap());
        // SAFETY: qsort passes pointers to two elements of the Reading array below; `offset`
        // is a field of Reading of the type `is_float` says.
        let order = unsafe {
            if is_float {
                let (x, y) = (a.add(offset).cast::<f64>().read(), b.add(offset).cast::<f64>().read());
                x.total_cmp(&y)
            } else {
                a.add(offset).cast::<u32>().read().cmp(&b.add(offset).cast::<u32>().read())
            }
        };
        result.set(order as i32).unwrap();
    }) {
        Ok(cb) => cb,
        Err(e @ Error::CallbacksUnsupported { .. }) => {
            println!("qsort_callback: {e}: this target has no callback entries");
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let mut readings = vec![
        Reading { sensor: 3, celsius: 21.5 },
        Reading { sensor: 1, celsius: -4.0 },
        Reading { sensor: 2, celsius: 37.25 },
        Reading { sensor: 4, celsius: 0.5 },
    ];
    // SAFETY: the array lives and is not otherwise used during the call; `by_key` is a live
    // comparator of qsort's signature.
    unsafe { qsort(readings.as_mut_ptr().cast(), readings.len(), std::mem::size_of::<Reading>(), by_key.as_ptr())? };
    let mut expected = readings.clone();
    expected.sort_by(|a, b| if is_float { a.celsius.total_cmp(&b.celsius) } else { a.sensor.cmp(&b.sensor) });
    assert_eq!(readings, expected);
    println!("dynamic comparator ({key}, signature {:?}): {readings:?}", by_key.signature());

    // Typed: the signature comes from the closure's types; `descending` is captured.
    let descending = true;
    let by_value = TypedCallback::new(move |a: *const i64, b: *const i64| -> i32 {
        // SAFETY: qsort passes pointers to two elements of the i64 array below.
        let order = unsafe { (*a).cmp(&*b) };
        (if descending { order.reverse() } else { order }) as i32
    })?;
    let mut values: Vec<i64> = vec![42, -7, 1000, 0, 3, 3, -2_000_000, 17];
    // SAFETY: as above, for the i64 array and the typed comparator.
    unsafe { qsort(values.as_mut_ptr().cast(), values.len(), std::mem::size_of::<i64>(), by_value.as_ptr())? };
    assert_eq!(values, vec![1000, 42, 17, 3, 3, 0, -7, -2_000_000]);
    println!("typed comparator ({:?}): {values:?}", by_value.signature());
    Ok(())
}
