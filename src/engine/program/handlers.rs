//! The keys of the code table (a handler, a walk, a body) and how each finds its slot: by
//! position in the generated member lists, computed when the crate is compiled, so building a
//! plan never compares names.

use core::fmt;

use super::VectorCopy;
use crate::engine;
use crate::engine::layout::*;

/// A key of the code table: a handler or an entry.
pub(super) trait Key: Copy + fmt::Debug {
    /// The key's slot, `None` where this architecture's table has no such code.
    fn slot(self) -> Option<i64>;

    /// The address of the key's slot. A key without one asks for code this architecture
    /// does not have: only a placement bug can, and this is where it is found.
    fn address(self) -> usize {
        match self.slot() {
            Some(slot) => engine::code(slot),
            None => {
                unreachable!("the native placement asked for {self:?}: no such code in the {} table", engine::TARGET)
            }
        }
    }
}

/// A handler of the code table, by family (the variant: `int`, `vec`, ...) and members
/// (registers by number, byte counts, extensions, copy widths).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Handler {
    /// `int_<reg>_<ext>`: an integer argument, widened, into an integer register.
    Int(u8, Ext),
    /// `vec_<reg>_<len>`: 4 or 8 bytes of an argument into a vector register.
    Vec(u8, u32),
    /// `vecq_<reg>`: 16 bytes into a whole q register (AArch64).
    Vecq(u8),
    /// `load_<len>`: `len` bytes of an argument into the scratch register.
    Load(u32),
    /// `movi_<reg>`: the scratch register into an integer register.
    Movi(u8),
    /// `movstk`: the scratch register to the bottom of the outgoing area (riscv64).
    Movstk,
    /// `caddr_<reg>`: a private copy's address into an integer register.
    Caddr(u8),
    /// `wint_<reg>`: an argument word into an integer register.
    Wint(u8),
    /// `wvec_<reg>_<len>`: the low 4 or 8 bytes of an argument word into a vector register.
    Wvec(u8, u32),
    /// `call`: the end of the register ops, a tail jump to the function.
    Call,
    /// `stk_<ext>`: an integer argument, widened, into an 8-byte stack slot.
    Stk(Ext),
    /// `wstk`: an argument word into an 8-byte stack slot.
    Wstk,
    /// `copy_<width>`: bytes of an argument copied into the frame.
    Copy(VectorCopy),
    /// `stkcaddr`: a private copy's address into a stack slot.
    Stkcaddr,
    /// `retaddr`: the caller's result buffer as the hidden first argument (SysV, LP64D).
    Retaddr,
    /// `x8`: the caller's result buffer into x8 (AAPCS64).
    X8,
    /// `enter`: runs the register ops as a subroutine.
    Enter,
    /// `enterb`: calls a register body in place of the register ops (x86-64).
    Enterb,
    /// `resa_<len>`: `len` bytes of the first integer result register.
    Resa(u32),
    /// `resd_<len>`: `len` bytes of the second integer result register.
    Resd(u32),
    /// `resv_<reg>_<len>`: 4 or 8 bytes of a vector result register.
    Resv(u8, u32),
    /// `resq_<reg>`: a whole q result register (AArch64).
    Resq(u8),
    /// `resx`: a long double result, stored from `%st(0)` and popped (x86-64).
    Resx,
    /// `donei_<len>`: a one-piece integer result stored, then `done`.
    Donei(u32),
    /// `donev_<len>`: a one-piece float result stored, then `done`.
    Donev(u32),
    /// `return`: back to the typed caller, the result left in its registers.
    Return,
    /// `done`: back to the checked caller with `STATUS_OK`.
    Done,
}

/// How an `int` or `stk` handler widens an integer argument to 64 bits: a member of
/// build.rs's `EXT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ext {
    S8,
    S16,
    S32,
    Z8,
    Z16,
    Z32,
    Q64,
}

