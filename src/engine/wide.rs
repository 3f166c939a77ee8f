//! C values Rust has no type for: `long double` and the complex types, as byte images with the
//! C layout, so typed bindings can pass them (and return the complex ones). `__int128` is
//! Rust's `i128` / `u128` (16-aligned like C's since Rust 1.77).

use crate::engine::typed::{CArg, CRet};
use crate::engine::types::Type;

/// A C `long double` as its 16 bytes (16-aligned): on x86-64 the 80-bit x87 extended format in
/// the low 10 bytes (64-bit mantissa with its explicit integer bit, then sign and 15-bit
/// exponent; the rest padding), on AArch64 and riscv64 IEEE binary128 (all 16 bytes,
/// little-endian).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct LongDouble(pub [u8; 16]);

impl LongDouble {
    /// The `long double` equal to `v`, in the format of the target this crate was built for:
    /// exact (both formats hold every `double`, subnormals included).
    pub fn from_f64(v: f64) -> Self {
        if cfg!(target_arch = "x86_64") {
            Self::x87_from_f64(v)
        } else {
            Self::binary128_from_f64(v)
        }
    }

    /// The sign, the biased 15-bit exponent (bias 16383, shared by both formats) and the
    /// significand with its leading one at bit 63 (0 for zero), of a finite or infinite `v`.
    fn unpack(v: f64) -> (u16, u16, u64, bool) {
        let bits = v.to_bits();
        let sign = (bits >> 63) as u16;
        let exp = ((bits >> 52) & 0x7ff) as i32;
        let frac = bits & ((1 << 52) - 1);
        match exp {
            0x7ff => (sign, 0x7fff, (1 << 63) | (frac << 11), frac != 0),
            0 if frac == 0 => (sign, 0, 0, false),
            0 => {
                // Subnormal: normalise (value = frac * 2^-1074).
                let lz = frac.leading_zeros() as i32;
                (sign, (16383 - 1011 - lz) as u16, frac << lz, false)
            }
            _ => (sign, (exp - 1023 + 16383) as u16, (1 << 63) | (frac << 11), false),
        }
    }

    fn x87_from_f64(v: f64) -> Self {
        let (sign, exp, mantissa, _) = Self::unpack(v);
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&mantissa.to_le_bytes());
        b[8..10].copy_from_slice(&((sign << 15) | exp).to_le_bytes());
        LongDouble(b)
    }

    fn binary128_from_f64(v: f64) -> Self {
        let (sign, exp, mantissa, _) = Self::unpack(v);
        // 112 fraction bits: the significand without its leading one, left-aligned.
        let frac = u128::from(mantissa << 1) << 48;
        let bits = (u128::from(sign) << 127) | (u128::from(exp) << 112) | frac;
        LongDouble(bits.to_le_bytes())
    }
}

/// A C `_Complex T`: the real part, then the imaginary part, each a `T` (`f32`, `f64` or
/// [`LongDouble`]), with `T`'s alignment: the layout of C11 6.2.5 ("the same representation
/// and alignment requirements as an array type containing exactly two elements").
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Complex<T> {
    /// Real part.
    pub re: T,
    /// Imaginary part.
    pub im: T,
}

// SAFETY: 16 bytes, 16-aligned, the layout of C's long double on both ABIs; its word is its
// address (the default), which the program reads through.
unsafe impl CArg for LongDouble {
    fn c_type() -> Type {
        Type::LongDouble
    }
}

// SAFETY: two T in order, T's alignment: C's _Complex T; the word is the address (default).
unsafe impl CArg for Complex<f32> {
    fn c_type() -> Type {
        Type::ComplexF32
    }
}
// SAFETY: as above.
unsafe impl CArg for Complex<f64> {
    fn c_type() -> Type {
        Type::ComplexF64
    }
}
// SAFETY: as above (LongDouble is 16 bytes, 16-aligned).
unsafe impl CArg for Complex<LongDouble> {
    fn c_type() -> Type {
        Type::ComplexLongDouble
    }
}

// SAFETY: a #[repr(C)] struct of two f32 / two f64 is returned by Rust's extern "C" exactly as
// C returns _Complex float / _Complex double: SysV classifies both as structs of two floats
// (xmm0 low 8 bytes; xmm0, xmm1), AAPCS64 as HFAs of two (s0, s1; d0, d1).
unsafe impl CRet for Complex<f32> {
    fn c_type() -> Option<Type> {
        Some(Type::ComplexF32)
    }
}
// SAFETY: as above.
unsafe impl CRet for Complex<f64> {
    fn c_type() -> Option<Type> {
        Some(Type::ComplexF64)
    }
}

// SAFETY: i128 / u128 are 16 bytes, 16-aligned (Rust >= 1.77, as C's __int128 on LP64 Linux);
// the word is the address (default), read through by the program.
unsafe impl CArg for i128 {
    fn c_type() -> Type {
        Type::I128
    }
}
// SAFETY: as above.
unsafe impl CArg for u128 {
    fn c_type() -> Type {
        Type::U128
    }
}
// SAFETY: Rust's extern "C" returns i128 / u128 in rax:rdx (SysV) and x0:x1 (AAPCS64), where C
// returns __int128.
unsafe impl CRet for i128 {
    fn c_type() -> Option<Type> {
        Some(Type::I128)
    }
}
// SAFETY: as above.
unsafe impl CRet for u128 {
    fn c_type() -> Option<Type> {
        Some(Type::U128)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_double_images_of_doubles() {
        let x87 = |v: f64| LongDouble::x87_from_f64(v).0;
        let q = |v: f64| u128::from_le_bytes(LongDouble::binary128_from_f64(v).0);
        // 1.0: x87 mantissa 0x8000.., exponent 0x3fff; binary128 0x3fff << 112.
        assert_eq!(x87(1.0)[..10], [0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0x3f]);
        assert_eq!(q(1.0), 0x3fff << 112);
        assert_eq!(x87(-2.5)[..10], [0, 0, 0, 0, 0, 0, 0, 0xa0, 0x00, 0xc0]);
        assert_eq!(q(-2.5), (1 << 127) | (0x4000 << 112) | (1 << 110));
        assert_eq!(x87(0.0), [0; 16]);
        assert_eq!(q(f64::INFINITY), 0x7fff << 112);
        // The smallest subnormal double, 2^-1074: normal in both formats.
        assert_eq!(q(f64::from_bits(1)), u128::from(16383u16 - 1074) << 112);
        assert_eq!(x87(f64::from_bits(1))[7..10], [0x80, (16383u16 - 1074) as u8, ((16383u16 - 1074) >> 8) as u8]);
    }
}
