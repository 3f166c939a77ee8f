//! Callbacks (calls from C into Rust) with the C compiler as the oracle: C callers, compiled
//! for the target, call Rust callbacks; the handlers check every value byte of every argument
//! and return a value the C side checks (or the test checks, from what C stored).
//!
//! - `pinned_callbacks_called_from_c`: tests/c/callbacks.c, hand-written callers with literal
//!   values for every rule with a trap (integers of every width, float/double mixes, stack
//!   arguments, small structs by class, structs in memory, struct results in registers and
//!   through the hidden pointer, long double, __int128, complex);
//! - `generated_callers_match_the_c_compiler`: callers generated from the conformance suite's
//!   pinned shapes, the NCCL prototypes and random signatures, with byte patterns;
//! - negative controls: a callback planned for another signature than C calls it with is seen;
//! - threads, re-entrancy, drop waiting for running calls, the views' typed errors, and the panic
//!   and use-after-drop policies (in a child process: they abort).
//!
//! On every architecture with callback entries: x86-64 natively, AArch64 under `qemu-aarch64
//! -cpu max` (BTI and PAC on) and riscv64 under `qemu-riscv64`, with the C compiled by the
//! target's gcc or by `NCCL_TRAMPOLINE_TEST_CC` (clang --target=..., scripts/test.sh).
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")))]

mod common;

use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use common::{
    aligned, build_shared, build_shared_with, compiler_version, known_compiler_bug, nccl_shapes, pinned_shapes,
    random_signature, repo_file, value_ranges, work_dir, CGen, Oracle, Pattern, Rng, CALLER_OPT_LEVELS,
};
use nccl_trampoline::{
    Aggregate, CLongDouble, CValue, Callback, CallbackArgs, CallbackResult, Complex, Error, Signature, Type,
    TypeDescription,
};

/// tests/c/callbacks.c, built once per process.
fn c_callers() -> &'static Oracle {
    static LIB: OnceLock<Oracle> = OnceLock::new();
    LIB.get_or_init(|| {
        let dir = work_dir(&format!("callbacks-{}", std::process::id()));
        let sources = [repo_file("tests/c/callbacks.c"), repo_file("tests/c/callbacks_probe.S")];
        Oracle::load(&build_shared(&dir, "callbacks", &sources))
    })
}

/// Runs `nt_cbc_<shape>(cb)`: 0, or the line of tests/c/callbacks.c whose check failed.
fn call_c(shape: &str, cb: &Callback) -> i32 {
    let f = c_callers().sym(&format!("nt_cbc_{shape}"));
    // SAFETY: every nt_cbc_<shape> takes one function pointer and returns int.
    unsafe { std::mem::transmute::<*const c_void, extern "C" fn(*const c_void) -> i32>(f)(cb.as_ptr()) }
}

/// Mismatches a handler saw, reported after the call.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<String>>>);

impl Seen {
    fn push(&self, what: String) {
        self.0.lock().unwrap().push(what);
    }
    fn arg<T: CValue + PartialEq + std::fmt::Debug>(&self, args: &CallbackArgs<'_>, index: usize, want: T) {
        match args.get::<T>(index) {
            Ok(got) if got == want => {}
            Ok(got) => self.push(format!("argument {index}: {got:?}, expected {want:?}")),
            Err(e) => self.push(format!("argument {index}: {e}")),
        }
    }
    /// The value bytes (padding excluded) of argument `index` equal those of `want`.
    fn bytes(&self, args: &CallbackArgs<'_>, index: usize, want: &[u8]) {
        let ty = args.signature().args()[index];
        let mut got = vec![0u8; ty.size()];
        if let Err(e) = args.read_bytes(index, &mut got) {
            return self.push(format!("argument {index}: {e}"));
        }
        for (o, l) in value_ranges(&ty) {
            if got[o..o + l] != want[o..o + l] {
                self.push(format!("argument {index} bytes {o}..{}: {:02x?}, expected {:02x?}", o + l, &got, want));
                return;
            }
        }
    }
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

fn bytes_of<T>(v: &T) -> Vec<u8> {
    // SAFETY: reads the bytes of a plain #[repr(C)] value of the test's own.
    unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), std::mem::size_of::<T>()).to_vec() }
}

fn agg(b: nccl_trampoline::AggregateBuilder) -> Type {
    Type::Aggregate(b.build().unwrap())
}

fn sig(args: Vec<Type>, ret: Option<Type>) -> Signature {
    Signature::new(args, ret).unwrap()
}

/// The C structs of tests/c/callbacks.c, as Rust builds their bytes (only the bytes are read).
#[allow(dead_code)]
mod c_structs {
    #[repr(C)]
    pub struct Ii(pub i32, pub i32);
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct Dd(pub f64, pub f64);
    #[repr(C)]
    pub struct Dl(pub f64, pub i64);
    #[repr(C)]
    pub struct Fid(pub f32, pub i32, pub f64);
    #[repr(C)]
    pub struct C3(pub u8, pub u8, pub u8);
    #[repr(C)]
    pub struct Ll(pub i64, pub i64);
    #[repr(C)]
    pub struct Iii(pub i32, pub i32, pub i32);
    #[repr(C)]
    pub struct Fff(pub f32, pub f32, pub f32);
    #[repr(C)]
    pub struct Big24(pub i64, pub f64, pub i32);
}
use c_structs::*;

