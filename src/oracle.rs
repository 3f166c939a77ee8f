//! The C compiler as oracle for the call core: a model of what a C caller passes, C source
//! generation for recording callees and reference callers, the pinned shapes, and a seeded
//! generator of random signatures.
//!
//! Not part of the crate's API (hidden, no semver promise): it is here so that the two users
//! share one copy without reaching into each other's folders (ADR 16). The conformance tests
//! (`tests/common`) compile the generated C at test time; `nccl-trampoline selftest` links the
//! C generated from the same shapes into `generated/selftest_oracle.c`, with the recording
//! runtime `oracle/runtime.c`.

use std::collections::HashMap;
use std::ffi::c_void;
use std::fmt::Write as _;

use crate::engine::plan::CallPlan;
use crate::engine::types::{Aggregate, AggregateBuilder, Signature, Type};

/// What the comparison needs from a loaded oracle: the C runtime of `oracle/runtime.c`
/// and the generated functions.
pub trait OracleRuntime {
    /// The address of a generated function: a callee `name` or its caller `ref_<name>`.
    fn sym(&self, name: &str) -> *const c_void;
    /// Empties the recording buffer.
    fn rec_reset(&self);
    /// The bytes the callees recorded since the last reset.
    fn recording(&self) -> Vec<u8>;
    /// Sets the bytes the callees return.
    fn set_return_bytes(&self, bytes: &[u8]);
}

pub fn agg(b: AggregateBuilder) -> Type {
    Type::Aggregate(b.build().expect("valid test layout"))
}

pub fn unique_id() -> Type {
    agg(Aggregate::builder().array(Type::I8, 128))
}

/// Every shape the issue pins, by name.
pub fn pinned_shapes() -> Vec<(&'static str, Signature)> {
    let sig = |args: Vec<Type>, ret: Option<Type>| Signature::new(args, ret).unwrap();
    let s32 =
        agg(Aggregate::builder().field(Type::I64).field(Type::F64).field(Type::I32).field(Type::F32).field(Type::I64));
    let i8_i64 = agg(Aggregate::builder().field(Type::I8).field(Type::I64));
    let c_d = agg(Aggregate::builder().field(Type::I8).field(Type::F64));
    let member16 = agg(Aggregate::builder().field_aligned(Type::I64, 16).field(Type::I64));
    let struct16 = agg(Aggregate::builder().field(Type::I64).field(Type::I64).align(16));
    let long_double = agg(Aggregate::builder().field(Type::I64).field(Type::F64));
    let mixed = [
        agg(Aggregate::builder().field(Type::F32).field(Type::I32).field(Type::F64)),
        agg(Aggregate::builder().field(Type::F64).field(Type::I64)),
        long_double.clone(),
        agg(Aggregate::builder().field(Type::F32).field(Type::F32).field(Type::I64)),
        agg(Aggregate::builder().field(Type::I32).field(Type::F32).field(Type::F32).field(Type::I32)),
    ];
    let mut v = vec![
        ("sixteen_32_byte_structs", sig(vec![s32; 16], Some(Type::I32))),
        ("int8_int64_struct", sig(vec![i8_i64.clone(), Type::I32, i8_i64.clone()], Some(i8_i64))),
        (
            "chars_float_char_double",
            sig(vec![Type::I8, Type::I8, Type::I8, Type::I8, Type::I8, Type::F32, c_d.clone()], Some(c_d)),
        ),
        (
            "aligned_member_16_on_stack",
            sig([vec![Type::I64; 9], vec![member16.clone(), Type::I32]].concat(), Some(member16.clone())),
        ),
        ("aligned_member_16_in_registers", sig(vec![Type::I32, member16.clone(), Type::I32], Some(Type::I64))),
        (
            "aligned_struct_16_on_stack",
            sig([vec![Type::I64; 9], vec![struct16.clone(), Type::I32]].concat(), Some(struct16)),
        ),
        (
            "aggregate_after_all_registers",
            sig(
                [vec![Type::I64; 8], vec![Type::F64; 8], vec![long_double.clone(), Type::I32]].concat(),
                Some(long_double),
            ),
        ),
        (
            "variadic_doubles",
            Signature::variadic(1, vec![Type::I32, Type::F64, Type::I32, Type::F64, Type::F64], Some(Type::F64))
                .unwrap(),
        ),
        ("large_return_24", sig(vec![Type::I32, Type::I64], Some(agg(Aggregate::builder().array(Type::I64, 3))))),
        (
            "large_return_256",
            sig(
                vec![Type::F64, Type::I32],
                Some(agg(Aggregate::builder().array(Type::I32, 60).field(Type::F64).field(Type::F32))),
            ),
        ),
        ("hfa_after_vector_registers", {
            let h3 = agg(Aggregate::builder().array(Type::F32, 3));
            sig([vec![Type::F64; 6], vec![h3.clone(), Type::F32, Type::F64]].concat(), Some(h3))
        }),
    ];
    for t in [Type::F32, Type::F64] {
        for n in 2..=4 {
            let h = agg(Aggregate::builder().array(t.clone(), n));
            let name: &'static str = Box::leak(format!("hfa_{}x{n}", t.c_name()).into_boxed_str());
            v.push((name, sig(vec![h.clone(), Type::I32, h.clone()], Some(h))));
        }
    }
    for (i, m) in mixed.into_iter().enumerate() {
        let name: &'static str = Box::leak(format!("mixed_16_{i}").into_boxed_str());
        v.push((name, sig(vec![m.clone(), Type::F32, m.clone(), Type::I8], Some(m))));
    }
    v.extend(wide_shapes());
    v
}

