//! The model of what a C caller passes: the bytes of a value that carry it (padding and a
//! `long double`'s unused bytes excluded) and the byte patterns the arguments are made of.

use crate::ctype::types::Type;

/// Value bytes of a `long double` on the target: the 80-bit x87 format in the low 10 of its 16
/// bytes on x86-64 (the rest is padding nobody passes), IEEE binary128 (all 16) on AArch64.
pub const LONG_DOUBLE_VALUE_BYTES: usize = if cfg!(target_arch = "x86_64") { 10 } else { 16 };

/// The scalars of a type with their offsets: an aggregate's members, a complex number's two
/// parts, or the type itself.
pub fn scalars_of(ty: &Type) -> Vec<(usize, Type)> {
    match ty {
        Type::Aggregate(a) => a.scalars(),
        t => match t.complex_element() {
            Some(e) => vec![(0, e), (e.size(), e)],
            None => vec![(0, *t)],
        },
    }
}

/// Byte ranges of a type that carry values (scalars; padding excluded), merged when adjacent
/// (never across a `long double`, whose value length depends on the target: [`ld_ranges`]).
pub fn value_ranges(ty: &Type) -> Vec<(usize, usize)> {
    ld_ranges(ty).into_iter().map(|(o, l, ld)| (o, if ld { LONG_DOUBLE_VALUE_BYTES } else { l })).collect()
}

/// As [`value_ranges`], target-independent: `(offset, length, is_long_double)`, where the
/// length of a `long double` range is its value length on the target (`NT_LDV` in C).
pub fn ld_ranges(ty: &Type) -> Vec<(usize, usize, bool)> {
    let mut out: Vec<(usize, usize, bool)> = Vec::new();
    for (off, t) in scalars_of(ty) {
        let ld = t == Type::LongDouble;
        match out.last_mut() {
            Some((o, l, false)) if !ld && *o + *l == off => *l += t.size(),
            _ => out.push((off, t.size(), ld)),
        }
    }
    out
}

pub(super) fn pick_bytes(bytes: &[u8], ranges: &[(usize, usize)]) -> Vec<u8> {
    ranges.iter().flat_map(|&(o, l)| bytes[o..o + l].iter().copied()).collect()
}

/// A deterministic byte pattern: consecutive bytes always differ, and 256 consecutive bytes
/// are all distinct, so a byte landing one place off is always seen.
pub struct Pattern(u8);

impl Pattern {
    pub fn new(seed: u64) -> Self {
        Pattern((seed ^ (seed >> 8) ^ (seed >> 16)) as u8)
    }
    pub fn fill(&mut self, n: usize) -> Vec<u8> {
        (0..n)
            .map(|_| {
                self.0 = self.0.wrapping_add(101);
                self.0
            })
            .collect()
    }

    /// The bytes of a value of `ty`: [`fill`](Pattern::fill), with every x86-64 `long double`
    /// made a valid x87 encoding (integer bit set, exponent not zero: a normal number, an
    /// infinity or a NaN), which `fldt` / `fstpt` (x87 results) carry bit for bit. An
    /// unnormal would come back as the x87's default NaN from the C caller and the trampoline
    /// alike, hiding a misplaced byte.
    pub fn value(&mut self, ty: &Type) -> Vec<u8> {
        let mut bytes = self.fill(ty.size());
        if cfg!(target_arch = "x86_64") {
            for (off, t) in scalars_of(ty) {
                if t == Type::LongDouble {
                    bytes[off + 7] |= 0x80;
                    if bytes[off + 8] == 0 && bytes[off + 9] & 0x7f == 0 {
                        bytes[off + 8] = 1;
                    }
                }
            }
        }
        bytes
    }
}

/// A 16-aligned buffer.
pub fn aligned(n: usize) -> Vec<u128> {
    vec![0u128; n.div_ceil(16).max(1)]
}