/// One pinned shape: its signature and the handler that checks its literals.
type Shape = (&'static str, Signature, Box<dyn Fn(&Seen, &CallbackArgs<'_>, &mut CallbackResult<'_>) + Send + Sync>);

fn shape(
    name: &'static str,
    signature: Signature,
    check: impl Fn(&Seen, &CallbackArgs<'_>, &mut CallbackResult<'_>) + Send + Sync + 'static,
) -> Shape {
    (name, signature, Box::new(check))
}

fn pinned() -> Vec<Shape> {
    let ii = agg(Aggregate::builder().field(Type::I32).field(Type::I32));
    let dd = agg(Aggregate::builder().field(Type::F64).field(Type::F64));
    let dl = agg(Aggregate::builder().field(Type::F64).field(Type::I64));
    let fid = agg(Aggregate::builder().field(Type::F32).field(Type::I32).field(Type::F64));
    let c3 = agg(Aggregate::builder().array(Type::I8, 3));
    let ll = agg(Aggregate::builder().field(Type::I64).field(Type::I64));
    let iii = agg(Aggregate::builder().array(Type::I32, 3));
    let fff = agg(Aggregate::builder().array(Type::F32, 3));
    let big24 = agg(Aggregate::builder().field(Type::I64).field(Type::F64).field(Type::I32));
    let id = agg(Aggregate::builder().array(Type::I8, 128));
    let narrow = |name: &'static str, ret: Type, arg: i32, set: fn(&mut CallbackResult<'_>) -> Result<(), Error>| {
        shape(name, sig(vec![Type::I32], Some(ret)), move |s, a, r| {
            s.arg(a, 0, arg);
            set(r).unwrap();
        })
    };
    vec![
        shape(
            "ints6",
            sig(vec![Type::I8, Type::U8, Type::I16, Type::U16, Type::I32, Type::U32], Some(Type::I64)),
            |s, a, r| {
                s.arg(a, 0, -5i8);
                s.arg(a, 1, 250u8);
                s.arg(a, 2, -1234i16);
                s.arg(a, 3, 65000u16);
                s.arg(a, 4, -123456789i32);
                s.arg(a, 5, 4000000000u32);
                r.set(-5i64 + 250 - 1234 + 65000 - 123456789 + 4000000000).unwrap();
            },
        ),
        narrow("ret_i8", Type::I8, 1, |r| r.set(-7i8)),
        narrow("ret_u8", Type::U8, 2, |r| r.set(249u8)),
        narrow("ret_i16", Type::I16, 3, |r| r.set(-30000i16)),
        narrow("ret_u16", Type::U16, 4, |r| r.set(60000u16)),
        narrow("ret_u32", Type::U32, 5, |r| r.set(0xfedc_ba98u32)),
        shape("ret_ptr", sig(vec![Type::Pointer], Some(Type::Pointer)), |s, a, r| match a.get::<*mut u8>(0) {
            Ok(p) => r.set(p.wrapping_add(5)).unwrap(),
            Err(e) => s.push(e.to_string()),
        }),
        shape("fd4", sig(vec![Type::F32, Type::F64, Type::F32, Type::F64], Some(Type::F64)), |s, a, r| {
            s.arg(a, 0, 1.5f32);
            s.arg(a, 1, -2.25f64);
            s.arg(a, 2, 3.125f32);
            s.arg(a, 3, 1e300f64);
            r.set(0.1f64).unwrap();
        }),
        shape("df", sig(vec![Type::F64, Type::F32], Some(Type::F32)), |s, a, r| {
            s.arg(a, 0, 6.5f64);
            s.arg(a, 1, -0.75f32);
            r.set(-3.5f32).unwrap();
        }),
        shape("ints10", sig([vec![Type::I64; 8], vec![Type::I32, Type::I8]].concat(), Some(Type::I64)), |s, a, r| {
            for (i, v) in [1i64, -2, 3, -4, 5, -6, 0x7000_0000_0000_0007, -8].into_iter().enumerate() {
                s.arg(a, i, v);
            }
            s.arg(a, 8, -9i32);
            s.arg(a, 9, -10i8);
            r.set(0x0123_4567_89ab_cdefi64).unwrap();
        }),
        shape(
            "floats11",
            sig([vec![Type::F64; 8], vec![Type::F32, Type::F64, Type::F32]].concat(), Some(Type::F64)),
            |s, a, r| {
                for i in 0..8 {
                    s.arg(a, i, i as f64 + 0.5);
                }
                s.arg(a, 8, 8.25f32);
                s.arg(a, 9, 9.75f64);
                s.arg(a, 10, -10.5f32);
                r.set(12345.5f64).unwrap();
            },
        ),
        shape(
            "mixed16",
            sig(
                (0..14).map(|i| if i % 2 == 0 { Type::I32 } else { Type::F64 }).chain([Type::F64, Type::F64]).collect(),
                Some(Type::I32),
            ),
            |s, a, r| {
                for k in 0..7 {
                    s.arg(a, 2 * k, k as i32 + 1);
                    s.arg(a, 2 * k + 1, k as f64 + 1.25);
                }
                s.arg(a, 14, 8.25f64);
                s.arg(a, 15, 9.25f64);
                r.set(-77i32).unwrap();
            },
        ),
        shape("small_structs", sig(vec![ii, dd, dl, fid, c3], Some(Type::I64)), |s, a, r| {
            s.bytes(a, 0, &bytes_of(&Ii(-11, 22)));
            s.bytes(a, 1, &bytes_of(&Dd(3.5, -4.5)));
            s.bytes(a, 2, &bytes_of(&Dl(5.75, -0x666_6666_6666)));
            s.bytes(a, 3, &bytes_of(&Fid(7.5, -8, 9.125)));
            s.bytes(a, 4, &bytes_of(&C3(b'x', b'y', b'z')));
            r.set(424242i64).unwrap();
        }),
        shape(
            "struct_to_stack",
            sig([vec![Type::I64; 5], vec![ll, Type::I64]].concat(), Some(Type::I64)),
            |s, a, r| {
                for i in 0..5 {
                    s.arg(a, i, i as i64 + 1);
                }
                s.bytes(a, 5, &bytes_of(&Ll(0x1111_1111_1111_1111, -0x2222_2222_2222_2222)));
                s.arg(a, 6, 6i64);
                r.set(7i64).unwrap();
            },
        ),
        shape(
            "memory_structs",
            sig(vec![big24, Type::Pointer, Type::I32, id, Type::I32], Some(Type::I32)),
            |s, a, r| {
                s.bytes(a, 0, &bytes_of(&Big24(-0x1_2345_6789, 2.5, 77)));
                s.arg(a, 1, 0x12_3456_7890usize as *const c_void);
                s.arg(a, 2, 4i32);
                let id: Vec<u8> = (0..128).map(|i: u32| (i * 7 + 3) as u8).collect();
                s.bytes(a, 3, &id);
                s.arg(a, 4, 3i32);
                r.set(11i32).unwrap();
            },
        ),
        shape("ret_ll", sig(vec![Type::I32], Some(ll)), |s, a, r| {
            s.arg(a, 0, 1i32);
            r.set_bytes(&bytes_of(&Ll(-1, 0x7766_5544_3322_1100))).unwrap();
        }),
        shape("ret_dd", sig(vec![Type::I32], Some(dd)), |s, a, r| {
            s.arg(a, 0, 2i32);
            r.set_bytes(&bytes_of(&Dd(1.25, -2.5))).unwrap();
        }),
        shape("ret_dl", sig(vec![Type::I32], Some(dl)), |s, a, r| {
            s.arg(a, 0, 3i32);
            r.set_bytes(&bytes_of(&Dl(0.125, -99))).unwrap();
        }),
        shape("ret_iii", sig(vec![Type::I32], Some(iii)), |s, a, r| {
            s.arg(a, 0, 4i32);
            r.set_bytes(&bytes_of(&Iii(1, -2, 3))).unwrap();
        }),
        shape("ret_fff", sig(vec![Type::I32], Some(fff)), |s, a, r| {
            s.arg(a, 0, 5i32);
            r.set_bytes(&bytes_of(&Fff(1.5, 2.5, -3.5))).unwrap();
        }),
        shape("ret_big", sig(vec![Type::I32, Type::F64, big24], Some(big24)), |s, a, r| {
            s.arg(a, 0, -3i32);
            s.arg(a, 1, 0.5f64);
            s.bytes(a, 2, &bytes_of(&Big24(5, 6.5, 7)));
            r.set_bytes(&bytes_of(&Big24(0x0102_0304_0506_0708, -1.75, -42))).unwrap();
        }),
        shape(
            "long_double",
            sig(vec![Type::LongDouble, Type::I32, Type::LongDouble, Type::F64], Some(Type::LongDouble)),
            |s, a, r| {
                s.bytes(a, 0, &CLongDouble::from_f64(1.5).0);
                s.arg(a, 1, 2i32);
                s.bytes(a, 2, &CLongDouble::from_f64(-3.25).0);
                s.arg(a, 3, 4.0f64);
                r.set(CLongDouble::from_f64(-0.0625)).unwrap();
            },
        ),
        shape("complex_ld", sig(vec![Type::I32, Type::LongDouble], Some(Type::ComplexLongDouble)), |s, a, r| {
            s.arg(a, 0, 9i32);
            s.bytes(a, 1, &CLongDouble::from_f64(2.5).0);
            r.set(Complex { re: CLongDouble::from_f64(3.0), im: CLongDouble::from_f64(-4.5) }).unwrap();
        }),
        shape("int128", sig(vec![Type::I128, Type::I32, Type::U128], Some(Type::I128)), |s, a, r| {
            s.arg(a, 0, ((-0x0123_4567_89ab_cdefi128) << 64) | 0xfedc_ba98_7654_3210);
            s.arg(a, 1, -1i32);
            s.arg(a, 2, (0x1111_2222_3333_4444u128 << 64) | 0x5555_6666_7777_8888);
            r.set((0x7fff_ffff_ffff_ffffi128 << 64) | 1).unwrap();
        }),
        shape("complex", sig(vec![Type::ComplexF32, Type::ComplexF64], Some(Type::ComplexF64)), |s, a, r| {
            s.arg(a, 0, Complex { re: 1.5f32, im: 2.5 });
            s.arg(a, 1, Complex { re: -3.5f64, im: 4.5 });
            r.set(Complex { re: 0.25f64, im: -0.75 }).unwrap();
        }),
        shape("void", sig(vec![Type::Pointer, Type::I32], None), |s, a, _r| {
            match (a.get::<*mut i32>(0), a.get::<i32>(1)) {
                // SAFETY: the C caller passes the address of its own int32_t.
                (Ok(p), Ok(v)) => unsafe { *p = v + 1 },
                other => s.push(format!("{other:?}")),
            }
        }),
    ]
}

