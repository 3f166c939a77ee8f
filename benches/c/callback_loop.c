/*
 * benches/callbacks.rs: the C side of the callback benchmark. Each nt_loop_<shape>(f, n) calls
 * the function pointer `f` n times with arguments that change with the iteration and sums the
 * results, as a C library calling back into its host does. The benchmark builds this file at
 * run time with the system's C compiler (`cc -O2 -shared -fPIC`, or $CC), so that its binary
 * runs on a machine without Rust.
 */
#include <stdint.h>

typedef int32_t (*ii_fn)(int32_t, int32_t);
int64_t nt_loop_ii(ii_fn f, int64_t n) {
    int64_t acc = 0;
    for (int64_t i = 0; i < n; i++) acc += f((int32_t)i, 7);
    return acc;
}

/* Eight arguments, integers and doubles interleaved: four in rdi, rsi, rdx, rcx and four in
 * xmm0-3 (System V). */
typedef double (*mixed8_fn)(int32_t, double, int64_t, double, int32_t, double, int64_t, double);
double nt_loop_mixed8(mixed8_fn f, int64_t n) {
    double acc = 0;
    for (int64_t i = 0; i < n; i++) acc += f((int32_t)i, 0.5, i * 3, 1.5, 2, 2.5, 9, (double)i);
    return acc;
}

/* A 16-byte struct by value (two INTEGER eightbytes: rdi and rsi). */
struct pair16 { int64_t a, b; };
typedef int64_t (*pair16_fn)(struct pair16, int32_t);
int64_t nt_loop_pair16(pair16_fn f, int64_t n) {
    int64_t acc = 0;
    for (int64_t i = 0; i < n; i++) {
        struct pair16 p = {i, 5 * i};
        acc += f(p, 3);
    }
    return acc;
}

/* ncclCommInitRank's shape: a 128-byte ncclUniqueId by value (MEMORY class: copied to the
 * stack at every call). */
typedef struct { char internal[128]; } unique_id;
typedef int32_t (*id128_fn)(void *, int32_t, unique_id, int32_t);
int64_t nt_loop_id128(id128_fn f, int64_t n) {
    int64_t acc = 0;
    unique_id id;
    for (int k = 0; k < 128; k++) id.internal[k] = (char)(k * 7 + 1);
    for (int64_t i = 0; i < n; i++) {
        id.internal[0] = (char)i;
        acc += f(&acc, 8, id, (int32_t)i);
    }
    return acc;
}
