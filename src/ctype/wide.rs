//! C values Rust has no type for: `long double` and the complex types, as byte images with the
//! C layout, so typed bindings can pass them (and return the complex ones: their `CArg` and
//! `CRet` are in `crate::engine::typed`). `__int128` is
//! Rust's `i128` / `u128` (16-aligned like C's since Rust 1.77).

/// A C `long double` value as its 16 bytes (16-aligned): on x86-64 the 80-bit x87 extended
/// format in the low 10 bytes (64-bit mantissa with its explicit integer bit, then sign and
/// 15-bit exponent; the rest padding), on AArch64 and riscv64 IEEE binary128 (all 16 bytes,
/// little-endian).
///
/// Named like the crate's other C values and value traits ([`CArg`](crate::CArg),
/// [`CValue`](crate::CValue), [`CVaList`](crate::CVaList)): the C type itself is
/// [`Type::LongDouble`](crate::Type::LongDouble), and the two can be glob-imported together.
///
/// Rust has no type of this precision: [`from_f64`](Self::from_f64) and
/// [`to_f64`](Self::to_f64) convert, as C's `(long double)` and `(double)` casts do;
/// arithmetic is not provided.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CLongDouble(pub [u8; 16]);

impl CLongDouble {
    /// The `long double` equal to `v`, in the format of the target this crate was built for:
    /// exact (both formats hold every `double`, subnormals included).
    pub fn from_f64(v: f64) -> Self {
        if cfg!(target_arch = "x86_64") {
            Self::x87_from_f64(v)
        } else {
            Self::binary128_from_f64(v)
        }
    }

    /// The `double` nearest this `long double`, read in the format of the target this crate was
    /// built for, as C's `(double)` cast computes it: exact where the value is a `double`,
    /// rounded to nearest, ties to even, otherwise (to infinity past `f64::MAX`, to a subnormal
    /// or zero below `f64::MIN_POSITIVE`); infinities keep their sign, and a NaN stays a NaN
    /// with its sign and the top bits of its payload, made quiet (on riscv64: the canonical NaN,
    /// as RISC-V's conversions make every NaN).
    ///
    /// The x87 format has encodings no arithmetic produces (a clear integer bit with a non-zero
    /// exponent: pseudo-NaN, pseudo-infinity, unnormal); the CPU refuses them as operands, and
    /// so does this: they read as its default NaN (negative, quiet). Its denormals, all far
    /// below the smallest `double`, read as zero.
    pub fn to_f64(self) -> f64 {
        if cfg!(target_arch = "x86_64") {
            self.x87_to_f64()
        } else {
            self.binary128_to_f64()
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
        CLongDouble(b)
    }

    fn binary128_from_f64(v: f64) -> Self {
        let (sign, exp, mantissa, _) = Self::unpack(v);
        // 112 fraction bits: the significand without its leading one, left-aligned.
        let frac = u128::from(mantissa << 1) << 48;
        let bits = (u128::from(sign) << 127) | (u128::from(exp) << 112) | frac;
        CLongDouble(bits.to_le_bytes())
    }
}

impl From<f64> for CLongDouble {
    /// [`CLongDouble::from_f64`]: exact.
    fn from(v: f64) -> Self {
        CLongDouble::from_f64(v)
    }
}

/// The x87's default NaN ("real indefinite"): what it makes of an operand it refuses.
const X87_INDEFINITE: u64 = 0xfff8_0000_0000_0000;

impl CLongDouble {
    fn x87_to_f64(self) -> f64 {
        let b = self.0;
        let mantissa = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        let sign_exp = u16::from_le_bytes([b[8], b[9]]);
        let negative = sign_exp >> 15 == 1;
        let exp = i32::from(sign_exp & 0x7fff);
        let integer_bit = mantissa >> 63 == 1;
        match exp {
            // Zero, denormals and pseudo-denormals: at most 2^-16382, far below half the
            // smallest subnormal double.
            0 => signed(0, negative),
            _ if !integer_bit => f64::from_bits(X87_INDEFINITE),
            0x7fff if mantissa << 1 == 0 => signed(0x7ff << 52, negative),
            0x7fff => nan(negative, mantissa << 1),
            _ => round_to_f64(negative, exp - 16383, u128::from(mantissa) << 64),
        }
    }

