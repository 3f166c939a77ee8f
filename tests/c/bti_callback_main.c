/*
 * tests/hardening.rs, AArch64: a static, freestanding program that calls callback entries of
 * the trampoline with BTI enforced, so that their `bti c` landing pads and cb_common's PAC pair
 * are executed, not only looked at with objdump.
 *
 * Built by the test with
 *     aarch64-linux-gnu-gcc -O2 -ffreestanding -mbranch-protection=standard
 *         -static -nostdlib -Wl,-z,force-bti -I<OUT_DIR> -DTRAMPOLINE_TABLE=<table symbol>
 *         [-DENTRY_OFFSET=4] bti_callback_main.c libnccl_trampoline_core_*.a
 *
 * No Rust here: the program installs its own dispatcher with cb_install (a C function with the
 * dispatcher's contract: `void dispatch(record *)`, reading the record at the CB_* offsets of
 * layout.h), then calls entries through a volatile function pointer (BLR). The dispatcher
 * checks the index the entry loaded and the saved x0..x7, x8, q0 and stack argument, and
 * writes x0 and q0 for cb_common to load.
 *
 * ENTRY_OFFSET (default 0) is added to every entry's address before the call. 4 skips the
 * entry's `bti c` and lands on its next instruction: the negative control, which must die with
 * SIGILL under BTI and run correctly without it (the rest of the entry does not depend on the
 * pad).
 *
 * Entry 100 takes the direct path (TypedCallback::direct, docs/adr/0025-callbacks.md): its slot
 * of cb_direct_slots() holds bti_cb_direct, a C function of the call's signature, which
 * cb_common reaches with `br x16`; a leaf built with -mbranch-protection=standard, so it starts
 * with `bti c`, which accepts BR from x16. DIRECT_OFFSET (default 0) is added to that target:
 * 4 skips its `bti c`, the direct path's negative control (SIGILL under BTI only).
 *
 * Exit status (raw exit syscall, no libc): 0 success; 10 + n: check n failed.
 */
#include "layout.h"

#ifndef TRAMPOLINE_TABLE
# error "build with -DTRAMPOLINE_TABLE=<table symbol> (nccl_trampoline::engine::layout::TABLE_SYMBOL)"
#endif
#ifndef ENTRY_OFFSET
# define ENTRY_OFFSET 0
#endif
#ifndef DIRECT_OFFSET
# define DIRECT_OFFSET 0
#endif

/* The entry whose calls take the direct path. */
#define DIRECT_ENTRY 100

extern const unsigned long TRAMPOLINE_TABLE[T_LEN];

static void __attribute__((noreturn)) sys_exit(long code)
{
    register long x0 __asm__("x0") = code;
    register long x8 __asm__("x8") = 93; /* __NR_exit */
    __asm__ volatile("svc #0" : : "r"(x0), "r"(x8) : "memory");
    __builtin_unreachable();
}

/* What the dispatcher saw wrong: 0, or the number of the first failed check. */
static volatile int failed;

static unsigned long word(const unsigned char *record, long offset)
{
    return *(const unsigned long *)(record + offset);
}

static double first_double(const unsigned char *p)
{
    return *(const double *)p;
}

/* The dispatcher's contract (src/engine/callback/mod.rs): called by cb_common with the record.
 * Not static: its address is taken, and gcc gives it the landing pad BLR needs. */
void bti_cb_dispatch(unsigned char *record)
{
    unsigned long index = word(record, CB_INDEX);
    unsigned long sum = 0;
    for (int k = 0; k < 8; k++) {
        if (word(record, CB_INT + 8 * k) != (unsigned long)(k + 1) * (index + 1))
            failed = failed ? failed : 1;
        sum += word(record, CB_INT + 8 * k) << (4 * k);
    }
    if (word(record, CB_X8) != 0x8888)
        failed = failed ? failed : 2;
    if (first_double(record + CB_VEC) != 0.5 * (double)index)
        failed = failed ? failed : 3;
    /* The ninth integer is the first stack argument, at the caller's sp. */
    if (**(const unsigned long *const *)(record + CB_STACK) != 9)
        failed = failed ? failed : 4;
    *(unsigned long *)(record + CB_RET_INT) = sum + index;
    *(unsigned long *)(record + CB_RET_INT + 8) = 0;
    *(double *)(record + CB_RET_VEC) = 2.0 * (double)index;
}

