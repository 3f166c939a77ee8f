/*
 * The call core for riscv64, LP64D (RISC-V ELF psABI 1.0, riscv-cc.adoc: "Integer Calling
 * Convention", "Hardware Floating-point Calling Convention", "ABI: LP64D"). Mirrors
 * x86_64.S: the same entries, programs, phases and table; only the differences are commented
 * here. src/abi/lp64d.rs decides where every byte goes.
 *
 * Entries (Rust side: src/engine/mod.rs):
 *   typed:   R walk_tail / walk_framed / words_<n>(words = a0, func = a1, program = a2);
 *            returns the function's a0:a1 / fa0:fa1 untouched.
 *   checked: u32 walk_checked / line_<mask>_<kind>(argv = a0, ret = a1, func = a2,
 *            program = a3).
 *
 * The walk's registers (all caller-saved temporaries, none an argument register):
 *   t3 = argv / words    t4 = the current op    t1 = the function
 *   t5 = the next handler (NEXT jumps through it)    t0, t2, t6 = scratch
 * Indirect jumps never go through ra (x1) or t0 (x5): a `jalr x0` through either is the
 * return hint ("pop the return-address stack", unprivileged spec, table "Return-address stack
 * prediction hints"), which would mispredict every handler and the function's own return.
 * The function stays in t1 for the whole call; the call op is `jr t1`.
 *
 * Differences from x86-64:
 *   - no red zone (the psABI has none): the function lives in t1, not in memory;
 *   - the frame is s0-based (s0 = the CFA, ra at -8(s0), the caller's s0 at -16(s0), the
 *     slots below); no frame record pointer chain is promised beyond that;
 *   - a composite larger than 2 x XLEN (16 bytes) is passed by reference to a copy the callee
 *     owns (as AAPCS64 B.4): the frame phase copies it once into the copy area above the
 *     outgoing arguments; caddr (register phase) or stkcaddr (frame phase) passes its address;
 *   - an aggregate of at most 16 bytes that finds only a7 free is split: its first 8 bytes in
 *     a7, the rest at 0(sp) (load + movstk, in the register phase, which runs with the frame
 *     phase's sp);
 *   - floats in FP registers are NaN-boxed: flw writes the upper 32 bits of the f register all
 *     ones (unprivileged spec, "NaN Boxing of Narrower Values"), so vec/wvec load with flw,
 *     never raw bytes;
 *   - a uint32_t is sign-extended (lw), like an int32_t: there is no z32 handler;
 *   - a result larger than 16 bytes goes through a caller buffer whose address is the hidden
 *     first argument in a0 (the retaddr op), as on x86-64; results come back in a0:a1 and
 *     fa0:fa1, or fa0 + a0 for a flattened float-and-integer struct;
 *   - no vector count; the copy is 8-byte ld/sd (RV64GC has no vector registers);
 *   - no landing pads and no property note (asm.h says why).
 */
#include "asm.h"

TABLE_BEGIN

/* --------------------------------------------------------------------------------------------
 * Building blocks. */

/* t0 (or dst) = argv[k]; OP_A holds 8 * k. */
.macro ARGPTR dst=t0
    ld      \dst, OP_A(t4)
    add     \dst, t3, \dst
    ld      \dst, 0(\dst)
.endm

/* Next op: load its handler, advance, jump (through t5: not a return hint). */
.macro NEXT
    ld      t5, OP_SIZE(t4)
    addi    t4, t4, OP_SIZE
    jr      t5
.endm

/* Register reg = the integer of the given kind at 0(base), extended to 64 bits. s32 is also
 * the uint32_t kind: "integer scalars narrower than XLEN bits are widened according to the
 * sign of their type up to 32 bits, then sign-extended to XLEN bits". */
.macro LOADX kind, base, reg
    .ifc \kind, s8
    lb      \reg, 0(\base)
    .endif
    .ifc \kind, s16
    lh      \reg, 0(\base)
    .endif
    .ifc \kind, s32
    lw      \reg, 0(\base)
    .endif
    .ifc \kind, z8
    lbu     \reg, 0(\base)
    .endif
    .ifc \kind, z16
    lhu     \reg, 0(\base)
    .endif
    .ifc \kind, q64
    ld      \reg, 0(\base)
    .endif
.endm