/// The pinned shapes of `__int128`, `long double` and the complex types: each first, after the
/// registers run out, inside aggregates, as a result, and variadic.
fn wide_shapes() -> Vec<(&'static str, Signature)> {
    let sig = |args: Vec<Type>, ret: Option<Type>| Signature::new(args, ret).unwrap();
    let (i128, u128, ld) = (Type::I128, Type::U128, Type::LongDouble);
    let (cf, cd, cld) = (Type::ComplexF32, Type::ComplexF64, Type::ComplexLongDouble);
    let one_ld = agg(Aggregate::builder().field(ld.clone()));
    let int128_struct = agg(Aggregate::builder().field(i128.clone()));
    let int128_wide = agg(Aggregate::builder().field(Type::I32).field(u128.clone()));
    let cf_hfa = agg(Aggregate::builder().field(cf.clone()).field(Type::F32));
    let cd_pair = agg(Aggregate::builder().field(cd.clone()));
    let mut v = vec![
        ("int128_first", sig(vec![i128.clone(), Type::I32, u128.clone()], Some(i128.clone()))),
        ("int128_odd_register", sig(vec![Type::I32, i128.clone(), Type::I8, u128.clone()], Some(u128.clone()))),
        (
            "int128_not_split",
            sig([vec![Type::I64; 5], vec![i128.clone(), Type::I64, u128.clone()]].concat(), Some(i128.clone())),
        ),
        (
            "int128_after_registers",
            sig([vec![Type::I64; 7], vec![i128.clone(), Type::I32, u128.clone()]].concat(), Some(u128.clone())),
        ),
        (
            "int128_in_structs",
            sig(
                vec![Type::I32, int128_struct.clone(), int128_wide.clone(), int128_struct.clone()],
                Some(int128_struct),
            ),
        ),
        ("int128_struct_result", sig(vec![i128.clone()], Some(int128_wide))),
        ("long_double_first", sig(vec![ld.clone(), Type::I32, ld.clone(), Type::F64], Some(ld.clone()))),
        (
            "long_double_after_registers",
            sig([vec![Type::F64; 7], vec![ld.clone(), Type::F32, ld.clone(), Type::F64]].concat(), Some(ld.clone())),
        ),
        ("long_double_struct", sig(vec![one_ld.clone(), Type::I32, one_ld.clone()], Some(one_ld))),
        (
            "long_double_in_struct",
            sig(vec![agg(Aggregate::builder().field(Type::I8).field(ld.clone()))], Some(Type::F64)),
        ),
        ("complex_float", sig(vec![cf.clone(), Type::F32, cf.clone(), Type::I32], Some(cf.clone()))),
        ("complex_double", sig(vec![cd.clone(), Type::F64, cd.clone(), Type::I32], Some(cd.clone()))),
        ("complex_long_double", sig(vec![cld.clone(), Type::I32, cld.clone(), ld.clone()], Some(cld.clone()))),
        (
            "complex_after_registers",
            sig([vec![Type::F64; 7], vec![cd.clone(), cf.clone(), cf.clone(), cd.clone()]].concat(), Some(cd.clone())),
        ),
        ("complex_in_structs", sig(vec![cf_hfa.clone(), cd_pair.clone(), cf_hfa.clone()], Some(cf_hfa))),
        ("complex_double_struct_result", sig(vec![Type::I32], Some(cd_pair))),
        (
            "wide_on_the_stack",
            sig(
                [vec![Type::I64; 9], vec![Type::F64; 9], vec![i128.clone(), ld.clone(), cld.clone(), cd, cf, i128]]
                    .concat(),
                Some(cld.clone()),
            ),
        ),
        (
            "variadic_wide",
            Signature::variadic(
                1,
                vec![Type::I32, ld.clone(), u128, Type::ComplexF64, cld, Type::ComplexF32, ld.clone()],
                Some(ld.clone()),
            )
            .unwrap(),
        ),
    ];
    for n in 2..=4 {
        let h = agg(Aggregate::builder().array(ld.clone(), n));
        let name: &'static str = Box::leak(format!("hfa_long_double_x{n}").into_boxed_str());
        v.push((name, sig(vec![h.clone(), Type::I32, h.clone(), ld.clone()], Some(h))));
    }
    v
}