/* The direct target of entry DIRECT_ENTRY: the caller's x0..x7 and first stack argument as
 * it passed them, the same result as the dispatcher gives (d0 aside: the caller does not check
 * it for this entry). Counted, so that the caller knows the direct path ran. */
static volatile int direct_calls;
unsigned long bti_cb_direct(unsigned long a0, unsigned long a1, unsigned long a2, unsigned long a3,
                            unsigned long a4, unsigned long a5, unsigned long a6, unsigned long a7,
                            unsigned long s0)
{
    const unsigned long a[8] = { a0, a1, a2, a3, a4, a5, a6, a7 };
    unsigned long sum = DIRECT_ENTRY;
    for (int k = 0; k < 8; k++) {
        if (a[k] != (unsigned long)(k + 1) * (DIRECT_ENTRY + 1))
            failed = failed ? failed : 5;
        sum += a[k] << (4 * k);
    }
    if (s0 != 9)
        failed = failed ? failed : 6;
    direct_calls++;
    return sum;
}

typedef void (*install_fn)(void (*)(unsigned char *));
typedef unsigned long *(*direct_slots_fn)(void);

/* f(i * 1, ..., i * 8, 9, 0.5 * (i - 1)) with x8 = 0x8888 (as a caller of a function returning a
 * large struct sets it); returns x0 and, through *d, d0. */
static unsigned long call_entry(const void *entry, unsigned long i, double *d)
{
    register unsigned long x0 __asm__("x0") = i;
    register unsigned long x1 __asm__("x1") = 2 * i;
    register unsigned long x2 __asm__("x2") = 3 * i;
    register unsigned long x3 __asm__("x3") = 4 * i;
    register unsigned long x4 __asm__("x4") = 5 * i;
    register unsigned long x5 __asm__("x5") = 6 * i;
    register unsigned long x6 __asm__("x6") = 7 * i;
    register unsigned long x7 __asm__("x7") = 8 * i;
    register unsigned long x8 __asm__("x8") = 0x8888;
    register const void *x16 __asm__("x16") = entry;
    register double d0 __asm__("d0") = 0.5 * (double)(i - 1);
    /* One stack argument (9) at sp, sp 16-aligned; BLR through x16, the volatile pointer the
     * compiler cannot turn into a direct call. Every caller-saved register is clobbered. */
    __asm__ volatile(
        "sub sp, sp, #16\n\t"
        "mov x9, #9\n\t"
        "str x9, [sp]\n\t"
        "blr x16\n\t"
        "add sp, sp, #16"
        : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3), "+r"(x4), "+r"(x5), "+r"(x6), "+r"(x7), "+r"(x8),
          "+r"(x16), "+w"(d0)
        :
        : "x9", "x10", "x11", "x12", "x13", "x14", "x15", "x17", "x18", "x30", "v1", "v2", "v3", "v4",
          "v5", "v6", "v7", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25",
          "v26", "v27", "v28", "v29", "v30", "v31", "memory", "cc");
    *d = d0;
    return x0;
}

void __attribute__((noreturn)) _start(void)
{
    install_fn volatile install = (install_fn)TRAMPOLINE_TABLE[T_CB_INSTALL];
    install(bti_cb_dispatch);
    direct_slots_fn volatile direct_slots = (direct_slots_fn)TRAMPOLINE_TABLE[T_CB_DIRECT_SLOTS];
    direct_slots()[DIRECT_ENTRY] = (unsigned long)bti_cb_direct + DIRECT_OFFSET;
    /* The first, a middle and the last entry. */
    static const unsigned long indices[] = { 0, 100, CB_POOL - 1 };
    for (int n = 0; n < 3; n++) {
        unsigned long index = indices[n];
        const char *entry = (const char *)TRAMPOLINE_TABLE[T_CB_ENTRY + index] + ENTRY_OFFSET;
        unsigned long i = index + 1, expected = index;
        for (int k = 0; k < 8; k++)
            expected += ((unsigned long)(k + 1) * i) << (4 * k);
        double d = 0;
        unsigned long got = call_entry(entry, i, &d);
        if (failed)
            sys_exit(10 + failed);
        if (got != expected)
            sys_exit(15);
        if (index != DIRECT_ENTRY && d != 2.0 * (double)index)
            sys_exit(16);
    }
    if (direct_calls != 1)
        sys_exit(17);
    sys_exit(0);
}