/* sp -= t0 bytes (a multiple of 16), touching every page on the way down (guard pages). */
.macro ALLOCA probe
    li      t2, PROBE_PAGE
    bgtu    t0, t2, \probe
    sub     sp, sp, t0
.endm
.macro ALLOCA_PROBE probe, back
\probe:
    sub     sp, sp, t2
    sd      zero, 0(sp)
    sub     t0, t0, t2
    bgtu    t0, t2, \probe
    sub     sp, sp, t0
    j       \back
.endm

/* --------------------------------------------------------------------------------------------
 * Phase 2: registers. No frame: CFA = sp, return address in ra (the CIE's initial rules).
 * In: t3 = argv, t4 = the current op, t1 = the function. */
REGION_START
.Lregs_dispatch:
    NEXT

/* int_a<n>_<kind>: an integer or pointer into the next of a0..a7, extended. */
.macro DEF_INT n, kind
HANDLER_START(nt_int_a\n\()_\kind)
    ARGPTR
    LOADX   \kind, t0, a\n
    NEXT
HANDLER_END(nt_int_a\n\()_\kind)
.endm
.irp n, 0, 1, 2, 3, 4, 5, 6, 7
.irp kind, L_EXT
    DEF_INT \n, \kind
.endr
.endr
TABLE_CHECK(H_VEC)

/* vec_fa<n>_<len>: a float or double, or a floating-point member of a flattened struct, into
 * fa<n> (flw NaN-boxes).   OP_A = 8 * index, OP_B = byte offset. */
.macro DEF_VEC n, len
HANDLER_START(nt_vec_fa\n\()_\len)
    ARGPTR
    ld      t2, OP_B(t4)
    add     t0, t0, t2
    .ifc \len, 4
    flw     fa\n, 0(t0)
    .else
    fld     fa\n, 0(t0)
    .endif
    NEXT
HANDLER_END(nt_vec_fa\n\()_\len)
.endm
.irp n, 0, 1, 2, 3, 4, 5, 6, 7
.irp len, L_FLOAT_LENS
    DEF_VEC \n, \len
.endr
.endr
TABLE_CHECK(H_LOAD)

/* load_<len>: `len` bytes of an XLEN piece of an aggregate (or a floating-point value passed
 * by the integer convention) into t6, exactly the piece's bytes, zero above (the psABI leaves
 * those bits undefined). Misaligned loads are legal in Linux user space.
 *   OP_A = 8 * index, OP_B = byte offset. */
.macro DEF_LOAD len
HANDLER_START(nt_load_\len)
    ARGPTR
    ld      t2, OP_B(t4)
    add     t0, t0, t2
    .if \len == 1
    lbu     t6, 0(t0)
    .elseif \len == 2
    lhu     t6, 0(t0)
    .elseif \len == 3
    lhu     t6, 0(t0)
    lbu     t2, 2(t0)
    slli    t2, t2, 16
    or      t6, t6, t2
    .elseif \len == 4
    lwu     t6, 0(t0)
    .elseif \len == 5
    lwu     t6, 0(t0)
    lbu     t2, 4(t0)
    slli    t2, t2, 32
    or      t6, t6, t2
    .elseif \len == 6
    lwu     t6, 0(t0)
    lhu     t2, 4(t0)
    slli    t2, t2, 32
    or      t6, t6, t2
    .elseif \len == 7
    lwu     t6, 0(t0)
    lwu     t2, 3(t0)
    slli    t2, t2, 24
    or      t6, t6, t2
    .else
    ld      t6, 0(t0)
    .endif
    NEXT
HANDLER_END(nt_load_\len)
.endm
.irp len, L_LENS
    DEF_LOAD \len
.endr
TABLE_CHECK(H_MOVI)

/* movi_a<n>: t6 (from a load op) into a<n>. */
.macro DEF_MOVI n
HANDLER_START(nt_movi_a\n)
    mv      a\n, t6
    NEXT
HANDLER_END(nt_movi_a\n)
.endm
.irp n, 0, 1, 2, 3, 4, 5, 6, 7
    DEF_MOVI \n
.endr
TABLE_CHECK(H_MOVSTK)

/* movstk: t6 (from a load op) into the stack slot at sp + OP_A: the bytes of an aggregate of
 * at most 16 bytes beyond its first 8, when only a7 was left ("the first XLEN bits are passed
 * in a register and the remaining bits are passed on the stack"). The register phase runs
 * with the frame phase's sp (jal does not move it). */