impl Ext {
    /// The member names, in declaration order (`ext as usize` indexes them).
    const NAMES: [&'static str; 7] = ["s8", "s16", "s32", "z8", "z16", "z32", "q64"];

    /// The extension of an integer of `len` bytes: sign- or zero-extended below 8 bytes.
    pub(super) fn of(len: u8, signed: bool) -> Ext {
        match (len, signed) {
            (1, true) => Ext::S8,
            (2, true) => Ext::S16,
            (4, true) => Ext::S32,
            (1, false) => Ext::Z8,
            (2, false) => Ext::Z16,
            (4, false) => Ext::Z32,
            _ => Ext::Q64,
        }
    }
}

/// The `stk` handler that stores 4 raw bytes (a `float`, a 4-byte aggregate) in an 8-byte
/// slot: any 4-byte kind will do, the bits above are undefined on every ABI. `z32`, or `s32`
/// on riscv64 (LP64D has no `z32`: a `uint32_t` is sign-extended like an `int32_t`).
pub(super) const RAW4: Ext = if STK_EXT[Ext::Z32 as usize].is_some() { Ext::Z32 } else { Ext::S32 };

/// Where a call jumps first: a walk of the program, or a body that needs none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Entry {
    /// `walk_tail`: typed, nothing before the register ops; they end in a tail jump.
    WalkTail,
    /// `walk_framed`: typed, with a frame for stack arguments and copies.
    WalkFramed,
    /// `walk_checked`: checked, always with a frame (the result buffer is kept in it).
    WalkChecked,
    /// `words_<n>`: typed, `n` words in argument order.
    Words(usize),
    /// `line_<widths>_<kind>`: checked, `n` arguments of the widths in `mask` (argument 0
    /// most significant, 1 = 64-bit; past the first `LINE_REG_ARGS`, 64-bit only) and a result
    /// of kind `kind` (0: 4 bytes, 1: 8 bytes).
    Line { n: usize, mask: usize, kind: usize },
    /// `regs_<ni>_<nv>`: typed, `ni` integer and `nv` vector registers, the word of each named
    /// by the program (x86-64).
    Regs { ni: usize, nv: usize },
}

/// The number of checked line bodies of fewer than `n` arguments, per result kind: for each
/// count k, the width masks of its first `LINE_REG_ARGS` arguments (build.rs's `line_names`).
const fn lines_before(n: usize) -> i64 {
    let mut count = 0;
    let mut k = 0;
    while k < n {
        count += 1 << if k < LINE_REG_ARGS as usize { k } else { LINE_REG_ARGS as usize };
        k += 1;
    }
    count
}

impl Key for Handler {
    fn slot(self) -> Option<i64> {
        match self {
            Handler::Int(r, ext) => member(H_INT, &[(L_INT_0, reg(r)), (L_INT_1, INT_EXT[ext as usize])]),
            Handler::Vec(r, len) => member(H_VEC, &[(L_VEC_0, reg(r)), (L_VEC_1, by_len(VEC_LEN, len))]),
            #[cfg(nccl_trampoline_asm = "aarch64_aapcs64")]
            Handler::Vecq(r) => member(H_VECQ, &[(L_VECQ_0, reg(r))]),
            Handler::Load(len) => member(H_LOAD, &[(L_LOAD_0, by_len(LOAD_LEN, len))]),
            Handler::Movi(r) => member(H_MOVI, &[(L_MOVI_0, reg(r))]),
            #[cfg(nccl_trampoline_asm = "riscv64_lp64d")]
            Handler::Movstk => Some(H_MOVSTK),
            #[cfg(any(nccl_trampoline_asm = "aarch64_aapcs64", nccl_trampoline_asm = "riscv64_lp64d"))]
            Handler::Caddr(r) => member(H_CADDR, &[(L_CADDR_0, reg(r))]),
            Handler::Wint(r) => member(H_WINT, &[(L_WINT_0, reg(r))]),
            Handler::Wvec(r, len) => member(H_WVEC, &[(L_WVEC_0, reg(r)), (L_WVEC_1, by_len(WVEC_LEN, len))]),
            Handler::Call => Some(H_CALL),
            Handler::Stk(ext) => member(H_STK, &[(L_STK_0, STK_EXT[ext as usize])]),
            Handler::Wstk => Some(H_WSTK),
            Handler::Copy(width) => {
                let at = VectorCopy::ALL.iter().position(|&w| w == width).and_then(|i| COPY_WIDTH[i]);
                member(H_COPY, &[(L_COPY_0, at)])
            }
            #[cfg(any(nccl_trampoline_asm = "aarch64_aapcs64", nccl_trampoline_asm = "riscv64_lp64d"))]
            Handler::Stkcaddr => Some(H_STKCADDR),
            #[cfg(any(nccl_trampoline_asm = "x86_64_sysv", nccl_trampoline_asm = "riscv64_lp64d"))]
            Handler::Retaddr => Some(H_RETADDR),
            #[cfg(nccl_trampoline_asm = "aarch64_aapcs64")]
            Handler::X8 => Some(H_X8),
            Handler::Enter => Some(H_ENTER),
            #[cfg(nccl_trampoline_asm = "x86_64_sysv")]
            Handler::Enterb => Some(H_ENTERB),
            Handler::Resa(len) => member(H_RESA, &[(L_RESA_0, by_len(RESA_LEN, len))]),
            Handler::Resd(len) => member(H_RESD, &[(L_RESD_0, by_len(RESD_LEN, len))]),
            Handler::Resv(r, len) => member(H_RESV, &[(L_RESV_0, reg(r)), (L_RESV_1, by_len(RESV_LEN, len))]),
            #[cfg(nccl_trampoline_asm = "aarch64_aapcs64")]
            Handler::Resq(r) => member(H_RESQ, &[(L_RESQ_0, reg(r))]),
            #[cfg(nccl_trampoline_asm = "x86_64_sysv")]
            Handler::Resx => Some(H_RESX),
            Handler::Donei(len) => member(H_DONEI, &[(L_DONEI_0, by_len(DONEI_LEN, len))]),
            Handler::Donev(len) => member(H_DONEV, &[(L_DONEV_0, by_len(DONEV_LEN, len))]),
            Handler::Return => Some(H_RETURN),
            Handler::Done => Some(H_DONE),
            // The families of the other architectures.
            _ => None,
        }
    }
}

