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
    /// OCP FP8 E4M3 (`ncclFloat8e4m3`, NCCL 2.24).
    #[value(name = "f8e4m3")]
    F8e4m3,
    /// OCP FP8 E5M2 (`ncclFloat8e5m2`, NCCL 2.24).
    #[value(name = "f8e5m2")]
    F8e5m2,
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
    /// `ncclRedOpCreatePreMulSum` with a per-rank host scalar (NCCL 2.11).
    #[value(name = "mulsum")]
    MulSum,
}

/// `-o`: one operation or `all`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpChoice {
    One(Op),
    All,
}

/// The types of `-d all` before the library is known: those of NCCL 2.10 to 2.23 (no FP8).
/// A sweep lists [`all_types`] once the library and the GPUs are known.
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
/// The ops of `-o all` before the library is known: those of NCCL 2.10 (no `mulsum`). A sweep
/// lists [`all_ops`] once the library is known.
pub const ALL_OPS: [Op; 5] = [Op::Sum, Op::Prod, Op::Max, Op::Min, Op::Avg];

/// `NCCL_VERSION(2,10,0)`: `ncclAvg` and `ncclBfloat16`.
const NCCL_2_10: i32 = 21000;
/// `NCCL_VERSION(2,11,0)`: `ncclRedOpCreatePreMulSum`.
const NCCL_2_11: i32 = 21100;
/// `NCCL_VERSION(2,24,0)`: `ncclFloat8e4m3` and `ncclFloat8e5m2`.
const NCCL_2_24: i32 = 22400;

/// The types `-d all` measures with the library of version code `nccl_version_code`
/// (`ncclGetVersion`) on GPUs whose smallest compute capability is `min_cuda_arch`
/// (`100 * major + 10 * minor`, the smallest over every rank of the job). As nccl-tests
/// (v2.19.6): nine types always, bfloat16 from 2.10, the two FP8 types from 2.24
/// (src/common.cu:1142-1159), and FP8 only when every GPU is sm_90 or newer
/// (src/common.cu:1586-1597). Codes of 2.8 and older (`X*1000+Y*100+Z`) are below every
/// threshold, as there.
pub fn all_types(nccl_version_code: i32, min_cuda_arch: i32) -> Vec<Elem> {
    let mut types = ALL_ELEMS[..9].to_vec();
    if nccl_version_code >= NCCL_2_10 {
        types.push(Elem::Bfloat16);
    }
    if nccl_version_code >= NCCL_2_24 && min_cuda_arch >= 900 {
        types.extend([Elem::F8e4m3, Elem::F8e5m2]);
    }
    types
}

/// The ops `-o all` measures with the library of version code `nccl_version_code`: sum,
/// prod, max, min always, avg from 2.10, mulsum from 2.11 (nccl-tests v2.19.6
/// src/common.cu:1142-1149).
pub fn all_ops(nccl_version_code: i32) -> Vec<Op> {
    let mut ops = ALL_OPS[..4].to_vec();
    if nccl_version_code >= NCCL_2_10 {
        ops.push(Op::Avg);
    }
    if nccl_version_code >= NCCL_2_11 {
        ops.push(Op::MulSum);
    }
    ops
}

