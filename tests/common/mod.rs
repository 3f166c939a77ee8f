//! Shared by the conformance tests: the C compiler as oracle. Generates C callees that record
//! every byte they receive and C callers that give the reference, builds them for the target
//! with the target's gcc, loads them with libloading, and compares byte for byte.
#![allow(dead_code)]

pub mod cuda;

use std::collections::HashMap;
use std::ffi::c_void;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use nccl_trampoline::{Aggregate, CallPlan, Signature, Type};

/// The C compiler for the target: `NCCL_TRAMPOLINE_TEST_CC`, else the cross gcc for AArch64
/// and `cc` natively.
pub fn target_cc() -> String {
    if let Ok(cc) = std::env::var("NCCL_TRAMPOLINE_TEST_CC") {
        return cc;
    }
    // Cross-testing AArch64 under qemu-user: the compiler is the host's cross gcc (qemu passes
    // the exec of a host binary through). On a native AArch64 machine without it, plain `cc`.
    if cfg!(target_arch = "aarch64") && in_path("aarch64-linux-gnu-gcc") {
        return "aarch64-linux-gnu-gcc".to_string();
    }
    "cc".to_string()
}

/// True if `tool` is an executable file in a directory of `PATH`.
pub fn in_path(tool: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

/// A fresh directory for this test's build products.
pub fn work_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::env::consts::ARCH));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create test work dir");
    dir
}

/// Compiles `sources` (paths) into a shared library, one compiler process per source in
/// parallel, and returns its path. Panics with the compiler's output on failure.
pub fn build_shared(dir: &Path, name: &str, sources: &[PathBuf]) -> PathBuf {
    build_shared_with(dir, name, sources, &[])
}

/// As [`build_shared`], with extra compiler flags (`-D...`).
pub fn build_shared_with(dir: &Path, name: &str, sources: &[PathBuf], flags: &[&str]) -> PathBuf {
    let cc = target_cc();
    let mut children = Vec::new();
    let mut objects = Vec::new();
    for (i, src) in sources.iter().enumerate() {
        let obj = dir.join(format!("{name}-{i}.o"));
        let child = Command::new(&cc)
            .args(["-c", "-fPIC", "-O1", "-std=gnu11", "-Wall", "-Werror=implicit-function-declaration"])
            .args(flags)
            .arg("-o")
            .arg(&obj)
            .arg(src)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e} (set NCCL_TRAMPOLINE_TEST_CC)"));
        children.push((src.clone(), child));
        objects.push(obj);
    }
    for (src, child) in children {
        let out = child.wait_with_output().expect("wait for the C compiler");
        assert!(out.status.success(), "{cc} failed on {}:\n{}", src.display(), String::from_utf8_lossy(&out.stderr));
    }
    let lib = dir.join(format!("lib{name}.so"));
    let out = Command::new(&cc).arg("-shared").arg("-o").arg(&lib).args(&objects).output().expect("run the linker");
    assert!(out.status.success(), "linking {} failed:\n{}", lib.display(), String::from_utf8_lossy(&out.stderr));
    lib
}

pub fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The oracle library, loaded: the recording buffer and the return bytes.
pub struct Oracle {
    pub lib: libloading::Library,
}

impl Oracle {
    pub fn load(path: &Path) -> Oracle {
        // SAFETY: a library this test just built from its own sources; its initialisers are
        // trivial.
        let lib = unsafe { libloading::Library::new(path) }.expect("load the oracle library");
        Oracle { lib }
    }

    pub fn sym(&self, name: &str) -> *const c_void {
        // SAFETY: we only take the address; callers call it with the generated prototype.
        unsafe { *self.lib.get::<*const c_void>(name.as_bytes()).unwrap_or_else(|e| panic!("symbol {name}: {e}")) }
    }

    pub fn rec_reset_public(&self) {
        self.rec_reset()
    }

    pub fn recording_public(&self) -> Vec<u8> {
        self.recording()
    }

