/*
 * nt_check_callee_saved(entry, a0, a1, a2, a3): loads a distinct pattern into every
 * callee-saved register, calls entry(a0, a1, a2, a3), and returns a bit mask of the registers
 * whose value changed (0 = all preserved). nt_clobbering_entry is a deliberately broken entry
 * for the negative control: it changes one callee-saved register and returns.
 *
 * nt_low_byte(uint8_t a, double b) returns a as uint32_t: a callee the straight-line bodies do
 * not take (a uint8_t and a double), for the walk without a frame.
 *
 * nt_no_cfi_entry(argv, func, program) calls func() from a frame that has no call frame
 * information: the negative control of the unwinding test (the unwinder must stop there).
 */
#if defined(__x86_64__)
    .text
    .globl nt_check_callee_saved
    .type nt_check_callee_saved, @function
nt_check_callee_saved:          /* rdi = entry, rsi, rdx, rcx, r8 = its four arguments */
    endbr64
    push %rbx
    push %rbp
    push %r12
    push %r13
    push %r14
    push %r15
    sub $8, %rsp                /* 6 pushes + return address: realign to 16 */
    mov %rdi, %rax
    mov %rsi, %rdi
    mov %rdx, %rsi
    mov %rcx, %rdx
    mov %r8, %rcx
    movabs $0x1111111111111101, %rbx
    movabs $0x2222222222222202, %rbp
    movabs $0x3333333333333303, %r12
    movabs $0x4444444444444404, %r13
    movabs $0x5555555555555505, %r14
    movabs $0x6666666666666606, %r15
    call *%rax
    xor %eax, %eax
    movabs $0x1111111111111101, %rcx
    cmp %rcx, %rbx
    je 1f
    or $1, %eax
1:  movabs $0x2222222222222202, %rcx
    cmp %rcx, %rbp
    je 2f
    or $2, %eax
2:  movabs $0x3333333333333303, %rcx
    cmp %rcx, %r12
    je 3f
    or $4, %eax
3:  movabs $0x4444444444444404, %rcx
    cmp %rcx, %r13
    je 4f
    or $8, %eax
4:  movabs $0x5555555555555505, %rcx
    cmp %rcx, %r14
    je 5f
    or $16, %eax
5:  movabs $0x6666666666666606, %rcx
    cmp %rcx, %r15
    je 6f
    or $32, %eax
6:  add $8, %rsp
    pop %r15
    pop %r14
    pop %r13
    pop %r12
    pop %rbp
    pop %rbx
    ret
    .size nt_check_callee_saved, .-nt_check_callee_saved

    .globl nt_clobbering_entry
    .type nt_clobbering_entry, @function
nt_clobbering_entry:
    endbr64
    xor %r13d, %r13d
    ret
    .size nt_clobbering_entry, .-nt_clobbering_entry

    .globl nt_low_byte
    .type nt_low_byte, @function
nt_low_byte:
    endbr64
    movzbl %dil, %eax
    ret
    .size nt_low_byte, .-nt_low_byte

    .globl nt_no_cfi_entry
    .type nt_no_cfi_entry, @function
nt_no_cfi_entry:
    endbr64
    push %rbp
    mov %rsp, %rbp
    call *%rsi
    pop %rbp
    ret
    .size nt_no_cfi_entry, .-nt_no_cfi_entry

#elif defined(__aarch64__)
    .text
    .globl nt_check_callee_saved
    .type nt_check_callee_saved, %function
