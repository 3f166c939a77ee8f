//! The pinned shapes: the signatures the issue names, those of `__int128`, `long double` and
//! the complex types, and NCCL's own prototypes.

use crate::ctype::types::{Aggregate, AggregateBuilder, Signature, Type};

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
        long_double,
        agg(Aggregate::builder().field(Type::F32).field(Type::F32).field(Type::I64)),
        agg(Aggregate::builder().field(Type::I32).field(Type::F32).field(Type::F32).field(Type::I32)),
    ];
    let mut v = vec![
        ("sixteen_32_byte_structs", sig(vec![s32; 16], Some(Type::I32))),
        ("int8_int64_struct", sig(vec![i8_i64, Type::I32, i8_i64], Some(i8_i64))),
        (
            "chars_float_char_double",
            sig(vec![Type::I8, Type::I8, Type::I8, Type::I8, Type::I8, Type::F32, c_d], Some(c_d)),
        ),
        ("aligned_member_16_on_stack", sig([vec![Type::I64; 9], vec![member16, Type::I32]].concat(), Some(member16))),
        ("aligned_member_16_in_registers", sig(vec![Type::I32, member16, Type::I32], Some(Type::I64))),
        ("aligned_struct_16_on_stack", sig([vec![Type::I64; 9], vec![struct16, Type::I32]].concat(), Some(struct16))),
        (
            "aggregate_after_all_registers",
            sig([vec![Type::I64; 8], vec![Type::F64; 8], vec![long_double, Type::I32]].concat(), Some(long_double)),
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
            sig([vec![Type::F64; 6], vec![h3, Type::F32, Type::F64]].concat(), Some(h3))
        }),
    ];
    for t in [Type::F32, Type::F64] {
        for n in 2..=4 {
            let h = agg(Aggregate::builder().array(t, n));
            let name: &'static str = Box::leak(format!("hfa_{}x{n}", t.c_name()).into_boxed_str());
            v.push((name, sig(vec![h, Type::I32, h], Some(h))));
        }
    }
    for (i, m) in mixed.into_iter().enumerate() {
        let name: &'static str = Box::leak(format!("mixed_16_{i}").into_boxed_str());
        v.push((name, sig(vec![m, Type::F32, m, Type::I8], Some(m))));
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
    let one_ld = agg(Aggregate::builder().field(ld));
    let int128_struct = agg(Aggregate::builder().field(i128));
    let int128_wide = agg(Aggregate::builder().field(Type::I32).field(u128));
    let cf_hfa = agg(Aggregate::builder().field(cf).field(Type::F32));
    let cd_pair = agg(Aggregate::builder().field(cd));
    let mut v = vec![
        ("int128_first", sig(vec![i128, Type::I32, u128], Some(i128))),
        ("int128_odd_register", sig(vec![Type::I32, i128, Type::I8, u128], Some(u128))),
        ("int128_not_split", sig([vec![Type::I64; 5], vec![i128, Type::I64, u128]].concat(), Some(i128))),
        ("int128_after_registers", sig([vec![Type::I64; 7], vec![i128, Type::I32, u128]].concat(), Some(u128))),
        ("int128_in_structs", sig(vec![Type::I32, int128_struct, int128_wide, int128_struct], Some(int128_struct))),
        ("int128_struct_result", sig(vec![i128], Some(int128_wide))),
        ("long_double_first", sig(vec![ld, Type::I32, ld, Type::F64], Some(ld))),
        (
            "long_double_after_registers",
            sig([vec![Type::F64; 7], vec![ld, Type::F32, ld, Type::F64]].concat(), Some(ld)),
        ),
        ("long_double_struct", sig(vec![one_ld, Type::I32, one_ld], Some(one_ld))),
        ("long_double_in_struct", sig(vec![agg(Aggregate::builder().field(Type::I8).field(ld))], Some(Type::F64))),
        ("complex_float", sig(vec![cf, Type::F32, cf, Type::I32], Some(cf))),
        ("complex_double", sig(vec![cd, Type::F64, cd, Type::I32], Some(cd))),
        ("complex_long_double", sig(vec![cld, Type::I32, cld, ld], Some(cld))),
        ("complex_after_registers", sig([vec![Type::F64; 7], vec![cd, cf, cf, cd]].concat(), Some(cd))),
        ("complex_in_structs", sig(vec![cf_hfa, cd_pair, cf_hfa], Some(cf_hfa))),
        ("complex_double_struct_result", sig(vec![Type::I32], Some(cd_pair))),
        (
            "wide_on_the_stack",
            sig([vec![Type::I64; 9], vec![Type::F64; 9], vec![i128, ld, cld, cd, cf, i128]].concat(), Some(cld)),
        ),
        (
            "variadic_wide",
            Signature::variadic(1, vec![Type::I32, ld, u128, Type::ComplexF64, cld, Type::ComplexF32, ld], Some(ld))
                .unwrap(),
        ),
    ];
    for n in 2..=4 {
        let h = agg(Aggregate::builder().array(ld, n));
        let name: &'static str = Box::leak(format!("hfa_long_double_x{n}").into_boxed_str());
        v.push((name, sig(vec![h, Type::I32, h, ld], Some(h))));
    }
    v
}

pub fn nccl_shapes() -> Vec<(&'static str, Signature)> {
    let int = Type::I32;
    vec![
        ("ncclCommInitRank", Signature::new(vec![Type::Pointer, int, unique_id(), int], Some(int)).unwrap()),
        (
            "ncclCommInitRankConfig",
            Signature::new(vec![Type::Pointer, int, unique_id(), int, Type::Pointer], Some(int)).unwrap(),
        ),
        (
            "ncclReduce",
            Signature::new(
                vec![Type::Pointer, Type::Pointer, Type::U64, int, int, int, Type::Pointer, Type::Pointer],
                Some(int),
            )
            .unwrap(),
        ),
    ]
}