    fn rec_reset(&self) {
        // SAFETY: `void nt_rec_reset(void)` in tests/c/oracle_runtime.c.
        unsafe { std::mem::transmute::<*const c_void, extern "C" fn()>(self.sym("nt_rec_reset"))() }
    }

    fn recording(&self) -> Vec<u8> {
        // SAFETY: prototypes from tests/c/oracle_runtime.c; the buffer holds `size` bytes.
        unsafe {
            let data = std::mem::transmute::<*const c_void, extern "C" fn() -> *const u8>(self.sym("nt_rec_data"))();
            let size = std::mem::transmute::<*const c_void, extern "C" fn() -> usize>(self.sym("nt_rec_size"))();
            std::slice::from_raw_parts(data, size).to_vec()
        }
    }

    fn set_return_bytes(&self, bytes: &[u8]) {
        // SAFETY: nt_ret_src is 8 KiB; results are at most 4 KiB (limits::MAX_AGGREGATE_BYTES).
        unsafe {
            let p = std::mem::transmute::<*const c_void, extern "C" fn() -> *mut u8>(self.sym("nt_ret_bytes"))();
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len());
        }
    }
}

/// Byte ranges of a type that carry values (scalars; padding excluded), merged when adjacent.
pub fn value_ranges(ty: &Type) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    let scalars = match ty {
        Type::Aggregate(a) => a.scalars(),
        t => vec![(0, t.clone())],
    };
    for (off, t) in scalars {
        match out.last_mut() {
            Some((o, l)) if *o + *l == off => *l += t.size(),
            _ => out.push((off, t.size())),
        }
    }
    out
}

fn pick_bytes(bytes: &[u8], ranges: &[(usize, usize)]) -> Vec<u8> {
    ranges.iter().flat_map(|&(o, l)| bytes[o..o + l].iter().copied()).collect()
}

/// A deterministic byte pattern: consecutive bytes always differ, and 256 consecutive bytes
/// are all distinct, so a byte landing one place off is always seen.
pub struct Pattern(u8);

impl Pattern {
    pub fn new(seed: u64) -> Self {
        Pattern((seed ^ (seed >> 8) ^ (seed >> 16)) as u8)
    }
    pub fn fill(&mut self, n: usize) -> Vec<u8> {
        (0..n)
            .map(|_| {
                self.0 = self.0.wrapping_add(101);
                self.0
            })
            .collect()
    }
}

/// A 16-aligned buffer.
pub fn aligned(n: usize) -> Vec<u128> {
    vec![0u128; n.div_ceil(16).max(1)]
}