pub fn nccl_shapes() -> Vec<(&'static str, Signature)> {
    let int = Type::I32;
    vec![
        (
            "ncclCommInitRank",
            Signature::new(vec![Type::Pointer, int.clone(), unique_id(), int.clone()], Some(int.clone())).unwrap(),
        ),
        (
            "ncclCommInitRankConfig",
            Signature::new(
                vec![Type::Pointer, int.clone(), unique_id(), int.clone(), Type::Pointer],
                Some(int.clone()),
            )
            .unwrap(),
        ),
        (
            "ncclReduce",
            Signature::new(
                vec![
                    Type::Pointer,
                    Type::Pointer,
                    Type::U64,
                    int.clone(),
                    int.clone(),
                    int.clone(),
                    Type::Pointer,
                    Type::Pointer,
                ],
                Some(int),
            )
            .unwrap(),
        ),
    ]
}

/// Value bytes of a `long double` on the target: the 80-bit x87 format in the low 10 of its 16
/// bytes on x86-64 (the rest is padding nobody passes), IEEE binary128 (all 16) on AArch64.
pub const LONG_DOUBLE_VALUE_BYTES: usize = if cfg!(target_arch = "x86_64") { 10 } else { 16 };

/// The scalars of a type with their offsets: an aggregate's members, a complex number's two
/// parts, or the type itself.
pub fn scalars_of(ty: &Type) -> Vec<(usize, Type)> {
    match ty {
        Type::Aggregate(a) => a.scalars(),
        t => match t.complex_element() {
            Some(e) => vec![(0, e.clone()), (e.size(), e)],
            None => vec![(0, t.clone())],
        },
    }
}

/// Byte ranges of a type that carry values (scalars; padding excluded), merged when adjacent
/// (never across a `long double`, whose value length depends on the target: [`ld_ranges`]).
pub fn value_ranges(ty: &Type) -> Vec<(usize, usize)> {
    ld_ranges(ty).into_iter().map(|(o, l, ld)| (o, if ld { LONG_DOUBLE_VALUE_BYTES } else { l })).collect()
}

