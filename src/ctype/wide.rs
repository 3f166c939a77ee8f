//! C values Rust has no type for: `long double` and the complex types, as byte images with the
//! C layout, so typed bindings can pass them (and return the complex ones: their `CArg` and
//! `CRet` are in `crate::engine::typed`). `__int128` is
//! Rust's `i128` / `u128` (16-aligned like C's since Rust 1.77).

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
