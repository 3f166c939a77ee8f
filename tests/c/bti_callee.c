/*
 * tests/hardening.rs, AArch64: the callee in C. Built with -mbranch-protection=standard, gcc
 * starts it with a landing pad ("bti c", or "paciasp", which is one too), so the trampoline's
 * BLR may enter it while BTI is enforced.
 */
#include "bti_callee.h"

unsigned long bti_callee(unsigned long a, unsigned long b, unsigned long c, const struct big *s,
                         unsigned long e, unsigned long f, unsigned long g, unsigned long h,
                         unsigned long i)
{
    unsigned long words = s->w[0] + 2 * s->w[1] + 3 * s->w[2] + 4 * s->w[3];
    return a + (b << 4) + (c << 8) + (e << 12) + (f << 16) + (g << 20) + (h << 24) + (i << 28)
           + (words << 32);
}
