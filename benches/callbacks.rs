//! Cost of one callback call from C: a C loop (benches/c/callback_loop.c) calls a function
//! pointer N times, the pointer being
//!
//! - `direct`: a Rust `extern "C" fn` of the same signature (the floor: C calling Rust with no
//!   callback machinery);
//! - `typed`: a [`TypedCallback`] of a closure doing the same work;
//! - `typed_direct`: the same closure (it captures nothing) made with
//!   [`TypedCallback::direct`]: the entry tail-jumps to an `extern "C"` function monomorphised
//!   for it, no record;
//! - `dynamic`: a [`Callback`] whose handler reads its arguments through `CallbackArgs::get` /
//!   `read_bytes` and sets its result with `CallbackResult::set` (checked, per call);
//! - `libffi`: a libffi closure (`ffi_closure_alloc` + `ffi_prep_closure_loc`) whose Rust
//!   function reads the argument pointers libffi gives it.
//!
//! Four shapes: `ii` `int32_t (int32_t, int32_t)`; `mixed8` `double (int32_t, double, int64_t,
//! double, int32_t, double, int64_t, double)`; `pair16` `int64_t (struct { int64_t a, b; },
//! int32_t)`; `id128` `int32_t (void *, int32_t, ncclUniqueId, int32_t)` (128 bytes by value).
//! Every variant computes the same value from every argument; before anything is timed the
//! benchmark checks that all variants of a shape return the same sum.
//!
//! Runs on a machine without Rust: the C loop is built at run time with the system's C compiler
//! (`$CC`, default `cc`; the source is inside the binary), and libffi is opened with `dlopen`
//! (`libffi.so.8`, then `libffi.so.7`, `libffi.so.6`, `libffi.so`; `NT_LIBFFI` names another
//! file): the binary links neither. Modes (results and commands: docs/perf.md):
//!
//! - `<binary> paired [ROUNDS] [MILLISECONDS]` (the default): ROUNDS rounds (default 7); in each,
//!   every variant of every shape runs in 8 chunks of about MILLISECONDS / 8 (default 160)
//!   alternating with chunks of `direct`, and its time is divided by that of those `direct`
//!   chunks; prints every round and the medians (paired and interleaved: drift in the machine's
//!   speed cancels out);
//! - `<binary> threads [THREADS] [ROUNDS]`: THREADS threads (default 2) run the `ii` loop on the
//!   same function at once (2,000,000 calls each), every variant in turn, ROUNDS times (default
//!   7): what the call path writes to memory shared by the threads shows;
//! - `<binary> count SHAPE VARIANT N`: exactly one loop of N calls, for callgrind: the difference
//!   between two N, divided by their difference, is one iteration (the call and the C loop's
//!   own few instructions).

