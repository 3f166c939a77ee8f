//! The C source generation: struct typedefs with layout assertions, recording callees, reference
//! callers and callback callers.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::values::ld_ranges;
use crate::ctype::types::{Aggregate, Signature, Type};

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
        let ranges = c_ranges(&Type::Aggregate(*agg));
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
