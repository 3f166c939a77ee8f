/*
 * Callees returning small structs BY VALUE (and taking them), compiled for the target: the
 * oracle for typed bindings whose result is an aggregate (tests/conformance.rs,
 * typed_aggregate_results_match_the_c_compiler). One shape per way an ABI returns a struct:
 * ncclTeam's three ints (rax:rdx / x0:x1 / a0:a1), three floats (xmm0:xmm1 / an HFA in s0-s2 /
 * a0:a1), double + int (xmm0 + rax / x0:x1 / fa0 + a0), three longs (memory through the hidden
 * pointer / x8), three signed chars (plain char is unsigned on AArch64), and
 * ncclMultimemHandle's one pointer. Each result mixes every argument in, so a misplaced
 * argument or result byte shows.
 */
#include <stdint.h>

struct t3 { int a, b, c; };
struct f3 { float a, b, c; };
struct di { double d; int i; };
struct l3 { long a, b, c; };
struct c3 { signed char a, b, c; };
struct p1 { void *p; };

struct t3 agg_make_t3(void *comm, int k) {
    return (struct t3){k, k + 1, (int)(intptr_t)comm};
}
struct t3 agg_twist_t3(struct t3 x, int k, struct f3 y) {
    struct t3 r = {x.c + k, x.a * 3, x.b - (int)y.b};
    x.a = x.b = x.c = -1; /* the callee owns its copy */
    return r;
}
struct f3 agg_make_f3(float a, double b, struct t3 t) {
    return (struct f3){a + (float)t.a, (float)b * 2.0f, (float)(t.b + t.c) + 0.5f};
}
struct di agg_make_di(struct di x, long k) {
    return (struct di){x.d * 2.0 + (double)k, x.i ^ (int)k};
}
struct l3 agg_make_l3(int a, struct l3 x, struct c3 c) {
    return (struct l3){x.c + a, x.a * c.a, x.b - c.c};
}
struct c3 agg_make_c3(struct c3 x, signed char k) {
    return (struct c3){(signed char)(x.c + k), x.a, (signed char)(x.b ^ k)};
}
struct p1 agg_make_p1(struct p1 x, unsigned long k) {
    return (struct p1){(char *)x.p + k};
}