HANDLER_START(nt_movstk)
    ld      t0, OP_A(t4)
    add     t0, sp, t0
    sd      t6, 0(t0)
    NEXT
HANDLER_END(nt_movstk)
TABLE_CHECK(H_CADDR)

/* caddr_a<n>: the address of a by-reference copy, sp + OP_A, into a<n>. */
.macro DEF_CADDR n
HANDLER_START(nt_caddr_a\n)
    ld      t0, OP_A(t4)
    add     a\n, sp, t0
    NEXT
HANDLER_END(nt_caddr_a\n)
.endm
.irp n, 0, 1, 2, 3, 4, 5, 6, 7
    DEF_CADDR \n
.endr
TABLE_CHECK(H_WINT)

/* wint_a<n>: a word of a typed call into a<n>.   OP_A = 8 * index. */
.macro DEF_WINT n
HANDLER_START(nt_wint_a\n)
    ld      t0, OP_A(t4)
    add     t0, t3, t0
    ld      a\n, 0(t0)
    NEXT
HANDLER_END(nt_wint_a\n)
.endm
.irp n, 0, 1, 2, 3, 4, 5, 6, 7
    DEF_WINT \n
.endr
TABLE_CHECK(H_WVEC)

/* wvec_fa<n>_<len>: a float or double word into fa<n> (flw NaN-boxes).   OP_A = 8 * index. */
.macro DEF_WVEC n, len
HANDLER_START(nt_wvec_fa\n\()_\len)
    ld      t0, OP_A(t4)
    add     t0, t3, t0
    .ifc \len, 4
    flw     fa\n, 0(t0)
    .else
    fld     fa\n, 0(t0)
    .endif
    NEXT
HANDLER_END(nt_wvec_fa\n\()_\len)
.endm
.irp n, 0, 1, 2, 3, 4, 5, 6, 7
.irp len, L_FLOAT_LENS
    DEF_WVEC \n, \len
.endr
.endr
TABLE_CHECK(H_CALL)

/* call: tail jump to the function through t1. It returns (ra) to whoever ran the register
 * phase. */
HANDLER_START(nt_call)
    jr      t1
HANDLER_END(nt_call)
REGION_END
TABLE_CHECK(H_STK)

/* --------------------------------------------------------------------------------------------
 * Phases 1 and 3: inside a walk's frame. CFA = s0; ra at -8(s0), the caller's s0 at -16(s0).
 * In: t3 = argv, t4 = the current op, t1 = the function; SLOT_RET(s0) = the result buffer
 * (checked walk); outgoing arguments at 0(sp), the by-reference copies above them. The
 * argument registers are free here: the register phase runs after every frame op. */
REGION_START
    .cfi_def_cfa s0, 0
    .cfi_offset ra, -8
    .cfi_offset s0, -16

/* stk_<kind>: an integer or pointer (or 4 or 8 raw bytes) in its 8-byte stack slot, extended.
 *   OP_A = 8 * index, OP_B = slot offset from sp. */
.macro DEF_STK kind
HANDLER_START(nt_stk_\kind)
    ARGPTR
    LOADX   \kind, t0, t2
    ld      t6, OP_B(t4)
    add     t6, sp, t6
    sd      t2, 0(t6)
    NEXT
HANDLER_END(nt_stk_\kind)
.endm
.irp kind, L_EXT
    DEF_STK \kind
.endr
TABLE_CHECK(H_WSTK)

/* wstk: a word of a typed call into its 8-byte stack slot.   OP_A = 8 * index, OP_B = slot
 * offset from sp. */
HANDLER_START(nt_wstk)
    ld      t0, OP_A(t4)
    add     t0, t3, t0
    ld      t2, 0(t0)
    ld      t6, OP_B(t4)
    add     t6, sp, t6
    sd      t2, 0(t6)
    NEXT
HANDLER_END(nt_wstk)
TABLE_CHECK(H_COPY)

/* copy_xlen: a whole aggregate, once, straight from the caller's value: to its stack slot or
 * to its by-reference copy. 32 bytes a loop step (four ld/sd pairs through a4-a7), then 8,
 * then single bytes; the destination is 8-aligned, the source may not be (misaligned loads
 * are legal, if slow, in Linux user space).
 *   OP_A = 8 * index, OP_B = destination offset from sp (bits 31..0), bytes (bits 63..32). */
