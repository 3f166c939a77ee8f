/*
 * The call core for x86-64, System V ABI (psABI 1.0, section 3.2 "Function Calling Sequence").
 *
 * Rust side (src/engine.rs):
 *     unsafe extern "C" fn trampoline_entry(frame: *mut CallFrame);
 *
 * The entry does no argument placement of its own: src/abi/sysv_x86_64.rs has already written
 * every register image and the stack-argument image into the frame. The entry only
 *   1. copies the stack-argument image to the outgoing argument area (0(%rsp) at the call),
 *   2. loads xmm0-xmm7, rdi, rsi, rdx, rcx, r8, r9 and %al from the frame,
 *   3. calls the function, and
 *   4. stores rax:rdx and xmm0:xmm1 back into the frame.
 *
 * Registers on entry: %rdi = frame; %rsp = 8 mod 16 (the return address was just pushed).
 * Registers used:     %rbx keeps the frame across the call (callee-saved, so saved here);
 *                     %rbp is the frame pointer (callee-saved, saved here, gives CFI a fixed CFA).
 */
#include "asm.h"

FUNC_START(TRAMPOLINE_ENTRY)
    /* Frame pointer: from here on the CFA is %rbp + 16 whatever %rsp does. */
    push    %rbp
    .cfi_def_cfa_offset 16
    .cfi_offset %rbp, -16
    mov     %rsp, %rbp
    .cfi_def_cfa_register %rbp

    /* %rbx is callee-saved: save it, then it keeps the frame pointer across the call.
     * Two pushes since entry: %rsp = 8 mod 16; the extra 8 bytes make it 0 mod 16. */
    push    %rbx
    .cfi_offset %rbx, -24
    sub     $8, %rsp
    mov     %rdi, %rbx

    /* 1. Outgoing stack arguments. FRAME_STACK_LEN is a multiple of 16 (the plan rounds it),
     *    so %rsp stays 16-aligned at the call (psABI 3.2.2: "%rsp+8 is a multiple of 16 when
     *    control is transferred to the function entry point"). Copied 16 bytes a step with
     *    two scratch registers: stack images are short (128 bytes for ncclCommInitRank),
     *    where "rep movsb" pays a start-up cost of tens of cycles. */
    mov     FRAME_STACK_LEN(%rbx), %rcx
    sub     %rcx, %rsp
    test    %rcx, %rcx
    jz      2f
    mov     FRAME_STACK_ARGS(%rbx), %rsi
    mov     %rsp, %rdi
1:  mov     (%rsi), %rax
    mov     8(%rsi), %rdx
    mov     %rax, (%rdi)
    mov     %rdx, 8(%rdi)
    add     $16, %rsi
    add     $16, %rdi
    sub     $16, %rcx
    jnz     1b
2:
    /* 2. Vector argument registers (psABI 3.2.3: SSE class -> xmm0..xmm7 in order), skipped
     *    when the call uses none. %eax is the count here and below. */
    mov     FRAME_VECTOR_COUNT(%rbx), %eax
    test    %eax, %eax
    jz      3f
    movups  FRAME_VEC_REGS + 0*16(%rbx), %xmm0
    movups  FRAME_VEC_REGS + 1*16(%rbx), %xmm1
    movups  FRAME_VEC_REGS + 2*16(%rbx), %xmm2
    movups  FRAME_VEC_REGS + 3*16(%rbx), %xmm3
    movups  FRAME_VEC_REGS + 4*16(%rbx), %xmm4
    movups  FRAME_VEC_REGS + 5*16(%rbx), %xmm5
    movups  FRAME_VEC_REGS + 6*16(%rbx), %xmm6
    movups  FRAME_VEC_REGS + 7*16(%rbx), %xmm7
3:
    /* Integer argument registers (INTEGER class -> rdi, rsi, rdx, rcx, r8, r9 in order; a
     * MEMORY-class return puts the hidden result pointer in the first of them). */
    mov     FRAME_INT_REGS + 0*8(%rbx), %rdi
    mov     FRAME_INT_REGS + 1*8(%rbx), %rsi
    mov     FRAME_INT_REGS + 2*8(%rbx), %rdx
    mov     FRAME_INT_REGS + 3*8(%rbx), %rcx
    mov     FRAME_INT_REGS + 4*8(%rbx), %r8
    mov     FRAME_INT_REGS + 5*8(%rbx), %r9

    /* %al = number of vector registers used (loaded above): variadic callees read it to
     * decide whether to spill xmm0..xmm7 (psABI 3.5.7). Nothing since has written %rax. */

    /* 3. The call. %rsp is 16-aligned here and the stack image sits at 0(%rsp). */
    call    *FRAME_FUNC(%rbx)

    /* 4. Return registers (psABI 3.2.3: INTEGER -> rax, rdx; SSE -> xmm0, xmm1). The plan
     *    reads only the ones the return type uses. */
    mov     %rax, FRAME_RET_INT + 0*8(%rbx)
    mov     %rdx, FRAME_RET_INT + 1*8(%rbx)
    movups  %xmm0, FRAME_RET_VEC + 0*16(%rbx)
    movups  %xmm1, FRAME_RET_VEC + 1*16(%rbx)

    /* Restore %rbx from its save slot, drop the outgoing area, restore %rbp. */
    mov     -8(%rbp), %rbx
    .cfi_restore %rbx
    leave
    .cfi_def_cfa %rsp, 8
    .cfi_restore %rbp
    ret
FUNC_END(TRAMPOLINE_ENTRY)

NOTE_GNU_PROPERTY
NOTE_GNU_STACK
