/*
 * tests/hardening.rs, AArch64: a static, freestanding program that calls through the
 * trampoline with BTI enforced, so that the landing pads and the PAC pairs of asm/aarch64.S
 * are executed, not only looked at with objdump.
 *
 * Built by the test with
 *     aarch64-linux-gnu-gcc -O2 -ffreestanding -mbranch-protection=standard
 *         -static -nostdlib -Wl,-z,force-bti -I<OUT_DIR> -DTRAMPOLINE_TABLE=<table symbol>
 *         bti_main.c <callee> libnccl_trampoline_core_*.a
 * where <callee> is bti_callee.c (gcc gives it a landing pad) or bti_callee_nopad.c (the
 * negative control, which must die with SIGILL on the trampoline's branch into it).
 *
 * Every BTI-checked branch of the core is taken: _start reaches each entry by BLR through a
 * volatile function pointer ("bti c" of walk_framed, walk_checked, word bodies with and without
 * a frame, a checked straight-line body); the walks reach every handler by BR x9 ("bti j"); the
 * call op and the frameless word body reach the callee by BR x16, the framed word body and the
 * checked body by BLR (its "bti c"). The framed entries sign and authenticate their return
 * address (PAC).
 *
 * The programs are built here by hand, as src/engine/program/ builds them, from layout.h (generated
 * by build.rs: table indices, header and op offsets), with the AAPCS64 placement done by hand:
 *     bti_callee(a, b, c, &s, e, f, g, h,   x0..x7 (s: the B.4 copy of a 32-byte struct,
 *                i)                         passed here as the pointer it becomes)
 *                                           [sp, #0] of the call
 *     bti_callee8(a, ..., h)                x0..x7: a word body without a frame
 *     bti_callee6(a, ..., f)                x0..x5: a checked straight-line body
 *
 * Exit status (raw exit syscall, no libc): 0 success; 10 + n: check n failed.
 */
#include "layout.h"
#include "bti_callee.h"

#ifndef TRAMPOLINE_TABLE
# error "build with -DTRAMPOLINE_TABLE=<table symbol> (nccl_trampoline::engine::layout::TABLE_SYMBOL)"
#endif

extern const unsigned long TRAMPOLINE_TABLE[T_LEN];

_Static_assert(OP_SIZE == 24 && HDR_OPS == 16, "programs are three-word ops after a two-word header");

typedef unsigned long (*typed_entry)(const unsigned long *words, const void *func, const unsigned long *program);
typedef unsigned (*checked_entry)(const void *const *argv, void *ret, const void *func,
                                  const unsigned long *program);

/* Straight-line callees: eight or six integers, each in its own nibble. */
unsigned long bti_callee8(unsigned long a, unsigned long b, unsigned long c, unsigned long d,
                          unsigned long e, unsigned long f, unsigned long g, unsigned long h)
{
    return a + (b << 4) + (c << 8) + (d << 12) + (e << 16) + (f << 20) + (g << 24) + (h << 28);
}

unsigned long bti_callee6(unsigned long a, unsigned long b, unsigned long c, unsigned long d,
                          unsigned long e, unsigned long f)
{
    return a + (b << 4) + (c << 8) + (d << 12) + (e << 16) + (f << 20);
}

static void __attribute__((noreturn)) sys_exit(long code)
{
    register long x0 __asm__("x0") = code;
    register long x8 __asm__("x8") = 93; /* __NR_exit */
    __asm__ volatile("svc #0" : : "r"(x0), "r"(x8) : "memory");
    __builtin_unreachable();
}

/* One op: handler, operands. Volatile stores: gcc may not turn the fills into memset calls. */
static void op(volatile unsigned long *p, int *n, long slot, unsigned long a, unsigned long b)
{
    p[2 + 3 * *n] = TRAMPOLINE_TABLE[slot];
    p[2 + 3 * *n + 1] = a;
    p[2 + 3 * *n + 2] = b;
    ++*n;
}