/// As [`value_ranges`], target-independent: `(offset, length, is_long_double)`, where the
/// length of a `long double` range is its value length on the target (`NT_LDV` in C).
pub fn ld_ranges(ty: &Type) -> Vec<(usize, usize, bool)> {
    let mut out: Vec<(usize, usize, bool)> = Vec::new();
    for (off, t) in scalars_of(ty) {
        let ld = t == Type::LongDouble;
        match out.last_mut() {
            Some((o, l, false)) if !ld && *o + *l == off => *l += t.size(),
            _ => out.push((off, t.size(), ld)),
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

    /// The bytes of a value of `ty`: [`fill`](Pattern::fill), with every x86-64 `long double`
    /// made a valid x87 encoding (integer bit set, exponent not zero: a normal number, an
    /// infinity or a NaN), which `fldt` / `fstpt` (x87 results) carry bit for bit. An
    /// unnormal would come back as the x87's default NaN from the C caller and the trampoline
    /// alike, hiding a misplaced byte.
    pub fn value(&mut self, ty: &Type) -> Vec<u8> {
        let mut bytes = self.fill(ty.size());
        if cfg!(target_arch = "x86_64") {
            for (off, t) in scalars_of(ty) {
                if t == Type::LongDouble {
                    bytes[off + 7] |= 0x80;
                    if bytes[off + 8] == 0 && bytes[off + 9] & 0x7f == 0 {
                        bytes[off + 8] = 1;
                    }
                }
            }
        }
        bytes
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
pub fn check_call(
    oracle: &impl OracleRuntime,
    name: &str,
    sig: &Signature,
    pattern: &mut Pattern,
) -> Result<(), String> {
    let plan = CallPlan::new(sig).map_err(|e| format!("{name}: plan: {e}"))?;
    let args: Vec<Vec<u8>> = sig.args().iter().map(|t| pattern.value(t)).collect();
    let before = args.clone();
    let expected: Vec<u8> = sig.args().iter().zip(&args).flat_map(|(t, b)| pick_bytes(b, &value_ranges(t))).collect();
    let ret_size = sig.ret().map_or(0, Type::size);
    let ret_bytes = sig.ret().map_or_else(Vec::new, |t| pattern.value(t));
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

pub const C_PRELUDE: &str = r#"#include <float.h>
#include <stdarg.h>
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
/* Value bytes of a long double: 10 of the x87 format (x86-64), 16 of binary128 (AArch64). */
#define NT_LDV (LDBL_MANT_DIG == 64 ? 10 : 16)
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
        let ranges = c_ranges(&Type::Aggregate(agg.clone()));
        writeln!(
            self.types,
            "typedef struct{attr} {{\n{fields}}} {name};\n#define S {name}\n_Static_assert(sizeof(S) == {} && _Alignof(S) == {}{asserts}, \"layout of {name}\");\n#undef S\nstatic const unsigned short R_{name}[][2] = {{{}}};",
            agg.size(),
            agg.align(),
            ranges
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
                t if t.is_word() => writeln!(b, "    rec_put(&a{i}, sizeof a{i});").unwrap(),
                t => {
                    let ranges = c_ranges(t);
                    writeln!(
                        b,
                        "    {{ static const unsigned short r[][2] = {{{ranges}}}; rec_ranges(&a{i}, r, sizeof r / sizeof r[0]); }}"
                    )
                    .unwrap()
                }
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

    /// Emits `void cbref_<name>(const void *f, void *const *a, void *ret)`: a C caller of a
    /// function pointer of `sig` (a callback's entry) with the argument values `a[i]` points
    /// to, storing its result at `ret`. Not for variadic signatures.
    pub fn callback_caller(&mut self, name: &str, sig: &Signature) {
        assert!(sig.fixed_args().is_none(), "callback callers are not variadic");
        let ret = sig.ret().map_or("void".to_string(), |t| self.c_type(t));
        let types: Vec<String> = sig.args().iter().map(|t| self.c_type(t)).collect();
        let params = if types.is_empty() { "void".to_string() } else { types.join(", ") };
        let mut b = format!(
            "typedef {ret} (*cbt_{name})({params});
"
        );
        writeln!(b, "void cbref_{name}(const void *f, void *const *a, void *ret) {{").unwrap();
        for (i, t) in types.iter().enumerate() {
            writeln!(b, "    {t} a{i}; memcpy(&a{i}, a[{i}], sizeof a{i});").unwrap();
        }
        let call_args: Vec<String> = (0..types.len()).map(|i| format!("a{i}")).collect();
        if sig.ret().is_some() {
            writeln!(
                b,
                "    {ret} r = ((cbt_{name})f)({});
    memcpy(ret, &r, sizeof r);",
                call_args.join(", ")
            )
            .unwrap();
        } else {
            writeln!(
                b,
                "    (void)ret;
    ((cbt_{name})f)({});",
                call_args.join(", ")
            )
            .unwrap();
        }
        b.push_str("}\n");
        self.body.push_str(&b);
    }

    /// The whole translation unit.
    pub fn source(&self) -> String {
        format!("{C_PRELUDE}{}{}", self.types, self.body)
    }
}

/// The value ranges of `ty` as a C initializer (`{off,len},...`; `NT_LDV` for a long double).
fn c_ranges(ty: &Type) -> String {
    let ranges: Vec<String> = ld_ranges(ty)
        .iter()
        .map(|&(o, l, ld)| if ld { format!("{{{o},NT_LDV}}") } else { format!("{{{o},{l}}}") })
        .collect();
    ranges.join(",")
}

/// splitmix64: small, seedable, good enough to pick shapes.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
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

/// The types wider than a word: `__int128`, `long double`, the complex types.
const WIDE_SCALARS: [Type; 6] =
    [Type::I128, Type::U128, Type::LongDouble, Type::ComplexF32, Type::ComplexF64, Type::ComplexLongDouble];

/// A random scalar: one of the word types, or one in seven times a wide one.
pub fn random_scalar(rng: &mut Rng) -> Type {
    if rng.chance(14) {
        return WIDE_SCALARS[rng.below(WIDE_SCALARS.len() as u64) as usize].clone();
    }
    SCALARS[rng.below(SCALARS.len() as u64) as usize].clone()
}

/// A random aggregate of about `target` bytes (1..=256): nested structs, arrays, mixed and
/// explicit alignments; biased towards the shapes with special rules (HFAs, 16-byte mixes).
pub fn random_aggregate(rng: &mut Rng, target: usize, depth: usize) -> Aggregate {
    if rng.chance(20) {
        // HFA candidates: 1-4 floats, doubles or long doubles, possibly nested, as an array or
        // with a complex member (two of them).
        let t = match rng.below(5) {
            0 | 1 => Type::F32,
            2 | 3 => Type::F64,
            _ => Type::LongDouble,
        };
        let n = rng.range(1, 4);
        let agg = match rng.below(4) {
            3 if n >= 2 => {
                let complex = match t {
                    Type::F32 => Type::ComplexF32,
                    Type::F64 => Type::ComplexF64,
                    _ => Type::ComplexLongDouble,
                };
                (2..n).fold(Aggregate::builder().field(complex), |b, _| b.field(t.clone()))
            }
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

/// The seed of the random signatures in the built-in oracle (the conformance tests' default).
pub const SELFTEST_SEED: u64 = 0x5eed_2026;

/// How many random signatures the built-in oracle holds.
pub const SELFTEST_RANDOM: usize = 64;

/// Every function of the built-in oracle, by C name: the pinned shapes, the NCCL prototypes,
/// and the first [`SELFTEST_RANDOM`] random signatures of seed [`SELFTEST_SEED`].
pub fn selftest_functions() -> Vec<(String, Signature)> {
    let mut v: Vec<(String, Signature)> =
        pinned_shapes().into_iter().chain(nccl_shapes()).map(|(name, sig)| (format!("st_{name}"), sig)).collect();
    let mut rng = Rng(SELFTEST_SEED);
    v.extend((0..SELFTEST_RANDOM).map(|i| (format!("st_random{i}"), random_signature(&mut rng))));
    v
}

/// FNV-1a over every function's name and signature: the built-in oracle records the value it
/// was generated with, so a stale oracle is detected instead of compared.
pub fn fingerprint(functions: &[(String, Signature)]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (name, sig) in functions {
        for b in format!("{name}:{sig:?}\n").bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// The C source of the built-in oracle (`generated/selftest_oracle.c`): the
/// callees and callers of [`selftest_functions`], a table of them and the fingerprint.
pub fn selftest_c_source() -> String {
    let functions = selftest_functions();
    let mut gen = CGen::default();
    for (name, sig) in &functions {
        gen.function(name, sig);
    }
    let mut table = String::new();
    for (name, _) in &functions {
        writeln!(table, "    {{\"{name}\", (const void *){name}, (const void *)ref_{name}}},").unwrap();
    }
    format!(
        "/* Generated by `selftest_c_source` in src/oracle.rs; do not edit.\n * Regenerate: NCCL_TRAMPOLINE_REGENERATE=1 cargo test --features cli --test cli oracle\n */\n{}\ntypedef struct {{ const char *name; const void *callee; const void *reference; }} nt_oracle_entry;\nconst nt_oracle_entry nt_selftest_functions[] = {{\n{table}}};\nconst size_t nt_selftest_function_count = {};\nconst unsigned long long nt_selftest_fingerprint = {:#x}ULL;\n",
        gen.source(),
        functions.len(),
        fingerprint(&functions)
    )
}
