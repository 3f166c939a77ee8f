//! The typed form of callbacks ([`TypedCallback`]) called from C, the compiler as the oracle: the
//! hand-written callers of tests/c/callbacks.c (the same literals as `tests/callbacks.rs`'s
//! dynamic handlers check) call closures of the matching Rust types, for every type family:
//! integers of every width and narrow results, pointers, float/double mixes, stack arguments,
//! structs by value in registers, on the stack and in memory (the 128-byte `ncclUniqueId`),
//! struct results in registers and through the hidden pointer, `long double` and
//! `_Complex long double` through the x87 stack, `__int128`, complex, void. Then the
//! constructor's errors, the panic policy, threads and the drop.
//!
//! On every architecture with callback entries: x86-64, AArch64 and riscv64.
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")))]

mod common;

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use common::{build_shared, compiler_version, known_compiler_bug, repo_file, work_dir, Oracle};
use nccl_trampoline::{Aggregate, CArg, CLongDouble, CallbackValue, Complex, Error, Position, Type, TypedCallback};

fn c_callers() -> &'static Oracle {
    static LIB: OnceLock<Oracle> = OnceLock::new();
    LIB.get_or_init(|| {
        let dir = work_dir(&format!("typed-callbacks-{}", std::process::id()));
        let sources = [repo_file("tests/c/callbacks.c"), repo_file("tests/c/callbacks_probe.S")];
        Oracle::load(&build_shared(&dir, "callbacks", &sources))
    })
}

/// Runs `nt_cbc_<shape>(f)`: 0, or the line of tests/c/callbacks.c whose check failed.
fn call_c(shape: &str, f: *const c_void) -> i32 {
    let caller = c_callers().sym(&format!("nt_cbc_{shape}"));
    // SAFETY: every nt_cbc_<shape> takes one function pointer and returns int.
    unsafe { std::mem::transmute::<*const c_void, extern "C" fn(*const c_void) -> i32>(caller)(f) }
}

fn agg(b: nccl_trampoline::AggregateBuilder) -> Type {
    Type::Aggregate(b.build().unwrap())
}

/// The C structs of tests/c/callbacks.c, as typed callbacks receive and return them.
macro_rules! c_struct {
    ($name:ident($($t:ty),*) = $ty:expr) => {
        #[repr(C)]
        #[derive(Clone, Copy, Debug, PartialEq)]
        struct $name($($t),*);
        // SAFETY: the C struct of tests/c/callbacks.c, field for field.
        unsafe impl CArg for $name {
            const AGGREGATE: bool = true;
            fn c_type() -> Type {
                $ty
            }
        }
        // SAFETY: integers and floats only: every bit pattern is valid.
        unsafe impl CallbackValue for $name {}
    };
}
c_struct!(Ii(i32, i32) = agg(Aggregate::builder().field(Type::I32).field(Type::I32)));
c_struct!(Dd(f64, f64) = agg(Aggregate::builder().field(Type::F64).field(Type::F64)));
c_struct!(Dl(f64, i64) = agg(Aggregate::builder().field(Type::F64).field(Type::I64)));
c_struct!(Fid(f32, i32, f64) = agg(Aggregate::builder().field(Type::F32).field(Type::I32).field(Type::F64)));
c_struct!(C3(i8, i8, i8) = agg(Aggregate::builder().array(Type::I8, 3)));
c_struct!(Ll(i64, i64) = agg(Aggregate::builder().field(Type::I64).field(Type::I64)));
c_struct!(Iii(i32, i32, i32) = agg(Aggregate::builder().array(Type::I32, 3)));
c_struct!(Fff(f32, f32, f32) = agg(Aggregate::builder().array(Type::F32, 3)));
c_struct!(Big24(i64, f64, i32) = agg(Aggregate::builder().field(Type::I64).field(Type::F64).field(Type::I32)));
c_struct!(UniqueId([i8; 128]) = agg(Aggregate::builder().array(Type::I8, 128)));

/// What the closures saw that they did not expect, reported after the call.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<String>>>);

