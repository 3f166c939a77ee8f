/*
 * The call core for AArch64, AAPCS64 (2024Q3, section 6.8 "Parameter passing" and 6.9
 * "Result return"). Mirrors x86_64.S: the same entries, programs, phases and table; only the
 * differences are commented here.
 *
 * Entries (Rust side: src/engine/mod.rs):
 *   typed:   R walk_tail / walk_framed / words_<n>(words = x0, func = x1, program = x2);
 *            returns the function's x0:x1 / v0..v3 untouched.
 *   checked: u32 walk_checked / line_<mask>_<kind>(argv = x0, ret = x1, func = x2,
 *            program = x3).
 *
 * The walk's registers (caller-saved, none an argument register, x8 or x18):
 *   x10 = argv / words    x11 = the current op    x16 = the function
 *   x9, x12-x15, x17 = scratch
 *   q16-q23 = copy scratch (v16-v31 are caller-saved; v8-v15 are not, 6.1.2).
 * The function stays in x16 (IP0) for the whole call: the call op is `br x16`, which a callee
 * starting with "bti c" (or paciasp) accepts under BTI, as a linker veneer's would be.
 *
 * Differences from x86-64:
 *   - no red zone (AAPCS64 has none): the function lives in x16, not in memory;
 *   - a composite larger than 16 bytes is passed by address (B.4): the frame phase copies it
 *     once into the copy area above the outgoing arguments, the register phase (caddr) or the
 *     frame phase (stkcaddr) passes the copy's address;
 *   - x8 carries the address of a returned composite larger than 16 bytes (6.9): the x8 op;
 *   - no vector count; results come back in x0:x1 and v0..v3 (an HFA uses up to four);
 *   - the enter op reaches the register phase with BL, which needs no landing pad; handlers are
 *     only ever reached by `br x9` and start with "bti j";
 *   - eight integer argument registers: word bodies take up to eight words in registers;
 *   - framed entries sign the return address (paciasp / autiasp around the frame record);
 *     frameless ones never touch x30.
 */
#include "asm.h"

TABLE_BEGIN

/* --------------------------------------------------------------------------------------------
 * Building blocks. */

