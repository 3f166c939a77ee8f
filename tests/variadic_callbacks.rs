//! Variadic callbacks with the C compiler and the C library as the oracles: generated C callers
//! call a Rust callback of a variadic type with printf-style argument lists, and
//!
//! - (a) the handler reads every variable argument through `VaList::arg` and compares it with the
//!   value the C caller passed (after C's default promotions);
//! - (b) the handler forwards its `va_list` to the C library's `vsnprintf`, called through the
//!   call core, and the text must equal what `snprintf` made in the C caller of the same format
//!   and arguments (and the returned counts must agree).
//!
//! Random lists (deterministic seed `NCCL_TRAMPOLINE_FUZZ_SEED`; `NCCL_TRAMPOLINE_VARIADIC_COUNT`
//! lists, default 500) of int, unsigned, long, long long, size_t, char and short (promoted, %hhd
//! %hd), float (promoted), double, pointers (%p), strings (%s), long double (%Lg, %La) and, read
//! in (a) only, __int128, after random named arguments (int, long, double, long double,
//! pointer); pinned lists that overflow both register files; NCCL's logger type as NCCL calls it
//! (tests/c/variadic_callbacks.c); and a negative control (a callback planned with one named
//! argument too few sees the wrong values).
//!
//! Nothing here assumes an architecture: on a target whose assembly has no callback entries yet,
//! the test checks that `Callback::new` says so, prints that nothing was compared, and stops.
#![cfg(target_os = "linux")]

mod common;

use std::ffi::{c_char, c_void, CStr};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, OnceLock};

use common::{
    build_shared, compiler_version, known_compiler_bug, repo_file, value_ranges, work_dir, Oracle, Rng,
    CALLER_OPT_LEVELS,
};
use nccl_trampoline::{arg, CLongDouble, CallPlan, Callback, CallbackArgs, Error, Signature, Type, VaList};

/// False, after checking the refusal, where the target has no callback entries yet.
fn callbacks_exist() -> bool {
    if Callback::POOL_SIZE != 0 {
        return true;
    }
    let sig = Signature::variadic(1, vec![Type::Pointer], None).unwrap();
    assert!(matches!(Callback::new(&sig, |_, _| {}), Err(Error::CallbacksUnsupported { .. })));
    eprintln!("no callback entries on {}: nothing compared", nccl_trampoline::engine::TARGET);
    false
}

/// The C library's `vsnprintf`, called through the core.
fn vsnprintf() -> *const c_void {
    static F: OnceLock<usize> = OnceLock::new();
    *F.get_or_init(|| {
        let this = libloading::os::unix::Library::this();
        // SAFETY: only the address is taken; it is called through a plan with its prototype.
        unsafe { *this.get::<*const c_void>(b"vsnprintf\0").expect("vsnprintf in the C library") as usize }
    }) as *const c_void
}

/// `vsnprintf(out, cap, fmt, ap)` through the call core with the handler's live list, consumed.
fn format_through_c(out: *mut c_char, cap: u64, fmt: *const c_char, va: VaList<'_>) -> Result<i32, Error> {
    let mut ap = va.into_c();
    let sig = Signature::new(vec![Type::Pointer, Type::U64, Type::Pointer, ap.c_type()], Some(Type::I32))?;
    let plan = CallPlan::new(&sig)?;
    let mut n = 0i32;
    // SAFETY: `int vsnprintf(char *, size_t, const char *, va_list)`; `out` holds `cap` bytes
    // (the C caller's buffer), `fmt` is the caller's format, whose conversions match the
    // variable arguments the caller passed (the C caller's side of the test).
    unsafe { plan.call(vsnprintf(), &[arg(&out), arg(&cap), arg(&fmt), ap.arg()], (&mut n as *mut i32).cast())? };
    Ok(n)
}