/// Refuses a type or an op the loaded library (version code `nccl_version_code`) does not
/// have: an explicit `-d f8e4m3` on NCCL 2.23 is a usage error here, not NCCL's
/// `ncclInvalidArgument` in the middle of a sweep. The check a plan makes once the library is
/// loaded (for every case of the sweep).
pub fn check_supported(elem: Elem, op: Option<Op>, nccl_version_code: i32) -> Result<(), Usage> {
    let loaded = || {
        nccl_trampoline::nccl::Version::from_code(nccl_version_code)
            .map_or_else(|| format!("version code {nccl_version_code}"), |v| v.to_string())
    };
    let (needs, since) = match elem {
        Elem::Bfloat16 => ("2.10", NCCL_2_10),
        Elem::F8e4m3 | Elem::F8e5m2 => ("2.24", NCCL_2_24),
        _ => ("", 0),
    };
    if nccl_version_code < since {
        return Err(Usage::NeedsNewerNccl { what: format!("-d {}", elem.name()), needs, loaded: loaded() });
    }
    let (needs, since) = match op {
        Some(Op::Avg) => ("2.10", NCCL_2_10),
        Some(Op::MulSum) => ("2.11", NCCL_2_11),
        _ => ("", 0),
    };
    if nccl_version_code < since {
        let name = op.map_or("", Op::name);
        return Err(Usage::NeedsNewerNccl { what: format!("-o {name}"), needs, loaded: loaded() });
    }
    Ok(())
}

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
    /// The types, `all` as [`ALL_ELEMS`] (the library not yet known).
    pub fn list(self) -> Vec<Elem> {
        match self {
            TypeChoice::One(e) => vec![e],
            TypeChoice::All => ALL_ELEMS.to_vec(),
        }
    }

    /// The types, `all` as [`all_types`] for this library and these GPUs.
    pub fn list_for(self, nccl_version_code: i32, min_cuda_arch: i32) -> Vec<Elem> {
        match self {
            TypeChoice::One(e) => vec![e],
            TypeChoice::All => all_types(nccl_version_code, min_cuda_arch),
        }
    }
}

impl OpChoice {
    /// The ops, `all` as [`ALL_OPS`] (the library not yet known).
    pub fn list(self) -> Vec<Op> {
        match self {
            OpChoice::One(o) => vec![o],
            OpChoice::All => ALL_OPS.to_vec(),
        }
    }

    /// The ops, `all` as [`all_ops`] for this library.
    pub fn list_for(self, nccl_version_code: i32) -> Vec<Op> {
        match self {
            OpChoice::One(o) => vec![o],
            OpChoice::All => all_ops(nccl_version_code),
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
            Op::MulSum => "mulsum",
        }
    }

    /// NCCL's fixed op, or `None` for `mulsum`, whose op NCCL hands out per call
    /// (`ncclRedOpCreatePreMulSum`).
    pub fn builtin(self) -> Option<RedOp> {
        match self {
            Op::Sum => Some(RedOp::SUM),
            Op::Prod => Some(RedOp::PROD),
            Op::Max => Some(RedOp::MAX),
            Op::Min => Some(RedOp::MIN),
            Op::Avg => Some(RedOp::AVG),
            Op::MulSum => None,
        }
    }
}

/// The data of one case: what each rank sends and what every result element must be, for
/// element type `elem`, reduction `op` (`None`: the collective copies) and `nranks` ranks.
///
/// Every value is a small integer, exact in every type, and so is every partial result of
/// every reduction order (for the integer types up to wrapping, which NCCL's arithmetic shares):
/// the results compare exactly, as nccl-tests' `verifiable` makes them (its tolerance is 0
/// except for averages of floats: [`Elem::matches`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TestData {
    pub elem: Elem,
    pub op: Option<Op>,
    pub nranks: usize,
}

impl TestData {
    pub fn new(elem: Elem, op: Option<Op>, nranks: usize) -> Self {
        TestData { elem, op, nranks }
    }

    /// Element `j` of rank `r`'s send data.
    ///
    /// Most types: `(7r + 3j + 1) mod 5` (0 to 4), or 1 and 2 for products (a 2 where
    /// `r + j` is a multiple of 3), whose sums and products over 8 ranks stay exact.
    ///
    /// FP8 has 3 (E4M3) or 2 (E5M2) mantissa bits: only the integers up to 16 or 8 are all
    /// exact. For the sums (sum, avg, mulsum) and products only two ranks of each element
    /// contribute, as nccl-tests' verifiable does for averages (verifiable.cu:911-921, "limit
    /// to two ranks contributing non-zero values"): ranks `j mod n` and `(j + 1) mod n` send 1
    /// or 2, the others 0 (1 for products). Every partial sum is then at most 8 (with mulsum's
    /// scalar 2), every product at most 4, whatever the number of ranks and the order.
    ///
    /// The 16-bit floats take the same rule (half's products pass 65504 from 46 ranks,
    /// bfloat16's sums stop growing past 256), and so do every float type's products (float
    /// overflows from about 384 ranks).
    pub fn send(&self, r: usize, j: usize) -> i64 {
        let n = self.nranks.max(1);
        let contributes = r == j % n || r == (j + 1) % n;
        let one_or_two = 1 + ((j / n + r) % 2) as i64;
        let limited = self.elem.is_fp8()
            || matches!(self.elem, Elem::Half | Elem::Bfloat16)
            || (self.elem.is_float() && self.op == Some(Op::Prod));
        match (self.op, limited) {
            (Some(Op::Prod), false) => 1 + i64::from((r + j) % 3 == 0),
            (Some(Op::Prod), true) => {
                if contributes {
                    one_or_two
                } else {
                    1
                }
            }
            (Some(Op::Sum | Op::Avg | Op::MulSum), true) => {
                if contributes {
                    one_or_two
                } else {
                    0
                }
            }
            _ => ((r * 7 + j * 3 + 1) % 5) as i64,
        }
    }