#[test]
fn pinned_callbacks_called_from_c() {
    let mut failures = Vec::new();
    for (name, signature, check) in pinned() {
        let seen = Seen::default();
        let in_handler = seen.clone();
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        let cb = Callback::new(&signature, move |a, r| {
            counted.fetch_add(1, Ordering::SeqCst);
            check(&in_handler, a, r)
        })
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let line = call_c(name, &cb);
        let mismatches = seen.take();
        if calls.load(Ordering::SeqCst) != 1 {
            failures.push(format!("{name}: the handler ran {} times", calls.load(Ordering::SeqCst)));
        }
        if !mismatches.is_empty() {
            failures.push(format!("{name}: arguments: {}", mismatches.join("; ")));
        }
        if line != 0 {
            failures.push(format!("{name}: the C caller's check at tests/c/callbacks.c:{line} failed (the result)"));
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// What gcc's callers never look at: %rax after a MEMORY-class result must be the hidden
/// address (psABI 3.2.3), read from the register by tests/c/callbacks_probe.S. x86-64 only:
/// AAPCS64 (6.9) and LP64D ("Integer Calling Convention") do not require the callee to return
/// the address in any register (x8 is not preserved, and nothing is said of x0 / a0), and no
/// caller reads it.
#[cfg(target_arch = "x86_64")]
#[test]
fn rax_holds_the_hidden_address_of_a_memory_result() {
    let big24 = agg(Aggregate::builder().field(Type::I64).field(Type::F64).field(Type::I32));
    let cb = Callback::new(&sig(vec![Type::I32], Some(big24)), |a, r| {
        assert_eq!(a.get::<i32>(0).unwrap(), 7);
        r.set_bytes(&bytes_of(&Big24(1, 2.0, 3))).unwrap();
    })
    .unwrap();
    let mut out = [0u64; 3];
    // SAFETY: `void *nt_cbc_hidden_rax(void *f, void *buffer)`; the buffer holds the 24 bytes.
    let rax = unsafe {
        std::mem::transmute::<*const c_void, extern "C" fn(*const c_void, *mut c_void) -> usize>(
            c_callers().sym("nt_cbc_hidden_rax"),
        )(cb.as_ptr(), out.as_mut_ptr().cast())
    };
    assert_eq!(rax, out.as_ptr() as usize, "%rax is not the hidden result address");
    assert_eq!(bytes_of(&out)[..20], bytes_of(&Big24(1, 2.0, 3))[..20]);
}

/// A narrow integer result is extended to 64 bits by its type in the first result register
/// (ADR 25; clang's x86-64 callers may rely on it, LP64D requires it: a result is returned "in
/// the same manner as a first named argument of the same type would be passed", so a uint32_t
/// comes back sign-extended), read from all 64 bits of the register by
/// tests/c/callbacks_probe.S (rax / x0 / a0). Called with an argument of 1 and of -1, so the
/// register's upper bits hold zeros or ones before the call on the architectures whose
/// argument register is the result register.
#[test]
fn narrow_integer_results_are_extended_to_64_bits() {
    let raw = |ret: Type, set: fn(&mut CallbackResult<'_>) -> Result<(), Error>, arg: i32| -> u64 {
        let cb = Callback::new(&sig(vec![Type::I32], Some(ret)), move |_, r| set(r).unwrap()).unwrap();
        // SAFETY: `uint64_t nt_cbc_raw_result(void *f, int32_t arg)`; f takes an int32_t.
        unsafe {
            std::mem::transmute::<*const c_void, extern "C" fn(*const c_void, i32) -> u64>(
                c_callers().sym("nt_cbc_raw_result"),
            )(cb.as_ptr(), arg)
        }
    };
    // LP64D: integer scalars "are widened according to the sign of their type up to 32 bits,
    // then sign-extended to XLEN bits".
    let u32_extended = if cfg!(target_arch = "riscv64") { 0xffff_ffff_fedc_ba98 } else { 0xfedc_ba98 };
    for arg in [1, -1] {
        assert_eq!(raw(Type::I8, |r| r.set(-7i8), arg), -7i64 as u64);
        assert_eq!(raw(Type::U8, |r| r.set(249u8), arg), 249);
        assert_eq!(raw(Type::I16, |r| r.set(-30000i16), arg), -30000i64 as u64);
        assert_eq!(raw(Type::U16, |r| r.set(60000u16), arg), 60000);
        assert_eq!(raw(Type::I32, |r| r.set(-5i32), arg), -5i64 as u64);
        assert_eq!(raw(Type::U32, |r| r.set(0xfedc_ba98u32), arg), u32_extended);
        assert_eq!(raw(Type::U32, |r| r.set(0x7edc_ba98u32), arg), 0x7edc_ba98);
        assert_eq!(raw(Type::I64, |r| r.set(-2i64), arg), -2i64 as u64);
    }
}

/// Call frame information of the callback path, checked by unwinding (as
/// `unwinders_walk_from_the_callee_through_every_entry_kind` does for calls): from inside the
/// handler, libgcc's `_Unwind_Backtrace` walks the handler's and the dispatcher's frames,
/// cb_common and the C caller, and must reach the C function above it (tests/c/callbacks.c).
/// Negative control: the same call made from a frame without call frame information
/// (`nt_cbc_no_cfi_call`) stops the walk, so the check can fail.
#[test]
fn unwinders_walk_from_the_handler_through_the_stub_into_the_c_caller() {
    let run = c_callers().sym("nt_cbc_unwind_run") as usize;
    let cb = Callback::new(&sig(vec![Type::I32], Some(Type::I64)), move |a, r| {
        // SAFETY: `int64_t nt_cbc_unwind_run(void)`.
        let walked = unsafe { std::mem::transmute::<usize, extern "C" fn() -> i64>(run)() };
        r.set(if a.get::<i32>(0) == Ok(7) { walked } else { i64::MIN }).unwrap();
    })
    .unwrap();
    // SAFETY: `int64_t nt_cbc_unwind_outer(int64_t (*caller)(unwind_fn), unwind_fn f)`: calls
    // caller(f), which calls f(7); f is the callback's entry, of that signature.
    let outer = |caller: &str| unsafe {
        std::mem::transmute::<*const c_void, extern "C" fn(*const c_void, *const c_void) -> i64>(
            c_callers().sym("nt_cbc_unwind_outer"),
        )(c_callers().sym(caller), cb.as_ptr())
    };
    let through_c = outer("nt_cbc_unwind_call");
    assert!(through_c > 1000, "the unwinder did not reach the C caller through the callback stub ({through_c})");
    let without_cfi = outer("nt_cbc_no_cfi_call");
    assert!(
        (i64::MIN + 1..1000).contains(&without_cfi),
        "the walk reached the caller through a frame without CFI ({without_cfi}): the check cannot fail"
    );
    eprintln!(
        "unwound from the handler to the C caller in {} frames; without CFI the walk stops ({without_cfi})",
        through_c - 1000
    );
}

/// A C caller generated for `c_sig` calls a callback planned for `rust_sig` (the same unless a
/// negative control) with pattern bytes; the handler compares every value byte of every
/// argument (by `rust_sig`'s types) and returns pattern bytes, which must come back to C.
fn check_generated(
    oracle: &Oracle,
    name: &str,
    c_sig: &Signature,
    rust_sig: &Signature,
    pattern: &mut Pattern,
) -> Result<(), String> {
    let args: Vec<Vec<u8>> = c_sig.args().iter().map(|t| pattern.value(t)).collect();
    let ret_bytes = rust_sig.ret().map_or_else(Vec::new, |t| pattern.value(t));
    let seen = Seen::default();
    let (in_handler, expected, to_return) = (seen.clone(), args.clone(), ret_bytes.clone());
    let cb = Callback::new(rust_sig, move |a, r| {
        for (i, want) in expected.iter().enumerate() {
            in_handler.bytes(a, i, want);
        }
        if let Err(e) = r.set_bytes(&to_return) {
            in_handler.push(format!("result: {e}"));
        }
    })
    .map_err(|e| format!("{name}: {e}"))?;
    let ptrs: Vec<*const c_void> = args.iter().map(|a| a.as_ptr().cast()).collect();
    let ret_size = c_sig.ret().map_or(0, Type::size);
    let mut ret = aligned(ret_size);
    // SAFETY: `void cbref_<name>(const void *f, void *const *a, void *ret)`, generated for c_sig;
    // the arguments and the result buffer have its sizes.
    unsafe {
        std::mem::transmute::<*const c_void, extern "C" fn(*const c_void, *const *const c_void, *mut c_void)>(
            oracle.sym(&format!("cbref_{name}")),
        )(cb.as_ptr(), ptrs.as_ptr(), ret.as_mut_ptr().cast())
    };
    let mismatches = seen.take();
    if !mismatches.is_empty() {
        return Err(format!("{name}: {}\n sig: {c_sig:?}", mismatches.join("; ")));
    }
    if ret_size != ret_bytes.len() {
        return Err(format!("{name}: C's result has {ret_size} bytes, the callback's {}", ret_bytes.len()));
    }
    if let Some(t) = c_sig.ret() {
        // SAFETY: the buffer holds at least ret_size bytes.
        let got = unsafe { std::slice::from_raw_parts(ret.as_ptr().cast::<u8>(), ret_size) };
        for (o, l) in value_ranges(t) {
            if got[o..o + l] != ret_bytes[o..o + l] {
                return Err(format!(
                    "{name}: the C caller got result bytes {:02x?}, the handler returned {:02x?}\n sig: {c_sig:?}",
                    got, ret_bytes
                ));
            }
        }
    }
    Ok(())
}

fn generated_oracle(dir: &str, shapes: &[(String, Signature)]) -> Vec<(&'static str, Oracle)> {
    let dir = work_dir(dir);
    // Two translation units, compiled in parallel, once per optimisation level.
    let mut gens = [CGen::default(), CGen::default()];
    for (i, (name, sig)) in shapes.iter().enumerate() {
        gens[i % 2].callback_caller(name, sig);
    }
    let sources: Vec<PathBuf> = gens
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let path = dir.join(format!("callers{i}.c"));
            std::fs::write(&path, g.source()).expect("write generated C");
            path
        })
        .collect();
    let sources = [sources, vec![repo_file("oracle/runtime.c")]].concat();
    std::thread::scope(|s| {
        let builds: Vec<_> = CALLER_OPT_LEVELS
            .iter()
            .map(|&opt| {
                let (dir, sources) = (&dir, &sources);
                s.spawn(move || (opt, build_shared_with(dir, &format!("cbgen{}", &opt[1..]), sources, &[opt])))
            })
            .collect();
        builds
            .into_iter()
            .map(|b| {
                let (opt, lib) = b.join().expect("build the generated callers");
                (opt, Oracle::load(&lib))
            })
            .collect()
    })
}

/// How many random signatures the generated test runs (`NCCL_TRAMPOLINE_CALLBACK_COUNT`,
/// default 2000; the seed is the conformance suite's, `NCCL_TRAMPOLINE_FUZZ_SEED`).
fn random_shapes() -> Vec<(String, Signature)> {
    let count = std::env::var("NCCL_TRAMPOLINE_CALLBACK_COUNT").ok().and_then(|v| v.parse().ok()).unwrap_or(2000);
    let seed = std::env::var("NCCL_TRAMPOLINE_FUZZ_SEED")
        .ok()
        .and_then(|v| u64::from_str_radix(v.trim_start_matches("0x"), 16).ok())
        .unwrap_or(0x5eed_2026);
    let mut rng = Rng(seed);
    // The conformance suite's generator, its variadic calls left out (tests/variadic_callbacks.rs
    // has those): `count` signatures that are not variadic.
    std::iter::repeat_with(|| random_signature(&mut rng))
        .filter(|s| s.fixed_args().is_none())
        .take(count)
        .enumerate()
        .map(|(i, s)| (format!("random{i}"), s))
        .collect()
}

#[test]
fn generated_callers_match_the_c_compiler() {
    let mut shapes: Vec<(String, Signature)> = pinned_shapes()
        .into_iter()
        .chain(nccl_shapes())
        .filter(|(_, s)| s.fixed_args().is_none())
        .map(|(n, s)| (n.to_string(), s))
        .collect();
    let pinned = shapes.len();
    shapes.extend(random_shapes());
    let oracles = generated_oracle("callbacks-generated", &shapes);
    let compiler = compiler_version();
    let mut pattern = Pattern::new(0xcb);
    let (mut failures, mut known) = (Vec::new(), Vec::new());
    for (i, (name, sig)) in shapes.iter().enumerate() {
        let bug = known_compiler_bug(&compiler, sig);
        if let Some(bug) = bug {
            known.push(format!("{name} ({bug})"));
        }
        // Once per optimisation level, with different bytes each time.
        for (opt, oracle) in &oracles {
            let outcome = check_generated(oracle, name, sig, sig, &mut pattern).map_err(|e| format!("{opt}: {e}"));
            match (bug, outcome) {
                (None, Err(e)) => failures.push(e),
                // A pinned shape the oracle compiler is known to get wrong must still disagree
                // (they are made to meet the bug; a random one may miss it, e.g. an __int128 that
                // lands 16-aligned anyway): when the compiler is fixed, the exclusion goes.
                (Some(bug), Ok(())) if i < pinned => failures
                    .push(format!("{opt}: {name}: {compiler:?} now agrees with the ABI; drop the exclusion: {bug}")),
                _ => {}
            }
        }
    }
    eprintln!(
        "callbacks ({} {}, callers at {:?}): {} of {} signatures compared ({pinned} pinned, the rest random), {} mismatches; \
         not compared for the compiler's known bugs (the pinned ones still meet them): {} ({:?}...)",
        compiler.0,
        compiler.1,
        CALLER_OPT_LEVELS,
        shapes.len() - known.len(),
        shapes.len(),
        failures.len(),
        known.len(),
        known.iter().take(3).collect::<Vec<_>>()
    );
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}

/// The comparison sees a misplaced argument or result: a callback planned for another
/// signature than the one C calls it with (the same sizes, other registers or stack slots)
/// must fail the check.
#[test]
fn negative_controls_a_callback_planned_for_another_signature_is_seen() {
    let dl = agg(Aggregate::builder().field(Type::F64).field(Type::I64));
    let ld = agg(Aggregate::builder().field(Type::I64).field(Type::F64));
    let ll = agg(Aggregate::builder().field(Type::I64).field(Type::I64));
    let dd = agg(Aggregate::builder().field(Type::F64).field(Type::F64));
    let big = agg(Aggregate::builder().array(Type::I64, 3));
    // AAPCS64 returns both {double, int64_t} and {int64_t, double} in x0:x1 (neither is an
    // HFA): there the result control swaps an HFA (d0:d1) for two integers (x0:x1) instead.
    let swapped_result = if cfg!(target_arch = "aarch64") {
        (sig(vec![], Some(dd)), sig(vec![], Some(ll)))
    } else {
        (sig(vec![], Some(dl)), sig(vec![], Some(ld)))
    };
    let controls = [
        // The first integer and the first floating-point argument register swapped.
        ("swapped_classes", sig(vec![Type::F64, Type::I64], None), sig(vec![Type::I64, Type::F64], None)),
        // The result in a vector and an integer register (x86-64: xmm0 + rax; riscv64: fa0 +
        // a0), returned the other way round; AArch64: above.
        ("swapped_result", swapped_result.0, swapped_result.1),
        // x86-64: a struct on the stack (one integer register left), read from xmm0:xmm1;
        // elsewhere a struct in two integer registers, read from two floating-point ones.
        (
            "stack_struct",
            sig([vec![Type::I64; 5], vec![ll, Type::I64]].concat(), None),
            sig([vec![Type::I64; 5], vec![dd, Type::I64]].concat(), None),
        ),
        // The hidden result pointer (rdi / x8 / a0) ignored: the result read from the integer
        // result register instead of memory.
        ("hidden_pointer", sig(vec![Type::I64], Some(big)), sig(vec![Type::I64], Some(Type::I64))),
    ];
    let shapes: Vec<(String, Signature)> = controls.iter().map(|(n, c, _)| (n.to_string(), c.clone())).collect();
    let mut pattern = Pattern::new(0x0c);
    for (opt, oracle) in generated_oracle("callbacks-controls", &shapes) {
        for (name, c_sig, rust_sig) in &controls {
            let right = check_generated(&oracle, name, c_sig, c_sig, &mut pattern);
            assert!(right.is_ok(), "{opt}: {name}: the right plan fails");
            let wrong = check_generated(&oracle, name, c_sig, rust_sig, &mut pattern);
            assert!(wrong.is_err(), "{opt}: {name}: a callback planned for {rust_sig:?} passed for {c_sig:?}");
        }
    }
}

#[test]
fn callbacks_run_on_many_threads_at_once() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let seen = Seen::default();
    let in_handler = seen.clone();
    let signature = sig(vec![Type::I8, Type::U8, Type::I16, Type::U16, Type::I32, Type::U32], Some(Type::I64));
    let cb = Callback::new(&signature, move |a, r| {
        counted.fetch_add(1, Ordering::Relaxed);
        in_handler.arg(a, 0, -5i8);
        in_handler.arg(a, 5, 4000000000u32);
        r.set(-5i64 + 250 - 1234 + 65000 - 123456789 + 4000000000).unwrap();
    })
    .unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..500 {
                    assert_eq!(call_c("ints6", &cb), 0);
                }
            });
        }
    });
    assert_eq!(calls.load(Ordering::Relaxed), 2000);
    assert!(seen.take().is_empty());
}