/* x9 (or dst) = argv[k]; OP_A holds 8 * k. */
.macro ARGPTR dst=x9
    ldr     \dst, [x11, #OP_A]
    ldr     \dst, [x10, \dst]
.endm

/* Next op: pre-indexed load of its handler, then BR through x9 (lands on "bti j"). */
.macro NEXT
    ldr     x9, [x11, #OP_SIZE]!
    br      x9
.endm

/* Register n = the integer of the given kind at [base], extended to 64 bits (ADR 2). Writing
 * a W register clears bits 63..32. */
.macro LOADX kind, base, n
    .ifc \kind, s8
    ldrsb   x\n, [\base]
    .endif
    .ifc \kind, s16
    ldrsh   x\n, [\base]
    .endif
    .ifc \kind, s32
    ldrsw   x\n, [\base]
    .endif
    .ifc \kind, z8
    ldrb    w\n, [\base]
    .endif
    .ifc \kind, z16
    ldrh    w\n, [\base]
    .endif
    .ifc \kind, z32
    ldr     w\n, [\base]
    .endif
    .ifc \kind, q64
    ldr     x\n, [\base]
    .endif
.endm

/* sp -= x9 bytes (a multiple of 16), touching every page on the way down (guard pages):
 * ALLOCA the fast path, ALLOCA_PROBE the cold loop after the entry's last instruction. */
.macro ALLOCA probe
    cmp     x9, #PROBE_PAGE
    b.hi    \probe
    sub     sp, sp, x9
.endm
.macro ALLOCA_PROBE probe, back
\probe:
    sub     sp, sp, #PROBE_PAGE
    str     xzr, [sp]
    sub     x9, x9, #PROBE_PAGE
    cmp     x9, #PROBE_PAGE
    b.hi    \probe
    sub     sp, sp, x9
    b       \back
.endm

/* --------------------------------------------------------------------------------------------
 * Phase 2: registers. No frame: CFA = sp, return address in x30 (the CIE's initial rules).
 * In: x10 = argv, x11 = the current op, x16 = the function. */
REGION_START
.Lregs_dispatch:
    NEXT

/* int_x<n>_<kind>: C.8/C.16 ("the next available general-purpose register"), extended. */
.macro DEF_INT n, kind
HANDLER_START(nt_int_x\n\()_\kind)
    ARGPTR
    LOADX   \kind, x9, \n
    NEXT
HANDLER_END(nt_int_x\n\()_\kind)
.endm
.irp n, 0, 1, 2, 3, 4, 5, 6, 7
.irp kind, L_EXT
    DEF_INT \n, \kind
.endr
.endr
TABLE_CHECK(H_VEC)

/* vec_v<n>_<len>: a float, a double or an HFA member (C.1, C.2: one v register each, in its
 * low bits; writing s<n>/d<n> clears the rest).   OP_A = 8 * index, OP_B = byte offset. */
.macro DEF_VEC n, len
HANDLER_START(nt_vec_v\n\()_\len)
    ARGPTR
    ldr     x12, [x11, #OP_B]
    .ifc \len, 4
    ldr     s\n, [x9, x12]
    .else
    ldr     d\n, [x9, x12]
    .endif
    NEXT
HANDLER_END(nt_vec_v\n\()_\len)
.endm
.irp n, 0, 1, 2, 3, 4, 5, 6, 7
.irp len, L_FLOAT_LENS
    DEF_VEC \n, \len
.endr
.endr
TABLE_CHECK(H_VECQ)

/* vecq_v<n>: a long double (IEEE binary128) or a member of an HFA of them: all 16 bytes into
 * q<n> (C.1, C.2).   OP_A = 8 * index, OP_B = byte offset. */
.macro DEF_VECQ n
HANDLER_START(nt_vecq_v\n)
    ARGPTR
    ldr     x12, [x11, #OP_B]
    ldr     q\n, [x9, x12]
    NEXT
HANDLER_END(nt_vecq_v\n)
.endm
.irp n, 0, 1, 2, 3, 4, 5, 6, 7
    DEF_VECQ \n
.endr
TABLE_CHECK(H_LOAD)

/* load_<len>: `len` bytes of a double-word of a composite of at most 16 bytes (B.5, C.11)
 * into x15 (not x9: NEXT reuses x9), exactly the piece's bytes (odd lengths from two loads;
 * unaligned loads are fine on normal memory).   OP_A = 8 * index, OP_B = byte offset. */
.macro DEF_LOAD len
HANDLER_START(nt_load_\len)
    ARGPTR
    ldr     x12, [x11, #OP_B]
    add     x9, x9, x12
    .if \len == 1
    ldrb    w15, [x9]
    .elseif \len == 2
    ldrh    w15, [x9]
    .elseif \len == 3
    ldrh    w12, [x9]
    ldrb    w13, [x9, #2]
    orr     x15, x12, x13, lsl #16
    .elseif \len == 4
    ldr     w15, [x9]
    .elseif \len == 5
    ldr     w12, [x9]
    ldrb    w13, [x9, #4]
    orr     x15, x12, x13, lsl #32
    .elseif \len == 6
    ldr     w12, [x9]
    ldrh    w13, [x9, #4]
    orr     x15, x12, x13, lsl #32
    .elseif \len == 7
    ldr     w12, [x9]
    ldur    w13, [x9, #3]
    orr     x15, x12, x13, lsl #24
    .else
    ldr     x15, [x9]
    .endif
    NEXT
HANDLER_END(nt_load_\len)
.endm
.irp len, L_LENS
    DEF_LOAD \len
.endr
TABLE_CHECK(H_MOVI)

/* movi_x<n>: x15 (from a load op) into x<n>. */
.macro DEF_MOVI n
HANDLER_START(nt_movi_x\n)
    mov     x\n, x15
    NEXT
HANDLER_END(nt_movi_x\n)
.endm
.irp n, 0, 1, 2, 3, 4, 5, 6, 7
    DEF_MOVI \n
.endr
TABLE_CHECK(H_CADDR)

/* caddr_x<n>: the address of a B.4 copy, sp + OP_A, into x<n>. The register phase runs with
 * the frame phase's sp (BL does not move it), so the copy area's offsets hold. */
.macro DEF_CADDR n
HANDLER_START(nt_caddr_x\n)
    ldr     x9, [x11, #OP_A]
    add     x\n, sp, x9
    NEXT
HANDLER_END(nt_caddr_x\n)
.endm
.irp n, 0, 1, 2, 3, 4, 5, 6, 7
    DEF_CADDR \n
.endr
TABLE_CHECK(H_WINT)

/* wint_x<n>: a word of a typed call (see x86_64.S) into x<n>.   OP_A = 8 * index. */
.macro DEF_WINT n
HANDLER_START(nt_wint_x\n)
    ldr     x9, [x11, #OP_A]
    ldr     x\n, [x10, x9]
    NEXT
HANDLER_END(nt_wint_x\n)
.endm
.irp n, 0, 1, 2, 3, 4, 5, 6, 7
    DEF_WINT \n
.endr
TABLE_CHECK(H_WVEC)

/* wvec_v<n>_<len>: a float or double word into s<n> / d<n>.   OP_A = 8 * index. */
.macro DEF_WVEC n, len
HANDLER_START(nt_wvec_v\n\()_\len)
    ldr     x9, [x11, #OP_A]
    .ifc \len, 4
    ldr     s\n, [x10, x9]
    .else
    ldr     d\n, [x10, x9]
    .endif
    NEXT
HANDLER_END(nt_wvec_v\n\()_\len)
.endm
.irp n, 0, 1, 2, 3, 4, 5, 6, 7
.irp len, L_FLOAT_LENS
    DEF_WVEC \n, \len
.endr
.endr
TABLE_CHECK(H_CALL)

/* call: tail branch to the function through x16 (BTYPE 01: its "bti c" or paciasp admits it).
 * It returns (x30) to whoever called the register phase. */
HANDLER_START(nt_call)
    br      x16
HANDLER_END(nt_call)
REGION_END
TABLE_CHECK(H_STK)

/* --------------------------------------------------------------------------------------------
 * Phases 1 and 3: inside a walk's frame. CFA = x29 + FRAME_RECORD; x29 and x30 saved at its
 * bottom; the saved x30 is signed (paciasp in the entry): RA_SIGN_STATE = 1 throughout.
 * In: x10 = argv, x11 = the current op, x16 = the function; [x29, #SLOT_RET] = the result
 * buffer (checked walk); outgoing arguments at [sp], the B.4 copies above them. */
REGION_START
    .cfi_def_cfa x29, FRAME_RECORD
    .cfi_offset x29, -FRAME_RECORD
    .cfi_offset x30, -FRAME_RECORD + 8
    .cfi_negate_ra_state

/* stk_<kind>: an integer, pointer, float or double in its 8-byte stack slot (C.16, C.4-C.6),
 * extended to 64 bits.   OP_A = 8 * index, OP_B = slot offset from sp. */
.macro DEF_STK kind
HANDLER_START(nt_stk_\kind)
    ARGPTR
    LOADX   \kind, x9, 12
    ldr     x13, [x11, #OP_B]
    str     x12, [sp, x13]
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
    ldr     x9, [x11, #OP_A]
    ldr     x12, [x10, x9]
    ldr     x13, [x11, #OP_B]
    str     x12, [sp, x13]
    NEXT
HANDLER_END(nt_wstk)
TABLE_CHECK(H_COPY)

/* copy_neon: a whole composite, once, straight from the caller's value: to its stack slot
 * (composites and HFAs that found no registers, C.3/C.13/C.14) or to its B.4 copy. Moves of
 * 32 bytes (a q pair), four pairs per loop step, the last pair ending exactly at the end;
 * shorter copies use two overlapping moves of the largest width that fits.
 *   OP_A = 8 * index, OP_B = destination offset from sp (bits 31..0), bytes (bits 63..32). */
HANDLER_START(nt_copy_neon)
    ARGPTR
    ldr     x12, [x11, #OP_B]
    and     x13, x12, #0xffffffff
    add     x13, sp, x13
    lsr     x12, x12, #32
    cmp     x12, #32
    b.lo    .Lcopy_small
    add     x14, x9, x12
    sub     x14, x14, #32
    add     x15, x13, x12
    sub     x15, x15, #32
    cmp     x12, #128
    b.lo    .Lcopy_tail
.Lcopy_loop:
    ldp     q16, q17, [x9]
    ldp     q18, q19, [x9, #32]
    ldp     q20, q21, [x9, #64]
    ldp     q22, q23, [x9, #96]
    stp     q16, q17, [x13]
    stp     q18, q19, [x13, #32]
    stp     q20, q21, [x13, #64]
    stp     q22, q23, [x13, #96]
    add     x9, x9, #128
    add     x13, x13, #128
    sub     x12, x12, #128
    cmp     x12, #128
    b.hs    .Lcopy_loop
    cbz     x12, .Lcopy_done
.Lcopy_tail:
    cmp     x12, #32
    b.ls    .Lcopy_last
    ldp     q16, q17, [x9]
    stp     q16, q17, [x13]
    cmp     x12, #64
    b.ls    .Lcopy_last
    ldp     q18, q19, [x9, #32]
    stp     q18, q19, [x13, #32]
    cmp     x12, #96
    b.ls    .Lcopy_last
    ldp     q20, q21, [x9, #64]
    stp     q20, q21, [x13, #64]
.Lcopy_last:
    ldp     q22, q23, [x14]
    stp     q22, q23, [x15]
    b       .Lcopy_done
.Lcopy_small:
    add     x14, x9, x12
    add     x15, x13, x12
    cmp     x12, #16
    b.lo    .Lcopy_8
    ldr     q16, [x9]
    ldur    q17, [x14, #-16]
    str     q16, [x13]
    stur    q17, [x15, #-16]
    b       .Lcopy_done
.Lcopy_8:
    cmp     x12, #8
    b.lo    .Lcopy_4
    ldr     x12, [x9]
    ldur    x9, [x14, #-8]
    str     x12, [x13]
    stur    x9, [x15, #-8]
    b       .Lcopy_done
.Lcopy_4:
    cmp     x12, #4
    b.lo    .Lcopy_2
    ldr     w12, [x9]
    ldur    w9, [x14, #-4]
    str     w12, [x13]
    stur    w9, [x15, #-4]
    b       .Lcopy_done
.Lcopy_2:
    cmp     x12, #2
    b.lo    .Lcopy_1
    ldrh    w12, [x9]
    ldurh   w9, [x14, #-2]
    strh    w12, [x13]
    sturh   w9, [x15, #-2]
    b       .Lcopy_done
.Lcopy_1:
    ldrb    w12, [x9]
    strb    w12, [x13]
.Lcopy_done:
    NEXT
HANDLER_END(nt_copy_neon)
TABLE_CHECK(H_STKCADDR)

/* stkcaddr: the address of a B.4 copy (sp + OP_A) into the stack slot at sp + OP_B, once
 * x0..x7 are taken (C.16). */
HANDLER_START(nt_stkcaddr)
    ldr     x12, [x11, #OP_A]
    add     x12, sp, x12
    ldr     x13, [x11, #OP_B]
    str     x12, [sp, x13]
    NEXT
HANDLER_END(nt_stkcaddr)
TABLE_CHECK(H_X8)

/* x8: the caller's result buffer as the indirect result location (6.9: a composite larger
 * than 16 bytes is returned through the address in x8; x0 stays an argument). Nothing after
 * it writes x8. */
HANDLER_START(nt_x8)
    ldr     x8, [x29, #SLOT_RET]
    NEXT
HANDLER_END(nt_x8)
TABLE_CHECK(H_ENTER)

/* enter: runs the register phase as a subroutine (BL: x30 = the next instruction; sp
 * unchanged, 16-aligned, the outgoing arguments at [sp] as 6.8.2 wants them at the call).
 * The function returns here; the walk goes on at the op OP_A bytes after this one, with
 * x10 = the result buffer. */
HANDLER_START(nt_enter)
    ldr     x9, [x11, #OP_A]
    add     x9, x11, x9
    str     x9, [x29, #SLOT_CONT]
    bl      .Lregs_dispatch
    ldr     x11, [x29, #SLOT_CONT]
    ldr     x10, [x29, #SLOT_RET]
    ldr     x9, [x11]
    br      x9
HANDLER_END(nt_enter)
TABLE_CHECK(H_RESA)

/* resa_<len> / resd_<len>: the low `len` bytes of x0 / x1 to the result buffer, for a
 * composite of at most 16 bytes returned in x0:x1 (6.9).   OP_A = byte offset in the result. */
.macro STORE_BYTES r, len
    ldr     x12, [x11, #OP_A]
    add     x12, x10, x12
    .if \len == 1
    strb    w\r, [x12]
    .elseif \len == 2
    strh    w\r, [x12]
    .elseif \len == 3
    strh    w\r, [x12]
    lsr     x13, x\r, #16
    strb    w13, [x12, #2]
    .elseif \len == 4
    str     w\r, [x12]
    .elseif \len == 8
    str     x\r, [x12]
    .else
    str     w\r, [x12]
    lsr     x13, x\r, #32
    .if \len == 5
    strb    w13, [x12, #4]
    .else
    strh    w13, [x12, #4]
    .if \len == 7
    lsr     x13, x13, #16
    strb    w13, [x12, #6]
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
    DEF_RES resa, 0, \len
.endr
TABLE_CHECK(H_RESD)
.irp len, L_LENS
    DEF_RES resd, 1, \len
.endr
TABLE_CHECK(H_RESV)

/* resv_v<r>_<len>: s<r> or d<r> to the result buffer (6.9: floating point in v0, an HFA in
 * v0..v3).   OP_A = byte offset in the result. */
.macro DEF_RESV r, len
HANDLER_START(nt_resv_v\r\()_\len)
    ldr     x12, [x11, #OP_A]
    .ifc \len, 4
    str     s\r, [x10, x12]
    .else
    str     d\r, [x10, x12]
    .endif
    NEXT
HANDLER_END(nt_resv_v\r\()_\len)
.endm
.irp r, 0, 1, 2, 3
.irp len, L_FLOAT_LENS
    DEF_RESV \r, \len
.endr
.endr
TABLE_CHECK(H_RESQ)

/* resq_v<r>: q<r> to the result buffer: a long double (binary128) in q0, an HFA of them in
 * q0..q3 (6.9).   OP_A = byte offset in the result. */
.macro DEF_RESQ r
HANDLER_START(nt_resq_v\r)
    ldr     x12, [x11, #OP_A]
    str     q\r, [x10, x12]
    NEXT
HANDLER_END(nt_resq_v\r)
.endm
.irp r, 0, 1, 2, 3
    DEF_RESQ \r
.endr
TABLE_CHECK(H_DONEI)

/* Leaves a walk's frame: sp back to the frame record, x29/x30 restored, x30 authenticated
 * with the sp it was signed with. */
.macro LEAVE_FRAME
    .cfi_remember_state
    mov     sp, x29
    .cfi_def_cfa sp, FRAME_RECORD
    ldp     x29, x30, [sp], #FRAME_RECORD
    .cfi_def_cfa_offset 0
    .cfi_restore x29
    .cfi_restore x30
    autiasp
    .cfi_negate_ra_state
    ret
    .cfi_restore_state
.endm

/* donei_<len> / donev_<len>: a one-piece result at offset 0 (x0, or s0 / d0) stored, then
 * `done`, in one op. */
.macro DEF_DONEI len
HANDLER_START(nt_donei_\len)
    STORE_BYTES 0, \len
    mov     w0, #STATUS_OK
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
    str     s0, [x10]
    .else
    str     d0, [x10]
    .endif
    mov     w0, #STATUS_OK
    LEAVE_FRAME
HANDLER_END(nt_donev_\len)
.endm
.irp len, L_FLOAT_LENS
    DEF_DONEV \len
.endr
TABLE_CHECK(H_RETURN)

/* return: ends a typed framed walk, x0:x1 and v0..v3 untouched. */
HANDLER_START(nt_return)
    LEAVE_FRAME
HANDLER_END(nt_return)
TABLE_CHECK(H_DONE)

/* done: ends a checked walk: STATUS_OK. */
HANDLER_START(nt_done)
    mov     w0, #STATUS_OK
    LEAVE_FRAME
HANDLER_END(nt_done)
REGION_END
TABLE_CHECK(T_WALK)

/* --------------------------------------------------------------------------------------------
 * The walks. */

/* walk_tail(words = x0, func = x1, program = x2) -> R: no frame, x30 never touched. */
ENTRY_START(nt_walk_tail)
    mov     x10, x0
    mov     x16, x1
    add     x11, x2, #HDR_OPS
    ldr     x9, [x11]
    br      x9
ENTRY_END(nt_walk_tail)

/* Signs x30 and pushes the frame record with FRAME_RECORD bytes of slots; x29 = sp. */
.macro ENTER_FRAME
    paciasp
    .cfi_negate_ra_state
    stp     x29, x30, [sp, #-FRAME_RECORD]!
    .cfi_def_cfa_offset FRAME_RECORD
    .cfi_offset x29, -FRAME_RECORD
    .cfi_offset x30, -FRAME_RECORD + 8
    mov     x29, sp
    .cfi_def_cfa_register x29
.endm

/* walk_framed(words = x0, func = x1, program = x2) -> R. */
ENTRY_START(nt_walk_framed)
    ENTER_FRAME
    ldr     x9, [x2, #HDR_FRAME]
    ALLOCA  .Lframed_probe
.Lframed_allocated:
    mov     x10, x0
    mov     x16, x1
    add     x11, x2, #HDR_OPS
    ldr     x9, [x11]
    br      x9
    ALLOCA_PROBE .Lframed_probe, .Lframed_allocated
ENTRY_END(nt_walk_framed)

/* walk_checked(argv = x0, ret = x1, func = x2, program = x3) -> status: argv[0..HDR_ARGC]
 * null-checked first, then the frame with the result buffer saved. */
ENTRY_START(nt_walk_checked)
    /* argv[argc-1] down to argv[0], two a step (an odd one first). */
    ldr     x9, [x3, #HDR_ARGC]
    tbz     x9, #0, 1f
    sub     x9, x9, #1
    ldr     x12, [x0, x9, lsl #3]
    cbz     x12, 3f
1:  cbz     x9, 2f
4:  sub     x9, x9, #2
    add     x13, x0, x9, lsl #3
    ldp     x12, x13, [x13]
    cbz     x12, 3f
    cbz     x13, 3f
    cbnz    x9, 4b
2:
    .cfi_remember_state
    ENTER_FRAME
    str     x1, [x29, #SLOT_RET]
    ldr     x9, [x3, #HDR_FRAME]
    ALLOCA  .Lchecked_probe
.Lchecked_allocated:
    mov     x10, x0
    mov     x16, x2
    add     x11, x3, #HDR_OPS
    ldr     x9, [x11]
    br      x9
    ALLOCA_PROBE .Lchecked_probe, .Lchecked_allocated
    .cfi_restore_state
3:  mov     w0, #STATUS_NULL_ARGUMENT
    ret
ENTRY_END(nt_walk_checked)
TABLE_CHECK(T_WORDS)

/* --------------------------------------------------------------------------------------------
 * Typed word bodies: words_<n>(words = x0, func = x1, program = x2) -> R for n integer or
 * pointer words (C.8: x0..x7 in order, then 8-byte stack slots in order, C.16). Up to eight: the
 * words are loaded in pairs from the last down (x0, the words' address, last: LDP may write its
 * own base register when it does not write it back), then `br x16`, no frame. More: a signed
 * frame record, the stack words copied to [sp] (sp stays 16-aligned), then BLR. */
.macro WORD_PAIRS n
    .if \n >= 8
    ldp     x6, x7, [x0, #48]
    .elseif \n == 7
    ldr     x6, [x0, #48]
    .endif
    .if \n >= 6
    ldp     x4, x5, [x0, #32]
    .elseif \n == 5
    ldr     x4, [x0, #32]
    .endif
    .if \n >= 4
    ldp     x2, x3, [x0, #16]
    .elseif \n == 3
    ldr     x2, [x0, #16]
    .endif
    .if \n >= 2
    ldp     x0, x1, [x0]
    .elseif \n == 1
    ldr     x0, [x0]
    .endif
.endm
.macro WORDS n
ENTRY_START(nt_words_\n)
    .if \n > 8
    paciasp
    .cfi_negate_ra_state
    stp     x29, x30, [sp, #-16]!
    .cfi_def_cfa_offset 16
    .cfi_offset x29, -16
    .cfi_offset x30, -8
    mov     x29, sp
    .cfi_def_cfa_register x29
    sub     sp, sp, #(((\n - 8 + 1) / 2) * 16)
    .irp k, 8, 9, 10, 11
    .if \k < \n
    ldr     x9, [x0, #8 * \k]
    str     x9, [sp, #8 * (\k - 8)]
    .endif
    .endr
    mov     x16, x1
    WORD_PAIRS 8
    blr     x16
    mov     sp, x29
    .cfi_def_cfa sp, 16
    ldp     x29, x30, [sp], #16
    .cfi_def_cfa_offset 0
    .cfi_restore x29
    .cfi_restore x30
    autiasp
    .cfi_negate_ra_state
    ret
    .else
    mov     x16, x1
    WORD_PAIRS \n
    br      x16
    .endif
ENTRY_END(nt_words_\n)
.endm
.irp n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12
    WORDS   \n
.endr
TABLE_CHECK(T_LINE)

/* --------------------------------------------------------------------------------------------
 * Checked straight-line bodies: line_<...>_<kind>(argv = x0, ret = x1, func = x2, program = x3)
 * -> status, for up to six arguments each `i` (int32_t: ldrsw) or `q` (64-bit: ldr), in x0..x5
 * (C.8), returning 4 (r4: w0) or 8 (r8: x0) bytes. All argument pointers are loaded first (pairs
 * with ldp) into scratch registers and null-checked before anything else (cold exit, nothing
 * called, no frame yet); then a signed frame record with ret beside it, the values, BLR, the
 * result stored, STATUS_OK. */
.macro LINE_VALUE k, wide
    .if \k == 0
    LINE_LOADW \wide, 0, x9
    .elseif \k == 1
    LINE_LOADW \wide, 1, x12
    .elseif \k == 2
    LINE_LOADW \wide, 2, x13
    .elseif \k == 3
    LINE_LOADW \wide, 3, x14
    .elseif \k == 4
    LINE_LOADW \wide, 4, x15
    .else
    LINE_LOADW \wide, 5, x17
    .endif
.endm
.macro LINE_LOADW wide, n, ptr
    .if \wide
    ldr     x\n, [\ptr]
    .else
    ldrsw   x\n, [\ptr]
    .endif
.endm
/* Pointer k lives in: x9, x12, x13, x14, x15, x17 (not x16: the function). */
.macro LINE_PTRS n, a, b, off
    .if \n >= (\off / 8) + 2
    ldp     \a, \b, [x0, #\off]
    cbz     \a, 9f
    cbz     \b, 9f
    .elseif \n == (\off / 8) + 1
    ldr     \a, [x0, #\off]
    cbz     \a, 9f
    .endif
.endm
.macro LINE n, mask, name, kind
ENTRY_START(\name\()_\kind)
    LINE_PTRS \n, x9, x12, 0
    LINE_PTRS \n, x13, x14, 16
    LINE_PTRS \n, x15, x17, 32
    paciasp
    .cfi_negate_ra_state
    stp     x29, x30, [sp, #-32]!
    .cfi_def_cfa_offset 32
    .cfi_offset x29, -32
    .cfi_offset x30, -24
    mov     x29, sp
    str     x1, [sp, #16]
    mov     x16, x2
    .irp k, 0, 1, 2, 3, 4, 5
    .if \k < \n
    LINE_VALUE \k, (((\mask) >> (\n - 1 - \k)) & 1)
    .endif
    .endr
    blr     x16
    ldr     x1, [sp, #16]
    .ifc \kind, r4
    str     w0, [x1]
    .else
    str     x0, [x1]
    .endif
    mov     w0, #STATUS_OK
    ldp     x29, x30, [sp], #32
    .cfi_def_cfa_offset 0
    .cfi_restore x29
    .cfi_restore x30
    autiasp
    .cfi_negate_ra_state
    ret
9:  mov     w0, #STATUS_NULL_ARGUMENT
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
 * "Callbacks": CB_POOL entries in .text, each loading its pool index and branching to
 * cb_common, which saves the argument registers into the record, calls the dispatcher through
 * nt_cb_dispatcher and loads the result registers from the record. Differences: the index in
 * x9, x8 saved (the indirect result address), q0..q7 saved whole, results in x0, x1 and q0..q3,
 * a signed return address. */

    .bss
    .p2align 3
    .type   nt_cb_dispatcher, %object
nt_cb_dispatcher:
    .zero   8
    .size   nt_cb_dispatcher, 8

/* cb_install(dispatcher = x0): void. As on x86-64: one plain store, under the Rust side's pool
 * lock, before any entry is handed out. */
ENTRY_START(nt_cb_install)
    adrp    x9, nt_cb_dispatcher
    str     x0, [x9, :lo12:nt_cb_dispatcher]
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

/* cb_direct_slots(): uint64_t * (x0). The address of nt_cb_direct. */
ENTRY_START(nt_cb_direct_slots)
    adrp    x0, nt_cb_direct
    add     x0, x0, :lo12:nt_cb_direct
    ret
ENTRY_END(nt_cb_direct_slots)

/* cb_common: what every entry branches to, with
 *   x9 = the entry's pool index (x9 is a temporary that carries no argument, AAPCS64 6.1.1;
 *        not x16/x17, which a linker veneer between the caller and the entry may clobber);
 *   x0..x7, q0..q7 as the C caller left them; x8 = the address of the caller's result memory
 *   when the result is a composite over 16 bytes (6.9: "passed in x8", not as an argument);
 *   x30 = the return address into C; sp = the caller's sp at its BLR, where the first stack
 *   argument is (C.16: the NSAA starts at the caller's sp), 16-aligned.
 * Frame: a signed frame record (x29, x30) at sp - 16, x29 pointing at it (a frame-pointer
 * chain as the forward framed entries keep), then CB_SIZE bytes of record at sp, 16-aligned.
 * x29 and x30 are the only callee-saved state used; the dispatcher is Rust and keeps x19-x28
 * and d8-d15.
 * Out: x0, x1, q0..q3 as the dispatcher wrote them into the record (the dynamic form writes
 * every one, zero where the result does not use it; the typed form, for a result in one
 * register, writes that one only: the caller reads no other; x0 = the x8 address for a result
 * in memory, which AAPCS64 does not require and no caller reads). */
ENTRY_START(nt_cb_common)
    /* The direct path, before the frame (CFA = sp, x30 unsigned, the CIE's rules): x16 is the
     * target, x17 the scratch (intra-procedure-call registers, no argument: AAPCS64 6.1.1).
     * `br x16` because a BTI target's `bti c` accepts BR from x16/x17 (Arm ARM, BTYPE 01): a
     * Rust function built with branch protection starts with `bti c`, not `bti j`. */
    adrp    x17, nt_cb_direct
    add     x17, x17, :lo12:nt_cb_direct
    ldr     x16, [x17, x9, lsl #3]
    cbz     x16, 1f
    br      x16
1:  paciasp
    .cfi_negate_ra_state
    stp     x29, x30, [sp, #-16]!
    .cfi_def_cfa_offset 16
    .cfi_offset x29, -16
    .cfi_offset x30, -8
    mov     x29, sp
    .cfi_def_cfa_register x29
    sub     sp, sp, #CB_SIZE
    stp     x0, x1, [sp, #CB_INT + 0]
    stp     x2, x3, [sp, #CB_INT + 16]
    stp     x4, x5, [sp, #CB_INT + 32]
    stp     x6, x7, [sp, #CB_INT + 48]
    /* Whole q registers: a long double (binary128) or an HFA member of one fills all 16
     * bytes. */
    stp     q0, q1, [sp, #CB_VEC + 0]
    stp     q2, q3, [sp, #CB_VEC + 32]
    stp     q4, q5, [sp, #CB_VEC + 64]
    stp     q6, q7, [sp, #CB_VEC + 96]
    str     x8, [sp, #CB_X8]
    /* The stack arguments start at the caller's sp: above our frame record, x29 + 16. */
    add     x10, x29, #16
    str     x10, [sp, #CB_STACK]
    str     x9, [sp, #CB_INDEX]
    mov     x0, sp
    adrp    x16, nt_cb_dispatcher
    ldr     x16, [x16, :lo12:nt_cb_dispatcher]
    blr     x16
    ldp     x0, x1, [sp, #CB_RET_INT]
    ldp     q0, q1, [sp, #CB_RET_VEC + 0]
    ldp     q2, q3, [sp, #CB_RET_VEC + 32]
    mov     sp, x29
    .cfi_def_cfa sp, 16
    ldp     x29, x30, [sp], #16
    .cfi_def_cfa_offset 0
    .cfi_restore x29
    .cfi_restore x30
    autiasp
    .cfi_negate_ra_state
    ret
ENTRY_END(nt_cb_common)
TABLE_CHECK(T_CB_ENTRY)

/* cb_<i>, i = 0 to CB_POOL - 1: `bti c` (entries are called indirectly by C: BLR), the index
 * into x9, a direct branch to cb_common (no landing pad needed there). One CFI region, none
 * touches sp or x30: CFA = sp, return address in x30, the CIE's initial rules. 12 bytes,
 * aligned to 16. */
.macro CB_ENTRY i
    .type   nt_cb_\i, %function
    .p2align 4
nt_cb_\i:
    CALL_PAD
    mov     w9, #\i
    b       nt_cb_common
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
