//! Where a typed callback's arguments and result are, computed once from its plan
//! (`ArgPlace`, `ResultPlace`), and how they are read and written per call; also the register
//! result placement the dynamic form shares.

use core::mem::{size_of, MaybeUninit};

use super::frame::Record;
use super::plan::{Piece, ResultSink};
use super::value::{CallbackReturn, CallbackValue};
use crate::abi::{Loc, RetPiece};

/// Where one argument arrives, computed once from the plan.
#[derive(Debug)]
pub(super) enum ArgPlace {
    /// The whole value at one place: a saved register (or two adjacent saved integer registers,
    /// which the record holds in order), at `offset` in the record; or a run of the caller's
    /// stack arguments, at `offset` from the first.
    Whole { stack: bool, offset: u32 },
    /// In pieces (a struct split between an SSE and an integer register, a complex in two
    /// vector registers, a copy behind a pointer): the plan's pieces.
    Pieces(Box<[Piece]>),
}

impl ArgPlace {
    pub(super) fn new(pieces: &[Piece]) -> ArgPlace {
        // Merge pieces that follow each other in the value and in the record.
        let mut merged: Vec<Piece> = Vec::with_capacity(pieces.len());
        for &p in pieces {
            match merged.last_mut() {
                Some(last) if follows(last, &p) => last.len += p.len,
                _ => merged.push(p),
            }
        }
        match merged[..] {
            [p] if p.dst == 0 && !p.by_reference => match (p.from, Record::register_offset(p.from)) {
                (Loc::Stack(offset), _) => ArgPlace::Whole { stack: true, offset },
                (_, Some(offset)) => ArgPlace::Whole { stack: false, offset: offset as u32 },
                _ => ArgPlace::Pieces(merged.into_boxed_slice()),
            },
            _ => ArgPlace::Pieces(merged.into_boxed_slice()),
        }
    }

    /// The argument's value, as `T`.
    ///
    /// # Safety
    ///
    /// The place was made for `T`'s C type, and the record is the live one of a call with the
    /// signature it was made for.
    #[inline(always)]
    pub(super) unsafe fn read<T: CallbackValue>(&self, record: &Record) -> T {
        match *self {
            ArgPlace::Whole { stack, offset } => {
                let base = if stack { record.stack_args() } else { (record as *const Record).cast::<u8>() };
                // SAFETY: the value's bytes start there (the plan, for T's C type, of exactly
                // T's size: CallbackValue's contract): in the record, or in the caller's stack
                // arguments; any bit pattern is a valid T.
                unsafe { base.add(offset as usize).cast::<T>().read_unaligned() }
            }
            ArgPlace::Pieces(ref pieces) => {
                let mut value = MaybeUninit::<T>::zeroed();
                // SAFETY: the caller's contract; the pieces lie inside T's bytes.
                unsafe { read_pieces(pieces, record, value.as_mut_ptr().cast::<u8>()) };
                // SAFETY: every byte initialised (zeroed, then the pieces); any pattern is valid.
                unsafe { value.assume_init() }
            }
        }
    }
}

impl ArgPlace {
    /// [`read`](ArgPlace::read) for a place known to be whole.
    ///
    /// # Safety
    ///
    /// As `read`, and the place is [`ArgPlace::Whole`].
    #[inline(always)]
    pub(super) unsafe fn read_whole<T: CallbackValue>(&self, record: &Record) -> T {
        match *self {
            // SAFETY: as in `read`.
            ArgPlace::Whole { stack, offset } => unsafe {
                let base = if stack { record.stack_args() } else { (record as *const Record).cast::<u8>() };
                base.add(offset as usize).cast::<T>().read_unaligned()
            },
            // SAFETY: the caller's contract: never pieces.
            ArgPlace::Pieces(_) => unsafe { core::hint::unreachable_unchecked() },
        }
    }
}

/// Every argument is whole at one place.
pub(super) fn places_are_whole(places: &[ArgPlace]) -> bool {
    places.iter().all(|p| matches!(p, ArgPlace::Whole { .. }))
}