HANDLER_START(nt_copy_xlen)
    ARGPTR
    ld      t2, OP_B(t4)
    slli    a0, t2, 32
    srli    a0, a0, 32
    add     a0, sp, a0
    srli    a1, t2, 32
    li      a3, 32
    bltu    a1, a3, 2f
1:  ld      a4, 0(t0)
    ld      a5, 8(t0)
    ld      a6, 16(t0)
    ld      a7, 24(t0)
    sd      a4, 0(a0)
    sd      a5, 8(a0)
    sd      a6, 16(a0)
    sd      a7, 24(a0)
    addi    t0, t0, 32
    addi    a0, a0, 32
    addi    a1, a1, -32
    bgeu    a1, a3, 1b
2:  li      a3, 8
    bltu    a1, a3, 4f
3:  ld      a4, 0(t0)
    sd      a4, 0(a0)
    addi    t0, t0, 8
    addi    a0, a0, 8
    addi    a1, a1, -8
    bgeu    a1, a3, 3b
4:  beqz    a1, 6f
5:  lbu     a4, 0(t0)
    sb      a4, 0(a0)
    addi    t0, t0, 1
    addi    a0, a0, 1
    addi    a1, a1, -1
    bnez    a1, 5b
6:  NEXT
HANDLER_END(nt_copy_xlen)
TABLE_CHECK(H_STKCADDR)

/* stkcaddr: the address of a by-reference copy (sp + OP_A) into the stack slot at sp + OP_B,
 * once a0..a7 are taken. */
HANDLER_START(nt_stkcaddr)
    ld      t0, OP_A(t4)
    add     t0, sp, t0
    ld      t2, OP_B(t4)
    add     t2, sp, t2
    sd      t0, 0(t2)
    NEXT
HANDLER_END(nt_stkcaddr)
TABLE_CHECK(H_RETADDR)

/* retaddr: the caller's result buffer as the hidden first argument, in a0 ("the caller
 * allocates memory for the return value and passes the address as an implicit first
 * parameter"). The placement starts the arguments at a1. */
HANDLER_START(nt_retaddr)
    ld      a0, SLOT_RET(s0)
    NEXT
HANDLER_END(nt_retaddr)
TABLE_CHECK(H_ENTER)

/* enter: runs the register phase as a subroutine (jal: ra = the next instruction; sp
 * unchanged, 16-aligned, the outgoing arguments at 0(sp) as the psABI wants them at entry).
 * The function returns here; the walk goes on at the op OP_A bytes after this one, with
 * t3 = the result buffer. */
HANDLER_START(nt_enter)
    ld      t0, OP_A(t4)
    add     t0, t4, t0
    sd      t0, SLOT_CONT(s0)
    jal     ra, .Lregs_dispatch
    ld      t4, SLOT_CONT(s0)
    ld      t3, SLOT_RET(s0)
    ld      t5, 0(t4)
    jr      t5
HANDLER_END(nt_enter)
TABLE_CHECK(H_RESA)

/* resa_<len> / resd_<len>: the low `len` bytes of a0 / a1 to the result buffer at OP_A. */
.macro STORE_BYTES r, len
    ld      t0, OP_A(t4)
    add     t0, t3, t0
    STORE_AT \r, \len, t0
.endm
/* The low `len` bytes of register r at 0(base) (t2 scratch). */
.macro STORE_AT r, len, base
    .if \len == 1
    sb      \r, 0(\base)
    .elseif \len == 2
    sh      \r, 0(\base)
    .elseif \len == 3
    sh      \r, 0(\base)
    srli    t2, \r, 16
    sb      t2, 2(\base)
    .elseif \len == 4
    sw      \r, 0(\base)
    .elseif \len == 8
    sd      \r, 0(\base)
    .else
    sw      \r, 0(\base)
    srli    t2, \r, 32
    .if \len == 5
    sb      t2, 4(\base)
    .else
    sh      t2, 4(\base)
    .if \len == 7
    srli    t2, t2, 16
    sb      t2, 6(\base)
    .endif
    .endif
    .endif
.endm
.macro DEF_RES family, r, len
HANDLER_START(nt_\family\()_\len)
    STORE_BYTES \r, \len
    NEXT
