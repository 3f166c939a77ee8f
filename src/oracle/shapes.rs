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
