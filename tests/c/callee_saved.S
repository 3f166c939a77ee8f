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
#elif defined(__riscv) && __riscv_xlen == 64
    .text
    .globl nt_check_callee_saved
    .type nt_check_callee_saved, %function
nt_check_callee_saved:          /* a0 = entry, a1..a4 = its four arguments */
    addi sp, sp, -208
    sd ra, 200(sp)
    sd s0, 0(sp)
    sd s1, 8(sp)
    sd s2, 16(sp)
    sd s3, 24(sp)
    sd s4, 32(sp)
    sd s5, 40(sp)
    sd s6, 48(sp)
    sd s7, 56(sp)
    sd s8, 64(sp)
    sd s9, 72(sp)
    sd s10, 80(sp)
    sd s11, 88(sp)
    fsd fs0, 96(sp)
    fsd fs1, 104(sp)
    fsd fs2, 112(sp)
    fsd fs3, 120(sp)
    fsd fs4, 128(sp)
    fsd fs5, 136(sp)
    fsd fs6, 144(sp)
    fsd fs7, 152(sp)
    fsd fs8, 160(sp)
    fsd fs9, 168(sp)
    fsd fs10, 176(sp)
    fsd fs11, 184(sp)
    mv t1, a0
    mv a0, a1
    mv a1, a2
    mv a2, a3
    mv a3, a4
    /* s0..s11 = 0x1100 + n, fs0..fs11 = the bits 0x2200 + n; sp kept in t6 is not
     * callee-saved: the sp check compares against the frame's own address (192(sp) = sp). */
    li s0, 4352
    li s1, 4353
    li s2, 4354
    li s3, 4355
    li s4, 4356
    li s5, 4357
    li s6, 4358
    li s7, 4359
    li s8, 4360
    li s9, 4361
    li s10, 4362
    li s11, 4363
    li t0, 8704
    fmv.d.x fs0, t0
    li t0, 8705
    fmv.d.x fs1, t0
    li t0, 8706
    fmv.d.x fs2, t0
    li t0, 8707
    fmv.d.x fs3, t0
    li t0, 8708
    fmv.d.x fs4, t0
    li t0, 8709
    fmv.d.x fs5, t0
    li t0, 8710
    fmv.d.x fs6, t0
    li t0, 8711
    fmv.d.x fs7, t0
    li t0, 8712
    fmv.d.x fs8, t0
    li t0, 8713
    fmv.d.x fs9, t0
    li t0, 8714
    fmv.d.x fs10, t0
    li t0, 8715
    fmv.d.x fs11, t0
    sd sp, 192(sp)
    jalr t1
    li a0, 0
    li t0, 4352
    sub t0, s0, t0
    snez t0, t0
    slli t0, t0, 0
    or a0, a0, t0
    li t0, 4353
    sub t0, s1, t0
    snez t0, t0
    slli t0, t0, 1
    or a0, a0, t0
    li t0, 4354
    sub t0, s2, t0
    snez t0, t0
    slli t0, t0, 2
    or a0, a0, t0
    li t0, 4355
    sub t0, s3, t0
    snez t0, t0
    slli t0, t0, 3
    or a0, a0, t0
    li t0, 4356
    sub t0, s4, t0
    snez t0, t0
    slli t0, t0, 4
    or a0, a0, t0
    li t0, 4357
    sub t0, s5, t0
    snez t0, t0
    slli t0, t0, 5
    or a0, a0, t0
    li t0, 4358
    sub t0, s6, t0
    snez t0, t0
    slli t0, t0, 6
    or a0, a0, t0
    li t0, 4359
    sub t0, s7, t0
    snez t0, t0
    slli t0, t0, 7
    or a0, a0, t0
    li t0, 4360
    sub t0, s8, t0
    snez t0, t0
    slli t0, t0, 8
    or a0, a0, t0
    li t0, 4361
    sub t0, s9, t0
    snez t0, t0
    slli t0, t0, 9
    or a0, a0, t0
    li t0, 4362
    sub t0, s10, t0
    snez t0, t0
    slli t0, t0, 10
    or a0, a0, t0
    li t0, 4363
    sub t0, s11, t0
    snez t0, t0
    slli t0, t0, 11
    or a0, a0, t0
    fmv.x.d t2, fs0
    li t0, 8704
    sub t0, t2, t0
    snez t0, t0
    slli t0, t0, 12
    or a0, a0, t0
    fmv.x.d t2, fs1
    li t0, 8705
    sub t0, t2, t0
    snez t0, t0
    slli t0, t0, 13
    or a0, a0, t0
    fmv.x.d t2, fs2
    li t0, 8706
    sub t0, t2, t0
    snez t0, t0
    slli t0, t0, 14
    or a0, a0, t0
    fmv.x.d t2, fs3
    li t0, 8707
    sub t0, t2, t0
    snez t0, t0
    slli t0, t0, 15
    or a0, a0, t0
    fmv.x.d t2, fs4
    li t0, 8708
    sub t0, t2, t0
    snez t0, t0
    slli t0, t0, 16
    or a0, a0, t0
    fmv.x.d t2, fs5
    li t0, 8709
    sub t0, t2, t0
    snez t0, t0
    slli t0, t0, 17
    or a0, a0, t0
    fmv.x.d t2, fs6
    li t0, 8710
    sub t0, t2, t0
    snez t0, t0
    slli t0, t0, 18
    or a0, a0, t0
    fmv.x.d t2, fs7
    li t0, 8711
    sub t0, t2, t0
    snez t0, t0
    slli t0, t0, 19
    or a0, a0, t0
    fmv.x.d t2, fs8
    li t0, 8712
    sub t0, t2, t0
    snez t0, t0
    slli t0, t0, 20
    or a0, a0, t0
    fmv.x.d t2, fs9
    li t0, 8713
    sub t0, t2, t0
    snez t0, t0
    slli t0, t0, 21
    or a0, a0, t0
    fmv.x.d t2, fs10
    li t0, 8714
    sub t0, t2, t0
    snez t0, t0
    slli t0, t0, 22
    or a0, a0, t0
    fmv.x.d t2, fs11
    li t0, 8715
    sub t0, t2, t0
    snez t0, t0
    slli t0, t0, 23
    or a0, a0, t0
    ld t2, 192(sp)
    sub t0, t2, sp
    snez t0, t0
    slli t0, t0, 24
    or a0, a0, t0
    ld s0, 0(sp)
    ld s1, 8(sp)
    ld s2, 16(sp)
    ld s3, 24(sp)
    ld s4, 32(sp)
    ld s5, 40(sp)
    ld s6, 48(sp)
    ld s7, 56(sp)
    ld s8, 64(sp)
    ld s9, 72(sp)
    ld s10, 80(sp)
    ld s11, 88(sp)
    fld fs0, 96(sp)
    fld fs1, 104(sp)
    fld fs2, 112(sp)
    fld fs3, 120(sp)
    fld fs4, 128(sp)
    fld fs5, 136(sp)
    fld fs6, 144(sp)
    fld fs7, 152(sp)
    fld fs8, 160(sp)
    fld fs9, 168(sp)
    fld fs10, 176(sp)
    fld fs11, 184(sp)
    ld ra, 200(sp)
    addi sp, sp, 208
    ret
    .size nt_check_callee_saved, .-nt_check_callee_saved

    .globl nt_clobbering_entry
    .type nt_clobbering_entry, %function