#[test]
fn callbacks_are_reentrant() {
    let reenter = c_callers().sym("nt_cbc_reenter") as usize;
    let own = Arc::new(AtomicUsize::new(0));
    let me = own.clone();
    // handler(d) = 100 if d == 0, else nt_cbc_reenter(self, d - 1) + 1 = handler(d - 1) + 2.
    let cb = Callback::new(&sig(vec![Type::I32], Some(Type::I32)), move |a, r| {
        let depth = a.get::<i32>(0).unwrap();
        let value = if depth == 0 {
            100
        } else {
            // SAFETY: `int32_t nt_cbc_reenter(int32_t (*)(int32_t), int32_t)`; `me` holds this
            // callback's own entry, alive while it runs.
            unsafe {
                std::mem::transmute::<usize, extern "C" fn(usize, i32) -> i32>(reenter)(
                    me.load(Ordering::SeqCst),
                    depth - 1,
                ) + 1
            }
        };
        r.set(value).unwrap();
    })
    .unwrap();
    own.store(cb.as_ptr() as usize, Ordering::SeqCst);
    // SAFETY: as above.
    let top =
        unsafe { std::mem::transmute::<usize, extern "C" fn(usize, i32) -> i32>(reenter)(cb.as_ptr() as usize, 5) };
    assert_eq!(top, 100 + 2 * 5 + 1);
}