/// A named argument after `char *out, size_t cap` and before `const char *fmt`.
#[derive(Clone, Debug)]
enum Named {
    Int(i32),
    Long(i64),
    Double(f64),
    LongDouble(f64),
    Ptr(u64),
}

impl Named {
    fn ty(&self) -> Type {
        match self {
            Named::Int(_) => Type::I32,
            Named::Long(_) => Type::I64,
            Named::Double(_) => Type::F64,
            Named::LongDouble(_) => Type::LongDouble,
            Named::Ptr(_) => Type::Pointer,
        }
    }
    fn c_type(&self) -> &'static str {
        match self {
            Named::Int(_) => "int",
            Named::Long(_) => "long",
            Named::Double(_) => "double",
            Named::LongDouble(_) => "long double",
            Named::Ptr(_) => "void *",
        }
    }
    fn c_expr(&self) -> String {
        match self {
            Named::Int(v) => format!("(int){:#x}u", *v as u32),
            Named::Long(v) => format!("(long){:#x}ULL", *v as u64),
            Named::Double(v) => format!("nt_d({:#x}ULL)", v.to_bits()),
            Named::LongDouble(v) => format!("(long double)nt_d({:#x}ULL)", v.to_bits()),
            Named::Ptr(v) => format!("(void *){v:#x}ULL"),
        }
    }
    fn check(&self, args: &CallbackArgs<'_>, index: usize) -> Result<(), String> {
        let same = match self {
            Named::Int(v) => args.get::<i32>(index).map(|g| g == *v),
            Named::Long(v) => args.get::<i64>(index).map(|g| g == *v),
            Named::Double(v) => args.get::<f64>(index).map(|g| g.to_bits() == v.to_bits()),
            Named::LongDouble(v) => args.get::<CLongDouble>(index).map(|g| same_long_double(&g, *v)),
            Named::Ptr(v) => args.get::<*const c_void>(index).map(|g| g as usize as u64 == *v),
        };
        match same {
            Ok(true) => Ok(()),
            Ok(false) => Err(format!("named argument {index} is not {self:?}")),
            Err(e) => Err(format!("named argument {index}: {e}")),
        }
    }
}

/// The value bytes of a `long double` equal those of `v` converted by C.
fn same_long_double(got: &CLongDouble, v: f64) -> bool {
    let want = CLongDouble::from_f64(v);
    value_ranges(&Type::LongDouble).iter().all(|&(o, l)| got.0[o..o + l] == want.0[o..o + l])
}

