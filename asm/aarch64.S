/*
 * The call core for AArch64, AAPCS64 (2024Q3, section 6.8 "Parameter passing" and 6.9
 * "Result return"). Mirrors x86_64.S; only the differences are commented.
 *
 * Rust side (src/engine.rs):
 *     unsafe extern "C" fn trampoline_entry(frame: *mut CallFrame);
 *
 * Registers on entry: x0 = frame; x30 = return address; sp 16-aligned (AAPCS64 6.4.5.1:
 * sp is always 16-aligned at a public interface).
 * Registers used:     x19 keeps the frame across the call (callee-saved, saved here);
 *                     x29 is the frame pointer; x9-x13 are scratch (caller-saved).
 * Differences from x86-64:
 *   - a composite larger than 16 bytes is passed by address: the plan already copied it into
 *     trampoline-owned memory and put the address in an X register or a stack slot, so the
 *     assembly sees only words (AAPCS64 B.4);
 *   - x8 carries the address of a returned composite larger than 16 bytes (6.9);
 *   - no vector count (AAPCS64 variadic calls need none);
 *   - results come back in x0:x1 and q0..q3 (an HFA of four doubles uses v0..v3).
 */
#include "asm.h"

FUNC_START(TRAMPOLINE_ENTRY)
    /* Sign the return address with the stack pointer as modifier (PAC). It must be the
     * first thing after the landing pad, and autiasp must see the same sp. */
    paciasp
    .cfi_negate_ra_state

    /* Frame record (x29, x30) plus a slot for x19; 32 bytes keep sp 16-aligned. */
    stp     x29, x30, [sp, #-32]!
    .cfi_def_cfa_offset 32
    .cfi_offset x29, -32
    .cfi_offset x30, -24
    mov     x29, sp
    .cfi_def_cfa_register x29
    str     x19, [sp, #16]
    .cfi_offset x19, -16
    mov     x19, x0

    /* 1. Outgoing stack arguments at [sp] (the NSAA starts at the sp of the call, 6.8.2).
     *    The length is a multiple of 16, so sp stays 16-aligned; copy 16 bytes a step. */
    ldr     x9, [x19, #FRAME_STACK_LEN]
    ldr     x10, [x19, #FRAME_STACK_ARGS]
    sub     sp, sp, x9
    mov     x11, sp
    cbz     x9, 2f
1:  ldp     x12, x13, [x10], #16
    stp     x12, x13, [x11], #16
    subs    x9, x9, #16
    b.ne    1b
2:
    /* 2. v0..v7 (whole q registers: floats, doubles and HFA members sit in the low bits). */
    ldp     q0, q1, [x19, #FRAME_VEC_REGS + 0*32]
    ldp     q2, q3, [x19, #FRAME_VEC_REGS + 1*32]
    ldp     q4, q5, [x19, #FRAME_VEC_REGS + 2*32]
    ldp     q6, q7, [x19, #FRAME_VEC_REGS + 3*32]

    /* x8: indirect result location; never an argument register (AAPCS64 6.9, and B.4
     * copies go in x0..x7 or on the stack, never in x8). */
    ldr     x8, [x19, #FRAME_INDIRECT_RESULT]
    /* The callee address in x9, a scratch register that is not an argument register. BLR is
     * a call, so a callee that starts with "bti c" or "paciasp" accepts it under BTI. */
    ldr     x9, [x19, #FRAME_FUNC]
    ldp     x0, x1, [x19, #FRAME_INT_REGS + 0*16]
    ldp     x2, x3, [x19, #FRAME_INT_REGS + 1*16]
    ldp     x4, x5, [x19, #FRAME_INT_REGS + 2*16]
    ldp     x6, x7, [x19, #FRAME_INT_REGS + 3*16]

    /* 3. The call. */
    blr     x9

    /* 4. Results: x0:x1 (integers, composites up to 16 bytes) and q0..q3 (HFA/HVA). */
    stp     x0, x1, [x19, #FRAME_RET_INT]
    stp     q0, q1, [x19, #FRAME_RET_VEC + 0*32]
    stp     q2, q3, [x19, #FRAME_RET_VEC + 1*32]

    /* Drop the outgoing area, restore x19 and the frame record, authenticate, return. */
    mov     sp, x29
    .cfi_def_cfa sp, 32
    ldr     x19, [sp, #16]
    .cfi_restore x19
    ldp     x29, x30, [sp], #32
    .cfi_def_cfa_offset 0
    .cfi_restore x29
    .cfi_restore x30
    autiasp
    .cfi_negate_ra_state
    ret
FUNC_END(TRAMPOLINE_ENTRY)

NOTE_GNU_PROPERTY
NOTE_GNU_STACK
