//! Element types, reduction operations and the test data of `perf`: what each rank sends,
//! the exact result it must receive, and the element-wise comparison.

use clap::ValueEnum;
use nccl_trampoline::nccl::{DataType, RedOp};

use super::collective::Expected;
use crate::error::Usage;

/// An element type, by nccl-tests' `-d` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Elem {
    #[value(name = "int8", alias = "char")]
    Int8,
    #[value(name = "uint8")]
    Uint8,
    #[value(name = "int32", alias = "int")]
    Int32,
    #[value(name = "uint32")]
    Uint32,
    #[value(name = "int64")]
    Int64,
    #[value(name = "uint64")]
    Uint64,
    #[value(name = "half", alias = "float16")]
    Half,
    #[value(name = "float", alias = "float32")]
    Float,
    #[value(name = "double", alias = "float64")]
    Double,
    #[value(name = "bfloat16", alias = "bf16")]
    Bfloat16,
}

/// `-d`: one type or `all`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeChoice {
    One(Elem),
    All,
}

/// A reduction, by nccl-tests' `-o` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Op {
    Sum,
    Prod,
    Max,
    Min,
    Avg,
}

/// `-o`: one operation or `all`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpChoice {
    One(Op),
    All,
}

pub const ALL_ELEMS: [Elem; 10] = [
    Elem::Int8,
    Elem::Uint8,
    Elem::Int32,
    Elem::Uint32,
    Elem::Int64,
    Elem::Uint64,
    Elem::Half,
    Elem::Float,
    Elem::Double,
    Elem::Bfloat16,
];
pub const ALL_OPS: [Op; 5] = [Op::Sum, Op::Prod, Op::Max, Op::Min, Op::Avg];

pub fn parse_type(s: &str) -> Result<TypeChoice, Usage> {
    if s == "all" {
        return Ok(TypeChoice::All);
    }
    Elem::from_str(s, false).map(TypeChoice::One).map_err(|_| Usage::UnknownType(s.to_owned()))
}

pub fn parse_op(s: &str) -> Result<OpChoice, Usage> {
    if s == "all" {
        return Ok(OpChoice::All);
    }
    Op::from_str(s, false).map(OpChoice::One).map_err(|_| Usage::UnknownOp(s.to_owned()))
}

impl TypeChoice {
    pub fn list(self) -> Vec<Elem> {
        match self {
            TypeChoice::One(e) => vec![e],
            TypeChoice::All => ALL_ELEMS.to_vec(),
        }
    }
}

impl OpChoice {
    pub fn list(self) -> Vec<Op> {
        match self {
            OpChoice::One(o) => vec![o],
            OpChoice::All => ALL_OPS.to_vec(),
        }
    }
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Sum => "sum",
            Op::Prod => "prod",
            Op::Max => "max",
            Op::Min => "min",
            Op::Avg => "avg",
        }
    }

    pub fn nccl(self) -> RedOp {
        match self {
            Op::Sum => RedOp::SUM,
            Op::Prod => RedOp::PROD,
            Op::Max => RedOp::MAX,
            Op::Min => RedOp::MIN,
            Op::Avg => RedOp::AVG,
        }
    }

    /// Element `j` of rank `r`'s send data: small integers, exact in every type, whose
    /// products over 8 ranks still fit (1 or 2 for `prod`).
    pub fn send_value(self, r: usize, j: usize) -> i64 {
        match self {
            Op::Prod => 1 + i64::from((r + j) % 3 == 0),
            _ => ((r * 7 + j * 3 + 1) % 5) as i64,
        }
    }

    /// The reduction of a column of send values, as `elem` computes it.
    pub fn reduce(self, elem: Elem, values: &mut dyn Iterator<Item = i64>) -> Expected {
        match self {
            Op::Sum => Expected::Int(values.sum()),
            Op::Prod => Expected::Int(values.fold(1, i64::wrapping_mul)),
            Op::Max => Expected::Int(values.max().unwrap_or(0)),
            Op::Min => Expected::Int(values.min().unwrap_or(0)),
            Op::Avg => {
                let (sum, n) = values.fold((0i64, 0i64), |(s, n), v| (s + v, n + 1));
                if elem.is_float() {
                    Expected::Real(sum as f64 / n as f64)
                } else {
                    Expected::Int(sum / n)
                }
            }
        }
    }
}