#[test]
fn drop_waits_for_calls_running_on_other_threads() {
    let started = Arc::new(std::sync::Barrier::new(2));
    let in_handler = started.clone();
    let cb = Callback::new(&sig(vec![Type::I32], Some(Type::I8)), move |_, r| {
        in_handler.wait();
        std::thread::sleep(std::time::Duration::from_millis(300));
        r.set(-7i8).unwrap();
    })
    .unwrap();
    let code = cb.as_ptr() as usize;
    let caller = std::thread::spawn(move || {
        let f = c_callers().sym("nt_cbc_ret_i8");
        // SAFETY: nt_cbc_ret_i8 takes the entry, which stays valid until the drop below returns.
        unsafe { std::mem::transmute::<*const c_void, extern "C" fn(usize) -> i32>(f)(code) }
    });
    started.wait();
    let t = std::time::Instant::now();
    drop(cb);
    let waited = t.elapsed();
    assert_eq!(caller.join().unwrap(), 0, "the running call completed normally");
    assert!(waited >= std::time::Duration::from_millis(200), "the drop returned after {waited:?}, during the call");
}

#[test]
fn the_views_refuse_wrong_reads_and_results_with_typed_errors() {
    let seen: Arc<Mutex<Vec<Error>>> = Arc::default();
    let errors = seen.clone();
    let signature = sig(vec![Type::I32, agg(Aggregate::builder().field(Type::I64).field(Type::I8))], Some(Type::I16));
    let cb = Callback::new(&signature, move |a, r| {
        let mut e = errors.lock().unwrap();
        let mut buf = [0u8; 15];
        e.push(a.get::<u32>(0).unwrap_err());
        e.push(a.get::<i32>(2).unwrap_err());
        e.push(a.read_bytes(1, &mut buf).unwrap_err());
        e.push(r.set(1i32).unwrap_err());
        e.push(r.set_bytes(&[1, 2, 3]).unwrap_err());
        assert_eq!((a.len(), r.c_type()), (2, Some(&Type::I16)));
        r.set(-2i16).unwrap();
    })
    .unwrap();
    #[repr(C)]
    struct LongChar(i64, i8);
    // SAFETY: the entry has the callback's signature: (int32_t, struct { int64_t; int8_t; }) -> int16_t.
    let f = unsafe { std::mem::transmute::<*const c_void, extern "C" fn(i32, LongChar) -> i16>(cb.as_ptr()) };
    assert_eq!(f(1, LongChar(2, 3)), -2);
    let i32_ = TypeDescription::Scalar("int32_t");
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            Error::CallbackArgumentType { index: 0, expected: i32_, got: TypeDescription::Scalar("uint32_t") },
            Error::ArgumentIndex { index: 2, count: 2 },
            Error::ValueSize { expected: 16, got: 15 },
            Error::CallbackResultType { expected: TypeDescription::Scalar("int16_t"), got: i32_ },
            Error::ValueSize { expected: 2, got: 3 },
        ]
    );
    // A variadic function type lists its named arguments only.
    let variadic = Signature::variadic(1, vec![Type::Pointer, Type::I32], None).unwrap();
    assert_eq!(
        Callback::new(&variadic, |_, _| {}).unwrap_err(),
        Error::VariadicCallbackArguments { named: 1, total: 2 }
    );
}