/// Copies an argument's pieces into `out` (the value's first byte): out of line and not generic,
/// so the monomorphised dispatch stays small for the common one-place arguments.
///
/// # Safety
///
/// As [`ArgPlace::read`]; `out` is valid for writes of the whole value.
#[inline(never)]
unsafe fn read_pieces(pieces: &[Piece], record: &Record, out: *mut u8) {
    for piece in pieces {
        // SAFETY: as in CallbackArgs::read_bytes: each location holds its piece's bytes (by
        // reference: their address), and the piece lies inside the value.
        unsafe {
            let mut src = record.arg_location(piece.from);
            if piece.by_reference {
                src = src.cast::<*const u8>().read_unaligned();
            }
            core::ptr::copy_nonoverlapping(src, out.add(piece.dst as usize), piece.len as usize);
        }
    }
}

/// `b` continues `a` both in the value and in the record: the next saved integer register after
/// a whole one (the record keeps them in order, 8 bytes each), or the next bytes of the stack.
fn follows(a: &Piece, b: &Piece) -> bool {
    a.dst + a.len == b.dst
        && !a.by_reference
        && !b.by_reference
        && match (a.from, b.from) {
            (Loc::Int(x), Loc::Int(y)) => a.len == 8 && u16::from(y) == u16::from(x) + 1,
            (Loc::Stack(x), Loc::Stack(y)) => y == x + a.len,
            _ => false,
        }
}

/// Where the result goes, computed once from the plan.
#[derive(Debug)]
pub(super) enum ResultPlace {
    Void,
    /// A scalar of at most 8 bytes in one integer or vector register (at `offset` in the
    /// record), extended as the plan says. Only that register is written.
    Word {
        offset: u32,
        extend: Option<bool>,
    },
    /// Pieces in registers.
    Regs(Box<[RetPiece]>),
    /// Through the caller's memory, its address where the plan says.
    Memory {
        from: Option<Loc>,
    },
}

impl ResultPlace {
    pub(super) fn new(sink: &ResultSink, size: usize) -> ResultPlace {
        match sink {
            ResultSink::Void => ResultPlace::Void,
            ResultSink::Regs { pieces, extend } => match pieces[..] {
                [p] if p.dst == 0 && p.len as usize == size && size <= 8 => match Record::result_offset(p.from) {
                    Some(offset) => ResultPlace::Word { offset: offset as u32, extend: *extend },
                    None => ResultPlace::Regs(pieces.clone().into_boxed_slice()),
                },
                _ => ResultPlace::Regs(pieces.clone().into_boxed_slice()),
            },
            ResultSink::Memory { from } => ResultPlace::Memory { from: *from },
        }
    }

    /// Places `value` as the call's result.
    ///
    /// # Safety
    ///
    /// The place was made for `R`'s C type; the record is the live one of a call with the
    /// signature, so a hidden result address is the caller's memory for an `R`.
    #[inline(always)]
    pub(super) unsafe fn write<R: CallbackReturn>(&self, value: R, record: &mut Record) {
        match self {
            ResultPlace::Void => record.clear_result(),
            ResultPlace::Word { offset, extend } => {
                let mut word = 0u64;
                if size_of::<R>() <= 8 {
                    // SAFETY: R fits the word (checked just above, at compile time).
                    unsafe { (&mut word as *mut u64).cast::<R>().write_unaligned(value) };
                }
                let bits = 8 * size_of::<R>() as u32;
                if bits < 64 {
                    word = match extend {
                        Some(true) => ((word << (64 - bits)) as i64 >> (64 - bits)) as u64,
                        _ => word,
                    };
                }
                record.reset_other_results();
                // SAFETY: `offset` is that of an 8-byte (or wider) result register of the record.
                unsafe {
                    (record as *mut Record).cast::<u8>().add(*offset as usize).cast::<u64>().write_unaligned(word)
                };
            }
            ResultPlace::Regs(pieces) => {
                let mut buffer = [0u8; RESULT_BUFFER];
                if size_of::<R>() <= LARGEST_REGISTER_RESULT {
                    // SAFETY: R fits the buffer (checked just above, at compile time).
                    unsafe { buffer.as_mut_ptr().cast::<R>().write_unaligned(value) };
                }
                place_register_result(pieces, &buffer, record);
            }
            ResultPlace::Memory { from } => {
                // SAFETY: the caller's contract.
                let address = unsafe { result_address(*from, record) };
                // SAFETY: the caller's result memory, valid for writes of an R (the ABI's
                // contract for a MEMORY result, the function's contract).
                unsafe { (address as usize as *mut R).write_unaligned(value) };
            }
        }
    }
}