impl Seen {
    fn check<T: PartialEq + std::fmt::Debug>(&self, what: &str, got: T, want: T) {
        if got != want {
            self.0.lock().unwrap().push(format!("{what}: {got:?}, expected {want:?}"));
        }
    }
    /// `check`, then `value` (the closure's result).
    fn checked<T: PartialEq + std::fmt::Debug, V>(&self, what: &str, got: T, want: T, value: V) -> V {
        self.check(what, got, want);
        value
    }
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// Calls the C caller of `shape` with the callback once and collects what went wrong.
fn run<A, R>(failures: &mut Vec<String>, seen: &Seen, shape: &str, cb: Result<TypedCallback<A, R>, Error>)
where
    A: nccl_trampoline::CallbackArgTypes,
    R: nccl_trampoline::CallbackReturn,
{
    let cb = match cb {
        Ok(cb) => cb,
        Err(e) => return failures.push(format!("{shape}: {e}")),
    };
    let line = call_c(shape, cb.as_ptr());
    for m in seen.take() {
        failures.push(format!("{shape}: argument {m}"));
    }
    if line != 0 {
        failures.push(format!("{shape}: the C caller's check at tests/c/callbacks.c:{line} failed (the result)"));
    }
}

fn ld(v: f64) -> CLongDouble {
    CLongDouble::from_f64(v)
}

/// The 10 value bytes of an x87 long double (the rest is padding C leaves as it is).
fn ld_bytes(v: CLongDouble) -> [u8; 10] {
    v.0[..10].try_into().unwrap()
}

#[test]
fn typed_callbacks_called_from_c_for_every_type_family() {
    let mut f = Vec::new();
    let s = Seen::default();
    let t = s.clone();
    run(
        &mut f,
        &s,
        "ints6",
        TypedCallback::new(move |a: i8, b: u8, c: i16, d: u16, e: i32, g: u32| -> i64 {
            t.check("ints", (a, b, c, d, e, g), (-5, 250, -1234, 65000, -123456789, 4000000000));
            i64::from(a) + i64::from(b) + i64::from(c) + i64::from(d) + i64::from(e) + i64::from(g)
        }),
    );
    let t = s.clone();
    run(&mut f, &s, "ret_i8", TypedCallback::new(move |a: i32| -> i8 { t.checked("0", a, 1, -7) }));
    let t = s.clone();
    run(&mut f, &s, "ret_u8", TypedCallback::new(move |a: i32| -> u8 { t.checked("0", a, 2, 249) }));
    let t = s.clone();
    run(&mut f, &s, "ret_i16", TypedCallback::new(move |a: i32| -> i16 { t.checked("0", a, 3, -30000) }));
    let t = s.clone();
    run(&mut f, &s, "ret_u16", TypedCallback::new(move |a: i32| -> u16 { t.checked("0", a, 4, 60000) }));
    let t = s.clone();
    run(&mut f, &s, "ret_u32", TypedCallback::new(move |a: i32| -> u32 { t.checked("0", a, 5, 0xfedc_ba98) }));
    run(&mut f, &s, "ret_ptr", TypedCallback::new(|p: *mut u8| -> *mut u8 { p.wrapping_add(5) }));
    let t = s.clone();
    run(
        &mut f,
        &s,
        "fd4",
        TypedCallback::new(move |a: f32, b: f64, c: f32, d: f64| -> f64 {
            t.check("floats", (a, b, c, d), (1.5, -2.25, 3.125, 1e300));
            0.1
        }),
    );
    let t = s.clone();
    run(
        &mut f,
        &s,
        "df",
        TypedCallback::new(move |a: f64, b: f32| -> f32 { t.checked("floats", (a, b), (6.5, -0.75), -3.5) }),
    );
    let t = s.clone();
    run(
        &mut f,
        &s,
        "ints10",
        TypedCallback::new(
            move |a: i64, b: i64, c: i64, d: i64, e: i64, g: i64, h: i64, i: i64, j: i32, k: i8| -> i64 {
                t.check("ints", (a, b, c, d, e, g, h, i), (1, -2, 3, -4, 5, -6, 0x7000_0000_0000_0007, -8));
                t.check("stack", (j, k), (-9, -10));
                0x0123_4567_89ab_cdef
            },
        ),
    );
    let t = s.clone();
    run(
        &mut f,
        &s,
        "floats11",
        TypedCallback::new(
            move |a: f64, b: f64, c: f64, d: f64, e: f64, g: f64, h: f64, i: f64, j: f32, k: f64, l: f32| -> f64 {
                t.check("xmm", [a, b, c, d, e, g, h, i], [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5]);
                t.check("stack", (j, k, l), (8.25, 9.75, -10.5));
                12345.5
            },
        ),
    );
    let t = s.clone();
    run(
        &mut f,
        &s,
        "small_structs",
        TypedCallback::new(move |a: Ii, b: Dd, c: Dl, d: Fid, e: C3| -> i64 {
            t.check("ii", a, Ii(-11, 22));
            t.check("dd", b, Dd(3.5, -4.5));
            t.check("dl", c, Dl(5.75, -0x666_6666_6666));
            t.check("fid", d, Fid(7.5, -8, 9.125));
            t.check("c3", e, C3(b'x' as i8, b'y' as i8, b'z' as i8));
            424242
        }),
    );
    let t = s.clone();
    run(
        &mut f,
        &s,
        "struct_to_stack",
        TypedCallback::new(move |a: i64, b: i64, c: i64, d: i64, e: i64, l: Ll, g: i64| -> i64 {
            t.check("ints", (a, b, c, d, e, g), (1, 2, 3, 4, 5, 6));
            t.check("ll", l, Ll(0x1111_1111_1111_1111, -0x2222_2222_2222_2222));
            7
        }),
    );
    let t = s.clone();
    run(
        &mut f,
        &s,
        "memory_structs",
        TypedCallback::new(move |b: Big24, p: *const c_void, n: i32, id: UniqueId, rank: i32| -> i32 {
            t.check("big24", b, Big24(-0x1_2345_6789, 2.5, 77));
            t.check("scalars", (p as usize, n, rank), (0x12_3456_7890, 4, 3));
            let want: Vec<i8> = (0..128).map(|i: u32| (i * 7 + 3) as u8 as i8).collect();
            t.check("id", &id.0[..], &want[..]);
            11
        }),
    );
    let t = s.clone();
    run(
        &mut f,
        &s,
        "ret_ll",
        TypedCallback::new(move |a: i32| -> Ll { t.checked("0", a, 1, Ll(-1, 0x7766_5544_3322_1100)) }),
    );
    let t = s.clone();
    run(&mut f, &s, "ret_dd", TypedCallback::new(move |a: i32| -> Dd { t.checked("0", a, 2, Dd(1.25, -2.5)) }));
    let t = s.clone();
    run(&mut f, &s, "ret_dl", TypedCallback::new(move |a: i32| -> Dl { t.checked("0", a, 3, Dl(0.125, -99)) }));
    let t = s.clone();
    run(&mut f, &s, "ret_iii", TypedCallback::new(move |a: i32| -> Iii { t.checked("0", a, 4, Iii(1, -2, 3)) }));
    let t = s.clone();
    run(&mut f, &s, "ret_fff", TypedCallback::new(move |a: i32| -> Fff { t.checked("0", a, 5, Fff(1.5, 2.5, -3.5)) }));
    let t = s.clone();
    run(
        &mut f,
        &s,
        "ret_big",
        TypedCallback::new(move |a: i32, b: f64, c: Big24| -> Big24 {
            t.check("scalars", (a, b), (-3, 0.5));
            t.check("big24", c, Big24(5, 6.5, 7));
            Big24(0x0102_0304_0506_0708, -1.75, -42)
        }),
    );
    let t = s.clone();
    run(
        &mut f,
        &s,
        "long_double",
        TypedCallback::new(move |a: CLongDouble, b: i32, c: CLongDouble, d: f64| -> CLongDouble {
            t.check("a", ld_bytes(a), ld_bytes(ld(1.5)));
            t.check("b, d", (b, d), (2, 4.0));
            t.check("c", ld_bytes(c), ld_bytes(ld(-3.25)));
            ld(-0.0625)
        }),
    );
    let t = s.clone();
    run(
        &mut f,
        &s,
        "complex_ld",
        TypedCallback::new(move |a: i32, b: CLongDouble| -> Complex<CLongDouble> {
            t.check("a", a, 9);
            t.check("b", ld_bytes(b), ld_bytes(ld(2.5)));
            Complex { re: ld(3.0), im: ld(-4.5) }
        }),
    );
    let t = s.clone();
    run(
        &mut f,
        &s,
        "int128",
        TypedCallback::new(move |a: i128, b: i32, c: u128| -> i128 {
            t.check("a", a, ((-0x0123_4567_89ab_cdefi128) << 64) | 0xfedc_ba98_7654_3210);
            t.check("b", b, -1);
            t.check("c", c, (0x1111_2222_3333_4444u128 << 64) | 0x5555_6666_7777_8888);
            (0x7fff_ffff_ffff_ffffi128 << 64) | 1
        }),
    );
    let t = s.clone();
    run(
        &mut f,
        &s,
        "complex",
        TypedCallback::new(move |a: Complex<f32>, b: Complex<f64>| -> Complex<f64> {
            t.check("a", (a.re, a.im), (1.5, 2.5));
            t.check("b", (b.re, b.im), (-3.5, 4.5));
            Complex { re: 0.25, im: -0.75 }
        }),
    );
    // SAFETY: the C caller passes the address of its own int32_t.
    run(&mut f, &s, "void", TypedCallback::new(|p: *mut i32, v: i32| unsafe { *p = v + 1 }));
    assert!(f.is_empty(), "{} failures:\n{}", f.len(), f.join("\n"));
}

/// A negative control: the same C caller with a closure returning the wrong value fails, and one
/// reading the arguments as other types sees other values (so the checks above can fail).
#[test]
fn typed_negative_controls_are_seen() {
    let wrong = TypedCallback::new(|_: i32| -> Big24 { Big24(0x0102_0304_0506_0708, -1.75, -41) }).unwrap();
    assert_ne!(call_c("ret_big", wrong.as_ptr()), 0, "a wrong result passed");
    let seen = Seen::default();
    let t = seen.clone();
    // The C caller passes (int64_t x 5, struct ll, int64_t); reading the struct as two int64_t.
    let shifted = TypedCallback::new(move |a: i64, _: i64, _: i64, _: i64, _: i64, l: Ll, g: i64| -> i64 {
        t.check("a", a, 1);
        t.check("ll", l, Ll(0x1111_1111_1111_1111, -0x2222_2222_2222_2222));
        t.check("g", g, 6);
        7
    })
    .unwrap();
    assert_eq!(call_c("struct_to_stack", shifted.as_ptr()), 0);
    assert!(seen.take().is_empty());
    // Only SysV runs out of integer registers here (six of them: the struct goes to the stack);
    // AAPCS64 and LP64D pass it in x5:x6 / a5:a6, where reading it as two integers is right.
    if !cfg!(target_arch = "x86_64") {
        return;
    }
    let t = seen.clone();
    let misread = TypedCallback::new(move |_: i64, _: i64, _: i64, _: i64, _: i64, a: i64, b: i64, g: i64| -> i64 {
        t.check("as ints", (a, b, g), (0x1111_1111_1111_1111, -0x2222_2222_2222_2222, 6));
        7
    })
    .unwrap();
    call_c("struct_to_stack", misread.as_ptr());
    assert!(!seen.take().is_empty(), "a struct on the stack read as registers was not seen");
}

/// The typed C function pointer is the callback: Rust can call it as C would.
#[test]
fn as_fn_is_the_typed_c_function_pointer() {
    let scale = 3;
    let cb = TypedCallback::new(move |a: i32, b: i32| -> i32 { a * scale + b }).unwrap();
    let f: unsafe extern "C" fn(i32, i32) -> i32 = cb.as_fn();
    assert_eq!(f as usize, cb.as_ptr() as usize);
    // SAFETY: the callback lives.
    assert_eq!(unsafe { f(4, 5) }, 17);
    assert_eq!(cb.signature().args(), &[Type::I32, Type::I32]);
    assert_eq!(cb.signature().ret(), Some(&Type::I32));
    let none = TypedCallback::new(|| {}).unwrap();
    // SAFETY: as above.
    unsafe { none.as_fn()() };
}

/// A `CallbackValue` whose Rust layout is not its C type's is refused when the callback is
/// made (here a struct claiming to be 12 bytes that is 16).
#[test]
fn a_wrong_layout_is_refused_when_the_callback_is_made() {
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Wrong(i64, i32);
    // SAFETY: deliberately wrong for this test: the constructor must refuse it before any call.
    unsafe impl CArg for Wrong {
        fn c_type() -> Type {
            agg(Aggregate::builder().array(Type::I32, 3))
        }
    }
    // SAFETY: as above.
    unsafe impl CallbackValue for Wrong {}
    let e = TypedCallback::new(|_: i32, _: Wrong| {}).unwrap_err();
    assert_eq!(
        e,
        Error::CallbackLayout { position: Position::Argument(1), c_size: 12, c_align: 4, rust_size: 16, rust_align: 8 }
    );
    assert_eq!(
        e.to_string(),
        "the argument 1 of a typed callback is 12 bytes aligned to 4 in C but 16 bytes aligned to 8 in Rust"
    );
    let e = TypedCallback::new(|| -> Wrong { Wrong(0, 0) }).unwrap_err();
    assert!(matches!(e, Error::CallbackLayout { position: Position::Result, .. }), "{e:?}");
}

/// Many threads call one typed callback through C at once.
#[test]
fn typed_callbacks_run_on_many_threads_at_once() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let cb = TypedCallback::new(move |a: i8, b: u8, c: i16, d: u16, e: i32, g: u32| -> i64 {
        counted.fetch_add(1, Ordering::Relaxed);
        i64::from(a) + i64::from(b) + i64::from(c) + i64::from(d) + i64::from(e) + i64::from(g)
    })
    .unwrap();
    let f = cb.as_ptr() as usize;
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(move || {
                for _ in 0..500 {
                    assert_eq!(call_c("ints6", f as *const c_void), 0);
                }
            });
        }
    });
    assert_eq!(calls.load(Ordering::Relaxed), 2000);
}

