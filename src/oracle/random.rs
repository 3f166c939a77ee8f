//! The seeded generator of random signatures: scalars, aggregates biased towards the shapes with
//! special rules, and signatures of every kind.

use crate::ctype::types::{Aggregate, Signature, Type};

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
        return WIDE_SCALARS[rng.below(WIDE_SCALARS.len() as u64) as usize];
    }
    SCALARS[rng.below(SCALARS.len() as u64) as usize]
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
                (2..n).fold(Aggregate::builder().field(complex), |b, _| b.field(t))
            }
            0 => Aggregate::builder().array(t, n),
            1 => {
                let inner = Aggregate::builder().array(t, n.div_ceil(2)).build().unwrap();
                let mut b = Aggregate::builder().field(Type::Aggregate(inner));
                for _ in 0..n / 2 {
                    b = b.field(t);
                }
                b
            }
            _ => (0..n).fold(Aggregate::builder(), |b, _| b.field(t)),
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