    fn binary128_to_f64(self) -> f64 {
        let bits = u128::from_le_bytes(self.0);
        let negative = bits >> 127 == 1;
        let exp = ((bits >> 112) & 0x7fff) as i32;
        let fraction = bits & ((1 << 112) - 1);
        match exp {
            // Zero and subnormals: below 2^-16382.
            0 => signed(0, negative),
            0x7fff if fraction == 0 => signed(0x7ff << 52, negative),
            0x7fff => nan(negative, (fraction >> 48) as u64),
            _ => round_to_f64(negative, exp - 16383, (1 << 127) | (fraction << 15)),
        }
    }
}

/// The `double` of these bits, negated when `negative`.
fn signed(bits: u64, negative: bool) -> f64 {
    f64::from_bits(bits | u64::from(negative) << 63)
}

/// A NaN's conversion to `double`, from the source's fraction left-aligned in 64 bits (its quiet
/// bit at bit 63): the quiet NaN of the same sign with the fraction's top 52 bits, as the x87
/// and AArch64's conversions make it; on riscv64 the canonical NaN (positive, no payload), which
/// is what RISC-V's conversions make of every NaN (and its libgcc's `__trunctfdf2`).
fn nan(negative: bool, fraction: u64) -> f64 {
    if cfg!(target_arch = "riscv64") {
        return f64::from_bits(0x7ff8 << 48);
    }
    signed(0x7ff8 << 48 | fraction >> 12, negative)
}

/// `(-1)^negative * significand * 2^(exp - 127)`, rounded to the nearest `double`, ties to
/// even. `significand` has its leading one at bit 127 (so `exp` is the value's binary exponent)
/// and holds every bit of the value: both formats' significands fit in 128 bits.
fn round_to_f64(negative: bool, exp: i32, significand: u128) -> f64 {
    if exp > 1023 {
        return signed(0x7ff << 52, negative);
    }
    // Bits of the significand below a double's last place: 128 - 53 for a normal result; more
    // for a subnormal one, whose last place is 2^-1074 whatever the exponent.
    let drop = if exp >= -1022 { 75 } else { 75 + (-1022 - exp) as u32 };
    if drop > 128 {
        // Below 2^-1075, half the smallest subnormal: rounds to zero.
        return signed(0, negative);
    }
    let (kept, rest) =
        if drop == 128 { (0, significand) } else { (significand >> drop, significand & ((1 << drop) - 1)) };
    let half = 1u128 << (drop - 1);
    let rounded = kept + u128::from(rest > half || (rest == half && kept & 1 == 1));
    if exp < -1022 {
        // A subnormal (biased exponent 0); a carry into bit 52 makes it the smallest normal,
        // whose encoding is exactly that.
        return signed(rounded as u64, negative);
    }
    // `rounded` has its leading one at bit 52, or at bit 53 after a carry (then it is 2^53:
    // the next binade, with a zero fraction).
    let (exp, rounded) = if rounded >> 53 == 1 { (exp + 1, rounded >> 1) } else { (exp, rounded) };
    if exp > 1023 {
        return signed(0x7ff << 52, negative);
    }
    signed(((exp + 1023) as u64) << 52 | (rounded as u64 & ((1 << 52) - 1)), negative)
}

/// A C `_Complex T`: the real part, then the imaginary part, each a `T` (`f32`, `f64` or
/// [`CLongDouble`]), with `T`'s alignment: the layout of C11 6.2.5 ("the same representation
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
        let x87 = |v: f64| CLongDouble::x87_from_f64(v).0;
        let q = |v: f64| u128::from_le_bytes(CLongDouble::binary128_from_f64(v).0);
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