/// A variable argument: its conversion, its C expression, and what the handler must read.
#[derive(Clone, Debug)]
enum Var {
    Int(i32),
    Unsigned(u32),
    Hex(u32),
    Long(i64),
    UnsignedLong(u64),
    LongLong(i64),
    Size(u64),
    Char(i8),
    UnsignedChar(u8),
    Short(i16),
    UnsignedShort(u16),
    Float(f32),
    Double(f64, &'static str),
    Ptr(u64),
    /// `STRINGS[k]`, passed as `nt_vstr[k]` (compared as an address: a misplaced read must not
    /// be dereferenced).
    Str(usize),
    LongDouble(f64, &'static str),
    /// No printf conversion: a list holding one is read in (a) only.
    Int128(i128),
}

const STRINGS: [&str; 4] = ["", "eth0", "with space", "NET/IB : No device found."];

impl Var {
    fn random(rng: &mut Rng, int128: bool) -> Var {
        let bits = rng.next_u64();
        // Finite doubles of every magnitude: a random sign and fraction, an exponent away from
        // the NaN/infinity encoding.
        let double = f64::from_bits((bits & 0x800f_ffff_ffff_ffff) | (rng.below(2046) + 1) << 52);
        match rng.below(if int128 { 18 } else { 17 }) {
            0 => Var::Int(bits as i32),
            1 => Var::Unsigned(bits as u32),
            2 => Var::Hex(bits as u32),
            3 => Var::Long(bits as i64),
            4 => Var::UnsignedLong(bits),
            5 => Var::LongLong(bits as i64),
            6 => Var::Size(bits),
            7 => Var::Char(bits as i8),
            8 => Var::UnsignedChar(bits as u8),
            9 => Var::Short(bits as i16),
            10 => Var::UnsignedShort(bits as u16),
            11 => Var::Float(double as f32),
            12 => Var::Double(double, ["%.17g", "%a", "%e", "%f"][rng.below(4) as usize]),
            13 => Var::Ptr(if rng.chance(10) { 0 } else { bits }),
            14 => Var::Str(rng.below(STRINGS.len() as u64) as usize),
            15 | 16 => Var::LongDouble(double, ["%Lg", "%.21Lg", "%La"][rng.below(3) as usize]),
            _ => Var::Int128(((bits as i128) << 64) ^ rng.next_u64() as i128),
        }
    }

    /// The type C passes after the default argument promotions.
    fn ty(&self) -> Type {
        match self {
            Var::Int(_) | Var::Char(_) | Var::UnsignedChar(_) | Var::Short(_) | Var::UnsignedShort(_) => Type::I32,
            Var::Unsigned(_) | Var::Hex(_) => Type::U32,
            Var::Long(_) | Var::LongLong(_) => Type::I64,
            Var::UnsignedLong(_) | Var::Size(_) => Type::U64,
            Var::Float(_) | Var::Double(..) => Type::F64,
            Var::Ptr(_) | Var::Str(_) => Type::Pointer,
            Var::LongDouble(..) => Type::LongDouble,
            Var::Int128(_) => Type::I128,
        }
    }

    fn conversion(&self) -> &'static str {
        match self {
            Var::Int(_) => "%d",
            Var::Unsigned(_) => "%u",
            Var::Hex(_) => "%#x",
            Var::Long(_) => "%ld",
            Var::UnsignedLong(_) => "%lu",
            Var::LongLong(_) => "%lld",
            Var::Size(_) => "%zu",
            Var::Char(_) => "%hhd",
            Var::UnsignedChar(_) => "%hhu",
            Var::Short(_) => "%hd",
            Var::UnsignedShort(_) => "%hu",
            Var::Float(_) => "%g",
            Var::Double(_, c) | Var::LongDouble(_, c) => c,
            Var::Ptr(_) => "%p",
            Var::Str(_) => "%s",
            Var::Int128(_) => "",
        }
    }

    fn c_expr(&self) -> String {
        match self {
            Var::Int(v) => format!("(int){:#x}u", *v as u32),
            Var::Unsigned(v) | Var::Hex(v) => format!("{v:#x}u"),
            Var::Long(v) => format!("(long){:#x}ULL", *v as u64),
            Var::UnsignedLong(v) => format!("(unsigned long){v:#x}ULL"),
            Var::LongLong(v) => format!("(long long){:#x}ULL", *v as u64),
            Var::Size(v) => format!("(size_t){v:#x}ULL"),
            Var::Char(v) => format!("(signed char){v}"),
            Var::UnsignedChar(v) => format!("(unsigned char){v}"),
            Var::Short(v) => format!("(short){v}"),
            Var::UnsignedShort(v) => format!("(unsigned short){v}"),
            Var::Float(v) => format!("(float)nt_d({:#x}ULL)", f64::from(*v).to_bits()),
            Var::Double(v, _) => format!("nt_d({:#x}ULL)", v.to_bits()),
            Var::Ptr(v) => format!("(void *){v:#x}ULL"),
            Var::Str(k) => format!("nt_vstr[{k}]"),
            Var::LongDouble(v, _) => format!("(long double)nt_d({:#x}ULL)", v.to_bits()),
            Var::Int128(v) => {
                format!("(__int128)(((unsigned __int128){:#x}ULL << 64) | {:#x}ULL)", (*v >> 64) as u64, *v as u64)
            }
        }
    }

    /// Reads the argument from `va` as the handler of a logger would, and compares; `strings`
    /// is the address of the C callers' `nt_vstr`.
    fn check(&self, va: &mut VaList<'_>, strings: usize) -> Result<(), String> {
        // SAFETY: the C caller passed this argument next, of the promoted type read here;
        // `strings` is the C callers' array of STRINGS.len() pointers, and k is below that.
        let same = unsafe {
            match self {
                Var::Int(v) => va.arg::<i32>().map(|g| g == *v),
                Var::Char(v) => va.arg::<i32>().map(|g| g == i32::from(*v)),
                Var::UnsignedChar(v) => va.arg::<i32>().map(|g| g == i32::from(*v)),
                Var::Short(v) => va.arg::<i32>().map(|g| g == i32::from(*v)),
                Var::UnsignedShort(v) => va.arg::<i32>().map(|g| g == i32::from(*v)),
                Var::Unsigned(v) | Var::Hex(v) => va.arg::<u32>().map(|g| g == *v),
                Var::Long(v) | Var::LongLong(v) => va.arg::<i64>().map(|g| g == *v),
                Var::UnsignedLong(v) | Var::Size(v) => va.arg::<usize>().map(|g| g as u64 == *v),
                Var::Float(v) => va.arg::<f64>().map(|g| g.to_bits() == f64::from(*v).to_bits()),
                Var::Double(v, _) => va.arg::<f64>().map(|g| g.to_bits() == v.to_bits()),
                Var::Ptr(v) => va.arg::<*const c_void>().map(|g| g as usize as u64 == *v),
                Var::Str(k) => {
                    let want = (strings as *const *const c_char).add(*k).read();
                    va.arg::<*const c_char>().map(|g| g == want)
                }
                Var::LongDouble(v, _) => va.arg::<CLongDouble>().map(|g| same_long_double(&g, *v)),
                Var::Int128(v) => va.arg::<i128>().map(|g| g == *v),
            }
        };
        match same {
            Ok(true) => Ok(()),
            Ok(false) => Err(format!("not {self:?}")),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// One generated caller: `int vcase_<i>(void *cb, char *got, char *want, size_t cap, int *ret)`
/// calls `snprintf(want, cap, fmt, vars...)` and returns its count, then
/// `*ret = cb(got, cap, named..., fmt, vars...)`.
#[derive(Clone, Debug)]
struct Case {
    name: String,
    named: Vec<Named>,
    vars: Vec<Var>,
}

impl Case {
    fn random(rng: &mut Rng, name: String) -> Case {
        let named = (0..rng.range(0, 6))
            .map(|_| {
                let bits = rng.next_u64();
                match rng.below(5) {
                    0 => Named::Int(bits as i32),
                    1 => Named::Long(bits as i64),
                    2 => Named::Double(f64::from(bits as i32) / 8.0),
                    3 => Named::LongDouble(f64::from(bits as i32) / 16.0),
                    _ => Named::Ptr(bits),
                }
            })
            .collect();
        let int128 = rng.chance(10);
        let vars = (0..rng.range(0, 20)).map(|_| Var::random(rng, int128)).collect();
        Case { name, named, vars }
    }

    /// Every conversion has a printf spelling (no `__int128`): the list can go to vsnprintf.
    fn printable(&self) -> bool {
        !self.vars.iter().any(|v| matches!(v, Var::Int128(_)))
    }

    fn format(&self) -> String {
        if !self.printable() {
            return format!("{}: __int128 has no conversion", self.name);
        }
        let conversions: Vec<&str> = self.vars.iter().map(Var::conversion).collect();
        format!("{} [{}] 100%%", self.name, conversions.join("|"))
    }

    /// The callback's type: `int (char *, size_t, named..., const char *, ...)`.
    fn signature(&self) -> Signature {
        let args: Vec<Type> = [Type::Pointer, Type::U64]
            .into_iter()
            .chain(self.named.iter().map(Named::ty))
            .chain([Type::Pointer])
            .collect();
        Signature::variadic(args.len(), args, Some(Type::I32)).unwrap()
    }

    /// The call C makes, named and variable arguments, for the compiler's known bugs.
    fn call_signature(&self) -> Signature {
        let sig = self.signature();
        let args = [sig.args().to_vec(), self.vars.iter().map(Var::ty).collect()].concat();
        Signature::variadic(sig.args().len(), args, Some(Type::I32)).unwrap()
    }

    fn c_source(&self) -> String {
        let named_types: Vec<&str> = self.named.iter().map(Named::c_type).collect();
        let params = ["char *", "size_t"].into_iter().chain(named_types).chain(["const char *", "..."]);
        let fmt = format!("{:?}", self.format());
        let vars: String = self.vars.iter().map(|v| format!(", {}", v.c_expr())).collect();
        let named: String = self.named.iter().map(|n| format!(", {}", n.c_expr())).collect();
        let mut c = String::new();
        writeln!(c, "int {}(void *cb, char *got, char *want, size_t cap, int *ret) {{", self.name).unwrap();
        writeln!(c, "    int n = snprintf(want, cap, {fmt}{vars});").unwrap();
        writeln!(
            c,
            "    *ret = ((int (*)({}))cb)(got, cap{named}, {fmt}{vars});",
            params.collect::<Vec<_>>().join(", ")
        )
        .unwrap();
        writeln!(c, "    return n;\n}}").unwrap();
        c
    }
}

const C_PRELUDE: &str = "#include <stddef.h>\n#include <stdio.h>\n#include <string.h>\n\
    /* A double from its bits: every value exact, whatever the compiler's literal parsing. */\n\
    static double nt_d(unsigned long long b) { double d; memcpy(&d, &b, sizeof d); return d; }\n\
    extern const char *const nt_vstr[];\n";

/// Builds the callers of `cases` (two translation units, compiled in parallel) at each of
/// [`CALLER_OPT_LEVELS`].
fn build_callers_at_every_level(dir: &str, cases: &[Case]) -> Vec<(&'static str, Oracle)> {
    CALLER_OPT_LEVELS.iter().map(|&opt| (opt, build_callers(&format!("{dir}{opt}"), cases, opt))).collect()
}

/// Builds the callers of `cases` (two translation units, compiled in parallel) at `opt`.
fn build_callers(dir: &str, cases: &[Case], opt: &str) -> Oracle {
    let dir = work_dir(dir);
    let mut sources = [C_PRELUDE.to_string(), C_PRELUDE.to_string()];
    let strings: Vec<String> = STRINGS.iter().map(|s| format!("{s:?}")).collect();
    writeln!(sources[0], "const char *const nt_vstr[] = {{{}}};", strings.join(", ")).unwrap();
    for (i, case) in cases.iter().enumerate() {
        sources[i % 2].push_str(&case.c_source());
    }
    let paths: Vec<_> = sources
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let path = dir.join(format!("vcallers{i}.c"));
            std::fs::write(&path, s).expect("write generated C");
            path
        })
        .collect();
    // The __int128 lists pass more arguments than their format converts (legal C:
    // the excess is evaluated and ignored, C11 7.21.6.1p2).
    Oracle::load(&common::build_shared_with(&dir, "vcallers", &paths, &["-Wno-format-extra-args", opt]))
}

/// How a handler treats the variable arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// (a) Read each through `VaList::arg`; return how many.
    Read,
    /// (b) Forward the list to vsnprintf through the core; return its count.
    Forward,
}

/// Runs `case`'s C caller against a callback of `signature` in `mode`: Ok, or what differed.
fn run_case(oracle: &Oracle, case: &Case, signature: &Signature, mode: Mode) -> Result<(), String> {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let (in_handler, expected) = (seen.clone(), case.clone());
    let fmt_index = signature.args().len() - 1;
    // The C callers' `const char *nt_vstr[]`, for the handler's %s comparisons.
    let strings = oracle.sym("nt_vstr") as usize;
    let cb = Callback::new(signature, move |a, r| {
        let mut seen = in_handler.lock().unwrap();
        for (i, n) in expected.named.iter().enumerate().filter(|(i, _)| 2 + i < fmt_index) {
            if let Err(e) = n.check(a, 2 + i) {
                seen.push(e);
            }
        }
        let result = match a.va_list() {
            Err(e) => Err(e.to_string()),
            Ok(mut va) if mode == Mode::Read => {
                for (k, v) in expected.vars.iter().enumerate() {
                    if let Err(e) = v.check(&mut va, strings) {
                        seen.push(format!("variable argument {k}: {e}"));
                    }
                }
                Ok(expected.vars.len() as i32)
            }
            Ok(va) => {
                let (out, cap, fmt) = (a.get::<*mut c_char>(0), a.get::<u64>(1), a.get::<*const c_char>(fmt_index));
                match (out, cap, fmt) {
                    (Ok(out), Ok(cap), Ok(fmt)) => format_through_c(out, cap, fmt, va).map_err(|e| e.to_string()),
                    other => Err(format!("named arguments: {other:?}")),
                }
            }
        };
        match result {
            Ok(n) => r.set(n).unwrap(),
            Err(e) => seen.push(e),
        }
    })
    .map_err(|e| format!("{}: {e}", case.name))?;
    let (mut got, mut want) = (vec![0u8; 4096], vec![0u8; 4096]);
    let mut ret = -1i32;
    // SAFETY: `int vcase_<i>(void *, char *, char *, size_t, int *)`, generated above; the
    // buffers hold `cap` bytes.
    let n = unsafe {
        std::mem::transmute::<*const c_void, extern "C" fn(*const c_void, *mut u8, *mut u8, usize, *mut i32) -> i32>(
            oracle.sym(&case.name),
        )(cb.as_ptr(), got.as_mut_ptr(), want.as_mut_ptr(), got.len(), &mut ret)
    };
    drop(cb);
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    if !seen.is_empty() {
        return Err(format!("{} ({mode:?}): {}\n  {case:?}", case.name, seen.join("; ")));
    }
    let text = |b: &[u8]| String::from_utf8_lossy(CStr::from_bytes_until_nul(b).unwrap().to_bytes()).into_owned();
    match mode {
        Mode::Read if ret != case.vars.len() as i32 => Err(format!("{}: the callback returned {ret}", case.name)),
        Mode::Forward if (ret, text(&got)) != (n, text(&want)) => Err(format!(
            "{}: vsnprintf through the core made {ret} {:?}, snprintf {n} {:?}\n  {case:?}",
            case.name,
            text(&got),
            text(&want)
        )),
        _ => Ok(()),
    }
}

fn count() -> usize {
    std::env::var("NCCL_TRAMPOLINE_VARIADIC_COUNT").ok().and_then(|v| v.parse().ok()).unwrap_or(500)
}

fn seed() -> u64 {
    std::env::var("NCCL_TRAMPOLINE_FUZZ_SEED")
        .ok()
        .and_then(|v| u64::from_str_radix(v.trim_start_matches("0x"), 16).ok())
        .unwrap_or(0x5eed_2026)
}

/// Pinned lists: both register files overflow (named arguments take some of each, variable
/// doubles go past the eighth vector register, long doubles and ints reach the stack), and
/// the promoted types side by side.
fn pinned_cases() -> Vec<Case> {
    let ints = |n: i32| (0..n).map(move |k| Var::Int(k * 1111 - 3000));
    let doubles = |n: i32| (0..n).map(move |k| Var::Double(f64::from(k) + 0.25, "%.17g"));
    let overflow = Case {
        name: "vpinned_overflow".into(),
        named: vec![
            Named::Int(-1),
            Named::Long(1 << 40),
            Named::Double(0.5),
            Named::LongDouble(-0.75),
            Named::Double(1.5),
            Named::Ptr(0x1234),
        ],
        vars: ints(5)
            .chain(doubles(11))
            .chain([Var::LongDouble(2.5, "%Lg"), Var::Char(-128), Var::Short(-32768), Var::Ptr(0xfeed)])
            .chain(ints(4))
            .chain([Var::LongLong(i64::MIN), Var::Size(u64::MAX), Var::Float(0.1), Var::LongDouble(-1e300, "%La")])
            .chain(doubles(3))
            .collect(),
    };
    let doubles_only = Case { name: "vpinned_doubles".into(), named: vec![], vars: doubles(20).collect() };
    let promoted = Case {
        name: "vpinned_promoted".into(),
        named: vec![Named::Int(7)],
        vars: vec![
            Var::Char(-7),
            Var::UnsignedChar(250),
            Var::Short(-12345),
            Var::UnsignedShort(65535),
            Var::Float(-3.25),
            Var::Str(3),
        ],
    };
    let int128 = Case {
        name: "vpinned_int128".into(),
        named: vec![Named::Int(1)],
        vars: vec![
            Var::Int(2),
            Var::Int128(-2),
            Var::Int(3),
            Var::Int128(i128::MAX),
            Var::Int128(i128::MIN + 5),
            Var::Double(4.5, "%g"),
            Var::Int(6),
        ],
    };
    vec![overflow, doubles_only, promoted, int128]
}

fn cases() -> Vec<Case> {
    let mut rng = Rng(seed());
    let random = (0..count()).map(|i| Case::random(&mut rng, format!("vcase{i}")));
    pinned_cases().into_iter().chain(random).collect()
}

#[test]
fn variadic_callbacks_read_and_forward_what_c_callers_pass() {
    if !callbacks_exist() {
        return;
    }
    let cases = cases();
    let oracles = build_callers_at_every_level("variadic-callbacks", &cases);
    let compiler = compiler_version();
    let (mut failures, mut known, mut forwarded) = (Vec::new(), Vec::new(), 0);
    for case in &cases {
        if let Some(bug) = known_compiler_bug(&compiler, &case.call_signature()) {
            known.push(format!("{} ({bug})", case.name));
            continue;
        }
        let signature = case.signature();
        forwarded += usize::from(case.printable());
        for (opt, oracle) in &oracles {
            if let Err(e) = run_case(oracle, case, &signature, Mode::Read) {
                failures.push(format!("{opt}: {e}"));
            }
            if case.printable() {
                if let Err(e) = run_case(oracle, case, &signature, Mode::Forward) {
                    failures.push(format!("{opt}: {e}"));
                }
            }
        }
    }
    eprintln!(
        "variadic callbacks ({} {}, callers at {:?}): {} lists read, {forwarded} of them forwarded to vsnprintf, {} mismatches; \
         not compared for the compiler's known bugs: {} ({:?}...)",
        compiler.0,
        compiler.1,
        CALLER_OPT_LEVELS,
        cases.len() - known.len(),
        failures.len(),
        known.len(),
        known.iter().take(3).collect::<Vec<_>>()
    );
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}

/// A callback planned with one named argument too few (the format read as the first variable
/// argument) must be seen, by reading and by formatting.
#[test]
fn negative_control_a_callback_with_a_named_argument_missing_is_seen() {
    if !callbacks_exist() {
        return;
    }
    let case = pinned_cases().remove(0);
    let oracle = build_callers("variadic-callbacks-control", std::slice::from_ref(&case), "-O2");
    let right = case.signature();
    assert_eq!(run_case(&oracle, &case, &right, Mode::Read), Ok(()));
    assert_eq!(run_case(&oracle, &case, &right, Mode::Forward), Ok(()));
    let named = right.args().len() - 1;
    let short = Signature::variadic(named, right.args()[..named].to_vec(), Some(Type::I32)).unwrap();
    assert!(run_case(&oracle, &case, &short, Mode::Read).is_err(), "reading from one argument early passed");
}

/// NCCL's logger type, `void (ncclDebugLogLevel, unsigned long, const char *, int, const char *,
/// ...)`, called as NCCL calls it (tests/c/variadic_callbacks.c): every line the handler formats
/// through vsnprintf equals the C library's snprintf of the same call.
#[test]
fn nccl_s_logger_type_formats_as_the_c_library_does() {
    if !callbacks_exist() {
        return;
    }
    let dir = work_dir(&format!("variadic-logger-{}", std::process::id()));
    let oracle = Oracle::load(&build_shared(&dir, "vlogger", &[repo_file("tests/c/variadic_callbacks.c")]));
    let logger =
        Signature::variadic(5, vec![Type::I32, Type::U64, Type::Pointer, Type::I32, Type::Pointer], None).unwrap();
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    /// Each call's level, flags and line.
    type Heads = Arc<Mutex<Vec<(i32, u64, i32)>>>;
    let (into, heads) = (lines.clone(), Heads::default());
    let head = heads.clone();
    let cb = Callback::new(&logger, move |a, _| {
        let mut buf = [0 as c_char; 1024];
        let fmt = a.get::<*const c_char>(4).unwrap();
        let n = format_through_c(buf.as_mut_ptr(), buf.len() as u64, fmt, a.va_list().unwrap()).unwrap();
        // SAFETY: vsnprintf terminated the text inside the buffer.
        let text = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned();
        assert_eq!(n as usize, text.len(), "vsnprintf's count");
        // SAFETY: the file argument is the caller's __FILE__.
        let file = unsafe { CStr::from_ptr(a.get::<*const c_char>(2).unwrap()) };
        assert!(file.to_bytes().ends_with(b"variadic_callbacks.c"), "{file:?}");
        head.lock().unwrap().push((a.get::<i32>(0).unwrap(), a.get::<u64>(1).unwrap(), a.get::<i32>(3).unwrap()));
        into.lock().unwrap().push(text);
    })
    .unwrap();
    let mut want = vec![0u8; 8192];
    // SAFETY: `void nt_vcb_logger(ncclDebugLogger_t, char *want, size_t cap)`.
    unsafe {
        std::mem::transmute::<*const c_void, extern "C" fn(*const c_void, *mut u8, usize)>(oracle.sym("nt_vcb_logger"))(
            cb.as_ptr(),
            want.as_mut_ptr(),
            want.len(),
        )
    };
    let want = CStr::from_bytes_until_nul(&want).unwrap().to_str().unwrap();
    let got: String = lines.lock().unwrap().iter().map(|l| format!("{l}\n")).collect();
    assert_eq!(got, want);
    assert_eq!(
        *heads.lock().unwrap(),
        vec![
            (1, 0, 1),
            (3, 0x1, 101),
            (3, 0x10, 202),
            (2, 0x2, 303),
            (5, 0xffff_ffff, 404),
            (3, 0x4, 505),
            (4, 0, 606)
        ]
    );
    assert!(want.contains("-7 -30000 200 65000 ok deadbeef 755 0x123456789abcdef -1.500000e-300"), "{want}");
}

#[test]
fn a_non_variadic_callback_has_no_va_list() {
    if !callbacks_exist() {
        return;
    }
    let seen: Arc<Mutex<Option<Error>>> = Arc::default();
    let into = seen.clone();
    let cb = Callback::new(&Signature::new(vec![Type::I32], None).unwrap(), move |a, _| {
        *into.lock().unwrap() = a.va_list().err();
    })
    .unwrap();
    // SAFETY: the entry takes one int32_t and returns nothing, as its signature says.
    unsafe { std::mem::transmute::<*const c_void, extern "C" fn(i32)>(cb.as_ptr())(1) };
    assert_eq!(*seen.lock().unwrap(), Some(Error::NotVariadic));
}