/* The program of bti_callee for walk_framed (checked = 0: argument words, wstk / wint_x<k>) or
 * walk_checked (checked = 1: argument pointers, stk_q64 / int_x<k>_q64). */
static void program9(volatile unsigned long *p, int checked)
{
    int n = 0;
    p[0] = 16; /* HDR_FRAME: one stack slot, rounded to 16 */
    p[1] = 9;  /* HDR_ARGC */
    op(p, &n, checked ? H_STK + 6 : H_WSTK, 8 * 8, 0); /* i to [sp, #0] */
    op(p, &n, H_ENTER, (1 + 9) * OP_SIZE, 0);
    for (int k = 0; k < 8; k++)
        op(p, &n, checked ? H_INT + 7 * k + 6 : H_WINT + k, 8 * k, 0);
    op(p, &n, H_CALL, 0, 0);
    if (checked)
        op(p, &n, H_DONEI + 7, 0, 0); /* donei_8: x0 stored at ret, STATUS_OK */
    else
        op(p, &n, H_RETURN, 0, 0);
}

void __attribute__((noreturn)) _start(void)
{
    volatile struct big s = { { 0x1000, 0x2000, 0x3000, 0x4000 } };
    unsigned long v[9] = { 1, 2, 3, (unsigned long)&s, 5, 6, 7, 8, 9 };
    const void *argv[9];
    for (int k = 0; k < 9; k++)
        argv[k] = &v[k];
    volatile unsigned long prog[2 + 3 * 16];
    unsigned long out = 0;

    /* 1. walk_framed: the typed walk with a frame (words); the result comes back in x0. */
    program9(prog, 0);
    typed_entry volatile framed = (typed_entry)TRAMPOLINE_TABLE[T_WALK + 1];
    if (framed(v, (const void *)bti_callee, (const unsigned long *)prog) != BTI_CALLEE_EXPECTED)
        sys_exit(11);
    /* The callee only read the struct. */
    if (s.w[0] != 0x1000 || s.w[1] != 0x2000 || s.w[2] != 0x3000 || s.w[3] != 0x4000)
        sys_exit(12);

    /* 2. walk_checked: argument pointers, null checks, the result stored by donei_8. */
    program9(prog, 1);
    checked_entry volatile checked = (checked_entry)TRAMPOLINE_TABLE[T_WALK + 2];
    if (checked(argv, &out, (const void *)bti_callee, (const unsigned long *)prog) != STATUS_OK)
        sys_exit(13);
    if (out != BTI_CALLEE_EXPECTED)
        sys_exit(14);

    /* 3. words_9: the word body with a frame (a stack word, PAC, BLR into the callee). */
    prog[0] = 0;
    prog[1] = 9;
    typed_entry volatile words9 = (typed_entry)TRAMPOLINE_TABLE[T_WORDS + 9];
    if (words9(v, (const void *)bti_callee, (const unsigned long *)prog) != BTI_CALLEE_EXPECTED)
        sys_exit(15);

    /* 4. words_8: the word body without a frame (BR x16 into the callee). */
    const unsigned long expected8 = 0x87654321UL;
    for (int k = 0; k < 8; k++)
        v[k] = (unsigned long)k + 1;
    typed_entry volatile words8 = (typed_entry)TRAMPOLINE_TABLE[T_WORDS + 8];
    if (words8(v, (const void *)bti_callee8, (const unsigned long *)prog) != expected8)
        sys_exit(16);

    /* 5. The checked straight-line body of six 64-bit arguments with an 8-byte result
     *    (line_qqqqqq_r8): argument pointers, a signed frame, BLR into the callee. */
    out = 0;
    checked_entry volatile line = (checked_entry)TRAMPOLINE_TABLE[T_LINE + 2 * (63 + 63) + 1];
    if (line(argv, &out, (const void *)bti_callee6, (const unsigned long *)prog) != STATUS_OK)
        sys_exit(17);
    if (out != 0x654321UL)
        sys_exit(18);
    sys_exit(0);
}
