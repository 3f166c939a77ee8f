/*
 * tests/hardening.rs, AArch64: the negative control. The same function as bti_callee.c, but in
 * assembly whose first instruction is not a landing pad (no "bti c", no "paciasp"). Built with
 * -mbranch-protection=none, so this object carries no BTI property; the program is still
 * linked with -z force-bti, so its pages are guarded and the trampoline's BLR into this
 * function must raise a Branch Target exception (SIGILL). If the program instead exits with
 * status 0, BTI was not enforced and the positive run proves nothing.
 */
#include "bti_callee.h"

__asm__(
    "    .text\n"
    "    .globl bti_callee\n"
    "    .type bti_callee, %function\n"
    "    .p2align 2\n"
    "bti_callee:\n"
    /* Deliberately no landing pad here. */
    "    add  x0, x0, x1, lsl #4\n"
    "    add  x0, x0, x2, lsl #8\n"
    "    add  x0, x0, x4, lsl #12\n"
    "    add  x0, x0, x5, lsl #16\n"
    "    add  x0, x0, x6, lsl #20\n"
    "    add  x0, x0, x7, lsl #24\n"
    "    ldr  x9, [sp]\n"
    "    add  x0, x0, x9, lsl #28\n"
    "    ldp  x10, x11, [x3]\n"
    "    ldp  x12, x13, [x3, #16]\n"
    "    add  x10, x10, x11, lsl #1\n"
    "    add  x12, x12, x12, lsl #1\n"
    "    add  x10, x10, x12\n"
    "    add  x10, x10, x13, lsl #2\n"
    "    add  x0, x0, x10, lsl #32\n"
    "    ret\n"
    "    .size bti_callee, . - bti_callee\n");
