/*
 * tests/callbacks.rs: what C callers compiled by a compiler never look at, read straight from
 * the registers.
 *
 *   uint64_t nt_cbc_raw_result(void *f, int32_t arg): calls `f(arg)` and returns all 64 bits of
 *     the first integer result register (%rax, x0, a0) as f left it, so the test sees how a
 *     narrow integer result was extended. Every architecture.
 *   void *nt_cbc_hidden_rax(void *f, void *buffer) (x86-64 only): calls `struct (24 bytes)
 *     f(int32_t 7)` with the hidden result address `buffer` in %rdi and returns %rax as f left
 *     it, which psABI 3.2.3 requires to be that address (gcc's callers use their own copy of it
 *     instead). AAPCS64 and LP64D require no register to hold the address after the call.
 *   int64_t nt_cbc_no_cfi_call(int64_t (*f)(int32_t)): returns f(7), called from a frame that
 *     has no call frame information (no .cfi_* directives): the negative control of the
 *     unwinding test, where the unwinder must stop. Every architecture.
 */
#if defined(__x86_64__)
    .text

    .globl  nt_cbc_hidden_rax
    .type   nt_cbc_hidden_rax, %function
    .p2align 4
nt_cbc_hidden_rax:
    .cfi_startproc
    endbr64
    push    %rbx                /* %rsp is 16-aligned after this push */
    .cfi_def_cfa_offset 16
    .cfi_offset %rbx, -16
    mov     %rdi, %rax
    mov     %rsi, %rdi          /* the hidden result address */
    mov     %rsi, %rbx
    mov     $7, %esi
    call    *%rax
    pop     %rbx
    .cfi_def_cfa_offset 8
    .cfi_restore %rbx
    ret
    .cfi_endproc
    .size   nt_cbc_hidden_rax, . - nt_cbc_hidden_rax

    .globl  nt_cbc_raw_result
    .type   nt_cbc_raw_result, %function
    .p2align 4
nt_cbc_raw_result:
    .cfi_startproc
    endbr64
    sub     $8, %rsp            /* 16-aligned at the call */
    .cfi_def_cfa_offset 16
    mov     %rdi, %rax
    mov     %esi, %edi
    /* Garbage in %rax's upper bytes before the call: a callee that does not extend is seen. */
    mov     %rax, %r11
    movabs  $0x5a5a5a5a5a5a5a5a, %rax
    call    *%r11
    add     $8, %rsp
    .cfi_def_cfa_offset 8
    ret
    .cfi_endproc
    .size   nt_cbc_raw_result, . - nt_cbc_raw_result

    .globl  nt_cbc_no_cfi_call
    .type   nt_cbc_no_cfi_call, %function
    .p2align 4
nt_cbc_no_cfi_call:
    endbr64
    push    %rbp                /* 16-aligned at the call */
    mov     %rsp, %rbp
    mov     %rdi, %rax
    mov     $7, %edi
    call    *%rax
    pop     %rbp
    ret
    .size   nt_cbc_no_cfi_call, . - nt_cbc_no_cfi_call

#elif defined(__aarch64__)
    .text

    .globl  nt_cbc_raw_result
    .type   nt_cbc_raw_result, %function
    .p2align 4
nt_cbc_raw_result:
    .cfi_startproc
    bti     c
    stp     x29, x30, [sp, #-16]!
    .cfi_def_cfa_offset 16
    .cfi_offset x29, -16
    .cfi_offset x30, -8
    mov     x29, sp
    mov     x9, x0
    /* The int32_t argument in w0, garbage in x0's upper half (AAPCS64 leaves those bits
     * unspecified for a 32-bit argument): x0 is also the result register, so a callee that
     * does not write all of it is seen. */
    movz    x0, #0x5a5a, lsl #48
    movk    x0, #0x5a5a, lsl #32
    bfxil   x0, x1, #0, #32
    blr     x9
    ldp     x29, x30, [sp], #16
    .cfi_def_cfa_offset 0
    .cfi_restore x29
    .cfi_restore x30
    ret
    .cfi_endproc
    .size   nt_cbc_raw_result, . - nt_cbc_raw_result

    .globl  nt_cbc_no_cfi_call
    .type   nt_cbc_no_cfi_call, %function
    .p2align 4
nt_cbc_no_cfi_call:
    bti     c
    stp     x29, x30, [sp, #-16]!
    mov     x29, sp
    mov     x9, x0
    mov     w0, #7
    blr     x9
    ldp     x29, x30, [sp], #16
    ret
    .size   nt_cbc_no_cfi_call, . - nt_cbc_no_cfi_call

#elif defined(__riscv) && __riscv_xlen == 64
    .text

    .globl  nt_cbc_raw_result
    .type   nt_cbc_raw_result, %function
    .p2align 2
nt_cbc_raw_result:
    .cfi_startproc
    addi    sp, sp, -16
    .cfi_def_cfa_offset 16
    sd      ra, 8(sp)
    .cfi_offset ra, -8
    mv      t2, a0
    /* The int32_t argument sign-extended, as LP64D requires (a0 is also the result register:
     * the test passes 1 and -1, so its upper bits hold zeros, then ones). */
    sext.w  a0, a1
    jalr    t2
    ld      ra, 8(sp)
    .cfi_restore ra
    addi    sp, sp, 16
    .cfi_def_cfa_offset 0
    ret
    .cfi_endproc
    .size   nt_cbc_raw_result, . - nt_cbc_raw_result

    .globl  nt_cbc_no_cfi_call
    .type   nt_cbc_no_cfi_call, %function
    .p2align 2
nt_cbc_no_cfi_call:
    addi    sp, sp, -16
    sd      ra, 8(sp)
    mv      t2, a0
    li      a0, 7
    jalr    t2
    ld      ra, 8(sp)
    addi    sp, sp, 16
    ret
    .size   nt_cbc_no_cfi_call, . - nt_cbc_no_cfi_call
#endif
    .section .note.GNU-stack, "", %progbits
