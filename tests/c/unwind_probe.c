/*
 * tests/conformance.rs: call frame information of the call core, checked by unwinding. Each
 * probe is a callee that runs the unwinder (libgcc's _Unwind_Backtrace, which reads .eh_frame
 * as debuggers and profilers do) from inside the call, through whatever frames the trampoline
 * has at that moment, and reports whether it reached nt_unwind_outer, the C function that
 * called the trampoline. A wrong CFI rule anywhere on the way (an entry, a handler region, a
 * wrapper) loses the walk: it stops early or wanders off.
 */
#include <stdint.h>
#include <unwind.h>

static void *nt_unwind_target;
static int nt_unwind_found;
static int nt_unwind_depth;

static _Unwind_Reason_Code nt_unwind_step(struct _Unwind_Context *ctx, void *arg) {
    (void)arg;
    void *ip = (void *)_Unwind_GetIP(ctx);
    if (++nt_unwind_depth > 64)
        return _URC_END_OF_STACK;
    if (ip && _Unwind_FindEnclosingFunction(ip) == nt_unwind_target) {
        nt_unwind_found = 1;
        return _URC_END_OF_STACK;
    }
    return _URC_NO_REASON;
}

static int64_t nt_unwind_run(void) {
    nt_unwind_found = 0;
    nt_unwind_depth = 0;
    _Unwind_Backtrace(nt_unwind_step, 0);
    return nt_unwind_found ? 1000 + nt_unwind_depth : -nt_unwind_depth;
}

/* Nine integers: stack arguments on both ABIs (a framed word body, or the checked walk). */
__attribute__((noinline)) int64_t nt_unwind_probe9(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e,
                                                   int64_t f, int64_t g, int64_t h, int64_t i) {
    return nt_unwind_run() + (a + b + c + d + e + f + g + h + i) * 0;
}

/* Two 64-bit integers: a word body without a frame (typed) or a checked straight-line body. */
__attribute__((noinline)) int64_t nt_unwind_probe2(int64_t a, int64_t b) {
    return nt_unwind_run() + (a + b) * 0;
}

/* A double: the walk without a frame (typed) or the checked walk. */
__attribute__((noinline)) int64_t nt_unwind_probe_f(double x) {
    return nt_unwind_run() + (int64_t)(x * 0);
}

/* A double and nine integers: stack arguments beside a vector register, the typed walk with a
 * frame. */
__attribute__((noinline)) int64_t nt_unwind_probe_fs(double x, int64_t a, int64_t b, int64_t c, int64_t d,
                                                     int64_t e, int64_t f, int64_t g, int64_t h, int64_t i) {
    return nt_unwind_run() + (int64_t)(x * 0) + (a + b + c + d + e + f + g + h + i) * 0;
}

/* Calls entry(a0, a1, a2, a3) (a typed or a checked entry of the core) and returns what it
 * returned; the probes look for this function's frame. */
__attribute__((noinline)) int64_t nt_unwind_outer(void *entry, void *a0, void *a1, void *a2, void *a3) {
    nt_unwind_target = (void *)nt_unwind_outer;
    int64_t r = ((int64_t(*)(void *, void *, void *, void *))entry)(a0, a1, a2, a3);
    __asm__ volatile("" ::: "memory"); /* not a tail call: this frame must be there */
    return r;
}
