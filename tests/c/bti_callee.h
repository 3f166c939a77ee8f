/*
 * tests/hardening.rs, AArch64: the callee of bti_main.c, implemented twice with the same
 * result: bti_callee.c (C, built with -mbranch-protection=standard, so it starts with a
 * landing pad) and bti_callee_nopad.c (assembly without a landing pad: the negative control).
 */
#ifndef BTI_CALLEE_H
#define BTI_CALLEE_H

/* Larger than 16 bytes: AAPCS64 B.4 passes it by address. */
struct big {
    unsigned long w[4];
};

/* Each integer argument lands in its own nibble, so a swapped or missing register changes the
 * result; the struct words are weighted by position and land in the upper half. */
unsigned long bti_callee(unsigned long a, unsigned long b, unsigned long c, const struct big *s,
                         unsigned long e, unsigned long f, unsigned long g, unsigned long h,
                         unsigned long i);

/* For a..i = 1, 2, 3, &s, 5, 6, 7, 8, 9 and s = {0x1000, 0x2000, 0x3000, 0x4000}:
 * nibbles 0x98765321, struct 0x1000 + 2*0x2000 + 3*0x3000 + 4*0x4000 = 0x1e000. */
#define BTI_CALLEE_EXPECTED 0x0001e00098765321UL

#endif