    /// What rank `r`'s element `j` adds to a reduction: its send value, times the rank's
    /// scalar for mulsum.
    pub fn contribution(&self, r: usize, j: usize) -> i64 {
        let x = self.send(r, j);
        match self.op {
            Some(Op::MulSum) => premul_scalar(r) * x,
            _ => x,
        }
    }

    /// The reduction of a column of contributions, as the element type computes it.
    pub fn reduce(&self, values: &mut dyn Iterator<Item = i64>) -> Expected {
        match self.op.unwrap_or(Op::Sum) {
            Op::Sum | Op::MulSum => Expected::Int(values.sum()),
            Op::Prod => Expected::Int(values.fold(1, i64::wrapping_mul)),
            Op::Max => Expected::Int(values.max().unwrap_or(0)),
            Op::Min => Expected::Int(values.min().unwrap_or(0)),
            Op::Avg => {
                let (sum, n) = values.fold((0i64, 0i64), |(s, n), v| (s + v, n + 1));
                if self.elem.is_float() {
                    Expected::Real(sum as f64 / n as f64)
                } else {
                    Expected::Int(sum / n)
                }
            }
        }
    }
}

/// Rank `rank`'s mulsum scalar: 1 on even ranks, 2 on odd ones, in every type (nccl-tests
/// v2.19.6 verifiable/verifiable.h:31-34, `ncclVerifiablePremulScalar`, which common.cu:572-590
/// hands to `ncclRedOpCreatePreMulSum` as a host-immediate scalar).
pub fn premul_scalar(rank: usize) -> i64 {
    if rank % 2 == 0 {
        1
    } else {
        2
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
            Elem::F8e4m3 => "f8e4m3",
            Elem::F8e5m2 => "f8e5m2",
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
            Elem::F8e4m3 => DataType::FLOAT8_E4M3,
            Elem::F8e5m2 => DataType::FLOAT8_E5M2,
        }
    }

    pub fn size(self) -> usize {
        match self {
            Elem::Int8 | Elem::Uint8 | Elem::F8e4m3 | Elem::F8e5m2 => 1,
            Elem::Half | Elem::Bfloat16 => 2,
            Elem::Int32 | Elem::Uint32 | Elem::Float => 4,
            Elem::Int64 | Elem::Uint64 | Elem::Double => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, Elem::Half | Elem::Float | Elem::Double | Elem::Bfloat16 | Elem::F8e4m3 | Elem::F8e5m2)
    }

    pub fn is_fp8(self) -> bool {
        matches!(self, Elem::F8e4m3 | Elem::F8e5m2)
    }

    /// Writes the integer `v` as one element (integers wrap to the type's width; floats round
    /// to nearest even).
    pub fn encode(self, v: i64, out: &mut [u8]) {
        match self {
            Elem::Int8 | Elem::Uint8 => out[0] = v as u8,
            Elem::Int32 | Elem::Uint32 => out.copy_from_slice(&(v as u32).to_ne_bytes()),
            Elem::Int64 | Elem::Uint64 => out.copy_from_slice(&v.to_ne_bytes()),
            Elem::Half => out.copy_from_slice(&f32_to_f16(v as f32).to_ne_bytes()),
            Elem::Float => out.copy_from_slice(&(v as f32).to_ne_bytes()),
            Elem::Double => out.copy_from_slice(&(v as f64).to_ne_bytes()),
            Elem::Bfloat16 => out.copy_from_slice(&f32_to_bf16(v as f32).to_ne_bytes()),
            Elem::F8e4m3 => out[0] = Fp8::E4M3.encode(v as f64),
            Elem::F8e5m2 => out[0] = Fp8::E5M2.encode(v as f64),
        }
    }

    /// True if the element `bytes` holds `want`: integers exactly after wrapping to the
    /// type's width; half, bfloat16, float and double within a few units in the last place;
    /// FP8 as nccl-tests' verifiable compares (verifiable.cu:1310-1330 and 1243-1246): the
    /// distance between the element's bits and those of the expected value (rounded to the
    /// type) is at most 0, or 2 for an average (an [`Expected::Real`]), whose pre-multiply
    /// NCCL rounds in a format of its choosing.
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
        let real = |w: Expected| match w {
            Expected::Int(x) => x as f64,
            Expected::Real(x) => x,
        };
        match self {
            Elem::Int8 => int(want).map(|x| x as i8) == Some(bytes[0] as i8),
            Elem::Uint8 => int(want).map(|x| x as u8) == Some(bytes[0]),
            Elem::Int32 | Elem::Uint32 => {
                int(want).map(|x| x as u32) == Some(u32::from_ne_bytes(b(4)[..4].try_into().expect("4 bytes")))
            }
            Elem::Int64 | Elem::Uint64 => int(want) == Some(i64::from_ne_bytes(b(8))),
            Elem::F8e4m3 | Elem::F8e5m2 => {
                let format = if self == Elem::F8e4m3 { Fp8::E4M3 } else { Fp8::E5M2 };
                let tolerance = if int(want).is_some() { 0 } else { 2 };
                let got = bytes[0];
                !format.decode(got).is_nan() && got.abs_diff(format.encode(real(want))) <= tolerance
            }
            Elem::Half | Elem::Float | Elem::Double | Elem::Bfloat16 => {
                let got = match self {
                    Elem::Half => f16_to_f32(u16::from_ne_bytes([bytes[0], bytes[1]])) as f64,
                    Elem::Bfloat16 => f32::from_bits(u32::from(u16::from_ne_bytes([bytes[0], bytes[1]])) << 16) as f64,
                    Elem::Float => f32::from_ne_bytes(b(4)[..4].try_into().expect("4 bytes")) as f64,
                    _ => f64::from_ne_bytes(b(8)),
                };
                let want = real(want);
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

/// The two OCP 8-bit floating-point formats ("OCP 8-bit Floating Point Specification (OFP8)"
/// rev. 1.0), as NCCL's `ncclFloat8e4m3` and `ncclFloat8e5m2` store them.
///
/// E4M3: bias 7, no infinities, one NaN per sign (`S.1111.111`), largest finite 448.
/// E5M2: IEEE 754-like, bias 15, infinities (`S.11111.00`), NaNs (`S.11111.xx`, xx ≠ 0),
/// largest finite 57344. Both have subnormals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fp8 {
    E4M3,
    E5M2,
}

impl Fp8 {
    /// (exponent bits, mantissa bits, bias).
    fn shape(self) -> (u32, u32, i32) {
        match self {
            Fp8::E4M3 => (4, 3, 7),
            Fp8::E5M2 => (5, 2, 15),
        }
    }

    /// The value of `bits`, exactly.
    pub fn decode(self, bits: u8) -> f64 {
        let (ebits, mbits, bias) = self.shape();
        let sign = if bits & 0x80 != 0 { -1.0 } else { 1.0 };
        let e = i32::from((bits & 0x7f) >> mbits);
        let m = f64::from(bits & ((1 << mbits) - 1));
        let emax = (1 << ebits) - 1;
        let scale = 2f64.powi(mbits as i32);
        match self {
            Fp8::E4M3 if e == emax && m == scale - 1.0 => return f64::NAN,
            Fp8::E5M2 if e == emax => return if m == 0.0 { sign * f64::INFINITY } else { f64::NAN },
            _ => {}
        }
        if e == 0 {
            sign * m / scale * 2f64.powi(1 - bias)
        } else {
            sign * (1.0 + m / scale) * 2f64.powi(e - bias)
        }
    }

    /// `x` rounded to nearest, ties to even. Past the largest finite value (after rounding),
    /// E4M3 gives NaN (it has no infinity) and E5M2 infinity: the non-saturating conversion of
    /// the OCP specification. NaN gives the canonical NaN `0x7f`.
    pub fn encode(self, x: f64) -> u8 {
        let (ebits, mbits, bias) = self.shape();
        let nan = 0x7f;
        if x.is_nan() {
            return nan;
        }
        let sign = if x.is_sign_negative() { 0x80u8 } else { 0 };
        let overflow = match self {
            Fp8::E4M3 => sign | nan,
            Fp8::E5M2 => sign | (((1u8 << ebits) - 1) << mbits),
        };
        let a = x.abs();
        if a.is_infinite() {
            return overflow;
        }
        // Far below the smallest subnormal (and f64's own subnormals): zero.
        if a < 2f64.powi(-100) {
            return sign;
        }
        let emin = 1 - bias;
        // The binary exponent of `a` (f64 normal here), not below the subnormal range's.
        let e = (((a.to_bits() >> 52) & 0x7ff) as i32 - 1023).max(emin);
        // `a` in units of the last place at exponent `e`: exact (a power-of-two scaling).
        let mut n = (a * 2f64.powi(mbits as i32 - e)).round_ties_even() as u32;
        let mut e = e;
        if n == 2 << mbits {
            // Rounded up to the next binade.
            n >>= 1;
            e += 1;
        }
        if n < 1 << mbits {
            // Subnormal (or zero): exponent field 0.
            return sign | n as u8;
        }
        let field = e + bias;
        let bits = ((field as u32) << mbits) | (n - (1 << mbits));
        if field >= (1 << ebits) || bits > u32::from(self.encode_max()) {
            return overflow;
        }
        sign | bits as u8
    }

    /// The bits of the largest finite value.
    fn encode_max(self) -> u8 {
        match self {
            Fp8::E4M3 => 0x7e,
            Fp8::E5M2 => 0x7b,
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
        let avg = |elem| TestData::new(elem, Some(Op::Avg), 2);
        assert_eq!(avg(Elem::Int32).reduce(&mut [3i64, 4].into_iter()), Expected::Int(3));
        assert_eq!(avg(Elem::Float).reduce(&mut [3i64, 4].into_iter()), Expected::Real(3.5));
    }

    #[test]
    fn fp8_decodes_every_pattern_and_encodes_it_back() {
        for format in [Fp8::E4M3, Fp8::E5M2] {
            for bits in 0..=255u8 {
                let v = format.decode(bits);
                if v.is_nan() {
                    assert_eq!(format.encode(v), 0x7f, "{format:?} {bits:#04x}");
                } else {
                    assert_eq!(format.encode(v), bits, "{format:?} {bits:#04x} = {v}");
                }
            }
        }
        let e4 = Fp8::E4M3;
        assert_eq!((e4.decode(0x38), e4.decode(0x7e), e4.decode(0x01)), (1.0, 448.0, 2f64.powi(-9)));
        assert!(e4.decode(0x7f).is_nan() && e4.decode(0xff).is_nan());
        // No infinity: S.1111.110 is finite, past 448 (after rounding) is NaN.
        assert_eq!((e4.decode(0x78), e4.encode(464.0), e4.encode(465.0)), (256.0, 0x7e, 0x7f));
        assert_eq!((e4.encode(f64::INFINITY), e4.encode(-1e9)), (0x7f, 0xff));
        // Ties to even, in the normal and the subnormal range; 17 is not exact.
        assert_eq!((e4.encode(17.0), e4.encode(19.0), e4.encode(2f64.powi(-10))), (0x58, 0x5a, 0x00));
        assert_eq!(e4.encode(3.0 * 2f64.powi(-10)), 0x02);
        let e5 = Fp8::E5M2;
        assert_eq!((e5.decode(0x3c), e5.decode(0x7b), e5.decode(0x01)), (1.0, 57344.0, 2f64.powi(-16)));
        assert_eq!((e5.decode(0x7c), e5.decode(0xfc)), (f64::INFINITY, f64::NEG_INFINITY));
        assert!(e5.decode(0x7d).is_nan());
        // 61440 is halfway between 57344 (odd mantissa) and 65536: even is infinity.
        assert_eq!((e5.encode(61439.0), e5.encode(61440.0)), (0x7b, 0x7c));
        assert_eq!((e5.encode(9.0), e5.encode(-0.0)), (0x48, 0x80));
    }

    #[test]
    fn sixteen_bit_float_reductions_stay_exact_at_any_scale() {
        // Half's products passed 65504 from 46 ranks and bfloat16's sums stopped growing past
        // 256 with every rank contributing; two contributors keep every partial result small.
        for elem in [Elem::Half, Elem::Bfloat16, Elem::Float] {
            for op in [Op::Sum, Op::Prod, Op::MulSum] {
                if elem == Elem::Float && op != Op::Prod {
                    continue; // float's sums of 0-4 stay exact to 2^24
                }
                for n in [2, 48, 256, 1024] {
                    let d = TestData::new(elem, Some(op), n);
                    for j in 0..8 {
                        let column: Vec<i64> = (0..n).map(|r| d.contribution(r, j)).collect();
                        let Expected::Int(want) = d.reduce(&mut column.into_iter()) else { panic!("exact") };
                        assert!((0..=8).contains(&want), "{elem:?} {op:?} n={n} j={j}: {want}");
                    }
                }
            }
        }
    }

    #[test]
    fn fp8_reductions_of_the_test_data_are_exact() {
        // Every contribution and every partial sum or product (in rank order; the other
        // orders' partial results are no larger) is exact, for every rank count up to 16.
        for elem in [Elem::F8e4m3, Elem::F8e5m2] {
            let format = if elem == Elem::F8e4m3 { Fp8::E4M3 } else { Fp8::E5M2 };
            let exact = |v: i64| format.decode(format.encode(v as f64)) == v as f64;
            for op in [Op::Sum, Op::MulSum, Op::Prod, Op::Max, Op::Min] {
                for n in 1..=16 {
                    let d = TestData::new(elem, Some(op), n);
                    for j in 0..64 {
                        let column: Vec<i64> = (0..n).map(|r| d.contribution(r, j)).collect();
                        assert!(column.iter().all(|&v| exact(v)), "{elem:?} {op:?} {n} {j}");
                        let mut acc = if op == Op::Prod { 1 } else { 0 };
                        for &v in &column {
                            acc = match op {
                                Op::Prod => acc * v,
                                Op::Max | Op::Min => v,
                                _ => acc + v,
                            };
                            assert!(exact(acc), "{elem:?} {op:?} n={n} j={j} partial {acc}");
                        }
                        let Expected::Int(want) = d.reduce(&mut column.into_iter()) else { panic!("exact") };
                        let mut b = [0u8];
                        elem.encode(want, &mut b);
                        assert!(elem.matches(&b, Expected::Int(want)));
                    }
                }
            }
        }
        // Two ranks contribute to each element's sum, 1 or 2 each.
        let d = TestData::new(Elem::F8e5m2, Some(Op::Sum), 4);
        assert_eq!((0..4).map(|r| d.send(r, 5)).collect::<Vec<_>>(), [0, 1, 2, 0]);
    }

    #[test]
    fn fp8_compares_exactly_but_averages_within_two_units() {
        let mut b = [0u8];
        Elem::F8e4m3.encode(6, &mut b);
        assert!(Elem::F8e4m3.matches(&b, Expected::Int(6)));
        assert!(!Elem::F8e4m3.matches(&[b[0] + 1], Expected::Int(6)));
        // 1/3 in E4M3 is 0x2b (0.34375, nearest of 0.3125 and 0.34375); 2 units off passes for
        // an average, 3 do not; NaN never matches.
        assert_eq!(Fp8::E4M3.encode(1.0 / 3.0), 0x2b);
        assert!(Elem::F8e4m3.matches(&[0x2d], Expected::Real(1.0 / 3.0)));
        assert!(!Elem::F8e4m3.matches(&[0x2e], Expected::Real(1.0 / 3.0)));
        assert!(!Elem::F8e4m3.matches(&[0x7f], Expected::Real(448.0)));
    }

    #[test]
    fn mulsum_weights_odd_ranks_twice() {
        // verifiable.h: 1.0 on even ranks, 2.0 on odd ones.
        assert_eq!((0..4).map(premul_scalar).collect::<Vec<_>>(), [1, 2, 1, 2]);
        let d = TestData::new(Elem::Int32, Some(Op::MulSum), 3);
        let column: Vec<i64> = (0..3).map(|r| d.contribution(r, 1)).collect();
        let sends: Vec<i64> = (0..3).map(|r| d.send(r, 1)).collect();
        assert_eq!(column, [sends[0], 2 * sends[1], sends[2]]);
        assert_eq!(d.reduce(&mut column.into_iter()), Expected::Int(sends[0] + 2 * sends[1] + sends[2]));
        // The scalar's bits in each type.
        let mut b = [0u8; 2];
        Elem::Half.encode(premul_scalar(1), &mut b);
        assert_eq!(u16::from_ne_bytes(b), 0x4000);
        Elem::Bfloat16.encode(premul_scalar(3), &mut b);
        assert_eq!(u16::from_ne_bytes(b), 0x4000);
        Elem::F8e4m3.encode(premul_scalar(1), &mut b[..1]);
        assert_eq!(b[0], 0x40);
        Elem::F8e5m2.encode(premul_scalar(0), &mut b[..1]);
        assert_eq!(b[0], 0x3c);
        assert_eq!(Op::MulSum.builtin(), None);
        assert_eq!(parse_op("mulsum"), Ok(OpChoice::One(Op::MulSum)));
    }

    #[test]
    fn all_follows_the_library_and_the_gpus() {
        // 2.9: nine types, four ops; 2.10: bfloat16 and avg; 2.11: mulsum; 2.24 on sm_90: FP8.
        assert_eq!((all_types(20907, 900).len(), all_ops(20907).len()), (9, 4));
        assert_eq!(all_types(2804, 900).len(), 9);
        assert_eq!((all_types(21003, 800).last(), all_ops(21003).last()), (Some(&Elem::Bfloat16), Some(&Op::Avg)));
        assert_eq!(all_ops(21104).last(), Some(&Op::MulSum));
        assert_eq!(all_types(22303, 900).len(), 10);
        assert_eq!(all_types(22400, 890).len(), 10);
        let t = all_types(22400, 900);
        assert_eq!((t.len(), &t[10..]), (12, &[Elem::F8e4m3, Elem::F8e5m2][..]));
        assert_eq!(TypeChoice::All.list_for(22805, 1000).len(), 12);
        assert_eq!(OpChoice::All.list_for(22805), [Op::Sum, Op::Prod, Op::Max, Op::Min, Op::Avg, Op::MulSum]);
        assert_eq!(parse_type("f8e5m2"), Ok(TypeChoice::One(Elem::F8e5m2)));
    }

    #[test]
    fn types_and_ops_newer_than_the_library_are_usage_errors() {
        assert_eq!(check_supported(Elem::F8e4m3, Some(Op::Sum), 22400), Ok(()));
        assert_eq!(
            check_supported(Elem::F8e4m3, None, 22303),
            Err(Usage::NeedsNewerNccl { what: "-d f8e4m3".into(), needs: "2.24", loaded: "2.23.3".into() })
        );
        assert_eq!(
            check_supported(Elem::Float, Some(Op::MulSum), 21003),
            Err(Usage::NeedsNewerNccl { what: "-o mulsum".into(), needs: "2.11", loaded: "2.10.3".into() })
        );
        assert!(check_supported(Elem::Bfloat16, Some(Op::Sum), 20907).is_err());
        assert!(check_supported(Elem::Float, Some(Op::Avg), 2804).is_err());
        assert_eq!(check_supported(Elem::Float, Some(Op::Prod), 2804), Ok(()));
    }
}