/// Calls `name` through the trampoline and `ref_<name>` (the C caller) with the same argument
/// bytes, and checks: both recordings equal the argument values byte for byte, both results
/// equal the bytes the callee returned, and the caller's arguments are unchanged although the
/// callee wrote into its by-value copies. Returns a description of the first mismatch.
pub fn check_call(oracle: &Oracle, name: &str, sig: &Signature, pattern: &mut Pattern) -> Result<(), String> {
    let plan = CallPlan::new(sig).map_err(|e| format!("{name}: plan: {e}"))?;
    let args: Vec<Vec<u8>> = sig.args().iter().map(|t| pattern.fill(t.size())).collect();
    let before = args.clone();
    let expected: Vec<u8> = sig.args().iter().zip(&args).flat_map(|(t, b)| pick_bytes(b, &value_ranges(t))).collect();
    let ret_size = sig.ret().map_or(0, Type::size);
    let ret_bytes = pattern.fill(ret_size);
    oracle.set_return_bytes(&ret_bytes);
    let arg_ptrs: Vec<*const c_void> = args.iter().map(|a| a.as_ptr().cast()).collect();

    // Through the trampoline.
    let mut ret_t = aligned(ret_size);
    oracle.rec_reset();
    // SAFETY: `name` was generated from `sig`; arguments and result buffers have its sizes.
    unsafe { plan.call(oracle.sym(name), &arg_ptrs, ret_t.as_mut_ptr().cast()) }
        .map_err(|e| format!("{name}: call: {e}"))?;
    let rec_t = oracle.recording();

    // Through the C compiler.
    let mut ret_c = aligned(ret_size);
    oracle.rec_reset();
    let reference = oracle.sym(&format!("ref_{name}"));
    // SAFETY: `void ref_<name>(void *const *args, void *ret)`, generated with the callee.
    unsafe {
        std::mem::transmute::<*const c_void, extern "C" fn(*const *const c_void, *mut c_void)>(reference)(
            arg_ptrs.as_ptr(),
            ret_c.as_mut_ptr().cast(),
        )
    };
    let rec_c = oracle.recording();

    if rec_c != expected {
        return Err(format!(
            "{name}: the C caller's recording differs from the model (test bug)\n c: {rec_c:02x?}\n m: {expected:02x?}"
        ));
    }
    if rec_t != rec_c {
        let at = rec_t.iter().zip(&rec_c).position(|(a, b)| a != b).unwrap_or(rec_t.len().min(rec_c.len()));
        return Err(format!(
            "{name}: callee received other bytes than from the C caller (first difference at recorded byte {at}; {} vs {} bytes)\n sig: {sig:?}\n trampoline: {rec_t:02x?}\n C:          {rec_c:02x?}",
            rec_t.len(),
            rec_c.len()
        ));
    }
    if args != before {
        return Err(format!("{name}: the caller's argument bytes changed during the call"));
    }
    if let Some(rt) = sig.ret() {
        let ranges = value_ranges(rt);
        // SAFETY: both buffers are at least ret_size bytes.
        let (t, c) = unsafe {
            (
                std::slice::from_raw_parts(ret_t.as_ptr().cast::<u8>(), ret_size),
                std::slice::from_raw_parts(ret_c.as_ptr().cast::<u8>(), ret_size),
            )
        };
        let (t, c, want) = (pick_bytes(t, &ranges), pick_bytes(c, &ranges), pick_bytes(&ret_bytes, &ranges));
        if c != want {
            return Err(format!("{name}: the C caller's result differs from the returned bytes (test bug)"));
        }
        if t != c {
            return Err(format!("{name}: result differs from the C caller's\n sig: {sig:?}\n trampoline: {t:02x?}\n C:          {c:02x?}"));
        }
    }
    Ok(())
}

/// Generates C for signatures: struct typedefs (with layout assertions), recording callees
/// and reference callers.
#[derive(Default)]
pub struct CGen {
    types: String,
    structs: HashMap<String, String>,
    pub body: String,
}

pub const C_PRELUDE: &str = r#"#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
extern unsigned char nt_rec[];
extern size_t nt_rec_len;
extern unsigned char nt_ret_src[];
void nt_scribble(void *p, size_t n);
static void rec_put(const void *p, size_t n) { memcpy(nt_rec + nt_rec_len, p, n); nt_rec_len += n; }
static void rec_ranges(const void *p, const unsigned short (*r)[2], size_t n) {
    for (size_t i = 0; i < n; i++) rec_put((const char *)p + r[i][0], r[i][1]);
}
"#;

impl CGen {
    /// The C name of a type, defining struct typedefs on first use.
    pub fn c_type(&mut self, ty: &Type) -> String {
        match ty {
            Type::Aggregate(a) => self.struct_name(a),
            t => t.c_name().to_string(),
        }
    }