/// A typed closure that panics aborts the process with the dynamic form's message (in a child
/// process: this test's executable, filtered to this test).
#[test]
fn a_typed_panic_aborts_with_a_message() {
    if std::env::var_os("NT_TYPED_CHILD").is_some() {
        let cb = TypedCallback::new(|a: i32| -> i8 { panic!("typed closure saw {a}") }).unwrap();
        call_c("ret_i8", cb.as_ptr());
        unreachable!("the call returned");
    }
    let out = common::rerun_self("a_typed_panic_aborts_with_a_message", &[("NT_TYPED_CHILD", "1")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(6), "not SIGABRT: {:?}\n{stderr}", out.status);
    assert!(stderr.contains("typed closure saw 1") && stderr.contains("must not unwind into the C caller"), "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// The direct path (`TypedCallback::direct`): the same C callers reach capture-free closures
// through cb_common's tail jump, without the record. The closures capture nothing, so what
// they see goes to a thread-local list: C calls them on the thread that called C, and the test
// harness runs tests on threads of their own at the same time.

thread_local! {
    /// Mismatches the direct closures this thread ran saw, since the last `run_direct`.
    static DIRECT_SEEN: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn see<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) {
    if got != want {
        DIRECT_SEEN.with(|seen| seen.borrow_mut().push(format!("{what}: {got:?}, expected {want:?}")));
    }
}

/// Calls the C caller of `shape` with the direct callback once and collects what went wrong.
fn run_direct<A, R>(failures: &mut Vec<String>, shape: &str, cb: Result<TypedCallback<A, R>, Error>)
where
    A: nccl_trampoline::CallbackArgTypes,
    R: nccl_trampoline::CallbackReturn,
{
    let cb = match cb {
        Ok(cb) => cb,
        Err(e) => return failures.push(format!("{shape}: {e}")),
    };
    let line = call_c(shape, cb.as_ptr());
    let mut seen: Vec<String> = DIRECT_SEEN
        .with(|seen| std::mem::take(&mut *seen.borrow_mut()))
        .into_iter()
        .map(|m| format!("{shape} (direct): argument {m}"))
        .collect();
    if line != 0 {
        seen.push(format!("{shape} (direct): the C caller's check at tests/c/callbacks.c:{line} failed"));
    }
    // A shape the oracle compiler is known to get wrong (clang < 20's __int128 in memory on
    // x86-64) must still disagree, and is not counted: the direct path is rustc's placement,
    // which follows the ABI.
    let compiler = compiler_version();
    match known_compiler_bug(&compiler, cb.signature()) {
        None => failures.extend(seen),
        Some(bug) if seen.is_empty() => {
            failures.push(format!("{shape} (direct): {compiler:?} now agrees with the ABI; drop the exclusion: {bug}"))
        }
        Some(bug) => eprintln!("{shape} (direct): not compared, the compiler's known bug still reproduced: {bug}"),
    }
}

#[test]
fn direct_callbacks_called_from_c_for_every_type_family() {
    let mut f = Vec::new();
    run_direct(
        &mut f,
        "ints6",
        TypedCallback::direct(|a: i8, b: u8, c: i16, d: u16, e: i32, g: u32| -> i64 {
            see("ints", (a, b, c, d, e, g), (-5, 250, -1234, 65000, -123456789, 4000000000));
            i64::from(a) + i64::from(b) + i64::from(c) + i64::from(d) + i64::from(e) + i64::from(g)
        }),
    );
    run_direct(&mut f, "ret_i8", TypedCallback::direct(|a: i32| -> i8 { (a - 8) as i8 }));
    run_direct(&mut f, "ret_u8", TypedCallback::direct(|a: i32| -> u8 { (a + 247) as u8 }));
    run_direct(&mut f, "ret_i16", TypedCallback::direct(|a: i32| -> i16 { (a - 30003) as i16 }));
    run_direct(&mut f, "ret_u16", TypedCallback::direct(|a: i32| -> u16 { (a + 59996) as u16 }));
    run_direct(&mut f, "ret_u32", TypedCallback::direct(|a: i32| -> u32 { 0xfedc_ba93 + a as u32 }));
    run_direct(&mut f, "ret_ptr", TypedCallback::direct(|p: *mut u8| -> *mut u8 { p.wrapping_add(5) }));
    run_direct(
        &mut f,
        "fd4",
        TypedCallback::direct(|a: f32, b: f64, c: f32, d: f64| -> f64 {
            see("floats", (a, b, c, d), (1.5, -2.25, 3.125, 1e300));
            0.1
        }),
    );
    run_direct(
        &mut f,
        "df",
        TypedCallback::direct(|a: f64, b: f32| -> f32 {
            see("floats", (a, b), (6.5, -0.75));
            -3.5
        }),
    );
    run_direct(
        &mut f,
        "ints10",
        TypedCallback::direct(|a: i64, b: i64, c: i64, d: i64, e: i64, g: i64, h: i64, i: i64, j: i32, k: i8| -> i64 {
            see("ints", (a, b, c, d, e, g, h, i), (1, -2, 3, -4, 5, -6, 0x7000_0000_0000_0007, -8));
            see("stack", (j, k), (-9, -10));
            0x0123_4567_89ab_cdef
        }),
    );
    run_direct(
        &mut f,
        "floats11",
        TypedCallback::direct(
            |a: f64, b: f64, c: f64, d: f64, e: f64, g: f64, h: f64, i: f64, j: f32, k: f64, l: f32| -> f64 {
                see("xmm", [a, b, c, d, e, g, h, i], [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5]);
                see("stack", (j, k, l), (8.25, 9.75, -10.5));
                12345.5
            },
        ),
    );
    run_direct(
        &mut f,
        "small_structs",
        TypedCallback::direct(|a: Ii, b: Dd, c: Dl, d: Fid, e: C3| -> i64 {
            see("ii", a, Ii(-11, 22));
            see("dd", b, Dd(3.5, -4.5));
            see("dl", c, Dl(5.75, -0x666_6666_6666));
            see("fid", d, Fid(7.5, -8, 9.125));
            see("c3", e, C3(b'x' as i8, b'y' as i8, b'z' as i8));
            424242
        }),
    );
    run_direct(
        &mut f,
        "struct_to_stack",
        TypedCallback::direct(|a: i64, b: i64, c: i64, d: i64, e: i64, l: Ll, g: i64| -> i64 {
            see("ints", (a, b, c, d, e, g), (1, 2, 3, 4, 5, 6));
            see("ll", l, Ll(0x1111_1111_1111_1111, -0x2222_2222_2222_2222));
            7
        }),
    );
    run_direct(
        &mut f,
        "memory_structs",
        TypedCallback::direct(|b: Big24, p: *const c_void, n: i32, id: UniqueId, rank: i32| -> i32 {
            see("big24", b, Big24(-0x1_2345_6789, 2.5, 77));
            see("scalars", (p as usize, n, rank), (0x12_3456_7890, 4, 3));
            let want: Vec<i8> = (0..128).map(|i: u32| (i * 7 + 3) as u8 as i8).collect();
            see("id", &id.0[..], &want[..]);
            11
        }),
    );
    run_direct(&mut f, "ret_ll", TypedCallback::direct(|a: i32| -> Ll { Ll(-a as i64, 0x7766_5544_3322_1100) }));
    run_direct(&mut f, "ret_dd", TypedCallback::direct(|a: i32| -> Dd { Dd(f64::from(a) * 0.625, -2.5) }));
    run_direct(&mut f, "ret_dl", TypedCallback::direct(|a: i32| -> Dl { Dl(0.125, -96 - i64::from(a)) }));
    run_direct(&mut f, "ret_iii", TypedCallback::direct(|a: i32| -> Iii { Iii(a - 3, -2, 3) }));
    run_direct(&mut f, "ret_fff", TypedCallback::direct(|a: i32| -> Fff { Fff(a as f32 - 3.5, 2.5, -3.5) }));
    run_direct(
        &mut f,
        "ret_big",
        TypedCallback::direct(|a: i32, b: f64, c: Big24| -> Big24 {
            see("scalars", (a, b), (-3, 0.5));
            see("big24", c, Big24(5, 6.5, 7));
            Big24(0x0102_0304_0506_0708, -1.75, -42)
        }),
    );
    run_direct(
        &mut f,
        "int128",
        TypedCallback::direct(|a: i128, b: i32, c: u128| -> i128 {
            see("a", a, ((-0x0123_4567_89ab_cdefi128) << 64) | 0xfedc_ba98_7654_3210);
            see("b", b, -1);
            see("c", c, (0x1111_2222_3333_4444u128 << 64) | 0x5555_6666_7777_8888);
            (0x7fff_ffff_ffff_ffffi128 << 64) | 1
        }),
    );
    run_direct(
        &mut f,
        "int128_late",
        TypedCallback::direct(|a: i64, b: i64, c: i64, d: i64, e: i64, x: i128, g: i64, h: i64, y: i128| -> i128 {
            see("ints", (a, b, c, d, e, g, h), (1, 2, 3, 4, 5, 6, 7));
            see("x", x, (0x0102_0304_0506_0708i128 << 64) | 0x1112_1314_1516_1718);
            see("y", y, (-2i128 << 64) | 0x2122_2324_2526_2728);
            x + y + i128::from(a + b + c + d + e + g + h)
        }),
    );
    run_direct(
        &mut f,
        "int128_split",
        TypedCallback::direct(|a: i64, b: i64, c: i64, d: i64, e: i64, g: i64, h: i64, x: i128, z: i64| -> i128 {
            see("ints", (a, b, c, d, e, g, h, z), (1, 2, 3, 4, 5, 6, 7, -8));
            see("x", x, (0x3132_3334_3536_3738i128 << 64) | 0x4142_4344_4546_4748);
            x + i128::from(a + b + c + d + e + g + h + z)
        }),
    );
    run_direct(
        &mut f,
        "complex",
        TypedCallback::direct(|a: Complex<f32>, b: Complex<f64>| -> Complex<f64> {
            see("a", (a.re, a.im), (1.5, 2.5));
            see("b", (b.re, b.im), (-3.5, 4.5));
            Complex { re: 0.25, im: -0.75 }
        }),
    );
    // SAFETY: the C caller passes the address of its own int32_t.
    run_direct(&mut f, "void", TypedCallback::direct(|p: *mut i32, v: i32| unsafe { *p = v + 1 }));
    // A function item is a handler that captures nothing, too.
    fn fd4(a: f32, b: f64, c: f32, d: f64) -> f64 {
        see("floats", (a, b, c, d), (1.5, -2.25, 3.125, 1e300));
        0.1
    }
    run_direct(&mut f, "fd4", TypedCallback::direct(fd4));
    assert!(f.is_empty(), "{} failures:\n{}", f.len(), f.join("\n"));
}

/// Negative controls of the direct path: a wrong result and a misread argument are seen.
#[test]
fn direct_negative_controls_are_seen() {
    let mut f = Vec::new();
    run_direct(
        &mut f,
        "ret_big",
        TypedCallback::direct(|_: i32, _: f64, _: Big24| Big24(0x0102_0304_0506_0708, -1.75, -41)),
    );
    // A wrong expectation and a wrong result (shape `ints6`: no oracle compiler's known bug
    // applies, so both must be seen with every compiler).
    run_direct(
        &mut f,
        "ints6",
        TypedCallback::direct(|_: i8, _: u8, _: i16, _: u16, _: i32, g: u32| -> i64 {
            see("g", g, 0);
            0
        }),
    );
    assert_eq!(f.len(), 3, "{f:?}");
}

/// The direct path refuses the types Rust's `extern "C"` does not place as C does, wherever
/// they are, with a typed error.
#[test]
fn direct_refuses_long_double_and_aligned_structs() {
    let e = TypedCallback::direct(|_: i32, _: CLongDouble| {}).unwrap_err();
    assert_eq!(
        e,
        Error::DirectCallbackType {
            position: Position::Argument(1),
            what: "a long double (Rust has no C long double)"
        }
    );
    assert_eq!(
        e.to_string(),
        "the argument 1 of a direct callback is a long double (Rust has no C long double); TypedCallback::new takes it"
    );
    let e =
        TypedCallback::direct(|_: i32| -> Complex<CLongDouble> { Complex { re: ld(0.0), im: ld(0.0) } }).unwrap_err();
    assert!(
        matches!(e, Error::DirectCallbackType { position: Position::Result, what } if what.contains("_Complex long double")),
        "{e:?}"
    );

    #[repr(C)]
    #[derive(Clone, Copy)]
    struct WithLd(i32, CLongDouble);
    // SAFETY: `struct { int32_t; long double; }`, this layout.
    unsafe impl CArg for WithLd {
        const AGGREGATE: bool = true;
        fn c_type() -> Type {
            agg(Aggregate::builder().field(Type::I32).field(Type::LongDouble))
        }
    }
    // SAFETY: an integer and a long double's bytes: every pattern is valid.
    unsafe impl CallbackValue for WithLd {}
    let e = TypedCallback::direct(|_: WithLd| {}).unwrap_err();
    assert!(
        matches!(e, Error::DirectCallbackType { position: Position::Argument(0), what } if what.starts_with("a long double")),
        "{e:?}"
    );

    #[repr(C, align(16))]
    #[derive(Clone, Copy)]
    struct Aligned(i64);
    // SAFETY: `struct __attribute__((aligned(16))) { int64_t; }`, this layout.
    unsafe impl CArg for Aligned {
        const AGGREGATE: bool = true;
        fn c_type() -> Type {
            Type::Aggregate(Aggregate::from_fields(16, 16, vec![nccl_trampoline::Field::new(0, Type::I64)]).unwrap())
        }
    }
    // SAFETY: an integer and padding.
    unsafe impl CallbackValue for Aligned {}
    let e = TypedCallback::direct(|| -> Aligned { Aligned(0) }).unwrap_err();
    assert!(
        matches!(e, Error::DirectCallbackType { position: Position::Result, what } if what.contains("alignment")),
        "{e:?}"
    );
    // The record path takes them.
    assert!(TypedCallback::new(|| -> Aligned { Aligned(0) }).is_ok());
    assert!(TypedCallback::new(|_: i32, _: CLongDouble| {}).is_ok());
}

/// A direct closure that panics aborts the process with the direct path's message (which also
/// shows the call took the direct path: the dispatcher's message names the entry instead).
#[test]
fn a_direct_panic_aborts_with_a_message() {
    if std::env::var_os("NT_DIRECT_CHILD").is_some() {
        let cb = TypedCallback::direct(|a: i32| -> i8 { panic!("direct closure saw {a}") }).unwrap();
        call_c("ret_i8", cb.as_ptr());
        unreachable!("the call returned");
    }
    let out = common::rerun_self("a_direct_panic_aborts_with_a_message", &[("NT_DIRECT_CHILD", "1")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(6), "not SIGABRT: {:?}\n{stderr}", out.status);
    assert!(
        stderr.contains("direct closure saw 1")
            && stderr.contains("the handler of a direct callback panicked")
            && stderr.contains("must not unwind into the C caller"),
        "{stderr}"
    );
}

/// Dropping a direct callback clears its entry's direct target: the next callback to take the
/// entry (a typed one on the record path) runs its own closure there, not the stale function.
/// In a child process, so that no other test takes the entry first.
#[test]
fn a_dropped_direct_entry_is_reused_by_a_record_path_callback() {
    if std::env::var_os("NT_DIRECT_REUSE_CHILD").is_none() {
        let out = common::rerun_self(
            "a_dropped_direct_entry_is_reused_by_a_record_path_callback",
            &[("NT_DIRECT_REUSE_CHILD", "1")],
        );
        assert!(out.status.success(), "{:?}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
        return;
    }
    let direct = TypedCallback::direct(|a: i32| -> i8 { (a - 8) as i8 }).unwrap();
    assert_eq!(call_c("ret_i8", direct.as_ptr()), 0);
    let (index, code) = (direct.pool_index(), direct.as_ptr());
    drop(direct);
    // Entries are reused oldest release first: take them until the dropped one comes back.
    let calls = Arc::new(AtomicUsize::new(0));
    let mut held = Vec::new();
    let reused = loop {
        let counted = calls.clone();
        let cb = TypedCallback::new(move |a: i32| -> i8 {
            counted.fetch_add(1, Ordering::SeqCst);
            (a - 8) as i8
        })
        .unwrap();
        if cb.pool_index() == index {
            break cb;
        }
        held.push(cb);
    };
    assert_eq!(reused.as_ptr(), code);
    assert_eq!(call_c("ret_i8", reused.as_ptr()), 0);
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the reused entry did not run the new closure");
    drop((reused, held));
}