impl Elem {
    pub fn name(self) -> &'static str {
        match self {
            Elem::Int8 => "int8",
            Elem::Uint8 => "uint8",
            Elem::Int32 => "int32",
            Elem::Uint32 => "uint32",
            Elem::Int64 => "int64",
            Elem::Uint64 => "uint64",
            Elem::Half => "half",
            Elem::Float => "float",
            Elem::Double => "double",
            Elem::Bfloat16 => "bfloat16",
        }
    }

    pub fn nccl(self) -> DataType {
        match self {
            Elem::Int8 => DataType::INT8,
            Elem::Uint8 => DataType::UINT8,
            Elem::Int32 => DataType::INT32,
            Elem::Uint32 => DataType::UINT32,
            Elem::Int64 => DataType::INT64,
            Elem::Uint64 => DataType::UINT64,
            Elem::Half => DataType::FLOAT16,
            Elem::Float => DataType::FLOAT32,
            Elem::Double => DataType::FLOAT64,
            Elem::Bfloat16 => DataType::BFLOAT16,
        }
    }

    pub fn size(self) -> usize {
        match self {
            Elem::Int8 | Elem::Uint8 => 1,
            Elem::Half | Elem::Bfloat16 => 2,
            Elem::Int32 | Elem::Uint32 | Elem::Float => 4,
            Elem::Int64 | Elem::Uint64 | Elem::Double => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, Elem::Half | Elem::Float | Elem::Double | Elem::Bfloat16)
    }

    /// Writes the integer `v` as one element (integers wrap to the type's width).
    pub fn encode(self, v: i64, out: &mut [u8]) {
        match self {
            Elem::Int8 | Elem::Uint8 => out[0] = v as u8,
            Elem::Int32 | Elem::Uint32 => out.copy_from_slice(&(v as u32).to_ne_bytes()),
            Elem::Int64 | Elem::Uint64 => out.copy_from_slice(&v.to_ne_bytes()),
            Elem::Half => out.copy_from_slice(&f32_to_f16(v as f32).to_ne_bytes()),
            Elem::Float => out.copy_from_slice(&(v as f32).to_ne_bytes()),
            Elem::Double => out.copy_from_slice(&(v as f64).to_ne_bytes()),
            Elem::Bfloat16 => out.copy_from_slice(&f32_to_bf16(v as f32).to_ne_bytes()),
        }
    }

    /// True if the element `bytes` holds `want` (integers exactly after wrapping to the
    /// type's width; floats within a few units in the last place of the type).
    pub fn matches(self, bytes: &[u8], want: Expected) -> bool {
        let b = |n: usize| -> [u8; 8] {
            let mut a = [0u8; 8];
            a[..n].copy_from_slice(&bytes[..n]);
            a
        };
        let int = |w: Expected| match w {
            Expected::Int(x) => Some(x),
            Expected::Real(_) => None,
        };
        match self {
            Elem::Int8 => int(want).map(|x| x as i8) == Some(bytes[0] as i8),
            Elem::Uint8 => int(want).map(|x| x as u8) == Some(bytes[0]),
            Elem::Int32 | Elem::Uint32 => {
                int(want).map(|x| x as u32) == Some(u32::from_ne_bytes(b(4)[..4].try_into().expect("4 bytes")))
            }
            Elem::Int64 | Elem::Uint64 => int(want) == Some(i64::from_ne_bytes(b(8))),
            Elem::Half | Elem::Float | Elem::Double | Elem::Bfloat16 => {
                let got = match self {
                    Elem::Half => f16_to_f32(u16::from_ne_bytes([bytes[0], bytes[1]])) as f64,
                    Elem::Bfloat16 => f32::from_bits(u32::from(u16::from_ne_bytes([bytes[0], bytes[1]])) << 16) as f64,
                    Elem::Float => f32::from_ne_bytes(b(4)[..4].try_into().expect("4 bytes")) as f64,
                    _ => f64::from_ne_bytes(b(8)),
                };
                let want = match want {
                    Expected::Int(x) => x as f64,
                    Expected::Real(x) => x,
                };
                let tolerance = match self {
                    Elem::Half => 2e-3,
                    Elem::Bfloat16 => 2e-2,
                    Elem::Float => 1e-6,
                    _ => 1e-12,
                };
                (got - want).abs() <= tolerance * want.abs().max(1.0)
            }
        }
    }
}

/// IEEE binary16 from binary32, rounding to nearest even (normal and zero results; the test
/// data never needs subnormals or infinities).
pub fn f32_to_f16(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    let mant = bits & 0x7f_ffff;
    if x == 0.0 || exp <= 0 {
        return sign;
    }
    if exp >= 31 {
        return sign | 0x7c00;
    }
    let mut h = (exp as u32) << 10 | (mant >> 13);
    let rest = mant & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && h & 1 == 1) {
        h += 1;
    }
    sign | h as u16
}

pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from((h >> 10) & 0x1f);
    let mant = u32::from(h & 0x3ff);
    let bits = match exp {
        0 if mant == 0 => sign,
        0 => return f32::from_bits(sign) + (if sign != 0 { -1.0 } else { 1.0 }) * mant as f32 * 2f32.powi(-24),
        31 => sign | 0x7f80_0000 | (mant << 13),
        e => sign | ((e + 127 - 15) << 23) | (mant << 13),
    };
    f32::from_bits(bits)
}

/// bfloat16 from binary32, rounding to nearest even.
pub fn f32_to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_and_bfloat16_round_trip_the_test_values() {
        for v in [0.0f32, 1.0, 2.0, 3.0, 4.0, 32.0, 256.0, 0.5, 10.5, -7.0] {
            assert_eq!(f16_to_f32(f32_to_f16(v)), v, "half {v}");
            assert_eq!(f32::from_bits(u32::from(f32_to_bf16(v)) << 16), v, "bfloat16 {v}");
        }
        assert_eq!(f32_to_f16(1.0), 0x3c00);
        assert_eq!(f32_to_bf16(1.0), 0x3f80);
    }

    #[test]
    fn integers_compare_after_wrapping() {
        let mut b = [0u8; 8];
        Elem::Int8.encode(300, &mut b[..1]);
        assert!(Elem::Int8.matches(&b, Expected::Int(300)));
        assert!(!Elem::Int8.matches(&b, Expected::Int(301)));
        Elem::Uint32.encode(7, &mut b[..4]);
        assert!(Elem::Uint32.matches(&b, Expected::Int(7)));
        Elem::Bfloat16.encode(3, &mut b[..2]);
        assert!(Elem::Bfloat16.matches(&b, Expected::Real(3.01)));
        assert!(!Elem::Bfloat16.matches(&b, Expected::Real(3.2)));
    }

    #[test]
    fn averages_of_integers_truncate() {
        assert_eq!(Op::Avg.reduce(Elem::Int32, &mut [3i64, 4].into_iter()), Expected::Int(3));
        assert_eq!(Op::Avg.reduce(Elem::Float, &mut [3i64, 4].into_iter()), Expected::Real(3.5));
    }
}