nt_check_callee_saved:          /* x0 = entry, x1..x4 = its four arguments */
    bti c
    stp x29, x30, [sp, #-160]!
    mov x29, sp
    stp x19, x20, [sp, #16]
    stp x21, x22, [sp, #32]
    stp x23, x24, [sp, #48]
    stp x25, x26, [sp, #64]
    stp x27, x28, [sp, #80]
    stp d8, d9, [sp, #96]
    stp d10, d11, [sp, #112]
    stp d12, d13, [sp, #128]
    stp d14, d15, [sp, #144]
    mov x9, x0
    mov x0, x1
    mov x1, x2
    mov x2, x3
    mov x3, x4
    /* x19..x28 = 19..28 in every byte-ish pattern; d8..d15 likewise. */
    mov x19, #0x1913
    mov x20, #0x2014
    mov x21, #0x2115
    mov x22, #0x2216
    mov x23, #0x2317
    mov x24, #0x2418
    mov x25, #0x2519
    mov x26, #0x261a
    mov x27, #0x271b
    mov x28, #0x281c
    mov x10, #0x0808
    fmov d8, x10
    mov x10, #0x0909
    fmov d9, x10
    mov x10, #0x1010
    fmov d10, x10
    mov x10, #0x1111
    fmov d11, x10
    mov x10, #0x1212
    fmov d12, x10
    mov x10, #0x1313
    fmov d13, x10
    mov x10, #0x1414
    fmov d14, x10
    mov x10, #0x1515
    fmov d15, x10
    blr x9
    mov x0, #0
    mov x10, #0x1913
    cmp x19, x10
    cset x11, ne
    orr x0, x0, x11
    mov x10, #0x2014
    cmp x20, x10
    cset x11, ne
    orr x0, x0, x11, lsl #1
    mov x10, #0x2115
    cmp x21, x10
    cset x11, ne
    orr x0, x0, x11, lsl #2
    mov x10, #0x2216
    cmp x22, x10
    cset x11, ne
    orr x0, x0, x11, lsl #3
    mov x10, #0x2317
    cmp x23, x10
    cset x11, ne
    orr x0, x0, x11, lsl #4
    mov x10, #0x2418
    cmp x24, x10
    cset x11, ne
    orr x0, x0, x11, lsl #5
    mov x10, #0x2519
    cmp x25, x10
    cset x11, ne
    orr x0, x0, x11, lsl #6
    mov x10, #0x261a
    cmp x26, x10
    cset x11, ne
    orr x0, x0, x11, lsl #7
    mov x10, #0x271b
    cmp x27, x10
    cset x11, ne
    orr x0, x0, x11, lsl #8
    mov x10, #0x281c
    cmp x28, x10
    cset x11, ne
    orr x0, x0, x11, lsl #9
    fmov x12, d8
    mov x10, #0x0808
    cmp x12, x10
    cset x11, ne
    orr x0, x0, x11, lsl #10
    fmov x12, d9
    mov x10, #0x0909
    cmp x12, x10
    cset x11, ne
    orr x0, x0, x11, lsl #11
    fmov x12, d10
    mov x10, #0x1010
    cmp x12, x10
    cset x11, ne
    orr x0, x0, x11, lsl #12
    fmov x12, d11
    mov x10, #0x1111
    cmp x12, x10
    cset x11, ne
    orr x0, x0, x11, lsl #13
    fmov x12, d12
    mov x10, #0x1212
    cmp x12, x10
    cset x11, ne
    orr x0, x0, x11, lsl #14
    fmov x12, d13
    mov x10, #0x1313
    cmp x12, x10
    cset x11, ne
    orr x0, x0, x11, lsl #15
    fmov x12, d14
    mov x10, #0x1414
    cmp x12, x10
    cset x11, ne
    orr x0, x0, x11, lsl #16
    fmov x12, d15
    mov x10, #0x1515
    cmp x12, x10
    cset x11, ne
    orr x0, x0, x11, lsl #17
    mov x12, sp
    cmp x12, x29
    cset x11, ne
    orr x0, x0, x11, lsl #18
    ldp x19, x20, [sp, #16]
    ldp x21, x22, [sp, #32]
    ldp x23, x24, [sp, #48]
    ldp x25, x26, [sp, #64]
    ldp x27, x28, [sp, #80]
    ldp d8, d9, [sp, #96]
    ldp d10, d11, [sp, #112]
    ldp d12, d13, [sp, #128]
    ldp d14, d15, [sp, #144]
    ldp x29, x30, [sp], #160
    ret
    .size nt_check_callee_saved, .-nt_check_callee_saved

    .globl nt_clobbering_entry
    .type nt_clobbering_entry, %function
nt_clobbering_entry:
    bti c
    mov x23, #0
    ret
    .size nt_clobbering_entry, .-nt_clobbering_entry

    .globl nt_low_byte
    .type nt_low_byte, %function
nt_low_byte:
    bti c
    and w0, w0, #0xff
    ret
    .size nt_low_byte, .-nt_low_byte

    .globl nt_no_cfi_entry
    .type nt_no_cfi_entry, %function
nt_no_cfi_entry:
    bti c
    stp x29, x30, [sp, #-16]!
    mov x29, sp
    blr x1
    ldp x29, x30, [sp], #16
    ret
    .size nt_no_cfi_entry, .-nt_no_cfi_entry
#endif
    .section .note.GNU-stack, "", %progbits