nt_clobbering_entry:
    li s5, 0
    ret
    .size nt_clobbering_entry, .-nt_clobbering_entry

    .globl nt_low_byte
    .type nt_low_byte, %function
nt_low_byte:
    andi a0, a0, 0xff
    ret
    .size nt_low_byte, .-nt_low_byte

/* Probes for what the byte-recording oracle cannot see (it records sizeof bytes): each
 * returns an argument register's raw 64 bits. nt_raw_a0(uint32_t): a0 as received (LP64D
 * sign-extends a uint32_t); nt_raw_fa0(float): fa0 as received (a float must be NaN-boxed:
 * upper 32 bits all ones); nt_raw_fa1(float, float): fa1 likewise. */
    .globl nt_raw_a0
    .type nt_raw_a0, %function
nt_raw_a0:
    ret
    .size nt_raw_a0, .-nt_raw_a0

    .globl nt_raw_fa0
    .type nt_raw_fa0, %function
nt_raw_fa0:
    fmv.x.d a0, fa0
    ret
    .size nt_raw_fa0, .-nt_raw_fa0

    .globl nt_raw_fa1
    .type nt_raw_fa1, %function
nt_raw_fa1:
    fmv.x.d a0, fa1
    ret
    .size nt_raw_fa1, .-nt_raw_fa1

    .globl nt_no_cfi_entry
    .type nt_no_cfi_entry, %function
nt_no_cfi_entry:
    addi sp, sp, -16
    sd ra, 8(sp)
    sd s0, 0(sp)
    addi s0, sp, 16
    jalr a1
    ld ra, 8(sp)
    ld s0, 0(sp)
    addi sp, sp, 16
    ret
    .size nt_no_cfi_entry, .-nt_no_cfi_entry
#endif
    .section .note.GNU-stack, "", %progbits