HANDLER_END(nt_\family\()_\len)
.endm
.irp len, L_RESA_0
    DEF_RES resa, a0, \len
.endr
TABLE_CHECK(H_RESD)
.irp len, L_LENS
    DEF_RES resd, a1, \len
.endr
TABLE_CHECK(H_RESV)

/* resv_fa<r>_<len>: fa<r> (a float's low 32 bits, or a double) to the result buffer. */
.macro DEF_RESV r, len
HANDLER_START(nt_resv_fa\r\()_\len)
    ld      t0, OP_A(t4)
    add     t0, t3, t0
    .ifc \len, 4
    fsw     fa\r, 0(t0)
    .else
    fsd     fa\r, 0(t0)
    .endif
    NEXT
HANDLER_END(nt_resv_fa\r\()_\len)
.endm
.irp r, 0, 1
.irp len, L_FLOAT_LENS
    DEF_RESV \r, \len
.endr
.endr
TABLE_CHECK(H_DONEI)

/* Leaves a walk's frame: sp back to the frame's bottom, ra and s0 restored. */
.macro LEAVE_FRAME
    .cfi_remember_state
    addi    sp, s0, -FRAME_RECORD
    .cfi_def_cfa sp, FRAME_RECORD
    ld      ra, FRAME_RECORD - 8(sp)
    ld      s0, FRAME_RECORD - 16(sp)
    .cfi_restore ra
    .cfi_restore s0
    addi    sp, sp, FRAME_RECORD
    .cfi_def_cfa_offset 0
    ret
    .cfi_restore_state
.endm

/* donei_<len> / donev_<len>: a one-piece result at offset 0 (a0, or fa0) stored, then `done`,
 * in one op. */
.macro DEF_DONEI len
HANDLER_START(nt_donei_\len)
    STORE_AT a0, \len, t3
    li      a0, STATUS_OK
    LEAVE_FRAME
HANDLER_END(nt_donei_\len)
.endm
.irp len, L_LENS
    DEF_DONEI \len
.endr
TABLE_CHECK(H_DONEV)
.macro DEF_DONEV len
HANDLER_START(nt_donev_\len)
    .ifc \len, 4
    fsw     fa0, 0(t3)
    .else
    fsd     fa0, 0(t3)
    .endif
    li      a0, STATUS_OK
    LEAVE_FRAME
HANDLER_END(nt_donev_\len)
.endm
.irp len, L_FLOAT_LENS
    DEF_DONEV \len
.endr
TABLE_CHECK(H_RETURN)

/* return: ends a typed framed walk, a0:a1 and fa0:fa1 untouched. */
HANDLER_START(nt_return)
    LEAVE_FRAME
HANDLER_END(nt_return)
TABLE_CHECK(H_DONE)

/* done: ends a checked walk: STATUS_OK. */
HANDLER_START(nt_done)
    li      a0, STATUS_OK
    LEAVE_FRAME
HANDLER_END(nt_done)
REGION_END
TABLE_CHECK(T_WALK)

/* --------------------------------------------------------------------------------------------
 * The walks. */

/* walk_tail(words = a0, func = a1, program = a2) -> R: no frame, ra never touched. */
ENTRY_START(nt_walk_tail)
    mv      t3, a0
    mv      t1, a1
    addi    t4, a2, HDR_OPS
    ld      t5, 0(t4)
    jr      t5
ENTRY_END(nt_walk_tail)

/* Pushes ra, s0 and the slots (FRAME_RECORD bytes, sp stays 16-aligned); s0 = the CFA. */
.macro ENTER_FRAME
    addi    sp, sp, -FRAME_RECORD
    .cfi_def_cfa_offset FRAME_RECORD
    sd      ra, FRAME_RECORD - 8(sp)
    sd      s0, FRAME_RECORD - 16(sp)
    .cfi_offset ra, -8
    .cfi_offset s0, -16
    addi    s0, sp, FRAME_RECORD
    .cfi_def_cfa s0, 0
.endm

/* walk_framed(words = a0, func = a1, program = a2) -> R. */
ENTRY_START(nt_walk_framed)
    ENTER_FRAME
    ld      t0, HDR_FRAME(a2)
    ALLOCA  .Lframed_probe
.Lframed_allocated:
    mv      t3, a0
    mv      t1, a1
    addi    t4, a2, HDR_OPS
    ld      t5, 0(t4)
    jr      t5
    ALLOCA_PROBE .Lframed_probe, .Lframed_allocated