#![cfg_attr(not(all(target_os = "linux", target_arch = "x86_64")), allow(unused))]

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod bench {
    use core::ffi::c_void;
    use std::time::Instant;

    use nccl_trampoline::{Aggregate, CArg, Callback, CallbackValue, Signature, Type, TypedCallback};

    /// `struct pair16 { int64_t a, b; }`.
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct Pair16 {
        a: i64,
        b: i64,
    }
    // SAFETY: exactly that C struct.
    unsafe impl CArg for Pair16 {
        const AGGREGATE: bool = true;
        fn c_type() -> Type {
            Type::Aggregate(Aggregate::builder().field(Type::I64).field(Type::I64).build().unwrap())
        }
    }
    // SAFETY: integers only.
    unsafe impl CallbackValue for Pair16 {}

    /// `ncclUniqueId`: `struct { char internal[128]; }`.
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct UniqueId {
        internal: [i8; 128],
    }
    // SAFETY: exactly that C struct.
    unsafe impl CArg for UniqueId {
        const AGGREGATE: bool = true;
        fn c_type() -> Type {
            Type::Aggregate(Aggregate::builder().array(Type::I8, 128).build().unwrap())
        }
    }
    // SAFETY: bytes only.
    unsafe impl CallbackValue for UniqueId {}

    // The work of each shape, shared by every variant.
    #[inline(always)]
    fn ii(a: i32, b: i32) -> i32 {
        a.wrapping_mul(3) ^ b
    }
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn mixed8(a: i32, b: f64, c: i64, d: f64, e: i32, f: f64, g: i64, h: f64) -> f64 {
        f64::from(a) * b + c as f64 * d + f64::from(e) * f + g as f64 - h
    }
    #[inline(always)]
    fn pair16(p: Pair16, k: i32) -> i64 {
        p.a.wrapping_mul(p.b) ^ i64::from(k)
    }
    #[inline(always)]
    fn id128(comm: *mut c_void, n: i32, first: i8, last: i8, rank: i32) -> i32 {
        (comm as usize as i32 & 0xf0) ^ n.wrapping_mul(31) ^ i32::from(first) ^ (i32::from(last) << 8) ^ (rank << 16)
    }

    mod direct {
        use super::*;
        pub extern "C" fn ii(a: i32, b: i32) -> i32 {
            super::ii(a, b)
        }
        #[allow(clippy::too_many_arguments)]
        pub extern "C" fn mixed8(a: i32, b: f64, c: i64, d: f64, e: i32, f: f64, g: i64, h: f64) -> f64 {
            super::mixed8(a, b, c, d, e, f, g, h)
        }
        pub extern "C" fn pair16(p: Pair16, k: i32) -> i64 {
            super::pair16(p, k)
        }
        pub extern "C" fn id128(comm: *mut c_void, n: i32, id: UniqueId, rank: i32) -> i32 {
            super::id128(comm, n, id.internal[0], id.internal[127], rank)
        }
    }

    /// libffi, opened at run time: the few functions and data symbols a closure needs.
    mod ffi {
        use core::ffi::{c_int, c_uint, c_void};

        /// `ffi_type` (ffi.h).
        #[repr(C)]
        pub struct FfiType {
            pub size: usize,
            pub alignment: u16,
            pub type_: u16,
            pub elements: *mut *mut FfiType,
        }
        /// `FFI_TYPE_STRUCT`.
        pub const TYPE_STRUCT: u16 = 13;
        /// `FFI_DEFAULT_ABI` on x86-64 System V: `FFI_UNIX64` (libffi 3.0 to 3.4).
        const DEFAULT_ABI: c_int = 2;

        /// `ffi_cif`: 32 bytes on x86-64 (abi, nargs, arg_types, rtype, bytes, flags); opaque
        /// here, with room to spare.
        #[repr(C, align(16))]
        pub struct Cif([u8; 128]);

        pub type Handler = unsafe extern "C" fn(*mut Cif, *mut c_void, *mut *mut c_void, *mut c_void);

        pub struct Libffi {
            _lib: libloading::Library,
            pub path: String,
            prep_cif: unsafe extern "C" fn(*mut Cif, c_int, c_uint, *mut FfiType, *mut *mut FfiType) -> c_int,
            closure_alloc: unsafe extern "C" fn(usize, *mut *mut c_void) -> *mut c_void,
            prep_closure_loc: unsafe extern "C" fn(*mut c_void, *mut Cif, Handler, *mut c_void, *mut c_void) -> c_int,
            types: [*mut FfiType; 5],
        }

        /// A built-in type.
        #[derive(Clone, Copy)]
        pub enum Builtin {
            Sint32 = 0,
            Sint64 = 1,
            Double = 2,
            Pointer = 3,
            Sint8 = 4,
        }

        /// A prepared closure: the code address C calls; owns what libffi points to.
        pub struct Closure {
            pub code: *const c_void,
            _cif: Box<Cif>,
            _args: Vec<*mut FfiType>,
            _structs: Vec<(Box<FfiType>, Vec<*mut FfiType>)>,
        }

        impl Libffi {
            pub fn open() -> Libffi {
                let names: Vec<String> = match std::env::var("NT_LIBFFI") {
                    Ok(p) => vec![p],
                    Err(_) => ["libffi.so.8", "libffi.so.7", "libffi.so.6", "libffi.so"].map(String::from).to_vec(),
                };
                let (lib, path) = names
                    .iter()
                    .find_map(|n| {
                        // SAFETY: libffi's initialisers are trivial.
                        unsafe { libloading::Library::new(n) }.ok().map(|l| (l, n.clone()))
                    })
                    .unwrap_or_else(|| panic!("no libffi found: tried {names:?} (set NT_LIBFFI)"));
                // SAFETY: libffi's documented prototypes and data symbols.
                unsafe {
                    let data = |s: &[u8]| *lib.get::<*mut FfiType>(s).expect("a libffi type symbol");
                    Libffi {
                        prep_cif: *lib.get(b"ffi_prep_cif\0").expect("ffi_prep_cif"),
                        closure_alloc: *lib.get(b"ffi_closure_alloc\0").expect("ffi_closure_alloc"),
                        prep_closure_loc: *lib.get(b"ffi_prep_closure_loc\0").expect("ffi_prep_closure_loc"),
                        types: [
                            data(b"ffi_type_sint32\0"),
                            data(b"ffi_type_sint64\0"),
                            data(b"ffi_type_double\0"),
                            data(b"ffi_type_pointer\0"),
                            data(b"ffi_type_sint8\0"),
                        ],
                        _lib: lib,
                        path,
                    }
                }
            }

            pub fn builtin(&self, b: Builtin) -> *mut FfiType {
                self.types[b as usize]
            }

            /// A closure of `args -> ret` running `handler` (`user` its data); `structs` are the
            /// struct types the arguments point to (kept alive by the closure).
            pub fn closure(
                &self,
                args: Vec<*mut FfiType>,
                ret: *mut FfiType,
                structs: Vec<(Box<FfiType>, Vec<*mut FfiType>)>,
                handler: Handler,
            ) -> Closure {
                let mut cif = Box::new(Cif([0; 128]));
                let mut args = args;
                // SAFETY: the types outlive the cif and the closure (owned by the Closure); the
                // closure block is never freed (the benchmark's closures live until exit).
                unsafe {
                    let status = (self.prep_cif)(&mut *cif, DEFAULT_ABI, args.len() as c_uint, ret, args.as_mut_ptr());
                    assert_eq!(status, 0, "ffi_prep_cif");
                    let mut code: *mut c_void = core::ptr::null_mut();
                    // Larger than sizeof(ffi_closure) in every libffi release.
                    let closure = (self.closure_alloc)(256, &mut code);
                    assert!(!closure.is_null(), "ffi_closure_alloc");
                    let status = (self.prep_closure_loc)(closure, &mut *cif, handler, core::ptr::null_mut(), code);
                    assert_eq!(status, 0, "ffi_prep_closure_loc");
                    Closure { code, _cif: cif, _args: args, _structs: structs }
                }
            }
        }

        /// A struct type of `members` (kept with it).
        pub fn structure(members: Vec<*mut FfiType>) -> (Box<FfiType>, Vec<*mut FfiType>) {
            let mut elements = members;
            elements.push(core::ptr::null_mut());
            let ty = Box::new(FfiType { size: 0, alignment: 0, type_: TYPE_STRUCT, elements: elements.as_mut_ptr() });
            (ty, elements)
        }
    }

    mod libffi_handlers {
        use core::ffi::c_void;

        use super::ffi::Cif;

        /// Argument `i` as a `T`.
        unsafe fn arg<T: Copy>(args: *mut *mut c_void, i: usize) -> T {
            // SAFETY: libffi passes one pointer per argument, to a value of its type.
            unsafe { (*args.add(i)).cast::<T>().read_unaligned() }
        }

        pub unsafe extern "C" fn ii(_: *mut Cif, ret: *mut c_void, args: *mut *mut c_void, _: *mut c_void) {
            // SAFETY: the cif is (int32_t, int32_t) -> int32_t; an integer result narrower than a
            // register is written as a whole ffi_arg.
            unsafe { ret.cast::<i64>().write(i64::from(super::ii(arg(args, 0), arg(args, 1)))) }
        }
        pub unsafe extern "C" fn mixed8(_: *mut Cif, ret: *mut c_void, a: *mut *mut c_void, _: *mut c_void) {
            // SAFETY: the cif is mixed8's.
            unsafe {
                let r = super::mixed8(
                    arg(a, 0),
                    arg(a, 1),
                    arg(a, 2),
                    arg(a, 3),
                    arg(a, 4),
                    arg(a, 5),
                    arg(a, 6),
                    arg(a, 7),
                );
                ret.cast::<f64>().write(r)
            }
        }
        pub unsafe extern "C" fn pair16(_: *mut Cif, ret: *mut c_void, a: *mut *mut c_void, _: *mut c_void) {
            // SAFETY: the cif is pair16's.
            unsafe { ret.cast::<i64>().write(super::pair16(arg(a, 0), arg(a, 1))) }
        }
        pub unsafe extern "C" fn id128(_: *mut Cif, ret: *mut c_void, a: *mut *mut c_void, _: *mut c_void) {
            // SAFETY: the cif is id128's; the id is 128 bytes behind its pointer.
            unsafe {
                let id = (*a.add(2)).cast::<i8>();
                let r = super::id128(arg(a, 0), arg(a, 1), *id, *id.add(127), arg(a, 3));
                ret.cast::<i64>().write(i64::from(r))
            }
        }
    }

    /// The C loops, built from benches/c/callback_loop.c at run time.
    struct Loops {
        _lib: libloading::Library,
        ii: unsafe extern "C" fn(*const c_void, i64) -> i64,
        mixed8: unsafe extern "C" fn(*const c_void, i64) -> f64,
        pair16: unsafe extern "C" fn(*const c_void, i64) -> i64,
        id128: unsafe extern "C" fn(*const c_void, i64) -> i64,
    }

    impl Loops {
        fn build() -> Loops {
            let dir = std::env::temp_dir().join(format!("nt-callback-bench-{}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("a temporary directory");
            let src = dir.join("callback_loop.c");
            let lib = dir.join("libcallback_loop.so");
            std::fs::write(&src, include_str!("c/callback_loop.c")).expect("write the C loop");
            let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
            let status = std::process::Command::new(&cc)
                .args(["-O2", "-shared", "-fPIC", "-o"])
                .arg(&lib)
                .arg(&src)
                .status()
                .unwrap_or_else(|e| panic!("run the C compiler {cc:?}: {e} (set CC)"));
            assert!(status.success(), "{cc} failed to build the C loop");
            // SAFETY: the library just built; no initialisers.
            let l = unsafe { libloading::Library::new(&lib) }.expect("load the C loop");
            let _ = std::fs::remove_dir_all(&dir);
            // SAFETY: the prototypes of benches/c/callback_loop.c (the function pointer as a
            // `const void *`).
            unsafe {
                Loops {
                    ii: *l.get(b"nt_loop_ii\0").unwrap(),
                    mixed8: *l.get(b"nt_loop_mixed8\0").unwrap(),
                    pair16: *l.get(b"nt_loop_pair16\0").unwrap(),
                    id128: *l.get(b"nt_loop_id128\0").unwrap(),
                    _lib: l,
                }
            }
        }
    }

    /// Everything the variants call, kept alive.
    pub struct Setup {
        loops: Loops,
        _typed: Vec<Box<dyn Send>>,
        _dynamic: Vec<Callback>,
        _ffi: (ffi::Libffi, Vec<ffi::Closure>),
        /// (shape, [(variant, code address)]), `direct` first.
        pub table: Vec<(&'static str, Vec<(&'static str, usize)>)>,
        pub libffi_path: String,
    }

    impl Setup {
        pub fn new() -> Setup {
            let loops = Loops::build();
            let t_ii = TypedCallback::new(|a: i32, b: i32| -> i32 { ii(a, b) }).unwrap();
            let t_mixed8 =
                TypedCallback::new(|a: i32, b: f64, c: i64, d: f64, e: i32, f: f64, g: i64, h: f64| -> f64 {
                    mixed8(a, b, c, d, e, f, g, h)
                })
                .unwrap();
            let t_pair16 = TypedCallback::new(|p: Pair16, k: i32| -> i64 { pair16(p, k) }).unwrap();
            let t_id128 = TypedCallback::new(|comm: *mut c_void, n: i32, id: UniqueId, rank: i32| -> i32 {
                id128(comm, n, id.internal[0], id.internal[127], rank)
            })
            .unwrap();
            let x_ii = TypedCallback::direct(|a: i32, b: i32| -> i32 { ii(a, b) }).unwrap();
            let x_mixed8 =
                TypedCallback::direct(|a: i32, b: f64, c: i64, d: f64, e: i32, f: f64, g: i64, h: f64| -> f64 {
                    mixed8(a, b, c, d, e, f, g, h)
                })
                .unwrap();
            let x_pair16 = TypedCallback::direct(|p: Pair16, k: i32| -> i64 { pair16(p, k) }).unwrap();
            let x_id128 = TypedCallback::direct(|comm: *mut c_void, n: i32, id: UniqueId, rank: i32| -> i32 {
                id128(comm, n, id.internal[0], id.internal[127], rank)
            })
            .unwrap();

            let sig = |args: Vec<Type>, ret: Type| Signature::new(args, Some(ret)).unwrap();
            let d_ii = Callback::new(&sig(vec![Type::I32, Type::I32], Type::I32), |a, r| {
                r.set(ii(a.get(0).unwrap(), a.get(1).unwrap())).unwrap()
            })
            .unwrap();
            let d_mixed8 = Callback::new(
                &sig(
                    vec![Type::I32, Type::F64, Type::I64, Type::F64, Type::I32, Type::F64, Type::I64, Type::F64],
                    Type::F64,
                ),
                |a, r| {
                    let v = mixed8(
                        a.get(0).unwrap(),
                        a.get(1).unwrap(),
                        a.get(2).unwrap(),
                        a.get(3).unwrap(),
                        a.get(4).unwrap(),
                        a.get(5).unwrap(),
                        a.get(6).unwrap(),
                        a.get(7).unwrap(),
                    );
                    r.set(v).unwrap()
                },
            )
            .unwrap();
            let d_pair16 = Callback::new(&sig(vec![Pair16::c_type(), Type::I32], Type::I64), |a, r| {
                let mut p = [0u8; 16];
                a.read_bytes(0, &mut p).unwrap();
                let p = Pair16 {
                    a: i64::from_ne_bytes(p[..8].try_into().unwrap()),
                    b: i64::from_ne_bytes(p[8..].try_into().unwrap()),
                };
                r.set(pair16(p, a.get(1).unwrap())).unwrap()
            })
            .unwrap();
            let d_id128 = Callback::new(
                &sig(vec![Type::Pointer, Type::I32, UniqueId::c_type(), Type::I32], Type::I32),
                |a, r| {
                    let mut id = [0u8; 128];
                    a.read_bytes(2, &mut id).unwrap();
                    let v = id128(a.get(0).unwrap(), a.get(1).unwrap(), id[0] as i8, id[127] as i8, a.get(3).unwrap());
                    r.set(v).unwrap()
                },
            )
            .unwrap();

            let lf = ffi::Libffi::open();
            use ffi::Builtin::*;
            let b = |t| lf.builtin(t);
            let pair_t = ffi::structure(vec![b(Sint64), b(Sint64)]);
            let id_t = ffi::structure(vec![b(Sint8); 128]);
            let (pair_p, id_p) =
                (&*pair_t.0 as *const ffi::FfiType as *mut _, &*id_t.0 as *const ffi::FfiType as *mut _);
            let closures = vec![
                lf.closure(vec![b(Sint32), b(Sint32)], b(Sint32), vec![], libffi_handlers::ii),
                lf.closure(
                    vec![b(Sint32), b(Double), b(Sint64), b(Double), b(Sint32), b(Double), b(Sint64), b(Double)],
                    b(Double),
                    vec![],
                    libffi_handlers::mixed8,
                ),
                lf.closure(vec![pair_p, b(Sint32)], b(Sint64), vec![pair_t], libffi_handlers::pair16),
                lf.closure(vec![b(Pointer), b(Sint32), id_p, b(Sint32)], b(Sint32), vec![id_t], libffi_handlers::id128),
            ];

            let table = vec![
                (
                    "ii",
                    vec![
                        ("direct", direct::ii as extern "C" fn(i32, i32) -> i32 as usize),
                        ("typed", t_ii.as_ptr() as usize),
                        ("dynamic", d_ii.as_ptr() as usize),
                        ("libffi", closures[0].code as usize),
                        ("typed_direct", x_ii.as_ptr() as usize),
                    ],
                ),
                (
                    "mixed8",
                    vec![
                        (
                            "direct",
                            direct::mixed8 as extern "C" fn(i32, f64, i64, f64, i32, f64, i64, f64) -> f64 as usize,
                        ),
                        ("typed", t_mixed8.as_ptr() as usize),
                        ("dynamic", d_mixed8.as_ptr() as usize),
                        ("libffi", closures[1].code as usize),
                        ("typed_direct", x_mixed8.as_ptr() as usize),
                    ],
                ),
                (
                    "pair16",
                    vec![
                        ("direct", direct::pair16 as extern "C" fn(Pair16, i32) -> i64 as usize),
                        ("typed", t_pair16.as_ptr() as usize),
                        ("dynamic", d_pair16.as_ptr() as usize),
                        ("libffi", closures[2].code as usize),
                        ("typed_direct", x_pair16.as_ptr() as usize),
                    ],
                ),
                (
                    "id128",
                    vec![
                        ("direct", direct::id128 as extern "C" fn(*mut c_void, i32, UniqueId, i32) -> i32 as usize),
                        ("typed", t_id128.as_ptr() as usize),
                        ("dynamic", d_id128.as_ptr() as usize),
                        ("libffi", closures[3].code as usize),
                        ("typed_direct", x_id128.as_ptr() as usize),
                    ],
                ),
            ];
            let libffi_path = lf.path.clone();
            let setup = Setup {
                loops,
                _typed: vec![
                    Box::new(t_ii),
                    Box::new(t_mixed8),
                    Box::new(t_pair16),
                    Box::new(t_id128),
                    Box::new(x_ii),
                    Box::new(x_mixed8),
                    Box::new(x_pair16),
                    Box::new(x_id128),
                ],
                _dynamic: vec![d_ii, d_mixed8, d_pair16, d_id128],
                _ffi: (lf, closures),
                table,
                libffi_path,
            };
            setup.check();
            setup
        }

        /// Runs the C loop of `shape` over `code` for `n` calls; the sum, as bits.
        pub fn run(&self, shape: &str, code: usize, n: u64) -> u64 {
            let (f, n) = (code as *const c_void, n as i64);
            // SAFETY: `code` is a function of the shape's signature, alive as long as `self`.
            unsafe {
                match shape {
                    "ii" => (self.loops.ii)(f, n) as u64,
                    "mixed8" => (self.loops.mixed8)(f, n).to_bits(),
                    "pair16" => (self.loops.pair16)(f, n) as u64,
                    "id128" => (self.loops.id128)(f, n) as u64,
                    _ => panic!("no shape {shape}"),
                }
            }
        }

        /// Every variant of a shape computes the same sum.
        fn check(&self) {
            for (shape, variants) in &self.table {
                let want = self.run(shape, variants[0].1, 1000);
                for (name, code) in variants {
                    assert_eq!(self.run(shape, *code, 1000), want, "{shape}: {name} disagrees with direct");
                }
            }
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

    fn ns(s: &Setup, shape: &str, code: usize, n: u64) -> f64 {
        let t = Instant::now();
        std::hint::black_box(s.run(shape, code, n));
        t.elapsed().as_secs_f64() * 1e9 / n as f64
    }

    /// Calls that take about `ms` milliseconds.
    fn calibrate(s: &Setup, shape: &str, code: usize, ms: u64) -> u64 {
        let mut n = 1000u64;
        loop {
            let t = Instant::now();
            s.run(shape, code, n);
            let e = t.elapsed();
            if e.as_millis() >= 5 {
                return ((n as f64 * ms as f64 / e.as_secs_f64() / 1000.0) as u64).max(1);
            }
            n *= 4;
        }
    }

    const CHUNKS: usize = 8;

    pub fn paired(rounds: usize, ms: u64) {
        let s = Setup::new();
        println!("libffi: {}; call path synchronisation: {}", s.libffi_path, synchronisation());
        println!(
            "{rounds} rounds; per round and variant {CHUNKS} chunks alternating with direct, about {ms} ms each side"
        );
        let sizes: Vec<Vec<u64>> = s
            .table
            .iter()
            .map(|(shape, v)| {
                v.iter().map(|(_, code)| calibrate(&s, shape, *code, (ms / CHUNKS as u64).max(1))).collect()
            })
            .collect();
        let mut ratios: Vec<Vec<Vec<f64>>> = s.table.iter().map(|(_, v)| vec![Vec::new(); v.len()]).collect();
        let mut times = ratios.clone();
        for round in 0..rounds {
            for (i, (shape, variants)) in s.table.iter().enumerate() {
                let k = variants.len();
                let mut line = Vec::new();
                for j in 0..k - 1 {
                    let v = 1 + (j + round) % (k - 1);
                    let (mut d, mut t) = (0.0, 0.0);
                    for c in 0..CHUNKS {
                        if c % 2 == 0 {
                            d += ns(&s, shape, variants[0].1, sizes[i][0]);
                            t += ns(&s, shape, variants[v].1, sizes[i][v]);
                        } else {
                            t += ns(&s, shape, variants[v].1, sizes[i][v]);
                            d += ns(&s, shape, variants[0].1, sizes[i][0]);
                        }
                    }
                    let (d, t) = (d / CHUNKS as f64, t / CHUNKS as f64);
                    ratios[i][v].push(t / d);
                    times[i][v].push(t);
                    times[i][0].push(d);
                    line.push((v, format!("{} {t:.2} ns ({:.2}x, direct {d:.2})", variants[v].0, t / d)));
                }
                line.sort_by_key(|(v, _)| *v);
                let line: Vec<String> = line.into_iter().map(|(_, l)| l).collect();
                println!("round {} {shape}: {}", round + 1, line.join(", "));
            }
        }
        println!(
            "\nmedian over {rounds} rounds (ns per call; ratio to direct from the per-round paired ratios [min-max]):"
        );
        for (i, (shape, variants)) in s.table.iter().enumerate() {
            let mut line = vec![format!("direct {:.2} ns", median(times[i][0].clone()))];
            for (v, (name, _)) in variants.iter().enumerate().skip(1) {
                let r = &ratios[i][v];
                let (lo, hi) = (r.iter().cloned().fold(f64::MAX, f64::min), r.iter().cloned().fold(0.0, f64::max));
                line.push(format!(
                    "{name} {:.2} ns {:.2}x [{lo:.2}-{hi:.2}]",
                    median(times[i][v].clone()),
                    median(r.clone())
                ));
            }
            println!("{shape}: {}", line.join(", "));
            let med = |v: usize| median(ratios[i][v].clone());
            println!(
                "{shape}: libffi / typed {:.2}x, libffi / dynamic {:.2}x, typed / typed_direct {:.2}x",
                med(3) / med(1),
                med(3) / med(2),
                med(1) / med(4)
            );
        }
    }

    /// THREADS threads run the C loop of `ii` on the same function at once, `rounds` times per
    /// variant, interleaved: ns per call on each thread (median of the rounds). With one entry
    /// shared by every thread, what the call path writes to shared memory shows.
    pub fn threads(threads: usize, rounds: usize, n: u64) {
        let s = Setup::new();
        println!("call path synchronisation: {}; {threads} threads calling the same callback", synchronisation());
        let variants = &s.table[0].1;
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
        for _ in 0..rounds {
            for (v, (_, code)) in variants.iter().enumerate() {
                let start = std::sync::Barrier::new(threads);
                let per_thread: Vec<f64> = std::thread::scope(|scope| {
                    let handles: Vec<_> = (0..threads)
                        .map(|_| {
                            let (run, code, start) = (s.loops.ii, *code, &start);
                            scope.spawn(move || {
                                start.wait();
                                let t = Instant::now();
                                // SAFETY: `code` is `int32_t (int32_t, int32_t)`, alive while `s` is.
                                std::hint::black_box(unsafe { run(code as *const c_void, n as i64) });
                                t.elapsed().as_secs_f64() * 1e9 / n as f64
                            })
                        })
                        .collect();
                    handles.into_iter().map(|h| h.join().unwrap()).collect()
                });
                times[v].push(per_thread.iter().sum::<f64>() / threads as f64);
            }
        }
        let line: Vec<String> =
            variants.iter().zip(times).map(|((name, _), t)| format!("{name} {:.2} ns", median(t))).collect();
        println!("ii, {threads} threads, median of {rounds} rounds, ns per call: {}", line.join(", "));
    }

    pub fn count(shape: &str, variant: &str, n: u64) {
        let s = Setup::new();
        let code = s
            .table
            .iter()
            .find(|(sh, _)| *sh == shape)
            .and_then(|(_, v)| v.iter().find(|(name, _)| *name == variant))
            .unwrap_or_else(|| panic!("no variant {variant} of shape {shape}"))
            .1;
        std::hint::black_box(s.run(shape, code, n));
        eprintln!("call path synchronisation: {}", synchronisation());
    }

    fn synchronisation() -> &'static str {
        if nccl_trampoline::engine::callback::uses_membarrier() {
            "membarrier"
        } else {
            "fence (fallback)"
        }
    }
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("count") => {
            let [_, shape, variant, n] = &args[..] else {
                panic!("usage: count SHAPE VARIANT N");
            };
            bench::count(shape, variant, n.parse().expect("N"));
        }
        Some("threads") => {
            let threads = args.get(1).map_or(2, |t| t.parse().expect("THREADS"));
            let rounds = args.get(2).map_or(7, |r| r.parse().expect("ROUNDS"));
            bench::threads(threads, rounds, 2_000_000);
        }
        Some("paired") | None | Some("--bench") => {
            let nums: Vec<u64> = args.iter().filter_map(|a| a.parse().ok()).collect();
            let rounds = nums.first().map_or(7, |&r| r as usize);
            let ms = nums.get(1).copied().unwrap_or(160);
            bench::paired(rounds, ms);
        }
        Some(other) => {
            panic!("unknown mode {other:?}: paired [ROUNDS] [MILLISECONDS] | threads [THREADS] [ROUNDS] | count SHAPE VARIANT N")
        }
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn main() {}
