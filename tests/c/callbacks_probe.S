/*
 * tests/callbacks.rs: what C callers compiled by gcc never look at, read straight from the
 * registers (x86-64 only, like the callback entries so far).
 *
 *   void *nt_cbc_hidden_rax(void *f, void *buffer): calls `struct (24 bytes) f(int32_t 7)` with
 *     the hidden result address `buffer` in %rdi and returns %rax as f left it, which psABI
 *     3.2.3 requires to be that address (gcc's callers use their own copy of it instead).
 *   uint64_t nt_cbc_raw_rax(void *f, int32_t arg): calls `f(arg)` and returns all 64 bits of
 *     %rax, so the test sees how a narrow integer result was extended.
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

    .globl  nt_cbc_raw_rax
    .type   nt_cbc_raw_rax, %function
    .p2align 4
nt_cbc_raw_rax:
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
    .size   nt_cbc_raw_rax, . - nt_cbc_raw_rax
#endif
    .section .note.GNU-stack, "", %progbits