ENTRY_END(nt_walk_framed)

/* walk_checked(argv = a0, ret = a1, func = a2, program = a3) -> status: argv[0..HDR_ARGC]
 * null-checked first, then the frame with the result buffer saved. */
ENTRY_START(nt_walk_checked)
    ld      t0, HDR_ARGC(a3)
    beqz    t0, 2f
    slli    t0, t0, 3
    add     t0, a0, t0
    mv      t6, a0
1:  ld      t2, 0(t6)
    beqz    t2, 3f
    addi    t6, t6, 8
    bne     t6, t0, 1b
2:
    .cfi_remember_state
    ENTER_FRAME
    sd      a1, SLOT_RET(s0)
    ld      t0, HDR_FRAME(a3)
    ALLOCA  .Lchecked_probe
.Lchecked_allocated:
    mv      t3, a0
    mv      t1, a2
    addi    t4, a3, HDR_OPS
    ld      t5, 0(t4)
    jr      t5
    ALLOCA_PROBE .Lchecked_probe, .Lchecked_allocated
    .cfi_restore_state
3:  li      a0, STATUS_NULL_ARGUMENT
    ret
ENTRY_END(nt_walk_checked)
TABLE_CHECK(T_WORDS)

/* --------------------------------------------------------------------------------------------
 * Typed word bodies: words_<n>(words = a0, func = a1, program = a2) -> R for n integer or
 * pointer words (a0..a7 in order, then 8-byte stack slots in order). Up to eight: the words
 * are loaded from the last down (a0, the words' address, last), then `jr t1`, no frame. More:
 * ra and s0 pushed, the stack words copied to 0(sp) (sp stays 16-aligned), then jalr. */
.macro WORD_REGS n
    .irp k, 7, 6, 5, 4, 3, 2, 1, 0
    .if \k < \n
    ld      a\k, 8 * \k(a0)
    .endif
    .endr
.endm
.macro WORDS n
ENTRY_START(nt_words_\n)
    .if \n > 8
    addi    sp, sp, -16
    .cfi_def_cfa_offset 16
    sd      ra, 8(sp)
    sd      s0, 0(sp)
    .cfi_offset ra, -8
    .cfi_offset s0, -16
    addi    s0, sp, 16
    .cfi_def_cfa s0, 0
    addi    sp, sp, -(((\n - 8 + 1) / 2) * 16)
    .irp k, 8, 9, 10, 11
    .if \k < \n
    ld      t0, 8 * \k(a0)
    sd      t0, 8 * (\k - 8)(sp)
    .endif
    .endr
    mv      t1, a1
    WORD_REGS 8
    jalr    t1
    addi    sp, s0, -16
    .cfi_def_cfa sp, 16
    ld      ra, 8(sp)
    ld      s0, 0(sp)
    .cfi_restore ra
    .cfi_restore s0
    addi    sp, sp, 16
    .cfi_def_cfa_offset 0
    ret
    .else
    mv      t1, a1
    WORD_REGS \n
    jr      t1
    .endif
ENTRY_END(nt_words_\n)
.endm
.irp n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12
    WORDS   \n
.endr
TABLE_CHECK(T_LINE)

/* --------------------------------------------------------------------------------------------
 * Checked straight-line bodies: line_<...>_<kind>(argv = a0, ret = a1, func = a2, program = a3)
 * -> status, for up to six arguments each `i` (int32_t: lw) or `q` (64-bit: ld), in a0..a5,
 * returning 4 (r4: sw) or 8 (r8: sd) bytes. All argument pointers are loaded first into
 * t0, t2, t3, t4, t5, t6 and null-checked before anything else (cold exit, nothing called, no
 * frame yet); then ra and ret pushed, the values, jalr, the result stored, STATUS_OK. */
.macro LINE_PTR k, reg
    ld      \reg, 8 * \k(a0)
    beqz    \reg, 9f
.endm
.macro LINE_VALUE k, wide, reg
    .if \wide
    ld      a\k, 0(\reg)
    .else
    lw      a\k, 0(\reg)
    .endif