    fn struct_name(&mut self, agg: &Aggregate) -> String {
        let key = format!("{agg:?}");
        if let Some(n) = self.structs.get(&key) {
            return n.clone();
        }
        let mut fields = String::new();
        let mut asserts = String::new();
        for (i, f) in agg.fields().iter().enumerate() {
            let elem = self.c_type(&f.ty);
            let align = if f.align > f.ty.align() { format!("_Alignas({}) ", f.align) } else { String::new() };
            let dims = if f.count > 1 { format!("[{}]", f.count) } else { String::new() };
            writeln!(fields, "    {align}{elem} f{i}{dims};").unwrap();
            write!(asserts, " && offsetof(S, f{i}) == {}", f.offset).unwrap();
        }
        let name = format!("S{}", self.structs.len());
        let attr = if agg.align() > agg.natural_align() {
            format!(" __attribute__((aligned({})))", agg.align())
        } else {
            String::new()
        };
        let ranges: Vec<String> =
            value_ranges(&Type::Aggregate(agg.clone())).iter().map(|(o, l)| format!("{{{o},{l}}}")).collect();
        writeln!(
            self.types,
            "typedef struct{attr} {{\n{fields}}} {name};\n#define S {name}\n_Static_assert(sizeof(S) == {} && _Alignof(S) == {}{asserts}, \"layout of {name}\");\n#undef S\nstatic const unsigned short R_{name}[][2] = {{{}}};",
            agg.size(),
            agg.align(),
            ranges.join(",")
        )
        .unwrap();
        self.structs.insert(key, name.clone());
        name
    }

    /// Emits callee `name` and its reference caller `ref_<name>` for `sig`.
    pub fn function(&mut self, name: &str, sig: &Signature) {
        let ret = sig.ret().map_or("void".to_string(), |t| self.c_type(t));
        let types: Vec<String> = sig.args().iter().map(|t| self.c_type(t)).collect();
        let fixed = sig.fixed_args().unwrap_or(types.len());
        let params: Vec<String> = types.iter().take(fixed).enumerate().map(|(i, t)| format!("{t} a{i}")).collect();
        let ellipsis = if sig.fixed_args().is_some() { ", ..." } else { "" };
        let mut b = format!("{ret} {name}({}{ellipsis}) {{\n", params.join(", "));
        if sig.fixed_args().is_some() {
            writeln!(b, "    va_list ap;\n    va_start(ap, a{});", fixed - 1).unwrap();
            for (i, t) in types.iter().enumerate().skip(fixed) {
                writeln!(b, "    {t} a{i} = va_arg(ap, {t});").unwrap();
            }
            b.push_str("    va_end(ap);\n");
        }
        for (i, ty) in sig.args().iter().enumerate() {
            match ty {
                Type::Aggregate(a) => {
                    let s = self.struct_name(a);
                    writeln!(b, "    rec_ranges(&a{i}, R_{s}, sizeof R_{s} / sizeof R_{s}[0]);").unwrap();
                }
                _ => writeln!(b, "    rec_put(&a{i}, sizeof a{i});").unwrap(),
            }
        }
        for (i, ty) in sig.args().iter().enumerate() {
            if matches!(ty, Type::Aggregate(_)) {
                writeln!(b, "    nt_scribble(&a{i}, sizeof a{i});").unwrap();
            }
        }
        if sig.ret().is_some() {
            writeln!(b, "    {ret} r;\n    memcpy(&r, nt_ret_src, sizeof r);\n    return r;").unwrap();
        }
        b.push_str("}\n");
        writeln!(b, "void ref_{name}(void *const *a, void *ret) {{").unwrap();
        for (i, t) in types.iter().enumerate() {
            writeln!(b, "    {t} a{i}; memcpy(&a{i}, a[{i}], sizeof a{i});").unwrap();
        }
        let call_args: Vec<String> = (0..types.len()).map(|i| format!("a{i}")).collect();
        if sig.ret().is_some() {
            writeln!(b, "    {ret} r = {name}({});\n    memcpy(ret, &r, sizeof r);", call_args.join(", ")).unwrap();
        } else {
            writeln!(b, "    (void)ret;\n    {name}({});", call_args.join(", ")).unwrap();
        }
        b.push_str("}\n");
        self.body.push_str(&b);
    }