    /// An x87 image: sign, biased exponent, the 64-bit mantissa with its integer bit.
    fn x87(negative: bool, exp: u16, mantissa: u64) -> f64 {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&mantissa.to_le_bytes());
        b[8..10].copy_from_slice(&(u16::from(negative) << 15 | exp).to_le_bytes());
        CLongDouble(b).x87_to_f64()
    }

    /// A binary128 image: sign, biased exponent, the 112-bit fraction.
    fn quad(negative: bool, exp: u16, fraction: u128) -> f64 {
        CLongDouble((u128::from(negative) << 127 | u128::from(exp) << 112 | fraction).to_le_bytes()).binary128_to_f64()
    }

    /// What a NaN of these bits converts to: quieted, or the canonical NaN on riscv64.
    fn quieted(bits: u64) -> u64 {
        if cfg!(target_arch = "riscv64") {
            0x7ff8 << 48
        } else {
            bits | 1 << 51
        }
    }

    #[test]
    fn every_double_comes_back_exactly() {
        let mut specials = vec![
            0.0,
            -0.0,
            1.0,
            -2.5,
            0.1,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            f64::from_bits((1 << 52) - 1),
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        // Every exponent, with an odd and a random-looking fraction, both signs.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for exp in 0..0x7ff {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            for fraction in [1, x & ((1 << 52) - 1), (1 << 52) - 1] {
                specials.push(f64::from_bits(exp << 52 | fraction));
                specials.push(-f64::from_bits(exp << 52 | fraction));
            }
        }
        for v in specials {
            let (a, b) = (CLongDouble::x87_from_f64(v), CLongDouble::binary128_from_f64(v));
            assert_eq!(a.x87_to_f64().to_bits(), v.to_bits(), "x87 {v:e}");
            assert_eq!(b.binary128_to_f64().to_bits(), v.to_bits(), "binary128 {v:e}");
            assert_eq!(CLongDouble::from(v).to_f64().to_bits(), v.to_bits(), "native {v:e}");
        }
        for nan in [0x7ff8_0000_0000_0000u64, 0xfff8_0000_0000_0001, 0x7ff0_0000_0000_0001, 0x7ff4_5678_9abc_def0] {
            let v = f64::from_bits(nan);
            assert_eq!(CLongDouble::x87_from_f64(v).x87_to_f64().to_bits(), quieted(nan), "x87 {nan:#x}");
            assert_eq!(CLongDouble::binary128_from_f64(v).binary128_to_f64().to_bits(), quieted(nan), "{nan:#x}");
        }
    }

    #[test]
    fn wider_values_round_to_nearest_even() {
        let one = 16383;
        // 1 + 2^-53: a tie, to the even 1.0; a hair above: up; 1 + 3 * 2^-53: a tie, up to even.
        for (x87_mantissa, quad_fraction, want) in [
            (1 << 63 | 1 << 10, 1 << 59, 1.0),
            (1 << 63 | 1 << 10 | 1, 1 << 59 | 1, 1.0 + f64::EPSILON),
            (1 << 63 | 3 << 10, 3 << 59, 1.0 + 2.0 * f64::EPSILON),
            ((1 << 63) | ((1 << 10) - 1), (1 << 59) - 1, 1.0),
            (u64::MAX, (1 << 112) - 1, 2.0),
        ] {
            assert_eq!(x87(false, one, x87_mantissa), want, "x87 {x87_mantissa:#x}");
            assert_eq!(quad(true, one, quad_fraction), -want, "binary128 {quad_fraction:#x}");
        }
        // Past f64::MAX: half an ulp above it is a tie that rounds to infinity; just below, MAX.
        let top = one + 1023;
        assert_eq!(x87(false, top, u64::MAX), f64::INFINITY);
        assert_eq!(x87(false, top, u64::MAX << 10), f64::INFINITY);
        assert_eq!(x87(true, top, (u64::MAX << 10) - 1), f64::MIN);
        assert_eq!(quad(false, top, (1 << 112) - 1), f64::INFINITY);
        assert_eq!(quad(false, top, ((1 << 52) - 1) << 60 | 1 << 59), f64::INFINITY);
        assert_eq!(quad(false, top, ((1 << 52) - 1) << 60 | ((1 << 59) - 1)), f64::MAX);
        assert_eq!(x87(false, top + 1, 1 << 63), f64::INFINITY);
        assert_eq!(quad(true, 0x7ffe, 0), f64::NEG_INFINITY);
        // Subnormal results: 2^-1075 is a tie to zero, a hair above it the smallest subnormal,
        // 3 * 2^-1075 a tie to the even 2 * 2^-1074; just below 2^-1022 rounds up to it.
        let tiny = one - 1075;
        assert_eq!(x87(false, tiny, 1 << 63).to_bits(), 0);
        assert_eq!(x87(true, tiny, 1 << 63 | 1).to_bits(), (-f64::from_bits(1)).to_bits());
        assert_eq!(x87(false, tiny + 1, 3 << 62).to_bits(), 2);
        assert_eq!(x87(false, one - 1023, u64::MAX), f64::MIN_POSITIVE);
        assert_eq!(quad(false, tiny, 0).to_bits(), 0);
        assert_eq!(quad(false, tiny, 1).to_bits(), 1);
        assert_eq!(quad(false, tiny + 1, 1 << 111).to_bits(), 2);
        assert_eq!(quad(false, one - 1023, (1 << 112) - 1), f64::MIN_POSITIVE);
        assert_eq!(quad(false, one - 1023, 1 << 111).to_bits(), 3 << 50);
        assert_eq!(x87(true, 1, 1 << 63).to_bits(), (-0.0f64).to_bits());
        assert_eq!(quad(false, 1, 0).to_bits(), 0);
    }

    #[test]
    fn the_encodings_that_are_no_number() {
        // x87: a clear integer bit is refused (the CPU's default NaN), denormals are zero.
        for (exp, mantissa) in [(0x7fff, 0), (0x7fff, 1 << 62), (0x3fff, 1 << 62), (1, 0)] {
            assert_eq!(x87(false, exp, mantissa).to_bits(), X87_INDEFINITE, "{exp:#x} {mantissa:#x}");
        }
        assert_eq!(x87(true, 0x7fff, 1 << 63), f64::NEG_INFINITY);
        assert_eq!(x87(true, 0, u64::MAX).to_bits(), (-0.0f64).to_bits());
        assert_eq!(x87(false, 0, 1).to_bits(), 0);
        assert_eq!(x87(true, 0x7fff, 1 << 63 | 1 << 62 | 0x800).to_bits(), quieted(0xfff8_0000_0000_0001));
        assert_eq!(x87(false, 0x7fff, 1 << 63 | 0x1000).to_bits(), quieted(0x7ff0_0000_0000_0002));
        // binary128: subnormals are zero; a NaN keeps the top of its fraction.
        assert_eq!(quad(true, 0, 1).to_bits(), (-0.0f64).to_bits());
        assert_eq!(quad(false, 0x7fff, 0), f64::INFINITY);
        assert_eq!(quad(false, 0x7fff, 1 << 60).to_bits(), quieted(0x7ff0_0000_0000_0001));
        assert_eq!(quad(true, 0x7fff, 1).to_bits(), quieted(0xfff0_0000_0000_0000));
    }
}