impl Key for Entry {
    fn slot(self) -> Option<i64> {
        match self {
            Entry::WalkTail => Some(T_WALK),
            Entry::WalkFramed => Some(T_WALK + 1),
            Entry::WalkChecked => Some(T_WALK + 2),
            Entry::Words(n) => (n as i64 <= MAX_WORD_ARGS).then_some(T_WORDS + n as i64),
            // build.rs's `line_names`: for n = 0, 1, ..., the masks of n arguments (those of
            // fewer arguments first), each with both result kinds; the arguments after the
            // first LINE_REG_ARGS are 64-bit in every body (their bits all set).
            Entry::Line { n, mask, kind } => {
                let stack = n.saturating_sub(LINE_REG_ARGS as usize);
                let wide = (1 << stack) - 1;
                (n as i64 <= MAX_LINE_ARGS && mask < 1 << n && mask & wide == wide && kind < 2)
                    .then_some(T_LINE + 2 * (lines_before(n) + (mask >> stack) as i64) + kind as i64)
            }
            // build.rs: regs_<ni>_<nv> for ni = 0 to REGS_INT, nv = 0 to REGS_VEC.
            Entry::Regs { ni, nv } => (REGS_VEC > 0 && ni as i64 <= REGS_INT && nv as i64 <= REGS_VEC)
                .then_some(T_REGS + ni as i64 * (REGS_VEC + 1) + nv as i64),
        }
    }
}

/// Byte counts as build.rs names them in member lists, indexed by the count.
const BYTES: [&str; 9] = ["0", "1", "2", "3", "4", "5", "6", "7", "8"];

/// The copy widths as build.rs names them in member lists, in `VectorCopy::ALL` order.
const COPY_NAMES: [&str; VectorCopy::ALL.len()] = {
    let mut names = [""; VectorCopy::ALL.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = VectorCopy::ALL[i].name();
        i += 1;
    }
    names
};

// Where each named member sits in its family's list, by key (`Ext`, byte count, copy
// width), `None` where the family has no such member. Searched when the crate is compiled:
// a plan indexes these, it never compares names.
const INT_EXT: [Option<usize>; 7] = positions(L_INT_1, Ext::NAMES);
const STK_EXT: [Option<usize>; 7] = positions(L_STK_0, Ext::NAMES);
const VEC_LEN: [Option<usize>; 9] = positions(L_VEC_1, BYTES);
const WVEC_LEN: [Option<usize>; 9] = positions(L_WVEC_1, BYTES);
const LOAD_LEN: [Option<usize>; 9] = positions(L_LOAD_0, BYTES);
const RESA_LEN: [Option<usize>; 9] = positions(L_RESA_0, BYTES);
const RESD_LEN: [Option<usize>; 9] = positions(L_RESD_0, BYTES);
const RESV_LEN: [Option<usize>; 9] = positions(L_RESV_1, BYTES);
const DONEI_LEN: [Option<usize>; 9] = positions(L_DONEI_0, BYTES);
const DONEV_LEN: [Option<usize>; 9] = positions(L_DONEV_0, BYTES);
const COPY_WIDTH: [Option<usize>; VectorCopy::ALL.len()] = positions(L_COPY_0, COPY_NAMES);