    /// The whole translation unit.
    pub fn source(&self) -> String {
        format!("{C_PRELUDE}{}{}", self.types, self.body)
    }
}

/// splitmix64: small, seedable, good enough to pick shapes.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below((hi - lo + 1) as u64) as usize
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

const SCALARS: [Type; 11] = [
    Type::I8,
    Type::U8,
    Type::I16,
    Type::U16,
    Type::I32,
    Type::U32,
    Type::I64,
    Type::U64,
    Type::Pointer,
    Type::F32,
    Type::F64,
];

pub fn random_scalar(rng: &mut Rng) -> Type {
    SCALARS[rng.below(SCALARS.len() as u64) as usize].clone()
}

/// A random aggregate of about `target` bytes (1..=256): nested structs, arrays, mixed and
/// explicit alignments; biased towards the shapes with special rules (HFAs, 16-byte mixes).
pub fn random_aggregate(rng: &mut Rng, target: usize, depth: usize) -> Aggregate {
    if rng.chance(20) {
        // HFA candidates: 1-4 floats or doubles, possibly nested or as an array.
        let t = if rng.chance(50) { Type::F32 } else { Type::F64 };
        let n = rng.range(1, 4);
        let agg = match rng.below(3) {
            0 => Aggregate::builder().array(t, n),
            1 => {
                let inner = Aggregate::builder().array(t.clone(), n.div_ceil(2)).build().unwrap();
                let mut b = Aggregate::builder().field(Type::Aggregate(inner));
                for _ in 0..n / 2 {
                    b = b.field(t.clone());
                }
                b
            }
            _ => (0..n).fold(Aggregate::builder(), |b, _| b.field(t.clone())),
        };
        return agg.build().unwrap();
    }
    let mut b = Aggregate::builder();
    let mut size = 0usize;
    let mut fields = 0;
    while (size < target || fields == 0) && fields < 24 {
        let (ty, count, align) = match rng.below(10) {
            0 if depth < 3 => {
                let inner_target = rng.range(1, target.saturating_sub(size).clamp(1, 64));
                let inner = random_aggregate(rng, inner_target, depth + 1);
                (Type::Aggregate(inner), 1, 1)
            }
            1 => {
                let t = random_scalar(rng);
                let room = (target.saturating_sub(size) / t.size()).clamp(2, 32);
                (t, rng.range(2, room), 1)
            }
            2 if rng.chance(30) => (random_scalar(rng), 1, 16),
            _ => (random_scalar(rng), 1, 1),
        };
        let a = ty.align().max(align);
        size = size.next_multiple_of(a) + ty.size() * count;
        b = b.array_aligned(ty, count, align);
        fields += 1;
    }
    if rng.chance(5) {
        b = b.align(16);
    }
    b.build().unwrap()
}

fn random_type(rng: &mut Rng) -> Type {
    if rng.chance(40) {
        let target = if rng.chance(60) { rng.range(1, 32) } else { rng.range(1, 256) };
        Type::Aggregate(random_aggregate(rng, target, 0))
    } else {
        random_scalar(rng)
    }
}

/// A random signature: 1-16 arguments, every kind, every return kind; one in ten variadic
/// (with promoted variadic arguments).
pub fn random_signature(rng: &mut Rng) -> Signature {
    let n = rng.range(1, 16);
    let mut args: Vec<Type> = (0..n).map(|_| random_type(rng)).collect();
    let ret = if rng.chance(15) { None } else { Some(random_type(rng)) };
    if n >= 2 && rng.chance(10) {
        let fixed = rng.range(1, n - 1);
        for a in args.iter_mut().skip(fixed) {
            match a {
                Type::F32 => *a = Type::F64,
                Type::I8 | Type::U8 | Type::I16 | Type::U16 => *a = Type::I32,
                _ => {}
            }
        }
        return Signature::variadic(fixed, args, ret).unwrap();
    }
    Signature::new(args, ret).unwrap()
}