.endm
.macro LINE_EACH what, n, mask
    .if \n > 0
    \what 0, t0, \n, \mask
    .endif
    .if \n > 1
    \what 1, t2, \n, \mask
    .endif
    .if \n > 2
    \what 2, t3, \n, \mask
    .endif
    .if \n > 3
    \what 3, t4, \n, \mask
    .endif
    .if \n > 4
    \what 4, t5, \n, \mask
    .endif
    .if \n > 5
    \what 5, t6, \n, \mask
    .endif
.endm
.macro LINE_P k, reg, n, mask
    LINE_PTR \k, \reg
.endm
.macro LINE_V k, reg, n, mask
    LINE_VALUE \k, ((\mask >> (\n - 1 - \k)) & 1), \reg
.endm
.macro LINE n, mask, name, kind
ENTRY_START(\name\()_\kind)
    LINE_EACH LINE_P, \n, \mask
    addi    sp, sp, -16
    .cfi_def_cfa_offset 16
    sd      ra, 8(sp)
    .cfi_offset ra, -8
    sd      a1, 0(sp)
    mv      t1, a2
    LINE_EACH LINE_V, \n, \mask
    jalr    t1
    ld      a1, 0(sp)
    .ifc \kind, r4
    sw      a0, 0(a1)
    .else
    sd      a0, 0(a1)
    .endif
    li      a0, STATUS_OK
    ld      ra, 8(sp)
    .cfi_restore ra
    addi    sp, sp, 16
    .cfi_def_cfa_offset 0
    ret
9:  li      a0, STATUS_NULL_ARGUMENT
    ret
ENTRY_END(\name\()_\kind)
.endm
.macro LINES n, left, mask, name
    .if \left == 0
    LINE    \n, \mask, \name, r4
    LINE    \n, \mask, \name, r8
    .else
    LINES   \n, (\left - 1), ((\mask) << 1), \name\()i
    LINES   \n, (\left - 1), (((\mask) << 1) | 1), \name\()q
    .endif
.endm
    LINE    0, 0, nt_line_none, r4
    LINE    0, 0, nt_line_none, r8
.irp n, 1, 2, 3, 4, 5, 6
    LINES   \n, \n, 0, nt_line_
.endr
TABLE_CHECK(T_CB_INSTALL)

/* --------------------------------------------------------------------------------------------
 * Callbacks: calls from C into Rust (docs/adr/0025-callbacks.md). Mirrors x86_64.S's
 * "Callbacks": CB_POOL entries in .text, each loading its pool index and jumping to cb_common,
 * which saves the argument registers into the record, calls the dispatcher through
 * nt_cb_dispatcher and loads the result registers from the record. Differences: the index in
 * t1, no landing pads (asm.h), the record is the stub's whole frame with a0..a7 at its top,
 * results in a0, a1, fa0, fa1. */

    .bss
    .p2align 3
    .type   nt_cb_dispatcher, %object
nt_cb_dispatcher:
    .zero   8
    .size   nt_cb_dispatcher, 8

/* cb_install(dispatcher = a0): void. As on x86-64: one plain store, under the Rust side's pool
 * lock, before any entry is handed out. */
ENTRY_START(nt_cb_install)
    lla     t0, nt_cb_dispatcher
    sd      a0, 0(t0)
    ret
ENTRY_END(nt_cb_install)

/* The direct targets, as on x86-64: one code address per entry, null unless its callback is a
 * direct one; written by the Rust side only. */
    .bss
    .p2align 3
    .type   nt_cb_direct, %object
nt_cb_direct:
    .zero   8 * CB_POOL
    .size   nt_cb_direct, 8 * CB_POOL

/* cb_direct_slots(): uint64_t * (a0). The address of nt_cb_direct. */
ENTRY_START(nt_cb_direct_slots)
    lla     a0, nt_cb_direct
    ret
ENTRY_END(nt_cb_direct_slots)