impl ResultPlace {
    /// [`write`](ResultPlace::write) for a word or `void` result.
    ///
    /// # Safety
    ///
    /// As `write`, and the place is [`ResultPlace::Word`] or [`ResultPlace::Void`].
    #[inline(always)]
    pub(super) unsafe fn write_simple<R: CallbackReturn>(&self, value: R, record: &mut Record) {
        match self {
            // SAFETY: the caller's contract.
            ResultPlace::Word { .. } | ResultPlace::Void => unsafe { self.write(value, record) },
            // SAFETY: the caller's contract: never another place.
            _ => unsafe { core::hint::unreachable_unchecked() },
        }
    }
}

/// Bytes of the largest result returned in registers: 64, an HFA of four long doubles in q0..q3
/// on AArch64 (x86-64's largest is 32, a `_Complex long double`).
pub(super) const LARGEST_REGISTER_RESULT: usize = 64;

/// Bytes of the buffer a register result is placed from: the largest register result and 16
/// bytes of zeros, so that every piece is read as whole 8-byte words.
pub(super) const RESULT_BUFFER: usize = LARGEST_REGISTER_RESULT + 16;

/// Places a register result from its bytes (`bytes`, the value then zeros): every result
/// register cleared, then each piece's bytes into the low end of its register. Out of line and
/// not generic; shared by the dynamic form. Whole 8-byte words, masked to the piece: no copy of
/// a length known only at run time.
#[inline(never)]
pub(super) fn place_register_result(pieces: &[RetPiece], bytes: &[u8; RESULT_BUFFER], record: &mut Record) {
    // The piece's bytes over the low end of the cleared register word `old`: its bits above
    // the piece stay as clearing left them (zero, or riscv64's NaN box of a float).
    fn word(old: &[u8], bytes: &[u8; RESULT_BUFFER], at: usize, len: usize) -> [u8; 8] {
        let w = u64::from_ne_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        let old = u64::from_ne_bytes(old.try_into().expect("8 bytes"));
        let mask = if len >= 8 { u64::MAX } else { (1u64 << (8 * len)) - 1 };
        ((w & mask) | (old & !mask)).to_ne_bytes()
    }
    record.clear_result();
    for p in pieces {
        let (at, len) = (p.dst as usize, p.len as usize);
        let register = record.result_register(p.from);
        let low = word(&register[..8], bytes, at, len);
        register[..8].copy_from_slice(&low);
        if len > 8 {
            let high = word(&register[8..16], bytes, at + 8, len - 8);
            register[8..16].copy_from_slice(&high);
        }
    }
}

/// The hidden result address of a MEMORY result, also set as the first integer result (psABI
/// 3.2.3: returned in %rax): out of line and not generic.
///
/// # Safety
///
/// The record is the live one of a call whose signature returns in memory, the address where
/// `from` says.
#[inline(never)]
unsafe fn result_address(from: Option<Loc>, record: &mut Record) -> u64 {
    let address = match from {
        // SAFETY: an integer location of the live record: 8 saved bytes.
        Some(loc) => unsafe { record.arg_location(loc).cast::<u64>().read_unaligned() },
        None => record.indirect_result_register().expect("the plan names the ABI's register"),
    };
    record.clear_result();
    *record.first_int_result() = address;
    address
}
