//! Explicit C struct layouts (`Aggregate::from_fields`) and the C layout algorithm
//! (`Aggregate::builder`), any numbers, nested structs included, then every ABI's placement
//! of a signature that passes and returns them. A layout is a typed error or an aggregate
//! whose every scalar lies inside it; a placement is a typed error or a plan whose stack and
//! copies stay within the limits; nothing panics.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use nccl_trampoline::abi::Abi;
use nccl_trampoline::limits::{MAX_COPY_BYTES, MAX_STACK_BYTES};
use nccl_trampoline::{Aggregate, CallPlan, Field, Signature, Type};

const SCALARS: &[Type] = &[
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
    Type::I128,
    Type::U128,
    Type::LongDouble,
    Type::ComplexF32,
    Type::ComplexF64,
    Type::ComplexLongDouble,
];

/// A number: usually small, sometimes one at the edge of usize.
fn number(u: &mut Unstructured<'_>) -> Result<usize> {
    Ok(match u.int_in_range(0..=5u8)? {
        0..=2 => u.int_in_range(0..=64usize)?,
        3 => 1usize << u.int_in_range(0..=63u32)?,
        4 => usize::MAX - u.int_in_range(0..=64usize)?,
        _ => u.arbitrary()?,
    })
}

fn ty(u: &mut Unstructured<'_>, inner: &[Type]) -> Result<Type> {
    Ok(if !inner.is_empty() && u.ratio(1, 4)? { u.choose(inner)?.clone() } else { u.choose(SCALARS)?.clone() })
}

/// An aggregate from the builder (C's rules) or from explicit fields.
fn aggregate(u: &mut Unstructured<'_>, inner: &[Type]) -> Result<Option<Aggregate>> {
    let made = if u.arbitrary()? {
        let mut b = Aggregate::builder();
        for _ in 0..u.int_in_range(0..=6u8)? {
            b = match u.int_in_range(0..=2u8)? {
                0 => b.field(ty(u, inner)?),
                1 => b.array(ty(u, inner)?, number(u)?),
                _ => b.array_aligned(ty(u, inner)?, u.int_in_range(1..=4usize)?, number(u)?),
            };
        }
        if u.ratio(1, 4)? {
            b = b.align(number(u)?);
        }
        b.build()
    } else {
        let mut fields = Vec::new();
        for _ in 0..u.int_in_range(0..=6u8)? {
            fields.push(Field::new(number(u)?, ty(u, inner)?).with_count(number(u)?).with_align(number(u)?));
        }
        Aggregate::from_fields(number(u)?, number(u)?, fields)
    };
    Ok(match made {
        Ok(a) => {
            assert!(a.size() > 0 && a.size() % a.align() == 0 && a.align().is_power_of_two(), "{a:?}");
            for (offset, t) in a.scalars() {
                assert!(offset + t.size() <= a.size(), "a scalar at {offset} past the end of {a:?}");
            }
            Some(a)
        }
        Err(e) => {
            let _ = e.to_string();
            None
        }
    })
}

fn run(data: &[u8]) -> Result<()> {
    let mut u = Unstructured::new(data);
    let mut made: Vec<Type> = Vec::new();
    for _ in 0..u.int_in_range(1..=3u8)? {
        if let Some(a) = aggregate(&mut u, &made)? {
            made.push(Type::Aggregate(a));
        }
    }
    let Some(last) = made.last().cloned() else { return Ok(()) };
    let mut args = vec![last.clone()];
    for _ in 0..u.int_in_range(0..=10u8)? {
        args.push(ty(&mut u, &made)?);
    }
    let ret = if u.arbitrary()? { Some(last) } else { None };
    let Ok(sig) = Signature::new(args, ret) else { return Ok(()) };
    for abi in [Abi::SysVX86_64, Abi::Aapcs64, Abi::Lp64d] {
        match CallPlan::for_abi(abi, &sig) {
            Ok(plan) => {
                let p = plan.placement();
                assert!(p.stack_len <= MAX_STACK_BYTES && p.copy_len <= MAX_COPY_BYTES, "{abi:?}: {p:?}");
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(data);
});