/// The position of each of `names` in `list`.
const fn positions<const N: usize>(list: &[&str], names: [&str; N]) -> [Option<usize>; N] {
    let mut at = [None; N];
    let mut n = 0;
    while n < N {
        let mut i = 0;
        while i < list.len() {
            if same(list[i], names[n]) {
                at[n] = Some(i);
            }
            i += 1;
        }
        n += 1;
    }
    at
}

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The member of a family that starts at slot `first`, at the given position of each of its
/// member lists: build.rs's `members` order, the last list varying fastest. `None` if a
/// position is missing or past its list.
fn member(first: i64, places: &[(&[&str], Option<usize>)]) -> Option<i64> {
    let mut index = 0;
    for &(list, at) in places {
        index = index * list.len() + at.filter(|&at| at < list.len())?;
    }
    Some(first + index as i64)
}

/// A register's position in its family's list: its number.
fn reg(r: u8) -> Option<usize> {
    Some(usize::from(r))
}

/// A byte count's position, from its family's `*_LEN`.
fn by_len(positions: [Option<usize>; 9], len: u32) -> Option<usize> {
    positions.get(len as usize).copied().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every handler key with every member a placement could name: registers 0 to 8, byte
    /// counts 0 to 16, every extension and copy width.
    fn handlers() -> Vec<Handler> {
        const EXTS: [Ext; 7] = [Ext::S8, Ext::S16, Ext::S32, Ext::Z8, Ext::Z16, Ext::Z32, Ext::Q64];
        let (regs, lens) = (0..=8u8, 0..=16u32);
        let mut keys = vec![
            Handler::Movstk,
            Handler::Call,
            Handler::Wstk,
            Handler::Stkcaddr,
            Handler::Retaddr,
            Handler::X8,
            Handler::Enter,
            Handler::Enterb,
            Handler::Resx,
            Handler::Return,
            Handler::Done,
        ];
        keys.extend(EXTS.map(Handler::Stk));
        keys.extend(VectorCopy::ALL.map(Handler::Copy));
        for r in regs {
            keys.extend(EXTS.map(|e| Handler::Int(r, e)));
            keys.extend([Handler::Vecq, Handler::Movi, Handler::Caddr, Handler::Wint, Handler::Resq].map(|h| h(r)));
            for len in lens.clone() {
                keys.extend([Handler::Vec(r, len), Handler::Wvec(r, len), Handler::Resv(r, len)]);
            }
        }
        for len in lens {
            keys.extend([Handler::Load, Handler::Resa, Handler::Resd, Handler::Donei, Handler::Donev].map(|h| h(len)));
        }
        keys
    }

    /// The table name of the handler `key` stands for: build.rs's `members`, the family then
    /// each member.
    fn name(key: Handler) -> String {
        let int = |r: u8| INT_REGS[usize::from(r)];
        let vec = |r: u8| VEC_REGS[usize::from(r)];
        let ext = |e: Ext| Ext::NAMES[e as usize];
        match key {
            Handler::Int(r, e) => format!("int_{}_{}", int(r), ext(e)),
            Handler::Vec(r, len) => format!("vec_{}_{len}", vec(r)),
            Handler::Vecq(r) => format!("vecq_{}", vec(r)),
            Handler::Load(len) => format!("load_{len}"),
            Handler::Movi(r) => format!("movi_{}", int(r)),
            Handler::Movstk => "movstk".into(),
            Handler::Caddr(r) => format!("caddr_{}", int(r)),
            Handler::Wint(r) => format!("wint_{}", int(r)),
            Handler::Wvec(r, len) => format!("wvec_{}_{len}", vec(r)),
            Handler::Call => "call".into(),
            Handler::Stk(e) => format!("stk_{}", ext(e)),
            Handler::Wstk => "wstk".into(),
            Handler::Copy(width) => format!("copy_{}", width.name()),
            Handler::Stkcaddr => "stkcaddr".into(),
            Handler::Retaddr => "retaddr".into(),
            Handler::X8 => "x8".into(),
            Handler::Enter => "enter".into(),
            Handler::Enterb => "enterb".into(),
            Handler::Resa(len) => format!("resa_{len}"),
            Handler::Resd(len) => format!("resd_{len}"),
            Handler::Resv(r, len) => format!("resv_{}_{len}", vec(r)),
            Handler::Resq(r) => format!("resq_{}", vec(r)),
            Handler::Resx => "resx".into(),
            Handler::Donei(len) => format!("donei_{len}"),
            Handler::Donev(len) => format!("donev_{len}"),
            Handler::Return => "return".into(),
            Handler::Done => "done".into(),
        }
    }

    #[test]
    fn every_handler_has_one_key_and_the_key_finds_it_by_name() {
        let mut keyed = vec![None; H_COUNT as usize];
        for key in handlers() {
            let Some(slot) = key.slot() else { continue };
            let slot = usize::try_from(slot).unwrap();
            assert_eq!(TABLE_NAMES[slot], name(key), "{key:?}");
            assert_eq!(keyed[slot].replace(key), None, "{key:?}: slot {slot} has another key");
        }
        let unkeyed: Vec<_> = (0..keyed.len()).filter(|&i| keyed[i].is_none()).map(|i| TABLE_NAMES[i]).collect();
        assert!(unkeyed.is_empty(), "handlers no key finds: {unkeyed:?}");
    }

    #[test]
    fn every_entry_key_finds_its_body_by_name() {
        assert_eq!(TABLE_NAMES[Entry::WalkTail.slot().unwrap() as usize], "walk_tail");
        assert_eq!(TABLE_NAMES[Entry::WalkFramed.slot().unwrap() as usize], "walk_framed");
        assert_eq!(TABLE_NAMES[Entry::WalkChecked.slot().unwrap() as usize], "walk_checked");
        for n in 0..=MAX_WORD_ARGS as usize {
            assert_eq!(TABLE_NAMES[Entry::Words(n).slot().unwrap() as usize], format!("words_{n}"));
        }
        assert_eq!(Entry::Words(MAX_WORD_ARGS as usize + 1).slot(), None);
        let mut lines = 0;
        for n in 0..=MAX_LINE_ARGS as usize {
            let stack = n.saturating_sub(LINE_REG_ARGS as usize);
            for mask in 0..1 << n {
                if mask & ((1 << stack) - 1) != (1 << stack) - 1 {
                    // A narrow argument past the first LINE_REG_ARGS: no body.
                    assert_eq!(Entry::Line { n, mask, kind: 0 }.slot(), None, "{n} {mask:b}");
                    continue;
                }
                let widths: String = (0..n).map(|k| if mask >> (n - 1 - k) & 1 == 1 { 'q' } else { 'i' }).collect();
                let widths = if n == 0 { "none".to_string() } else { widths };
                for (kind, result) in ["r4", "r8"].iter().enumerate() {
                    let slot = Entry::Line { n, mask, kind }.slot().unwrap() as usize;
                    assert_eq!(TABLE_NAMES[slot], format!("line_{widths}_{result}"));
                    lines += 1;
                }
            }
            assert_eq!(Entry::Line { n, mask: 1 << n, kind: 0 }.slot(), None);
        }
        assert_eq!(Entry::Line { n: MAX_LINE_ARGS as usize + 1, mask: 0, kind: 0 }.slot(), None);
        assert_eq!(lines, TABLE_NAMES.iter().filter(|n| n.starts_with("line_")).count(), "every line body has a key");
        let mut regs = 0;
        for ni in 0..=8 {
            for nv in 0..=9 {
                match (Entry::Regs { ni, nv }).slot() {
                    Some(slot) => {
                        assert_eq!(TABLE_NAMES[slot as usize], format!("regs_{ni}_{nv}"));
                        regs += 1;
                    }
                    None => assert!(REGS_VEC == 0 || ni as i64 > REGS_INT || nv as i64 > REGS_VEC),
                }
            }
        }
        assert_eq!(
            regs,
            TABLE_NAMES.iter().filter(|n| n.starts_with("regs_")).count(),
            "every register body has a key"
        );
    }
}