/// A handler that panics, or a callback called after its drop, ends the process with a message
/// (never unwinding into C, never running freed state). Each runs in a child process: this
/// test's executable, filtered to this test, with `NT_CALLBACK_CHILD` naming the case.
#[test]
fn panics_and_calls_after_drop_abort_with_a_message() {
    if let Ok(case) = std::env::var("NT_CALLBACK_CHILD") {
        let signature = sig(vec![Type::I32], Some(Type::I8));
        let cb = Callback::new(&signature, |a, _| panic!("handler saw {}", a.get::<i32>(0).unwrap())).unwrap();
        if case == "after_drop" {
            let f = c_callers().sym("nt_cbc_ret_i8");
            let code = cb.as_ptr() as usize;
            drop(cb);
            // SAFETY: deliberately a stale entry: the policy under test (nothing else took it).
            unsafe { std::mem::transmute::<*const c_void, extern "C" fn(usize) -> i32>(f)(code) };
        } else {
            call_c("ret_i8", &cb);
        }
        unreachable!("the call returned");
    }
    for (case, expected) in
        [("panic", "the handler of callback entry"), ("after_drop", "was called after its Callback was dropped")]
    {
        let out =
            common::rerun_self("panics_and_calls_after_drop_abort_with_a_message", &[("NT_CALLBACK_CHILD", case)]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), Some(6), "{case}: not SIGABRT: {:?}\n{stderr}", out.status);
        assert!(stderr.contains(expected), "{case}: no {expected:?} on stderr:\n{stderr}");
        assert!(stderr.contains("aborting"), "{case}:\n{stderr}");
        if case == "panic" {
            assert!(
                stderr.contains("handler saw 1") && stderr.contains("must not unwind into the C caller"),
                "{stderr}"
            );
        }
    }
}