/* cb_common: what every entry jumps to, with
 *   t1 = the entry's pool index (a temporary that carries no argument; not ra or t0, whose use
 *        as a jump's source or link is a return-address-stack hint, see the top of this file);
 *   a0..a7, fa0..fa7 as the C caller left them (a float NaN-boxed in its f register); a0 = the
 *   address of the caller's result memory when the result is larger than 2 x XLEN (psABI:
 *   the caller "passes a pointer to it as an implicit first parameter to the callee");
 *   ra = the return address into C; sp = the caller's sp at its call, where the first stack
 *   argument is, 16-aligned.
 * Frame: the record itself, CB_SIZE bytes at sp, holding ra at CB_RA; a0..a7 go to its top
 * CB_INT..CB_SIZE, which is [caller's sp - 64, caller's sp): directly below the stack
 * arguments, as a variadic function's prologue stores them (the variadic view walks one
 * pointer across both). No frame pointer: s0 is not touched (the CFI describes the frame).
 * ra is the only callee-saved state used; the dispatcher is Rust and keeps s0-s11, fs0-fs11.
 * Out: a0, a1, fa0, fa1 as the dispatcher wrote them into the record (the dynamic form writes
 * every one; the typed form, for a result in one integer register, writes that one only: the
 * caller reads no other; a0 = the hidden address for a result in memory, which LP64D does not
 * require and no caller reads). A
 * float result's f register is NaN-boxed by the record (the dispatcher's zeroed result slots
 * hold all ones above the low 4 bytes), so fld loads a valid single. */
ENTRY_START(nt_cb_common)
    /* The direct path, before the frame (CFA = sp, the CIE's rule): t3 the array, t2 the target
     * (temporaries, no argument). `jr t2`: not through ra or t0, so no return-address-stack
     * hint (a plain jump, the C caller's ra stays the return address). */
    lla     t3, nt_cb_direct
    slli    t2, t1, 3
    add     t3, t3, t2
    ld      t2, 0(t3)
    beqz    t2, 1f
    jr      t2
1:  addi    sp, sp, -CB_SIZE
    .cfi_def_cfa_offset CB_SIZE
    sd      ra, CB_RA(sp)
    .cfi_offset ra, CB_RA - CB_SIZE
    sd      a0, CB_INT + 0(sp)
    sd      a1, CB_INT + 8(sp)
    sd      a2, CB_INT + 16(sp)
    sd      a3, CB_INT + 24(sp)
    sd      a4, CB_INT + 32(sp)
    sd      a5, CB_INT + 40(sp)
    sd      a6, CB_INT + 48(sp)
    sd      a7, CB_INT + 56(sp)
    /* Whole 64-bit f registers: a double, or a float with its NaN box. */
    fsd     fa0, CB_VEC + 0(sp)
    fsd     fa1, CB_VEC + 8(sp)
    fsd     fa2, CB_VEC + 16(sp)
    fsd     fa3, CB_VEC + 24(sp)
    fsd     fa4, CB_VEC + 32(sp)
    fsd     fa5, CB_VEC + 40(sp)
    fsd     fa6, CB_VEC + 48(sp)
    fsd     fa7, CB_VEC + 56(sp)
    /* The stack arguments start at the caller's sp: the end of the record. */
    addi    t0, sp, CB_SIZE
    sd      t0, CB_STACK(sp)
    sd      t1, CB_INDEX(sp)
    mv      a0, sp
    /* Through t2: neither ra nor t0 (no return-address-stack hint but the call's push). */
    ld      t2, nt_cb_dispatcher
    jalr    t2
    ld      a0, CB_RET_INT + 0(sp)
    ld      a1, CB_RET_INT + 8(sp)
    fld     fa0, CB_RET_VEC + 0(sp)
    fld     fa1, CB_RET_VEC + 8(sp)
    ld      ra, CB_RA(sp)
    .cfi_restore ra
    addi    sp, sp, CB_SIZE
    .cfi_def_cfa_offset 0
    ret
ENTRY_END(nt_cb_common)
TABLE_CHECK(T_CB_ENTRY)

/* cb_<i>, i = 0 to CB_POOL - 1: the index into t1, a direct jump to cb_common. One CFI region,
 * none touches sp or ra: CFA = sp, return address in ra, the CIE's initial rules. 8 bytes (the
 * index is a 12-bit immediate, CB_POOL <= 2048; `j` reaches cb_common within 1 MiB), aligned
 * to 16. */
.macro CB_ENTRY i
    .type   nt_cb_\i, %function
    .p2align 4
nt_cb_\i:
    CALL_PAD
    li      t1, \i
    j       nt_cb_common
    .size   nt_cb_\i, . - nt_cb_\i
    TABLE_SLOT(nt_cb_\i)
.endm
REGION_START
.irp i, L_CB_ENTRIES
    CB_ENTRY \i
.endr
REGION_END

TABLE_END
NOTE_GNU_PROPERTY
NOTE_GNU_STACK
